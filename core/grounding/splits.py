"""Which rows of the public data sets may train or tune the learned verifier: the one rule.

Benchmarks report on test rows; the training script reads only train rows and fits the
calibration and the combination on dev rows. Every loader asks :func:`split_of` and the
training script refuses any row it calls ``test``; a unit test proves the rule on the file
names and row keys of every test part, and the shipped model card's manifest lists which
files and how many rows went into training.

- ACI-Bench: ``train.csv`` trains, ``valid.csv`` is dev, the three test files are test.
- MTS-Dialog: the training set and its three back-translated copies train, except
  encounters whose ``ID`` (in a copy, its number: "TR=EN-FR-EN 12") is a multiple of 10
  (dev: the same encounter in every copy, so no paraphrase of a dev encounter trains);
  TestSet-1 and TestSet-2 are test.
- MedHallu: rows whose index modulo 10 is 0-4 train, 5-6 are dev, 7-9 test (the benchmark's
  development split is 0-6).
- PriMock57 (clinicians' notes of mock primary-care consultations, with their transcripts):
  the consultations of days 1-3 train, day 4 is dev, day 5 is test.
- Anything else is test: a file this rule does not know never reaches training.
"""

from __future__ import annotations

import re
from typing import Literal

Split = Literal["train", "dev", "test"]

ACI_TRAIN = "train.csv"
ACI_DEV = "valid.csv"
ACI_TEST = ("clinicalnlp_taskB_test1.csv", "clef_taskC_test3.csv", "clinicalnlp_taskC_test2.csv")
MTS_TRAIN = (
    "MTS-Dialog-TrainingSet.csv",
    "MTS-Dialog-Augmented-TrainingSet-1-En-FR-EN-2402-Pairs.csv",
    "MTS-Dialog-Augmented-TrainingSet-2-EN-ES-EN-2402-Pairs.csv",
    "MTS-Dialog-Augmented-TrainingSet-3-FR-and-ES-3603-Pairs-final.csv",
)
MTS_TEST = (
    "MTS-Dialog-TestSet-1-MEDIQA-Chat-2023.csv",
    "MTS-Dialog-TestSet-2-MEDIQA-Sum-2023.csv",
)


def split_of(
    dataset: Literal["aci", "mts", "medhallu", "primock"], file: str, row: int | str = 0
) -> Split:
    """The split of one row: ``dataset``, the file's name, and the row's key (MTS-Dialog:
    the encounter ``ID``; MedHallu: the 0-based line index; ACI-Bench and PriMock57, whose
    files are one visit each ("day4_consultation07.json"): unused)."""
    if dataset == "aci":
        return "train" if file == ACI_TRAIN else "dev" if file == ACI_DEV else "test"
    if dataset == "mts":
        if file not in MTS_TRAIN:
            return "test"
        m = re.search(r"(\d+)\s*$", str(row))  # "12", or a copy's "TR=EN-FR-EN 12"
        if m is None:
            return "test"
        return "dev" if int(m.group(1)) % 10 == 0 else "train"
    if dataset == "medhallu":
        rest = int(row) % 10
        return "train" if rest <= 4 else "dev" if rest <= 6 else "test"
    if dataset == "primock":
        m = re.match(r"day(\d+)_consultation\d+(?!\d)", file)
        if m is None:
            return "test"
        day = int(m.group(1))
        return "train" if day <= 3 else "dev" if day == 4 else "test"
    return "test"
