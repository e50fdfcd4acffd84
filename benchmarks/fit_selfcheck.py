"""Fit the combined SelfCheck detector's weights and write ``core/data/selfcheck_combined.json``.

Data: the 119 WikiBio GPT-3 passages with 20 samples (see selfcheck_wikibio.py). For each
feature set (with / without the MiniLM embedding features) it reports the nested,
passage-grouped 5-fold cross-validated scores (each passage scored by a model that never saw
it, regularisation chosen inside the training folds), then fits the shipped model on all
passages with the regularisation chosen by grouped CV. It also fits the logistic calibration
that maps the n-gram detector's raw scores to a risk in [0, 1].

    python benchmarks/fit_selfcheck.py                       # without embedding features
    python benchmarks/fit_selfcheck.py --embedding --embed-cache /tmp/minilm.npz
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from selfcheck_wikibio import (  # noqa: E402
    DEFAULT_DATA,
    FileEmbeddingStore,
    flat,
    load_passages,
    selfcheck_metrics,
)

from core.selfcheck.features import FEATURES, NO_EMBEDDING_FEATURES, sentence_features  # noqa: E402
from core.selfcheck.fit import (  # noqa: E402
    cross_validated_scores,
    fit_calibration,
    fit_logistic,
    select_C,
)
from core.selfcheck.ngram import SelfCheckNgram  # noqa: E402
from core.selfcheck.weights import WEIGHTS_PATH  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=WEIGHTS_PATH)
    parser.add_argument("--embedding", action="store_true", help="also fit with MiniLM features")
    parser.add_argument("--embed-cache", type=Path, default=None)
    args = parser.parse_args(argv)

    passages = load_passages(args.data)
    labels, ids = flat(passages)
    positive = [bool(v > 0) for v in labels]
    encoder = None
    if args.embedding:
        from core.backends.embedder import get_embedder

        encoder = get_embedder()
        if args.embed_cache is not None:
            encoder = encoder.with_store(FileEmbeddingStore(args.embed_cache))
    started = time.perf_counter()
    rows: list[dict[str, float]] = []
    for p in passages:
        rows.extend(sentence_features(p.sentences, p.samples, encoder=encoder))
    if encoder is not None and encoder.store is not None:
        encoder.store.save()  # type: ignore[attr-defined]
    print(f"features of {len(passages)} passages in {time.perf_counter() - started:.1f}s")

    sets = {"no_embedding": NO_EMBEDDING_FEATURES}
    if encoder is not None:
        sets["with_embedding"] = FEATURES
    groups = ids.tolist()
    models: dict[str, object] = {}
    evaluation: dict[str, dict[str, float]] = {}
    print(
        f"{'model':16s} {'C':>6s} {'NonFact':>8s} {'NonFact*':>8s} {'Factual':>8s} "
        f"{'Pearson':>8s} {'Spearman':>8s}   (nested 5-fold CV, percent)"
    )
    for name, features in sets.items():
        oof = cross_validated_scores(rows, positive, groups, features=features)
        metrics = {k: round(v, 2) for k, v in selfcheck_metrics(oof, labels, ids).items()}
        c = select_C(rows, positive, groups, features=features, n_splits=5)
        model = fit_logistic(rows, positive, features=features, C=c)
        models[name] = model.to_dict()
        evaluation[name] = {**metrics, "C": c}
        print(
            f"{name:16s} {c:6.2f} "
            + " ".join(
                f"{metrics[k]:8.2f}"
                for k in ("nonfact", "nonfact_star", "factual", "pearson", "spearman")
            )
        )

    calibration = {}
    ngram = SelfCheckNgram()
    details = [d for p in passages for d in ngram.sentence_scores(p.sentences, p.samples)]
    for variant in ("max", "mean"):
        slope, intercept = fit_calibration([d[variant] for d in details], positive)
        calibration[f"ngram_{variant}"] = {"slope": slope, "intercept": intercept}

    document = {
        "meta": {
            "description": "Combined SelfCheck detector: logistic regression over standardised "
            "features; calibration: logistic maps of raw detector scores to P(hallucinated).",
            "data": "WikiBio GPT-3 SelfCheck benchmark, first 119 passages, 20 samples each",
            "label": "hallucinated = minor_inaccurate or major_inaccurate",
            "n_passages": len(passages),
            "n_sentences": len(labels),
            "positive_rate": round(float(np.mean(positive)), 4),
            "evaluation": "nested passage-grouped 5-fold CV (percent)",
            "cv": evaluation,
        },
        "models": models,
        "calibration": calibration,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
