"""Fit the learned verifier's decision on development rows: calibration, combination, threshold.

The shipped model's probability is one signal; the share of the statement's words that its
evidence (and the whole source) does not say, and whether a fact check finds a conflict or a
missing specific, are the others (``core.grounding.verifier.COMBINED_SIGNALS``). A sum of
one monotone step function per signal on the log-odds scale (boosted one-split trees, each
held to its signal's sign; ``--combination linear``: a weight per signal, the logistic fit of
the earlier versions), fitted here on dev rows only (ACI-Bench ``valid.csv``, the MTS-Dialog
dev encounters of :func:`core.grounding.splits.split_of`, PriMock57's day 4, MedHallu rows
5-6), gives each statement its calibrated probability of support. With ``--general SHARE``
the dev parts of the claim/evidence corpora (``verifier_corpora.py``: real claims, citing
sentences and dialogue responses against their evidence, which the model never trains on)
join the fit, together weighing SHARE times the clinical rows, each corpus the same: the
clinical rows' hallucinations are generated, theirs are real. The threshold is the one with
the best F1 (on a grid of 0.005) on the clinical dev rows whose false alarms on real
reference sentences of the dev visits stay within ``--max-false-alarms`` (10 %, the ceiling
the benchmarks hold the verifier to), and the vetoes are read off the clinical rows alone.
Everything is written into ``core/data/verifier/verifier.json``.

    python benchmarks/fit_verifier.py --data ../shared/data [--families numbers,negation,...]
                                      [--combination stumps|linear] [--general 1]
"""

from __future__ import annotations

import csv
import json
import random
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from _common import base_parser, print_table, require_data, support_model
from verifier_corpora import CORPORA, load_corpus
from verifier_data import (
    benchmark_items,
    labelled_note,
    primock_encounters,
    said_enough,
    statement_cosines,
)

from core.grounding.support import novelty
from core.grounding.verifier import SIGNAL_SIGNS as SIGNS
from core.text import split_label

DevItem = tuple[str, int, str, float]  # statement, label (1 = hallucinated), kind, weight


