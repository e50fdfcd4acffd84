"""Migration 0005 on SQLite and PostgreSQL: answers stored before it are found by full-text
search after it, answers stored, edited and deleted later keep the index in step, and its
downgrade takes the index and the login-lock table away."""

from __future__ import annotations

from datetime import UTC, datetime

from alembic import command
from sqlalchemy import delete, inspect, select, text, update
from sqlalchemy.engine import Engine

from core.storage import repo, search
from core.storage.db import alembic_config, get_engine, read_session, write_session
from core.storage.models import Conversation


def migrate(url: str, revision: str, *, down: bool = False) -> Engine:
    engine = get_engine(url)
    cfg = alembic_config(url)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        (command.downgrade if down else command.upgrade)(cfg, revision)
    return engine


def add(engine: Engine, cid: str, query: str, answer: str) -> None:
    with write_session(engine) as s:
        repo.ensure_patient(session=s, patient_id="p-1")
        s.execute(
            Conversation.__table__.insert().values(  # type: ignore[attr-defined]
                id=cid,
                external_id=cid,
                patient_id="p-1",
                query=query,
                answer=answer,
                model_used="m",
                query_timestamp=datetime(2026, 1, 1, tzinfo=UTC),
                content_hash=cid,
                is_flagged=False,
                flagged_statements=0,
                total_statements=0,
                created_at=datetime.now(UTC),
                updated_at=datetime.now(UTC),
            )
        )


def found(engine: Engine, q: str) -> list[str]:
    with read_session(engine) as s:
        cond = search.text_condition(session=s, q=q)
        return sorted(r[0] for r in s.execute(select(Conversation.id).where(cond)))


def test_existing_answers_are_indexed_and_the_index_follows_every_write(db_url: str) -> None:
    engine = migrate(db_url, "0004")
    add(engine, "c-old", "Is she on metformin?", "Yes, metformin 500 mg twice daily.")
    migrate(db_url, "0005")
    assert found(engine, "metformin") == ["c-old"]
    add(engine, "c-new", "Any headaches?", "She reports migraines.")
    assert found(engine, "migraine") == ["c-new"]
    with write_session(engine) as s:
        s.execute(
            update(Conversation)
            .where(Conversation.id == "c-new")
            .values(answer="She reports no migraines but knee pain.")
        )
    assert found(engine, "knee") == ["c-new"]
    with write_session(engine) as s:
        s.execute(update(Conversation).where(Conversation.id == "c-old").values(query=None))
    assert found(engine, "metformin") == ["c-old"]  # the answer still says it
    with write_session(engine) as s:
        s.execute(delete(Conversation).where(Conversation.id == "c-old"))
    assert found(engine, "metformin") == []
    if engine.dialect.name == "sqlite":
        with read_session(engine) as s:
            rows = s.execute(text("SELECT conversation_id FROM conversation_fts")).all()
        assert [r[0] for r in rows] == ["c-new"]
    else:
        indexes = {i["name"] for i in inspect(engine).get_indexes("conversation")}
        assert search.PG_INDEX in indexes

    migrate(db_url, "0004", down=True)
    names = set(inspect(engine).get_table_names())
    assert "login_lock" not in names
    assert not {n for n in names if n.startswith("conversation_fts")}
    if engine.dialect.name == "postgresql":
        indexes = {i["name"] for i in inspect(engine).get_indexes("conversation")}
        assert search.PG_INDEX not in indexes
    add(engine, "c-later", "Knee pain?", "Yes.")  # no trigger left behind to fail the write
    migrate(db_url, "head")
    assert found(engine, "knee") == ["c-later", "c-new"]
