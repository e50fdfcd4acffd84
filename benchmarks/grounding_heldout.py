"""Held-out claim/evidence test sets: the verifier on the test parts training never reads.

The learned model trains on the train parts of public claim/evidence corpora
(``verifier_corpora.py``), and its combination with the rule signals is fitted on clinical dev
rows (``fit_verifier.py``); the corpora's test parts are never opened for either. Here each
test part is made into pairs exactly as the training pairs are (the same evidence sentences,
labels and kinds; ``verifier_corpora.load_test``) and every pair is checked as an answer
against one source (a response with no statement to verify, such as "Hi!" or a question, is
left out and counted):

- BEGIN, Wizard of Wikipedia test: real responses of dialogue systems (GPT-2, T5, DoHA,
  CTRL...) to a conversation, against the Wikipedia sentence they were to stay true to,
  judged by people as fully attributable (supported) or not (hallucinated, or generic);
- CliniFact: a clinical trial's claim against the sentences of its publication's abstract
  that share most words with it (supported only when the trial showed it);
- SciFact, Check-COVID, Citation-Integrity: scientific and health claims, and citing
  sentences, against their rationale sentences (supported, refuted, or not enough
  information).

An answer is flagged when any of its statements is not grounded; its risk (for AUROC) is one
minus its support score (the least support of its statements). Side by side: the learned
verifier (the default), the previous rules-only verifier (risk: one minus its grounding
score), the learned model alone on the whole pair (AUROC only), the share of the statement's
words the evidence never says (AUROC only), and flagging everything. A second table gives
the share flagged by kind (``supports``: false alarms). The verifiers run one after another
on the same embedder, so every one after the first finds the sources' embeddings cached:
their pairs/s is not a comparison of speed (``grounding_speed.py`` is).

With ``--part dev`` the same is measured on the corpora's dev parts (which the model does not
train on, and which may be used to choose what to change; the test parts may not), and with
``--whole`` the learned verifier also reads each response whole, as one statement, to show
what splitting a response into statements costs or gains.

    python benchmarks/grounding_heldout.py --data ../shared/data [--corpora begin,clinifact]
                                           [--part test|dev] [--whole] [--limit N] [--no-rules]
"""

from __future__ import annotations

import random
import sys
import time
from collections import defaultdict
from typing import Any

from _common import (
    auroc,
    base_parser,
    inference_backends,
    prf,
    print_json,
    print_table,
    require_data,
    support_model,
)
from verifier_corpora import CORPORA, TEST_CORPORA, Pair, load_corpus, load_test


def score(
    verifier: Any, pairs: list[Pair], *, learned: bool, whole: bool = False
) -> list[dict[str, Any]]:
    """Each pair's label (1 = not supported), flag and risk, the verifier's own signal; with
    ``whole``, the response read as one statement instead of split into its statements."""
    from core.grounding import SourceChunk

    out = []
    for pair in pairs:
        sources = [SourceChunk("e", pair.evidence, "document")]
        if whole:
            one = verifier.verify_statements([pair.statement], sources)[0]
            support = one.support if one.support is not None else float(one.status == "grounded")
            risk, flag = 1.0 - support, int(one.status != "grounded")
        else:
            result = verifier.verify(pair.statement, sources)
            risk = 1.0 - (result.support_score if learned else result.grounding_score)
            flag = int(result.grounding_score < 1.0)
        out.append({"label": 1 - pair.label, "flag": flag, "risk": risk, "kind": pair.kind})
    return out


