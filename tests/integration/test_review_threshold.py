"""The review threshold applied from the calibration page, on SQLite and PostgreSQL: stored
with its history, validated, and used from then on for an answer's flagged statements and for
the review queue (the stored statuses never change)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

from core.config import load_settings
from core.pipeline import QualityPipeline, statement_risk
from core.records import ConversationRecord
from core.storage import models as m
from core.storage import repo, thresholds
from core.storage.db import read_session, write_session

NOTE = "He takes lisinopril 10 mg daily. Allergies: none known."


def rec(i: int) -> ConversationRecord:
    return ConversationRecord.model_validate(
        {
            "id": f"t-{i}",
            "patient_id": "p-1",
            "timestamp": datetime(2026, 3, 1 + i, 9, tzinfo=UTC).isoformat(),
            "query": "Which medicines does he take?",
            "answer": "He takes lisinopril 10 mg daily. He also takes warfarin 5 mg daily.",
            "sources": [{"id": "note", "text": NOTE, "type": "note"}],
            "model": "model-a",
        }
    )


def pipeline(engine: Engine) -> QualityPipeline:
    # the lexical tiers alone: quick, and they leave the warfarin statement unsupported
    settings = load_settings(enable_epistemic_verification=False)
    return QualityPipeline(
        settings=settings, engine=engine, embedder=None, nli=None, learned=None, llm=None
    )


def flagged_statements(engine: Engine, report: object) -> int:
    """The stored answer's count of flagged statements."""
    with read_session(engine) as s:
        conv = s.get(m.Conversation, report.conversation_id)  # type: ignore[attr-defined]
        assert conv is not None
        return int(conv.flagged_statements)


def queue_total(engine: Engine) -> int:
    with read_session(engine) as s:
        return repo.flagged_statements(session=s, review_state="all")[1]


def test_values_are_validated_and_the_history_kept(engine: Engine) -> None:
    with write_session(engine) as s:
        assert thresholds.review_threshold(session=s) is None
        with pytest.raises(ValueError, match="between 0.25"):
            thresholds.apply_review_threshold(session=s, value=0.1, actor="ada")
        with pytest.raises(ValueError, match="between 0.25"):
            thresholds.apply_review_threshold(session=s, value=1.5, actor="ada")
        with pytest.raises(ValueError, match="name of who"):
            thresholds.apply_review_threshold(session=s, value=0.5, actor="  ")
        thresholds.apply_review_threshold(session=s, value=0.5, actor="ada", reason="first")
        thresholds.apply_review_threshold(session=s, value=0.65, actor="bo", reason="second")
        assert thresholds.review_threshold(session=s) == pytest.approx(0.65)
        thresholds.apply_review_threshold(session=s, value=None, actor="ada", reason="undo")
        assert thresholds.review_threshold(session=s) is None
        history = thresholds.review_threshold_history(session=s)
    assert [(h.value, h.previous, h.actor) for h in history] == [
        (None, 0.65, "ada"),
        (0.65, 0.5, "bo"),
        (0.5, None, "ada"),
    ]


def test_a_threshold_counts_from_then_on_and_narrows_the_queue(engine: Engine) -> None:
    gp = pipeline(engine)
    first = gp.process(rec(1))
    unsupported = [st for st in first.grounding.statements if st.status != "grounded"]
    assert len(unsupported) == 1
    assert "warfarin" in unsupported[0].statement
    risk = statement_risk(unsupported[0].status, unsupported[0].confidence)
    assert flagged_statements(engine, first) == 1
    assert queue_total(engine) == 1

    # a threshold above the statement's risk: the next answer's statement does not count,
    # and the queue no longer holds either of them; the stored statuses stay as they were
    bar = min(1.0, round(risk + 0.05, 2))
    with write_session(engine) as s:
        thresholds.apply_review_threshold(session=s, value=bar, actor="ada", reason="test")
    second = gp.process(rec(2))
    assert flagged_statements(engine, second) == 0
    assert queue_total(engine) == 0
    with read_session(engine) as s:
        statuses = s.execute(select(m.StatementCheck.status)).scalars().all()
        facets = repo.queue_facets(session=s, review_state="all")
    assert sorted(statuses).count("unsupported") == 2
    assert sum(facets["model"].values()) == 0

    # at or below the risk, it counts again; back to the default restores every flag
    with write_session(engine) as s:
        thresholds.apply_review_threshold(session=s, value=max(0.25, risk), actor="ada")
    assert flagged_statements(engine, gp.process(rec(3))) == 1
    assert queue_total(engine) == 3
    with write_session(engine) as s:
        thresholds.apply_review_threshold(session=s, value=None, actor="ada")
    assert queue_total(engine) == 3
