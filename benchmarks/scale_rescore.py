"""Re-scoring throughput: answers/s of ``groundwatch rescore`` on a local Ray with 1 and 2
actors, against the plain in-process pipeline on the same stored answers.

    python benchmarks/scale_rescore.py [--records 200] [--actors 1,2] [--json]

The answers are the demo's (``core.demo.generate_demo``: invented clinical answers with their
notes, several statements each), stored first in a scratch SQLite file by another process (so
this one starts with nothing in memory), then checked again with the default settings
(learned verifier on). Every process runs one thread (``OMP_NUM_THREADS=1``, one CPU per
actor), so one actor is one core. The embedding cache is emptied before each configuration,
so none profits from another's embeddings.

- ``in-process``: ``QualityPipeline.check_many`` in batches of 32 in this process, after a
  first batch of 8 that loads the models (not timed);
- ``ray, N actors``: :func:`core.rescore.rescore` on a local Ray of 2 CPUs; ``answers_per_s``
  counts from the first written batch to the last (the actors' start and model load are
  before it), ``wall_s`` the whole run with Ray's start. Every answer must get exactly one
  result.

The target: Ray with one actor >= 0.85x the in-process pipeline (Ray's overhead).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("GROUNDWATCH_EMBEDDING_WORKERS", "1")

import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from _common import base_parser, print_json, print_table  # noqa: E402

BATCH = 32
GROUNDWATCH = str(Path(sys.executable).parent / "groundwatch")


def _empty_caches(engine: Any) -> None:
    from core.storage import repo
    from core.storage.db import write_session

    with write_session(engine) as session:
        repo.purge_caches(session=session)


def _store(url: str, records: list[Any], tmp: Path) -> None:
    """Store the answers once, in another process (rules only: quick), so that this process
    starts with no model loaded and nothing cached in memory."""
    lines = tmp / "records.jsonl"
    lines.write_text("".join(r.model_dump_json() + "\n" for r in records), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GROUNDWATCH_")}
    env.update(GROUNDWATCH_DATABASE_URL=url, GROUNDWATCH_LEARNED_VERIFIER="0")
    subprocess.run([GROUNDWATCH, "import", str(lines), "--json"], env=env, check=True)


def in_process(url: str, engine: Any, records: list[Any]) -> dict[str, Any]:
    import torch

    from core.config import load_settings
    from core.pipeline import QualityPipeline

    torch.set_num_threads(1)
    pipeline = QualityPipeline(settings=load_settings(database_url=url), engine=engine)
    start = time.perf_counter()
    pipeline.check_many(records[:8])  # loads the models, not timed
    timed = time.perf_counter()
    rest = records[8:]
    for i in range(0, len(rest), BATCH):
        pipeline.check_many(rest[i : i + BATCH])
    end = time.perf_counter()
    return {"answers_per_s": len(rest) / (end - timed), "wall_s": end - start}


def on_ray(url: str, engine: Any, n: int, actors: int) -> dict[str, Any]:
    from core.config import load_settings
    from core.rescore import Selection, rescore

    stamps: list[tuple[float, int]] = []
    start = time.perf_counter()
    report = rescore(
        settings=load_settings(database_url=url),
        engine=engine,
        run_id=f"bench-{actors}-{int(start)}",
        selection=Selection(),
        actors=actors,
        num_cpus=2,
        batch_size=BATCH,
        write_every=BATCH,
        on_written=lambda added: stamps.append((time.perf_counter(), added)),
    )
    end = time.perf_counter()
    if (report.summary.checked, report.summary.failed) != (n, 0):
        raise SystemExit(f"{report.summary.checked} results ({report.summary.failed} failed)")
    (first, first_n), (last, _) = stamps[0], stamps[-1]
    steady = (n - first_n) / (last - first) if last > first else float("nan")
    return {"answers_per_s": steady, "wall_s": end - start}


def main() -> None:
    parser = base_parser(__doc__ or "", data=False)
    parser.add_argument("--records", type=int, default=200)
    parser.add_argument("--actors", default="1,2", help="actor counts to measure")
    args = parser.parse_args()
    from core.demo import generate_demo
    from core.storage.db import get_engine, upgrade_to_head

    records, _ = generate_demo(patients=60, answers=args.records, days=30, seed=args.seed)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        upgrade_to_head(url)
        engine = get_engine(url)
        _store(url, records, Path(tmp))
        _empty_caches(engine)
        rows.append({"setup": "in-process, 1 core", **in_process(url, engine, records)})
        for n in [int(x) for x in args.actors.split(",")]:
            _empty_caches(engine)
            rows.append({"setup": f"ray, {n} actor(s)", **on_ray(url, engine, len(records), n)})
        engine.dispose()
    base = rows[0]["answers_per_s"]
    for r in rows:
        r["vs_in_process"] = r["answers_per_s"] / base
    load = os.getloadavg()[0]
    print_table(
        rows,
        ["setup", "answers_per_s", "vs_in_process", "wall_s"],
        title=f"{len(records)} demo answers, {os.cpu_count()} cores, load average {load:.1f}",
    )
    if args.json:
        print_json({"records": len(records), "load_average": load, "rows": rows})


if __name__ == "__main__":
    main()
