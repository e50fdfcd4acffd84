"""Queued ingestion throughput: answers/s of the PostgreSQL queue with 1 and 2 workers, against
the plain in-process pipeline on the same records.

    python benchmarks/scale_queue.py [--records 1000] [--workers 1,2]
                                     [--pg-url postgresql://postgres@127.0.0.1:5432] [--json]

The records are the demo's (``core.demo.generate_demo``: invented clinical answers with
their notes, several statements each), checked with the default settings (learned verifier
on). Each configuration gets a scratch database ``gw_bench_*`` on ``--pg-url``, dropped at
the end. Every process runs one thread (``OMP_NUM_THREADS=1``,
``GROUNDWATCH_EMBEDDING_WORKERS=1``), so one worker is one core:

- ``in-process``: ``QualityPipeline.process_many`` over batches of 16 records (what a worker
  does with the 16 jobs it holds, ``GROUNDWATCH_QUEUE_WORKER_BATCH``), in this process, models
  loaded first, without the queue;
- ``queue, N workers``: N ``groundwatch worker`` processes are started and their models
  loaded, then the records are queued in one transaction (``enqueue``); the clock runs from
  the commit to the last job done. Every record must be stored exactly once.

The target: 2 workers >= 1.8x one worker (on a machine with 2 free cores).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("GROUNDWATCH_EMBEDDING_WORKERS", "1")

import re  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from _common import base_parser, print_json, print_table  # noqa: E402
from sqlalchemy import create_engine, text  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

GROUNDWATCH = str(Path(sys.executable).parent / "groundwatch")
BATCH = 16  # the workers' default GROUNDWATCH_QUEUE_WORKER_BATCH


@contextmanager
def scratch_db(server: str) -> Iterator[str]:
    name = f"gw_bench_{uuid.uuid4().hex[:10]}"
    server = server.replace("postgresql://", "postgresql+psycopg://", 1)
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(server).set(database=name).render_as_string(hide_password=False)
    try:
        yield url
    finally:
        from core.storage.db import get_engine

        get_engine.cache_clear()
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def in_process(url: str, records: list[Any]) -> float:
    from core.config import load_settings
    from core.pipeline import QualityPipeline
    from core.storage.db import get_engine, upgrade_to_head

    upgrade_to_head(url)
    engine = get_engine(url)
    pipeline = QualityPipeline(settings=load_settings(database_url=url), engine=engine)
    pipeline.process_many(records[:1])  # warm-up (first-call costs), not timed
    start = time.perf_counter()
    for i in range(1, len(records), BATCH):
        pipeline.process_many(records[i : i + BATCH])
    elapsed = time.perf_counter() - start
    engine.dispose()
    return (len(records) - 1) / elapsed


def queued(url: str, records: list[Any], workers: int) -> tuple[float, float]:
    from core.queue import enqueue
    from core.storage.db import get_engine, upgrade_to_head

    upgrade_to_head(url)
    engine = get_engine(url)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GROUNDWATCH_")}
    env.update(
        GROUNDWATCH_DATABASE_URL=url,
        GROUNDWATCH_EMBEDDING_WORKERS="1",
        GROUNDWATCH_LOG_LEVEL="INFO",
        OMP_NUM_THREADS="1",
    )
    logs = [Path(tempfile.mkstemp(prefix="gw_worker_", suffix=".log")[1]) for _ in range(workers)]
    procs = [
        subprocess.Popen(
            [GROUNDWATCH, "worker"], env=env, stderr=log.open("wb"), stdout=subprocess.DEVNULL
        )
        for log in logs
    ]
    try:
        deadline = time.monotonic() + 300
        while not all("waiting for jobs" in log.read_text() for log in logs):  # models loaded
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                raise SystemExit("a worker did not start: " + logs[0].read_text()[-500:])
            time.sleep(0.2)
        start = time.perf_counter()
        enqueue(engine=engine, records=records, replace=False, submitted_by="bench")
        n = len(records)
        with engine.connect() as conn:
            while True:
                done = conn.execute(
                    text(
                        "SELECT count(*) FROM procrastinate.procrastinate_jobs "
                        "WHERE status = 'succeeded'"
                    )
                ).scalar_one()
                conn.commit()
                if done == n:
                    break
                failed = conn.execute(
                    text(
                        "SELECT count(*) FROM procrastinate.procrastinate_jobs "
                        "WHERE status = 'failed'"
                    )
                ).scalar_one()
                conn.commit()
                if failed:
                    raise SystemExit(f"{failed} jobs failed")
                time.sleep(0.05)
        elapsed = time.perf_counter() - start
        with engine.connect() as conn:
            stored = conn.execute(
                text("SELECT count(DISTINCT external_id), count(*) FROM conversation")
            ).one()
        if tuple(stored) != (n, n):
            raise SystemExit(f"stored {tuple(stored)}, expected {n} once each")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=120)
        engine.dispose()
    sizes = [
        int(m.group(1))
        for log in logs
        for m in re.finditer(r"checked a batch of (\d+)", log.read_text())
    ]
    for log in logs:
        log.unlink()
    return n / elapsed, sum(sizes) / max(len(sizes), 1)


def main() -> None:
    parser = base_parser(__doc__ or "", data=False)
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--workers", default="1,2", help="worker counts to measure")
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()
    from core.demo import generate_demo

    records, _ = generate_demo(patients=60, answers=args.records, days=30, seed=args.seed)
    rows: list[dict[str, Any]] = []
    with scratch_db(args.pg_url) as url:
        rate = in_process(url, records)
    rows.append({"setup": "in-process, 1 core", "answers_per_s": rate, "mean_batch": BATCH})
    for n in [int(x) for x in args.workers.split(",")]:
        with scratch_db(args.pg_url) as url:
            rate, mean_batch = queued(url, records, n)
        rows.append(
            {"setup": f"queue, {n} worker(s)", "answers_per_s": rate, "mean_batch": mean_batch}
        )
    one = next((r["answers_per_s"] for r in rows if r["setup"] == "queue, 1 worker(s)"), None)
    for r in rows:
        r["vs_1_worker"] = r["answers_per_s"] / one if one else None
    load = os.getloadavg()[0]
    print_table(
        rows,
        ["setup", "answers_per_s", "mean_batch", "vs_1_worker"],
        title=f"{len(records)} demo answers, {os.cpu_count()} cores, load average {load:.1f}",
    )
    if args.json:
        print_json({"records": len(records), "load_average": load, "rows": rows})


if __name__ == "__main__":
    main()
