"""Concurrency: 8 writers x 500 records on SQLite and PostgreSQL while the dashboard's queries
run -> exactly 4,000 conversations, none lost or duplicated, the rollup agreeing.

Rows are written through ``repo.store_bundles`` (one transaction per record, as an import of
one record does) with realistic check rows; the model-free path keeps the test bounded in time
so that it measures the storage layer, not the embedding model.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from core.storage import models as m
from core.storage import repo
from core.storage.db import read_session
from core.text import content_hash

WRITERS = 8
PER_WRITER = 500
TOTAL = WRITERS * PER_WRITER
BATCH = 25  # records per transaction, like a small import file
START = datetime(2026, 1, 1, tzinfo=UTC)
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def bundle(writer: int, i: int) -> repo.ConversationBundle:
    n = writer * PER_WRITER + i
    ext = f"w{writer}-r{i}"
    conv = m.Conversation(
        id="",
        external_id=ext,
        patient_id=f"p-{n % 7}",
        query="What does the patient take?",
        query_timestamp=START + timedelta(hours=n % (24 * 30)),
        answer="The patient takes metformin 500 mg. The patient takes aspirin.",
        model_used=("model-a", "model-b")[n % 2],
        grounding_score=0.5,
        consistency_score=1.0,
        confidence_score=0.8,
        hallucination_risk=0.3,
        overall_quality=0.7,
        is_flagged=True,
        flagged_statements=1,
        total_statements=2,
        content_hash=content_hash(ext),
    )
    b = repo.ConversationBundle(conversation=conv)
    for idx, status in enumerate(("grounded", "unsupported")):
        b.statements.append(
            m.StatementCheck(
                conversation_id="",
                statement="The patient takes metformin 500 mg.",
                statement_index=idx,
                is_grounded=status == "grounded",
                status=status,
                grounding_confidence=0.7,
                verification_method="exact_match" if idx == 0 else "unsupported",
                risk=0.2 if idx == 0 else 0.6,
            )
        )
    return b


def run_threads(targets: list[Callable[[], None]]) -> list[BaseException]:
    errors: list[BaseException] = []

    def wrap(fn: Callable[[], None]) -> Callable[[], None]:
        def inner() -> None:
            try:
                fn()
            except BaseException as exc:  # collected and asserted by the test
                errors.append(exc)

        return inner

    threads = [threading.Thread(target=wrap(t), daemon=True) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
        assert not t.is_alive(), "a worker did not finish in time"
    return errors


def test_eight_writers_while_dashboard_reads(engine: Engine) -> None:
    done = threading.Event()
    outcomes: list[list[repo.StoreOutcome]] = [[] for _ in range(WRITERS)]
    seen: dict[int, list[int]] = {}
    reads = [0]

    def writer(w: int) -> Callable[[], None]:
        def run() -> None:
            for start in range(0, PER_WRITER, BATCH):
                # time order within a batch, as the import pipeline stores records
                batch = sorted(
                    (bundle(w, i) for i in range(start, start + BATCH)),
                    key=lambda b: b.conversation.query_timestamp,
                )
                outcomes[w].extend(repo.store_bundles(engine=engine, bundles=batch))

        return run

    def reader() -> None:
        counts = seen.setdefault(threading.get_ident(), [])
        while not done.is_set():
            with read_session(engine) as s:
                k = repo.kpis(session=s)
                repo.quality_trend(session=s, granularity="week")
                rows, total = repo.flagged_statements(session=s, limit=20)
                assert len(rows) <= 20
                assert total >= 0
                # a committed record lands whole: its rollup, its statements and its row
                assert k.flagged == k.conversations
                counts.append(k.conversations)
            reads[0] += 1
            time.sleep(0.02)

    def writers_then_stop() -> None:
        try:
            errors = run_threads([writer(w) for w in range(WRITERS)])
            if errors:
                raise errors[0]
        finally:
            done.set()

    errors = run_threads([writers_then_stop, reader, reader])
    assert not errors, repr(errors[0])
    assert reads[0] > 0
    for counts in seen.values():  # committed records never disappear from a reader's view
        assert counts == sorted(counts)
        assert all(0 <= c <= TOTAL for c in counts)

    assert all(o.status == "imported" for out in outcomes for o in out)
    with read_session(engine) as s:
        assert repo.count_conversations(session=s) == TOTAL
        distinct = s.execute(
            select(func.count(func.distinct(m.Conversation.external_id)))
        ).scalar_one()
        assert distinct == TOTAL
        assert repo.kpis(session=s).conversations == TOTAL
        assert repo.kpis(session=s).flagged == TOTAL
        _, flagged_total = repo.flagged_statements(session=s, limit=1)
        assert flagged_total == TOTAL
        statements = s.execute(select(func.count()).select_from(m.StatementCheck)).scalar_one()
        assert statements == 2 * TOTAL
        assert sum(p.conversations for p in repo.quality_trend(session=s)) == TOTAL


def test_concurrent_reimport_is_idempotent(engine: Engine) -> None:
    per = 100

    def initial(w: int) -> Callable[[], None]:
        def run() -> None:
            for i in range(per):
                repo.store_bundles(engine=engine, bundles=[bundle(w, i)])

        return run

    first = run_threads([initial(w) for w in range(WRITERS)])
    assert not first, repr(first[0])
    statuses: list[str] = []
    lock = threading.Lock()

    def again(w: int) -> Callable[[], None]:
        def run() -> None:
            src = (w + 1) % WRITERS  # each writer re-stores another writer's records
            for i in range(per):
                (out,) = repo.store_bundles(engine=engine, bundles=[bundle(src, i)])
                with lock:
                    statuses.append(out.status)

        return run

    errors = run_threads([again(w) for w in range(WRITERS)])
    assert not errors, repr(errors[0])
    assert statuses.count("unchanged") == WRITERS * per
    with read_session(engine) as s:
        assert repo.count_conversations(session=s) == WRITERS * per
        assert repo.kpis(session=s).conversations == WRITERS * per


def test_overlapping_imports_through_the_pipeline_all_succeed(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Six imports of overlapping record sets at once (the same records in several files):
    every one succeeds (a unique-key conflict with a concurrent writer is read and stored
    again), and each record is stored exactly once."""
    from core.config import load_settings, reset_settings_cache
    from core.pipeline import QualityPipeline
    from core.records import parse_record

    monkeypatch.setenv("GROUNDWATCH_ENABLE_GROUNDING_VERIFICATION", "false")
    monkeypatch.setenv("GROUNDWATCH_ENABLE_EPISTEMIC_VERIFICATION", "false")
    reset_settings_cache()
    pipeline = QualityPipeline(settings=load_settings(), engine=engine, llm=None)

    def records(first: int) -> list[object]:
        return [
            parse_record(
                {
                    "id": f"shared-{i}",
                    "patient_id": f"p-{i % 3}",
                    "timestamp": f"2026-02-{i % 28 + 1:02d}T10:00:00Z",
                    "query": "What does the patient take?",
                    "answer": "The patient takes metformin 500 mg.",
                    "sources": [{"id": "s", "text": "Metformin 500 mg daily."}],
                },
                max_text_chars=10_000,
            )
            for i in range(first, first + 20)
        ]

    barrier = threading.Barrier(6)

    def job(first: int) -> Callable[[], None]:
        def run() -> None:
            batch = records(first)
            barrier.wait()
            pipeline.process_many(batch)  # type: ignore[arg-type]

        return run

    errors = run_threads([job(first) for first in (0, 5, 10, 0, 5, 10)])
    assert errors == []
    with read_session(engine) as s:
        assert repo.count_conversations(session=s) == 30
        ids = s.execute(select(m.Conversation.external_id)).scalars().all()
    assert len(set(ids)) == 30
    reset_settings_cache()
