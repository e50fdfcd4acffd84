"""Storage on SQLite and PostgreSQL: schema, round trip, idempotence, rollups, concurrency."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import func, select, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import SQLModel

from core.storage import models as m
from core.storage import repo
from core.storage.db import (
    DatabaseError,
    check_connection,
    current_revision,
    make_engine,
    read_session,
    upgrade_to_head,
    write_session,
)
from core.storage.search import include_object


def _head() -> str | None:
    """The newest revision of the packaged migrations (read, not written into the tests)."""
    from alembic.script import ScriptDirectory

    from core.storage.db import alembic_config

    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()


def _bundle(
    ext: str,
    *,
    patient: str = "p-1",
    when: datetime | None = None,
    grounding: float | None = 0.8,
    model: str = "model-a",
    content: str = "v1",
    statuses: tuple[str, ...] = ("grounded", "unsupported"),
) -> repo.ConversationBundle:
    when = when or datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    conv = m.Conversation(
        id="",
        external_id=ext,
        patient_id=patient,
        query="What medications?",
        query_timestamp=when,
        answer="Takes metformin. Takes warfarin.",
        model_used=model,
        sources=[{"id": "s-1", "text": "Metformin 500 mg.", "type": "note"}],
        grounding_score=grounding,
        consistency_score=1.0,
        confidence_score=0.9,
        hallucination_risk=0.2,
        overall_quality=0.85,
        is_flagged="unsupported" in statuses,
        content_hash=content,
    )
    stmts = [
        m.StatementCheck(
            conversation_id="",
            statement=f"statement {i}",
            statement_index=i,
            is_grounded=s == "grounded",
            status=s,
            verification_method="exact_match" if s == "grounded" else "unsupported",
            grounding_confidence=0.9,
            risk=0.6 if s != "grounded" else 0.0,
        )
        for i, s in enumerate(statuses)
    ]
    return repo.ConversationBundle(conversation=conv, statements=stmts)


def test_migrated_schema_equals_models(engine: Engine) -> None:
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"include_object": include_object})
        diff = compare_metadata(context, SQLModel.metadata)
    assert diff == []
    assert current_revision(engine) == _head()


def test_upgrade_is_idempotent(db_url: str) -> None:
    upgrade_to_head(db_url)
    upgrade_to_head(db_url)
    from core.storage.db import get_engine

    assert current_revision(get_engine(db_url)) == _head()


def test_round_trip_with_checks(engine: Engine) -> None:
    with write_session(engine) as s:
        out = repo.store_conversation(session=s, bundle=_bundle("ext-1"))
    assert out.status == "imported"
    with read_session(engine) as s:
        detail = repo.get_conversation(session=s, conversation_id=out.conversation_id)
        assert detail is not None
        assert detail.conversation.external_id == "ext-1"
        assert [st.status for st in detail.statements] == ["grounded", "unsupported"]
        ts = detail.conversation.query_timestamp
        assert ts.tzinfo is not None
        assert ts.utcoffset() == timedelta(0)
        assert ts == datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
        assert detail.conversation.sources[0]["id"] == "s-1"
        by_ext = repo.get_conversation(session=s, conversation_id="ext-1")
        assert by_ext is not None
        assert by_ext.conversation.id == out.conversation_id


def test_store_is_idempotent_and_edits_update(engine: Engine) -> None:
    with write_session(engine) as s:
        first = repo.store_conversation(session=s, bundle=_bundle("ext-1"))
    with write_session(engine) as s:
        again = repo.store_conversation(session=s, bundle=_bundle("ext-1"))
    assert again.status == "unchanged"
    assert again.conversation_id == first.conversation_id
    with write_session(engine) as s:
        edited = repo.store_conversation(
            session=s,
            bundle=_bundle("ext-1", content="v2", grounding=0.4, statuses=("contradicted",)),
        )
    assert edited.status == "updated"
    with read_session(engine) as s:
        assert repo.count_conversations(session=s) == 1
        detail = repo.get_conversation(session=s, conversation_id="ext-1")
        assert detail is not None
        assert [st.status for st in detail.statements] == ["contradicted"]
        k = repo.kpis(session=s)
    assert k.conversations == 1
    assert k.grounding == pytest.approx(0.4)


def test_an_edit_keeps_the_clinicians_verdicts(engine: Engine) -> None:
    """A verdict follows its statement into the edited version when the statement is still
    there; a verdict on a statement the edit removed stays with the conversation, detached."""
    with write_session(engine) as s:
        out = repo.store_conversation(session=s, bundle=_bundle("ext-r"))
    with read_session(engine) as s:
        detail = repo.get_conversation(session=s, conversation_id=out.conversation_id)
        assert detail is not None
        kept, dropped = (st.id for st in detail.statements)  # statement 0 and statement 1
    with write_session(engine) as s:
        repo.create_review(session=s, statement_check_id=int(kept), reviewer="a", verdict="unsure")
        repo.create_review(
            session=s, statement_check_id=int(dropped), reviewer="b", verdict="confirmed"
        )
    # the edit keeps "statement 0" (now at index 1, after a new one) and drops "statement 1"
    edited = _bundle("ext-r", content="v2", statuses=("contradicted", "unsupported"))
    edited.statements[0].statement = "a new statement"
    edited.statements[1].statement = "statement 0"
    with write_session(engine) as s:
        assert repo.store_conversation(session=s, bundle=edited).status == "updated"
    with read_session(engine) as s:
        detail = repo.get_conversation(session=s, conversation_id=out.conversation_id)
        assert detail is not None
        by_id = {st.id: st for st in detail.statements}
        verdicts = {r.verdict: r.statement_check_id for r in detail.reviews}
        reviewed = repo.reviewed_statements(session=s)
    assert len(detail.reviews) == 2  # nothing lost
    assert by_id[verdicts["unsure"]].statement == "statement 0"
    assert verdicts["confirmed"] is None  # its statement is gone
    assert [(r.statement_check_id, r.verdict) for r in reviewed] == [(verdicts["unsure"], "unsure")]


def test_score_check_constraint(engine: Engine) -> None:
    with pytest.raises(IntegrityError), write_session(engine) as s:
        repo.store_conversation(session=s, bundle=_bundle("ext-bad", grounding=1.5))
    with read_session(engine) as s:
        assert repo.count_conversations(session=s) == 0


def test_cascade_delete_removes_checks(engine: Engine) -> None:
    with write_session(engine) as s:
        out = repo.store_conversation(session=s, bundle=_bundle("ext-1"))
    with write_session(engine) as s:
        s.execute(text("DELETE FROM patient WHERE id = 'p-1'"))
    with read_session(engine) as s:
        assert s.execute(select(func.count()).select_from(m.StatementCheck)).scalar_one() == 0
        assert s.get(m.Conversation, out.conversation_id) is None


def test_trends_and_kpis_aggregate_in_sql(engine: Engine) -> None:
    base = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)  # a Monday
    with write_session(engine) as s:
        for i, g in enumerate([0.2, 0.4, 0.6, 0.8]):
            repo.store_conversation(
                session=s,
                bundle=_bundle(f"e{i}", when=base + timedelta(days=i // 2), grounding=g),
            )
        repo.store_conversation(
            session=s,
            bundle=_bundle("e9", when=base + timedelta(days=8), grounding=None, model="model-b"),
        )
    with read_session(engine) as s:
        days = repo.quality_trend(session=s)
        weeks = repo.quality_trend(session=s, granularity="week")
        only_a = repo.kpis(session=s, filters=repo.Filters(models=("model-a",)))
        midnight = base.replace(hour=0)
        window = repo.kpis(
            session=s, filters=repo.Filters(start=midnight, end=midnight + timedelta(days=1))
        )
        models = repo.list_models(session=s)
    assert [(p.period.isoformat(), p.conversations) for p in days] == [
        ("2026-03-02", 2),
        ("2026-03-03", 2),
        ("2026-03-10", 1),
    ]
    assert days[0].grounding == pytest.approx(0.3)
    assert days[2].grounding is None
    assert [(p.period.isoformat(), p.conversations) for p in weeks] == [
        ("2026-03-02", 4),
        ("2026-03-09", 1),
    ]
    assert weeks[0].grounding == pytest.approx(0.5)
    assert only_a.conversations == 4
    assert only_a.grounding == pytest.approx(0.5)
    assert window.conversations == 2
    assert models == ["model-a", "model-b"]


def test_flagged_statements_and_reviews(engine: Engine) -> None:
    with write_session(engine) as s:
        repo.store_conversation(session=s, bundle=_bundle("e1"))
        repo.store_conversation(session=s, bundle=_bundle("e2", statuses=("contradicted",)))
    with read_session(engine) as s:
        rows, total = repo.flagged_statements(session=s, limit=10)
    assert total == 2
    assert {r.status for r in rows} == {"unsupported", "contradicted"}
    target = rows[0].statement_check_id
    with write_session(engine) as s:
        repo.create_review(
            session=s, statement_check_id=target, reviewer="dr.a", verdict="false_alarm"
        )
        repo.create_review(
            session=s, statement_check_id=target, reviewer="dr.b", verdict="confirmed", note="x"
        )
    with read_session(engine) as s:
        unreviewed, n_un = repo.flagged_statements(session=s, review_state="unreviewed")
        reviewed = repo.reviewed_statements(session=s)
    assert n_un == 1
    assert unreviewed[0].statement_check_id != target
    assert len(reviewed) == 1
    assert reviewed[0].verdict == "confirmed"
    assert reviewed[0].reviewer == "dr.b"
    with pytest.raises(ValueError, match="verdict"), write_session(engine) as s:
        repo.create_review(
            session=s,
            statement_check_id=target,
            reviewer="x",
            verdict="maybe",  # type: ignore[arg-type]
        )


def test_concurrent_writers_lose_nothing(engine: Engine) -> None:
    errors: list[BaseException] = []

    def writer(worker: int) -> None:
        try:
            for i in range(250):
                with write_session(engine) as s:
                    repo.store_conversation(
                        session=s,
                        bundle=_bundle(f"w{worker}-{i}", patient=f"p-{i % 7}"),
                    )
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with read_session(engine) as s:
        assert repo.count_conversations(session=s) == 1000
        assert repo.kpis(session=s).conversations == 1000
        n_stmts = s.execute(select(func.count()).select_from(m.StatementCheck)).scalar_one()
    assert n_stmts == 2000


def test_atomic_batch_rolls_back_whole(engine: Engine) -> None:
    bundles = [_bundle("ok-1"), _bundle("ok-2"), _bundle("bad", grounding=2.0)]
    with pytest.raises(IntegrityError):
        repo.store_bundles(engine=engine, bundles=bundles)
    with read_session(engine) as s:
        assert repo.count_conversations(session=s) == 0
        assert repo.kpis(session=s).conversations == 0


def test_purge_keeps_scores_and_verdicts(engine: Engine) -> None:
    old = datetime(2025, 1, 1, tzinfo=UTC)
    with write_session(engine) as s:
        repo.store_conversation(session=s, bundle=_bundle("old", when=old))
        repo.store_conversation(session=s, bundle=_bundle("new"))
    with read_session(engine) as s:
        rows, _ = repo.flagged_statements(session=s)
    old_row = next(r for r in rows if r.external_id == "old")
    with write_session(engine) as s:
        repo.create_review(
            session=s,
            statement_check_id=old_row.statement_check_id,
            reviewer="r",
            verdict="confirmed",
        )
        n = repo.purge_text_before(session=s, cutoff=datetime(2025, 6, 1, tzinfo=UTC))
    assert n == 1
    with read_session(engine) as s:
        d = repo.get_conversation(session=s, conversation_id="old")
        assert d is not None
        assert d.conversation.answer is None
        assert d.conversation.query is None
        assert d.conversation.grounding_score == pytest.approx(0.8)
        assert all(st.statement is None for st in d.statements)
        assert len(d.reviews) == 1
        fresh = repo.get_conversation(session=s, conversation_id="new")
        assert fresh is not None
        assert fresh.conversation.answer is not None


def test_caches_round_trip(engine: Engine) -> None:
    import numpy as np

    from core.backends.llm import ChatResponse

    store = repo.DbEmbeddingStore(engine)
    vec = np.arange(4, dtype=np.float32)
    store.put_many("mini", {"h1": vec})
    store.put_many("mini", {"h1": vec})  # no duplicate error
    got = store.get_many("mini", ["h1", "h2"])
    assert list(got) == ["h1"]
    assert np.array_equal(got["h1"], vec)
    cache = repo.DbLLMCache(engine)
    cache.put("k", ChatResponse("Yes", "m", 10, 1, 12.5))
    hit = cache.get("k")
    assert hit is not None
    assert hit.text == "Yes"
    assert hit.cached
    with read_session(engine) as s:
        assert repo.llm_usage(session=s)["prompt_tokens"] == 10


def test_bad_database_url_gives_one_clear_line() -> None:
    with pytest.raises(DatabaseError) as info:
        make_engine("not a url")
    assert "\n" not in str(info.value)
    eng = make_engine("postgresql://nobody@127.0.0.1:1/none")
    with pytest.raises(DatabaseError) as info2:
        check_connection(eng)
    msg = str(info2.value)
    assert "cannot connect" in msg
    assert "\n" not in msg


def test_sqlite_runs_wal_with_foreign_keys(sqlite_engine: Engine) -> None:
    with sqlite_engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar_one() == "wal"
        assert conn.execute(text("PRAGMA foreign_keys")).scalar_one() == 1


def _texts_bundle(ext: str, said: list[str], content: str) -> repo.ConversationBundle:
    from core.text import content_hash

    bundle = _bundle(ext, content=content, statuses=("unsupported",) * len(said))
    for i, (row, text_) in enumerate(zip(bundle.statements, said, strict=True)):
        row.statement, row.statement_index, row.statement_hash = text_, i, content_hash(text_)
    return bundle


def _verdict_on(engine: Engine, conversation_id: str) -> list[tuple[int, str]]:
    with read_session(engine) as s:
        rows = s.execute(
            select(m.StatementCheck.statement_index, m.Review.verdict).join(
                m.Review, m.Review.statement_check_id == m.StatementCheck.id
            )
        ).all()
    return [(int(i), str(v)) for i, v in rows]


def _review(engine: Engine, conversation_id: str, index: int, verdict: str) -> None:
    with write_session(engine) as s:
        sc = s.execute(
            select(m.StatementCheck).where(
                m.StatementCheck.conversation_id == conversation_id,
                m.StatementCheck.statement_index == index,
            )
        ).scalar_one()
        repo.create_review(
            session=s, statement_check_id=int(sc.id or 0), reviewer="dr", verdict=verdict
        )  # type: ignore[arg-type]


def test_a_verdict_follows_its_statement_after_a_purge_and_a_reordering_edit(
    engine: Engine,
) -> None:
    said = ["Takes metformin 500 mg.", "Takes warfarin 5 mg."]
    with write_session(engine) as s:
        conv_id = repo.store_conversation(
            session=s, bundle=_texts_bundle("ext-m8", said, "v1")
        ).conversation_id
    _review(engine, conv_id, 0, "false_alarm")  # on the metformin statement
    with write_session(engine) as s:
        assert repo.purge_text_before(session=s, cutoff=datetime(2027, 1, 1, tzinfo=UTC)) == 1
    edited = _texts_bundle("ext-m8", list(reversed(said)), "v2")  # warfarin first now
    with write_session(engine) as s:
        assert repo.store_conversation(session=s, bundle=edited).status == "updated"
    assert _verdict_on(engine, conv_id) == [(1, "false_alarm")]  # still metformin's


def test_a_verdict_on_a_repeated_sentence_follows_that_occurrence(engine: Engine) -> None:
    said = ["He is stable.", "Takes warfarin.", "He is stable."]
    with write_session(engine) as s:
        conv_id = repo.store_conversation(
            session=s, bundle=_texts_bundle("ext-l7", said, "v1")
        ).conversation_id
    _review(engine, conv_id, 2, "confirmed")  # the second 'He is stable.'
    edited = _texts_bundle("ext-l7", ["New line.", *said], "v2")
    with write_session(engine) as s:
        repo.store_conversation(session=s, bundle=edited)
    assert _verdict_on(engine, conv_id) == [(3, "confirmed")]


def test_migration_0002_hashes_the_statements_stored_before_it(sqlite_url: str) -> None:
    from alembic import command

    from core.storage.db import alembic_config, get_engine
    from core.text import content_hash

    engine = get_engine(sqlite_url)
    command.upgrade(alembic_config(sqlite_url), "0001")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO patient (id, created_at) VALUES ('p-1', '2026-01-01');"))
    with write_session(engine) as s:
        s.execute(
            text(
                "INSERT INTO conversation (id, external_id, patient_id, query_timestamp, "
                "model_used, is_flagged, flagged_statements, total_statements, content_hash, "
                "created_at, updated_at) VALUES ('c1', 'e1', 'p-1', '2026-01-01', 'm', 0, 0, 2, "
                "'h', '2026-01-01', '2026-01-01')"
            )
        )
        for i, said in enumerate(["Takes aspirin.", None]):
            s.execute(
                text(
                    "INSERT INTO statement_check (conversation_id, statement, statement_index, "
                    "is_grounded, status, verification_method, risk, verified_at) VALUES "
                    "('c1', :s, :i, 0, 'unsupported', 'unsupported', 0.5, '2026-01-01')"
                ),
                {"s": said, "i": i},
            )
    upgrade_to_head(sqlite_url)
    with read_session(engine) as s:
        hashes = s.execute(
            text("SELECT statement_hash FROM statement_check ORDER BY statement_index")
        ).all()
    assert [h[0] for h in hashes] == [content_hash("Takes aspirin."), None]
