"""Train the learned verifier and write it into the package (never run by tests or CI).

all-MiniLM-L6-v2 (the embedder's weights) becomes a cross-encoder: (statement, evidence) ->
log-odds that the evidence supports the statement, trained with sentence-transformers'
``CrossEncoderTrainer`` and binary cross-entropy on the pairs of ``verifier_data.py`` (train
rows only), one epoch, seeded, bfloat16 autocast where the CPU has it, in batches drawn at
random (``--banded``: of pairs of about one length, :func:`length_bands`).
The word embeddings stay frozen (so the package ships the rest, half the size, and takes them
from the installed MiniLM). Stages, each resumable:

1. ``pairs``: build the pairs (``build/verifier/pairs.jsonl``) unless they exist;
2. ``train``: fine-tune, checkpoints in ``build/verifier/checkpoints``;
3. ``export``: the weights as float16 safetensors and ``verifier.json`` (settings, training
   manifest) into ``core/data/verifier/``. With ``--average-with DIR [DIR ...]`` (exported
   models' folders, e.g. a copy of ``core/data/verifier/`` made before training, or other
   runs' ``WORK/model``), the weights written are the uniform average of the trained model's
   and theirs, a "model soup": all must be fine-tuned from the same start (the same MiniLM
   and the same ``--head-seed``, which draws the classifier head's first weights).

A second stage: ``--start-from DIR`` fine-tunes an exported model further instead of MiniLM,
and ``--focus KINDS`` trains on the pairs of those kinds with ``--focus-mix`` times as many of
the others drawn at random, so that it learns them without forgetting the rest; the export
records the first stage's training under ``started_from``.

``--work`` puts the pairs, checkpoints and model in another folder than ``build/verifier``
(e.g. one per run to be averaged later). The calibration and the combination with the rule
signals are fitted afterwards on dev rows by ``fit_verifier.py``.

    python benchmarks/train_verifier.py --data ../shared/data [--stages pairs,train,export]
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from _common import ROOT, base_parser

try:
    from sentence_transformers.base.sampler import DefaultBatchSampler
except ImportError:  # sentence-transformers before 6
    from sentence_transformers.sampler import DefaultBatchSampler  # type: ignore[no-redef]

WORK = ROOT / "build" / "verifier"
MAX_LENGTH = 192


def load_pairs(path: Path, split: str) -> list[dict[str, object]]:
    with path.open(encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    assert all(r["split"] in ("train", "dev") for r in rows), "a test row reached the pairs"
    return [r for r in rows if r["split"] == split]


BAND_BATCHES = 50  # batches of pairs drawn together, then cut into batches by length


def length_bands(lengths: list[int], batch: int, seed: int) -> list[list[int]]:
    """Every index of ``lengths`` in batches of ``batch`` (the last may be short) of about
    the same length: the shuffled indices are cut into bands of ``BAND_BATCHES`` batches,
    each band sorted by length, and the batches shuffled. Random batches are padded to their
    longest pair (on the training pairs, 174 word pieces where the average is 91), so a
    batch of pairs of about one length costs about half as much."""
    rng = random.Random(seed)
    order = list(range(len(lengths)))
    rng.shuffle(order)
    band = batch * BAND_BATCHES
    ranked = [
        i
        for a in range(0, len(order), band)
        for i in sorted(order[a : a + band], key=lengths.__getitem__)
    ]
    batches = [ranked[b : b + batch] for b in range(0, len(ranked), batch)]
    rng.shuffle(batches)
    return batches


class LengthBandedBatchSampler(DefaultBatchSampler):
    """sentence-transformers' batch sampler over :func:`length_bands` (a pair's length read
    as its characters, up to about what the model reads), new bands each epoch."""

    def __init__(self, dataset: Any, batch_size: int, drop_last: bool, **kwargs: Any) -> None:
        super().__init__(dataset, batch_size=batch_size, drop_last=drop_last, **kwargs)
        self.lengths = [
            min(len(s) + len(e), 4 * MAX_LENGTH)
            for s, e in zip(dataset["statement"], dataset["evidence"], strict=True)
        ]

    def __iter__(self) -> Iterator[list[int]]:
        batches = length_bands(self.lengths, self.batch_size, self.seed + self.epoch)
        if self.drop_last:
            batches = [b for b in batches if len(b) == self.batch_size]
        yield from batches

    def __len__(self) -> int:
        full, rest = divmod(len(self.lengths), self.batch_size)
        return full + (1 if rest and not self.drop_last else 0)


def train(
    pairs: Path,
    out: Path,
    *,
    seed: int,
    epochs: float,
    lr: float,
    batch: int,
    banded: bool = False,
    max_steps: int = -1,
    head_seed: int | None = None,
    start_from: Path | None = None,
    focus: Sequence[str] = (),
    focus_mix: float = 4.0,
) -> float:
    """Fine-tune and save the model to ``out``; returns the training time in seconds.
    ``banded``: batches of pairs of about one length (:func:`length_bands`). ``head_seed``
    (default ``seed``) draws the classifier head's first weights, the one part of the model
    that does not come from MiniLM; ``seed`` draws everything else. ``start_from``: an
    exported model's folder whose weights are fine-tuned further instead of MiniLM's (a
    second stage); ``focus``: train on the pairs of these kinds (:func:`focused`)."""
    import torch
    from datasets import Dataset
    from sentence_transformers.cross_encoder import (
        CrossEncoder,
        CrossEncoderTrainer,
        CrossEncoderTrainingArguments,
    )
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

    from core.backends.embedder import default_model_path, resolve_precision

    random.seed(seed)
    torch.manual_seed(seed if head_seed is None else head_seed)
    from core.grounding.learned import model_inputs

    rows = load_pairs(pairs, "train")
    if focus:
        rows = focused(rows, focus, focus_mix, seed)
    random.Random(seed).shuffle(rows)
    inputs = [model_inputs(str(r["statement"]), str(r["evidence"])) for r in rows]
    data = Dataset.from_dict(
        {
            "statement": [s for s, _ in inputs],
            "evidence": [e for _, e in inputs],
            "label": [float(r["label"]) for r in rows],  # type: ignore[arg-type]
        }
    )
    model = CrossEncoder(default_model_path(), num_labels=1, max_length=MAX_LENGTH, device="cpu")
    if start_from is not None:
        load_exported(model.model, start_from)
    torch.manual_seed(seed)  # the trainer seeds itself too; this keeps the two draws apart
    model.model.bert.embeddings.word_embeddings.weight.requires_grad_(False)
    sampler: dict[str, Any] = {"batch_sampler": LengthBandedBatchSampler} if banded else {}
    args = CrossEncoderTrainingArguments(
        output_dir=str(out.parent / "checkpoints"),
        num_train_epochs=epochs,
        per_device_train_batch_size=batch,
        learning_rate=lr,
        warmup_steps=0.05,
        weight_decay=0.01,
        bf16=resolve_precision("auto") == "bf16",
        use_cpu=True,
        seed=seed,
        data_seed=seed,
        save_strategy="steps",
        save_steps=200,
        save_total_limit=2,
        logging_steps=50,
        report_to="none",
        dataloader_num_workers=0,
        max_steps=max_steps,
        **sampler,
    )
    trainer = CrossEncoderTrainer(
        model=model, args=args, train_dataset=data, loss=BinaryCrossEntropyLoss(model)
    )
    started = time.perf_counter()
    checkpoints = sorted((out.parent / "checkpoints").glob("checkpoint-*"))
    trainer.train(resume_from_checkpoint=bool(checkpoints))
    elapsed = time.perf_counter() - started
    model.save_pretrained(str(out))
    (out / "training_seconds.txt").write_text(f"{elapsed:.0f}\n")
    return elapsed


def focused(
    rows: Sequence[dict[str, object]], kinds: Sequence[str], mix: float, seed: int
) -> list[dict[str, object]]:
    """The pairs of ``kinds``, and ``mix`` times as many of the others drawn at random
    (seeded), so that a second stage learns those kinds without forgetting the rest."""
    wanted = set(kinds)
    chosen = [r for r in rows if r["kind"] in wanted]
    if not chosen:
        raise ValueError(f"no training pairs of kinds {sorted(wanted)}")
    others = [r for r in rows if r["kind"] not in wanted]
    take = min(len(others), round(mix * len(chosen)))
    return chosen + random.Random(seed).sample(others, take)


def read_model(folder: Path, words: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A model folder's weights without the word embeddings, and its settings: an exported
    model (``verifier.json`` beside it, which names its word embeddings by checksum) or a
    trained one (``WORK/model``, which holds them); one fine-tuned on other word embeddings
    than ``words`` is an error naming the folder."""
    from safetensors.torch import load_file

    from core.grounding.learned import SETTINGS, WEIGHTS, WORD_EMBEDDINGS, embedding_checksum

    state = load_file(str(folder / WEIGHTS))
    their_words = state.pop(WORD_EMBEDDINGS, None)
    settings = json.loads((folder / SETTINGS).read_text()) if (folder / SETTINGS).exists() else {}
    checksum = (
        embedding_checksum(their_words)
        if their_words is not None
        else settings.get("embedding_checksum")
    )
    if checksum != embedding_checksum(words):
        raise ValueError(f"{folder} was trained on other word embeddings")
    return state, settings


