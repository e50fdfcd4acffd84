"""Latency of answer grounding: a 10-statement answer against 30 source chunks, warm model.

Two cases: "new sources" (every run brings chunks never seen, so their sentences are
embedded; only the model is warm) and "cached sources" (the chunks' embeddings are already in
the cache, as when a patient's notes are checked again). Also batch throughput (answers/s):
the median of several batches of new answers, the verifiers taking turns.
Texts are generated here from templates with a fixed seed.

The embedder follows GROUNDWATCH_EMBEDDING_PRECISION / _WORKERS unless --precision / --workers
say otherwise. --compare also times, on the same cases and run by run (so all see the same
machine load), the same embedder through SentenceTransformer.encode instead of the fast encoder,
and the float32, one-batch-at-a-time SentenceTransformer.encode embedder (the path before bf16
and worker threads).

    python benchmarks/grounding_speed.py [--runs 20] [--batch 20] [--batch-runs 5]
                                         [--precision P] [--workers N] [--compare]
"""

from __future__ import annotations

import random
import time

import numpy as np
from _common import base_parser, print_json, print_table

DRUGS = ("metformin", "lisinopril", "atorvastatin", "amlodipine", "levothyroxine", "omeprazole")
CONDITIONS = ("type 2 diabetes", "hypertension", "hyperlipidemia", "hypothyroidism", "GERD")
PARTS = ("knee", "shoulder", "hip", "ankle", "wrist")
TEMPLATES = (
    "The patient takes {drug} {dose} mg daily.",
    "She has a history of {cond} diagnosed {n} years ago.",
    "He denies chest pain, fever or shortness of breath.",
    "Exam shows mild swelling of the {side} {part}.",
    "Blood pressure was {sys}/{dia} mmHg and pulse {pulse} bpm.",
    "HbA1c was {a1c}% at the last visit {n} months ago.",
    "{cond} is stable on the current regimen.",
    "Continue {drug} and recheck labs in {n} weeks.",
    "The patient reports {side} {part} pain after a fall {n} days ago.",
    "Follow up in clinic in {n} weeks or sooner if symptoms worsen.",
)


def sentence(rng: random.Random) -> str:
    return (
        rng.choice(TEMPLATES)
        .format(
            drug=rng.choice(DRUGS),
            dose=rng.choice((5, 10, 20, 25, 40, 500, 1000)),
            cond=rng.choice(CONDITIONS),
            n=rng.randint(1, 12),
            side=rng.choice(("left", "right")),
            part=rng.choice(PARTS),
            sys=rng.randint(110, 160),
            dia=rng.randint(65, 95),
            pulse=rng.randint(55, 100),
            a1c=round(rng.uniform(5.5, 9.5), 1),
        )
        .capitalize()
    )


