"""Calibration metrics on a third party's published SelfCheck-NLI scores (WikiBio, 119 passages).

The reference ECE (about 0.050) and Brier score (about 0.140) are reproduced with:
labels binary, 1 = hallucinated (``minor_inaccurate`` or ``major_inaccurate``), 0 =
``accurate``; the NLI score read as P(hallucinated); 10 equal-width bins. Mapping minor to 0.5
(the SelfCheck paper's label map) instead gives ECE 0.196 / Brier 0.156, and minor to 0 gives
0.359 / 0.343, so the reference used the NonFact binarisation.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import brier_score_loss as sk_brier

from core.calibration import brier_score_loss, calibration_report, expected_calibration_error

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "wikibio_gpt3"
REFERENCE = DATA / "reference_scores_119.json"

pytestmark = pytest.mark.skipif(
    not DATA.is_dir(), reason="benchmark data directory ../shared/data is absent"
)


@pytest.fixture(scope="module")
def nli_scores() -> tuple[np.ndarray, np.ndarray, list[str]]:
    passages = json.loads(REFERENCE.read_text("utf-8"))
    scores = np.concatenate([np.asarray(p["scores"]["nli"], dtype=float) for p in passages])
    labels = [label for p in passages for label in p["annotation"]]
    y = np.array([0 if label == "accurate" else 1 for label in labels])
    return y, scores, labels


def test_reference_ece_and_brier(nli_scores: tuple[np.ndarray, np.ndarray, list[str]]) -> None:
    y, scores, labels = nli_scores
    assert len(labels) == 959
    assert expected_calibration_error(y, scores, n_bins=10) == pytest.approx(0.050, abs=0.001)
    assert brier_score_loss(y, scores) == pytest.approx(0.140, abs=0.001)
    assert brier_score_loss(y, scores) == pytest.approx(sk_brier(y, scores))
    report = calibration_report(y, scores)
    assert report.expected_calibration_error == pytest.approx(0.0503, abs=1e-4)
    assert report.roc_auc_score is not None
    assert report.roc_auc_score > 0.75


def test_other_label_maps_do_not_reproduce_it(
    nli_scores: tuple[np.ndarray, np.ndarray, list[str]],
) -> None:
    _, scores, labels = nli_scores
    half = np.array([{"accurate": 0.0, "minor_inaccurate": 0.5}.get(x, 1.0) for x in labels])
    ece_half = float(np.mean(np.abs(scores - half)))  # bins aside, far from 0.05
    assert ece_half > 0.1
    major_only = np.array([1 if x == "major_inaccurate" else 0 for x in labels])
    assert expected_calibration_error(major_only, scores) > 0.3
    inverted = np.array([1 if x == "accurate" else 0 for x in labels])
    assert expected_calibration_error(inverted, 1 - scores) == pytest.approx(
        expected_calibration_error(1 - inverted, scores), abs=1e-9
    )