def dev_cases(
    data: Path, seed: int, *, every: bool = False
) -> list[tuple[str, list[Any], list[DevItem]]]:
    """(group, sources, [(statement, label, kind, weight)]) for every dev encounter and item.

    One hallucination per reference sentence, drawn as the benchmarks draw them; with
    ``every``, every hallucination the generator can make of it, each weighing 1/n of the
    sentence's n, so that the classes stay balanced and rare kinds of error are seen more
    often (measured: fewer false alarms, lower F1 on every test set; not the default)."""
    from core.grounding import SourceChunk
    from core.grounding.splits import ACI_DEV, MTS_TRAIN, split_of

    rng = random.Random(seed)
    cases: list[tuple[str, list[Any], list[DevItem]]] = []

    def visit(group: str, note: str, dialogue: str) -> None:
        items = benchmark_items(note, dialogue, rng, every=every)
        made = Counter(original for _, k, original in items if k is not None)
        labelled = [
            (s, 0, "reference", 1.0) if k is None else (s, 1, k, 1.0 / made[original])
            for s, k, original in items
        ]
        cases.append((group, [SourceChunk("visit", dialogue, "transcript")], labelled))

    with require_data(data, "aci_bench", ACI_DEV).open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            visit("aci", row["note"], row["dialogue"])
    with require_data(data, "mts_dialog", MTS_TRAIN[0]).open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            if split_of("mts", MTS_TRAIN[0], row["ID"]) == "dev":
                key = f"{MTS_TRAIN[0]}/{row['ID']}"  # under a label as in training
                visit(
                    "mts",
                    labelled_note(row["section_header"], row["section_text"], key),
                    row["dialogue"],
                )
    for enc in primock_encounters(data, splits=("dev",)):
        visit("primock", enc.note, enc.dialogue)
    path = require_data(data, "medhallu", "medhallu_pqa_labeled.jsonl")
    with path.open(encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if split_of("medhallu", path.name, i) != "dev":
                continue
            item = json.loads(line)
            sources = [SourceChunk(f"k{j}", t) for j, t in enumerate(item["Knowledge"]) if t]
            cases.append(
                (
                    "medhallu",
                    sources,
                    [
                        (item["Ground Truth"], 0, "reference", 1.0),
                        (item["Hallucinated Answer"], 1, "medhallu", 1.0),
                    ],
                )
            )
    return cases


def general_cases(
    data: Path, seed: int, *, limit: int = 0
) -> list[tuple[str, list[Any], list[DevItem]]]:
    """The dev parts of the claim/evidence corpora (``verifier_corpora.CORPORA``; the model
    never trains on them), each pair as one case of one statement read whole against its
    evidence, in group ``general/<corpus>``; at most ``limit`` pairs per corpus (0: every
    one)."""
    from core.grounding import SourceChunk

    root = require_data(data, "verification")
    cases: list[tuple[str, list[Any], list[DevItem]]] = []
    for corpus in CORPORA:
        pairs = [p for p in load_corpus(corpus, root, rng=random.Random(seed)) if p.split == "dev"]
        if limit and len(pairs) > limit:
            pairs = random.Random(seed).sample(pairs, limit)
        for p in pairs:
            sources = [SourceChunk("e", p.evidence, "document")]
            cases.append(
                (f"{GENERAL}/{corpus}", sources, [(p.statement, 1 - p.label, p.kind, 1.0)])
            )
    return cases


GENERAL = "general"  # group prefix of the claim/evidence corpora's dev rows


def clinical(row: dict[str, Any]) -> bool:
    """A row of the clinical dev sources (ACI-Bench, MTS-Dialog, PriMock57, MedHallu)."""
    return not row["group"].startswith(f"{GENERAL}/")


def weigh_general(rows: list[dict[str, Any]], share: float) -> None:
    """Give the general corpora's rows, together, ``share`` times the clinical rows' weight
    in the fit, each corpus the same part of it (so that no one corpus, nor the largest,
    decides the combination)."""
    total = sum(r.get("weight", 1.0) for r in rows if clinical(r))
    groups = Counter(r["group"] for r in rows if not clinical(r))
    for r in rows:
        if not clinical(r):
            r["weight"] = share * total / len(groups) / groups[r["group"]]


def collect(verifier: Any, cases: list[Any]) -> list[dict[str, Any]]:
    """Each dev statement's signals (None when exact matching settled it), label
    (1 = hallucinated) and, for a real sentence, whether its evidence says enough of it to
    count as a clean positive (:func:`verifier_data.said_enough`, the rule training uses)."""
    rows = []
    for group, sources, items in cases:
        statements = [s for s, _, _, _ in items]
        results = verifier.verify_statements(statements, sources)
        evidence = verifier.evidence_texts(statements, sources)
        cosines = statement_cosines(verifier, statements, evidence)
        for (s, label, kind, weight), res, ev, cos in zip(
            items, results, evidence, cosines, strict=True
        ):
            rows.append(
                {
                    "group": group,
                    "label": label,
                    "kind": kind,
                    "weight": weight,
                    "signals": dict(res.signals) or None,
                    "status": res.status,
                    "said_enough": bool(
                        label or said_enough(novelty(split_label(s)[1], [ev]), float(cos))
                    ),
                }
            )
    return rows


def matrix(rows: list[dict[str, Any]], signals: Sequence[str]) -> np.ndarray:
    out = []
    for r in rows:
        s = dict(r["signals"])
        p = min(1 - 1e-6, max(1e-6, s["model"]))
        s["model"] = float(np.log(p / (1 - p)))
        out.append([s[name] for name in signals])
    return np.array(out, dtype=np.float64)


def signed_logistic(
    x: np.ndarray, y: np.ndarray, weights: np.ndarray, signs: Sequence[int], *, c: float = 1.0
) -> tuple[np.ndarray, float]:
    """Weighted L2-regularised logistic regression (as scikit-learn's with ``C=c``) whose
    coefficients keep the given signs (+1: >= 0, -1: <= 0): L-BFGS-B with bounds."""
    from scipy.optimize import minimize

    n_features = x.shape[1]

    def loss(params: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = params[:n_features], params[n_features]
        z = x @ w + b
        p = 1.0 / (1.0 + np.exp(-z))
        # log(1 + e^z) - y z, stable for large |z|
        value = float(np.sum(weights * (np.logaddexp(0.0, z) - y * z)))
        value += 0.5 / c * float(w @ w)
        r = weights * (p - y)
        grad = np.concatenate([x.T @ r + w / c, [r.sum()]])
        return value, grad

    bounds = [(0.0, None) if s > 0 else (None, 0.0) for s in signs] + [(None, None)]
    found = minimize(loss, np.zeros(n_features + 1), jac=True, method="L-BFGS-B", bounds=bounds)
    return found.x[:n_features], float(found.x[n_features])


def monotone_stumps(
    x: np.ndarray,
    y: np.ndarray,
    weights: np.ndarray,
    signs: Sequence[int],
    *,
    rounds: int = 200,
    rate: float = 0.1,
    min_leaf: int = 20,
    bins: int = 64,
) -> tuple[dict[int, tuple[list[float], list[float]]], float]:
    """Gradient-boosted one-split trees (Newton steps on the weighted log loss), each split
    held to its signal's sign (+1: the right side never lower, -1: never higher). One split
    per tree makes the sum additive: each signal gets a monotone step function of its own,
    returned as {column: (thresholds, values)} with ``len(values) == len(thresholds) + 1``
    (value ``k`` for ``thresholds[k-1] < v <= thresholds[k]``), and the intercept.

    A straight line per signal (:func:`signed_logistic`) cannot bend: the model's log-odds
    count the same from -8 to -4, where the model is sure either way, as from -2 to 2."""
    n, d = x.shape
    cuts = []
    for j in range(d):
        seen = np.unique(x[:, j])
        if len(seen) > bins:
            seen = np.unique(np.quantile(x[:, j], np.linspace(0.0, 1.0, bins + 1)))
        cuts.append((seen[:-1] + seen[1:]) / 2.0)
    where = [np.searchsorted(cuts[j], x[:, j], side="left") for j in range(d)]
    counts = [np.cumsum(np.bincount(where[j], minlength=len(cuts[j]) + 1)) for j in range(d)]
    p0 = float(np.clip(np.average(y, weights=weights), 1e-6, 1 - 1e-6))
    intercept = float(np.log(p0 / (1.0 - p0)))
    z = np.full(n, intercept)
    steps: dict[int, dict[float, list[float]]] = {}
    for _ in range(rounds):
        prob = 1.0 / (1.0 + np.exp(-z))
        g, h = weights * (prob - y), weights * prob * (1.0 - prob)
        g_all, h_all = g.sum(), h.sum()
        best: tuple[float, int, int, float, float] | None = None
        for j in range(d):
            k = len(cuts[j])
            if not k:
                continue
            gl = np.cumsum(np.bincount(where[j], weights=g, minlength=k + 1))[:k]
            hl = np.cumsum(np.bincount(where[j], weights=h, minlength=k + 1))[:k]
            gr, hr = g_all - gl, h_all - hl
            left_n = counts[j][:k]
            ok = (left_n >= min_leaf) & (n - left_n >= min_leaf) & (hl > 1e-9) & (hr > 1e-9)
            vl, vr = -gl / np.maximum(hl, 1e-9), -gr / np.maximum(hr, 1e-9)
            ok &= (vr >= vl) if signs[j] > 0 else (vr <= vl)
            gain = np.where(ok, gl**2 / np.maximum(hl, 1e-9) + gr**2 / np.maximum(hr, 1e-9), -1)
            i = int(np.argmax(gain))
            if gain[i] > 0 and (best is None or gain[i] > best[0]):
                best = (float(gain[i]), j, i, float(vl[i]), float(vr[i]))
        if best is None:
            break
        _, j, i, vl_, vr_ = best
        left = where[j] <= i
        z += rate * np.where(left, vl_, vr_)
        step = steps.setdefault(j, {}).setdefault(float(cuts[j][i]), [0.0, 0.0])
        step[0] += rate * vl_
        step[1] += rate * vr_
    shapes = {}
    for j, by_cut in steps.items():
        thresholds = sorted(by_cut)
        values = [
            sum(
                below if t >= (thresholds[k] if k < len(thresholds) else np.inf) else above
                for t, (below, above) in by_cut.items()
            )
            for k in range(len(thresholds) + 1)
        ]
        shapes[j] = ([round(t, 6) for t in thresholds], [round(v, 6) for v in values])
    return shapes, intercept


# A family of fact checks whose conflicts fall on at most this share of the real dev
# sentences decides by itself: its conflict makes a statement unsupported whatever the model
# says. The logistic fit underrates such a check: the model already doubts most of what it
# catches, so the loss barely needs it, and where the model is sure of a wrong dose the
# check is outvoted. The share is the mean over the clinical dev sources, each counting the
# same, so that the largest of them (whose notes may name things as their visits do) does
# not decide what a veto costs on the others (whose notes name in medical terms what the
# visit says in lay words).
VETO_MAX_REAL_SHARE = 0.01
THRESHOLD_STEP = 0.005  # the threshold is chosen on this grid (until 2026-12-07: 0.025)


def vetoes(rows: list[dict[str, Any]], families: Sequence[str]) -> dict[str, float]:
    """The fact-check families that decide alone, each with the support its conflict leaves
    a statement: the (weighted) share of real sentences among the dev statements it finds in
    conflict. A family qualifies when its conflicts fall on at most
    :data:`VETO_MAX_REAL_SHARE` of the real dev sentences, averaged over the dev sources
    (MedHallu aside)."""
    rows = [r for r in rows if clinical(r)]
    real: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r["label"] == 0 and r["group"] != "medhallu":
            real.setdefault(r["group"], []).append(r)
    out = {}
    for family in families:
        name = f"conflict_{family}"

        def fires(r: dict[str, Any], name: str = name) -> bool:
            return bool(r["signals"] and r["signals"].get(name))

        hit = [r for r in rows if fires(r)]
        if not hit or not real:
            continue
        share = sum(sum(map(fires, group)) / len(group) for group in real.values()) / len(real)
        if share <= VETO_MAX_REAL_SHARE:
            real_hits = sum(r.get("weight", 1.0) for r in hit if r["label"] == 0)
            out[family] = round(real_hits / sum(r.get("weight", 1.0) for r in hit), 4)
    return out


def fit(
    rows: list[dict[str, Any]],
    families: Sequence[str],
    *,
    max_false_alarms: float,
    signals: Sequence[str] | None = None,
    clean_positives: bool = False,
    shape: str = "stumps",
) -> tuple[dict[str, Any], list[dict[str, Any]], float]:
    """The combination of ``signals`` (default: every one the verifier gives) fitted on
    ``rows`` (from :func:`collect`), the threshold sweep, and the dev F1 at the chosen
    threshold. ``shape`` "stumps": a monotone step function per signal
    (:func:`monotone_stumps`); "linear": a weight per signal (:func:`signed_logistic`). With
    ``clean_positives`` the fit leaves out real sentences whose evidence does not say enough
    of them (as training does); the threshold still answers for every real sentence's false
    alarms. Rows of the claim/evidence corpora (:func:`general_cases`) join the combination's
    fit only: the vetoes and the threshold sweep read the clinical rows alone."""
    from core.grounding.verifier import COMBINED_SIGNALS, combine

    features = list(signals or COMBINED_SIGNALS)
    learned = [
        r
        for r in rows
        if r["signals"] is not None and (r.get("said_enough", True) or not clean_positives)
    ]
    x = matrix(learned, features)
    y = np.array([1 - r["label"] for r in learned])  # 1 = supported
    weights = np.array(
        [r.get("weight", 1.0) * (0.5 if r["group"] == "medhallu" else 1.0) for r in learned]
    )
    signs = [SIGNS[n] for n in features]
    params: dict[str, Any] = {"features": features}
    if shape == "stumps":
        shapes, intercept = monotone_stumps(x, y, weights, signs)
        params["shapes"] = {
            features[j]: {"thresholds": t, "values": v} for j, (t, v) in sorted(shapes.items())
        }
    elif shape == "linear":
        coef, intercept = signed_logistic(x, y, weights, signs)
        params["coef"] = [round(float(c), 6) for c in coef]
    else:
        raise ValueError(f"shape: {shape!r} is neither 'stumps' nor 'linear'")
    params.update(
        {
            "intercept": round(float(intercept), 6),
            "threshold": 0.5,
            "fact_families": list(families),
            "vetoes": vetoes(rows, families),
        }
    )
    rows = [r for r in rows if clinical(r)]  # the threshold answers for the clinical rows
    support = np.array(
        [
            combine(dict(r["signals"]), params)[0]
            if r["signals"]
            else float(r["status"] == "grounded")  # settled by exact matching
            for r in rows
        ]
    )
    labels = np.array([r["label"] for r in rows])
    row_weights = np.array([r.get("weight", 1.0) for r in rows])
    real = np.array([r["kind"] == "reference" and r["group"] != "medhallu" for r in rows])
    best_f1, threshold, table = sweep(support, labels, row_weights, real, max_false_alarms)
    params["threshold"] = threshold
    return params, table, best_f1


def sweep(
    support: np.ndarray,
    hallucinated: np.ndarray,
    weights: np.ndarray,
    real: np.ndarray,
    max_false_alarms: float,
) -> tuple[float, float, list[dict[str, float]]]:
    """The threshold (flagged: support below it) with the best weighted F1 whose false
    alarms on the ``real`` rows stay within ``max_false_alarms``, its F1, and the sweep to
    print. The grid is fine (:data:`THRESHOLD_STEP`), so that the ceiling is met as closely as
    the step functions' plateaus let it be; the sweep printed keeps every fifth threshold."""
    best = (0.0, 0.5)
    table = []
    for k, t in enumerate(np.round(np.arange(0.05, 0.9501, THRESHOLD_STEP), 3)):
        flagged = support < t
        tp = float(weights[flagged & (hallucinated == 1)].sum())
        fp = float(weights[flagged & (hallucinated == 0)].sum())
        fn = float(weights[~flagged & (hallucinated == 1)].sum())
        f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
        fa = float(flagged[real].mean())
        if k % 5 == 0:
            table.append({"threshold": float(t), "f1": f1, "false alarms (real)": fa})
        if fa <= max_false_alarms and f1 > best[0]:
            best = (f1, float(t))
    return best[0], round(best[1], 3), table


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--max-false-alarms", type=float, default=0.10)
    parser.add_argument("--families", default=None, help="fact-check families kept (default all)")
    parser.add_argument(
        "--signals", default=None, help="signals combined (default: every one, COMBINED_SIGNALS)"
    )
    parser.add_argument(
        "--clean-positives",
        action="store_true",
        help="fit on the real sentences their evidence bears out only (as training does)",
    )
    parser.add_argument(
        "--every-hallucination",
        action="store_true",
        help="every generated hallucination of each dev sentence (weighted), not one",
    )
    parser.add_argument(
        "--combination",
        choices=("stumps", "linear"),
        default="stumps",
        help="a monotone step function per signal (boosted one-split trees), or a weight per "
        "signal (the logistic fit of the earlier versions)",
    )
    parser.add_argument(
        "--general",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="also fit on the claim/evidence corpora's dev parts, together weighing SHARE "
        "times the clinical dev rows (0: clinical rows only)",
    )
    parser.add_argument(
        "--general-limit", type=int, default=500, help="dev pairs per corpus (0: every one)"
    )
    parser.add_argument("--dry-run", action="store_true", help="print, do not write")
    args = parser.parse_args()

    from core.backends.embedder import get_embedder
    from core.grounding import GroundingVerifier
    from core.grounding.facts import FAMILIES
    from core.grounding.learned import SETTINGS

    families = tuple(args.families.split(",")) if args.families else FAMILIES
    model = support_model()
    verifier = GroundingVerifier(embedder=get_embedder(), learned=model, fact_families=families)
    verifier.combination = None  # raw signals
    cases = dev_cases(args.data, args.seed, every=args.every_hallucination)
    if args.general:
        cases += general_cases(args.data, args.seed, limit=args.general_limit)
    rows = collect(verifier, cases)
    weigh_general(rows, args.general)
    signals = tuple(args.signals.split(",")) if args.signals else None
    params, table, dev_f1 = fit(
        rows,
        families,
        max_false_alarms=args.max_false_alarms,
        signals=signals,
        clean_positives=args.clean_positives,
        shape=args.combination,
    )
    print_table(table, ["threshold", "f1", "false alarms (real)"], "dev sweep")
    print(f"chosen threshold {params['threshold']} (dev F1 {dev_f1:.3f})")
    print(json.dumps(params, indent=2))
    if args.dry_run:
        return
    path = model.model_dir / SETTINGS
    settings = json.loads(path.read_text("utf-8"))
    settings["combination"] = {
        **params,
        "fitted_on": dict(sorted(Counter(r["group"] for r in rows).items())),
        "command": "python benchmarks/fit_verifier.py"
        + (f" --families {args.families}" if args.families else "")
        + (f" --signals {args.signals}" if args.signals else "")
        + (" --clean-positives" if args.clean_positives else "")
        + (" --every-hallucination" if args.every_hallucination else "")
        + (" --combination linear" if args.combination == "linear" else "")
        + (f" --general {args.general:g}" if args.general else "")
        + (
            f" --general-limit {args.general_limit}"
            if args.general and args.general_limit != 500
            else ""
        ),
    }
    path.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    print(f"wrote the combination into {path}")


if __name__ == "__main__":
    main()
