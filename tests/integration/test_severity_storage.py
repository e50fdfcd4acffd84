"""Kind and severity of flagged statements on SQLite and PostgreSQL: migration 0003 classifies
the statements stored before it, the values are stored with each statement check, and the
review queue sorts and counts by them in SQL."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy.engine import Engine

from core.storage import models as m
from core.storage import repo
from core.storage.db import (
    alembic_config,
    current_revision,
    get_engine,
    read_session,
    write_session,
)

WHEN = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def test_migration_0003_classifies_the_flagged_statements_stored_before_it(db_url: str) -> None:
    engine = get_engine(db_url)
    command.upgrade(alembic_config(db_url), "0002")
    patient = sa.table("patient", sa.column("id"), sa.column("created_at"))
    conversation = sa.table(
        "conversation",
        *(
            sa.column(c)
            for c in (
                "id",
                "external_id",
                "patient_id",
                "query_timestamp",
                "model_used",
                "is_flagged",
                "flagged_statements",
                "total_statements",
                "content_hash",
                "created_at",
                "updated_at",
            )
        ),
    )
    statement = sa.table(
        "statement_check",
        *(
            sa.column(c)
            for c in (
                "conversation_id",
                "statement",
                "statement_index",
                "is_grounded",
                "status",
                "verification_method",
                "reason",
                "supporting_evidence",
                "risk",
                "verified_at",
            )
        ),
    )
    consistency = sa.table(
        "consistency_check",
        *(
            sa.column(c)
            for c in (
                "patient_id",
                "current_conversation_id",
                "check_type",
                "is_consistent",
                "current_statement",
                "severity",
                "checked_at",
            )
        ),
    )
    rows = [
        # (statement, status, reason, evidence)
        ("She takes warfarin 10 mg daily.", "contradicted", "dose differs: 10 mg vs 5 mg", "x"),
        ("She lives alone with her cat.", "unsupported", "no source text similar enough", None),
        ("She stopped metformin.", "unsupported", "the sources do not bear it out", None),
        (None, "unsupported", None, None),  # purged: stays unclassified
        ("She takes warfarin 5 mg daily.", "grounded", None, "Warfarin 5 mg daily."),
    ]
    with engine.begin() as conn:
        conn.execute(sa.insert(patient).values(id="p-1", created_at=WHEN))
        conn.execute(
            sa.insert(conversation).values(
                id="c1",
                external_id="e1",
                patient_id="p-1",
                query_timestamp=WHEN,
                model_used="m",
                is_flagged=True,
                flagged_statements=4,
                total_statements=5,
                content_hash="h",
                created_at=WHEN,
                updated_at=WHEN,
            )
        )
        for i, (said, status, reason, evidence) in enumerate(rows):
            conn.execute(
                sa.insert(statement).values(
                    conversation_id="c1",
                    statement=said,
                    statement_index=i,
                    is_grounded=status == "grounded",
                    status=status,
                    verification_method="unsupported",
                    reason=reason,
                    supporting_evidence=evidence,
                    risk=0.5,
                    verified_at=WHEN,
                )
            )
        conn.execute(
            sa.insert(consistency).values(
                patient_id="p-1",
                current_conversation_id="c1",
                check_type="entity_consistency",
                is_consistent=False,
                current_statement="She stopped metformin.",
                severity="high",
                checked_at=WHEN,
            )
        )
    command.upgrade(alembic_config(db_url), "0003")
    assert current_revision(engine) == "0003"
    with read_session(engine) as s:
        got = s.execute(
            sa.text("SELECT kind, severity FROM statement_check ORDER BY statement_index")
        ).all()
    assert [tuple(r) for r in got] == [
        ("number", "critical"),
        ("invented", "low"),
        ("earlier_answer", "high"),
        (None, None),
        (None, None),
    ]


def _bundle(ext: str, model: str, patient: str, flags: list[tuple[str, str | None, float]]) -> Any:
    conv = m.Conversation(
        id="",
        external_id=ext,
        patient_id=patient,
        query="q",
        query_timestamp=WHEN,
        answer="a",
        model_used=model,
        is_flagged=True,
        content_hash=ext,
    )
    stmts = [
        m.StatementCheck(
            conversation_id="",
            statement=f"statement {i}",
            statement_index=i,
            is_grounded=False,
            status="unsupported",
            verification_method="unsupported",
            risk=risk,
            kind=kind,
            severity=severity,
        )
        for i, (kind, severity, risk) in enumerate(flags)
    ]
    return repo.ConversationBundle(conversation=conv, statements=stmts)


def test_kind_and_severity_are_stored_sorted_and_counted(engine: Engine) -> None:
    with write_session(engine) as s:
        repo.store_conversation(
            session=s,
            bundle=_bundle(
                "e1", "model-a", "p-1", [("invented", "low", 0.9), ("number", "critical", 0.6)]
            ),
        )
        repo.store_conversation(
            session=s,
            bundle=_bundle("e2", "model-b", "p-2", [("side", "high", 0.7), ("drug", None, 0.95)]),
        )
    with read_session(engine) as s:
        rows, total = repo.flagged_statements(session=s, order="severity", limit=10)
        by_risk, _ = repo.flagged_statements(session=s, limit=10)
        only, n_only = repo.flagged_statements(
            session=s, order="severity", severities=("high", "unclassified")
        )
        facets = repo.queue_facets(session=s, kinds=("number", "side"))
        all_facets = repo.queue_facets(session=s, patients=False)
    assert total == 4
    # most severe first, then riskiest; unclassified last whatever its risk
    assert [(r.severity, r.kind) for r in rows] == [
        ("critical", "number"),
        ("high", "side"),
        ("low", "invented"),
        (None, "drug"),
    ]
    assert [r.risk for r in by_risk] == [0.95, 0.9, 0.7, 0.6]
    assert n_only == 2
    assert {r.severity for r in only} == {"high", None}
    # each facet counts under the other filters but not its own
    assert facets["kind"] == {"invented": 1, "number": 1, "side": 1, "drug": 1}
    assert facets["severity"] == {"critical": 1, "high": 1}
    assert facets["model"] == {"model-a": 1, "model-b": 1}
    assert facets["patient"] == {"p-1": 1, "p-2": 1}
    assert all_facets["severity"] == {"critical": 1, "high": 1, "low": 1, "unclassified": 1}
    assert "patient" not in all_facets


def test_a_verdict_can_be_taken_back_by_its_reviewer_only(engine: Engine) -> None:
    with write_session(engine) as s:
        repo.store_conversation(
            session=s, bundle=_bundle("e1", "model-a", "p-1", [("number", "critical", 0.6)])
        )
    with read_session(engine) as s:
        (row,), _ = repo.flagged_statements(session=s, review_state="unreviewed")
    with write_session(engine) as s:
        review = repo.create_review(
            session=s, statement_check_id=row.statement_check_id, reviewer="Dr. A", verdict="unsure"
        )
        review_id = int(review.id or 0)
    with write_session(engine) as s:
        with pytest.raises(LookupError):
            repo.delete_review(session=s, review_id=review_id, reviewer="Dr. B")
    with write_session(engine) as s:
        repo.delete_review(session=s, review_id=review_id, reviewer="Dr. A")
    with read_session(engine) as s:
        _, left = repo.flagged_statements(session=s, review_state="unreviewed")
    assert left == 1


@pytest.mark.model
def test_the_pipeline_stores_each_flag_with_its_kind_and_severity(sqlite_engine: Engine) -> None:
    from core.config import load_settings
    from core.pipeline import QualityPipeline
    from core.records import ConversationRecord

    record = ConversationRecord.model_validate(
        {
            "id": "r-1",
            "patient_id": "p-1",
            "timestamp": WHEN.isoformat(),
            "query": "Summarise the visit.",
            "answer": "She takes warfarin 10 mg daily. She has no known drug allergies. "
            "She had a left knee replacement. She keeps two cats at home.",
            "sources": [
                {
                    "id": "note-1",
                    "text": "Medications: warfarin 5 mg daily. Allergies: sulfa (rash). "
                    "Status post right knee replacement in 2019. Lives with her husband.",
                    "type": "note",
                }
            ],
        }
    )
    pipeline = QualityPipeline(settings=load_settings(), engine=sqlite_engine, nli=None, llm=None)
    report = pipeline.process(record)
    assert "severity" not in report.checks  # present only when classification failed
    with read_session(sqlite_engine) as s:
        rows = s.execute(
            sa.select(
                m.StatementCheck.status, m.StatementCheck.kind, m.StatementCheck.severity
            ).order_by(m.StatementCheck.statement_index)
        ).all()
    assert [tuple(r) for r in rows] == [
        ("contradicted", "number", "critical"),  # an anticoagulant dose
        ("contradicted", "allergy", "critical"),  # a denied allergy
        ("contradicted", "side", "high"),  # the side of a procedure
        ("unsupported", "invented", "low"),  # an invented social-history detail
    ]
