"""Grounding of clinical note sections against their dialogues (MTS-Dialog test sets).

The dialogue is the source; each sentence of the note section written from it is a statement.
Positives are the real reference sentences, all of them (people wrote them from the visit,
and sometimes they add what it never says: such a sentence flagged counts as a false alarm).
Negatives are hallucinations generated from each sentence with a fixed seed by the same
generator the verifier's training uses on training rows (:mod:`core.grounding.perturb`: changed
specifics, flipped negations, additions never said, merged facts, hedges made certain, ...);
the test sets are never trained or tuned on.

Each verifier is reported side by side with flagging everything: the learned verifier (the
default), the previous rules-only verifier (no learned model), per kind of hallucination
(precision / recall / F1 of each kind against the real sentences), overall, the false-alarm rate
on the real sentences, and AUROC of the statement's support (higher support = less likely
hallucinated).

    python benchmarks/grounding_mts.py --data ../shared/data [--sets 1,2] [--encounters N]
"""

from __future__ import annotations

import csv
import random
import time
from collections import defaultdict
from typing import Any

from _common import base_parser, prf, print_json, print_table, require_data
from verifier_data import benchmark_items

SETS = {
    "1": "MTS-Dialog-TestSet-1-MEDIQA-Chat-2023.csv",
    "2": "MTS-Dialog-TestSet-2-MEDIQA-Sum-2023.csv",
}


def auroc(labels: list[int], scores: list[float]) -> float:
    """Area under the ROC curve of ``scores`` for ``labels`` (1 = hallucinated)."""
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(labels, scores)) if len(set(labels)) == 2 else float("nan")


def evaluate(verifier: Any, cases: list[tuple[list[Any], list[Any]]]) -> dict[str, Any]:
    """Flags and support of every statement of ``cases`` ((sources, [(statement, kind of
    hallucination or None, original)])); per-kind and overall scores."""
    per_kind: dict[str, list[tuple[int, int]]] = defaultdict(list)
    labels: list[int] = []
    flags: list[int] = []
    risk: list[float] = []
    started = time.perf_counter()
    for sources, items in cases:
        results = verifier.verify_statements([t for t, _, _ in items], sources)
        flag_of: dict[str, int] = {}
        for (_, kind, orig), res in zip(items, results, strict=True):
            flag = int(not res.is_grounded)
            support = res.support if res.support is not None else float(res.is_grounded)
            if res.status == "contradicted":
                support = 0.0
            labels.append(int(kind is not None))
            flags.append(flag)
            risk.append(1.0 - support)
            if kind is None:
                flag_of[orig] = flag
        for (_, kind, orig), res in zip(items, results, strict=True):
            if kind is not None:
                per_kind[kind].append((flag_of[orig], int(not res.is_grounded)))
    elapsed = time.perf_counter() - started
    table = []
    for kind in sorted(per_kind):
        pairs = per_kind[kind]
        p, r, f = prf(
            [0] * len(pairs) + [1] * len(pairs), [o for o, _ in pairs] + [x for _, x in pairs]
        )
        table.append({"kind": kind, "n": len(pairs), "precision": p, "recall": r, "f1": f})
    p, r, f = prf(labels, flags)
    real = [fl for fl, lab in zip(flags, labels, strict=True) if lab == 0]
    table.append({"kind": "all", "n": sum(labels), "precision": p, "recall": r, "f1": f})
    return {
        "per_kind": table,
        "f1": f,
        "precision": p,
        "recall": r,
        "false_alarm_rate": sum(real) / len(real) if real else 0.0,
        "auroc": auroc(labels, risk),
        "real_sentences": len(real),
        "hallucinations": sum(labels),
        "statements_per_s": len(labels) / elapsed if elapsed else 0.0,
    }


def test_cases(rows: list[dict[str, str]], seed: int) -> list[tuple[list[Any], list[Any]]]:
    """Each encounter's dialogue as the source and its items (real and generated)."""
    from core.grounding import SourceChunk

    rng = random.Random(seed)
    return [
        (
            [SourceChunk("dialogue", r["dialogue"], "transcript")],
            benchmark_items(r["section_text"], r["dialogue"], rng),
        )
        for r in rows
    ]


def load_set(data: Any, key: str) -> list[dict[str, str]]:
    """The rows of MTS-Dialog test set ``key`` ("1" or "2")."""
    with require_data(data, "mts_dialog", SETS[key]).open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--sets", default="1,2", help="which test sets (1, 2 or both)")
    parser.add_argument("--encounters", type=int, default=0, help="sample N per set (0: all)")
    parser.add_argument(
        "--verifiers", default="learned,rules", help="which verifiers: learned, rules or both"
    )
    args = parser.parse_args()

    from core.backends.embedder import get_embedder
    from core.grounding import GroundingVerifier
    from core.grounding.learned import get_support_model

    embedder = get_embedder()
    chosen = args.verifiers.split(",")
    verifiers = {}
    if "learned" in chosen:
        verifiers["learned (default)"] = GroundingVerifier(
            embedder=embedder, learned=get_support_model()
        )
    if "rules" in chosen:
        verifiers["rules only (previous)"] = GroundingVerifier(embedder=embedder)
    summary = []
    details: dict[str, Any] = {}
    for key in args.sets.split(","):
        rows = load_set(args.data, key.strip())
        if args.encounters and len(rows) > args.encounters:
            rows = random.Random(args.seed).sample(rows, args.encounters)
        cases = test_cases(rows, args.seed)
        n_real = sum(k is None for _, items in cases for _, k, _ in items)
        n_hall = sum(k is not None for _, items in cases for _, k, _ in items)
        baseline = prf([0] * n_real + [1] * n_hall, [1] * (n_real + n_hall))
        summary.append(
            {
                "set": f"TestSet-{key}",
                "verifier": "flag everything",
                "f1": baseline[2],
                "precision": baseline[0],
                "recall": 1.0,
                "false alarms": 1.0,
                "auroc": 0.5,
            }
        )
        for label, verifier in verifiers.items():
            out = evaluate(verifier, cases)
            details[f"{key}/{label}"] = out
            summary.append(
                {
                    "set": f"TestSet-{key}",
                    "verifier": label,
                    "f1": out["f1"],
                    "precision": out["precision"],
                    "recall": out["recall"],
                    "false alarms": out["false_alarm_rate"],
                    "auroc": out["auroc"],
                    "statements/s": out["statements_per_s"],
                }
            )
            print_table(
                out["per_kind"],
                ["kind", "n", "precision", "recall", "f1"],
                f"TestSet-{key}, {label}: {len(rows)} encounters, {out['real_sentences']} real "
                f"sentences, {out['hallucinations']} hallucinations (seed {args.seed})",
            )
    print(
        "MTS-Dialog test sets: real reference sentences vs generated hallucinations "
        "(targets: F1 >= 0.85 with <= 10 % false alarms)"
    )
    print_table(
        summary,
        ["set", "verifier", "f1", "precision", "recall", "false alarms", "auroc", "statements/s"],
    )
    if args.json:
        print_json({"summary": summary, "details": details})


if __name__ == "__main__":
    main()
