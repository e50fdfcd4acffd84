"""Ablation of the fact-check families beside the learned verifier: does each rule earn its place?

For each configuration (no rules; every family; every family but one; with ``--singles`` one
family alone) the combination is fitted again on the dev rows (as ``fit_verifier.py`` does)
and the verifier is scored on data the rules were not written for: the MTS-Dialog test sets
(real reference sentences vs generated hallucinations), MedHallu's test rows (whole answers
against their knowledge), and the ACI-Bench test perturbations (the data most rules were
written for).
The model's scores are computed once and cached, so each configuration costs the retrieval
and the rules only.

    python benchmarks/grounding_ablation.py --data ../shared/data [--encounters N]
    python benchmarks/grounding_ablation.py --configs "all rules,all but negation"
"""

from __future__ import annotations

import json
import random
from typing import Any

from _common import base_parser, print_json, print_table, require_data, support_model
from fit_verifier import collect, dev_cases, fit
from grounding_mts import evaluate, load_set, test_cases


def medhallu_test(data: Any, limit: int) -> list[tuple[list[Any], list[Any]]]:
    from core.grounding import SourceChunk
    from core.grounding.splits import split_of

    path = require_data(data, "medhallu", "medhallu_pqa_labeled.jsonl")
    cases = []
    with path.open(encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if split_of("medhallu", path.name, i) != "test":
                continue
            item = json.loads(line)
            sources = [SourceChunk(f"k{j}", t) for j, t in enumerate(item["Knowledge"]) if t]
            truth = item["Ground Truth"]
            cases.append(
                (sources, [(truth, None, truth), (item["Hallucinated Answer"], "medhallu", truth)])
            )
    return cases[:limit] if limit else cases


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument(
        "--encounters", type=int, default=0, help="test encounters per set (0: all)"
    )
    parser.add_argument("--max-false-alarms", type=float, default=0.10)
    parser.add_argument(
        "--singles", action="store_true", help="also each family alone (twice the time)"
    )
    parser.add_argument(
        "--configs",
        default=None,
        help="only these configurations, comma-separated (e.g. 'all rules,all but negation')",
    )
    args = parser.parse_args()

    import grounding_aci

    from core.backends.embedder import get_embedder
    from core.grounding import GroundingVerifier, SourceChunk
    from core.grounding.facts import FAMILIES

    embedder, model = get_embedder(), support_model()
    dev = dev_cases(args.data, args.seed)
    tests: dict[str, list[Any]] = {}
    for key in ("1", "2"):
        rows = load_set(args.data, key)
        if args.encounters:
            rows = random.Random(args.seed).sample(rows, min(args.encounters, len(rows)))
        tests[f"MTS-{key}"] = test_cases(rows, args.seed)
    aci_rows = grounding_aci.load(args.data, "test")
    if args.encounters:
        aci_rows = random.Random(args.seed).sample(aci_rows, min(args.encounters, len(aci_rows)))
    tests["ACI test"] = [
        ([SourceChunk("dialogue", d, "transcript")], items)
        for d, items in grounding_aci.prepare(aci_rows, args.seed)
    ]
    tests["MedHallu test"] = medhallu_test(args.data, 10 * args.encounters)

    configs: list[tuple[str, tuple[str, ...]]] = [("no rules", ()), ("all rules", FAMILIES)]
    configs += [(f"all but {f}", tuple(x for x in FAMILIES if x != f)) for f in FAMILIES]
    if args.singles:
        configs += [(f"only {f}", (f,)) for f in FAMILIES]
    if args.configs:
        wanted = [c.strip() for c in args.configs.split(",")]
        unknown = sorted(set(wanted) - {label for label, _ in configs})
        if unknown:
            parser.error(f"unknown configuration(s): {', '.join(unknown)}")
        configs = [c for c in configs if c[0] in wanted]
    table = []
    for label, families in configs:
        verifier = GroundingVerifier(embedder=embedder, learned=model, fact_families=families)
        verifier.combination = None
        params, _, dev_f1 = fit(
            collect(verifier, dev), families, max_false_alarms=args.max_false_alarms
        )
        verifier.combination = params
        row: dict[str, Any] = {"configuration": label, "dev f1": dev_f1}
        for name, cases in tests.items():
            out = evaluate(verifier, cases)
            row[f"{name} f1"] = out["f1"]
            row[f"{name} fa"] = out["false_alarm_rate"]
            row[f"{name} auroc"] = out["auroc"]
        table.append(row)
        print(f"  {label}: done", flush=True)
    columns = ["configuration", "dev f1"] + [
        f"{n} {m}" for n in tests for m in ("f1", "fa", "auroc")
    ]
    print("Fact-check families with the learned verifier (fa: false alarms on real sentences)")
    print_table(table, columns)
    if args.json:
        print_json(table)


if __name__ == "__main__":
    main()
