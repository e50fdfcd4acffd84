"""The dashboard's reads made cheaper by migration 0013, on SQLite and PostgreSQL: the
per-model statistics from the rollups' sums of squares give what the answers themselves give
(after edits too, and for rollups filled by the migration), and a patient's answers selected
in SQL are the newest of that patient's history within the filters."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import case, func, inspect, select
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from core.storage import models as m
from core.storage import repo
from core.storage.db import read_session, write_session
from core.storage.queries import Filters
from tests.integration.test_search_migration import migrate
from tests.integration.test_storage import _bundle

BASE = datetime(2026, 3, 2, 0, 0, tzinfo=UTC)
# (hours after BASE, model, patient, grounding, consistency): three days, two models, three
# patients, a missing grounding score, several answers in one bucket
ANSWERS: list[tuple[int, str, str, float | None, float]] = [
    (1, "model-a", "p-1", 0.2, 1.0),
    (5, "model-a", "p-1", 0.4, 0.5),
    (9, "model-b", "p-2", 0.9, 0.25),
    (26, "model-b", "p-1", None, 0.75),
    (30, "model-a", "p-3", 0.65, 0.1),
    (50, "model-a", "p-2", 0.35, 0.9),
    (53, "model-b", "p-3", 1.0, 0.0),
    (70, "model-b", "p-1", 0.05, 0.6),
]


def _store(engine: Engine) -> None:
    with write_session(engine) as s:
        for i, (hours, model, patient, g, c) in enumerate(ANSWERS):
            b = _bundle(
                f"sq-{i}",
                when=BASE + timedelta(hours=hours),
                model=model,
                patient=patient,
                grounding=g,
                content="v1",
            )
            b.conversation.consistency_score = c
            repo.store_conversation(session=s, bundle=b)
    # an edit moves an answer to another day and model with other scores: the rollups take
    # its old values out and its new ones in
    edited = _bundle(
        "sq-1", when=BASE + timedelta(hours=60), model="model-b", grounding=0.7, content="v2"
    )
    edited.conversation.consistency_score = 0.3
    with write_session(engine) as s:
        assert repo.store_conversation(session=s, bundle=edited).status == "updated"


def _scanned(session: Session, filters: Filters) -> list[tuple[Any, ...]]:
    """The per-model counts, sums and sums of squares summed over the answers themselves."""
    c = m.Conversation
    conds: list[Any] = []
    if filters.start is not None:
        conds.append(col(c.query_timestamp) >= filters.start)
    if filters.end is not None:
        conds.append(col(c.query_timestamp) < filters.end)
    if filters.models:
        conds.append(col(c.model_used).in_(filters.models))
    if filters.patient_ids:
        conds.append(col(c.patient_id).in_(filters.patient_ids))

    def sums(x: Any) -> tuple[Any, Any, Any]:
        return func.count(x), func.coalesce(func.sum(x), 0.0), func.coalesce(func.sum(x * x), 0.0)

    stmt = (
        select(
            col(c.model_used),
            func.count(),
            func.sum(case((col(c.is_flagged), 1), else_=0)),
            *sums(col(c.grounding_score)),
            *sums(col(c.consistency_score)),
        )
        .where(*conds)
        .group_by(col(c.model_used))
        .order_by(col(c.model_used))
    )
    return [tuple(r) for r in session.execute(stmt)]


def _same(stats: list[repo.ModelStats], scanned: list[tuple[Any, ...]]) -> None:
    assert [x.model for x in stats] == [r[0] for r in scanned]
    for x, r in zip(stats, scanned, strict=True):
        assert (x.conversations, x.flagged, x.n_grounding, x.n_consistency) == (
            r[1],
            r[2],
            r[3],
            r[6],
        )
        got = (x.sum_grounding, x.sumsq_grounding, x.sum_consistency, x.sumsq_consistency)
        assert got == pytest.approx((r[4], r[5], r[7], r[8]), abs=1e-12)


FILTERS = [
    Filters(),
    Filters(start=BASE, end=BASE + timedelta(days=2)),
    Filters(start=BASE + timedelta(days=1), end=BASE + timedelta(days=3), models=("model-b",)),
    Filters(patient_ids=("p-1", "p-3")),  # the per-patient rollup
    Filters(start=BASE, end=BASE + timedelta(days=1), patient_ids=("p-1",)),
    Filters(models=("model-z",)),
]


def test_model_stats_from_the_rollup_equal_the_answers_sums(engine: Engine) -> None:
    _store(engine)
    with read_session(engine) as s:
        for f in FILTERS:
            _same(repo.model_stats(session=s, filters=f), _scanned(s, f))
        everything = repo.model_stats(session=s)
    # the edit took sq-1 out of model-a's day and into model-b's
    assert {x.model: x.conversations for x in everything} == {"model-a": 3, "model-b": 5}


def test_the_migration_fills_the_squares_of_rollups_stored_before_it(db_url: str) -> None:
    engine = migrate(db_url, "head")
    _store(engine)
    with read_session(engine) as s:
        written = {str(f): repo.model_stats(session=s, filters=f) for f in FILTERS}
    migrate(db_url, "0012", down=True)
    columns = {c["name"] for c in inspect(engine).get_columns("quality_daily")}
    assert "sumsq_grounding" not in columns
    assert "idx_statement_flagged_time" not in {
        i["name"] for i in inspect(engine).get_indexes("statement_check")
    }
    migrate(db_url, "head")
    assert "idx_statement_flagged_time" in {
        i["name"] for i in inspect(engine).get_indexes("statement_check")
    }
    with read_session(engine) as s:
        for f in FILTERS:
            filled = repo.model_stats(session=s, filters=f)
            _same(filled, _scanned(s, f))
            assert [x.model for x in filled] == [x.model for x in written[str(f)]]
            for a, b in zip(filled, written[str(f)], strict=True):
                assert (a.sumsq_grounding, a.sumsq_consistency) == pytest.approx(
                    (b.sumsq_grounding, b.sumsq_consistency), abs=1e-12
                )


def _picked(session: Session, patient: str, filters: Filters, limit: int) -> list[tuple[Any, ...]]:
    """The patient's whole history filtered here, then its newest ``limit``, oldest first."""
    inside = [
        (c.id, c.query_timestamp, c.model_used, c.grounding_score, c.is_flagged)
        for c in repo.patient_history(session=session, patient_id=patient, limit=10_000)
        if (filters.start is None or c.query_timestamp >= filters.start)
        and (filters.end is None or c.query_timestamp < filters.end)
        and (not filters.models or c.model_used in filters.models)
    ]
    return inside[-limit:]