def row(corpus: str, name: str, scored: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    y = [r["label"] for r in scored]
    flags = [r["flag"] for r in scored]
    p, r_, f = prf(y, flags)
    real = [fl for fl, label in zip(flags, y, strict=True) if not label]
    return {
        "corpus": corpus,
        "verifier": name,
        "pairs": len(scored),
        "unsupported": sum(y) / len(y),
        "precision": p,
        "recall": r_,
        "f1": f,
        "false alarms": sum(real) / len(real) if real else 0.0,
        "auroc": auroc(y, [r["risk"] for r in scored]),
        "pairs/s": len(scored) / seconds if seconds else 0.0,
    }


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument(
        "--corpora",
        default=None,
        help="comma-separated corpora (default: every one with a --part: "
        f"{', '.join(TEST_CORPORA)} have a test part, all of {', '.join(CORPORA)} a dev part)",
    )
    parser.add_argument(
        "--part",
        choices=("test", "dev"),
        default="test",
        help="the test parts (default), or the dev parts, which nothing is trained on but which "
        "may be used to choose what to change",
    )
    parser.add_argument(
        "--whole",
        action="store_true",
        help="also read each response whole, as one statement, with the learned verifier",
    )
    parser.add_argument(
        "--limit", type=int, default=0, help="pairs sampled per corpus (0: every pair)"
    )
    parser.add_argument("--no-rules", action="store_true", help="skip the rules-only verifier")
    args = parser.parse_args()
    known = TEST_CORPORA if args.part == "test" else CORPORA
    corpora = [c.strip() for c in (args.corpora or ",".join(known)).split(",") if c.strip()]
    unknown = sorted(set(corpora) - set(known))
    if unknown:
        raise SystemExit(
            f"error: no {args.part} part of {', '.join(unknown)}; known: {', '.join(known)}"
        )
    root = require_data(args.data, "verification")

    from core.backends.embedder import get_embedder
    from core.grounding import GroundingVerifier
    from core.grounding.support import novelty

    embedder = get_embedder()
    nli, llm, tiers = inference_backends()
    model = support_model()
    learned_verifier = GroundingVerifier(embedder=embedder, nli=nli, llm=llm, learned=model)
    verifiers = {"learned (default)": (learned_verifier, True, False)}
    if args.whole:
        verifiers["learned, each response whole"] = (learned_verifier, True, True)
    if not args.no_rules:
        verifiers["rules only (previous)"] = (
            GroundingVerifier(embedder=embedder, nli=nli, llm=llm),
            False,
            False,
        )
    rows: list[dict[str, Any]] = []
    kinds: dict[str, dict[str, Any]] = {}
    left_out: dict[str, int] = {}
    for corpus in corpora:
        if args.part == "test":
            pairs = load_test(corpus, root, rng=random.Random(args.seed))
        else:
            every = load_corpus(corpus, root, rng=random.Random(args.seed))
            pairs = [p for p in every if p.split == "dev"]
        if args.limit and len(pairs) > args.limit:
            pairs = random.Random(args.seed).sample(pairs, args.limit)
        # a response with no words (an empty one) has no statement to verify
        checkable = [p for p in pairs if learned_verifier.split_statements(p.statement)]
        left_out[corpus] = len(pairs) - len(checkable)
        pairs = checkable
        y = [1 - p.label for p in pairs]
        for name, (verifier, learned, whole) in verifiers.items():
            started = time.perf_counter()
            scored = score(verifier, pairs, learned=learned, whole=whole)
            seconds = time.perf_counter() - started
            rows.append(row(corpus, name, scored, seconds))
            by_kind: dict[str, list[int]] = defaultdict(list)
            for r in scored:
                by_kind[r["kind"]].append(r["flag"])
            kinds[f"{corpus}: {name}"] = {
                k: f"{sum(v) / len(v):.3f} ({len(v)})" for k, v in sorted(by_kind.items())
            }
            print(f"{corpus}: {name}, {len(pairs)} pairs in {seconds:.0f} s", file=sys.stderr)
        started = time.perf_counter()
        alone = model.logits([(p.statement, p.evidence) for p in pairs])
        seconds = time.perf_counter() - started
        for name, risks in (
            ("learned model alone, whole pair", [-float(x) for x in alone]),
            ("words the evidence never says", [novelty(p.statement, [p.evidence]) for p in pairs]),
        ):
            rows.append(
                {
                    "corpus": corpus,
                    "verifier": name,
                    "pairs": len(pairs),
                    "auroc": auroc(y, risks),
                    **({"pairs/s": len(pairs) / seconds} if name.startswith("learned") else {}),
                }
            )
        p, r_, f = prf(y, [1] * len(y))
        rows.append(
            {
                "corpus": corpus,
                "verifier": "flag everything",
                "pairs": len(pairs),
                "unsupported": sum(y) / len(y),
                "precision": p,
                "recall": r_,
                "f1": f,
                "false alarms": 1.0,
                "auroc": 0.5,
            }
        )
    if args.part == "test":
        print("Held-out test parts of the claim/evidence corpora (never trained or tuned on)")
    else:
        print("Dev parts of the claim/evidence corpora (not trained on)")
    if any(left_out.values()):
        print(
            "left out, no statement to verify: "
            + ", ".join(f"{c} {n}" for c, n in left_out.items() if n)
        )
    print(tiers)
    columns = ["corpus", "verifier", "pairs", "unsupported", "precision", "recall", "f1"]
    print_table(rows, [*columns, "false alarms", "auroc", "pairs/s"])
    names = sorted({k for share in kinds.values() for k in share})
    print()
    print_table(
        [{"corpus: verifier": key, **share} for key, share in kinds.items()],
        ["corpus: verifier", *names],
        title="Share flagged by kind, with how many pairs (supports: false alarms)",
    )
    if args.json:
        print_json({"rows": rows, "flagged_by_kind": kinds})


if __name__ == "__main__":
    main()