def load_exported(model: Any, folder: Path) -> None:
    """Load a model folder's weights (:func:`read_model`: ``core/data/verifier`` or a copy)
    into ``model``, a ``BertForSequenceClassification`` holding MiniLM's word embeddings; a
    weight missing or left over is an error naming how many, and leaves ``model`` as it was."""
    from core.grounding.learned import WORD_EMBEDDINGS

    own = model.state_dict()
    state, _ = read_model(folder, own[WORD_EMBEDDINGS])
    wanted = {k for k in own if k != WORD_EMBEDDINGS and not k.endswith("position_ids")}
    missing, unexpected = wanted - set(state), set(state) - set(own)
    if missing or unexpected:
        raise ValueError(
            f"{folder} does not fit the model ({len(missing)} weights missing, "
            f"{len(unexpected)} unexpected)"
        )
    model.load_state_dict({k: v.float() for k, v in state.items()}, strict=False)


def pair_counts(
    rows: list[dict[str, object]],
) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    """The training pairs counted by corpus, by corpus and label, and by kind (the kind of
    hallucination of a negative, or how a positive came to be), each sorted by name: the
    manifest that lets two trained versions be compared without their pairs."""
    corpora: Counter[str] = Counter()
    labels: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    for r in rows:
        corpora[str(r["corpus"])] += 1
        labels[f"{r['corpus']}:{r['label']}"] += 1
        kinds[str(r["kind"])] += 1
    return dict(sorted(corpora.items())), dict(sorted(labels.items())), dict(sorted(kinds.items()))


