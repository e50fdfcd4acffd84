"""Speed of the HTTP API on PostgreSQL: throughput and p50/p95 latency of ``POST /v1/answers``
with 1 and with 8 concurrent clients, and what the API adds to the pipeline's own time.

A scratch database is created on the ``--postgres`` server (dropped at the end unless
``--keep``), ``groundwatch api`` serves it in its own process with the default checks (the
embedding model and the learned verifier; no LLM), and httpx clients post answers of two
statements against one source note, each with a new id. The pipeline's own time is the same
kind of answer checked and stored by :class:`~core.pipeline.QualityPipeline` in this process,
one at a time, while the server is idle; the API's overhead is the difference of the medians
with one client. Targets: >= 20 answers/s sustained with 8 clients, p95 <= 500 ms, overhead
<= 10 ms. Needs no data.

    python benchmarks/api.py [--postgres URL] [--requests 200] [--json]
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from _common import base_parser, print_json, print_table

DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/test"
NOTE = (
    "Metformin 500 mg twice daily for type 2 diabetes. Lisinopril 10 mg daily for "
    "hypertension. Allergic to penicillin (rash)."
)
ANSWERS = (
    "She takes metformin 500 mg twice daily. She had an MRI of the left knee.",
    "She takes lisinopril 10 mg daily for blood pressure. She is allergic to penicillin.",
    "Her diabetes is treated with metformin. She takes aspirin 81 mg daily.",
)


def record(prefix: str, i: int) -> dict[str, Any]:
    """A new answer (id ``prefix-i``) about one of 20 patients."""
    return {
        "id": f"{prefix}-{i}",
        "patient_id": f"{prefix}-p{i % 20}",
        "timestamp": f"2026-01-{(i % 28) + 1:02d}T{i % 24:02d}:{i % 60:02d}:00Z",
        "query": "What does she take, and what else is known?",
        "answer": ANSWERS[i % len(ANSWERS)],
        "sources": [{"id": "note-1", "text": NOTE, "type": "note"}],
        "model": "clinic-llm",
    }


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@contextmanager
def scratch_database(server_url: str, keep: bool) -> Iterator[str]:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    base = make_url(server_url.replace("postgresql://", "postgresql+psycopg://", 1))
    name = f"gw_bench_api_{uuid.uuid4().hex[:8]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        if not keep:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@contextmanager
def api_server(url: str) -> Iterator[str]:
    """``groundwatch api`` on a free port in its own process, once ready."""
    import httpx

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "GROUNDWATCH_DATABASE_URL": url, "GROUNDWATCH_API_RATE_LIMIT": "0"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "core.cli", "api", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 600
        while True:
            try:
                if httpx.get(base + "/v1/ready", timeout=10).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None:
                raise SystemExit("error: groundwatch api exited before it was ready")
            if time.monotonic() > deadline:
                raise SystemExit("error: groundwatch api not ready after 10 minutes")
            time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def run_clients(base: str, token: str, clients: int, total: int, prefix: str) -> dict[str, Any]:
    """``total`` new answers posted by ``clients`` concurrent httpx clients."""
    import httpx

    latencies: list[float] = []
    statuses: list[int] = []
    lock = threading.Lock()
    per_client = total // clients

    def work(n: int) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=base, headers=headers, timeout=120) as c:
            for i in range(per_client):
                body = record(prefix, n * per_client + i)
                started = time.perf_counter()
                r = c.post("/v1/answers", json=body)
                took = time.perf_counter() - started
                with lock:
                    latencies.append(took)
                    statuses.append(r.status_code)

    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(work, range(clients)))
    wall = time.perf_counter() - started
    bad = sum(1 for s in statuses if s != 201)
    return {
        "clients": clients,
        "answers": len(latencies),
        "errors": bad,
        "answers_per_s": len(latencies) / wall,
        "p50_ms": 1000 * statistics.median(latencies),
        "p95_ms": 1000 * percentile(latencies, 0.95),
    }


def http_floor(base: str, total: int) -> float:
    """Median time of ``GET /v1/health`` (no key, no database) from one client, in ms: what
    HTTP, uvicorn and FastAPI cost before any work."""
    import httpx

    with httpx.Client(base_url=base, timeout=60) as c:
        took = []
        for _ in range(total):
            started = time.perf_counter()
            c.get("/v1/health").raise_for_status()
            took.append(time.perf_counter() - started)
    return 1000 * statistics.median(took)


def direct(url: str, total: int) -> dict[str, Any]:
    """The same kind of answers checked and stored by the pipeline in this process."""
    from core.config import load_settings
    from core.pipeline import QualityPipeline
    from core.records import parse_record
    from core.storage.db import get_engine

    settings = load_settings(database_url=url)
    pipeline = QualityPipeline(settings=settings, engine=get_engine(url))
    warm = [parse_record(record("warm-direct", i), max_text_chars=10**6) for i in range(5)]
    for r in warm:
        pipeline.process_many([r], replace=False)
    latencies = []
    for i in range(total):
        rec = parse_record(record("direct", i), max_text_chars=10**6)
        started = time.perf_counter()
        pipeline.process_many([rec], replace=False)
        latencies.append(time.perf_counter() - started)
    return {
        "clients": "pipeline",
        "answers": total,
        "errors": 0,
        "answers_per_s": total / sum(latencies),
        "p50_ms": 1000 * statistics.median(latencies),
        "p95_ms": 1000 * percentile(latencies, 0.95),
    }


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0], data=False)
    parser.add_argument("--postgres", default=DEFAULT_PG, help=f"server URL (default {DEFAULT_PG})")
    parser.add_argument("--requests", type=int, default=200, help="answers per phase")
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    args = parser.parse_args()

    from core.api.keys import new_token, token_hash
    from core.storage import repo
    from core.storage.db import get_engine, upgrade_to_head, write_session

    with scratch_database(args.postgres, args.keep) as url:
        upgrade_to_head(url)
        token = new_token()
        with write_session(get_engine(url)) as s:
            repo.create_api_key(
                session=s, name="bench", scopes=["ingest"], token_hash=token_hash(token)
            )
        rows = [direct(url, args.requests)]
        with api_server(url) as base:
            run_clients(base, token, 1, 10, "warm-api")
            floor = http_floor(base, args.requests)
            rows.append(run_clients(base, token, 1, args.requests, "one"))
            rows.append(run_clients(base, token, 8, args.requests, "eight"))
    overhead = rows[1]["p50_ms"] - rows[0]["p50_ms"]
    print_table(
        rows,
        ["clients", "answers", "errors", "answers_per_s", "p50_ms", "p95_ms"],
        title=(
            f"POST /v1/answers on PostgreSQL, default checks, no LLM ({os.cpu_count()} CPUs); "
            "targets: >= 20 answers/s with 8 clients, p95 <= 500 ms"
        ),
    )
    print(
        f"API overhead (p50 with 1 client - pipeline p50): {overhead:.1f} ms (target <= 10 ms), "
        f"of which an HTTP round trip (GET /v1/health p50): {floor:.1f} ms"
    )
    if args.json:
        print_json({"rows": rows, "overhead_ms": overhead, "http_floor_ms": floor})


if __name__ == "__main__":
    main()