def test_a_patients_answers_are_the_newest_within_the_filters(engine: Engine) -> None:
    _store(engine)
    cases = [
        (Filters(), 500),
        (Filters(start=BASE, end=BASE + timedelta(days=2)), 500),
        (Filters(start=BASE + timedelta(days=1), models=("model-b",)), 500),
        (Filters(end=BASE + timedelta(days=1)), 500),
        (Filters(), 2),  # the patient's two newest answers
        (Filters(end=BASE + timedelta(days=1)), 1),  # the newest within the range
        (Filters(start=BASE + timedelta(hours=20)), 3),
    ]
    with read_session(engine) as s:
        for patient in ("p-1", "p-2", "p-9"):
            for f, limit in cases:
                got = [
                    (a.id, a.timestamp, a.model, a.grounding, a.flagged)
                    for a in repo.patient_answers(
                        session=s, patient_id=patient, filters=f, limit=limit
                    )
                ]
                assert got == _picked(s, patient, f, limit)
        # the limit applies after the range: answers of an earlier day never crowd them out
        late = repo.patient_answers(
            session=s, patient_id="p-1", filters=Filters(start=BASE + timedelta(days=1)), limit=1
        )
        assert [a.timestamp for a in late] == [BASE + timedelta(hours=70)]
        one = repo.patient_answers(session=s, patient_id="p-1")
    assert [a.external_id for a in one] == ["sq-0", "sq-3", "sq-1", "sq-7"]
    assert one[0].query == "What medications?"
    assert one[0].consistency == 1.0
    assert one[0].timestamp.tzinfo is not None
