"""Reads of stored answers: one conversation with its check rows, a patient's history, the
export, and the API's pages of answers and answers by id.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import load_only
from sqlmodel import Session, col

from core.storage.models import (
    ClaimAudit,
    ConfidenceMetric,
    ConsistencyCheck,
    Conversation,
    EntityMention,
    EvidenceValidation,
    Patient,
    Review,
    SelfCheckResult,
    StatementCheck,
)
from core.storage.queries import Filters, _conv_where


@dataclass(slots=True)
class ConversationDetail:
    """One conversation with every check stored for it."""

    conversation: Conversation
    statements: list[StatementCheck]
    consistency: list[ConsistencyCheck]
    confidence: list[ConfidenceMetric]
    evidence: list[EvidenceValidation]
    selfcheck: list[SelfCheckResult]
    claims: list[ClaimAudit]
    reviews: list[Review]


def get_conversation(*, session: Session, conversation_id: str) -> ConversationDetail | None:
    """A conversation by id (or by external id) with all its check rows."""
    conv = session.get(Conversation, conversation_id)
    if conv is None:
        conv = session.execute(
            select(Conversation).where(col(Conversation.external_id) == conversation_id)
        ).scalar_one_or_none()
    if conv is None:
        return None

    def rows(model: Any, *order: Any, col: Any = None) -> list[Any]:
        where = (col if col is not None else model.conversation_id) == conv.id
        return list(session.execute(select(model).where(where).order_by(*order)).scalars())

    return ConversationDetail(
        conversation=conv,
        statements=rows(StatementCheck, StatementCheck.statement_index),
        consistency=rows(
            ConsistencyCheck, ConsistencyCheck.id, col=ConsistencyCheck.current_conversation_id
        ),
        confidence=rows(ConfidenceMetric, ConfidenceMetric.extraction_index),
        evidence=rows(EvidenceValidation, EvidenceValidation.id),
        selfcheck=rows(SelfCheckResult, SelfCheckResult.id),
        claims=rows(ClaimAudit, ClaimAudit.id),
        reviews=rows(Review, Review.created_at),
    )


def recent_conversations(
    *, session: Session, filters: Filters = Filters(), limit: int = 200
) -> list[Conversation]:
    """Newest conversations matching the filter (for pickers)."""
    stmt = (
        select(Conversation)
        .where(*_conv_where(filters))
        .order_by(col(Conversation.query_timestamp).desc())
        .limit(limit)
    )
    return list(session.execute(stmt).scalars())


def patient_history(*, session: Session, patient_id: str, limit: int = 500) -> list[Conversation]:
    """One patient's conversations, oldest first."""
    stmt = (
        select(Conversation)
        .where(col(Conversation.patient_id) == patient_id)
        .order_by(col(Conversation.query_timestamp))
        .limit(limit)
    )
    return list(session.execute(stmt).scalars())


@dataclass(frozen=True, slots=True)
class PatientAnswer:
    """One answer on a patient's page: its ids, time, model, question and scores."""

    id: str
    external_id: str
    timestamp: datetime
    model: str
    query: str | None
    grounding: float | None
    consistency: float | None
    confidence: float | None
    risk: float | None
    flagged: bool


def patient_answers(
    *, session: Session, patient_id: str, filters: Filters = Filters(), limit: int = 500
) -> list[PatientAnswer]:
    """One patient's answers within the filter's time range and models, oldest first: the
    newest ``limit`` of them, with the columns the patients page shows, selected in SQL."""
    c = Conversation
    conds: list[Any] = [col(c.patient_id) == patient_id]
    if filters.start is not None:
        conds.append(col(c.query_timestamp) >= filters.start)
    if filters.end is not None:
        conds.append(col(c.query_timestamp) < filters.end)
    if filters.models:
        conds.append(col(c.model_used).in_(filters.models))
    newest = (
        select(
            col(c.id),
            col(c.external_id),
            col(c.query_timestamp),
            col(c.model_used),
            col(c.query),
            col(c.grounding_score),
            col(c.consistency_score),
            col(c.confidence_score),
            col(c.hallucination_risk),
            col(c.is_flagged),
        )
        .where(*conds)
        .order_by(col(c.query_timestamp).desc(), col(c.id).desc())
        .limit(limit)
        .subquery()
    )
    stmt = select(newest).order_by(newest.c.query_timestamp, newest.c.id)
    return [PatientAnswer(*r) for r in session.execute(stmt)]


