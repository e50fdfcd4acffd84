"""Retention: `groundwatch purge` removes old record text, keeps scores and verdicts, audited,
in one transaction, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlmodel import col
from typer.testing import CliRunner

from core import retention
from core.cli import app
from core.storage import models as m
from core.storage import repo
from core.storage.db import read_session, write_session
from core.text import content_hash

runner = CliRunner()
NOW = datetime.now(UTC)
SENTINEL = "ZQX-SENTINEL-PURGE"


def store(engine: Engine, ext: str, *, days_ago: int) -> str:
    at = NOW - timedelta(days=days_ago)
    conv = m.Conversation(
        id="",
        external_id=ext,
        patient_id="p-1",
        query=f"{SENTINEL} what does {ext} take?",
        query_timestamp=at,
        answer=f"{SENTINEL} takes metformin 500 mg.",
        model_used="model-a",
        sources=[{"id": "s-1", "text": f"{SENTINEL} metformin 500 mg", "type": "note"}],
        samples=[f"{SENTINEL} sample"],
        evidence={"meds": [f"{SENTINEL} quote"]},
        grounding_score=0.5,
        consistency_score=0.9,
        confidence_score=0.7,
        hallucination_risk=0.4,
        overall_quality=0.6,
        is_flagged=True,
        flagged_statements=1,
        total_statements=1,
        content_hash=content_hash(ext),
    )
    bundle = repo.ConversationBundle(conversation=conv)
    bundle.statements.append(
        m.StatementCheck(
            conversation_id="",
            statement=f"{SENTINEL} takes metformin 500 mg.",
            statement_index=0,
            start=0,
            end=30,
            is_grounded=False,
            status="unsupported",
            supporting_evidence=f"{SENTINEL} evidence",
            grounding_confidence=0.6,
            verification_method="unsupported",
            risk=0.55,
        )
    )
    bundle.claims.append(
        m.ClaimAudit(
            conversation_id="", claim_id="c1", claim_text=f"{SENTINEL} claim", evidence_support=0.3
        )
    )
    bundle.selfcheck.append(
        m.SelfCheckResult(
            conversation_id="",
            method="ngram",
            status="ok",
            sample_count=1,
            sentence_scores=[{"index": 0, "text": SENTINEL, "score": 0.4}],
            risk_score=0.4,
        )
    )
    bundle.mentions.append(
        m.EntityMention(
            patient_id="p-1",
            conversation_id="",
            at=at,
            kind="medication",
            name="metformin",
            assertion="present",
            statement=f"{SENTINEL} m",
        )
    )
    with write_session(engine) as s:
        out = repo.store_conversation(session=s, bundle=bundle)
        sc = s.execute(
            select(m.StatementCheck).where(
                col(m.StatementCheck.conversation_id) == out.conversation_id
            )
        ).scalar_one()
        repo.create_review(
            session=s,
            statement_check_id=int(sc.id),
            reviewer="dr-a",
            verdict="confirmed",
            note="checked",
        )
    return out.conversation_id


def texts(engine: Engine, conv_id: str) -> list[object]:
    with read_session(engine) as s:
        d = repo.get_conversation(session=s, conversation_id=conv_id)
        assert d is not None
        c = d.conversation
        mention = s.execute(
            select(m.EntityMention).where(col(m.EntityMention.conversation_id) == conv_id)
        ).scalar_one()
        return [
            c.query,
            c.answer,
            c.sources,
            c.samples,
            c.evidence,
            d.statements[0].statement,
            d.statements[0].supporting_evidence,
            d.claims[0].claim_text,
            d.selfcheck[0].sentence_scores,
            mention.statement,
        ]


def test_purge_removes_old_text_keeps_scores_and_verdicts(
    engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    old = store(engine, "old-1", days_ago=400)
    recent = store(engine, "new-1", days_ago=5)
    caplog.set_level(logging.DEBUG)
    dry = retention.purge_expired(engine=engine, older_than_days=365, actor="t", dry_run=True)
    assert dry.purged == 1
    assert dry.audit_event_id is None
    assert all(v is not None for v in texts(engine, old))

    result = retention.purge_expired(engine=engine, older_than_days=365, actor="admin-1")
    assert result.purged == 1
    assert result.audit_event_id is not None
    assert all(v is None for v in texts(engine, old))
    assert all(v is not None for v in texts(engine, recent))
    with read_session(engine) as s:
        d = repo.get_conversation(session=s, conversation_id=old)
        assert d is not None
        c = d.conversation
        assert c.text_purged_at is not None
        assert (c.grounding_score, c.hallucination_risk, c.overall_quality) == (0.5, 0.4, 0.6)
        assert d.statements[0].status == "unsupported"
        assert d.statements[0].risk == 0.55
        assert d.statements[0].start == 0
        assert d.statements[0].end == 30
        assert [r.verdict for r in d.reviews] == ["confirmed"]
        assert d.claims[0].evidence_support == 0.3
        assert d.selfcheck[0].risk_score == 0.4
        assert repo.kpis(session=s).conversations == 2
        events = repo.list_audit_events(session=s, action="purge")
    assert len(events) == 1
    assert events[0].actor == "admin-1"
    assert events[0].detail["purged"] == 1
    assert events[0].detail["older_than_days"] == 365
    assert SENTINEL not in caplog.text

    again = retention.purge_expired(engine=engine, older_than_days=365, actor="admin-1")
    assert again.purged == 0


def test_purge_is_one_transaction(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    old = store(engine, "old-2", days_ago=100)

    def broken_audit(**_: object) -> None:
        raise RuntimeError("audit store down")

    monkeypatch.setattr(repo, "record_audit", broken_audit)
    with pytest.raises(RuntimeError, match="audit store down"):
        retention.purge_expired(engine=engine, older_than_days=30, actor="admin")
    assert all(v is not None for v in texts(engine, old))  # rolled back with the audit


def test_purge_validates_arguments(engine: Engine) -> None:
    with pytest.raises(ValueError, match="between 1 and"):
        retention.purge_expired(engine=engine, older_than_days=0, actor="a")
    with pytest.raises(ValueError, match="actor"):
        retention.purge_expired(engine=engine, older_than_days=3, actor=" ")
    cut = retention.retention_cutoff(10, now=datetime(2026, 1, 11))
    assert cut == datetime(2026, 1, 1, tzinfo=UTC)


def test_purge_cli(use_db: str, engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    old = store(engine, "old-3", days_ago=60)
    store(engine, "new-3", days_ago=1)
    res = runner.invoke(app, ["purge", "--older-than", "30", "--dry-run", "--json"])
    assert res.exit_code == 0, res.stdout
    assert json.loads(res.stdout)["purged"] == 1
    assert texts(engine, old)[1] is not None
    res = runner.invoke(app, ["purge", "--older-than", "30", "--json"])
    assert res.exit_code == 0, res.stdout
    body = json.loads(res.stdout)
    assert body["purged"] == 1
    assert body["dry_run"] is False
    assert texts(engine, old)[1] is None
    with read_session(engine) as s:
        (event,) = repo.list_audit_events(session=s, action="purge")
    assert event.actor.startswith("cli")
    res = runner.invoke(app, ["purge", "--json"])
    assert res.exit_code == 1
    assert "--older-than" in json.loads(res.stdout)["message"]
    res = runner.invoke(app, ["purge", "--older-than", "0"])
    assert res.exit_code != 0
    assert "Traceback" not in res.stdout + res.stderr
    monkeypatch.setenv("GROUNDWATCH_RETENTION_DAYS", "30")
    from core.config import reset_settings_cache

    reset_settings_cache()
    res = runner.invoke(app, ["purge"])
    assert res.exit_code == 0
    assert "purged the text of 0 conversation(s)" in res.stdout


def _put_caches(engine: Engine) -> tuple[repo.DbEmbeddingStore, repo.DbLLMCache]:
    import numpy as np

    from core.backends.llm import ChatResponse

    vector = np.arange(4, dtype=np.float32)
    store_ = repo.DbEmbeddingStore(engine)
    store_.put_many("all-MiniLM-L6-v2", {"h-1": vector, "h-2": vector})
    store_.put_many("all-MiniLM-L6-v2-bf16", {"h-1": vector})
    cache = repo.DbLLMCache(engine, purpose="judge")
    cache.put("k-1", ChatResponse(f"{SENTINEL} reply", "m", 10, 5, 12.0, False, "stop"))
    cache.put("k-2", ChatResponse(f"{SENTINEL} reply", "m", 10, 5, 12.0, False, "stop"))
    return store_, cache


def test_purge_drops_the_caches_whenever_they_were_written(engine: Engine) -> None:
    """Records dated long ago but imported today: their embeddings and LLM responses are
    cached today, after the cutoff. The caches are keyed by text hash, not by record, so a
    purge that removes record text drops every cached embedding (of any model) and clears
    every cached LLM response, keeping the token accounting."""
    store(engine, "old-c", days_ago=400)
    store_, cache = _put_caches(engine)  # written now, after the cutoff

    dry = retention.purge_expired(engine=engine, older_than_days=365, actor="t", dry_run=True)
    assert (dry.cached_embeddings, dry.cached_llm_responses) == (3, 2)
    assert store_.get_many("all-MiniLM-L6-v2-bf16", ["h-1"])  # a dry run changes nothing

    result = retention.purge_expired(engine=engine, older_than_days=365, actor="admin")
    assert (result.purged, result.cached_embeddings, result.cached_llm_responses) == (1, 3, 2)
    assert store_.get_many("all-MiniLM-L6-v2", ["h-1", "h-2"]) == {}
    assert store_.get_many("all-MiniLM-L6-v2-bf16", ["h-1"]) == {}
    assert cache.get("k-1") is None  # a cleared response is a cache miss
    with read_session(engine) as s:
        calls = {c.cache_key: c for c in s.execute(select(m.LLMCall)).scalars()}
        (event,) = repo.list_audit_events(session=s, action="purge")
    assert calls["k-1"].response_text is None
    assert calls["k-1"].prompt_tokens == 10  # the accounting stays
    assert event.detail["cached_embeddings"] == 3
    assert event.detail["cached_llm_responses"] == 2


def test_purge_with_nothing_to_purge_keeps_the_caches(engine: Engine) -> None:
    store(engine, "recent-c", days_ago=3)
    store_, cache = _put_caches(engine)
    result = retention.purge_expired(engine=engine, older_than_days=365, actor="admin")
    assert (result.purged, result.cached_embeddings, result.cached_llm_responses) == (0, 0, 0)
    assert store_.get_many("all-MiniLM-L6-v2", ["h-1"]).keys() == {"h-1"}
    hit = cache.get("k-1")
    assert hit is not None
    assert hit.text == f"{SENTINEL} reply"


# Text-like columns that hold no patient text, each with the reason. Any other string, text or
# JSON column must be tagged as patient text (models._patient_text), so that a new text column
# fails this test until retention knows about it.
NOT_PATIENT_TEXT = {
    "audit_event": {"actor", "action", "target_type", "target_id", "detail"},  # counts, ids
    "setting_change": {"name", "actor", "reason"},  # a dashboard setting, who set it and why
    "embedding_cache": {"model", "content_hash", "vector"},  # a cache: purged wholesale
    "llm_call": {"cache_key", "model", "response_text", "finish_reason", "purpose"},  # ditto
    "patient": {"id"},
    "quality_daily": {"model_used", "patient_id"},
    "quality_daily_model": {"model_used"},
    "conversation": {
        "id",
        "external_id",
        "patient_id",
        "query_intent",  # a label from a fixed set
        "model_used",
        "risk_level",
        "feature_flags",
        "check_status",  # statuses and their reasons, written without record text
        "content_hash",
    },
    "claim_audit": {"conversation_id", "claim_id", "evidence_ids", "flag_reason", "gap_type"},
    "confidence_metric": {"conversation_id", "uncertainty_level"},
    "consistency_check": {
        "patient_id",
        "current_conversation_id",
        "previous_conversation_id",
        "check_type",
        "severity",
    },
    # name: the drug or condition (a vocabulary term) that the timeline of consistency needs
    "entity_mention": {
        "patient_id",
        "conversation_id",
        "kind",
        "name",
        "assertion",
        "action",
        "unit",
    },
    "evidence_validation": {
        "conversation_id",
        "transcript_hash",
        "mode",
        "status",
        "rejected_by_domain",  # counts per domain
        "failure_category",
    },
    "selfcheck_result": {"conversation_id", "method", "status", "reason", "model", "risk_level"},
    # statement_hash: the statement's identity that verdicts follow, kept through a purge
    # kind, severity: labels from a fixed set (core.severity)
    "statement_check": {
        "conversation_id",
        "status",
        "source_chunk_id",
        "verification_method",
        "statement_hash",
        "kind",
        "severity",
        "model_used",  # copies of the conversation's own (not patient text there either)
        "patient_id",
    },
    "review": {"conversation_id", "reviewer", "verdict"},
    # an API key's name (who uses it), the SHA-256 of its token and its scopes
    "api_key": {"name", "token_hash", "scopes"},
    # a 12-char hash of a user name typed at the dashboard's login (never the name itself)
    "login_lock": {"login_key"},
    # a queued answer: ids, the 12-char hash of its record, the key that sent it, the outcome,
    # and its last error (class and a message written without record text, core.queue)
    "ingest_job": {
        "external_id",
        "conversation_id",
        "payload_hash",
        "submitted_by",
        "outcome",
        "error_class",
        "error_message",
    },
    # an alert's rule, condition (rule and model or patient id), ids, counts and who acted
    "alert_firing": {
        "rule",
        "kind",
        "condition_key",
        "state",
        "model",
        "patient_id",
        "counts",
        "conversation_ids",
        "acknowledged_by",
        "resolved_by",
    },
    # a delivery attempt: the webhook's name, the error's class, the outcome
    "alert_delivery": {"webhook", "error_class", "outcome"},
    # a re-scoring run: its id, the verifier's version and settings hash, the selection (dates,
    # model, patient id, file paths), its state; each result: ids, the change, and why the
    # checks could not run (an error type or a fixed sentence, core.rescore)
    "rescore_run": {"id", "verifier_version", "settings_hash", "source", "filters", "status"},
    "rescore_result": {"run_id", "conversation_id", "change", "reason"},
}


def test_every_text_column_is_tagged_or_known_to_hold_no_patient_text() -> None:
    from sqlalchemy import JSON, LargeBinary, String, Text

    tagged = {(t.name, c) for t, c, _ in m.patient_text_columns()}
    untagged = []
    for table in m.SQLModel.metadata.sorted_tables:
        for column in table.columns:
            textual = isinstance(column.type, (String, Text, JSON, LargeBinary))
            if not textual or (table.name, column.name) in tagged:
                continue
            if column.name not in NOT_PATIENT_TEXT.get(table.name, set()):
                untagged.append(f"{table.name}.{column.name}")
    assert untagged == [], "tag these columns as patient text or list them with a reason"
    for table, column, owners in m.patient_text_columns():
        assert all(o in table.c for o in owners), (table.name, column, owners)


def test_after_a_purge_no_table_holds_the_record_text(engine: Engine) -> None:
    """Every row of every table, every column, read back: the purged record's text is gone
    wherever the schema put it (whatever the tags say)."""
    old = store(engine, "old-s", days_ago=400)
    with write_session(engine) as s:
        s.add(
            m.ConsistencyCheck(
                patient_id="p-1",
                current_conversation_id=old,
                check_type="entity",
                is_consistent=False,
                inconsistency_description=f"{SENTINEL} dose differs",
                current_statement=f"{SENTINEL} now",
                previous_statement=f"{SENTINEL} before",
                entity=f"{SENTINEL} drug",
            )
        )
        s.add(
            m.ConfidenceMetric(
                conversation_id=old,
                aggregate_confidence=0.5,
                uncertainty_explanation=f"{SENTINEL} hedged",
            )
        )
        review = s.execute(select(m.Review)).scalars().first()
        assert review is not None
        review.note = f"{SENTINEL} note"
        s.add(review)
        s.add(queued("dead-old", days_ago=400))  # a queued answer never stored (dead-letter)
    retention.purge_expired(engine=engine, older_than_days=365, actor="admin")
    left = []
    with read_session(engine) as s:
        for table in m.SQLModel.metadata.sorted_tables:
            for row in s.execute(select(table)).mappings():
                left += [f"{table.name}.{k}" for k, v in row.items() if SENTINEL in str(v)]
    assert left == []


def queued(ext: str, *, days_ago: int) -> m.IngestJob:
    """A queued answer that no worker stored (in dead-letter, or never run)."""
    return m.IngestJob(
        external_id=ext,
        conversation_id=repo.conversation_id_for(ext),
        payload={"id": ext, "answer": f"{SENTINEL} queued answer"},
        payload_hash="0" * 12,
        submitted_by="key-1",
        created_at=datetime.now(UTC) - timedelta(days=days_ago),
        outcome=None,
        error_class="ValueError",
        error_message="a record that keeps failing",
    )


def test_purge_clears_queued_records_that_were_never_stored(engine: Engine) -> None:
    with write_session(engine) as s:
        s.add_all([queued("q-old", days_ago=400), queued("q-new", days_ago=3)])
    dry = retention.purge_expired(engine=engine, older_than_days=365, actor="a", dry_run=True)
    assert dry.queued_records == 1
    result = retention.purge_expired(engine=engine, older_than_days=365, actor="admin")
    assert result.queued_records == 1
    assert result.to_dict()["queued_records"] == 1
    with read_session(engine) as s:
        rows = {r.external_id: r for r in s.execute(select(m.IngestJob)).scalars()}
        event = s.execute(select(m.AuditEvent).where(m.AuditEvent.action == "purge")).scalar_one()
    assert rows["q-old"].payload is None
    assert rows["q-old"].outcome == "purged"
    assert rows["q-old"].finished_at is not None
    assert rows["q-new"].payload is not None  # within the retention period: kept
    assert event.detail["queued_records"] == 1
    again = retention.purge_expired(engine=engine, older_than_days=365, actor="admin")
    assert again.queued_records == 0