def averaged(states: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The uniform average (float32) of models' weights, weight by weight; a weight that not
    all of them hold, or hold with one shape, is an error naming it."""
    if not states:
        raise ValueError("no models to average")
    keys = {k for k in states[0] if "position_ids" not in k}
    for other in states[1:]:
        theirs = {k for k in other if "position_ids" not in k}
        if keys != theirs:
            raise ValueError(
                f"the models hold different weights: {sorted(keys ^ theirs)[:5]} (first 5)"
            )
        for k in keys:
            if other[k].shape != states[0][k].shape:
                raise ValueError(
                    f"weight {k}: shape {tuple(states[0][k].shape)} against {tuple(other[k].shape)}"
                )
    return {k: sum(st[k].float() for st in states) / len(states) for k in sorted(keys)}


def export(
    trained: Path,
    pairs: Path,
    *,
    seed: int,
    head_seed: int,
    command: str,
    average_with: Sequence[Path] = (),
    start_from: Path | None = None,
    focus: Sequence[str] = (),
    focus_mix: float = 4.0,
) -> None:
    """Float16 safetensors of every weight but the word embeddings, and verifier.json;
    with ``average_with``, the weights averaged with those exported models' (:func:`averaged`)."""
    import torch
    from safetensors.torch import load_file, save_file

    from core.grounding.learned import (
        MODEL_DIR,
        SETTINGS,
        WEIGHTS,
        WORD_EMBEDDINGS,
        embedding_checksum,
    )

    state = load_file(str(trained / "model.safetensors"))
    words = state.pop(WORD_EMBEDDINGS)
    states, average = [state], []
    for folder in average_with:
        # an exported model (verifier.json beside it) or a trained one (WORK/model)
        theirs, their_settings = read_model(folder, words)
        states.append(theirs)
        exported = (folder / SETTINGS).exists()
        average.append(their_settings.get("training") if exported else {"folder": str(folder)})
    if average_with:
        state = averaged(states)
    MODEL_DIR.mkdir(parents=True, exist_ok=True)
    save_file(
        {k: v.to(torch.float16).contiguous() for k, v in state.items() if "position_ids" not in k},
        str(MODEL_DIR / WEIGHTS),
        metadata={"format": "pt", "base": "all-MiniLM-L6-v2", "dtype": "float16"},
    )
    rows = load_pairs(pairs, "train")
    manifest, labels, kinds = pair_counts(focused(rows, focus, focus_mix, seed) if focus else rows)
    from core.grounding.splits import ACI_TRAIN, MTS_TRAIN

    files = {
        "aci": [f"aci_bench/{ACI_TRAIN}"],
        "mts": [f"mts_dialog/{MTS_TRAIN[0]} (ID not a multiple of 10)"],
        "mts_bt": [f"mts_dialog/{n} (ID not a multiple of 10)" for n in MTS_TRAIN[1:]],
        "medhallu": ["medhallu/medhallu_pqa_labeled.jsonl (row index % 10 in 0-4)"],
        "primock": ["verification/PriMock57/notes and transcripts (consultations of days 1-3)"],
    }
    seconds_file = trained / "training_seconds.txt"
    old = json.loads((MODEL_DIR / SETTINGS).read_text()) if (MODEL_DIR / SETTINGS).exists() else {}
    settings = {
        **old,
        "version": time.strftime("%Y-%m-%d"),
        "max_length": MAX_LENGTH,
        "embedding_checksum": embedding_checksum(words),
        "training": {
            "command": command,
            "seed": seed,
            "head_seed": head_seed,
            "seconds": float(seconds_file.read_text()) if seconds_file.exists() else None,
            "train_pairs_by_corpus": manifest,
            "train_pairs_by_label": labels,
            "train_pairs_by_kind": kinds,
            "clinical_files": {k: v for k, v in files.items() if k in manifest},
            "git_commit": _git_commit(),
        },
    }
    if average:
        settings["averaged_with"] = average
    else:
        settings.pop("averaged_with", None)
    if start_from is not None:
        # the first stage's record, so that the whole path back to MiniLM stays written down
        first = json.loads((start_from / SETTINGS).read_text())
        settings["started_from"] = {
            "version": first.get("version"),
            "training": first.get("training"),
            **({"started_from": first["started_from"]} if "started_from" in first else {}),
        }
    else:
        settings.pop("started_from", None)
    (MODEL_DIR / SETTINGS).write_text(json.dumps(settings, indent=2) + "\n")
    size = (MODEL_DIR / WEIGHTS).stat().st_size / 1e6
    print(f"exported {WEIGHTS} ({size:.1f} MB) and {SETTINGS} to {MODEL_DIR}")


def _git_commit() -> str | None:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        return None


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--stages", default="pairs,train,export")
    parser.add_argument(
        "--work",
        type=Path,
        default=WORK,
        help="folder of the pairs (unless --pairs), checkpoints and trained model "
        "(default build/verifier; a run resumes from the checkpoints it finds there)",
    )
    parser.add_argument("--pairs", type=Path, default=None, help="default: WORK/pairs.jsonl")
    parser.add_argument(
        "--head-seed",
        type=int,
        default=None,
        help="seed of the classifier head's first weights (default: --seed); runs to be "
        "averaged (--average-with) need one",
    )
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument(
        "--banded",
        action="store_true",
        help="batches of pairs of about one length (about twice as fast a step; default: "
        "batches drawn at random, as the shipped model was trained)",
    )
    parser.add_argument(
        "--max-steps", type=int, default=-1, help="stop after N steps (to time a step; -1: all)"
    )
    parser.add_argument(
        "--evidence-negation-share",
        type=float,
        default=0.0,
        help="passed to verifier_data.py when the pairs are built (0: the shipped model's)",
    )
    parser.add_argument(
        "--both-turned",
        action="store_true",
        help="passed to verifier_data.py: the statement turned round against that evidence too",
    )
    parser.add_argument(
        "--specifics-share",
        type=float,
        default=0.0,
        help="passed to verifier_data.py: share of positives that also yield a changed specific",
    )
    parser.add_argument(
        "--tie-share",
        type=float,
        default=1.0,
        help="passed to verifier_data.py: scales how often facts are tied wrongly (1: as weighted)",
    )
    parser.add_argument(
        "--withdrawn-share",
        type=float,
        default=0.0,
        help="passed to verifier_data.py: share of positives resting on a yes or no also shown "
        "with that answer withdrawn (negatives; above 1, that many versions of each; 0: the "
        "shipped model's)",
    )
    parser.add_argument(
        "--harvested-replies",
        action="store_true",
        help="passed to verifier_data.py: withdrawn answers drawn from the training transcripts' "
        "own replies too, each beside a positive with the answer in other words",
    )
    parser.add_argument(
        "--start-from",
        type=Path,
        default=None,
        help="train: fine-tune this exported model's folder further (a second stage; copy "
        "core/data/verifier first, as the export overwrites it) instead of MiniLM",
    )
    parser.add_argument(
        "--focus",
        default="",
        help="train: only the pairs of these kinds (comma-separated, e.g. "
        "answer_withdrawn,answer_given), with --focus-mix times as many others at random",
    )
    parser.add_argument(
        "--focus-mix",
        type=float,
        default=4.0,
        help="train: with --focus, pairs of other kinds drawn per focused pair (default 4)",
    )
    parser.add_argument(
        "--average-with",
        type=Path,
        nargs="+",
        default=[],
        help="export: the uniform average of the trained weights and these models' folders "
        "(exported, as core/data/verifier, or trained, as WORK/model), fine-tuned from one start",
    )
    args = parser.parse_args()
    if args.pairs is None:
        args.pairs = args.work / "pairs.jsonl"
    head_seed = args.seed if args.head_seed is None else args.head_seed
    focus = [k for k in args.focus.split(",") if k]
    stages = args.stages.split(",")
    # which stages run does not change what comes out
    given = re.sub(r"\s*--stages[ =]\S+", "", " ".join(sys.argv[1:]))
    command = f"python benchmarks/train_verifier.py {given}".rstrip()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if "pairs" in stages and not args.pairs.exists():
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "benchmarks" / "verifier_data.py"),
                "--data",
                str(args.data),
                "--seed",
                str(args.seed),
                "--out",
                str(args.pairs),
                "--evidence-negation-share",
                str(args.evidence_negation_share),
                *(["--both-turned"] if args.both_turned else []),
                "--specifics-share",
                str(args.specifics_share),
                "--tie-share",
                str(args.tie_share),
                "--withdrawn-share",
                str(args.withdrawn_share),
                *(["--harvested-replies"] if args.harvested_replies else []),
            ],
            check=True,
        )
    trained = args.work / "model"
    if "train" in stages:
        seconds = train(
            args.pairs,
            trained,
            seed=args.seed,
            epochs=args.epochs,
            lr=args.lr,
            batch=args.batch,
            banded=args.banded,
            max_steps=args.max_steps,
            head_seed=head_seed,
            start_from=args.start_from,
            focus=focus,
            focus_mix=args.focus_mix,
        )
        print(f"trained in {seconds / 60:.1f} min")
    if "export" in stages:
        export(
            trained,
            args.pairs,
            seed=args.seed,
            head_seed=head_seed,
            command=command,
            average_with=args.average_with,
            start_from=args.start_from,
            focus=focus,
            focus_mix=args.focus_mix,
        )


if __name__ == "__main__":
    main()
