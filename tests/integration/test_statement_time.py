"""The statements' copies of their answer's time, model and patient (migration 0012), on
SQLite and PostgreSQL: filled for statements stored before the migration, written with every
store, following an edit of the answer, and what the review queue, its filter counts and the
risk histogram select by."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import inspect, select, text
from sqlalchemy.engine import Engine

from core.storage import models as m
from core.storage import repo
from core.storage.db import read_session, write_session
from core.storage.queries import Filters
from tests.integration.test_search_migration import migrate
from tests.integration.test_storage import _bundle

DAY = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def bundle(ext: str, *, when: datetime, model: str, patient: str) -> repo.ConversationBundle:
    """One flagged and one grounded statement (the storage tests' bundle), content by version."""
    return _bundle(
        ext, when=when, model=model, patient=patient, content=f"{when}-{model}-{patient}"
    )


def store(engine: Engine, b: repo.ConversationBundle) -> str:
    with write_session(engine) as s:
        return repo.store_conversation(session=s, bundle=b).conversation_id


def copies(engine: Engine) -> list[tuple[datetime, str, str]]:
    with read_session(engine) as s:
        rows = s.execute(
            select(
                m.StatementCheck.query_timestamp,  # type: ignore[arg-type]
                m.StatementCheck.model_used,  # type: ignore[arg-type]
                m.StatementCheck.patient_id,  # type: ignore[arg-type]
            ).order_by(m.StatementCheck.statement_index)  # type: ignore[arg-type]
        ).all()
    return [tuple(r) for r in rows]  # type: ignore[misc]


def test_statements_stored_before_the_migration_get_their_answers_copies(db_url: str) -> None:
    engine = migrate(db_url, "0011")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO patient (id, created_at) VALUES ('p-1', :at)"), {"at": DAY})
        conn.execute(
            text(
                "INSERT INTO conversation (id, external_id, patient_id, query_timestamp, "
                "model_used, is_flagged, flagged_statements, total_statements, content_hash, "
                "created_at, updated_at) VALUES ('c1', 'e1', 'p-1', :at, 'model-a', true, 1, 1, "
                "'h', :at, :at)"
            ),
            {"at": DAY},
        )
        conn.execute(
            text(
                "INSERT INTO statement_check (conversation_id, statement, statement_index, "
                "is_grounded, status, verification_method, risk, verified_at) VALUES "
                "('c1', 'Takes aspirin.', 0, false, 'unsupported', 'inference', 0.5, :at)"
            ),
            {"at": DAY},
        )
    migrate(db_url, "head")
    assert copies(engine) == [(DAY, "model-a", "p-1")]
    indexes = {i["name"] for i in inspect(engine).get_indexes("statement_check")}
    assert {"idx_statement_time", "idx_statement_patient"} <= indexes
    with read_session(engine) as s:  # and the queue finds it by its answer's day
        rows, total = repo.flagged_statements(
            session=s, filters=Filters(DAY - timedelta(hours=1), DAY + timedelta(hours=1))
        )
    assert (total, [r.conversation_id for r in rows]) == (1, ["c1"])
    migrate(db_url, "0011", down=True)
    columns = {c["name"] for c in inspect(engine).get_columns("statement_check")}
    assert not {"query_timestamp", "model_used", "patient_id"} & columns


def test_every_store_writes_the_copies_and_an_edit_moves_them(engine: Engine) -> None:
    store(engine, bundle("e-1", when=DAY, model="model-a", patient="p-1"))
    assert copies(engine) == [(DAY, "model-a", "p-1")] * 2
    later = DAY + timedelta(days=40)
    store(engine, bundle("e-1", when=later, model="model-b", patient="p-2"))
    assert copies(engine) == [(later, "model-b", "p-2")] * 2  # replaced, not duplicated

    january = Filters(DAY - timedelta(days=1), DAY + timedelta(days=1))
    february = Filters(later - timedelta(days=1), later + timedelta(days=1))
    with read_session(engine) as s:
        assert repo.flagged_statements(session=s, filters=january)[1] == 0
        rows, total = repo.flagged_statements(session=s, filters=february)
        assert total == 1
        assert (rows[0].model, rows[0].patient_id) == ("model-b", "p-2")
        # the filters' counts: by the answer's model and patient as they are now
        facets = repo.queue_facets(session=s, filters=february)
        assert facets["model"] == {"model-b": 1}
        assert facets["patient"] == {"p-2": 1}
        assert repo.queue_facets(session=s, filters=january)["model"] == {}
        by_model = Filters(later - timedelta(days=1), later + timedelta(days=1), ("model-a",))
        assert repo.flagged_statements(session=s, filters=by_model)[1] == 0
        by_patient = Filters(None, None, (), ("p-2",))
        assert repo.flagged_statements(session=s, filters=by_patient)[1] == 1
        # the risk histogram counts every statement of the range, grounded ones too
        assert sum(repo.statement_risk_histogram(session=s, filters=february)) == 2
        assert sum(repo.statement_risk_histogram(session=s, filters=january)) == 0


def test_a_batch_store_writes_the_copies_too(engine: Engine) -> None:
    with write_session(engine) as s:
        repo.store_many(
            session=s,
            bundles=[
                bundle("b-1", when=DAY, model="model-a", patient="p-1"),
                bundle("b-2", when=DAY + timedelta(days=1), model="model-b", patient="p-2"),
            ],
        )
    assert sorted(copies(engine)) == sorted(
        [(DAY, "model-a", "p-1")] * 2 + [(DAY + timedelta(days=1), "model-b", "p-2")] * 2
    )