def entity_timeline(
    *, session: Session, patient_id: str, before: datetime | None = None
) -> list[EntityMention]:
    """The patient's clinical entity mentions in time order (optionally before a moment)."""
    conds = [col(EntityMention.patient_id) == patient_id]
    if before is not None:
        conds.append(col(EntityMention.at) < before)
    stmt = (
        select(EntityMention).where(*conds).order_by(col(EntityMention.at), col(EntityMention.id))
    )
    return list(session.execute(stmt).scalars())


def patient_contradictions(*, session: Session, patient_id: str) -> list[ConsistencyCheck]:
    """Inconsistencies found for a patient, newest first."""
    stmt = (
        select(ConsistencyCheck)
        .where(
            col(ConsistencyCheck.patient_id) == patient_id,
            col(ConsistencyCheck.is_consistent).is_(False),
        )
        .order_by(col(ConsistencyCheck.checked_at).desc())
    )
    return list(session.execute(stmt).scalars())


def iter_export(
    *, session: Session, patient_id: str | None = None, since: datetime | None = None
) -> Iterator[dict[str, Any]]:
    """Records with their scores, statement checks and contradictions, oldest first."""
    conds: list[Any] = []
    if patient_id is not None:
        conds.append(Conversation.patient_id == patient_id)
    if since is not None:
        conds.append(Conversation.query_timestamp >= since)
    stmt = (
        select(Conversation)
        .where(*conds)
        .order_by(col(Conversation.query_timestamp), col(Conversation.id))
    )
    for conv in session.execute(stmt).scalars():
        detail = get_conversation(session=session, conversation_id=conv.id)
        assert detail is not None
        yield {
            "id": conv.external_id,
            "conversation_id": conv.id,
            "patient_id": conv.patient_id,
            "timestamp": conv.query_timestamp.isoformat(),
            "model": conv.model_used,
            "query": conv.query,
            "answer": conv.answer,
            "grounding_score": conv.grounding_score,
            "consistency_score": conv.consistency_score,
            "confidence_score": conv.confidence_score,
            "hallucination_risk": conv.hallucination_risk,
            "overall_quality": conv.overall_quality,
            "risk_level": conv.risk_level,
            "is_flagged": conv.is_flagged,
            "checks": conv.check_status,
            "warnings": conv.warnings,
            "statement_checks": [
                {
                    "index": s.statement_index,
                    "text": s.statement,
                    "status": s.status,
                    "verification_method": s.verification_method,
                    "confidence": s.grounding_confidence,
                    "source_id": s.source_chunk_id,
                    "evidence": s.supporting_evidence,
                    "kind": s.kind,
                    "severity": s.severity,
                }
                for s in detail.statements
            ],
            "contradictions": [
                {
                    "check_type": c.check_type,
                    "severity": c.severity,
                    "current_statement": c.current_statement,
                    "previous_statement": c.previous_statement,
                    "previous_conversation_id": c.previous_conversation_id,
                    "explanation": c.inconsistency_description,
                }
                for c in detail.consistency
                if not c.is_consistent
            ],
        }


def patient_exists(*, session: Session, patient_id: str) -> bool:
    """Whether the patient id is known."""
    return session.get(Patient, patient_id) is not None


@dataclass(slots=True)
class AnswerRows:
    """A stored answer with its statement checks and the contradictions found for it."""

    conversation: Conversation
    statements: list[StatementCheck]
    contradictions: list[ConsistencyCheck]