def case(rng: random.Random, tag: int) -> tuple[str, list[tuple[str, str]]]:
    chunks = [
        (
            f"c{tag}-{k}",
            " ".join(sentence(rng) for _ in range(rng.randint(3, 5))) + f" Ref {tag}-{k}.",
        )
        for k in range(30)
    ]
    answer = " ".join(sentence(rng) for _ in range(10))
    return answer, chunks


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0], data=False)
    parser.add_argument("--runs", type=int, default=20, help="timed runs per case")
    parser.add_argument("--batch", type=int, default=20, help="answers in a batch")
    parser.add_argument(
        "--batch-runs",
        type=int,
        default=5,
        help="batches of new answers timed per verifier (answers/s from the median; the "
        "first batch, which meets the model's new input shapes, is shown too)",
    )
    parser.add_argument(
        "--precision",
        choices=("auto", "bf16", "fp32"),
        default=None,
        help="embedding precision (default: GROUNDWATCH_EMBEDDING_PRECISION, auto)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="embedding worker threads (default: GROUNDWATCH_EMBEDDING_WORKERS, 0: one per core)",
    )
    parser.add_argument(
        "--compare",
        action="store_true",
        help="also time SentenceTransformer.encode (same settings; fp32 with 1 worker) on the "
        "same cases, interleaved",
    )
    args = parser.parse_args()
    if args.batch_runs < 1 or args.batch < 1:
        parser.error("--batch and --batch-runs must be at least 1")

    from core.backends.embedder import Embedder, get_embedder
    from core.grounding import GroundingVerifier, SourceChunk

    rng = random.Random(args.seed)
    main_embedder = get_embedder(None, args.precision, args.workers)
    embedders = [main_embedder]
    if args.compare:
        p, w = main_embedder.precision, main_embedder.workers
        embedders.append(Embedder(None, precision=p, workers=w, fast=False))
        embedders.append(Embedder(None, precision="fp32", workers=1, fast=False))
    from core.config import get_settings
    from core.grounding.learned import SupportModel

    started = time.perf_counter()
    learned = SupportModel(get_settings().learned_verifier_path)
    load_s = time.perf_counter() - started

    def label_of(e: Embedder) -> str:
        return f"{e.model_name}, {e.workers} worker{'s' if e.workers > 1 else ''}, {e.encoder}"

    verifiers = {
        f"learned + {label_of(main_embedder)}": GroundingVerifier(
            embedder=main_embedder, learned=learned
        )
    }
    verifiers.update(
        {f"rules only + {label_of(e)}": GroundingVerifier(embedder=e) for e in embedders}
    )
    warm_answer, warm_chunks = case(rng, -1)
    for verifier in verifiers.values():  # warm-up
        verifier.verify(warm_answer, [SourceChunk(i, t) for i, t in warm_chunks])

    rows = []
    for label in ("new sources", "cached sources"):
        times: dict[str, list[float]] = {name: [] for name in verifiers}
        statements = dict.fromkeys(verifiers, 0)
        for run in range(args.runs):
            answer, chunks = case(rng, run)
            if label == "cached sources":
                chunks = warm_chunks  # embedded during the warm-up
            sources = [SourceChunk(i, t) for i, t in chunks]
            names = list(verifiers)
            for name in names[run % len(names) :] + names[: run % len(names)]:  # take turns
                started = time.perf_counter()
                result = verifiers[name].verify(answer, sources)
                times[name].append((time.perf_counter() - started) * 1000)
                statements[name] = len(result.statements)
        for name in verifiers:
            rows.append(
                {
                    "case": label,
                    "verifier": name,
                    "runs": args.runs,
                    "statements": statements[name],
                    "chunks": 30,
                    "p50 ms": float(np.percentile(times[name], 50)),
                    "p95 ms": float(np.percentile(times[name], 95)),
                }
            )
    batch_times: dict[str, list[float]] = {name: [] for name in verifiers}
    tag = 1000
    for run in range(args.batch_runs):
        names = list(verifiers)
        for name in names[run % len(names) :] + names[: run % len(names)]:  # take turns
            cases = []  # new answers and chunks for each batch: none of them embedded before
            for _ in range(args.batch):
                answer, chunks = case(rng, tag)
                cases.append((answer, [SourceChunk(i, t) for i, t in chunks]))
                tag += 1
            started = time.perf_counter()
            verifiers[name].verify_batch(cases)
            batch_times[name].append(time.perf_counter() - started)
    batch = [
        {
            "verifier": name,
            "batch answers": args.batch,
            "batches": args.batch_runs,
            "first s": times[0],
            "median s": float(np.median(times)),
            "answers/s": args.batch / float(np.median(times)),
        }
        for name, times in batch_times.items()
    ]
    print(
        "Grounding latency: 10-statement answer vs 30 chunks (targets with the learned tier: "
        f"p50 150 ms, p95 300 ms, batch 10 answers/s, model load 3 s); learned verifier loaded "
        f"in {load_s:.2f} s ({learned.precision})"
    )
    print_table(rows, ["case", "verifier", "runs", "statements", "chunks", "p50 ms", "p95 ms"])
    print_table(batch, ["verifier", "batch answers", "batches", "first s", "median s", "answers/s"])
    if args.json:
        print_json({"latency": rows, "batch": batch})


if __name__ == "__main__":
    main()
