"""Load: 8 concurrent httpx clients x 500 answers each against a real uvicorn server on
PostgreSQL, checks on (the real embedding model; the rules decide grounding, as in
test_api.py). Each client sends 450 answers of its own and the same 50 answers as every other
client, interleaved, so the same ids race each other: every answer is stored exactly once,
the shared ones created by exactly one request each, no statement stored twice, no 5xx.

Records are small (one short statement, one short source) so that the 4,000 requests fit in
the suite's time: the test measures the service's concurrency, not the checks' cost
(``benchmarks/api.py`` measures that).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from core.config import load_settings
from core.storage import models as m
from core.storage.db import read_session
from tests.integration.api_server import Server, running_api

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.model,
    pytest.mark.slow,
    pytest.mark.timeout(900),
]

log = logging.getLogger(__name__)

CLIENTS = 8
PER_CLIENT = 500
SHARED = 50  # ids every client sends


def small(record_id: str, n: int) -> dict[str, Any]:
    return {
        "id": record_id,
        "patient_id": f"p-{n % 40}",
        "timestamp": f"2026-01-{(n % 28) + 1:02d}T{n % 24:02d}:00:00Z",
        "query": "Dose?",
        "answer": f"Metformin {100 + n % 9} mg daily.",
        "sources": [{"id": "n", "text": f"Metformin {100 + n % 9} mg daily."}],
        "model": ("model-a", "model-b")[n % 2],
    }


@pytest.fixture
def api(engine: Engine, db_url: str) -> Iterator[Server]:
    settings = load_settings(database_url=db_url, learned_verifier=False, api_rate_limit=0)
    keys = {f"client-{n}": ["ingest", "read"] for n in range(CLIENTS)}
    with running_api(engine, settings, keys) as server:
        yield server


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_eight_clients_post_500_answers_each_without_loss_or_duplicates(api: Server) -> None:
    def client(n: int) -> list[tuple[str, int]]:
        plan = [small(f"c{n}-{i}", n * PER_CLIENT + i) for i in range(PER_CLIENT - SHARED)]
        for k in range(SHARED):  # the shared ids, spread through the client's run
            plan.insert(k * (PER_CLIENT // SHARED) + n % 10, small(f"shared-{k}", 10_000 + k))
        assert len(plan) == PER_CLIENT
        out = []
        with api.client(f"client-{n}") as c:
            for body in plan:
                out.append((body["id"], c.post("/v1/answers", json=body).status_code))
        return out

    started = time.perf_counter()
    with ThreadPoolExecutor(CLIENTS) as pool:
        results = [pair for part in pool.map(client, range(CLIENTS)) for pair in part]
    elapsed = time.perf_counter() - started
    log.warning(
        "load: %d answers from %d clients in %.1f s (%.1f answers/s)",
        len(results),
        CLIENTS,
        elapsed,
        len(results) / elapsed,
    )

    codes = Counter(code for _, code in results)
    assert len(results) == CLIENTS * PER_CLIENT
    assert set(codes) <= {200, 201}, codes
    own = CLIENTS * (PER_CLIENT - SHARED)
    assert codes[201] == own + SHARED  # each shared id created by exactly one request
    assert codes[200] == (CLIENTS - 1) * SHARED
    created = Counter(rid for rid, code in results if code == 201)
    assert all(v == 1 for v in created.values())

    with read_session(api.engine) as s:
        stored = s.execute(select(func.count()).select_from(m.Conversation)).scalar_one()
        distinct = s.execute(
            select(func.count(func.distinct(m.Conversation.external_id)))
        ).scalar_one()
        per_answer = s.execute(
            select(m.StatementCheck.conversation_id, func.count())
            .group_by(m.StatementCheck.conversation_id)
            .having(func.count() != 1)
        ).all()
        statements = s.execute(select(func.count()).select_from(m.StatementCheck)).scalar_one()
    assert stored == distinct == own + SHARED
    assert per_answer == []  # one statement per answer: none stored twice
    assert statements == own + SHARED