def answers_by_ids(*, session: Session, conversation_ids: Sequence[str]) -> dict[str, AnswerRows]:
    """The stored answers among ``conversation_ids`` (id -> rows), three queries per chunk of
    500 whatever their number."""
    out: dict[str, AnswerRows] = {}
    unique = sorted(set(conversation_ids))
    for start in range(0, len(unique), 500):
        chunk = unique[start : start + 500]
        for conv in session.execute(
            select(Conversation).where(col(Conversation.id).in_(chunk))
        ).scalars():
            out[str(conv.id)] = AnswerRows(conv, [], [])
        statements = select(StatementCheck).where(col(StatementCheck.conversation_id).in_(chunk))
        for st in session.execute(
            statements.order_by(
                col(StatementCheck.conversation_id), col(StatementCheck.statement_index)
            )
        ).scalars():
            out[str(st.conversation_id)].statements.append(st)
        found = select(ConsistencyCheck).where(
            col(ConsistencyCheck.current_conversation_id).in_(chunk),
            col(ConsistencyCheck.is_consistent).is_(False),
        )
        for c in session.execute(found.order_by(col(ConsistencyCheck.id))).scalars():
            out[str(c.current_conversation_id)].contradictions.append(c)
    return out


@dataclass(frozen=True, slots=True)
class AnswerSummary:
    """One line of a list of answers: its conversation row with only the columns a list
    shows loaded (ids, time, model, scores, flag, statement counts); reading any other, such as
    the record text, raises."""

    conversation: Conversation


# the columns a list of answers shows (core.storage.public.AnswerSummaryPublic)
_SUMMARY_COLUMNS: tuple[Any, ...] = (
    Conversation.external_id,
    Conversation.patient_id,
    Conversation.query_timestamp,
    Conversation.model_used,
    Conversation.grounding_score,
    Conversation.consistency_score,
    Conversation.confidence_score,
    Conversation.hallucination_risk,
    Conversation.overall_quality,
    Conversation.risk_level,
    Conversation.is_flagged,
    Conversation.flagged_statements,
    Conversation.total_statements,
)


def answer_page(
    *,
    session: Session,
    patient_id: str | None = None,
    model: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    flagged: bool | None = None,
    after: tuple[datetime, str] | None = None,
    limit: int = 50,
    where: Sequence[Any] = (),
) -> list[AnswerSummary]:
    """A page of answers, newest first, filtered and paged in SQL (keyset on timestamp and
    conversation id: ``after`` is the (timestamp, conversation id) of the previous page's last
    answer). ``since`` is inclusive, ``until`` exclusive; ``where``: further conditions on
    ``conversation`` (a full-text search, :func:`core.storage.search.text_condition`)."""
    conds: list[Any] = list(where)
    if patient_id is not None:
        conds.append(Conversation.patient_id == patient_id)
    if model is not None:
        conds.append(Conversation.model_used == model)
    if since is not None:
        conds.append(Conversation.query_timestamp >= since)
    if until is not None:
        conds.append(Conversation.query_timestamp < until)
    if flagged is not None:
        conds.append(col(Conversation.is_flagged).is_(flagged))
    if after is not None:
        at, last_id = after
        conds.append(
            (Conversation.query_timestamp < at)
            | ((Conversation.query_timestamp == at) & (Conversation.id < last_id))
        )
    stmt = (
        select(Conversation)
        .options(load_only(*_SUMMARY_COLUMNS, raiseload=True))
        .where(*conds)
        .order_by(col(Conversation.query_timestamp).desc(), col(Conversation.id).desc())
        .limit(limit)
    )
    return [AnswerSummary(conv) for conv in session.execute(stmt).scalars()]


__all__ = [
    "answer_page",
    "AnswerRows",
    "answers_by_ids",
    "AnswerSummary",
    "ConversationDetail",
    "entity_timeline",
    "get_conversation",
    "iter_export",
    "patient_contradictions",
    "patient_exists",
    "patient_answers",
    "PatientAnswer",
    "patient_history",
    "recent_conversations",
]
