"""Speed of cross-query consistency and of the calibration metrics; prints a plain table.

    python benchmarks/consistency.py [--answers 1000] [--predictions 1000000] [--json]

Targets: checking a new answer against a patient with 1,000 earlier answers <= 50 ms;
all calibration metrics on 1,000,000 predictions <= 1 s. With ``--data DIR`` (default
``../shared/data`` when present) it also reports ECE/Brier on the WikiBio reference NLI scores.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.calibration import (  # noqa: E402
    aurc_loss,
    brier_score_loss,
    calibration_report,
    expected_calibration_error,
    roc_auc_score,
)
from core.clinical import extract_mentions  # noqa: E402
from core.consistency import ConsistencyChecker, PatientTimeline, timeline_entries  # noqa: E402

DRUGS = [
    ("metformin", "500 mg b.i.d."),
    ("lisinopril", "10 mg daily"),
    ("atorvastatin", "40 mg nightly"),
    ("amlodipine", "5 mg daily"),
    ("levothyroxine", "75 mcg daily"),
    ("omeprazole", "20 mg daily"),
    ("sertraline", "50 mg daily"),
    ("furosemide", "40 mg daily"),
    ("apixaban", "5 mg twice daily"),
    ("gabapentin", "300 mg t.i.d."),
]
CONDITIONS = [
    "type 2 diabetes",
    "HTN",
    "hyperlipidemia",
    "hypothyroidism",
    "GERD",
    "CKD",
    "osteoarthritis",
    "depression",
]


def synthetic_answer(rng: random.Random) -> str:
    """An invented answer in the style of a chart summary (no real patient text)."""
    meds = rng.sample(DRUGS, 4)
    parts = ["Current medications: " + ", ".join(f"{n} {d}" for n, d in meds) + "."]
    parts.append(f"History of {rng.choice(CONDITIONS)} and {rng.choice(CONDITIONS)}.")
    parts.append(f"BP {rng.randint(110, 160)}/{rng.randint(60, 95)}, HR {rng.randint(55, 100)}.")
    if rng.random() < 0.3:
        parts.append(f"{rng.choice(DRUGS)[0].capitalize()} was increased last week.")
    parts.append("Allergic to penicillin. Former smoker.")
    return " ".join(parts)


def timed(fn: Callable[[], Any], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def bench_consistency(n_answers: int, repeat: int) -> list[dict[str, Any]]:
    rng = random.Random(42)
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    rows = []
    for i in range(n_answers):
        rows += timeline_entries(
            synthetic_answer(rng),
            patient_id="p-1",
            conversation_id=f"c-{i}",
            timestamp=t0 + timedelta(hours=i),
        )
    new = (
        "She takes metformin 500 mg b.i.d., lisinopril 20 mg daily and atorvastatin 40 mg "
        "nightly. No history of diabetes. NKDA. BP 150/92."
    )
    at = t0 + timedelta(hours=n_answers + 1)
    checker = ConsistencyChecker()
    mentions = extract_mentions(new)
    timeline = PatientTimeline.build(rows, patient_id="p-1", before=at)
    checker.check(new, rows, at=at, patient_id="p-1")  # warm-up (lexicon load)
    cases = [
        ("extract mentions of the new answer", lambda: extract_mentions(new)),
        (
            f"build timeline from {len(rows)} rows",
            lambda: PatientTimeline.build(rows, patient_id="p-1", before=at),
        ),
        ("check vs prebuilt timeline", lambda: checker.check(mentions, timeline)),
        ("full check: text + rows", lambda: checker.check(new, rows, at=at, patient_id="p-1")),
    ]
    out = []
    for name, fn in cases:
        ms = timed(fn, repeat)
        out.append(
            {
                "benchmark": f"consistency, {n_answers} earlier answers",
                "case": name,
                "median_ms": statistics.median(ms),
                "p95_ms": sorted(ms)[int(0.95 * len(ms)) - 1 or 0],
                "target_ms": 50.0 if name.startswith("full") else None,
            }
        )
    result = checker.check(new, rows, at=at, patient_id="p-1")
    out[-1]["note"] = f"{len(result.contradictions)} contradictions found"
    return out


def bench_calibration(n: int, repeat: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(0)
    p = rng.random(n)
    y = (rng.random(n) < p).astype(np.int8)
    cases = [
        ("calibration_report (all metrics)", lambda: calibration_report(y, p)),
        ("expected_calibration_error", lambda: expected_calibration_error(y, p)),
        ("brier_score_loss", lambda: brier_score_loss(y, p)),
        ("roc_auc_score", lambda: roc_auc_score(y, p)),
        ("aurc_loss", lambda: aurc_loss(y, p)),
    ]
    out = []
    for name, fn in cases:
        ms = timed(fn, repeat)
        out.append(
            {
                "benchmark": f"calibration, {n:,} predictions",
                "case": name,
                "median_ms": statistics.median(ms),
                "p95_ms": max(ms),
                "target_ms": 1000.0 if name.startswith("calibration_report") else None,
            }
        )
    return out


def reference_rows(data: Path) -> list[dict[str, Any]]:
    path = data / "wikibio_gpt3" / "reference_scores_119.json"
    if not path.is_file():
        return []
    passages = json.loads(path.read_text("utf-8"))
    s = np.concatenate([np.asarray(x["scores"]["nli"], dtype=float) for x in passages])
    y = np.array([0 if a == "accurate" else 1 for x in passages for a in x["annotation"]])
    r = calibration_report(y, s)
    return [
        {"metric": k, "value": v}
        for k, v in (
            ("sentences", r.n),
            ("ECE (10 equal-width bins)", r.expected_calibration_error),
            ("ECE (10 equal-mass bins)", r.expected_calibration_error_quantile),
            ("MCE", r.maximum_calibration_error),
            ("Brier", r.brier_score_loss),
            ("AUROC", r.roc_auc_score),
            ("AURC (label 1 = hallucinated)", r.aurc_loss),
        )
    ]


def bench_pipeline_throughput(n_records: int = 200) -> list[dict[str, Any]]:
    """PIPELINE THROUGHPUT: records/s of the ``groundwatch import`` path.

    Synthetic demo records (``core.demo``) as JSONL bytes -> ``parse_jsonl`` (validation) ->
    ``QualityPipeline.process_many`` (checks + one transaction) into a fresh SQLite file, for
    three set-ups: every check disabled, checks on without the embedding model (semantic tiers
    ``unavailable``), and checks on with MiniLM (its load time reported apart). Higher
    records/s is better. ``cpu_s`` is this process's CPU time: on a busy machine it shows how
    much of the wall time was waiting for a core.
    """
    import tempfile

    from core.config import load_settings
    from core.demo import generate_demo
    from core.pipeline import QualityPipeline
    from core.records import parse_jsonl
    from core.storage.db import get_engine, upgrade_to_head

    if n_records < 1:
        return []
    records, _ = generate_demo(
        patients=max(1, min(30, n_records // 10)),
        answers=n_records,
        days=90,
        seed=7,
        end=datetime(2026, 1, 1, tzinfo=UTC),
    )
    payload = "\n".join(r.model_dump_json() for r in records).encode("utf-8")
    off = {
        "enable_grounding_verification": False,
        "enable_consistency_checking": False,
        "enable_confidence_calibration": False,
        "enable_hallucination_detection": False,
        "enable_evidence_validation": False,
        "enable_epistemic_verification": False,
    }
    cases: list[tuple[str, dict[str, Any], Any]] = [
        ("checks disabled (validate + store)", off, None),
        ("checks on, no embedding model", {}, None),
        ("checks on, MiniLM embeddings", {}, "auto"),
    ]
    out: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="gw_bench_pipeline_") as tmp:
        for i, (name, flags, embedder) in enumerate(cases):
            url = f"sqlite:///{Path(tmp) / f'pipeline_{i}.db'}"
            upgrade_to_head(url)
            settings = load_settings(database_url=url, llm_base_url=None, nli_model=None, **flags)
            t_load = time.perf_counter()
            pipeline = QualityPipeline(
                settings=settings, engine=get_engine(url), embedder=embedder, nli=None, llm=None
            )
            load_s = time.perf_counter() - t_load
            wall, cpu = time.perf_counter(), time.process_time()
            parsed, errors = parse_jsonl(payload, max_text_chars=settings.max_transcript_chars)
            reports = pipeline.process_many([r for _, r in parsed])
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            if errors or len(reports) != n_records:
                raise SystemExit(f"error: pipeline benchmark lost records in case {name!r}")
            statements = sum(
                len(r.grounding.statements) for r in reports if r.grounding is not None
            )
            out.append(
                {
                    "benchmark": f"pipeline, {n_records} records",
                    "case": name,
                    "seconds": wall,
                    "records_per_s": n_records / wall,
                    "cpu_s": cpu,
                    "records_per_cpu_s": n_records / cpu if cpu > 0 else None,
                    "model_load_s": load_s if embedder == "auto" else None,
                    "note": (
                        f"{statements} statements checked, "
                        f"{sum(r.is_flagged for r in reports)} records flagged; "
                        f"embedder {pipeline.backend_status['embedder'].status}"
                    ),
                }
            )
            get_engine(url).dispose()
    return out


def print_table(rows: list[dict[str, Any]], columns: list[str]) -> None:
    def fmt(v: Any) -> str:
        if v is None:
            return "-"
        if isinstance(v, float):
            return f"{v:.4f}" if abs(v) < 10 else f"{v:.1f}"
        return str(v)

    cells = [[fmt(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)))
    print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--answers", type=int, default=1000)
    ap.add_argument("--predictions", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument(
        "--pipeline-records", type=int, default=200, help="pipeline throughput records (0: skip)"
    )
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    speed = bench_consistency(args.answers, args.repeat)
    speed += bench_calibration(args.predictions, max(3, args.repeat // 4))
    ref = reference_rows(args.data)
    pipeline = bench_pipeline_throughput(args.pipeline_records)
    for row in speed:
        row["meets_target"] = (
            None
            if row["target_ms"] is None
            else "yes"
            if row["median_ms"] <= row["target_ms"]
            else "NO"
        )
    if args.json:
        print(
            json.dumps(
                {"speed": speed, "reference_nli_calibration": ref, "pipeline": pipeline}, indent=2
            )
        )
        return
    print_table(
        speed, ["benchmark", "case", "median_ms", "p95_ms", "target_ms", "meets_target", "note"]
    )
    if ref:
        print("WikiBio reference NLI scores (label 1 = minor or major inaccurate):")
        print_table(ref, ["metric", "value"])
    if pipeline:
        print_table(pipeline, list(pipeline[0]))


if __name__ == "__main__":
    main()
