"""SQLModel tables (phase 9 schema, extended): one class per table.

Scores are floats in [0, 1] enforced by CHECK constraints. Child rows cascade with their
conversation. Timestamps are timezone-aware UTC (:class:`UTCDateTime`).
"""

from __future__ import annotations

from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.orm import Mapper
from sqlmodel import Field, SQLModel

from core.storage.types import JSONType, UTCDateTime, utcnow


def _score_check(table: str, *cols: str) -> list[CheckConstraint]:
    return [
        CheckConstraint(f"{c} IS NULL OR ({c} >= 0 AND {c} <= 1)", name=f"ck_{table}_{c}_unit")
        for c in cols
    ]


_FLAGGED = text("status IN ('unsupported', 'contradicted')")
# what the statements' time index carries on PostgreSQL (the queue's order, filters and counts)
STATEMENT_TIME_INCLUDE = ("id", "status", "risk", "kind", "severity", "model_used", "patient_id")
STATEMENT_PATIENT_INCLUDE = ("id", "risk", "kind", "severity", "model_used")


def _ts(nullable: bool = False, index: bool = False) -> Any:
    return Field(
        default_factory=utcnow,
        sa_column=Column(UTCDateTime(), nullable=nullable, index=index),
    )


def _fk(target: str, *, ondelete: str, nullable: bool = False, index: bool = True) -> Any:
    return Column(String(64), ForeignKey(target, ondelete=ondelete), nullable=nullable, index=index)


# Column info key of a column that holds patient text (copied from or derived from a record):
# its value names the columns of the same row that say which conversation the text belongs to.
# Retention (:func:`patient_text_columns`) and the pipeline with conversation history off
# (:func:`strip_patient_text`) derive what to clear from these tags, so a new text column is
# purged and left unstored as soon as it is tagged, and a schema test fails until it is tagged.
PATIENT_TEXT = "patient_text"


def _patient_text(*args: Any, owners: tuple[str, ...]) -> Column[Any]:
    return Column(*args, nullable=True, info={PATIENT_TEXT: owners})


def patient_text_columns() -> list[tuple[Any, str, tuple[str, ...]]]:
    """Every (table, column name, owner columns) tagged as patient text, in table order."""
    return [
        (table, column.name, tuple(column.info[PATIENT_TEXT]))
        for table in SQLModel.metadata.sorted_tables
        for column in table.columns
        if PATIENT_TEXT in column.info
    ]


@cache
def _patient_text_attributes(model: type) -> tuple[str, ...]:
    mapper: Mapper[Any] = sa_inspect(model)
    return tuple(
        prop.key
        for prop in mapper.column_attrs
        if any(PATIENT_TEXT in column.info for column in prop.columns)
    )


def strip_patient_text(row: SQLModel) -> None:
    """Set every column of ``row`` tagged as patient text to ``None`` (in place): what is
    stored of a record when conversation history is off. Scores, statuses, offsets and
    hashes stay."""
    for key in _patient_text_attributes(type(row)):
        setattr(row, key, None)


def _pk() -> Any:
    return Field(
        default=None,
        sa_column=Column(BigInteger().with_variant(Integer(), "sqlite"), primary_key=True),
    )


class Patient(SQLModel, table=True):
    """A patient the answers are about (identified by an opaque id)."""

    __tablename__ = "patient"

    id: str = Field(sa_column=Column(String(64), primary_key=True))
    created_at: datetime = _ts()


class Conversation(SQLModel, table=True):
    """One query and answer about a patient, with its sources and quality scores.

    ``external_id`` is the record id of the import file; storing is idempotent on it.
    """

    __tablename__ = "conversation"
    __table_args__ = (
        *_score_check(
            "conversation",
            "grounding_score",
            "consistency_score",
            "confidence_score",
            "hallucination_risk",
            "overall_quality",
        ),
        # covering on PostgreSQL (migration 0011): the per-model statistics and the review
        # queue's join read a time window from the index alone (both read other tables since
        # migrations 0012 and 0013)
        Index(
            "idx_conversation_timestamp",
            "query_timestamp",
            postgresql_include=[
                "id",
                "model_used",
                "patient_id",
                "is_flagged",
                "grounding_score",
                "consistency_score",
            ],
        ),
        Index("idx_conversation_quality", "grounding_score", "consistency_score"),
        Index("idx_conversation_patient_time", "patient_id", "query_timestamp"),
        Index("idx_conversation_model_time", "model_used", "query_timestamp"),
    )

    id: str = Field(sa_column=Column(String(64), primary_key=True))
    external_id: str = Field(sa_column=Column(String(200), nullable=False, unique=True))
    patient_id: str = Field(sa_column=_fk("patient.id", ondelete="CASCADE", index=True))
    query: str | None = Field(default=None, sa_column=_patient_text(Text, owners=("id",)))
    query_intent: str | None = Field(default=None, sa_column=Column(String(100)))
    query_timestamp: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    answer: str | None = Field(default=None, sa_column=_patient_text(Text, owners=("id",)))
    detailed_summary: str | None = Field(
        default=None, sa_column=_patient_text(Text, owners=("id",))
    )
    model_used: str = Field(default="unknown", sa_column=Column(String(200), nullable=False))
    extractions: Any = Field(default=None, sa_column=_patient_text(JSONType, owners=("id",)))
    sources: Any = Field(default=None, sa_column=_patient_text(JSONType, owners=("id",)))
    samples: Any = Field(default=None, sa_column=_patient_text(JSONType, owners=("id",)))
    evidence: Any = Field(default=None, sa_column=_patient_text(JSONType, owners=("id",)))
    grounding_score: float | None = None
    consistency_score: float | None = None
    confidence_score: float | None = None
    hallucination_risk: float | None = None
    overall_quality: float | None = None
    risk_level: str | None = Field(default=None, sa_column=Column(String(20)))
    is_flagged: bool = Field(default=False, index=True)
    flagged_statements: int = 0
    total_statements: int = 0
    execution_time_ms: int | None = None
    feature_flags: Any = Field(default=None, sa_column=Column(JSONType))
    check_status: Any = Field(default=None, sa_column=Column(JSONType))
    # the checks' warnings name what differs ("dose differs: 20 mg vs 10 mg"): patient text
    warnings: Any = Field(default=None, sa_column=_patient_text(JSONType, owners=("id",)))
    content_hash: str = Field(sa_column=Column(String(64), nullable=False))
    text_purged_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    created_at: datetime = _ts()
    updated_at: datetime = _ts()


class StatementCheck(SQLModel, table=True):
    """One statement of an answer verified against the sources (phase 9 grounding_verification)."""

    __tablename__ = "statement_check"
    __table_args__ = (
        *_score_check("statement_check", "grounding_confidence"),
        CheckConstraint(
            "status IN ('grounded', 'unsupported', 'contradicted')", name="ck_statement_status"
        ),
        Index(
            "idx_grounding_unsupported",
            "is_grounded",
            sqlite_where=text("is_grounded = 0"),
            postgresql_where=text("is_grounded = false"),
        ),
        # The review queue: flagged statements by risk, and their join to conversations.
        Index(
            "idx_statement_flagged_risk",
            "risk",
            "id",
            sqlite_where=_FLAGGED,
            postgresql_where=_FLAGGED,
        ),
        Index(
            "idx_statement_flagged_conversation",
            "conversation_id",
            "risk",
            postgresql_include=["id", "kind", "severity"],  # the queue's filters and order
            sqlite_where=_FLAGGED,
            postgresql_where=_FLAGGED,
        ),
        # The review queue, its filter counts and the risk histogram by date range, without
        # a join to the conversations (migration 0012): on PostgreSQL an index-only scan
        Index(
            "idx_statement_time",
            "query_timestamp",
            postgresql_include=list(STATEMENT_TIME_INCLUDE),
        ),
        # the flagged statements alone by date range (migration 0013): the review queue and
        # its filter counts read a third of the statements the time index holds
        Index(
            "idx_statement_flagged_time",
            "query_timestamp",
            postgresql_include=list(STATEMENT_TIME_INCLUDE),
            sqlite_where=_FLAGGED,
            postgresql_where=_FLAGGED,
        ),
        # and a patient's flagged statements (a patient's queue over all time reads only them)
        Index(
            "idx_statement_patient",
            "patient_id",
            "query_timestamp",
            postgresql_include=list(STATEMENT_PATIENT_INCLUDE),
            sqlite_where=_FLAGGED,
            postgresql_where=_FLAGGED,
        ),
    )

    id: int | None = _pk()
    conversation_id: str = Field(sa_column=_fk("conversation.id", ondelete="CASCADE"))
    statement: str | None = Field(
        default=None, sa_column=_patient_text(Text, owners=("conversation_id",))
    )
    statement_index: int
    # SHA-256 of the statement's text, kept when the text is purged or never stored: with its
    # occurrence among the answer's statements it is the statement's identity, which a
    # clinician's verdict follows when the answer is edited (never the list index)
    statement_hash: str | None = Field(default=None, sa_column=Column(String(64)))
    start: int | None = None
    end: int | None = None
    is_grounded: bool
    status: str = Field(sa_column=Column(String(20), nullable=False))
    source_chunk_id: str | None = Field(default=None, sa_column=Column(String(200)))
    supporting_evidence: str | None = Field(
        default=None, sa_column=_patient_text(Text, owners=("conversation_id",))
    )
    evidence_start: int | None = None
    evidence_end: int | None = None
    grounding_confidence: float | None = None
    verification_method: str = Field(sa_column=Column(String(30), nullable=False))
    reason: str | None = Field(
        default=None, sa_column=_patient_text(Text, owners=("conversation_id",))
    )
    risk: float = Field(default=0.0)
    # what is wrong with a flagged statement (core.severity.KINDS: number, negation, side, drug,
    # condition, allergy, invented, earlier_answer) and what it would cost a patient
    # (critical, high, medium, low; docs/severity.md); NULL for a grounded statement and for
    # one whose text was gone when kinds came (migration 0003): shown as "unclassified"
    kind: str | None = Field(default=None, sa_column=Column(String(20)))
    severity: str | None = Field(default=None, sa_column=Column(String(10)))
    # copies of the answer's time, model and patient (set by core.storage.writes wherever it
    # stores a conversation's rows; an answer's edit writes its statements again), so that
    # the review queue and its filters read this table alone; NULL only on a row written
    # around those functions
    query_timestamp: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    model_used: str | None = Field(default=None, sa_column=Column(String(200)))
    patient_id: str | None = Field(default=None, sa_column=Column(String(64)))
    verified_at: datetime = _ts()


class ConsistencyCheck(SQLModel, table=True):
    """A consistency finding between an answer and the patient's earlier answers."""

    __tablename__ = "consistency_check"
    __table_args__ = (
        *_score_check("consistency_check", "consistency_score"),
        Index(
            "idx_consistency_issues",
            "is_consistent",
            sqlite_where=text("is_consistent = 0"),
            postgresql_where=text("is_consistent = false"),
        ),
    )

    id: int | None = _pk()
    patient_id: str = Field(sa_column=_fk("patient.id", ondelete="CASCADE"))
    current_conversation_id: str = Field(sa_column=_fk("conversation.id", ondelete="CASCADE"))
    previous_conversation_id: str | None = Field(
        default=None, sa_column=_fk("conversation.id", ondelete="SET NULL", nullable=True)
    )
    check_type: str = Field(sa_column=Column(String(40), nullable=False))
    is_consistent: bool
    inconsistency_description: str | None = Field(
        default=None,
        sa_column=_patient_text(
            Text, owners=("current_conversation_id", "previous_conversation_id")
        ),
    )
    current_statement: str | None = Field(
        default=None, sa_column=_patient_text(Text, owners=("current_conversation_id",))
    )
    previous_statement: str | None = Field(
        default=None,
        sa_column=_patient_text(
            Text, owners=("current_conversation_id", "previous_conversation_id")
        ),
    )
    entity: str | None = Field(
        default=None,
        sa_column=_patient_text(
            String(200), owners=("current_conversation_id", "previous_conversation_id")
        ),
    )
    consistency_score: float | None = None
    severity: str | None = Field(default=None, sa_column=Column(String(10)))
    checked_at: datetime = _ts()


class ConfidenceMetric(SQLModel, table=True):
    """Confidence breakdown of an answer (phase 9 confidence_metrics)."""

    __tablename__ = "confidence_metric"
    __table_args__ = (
        *_score_check(
            "confidence_metric",
            "retrieval_confidence",
            "source_confidence",
            "extraction_confidence",
            "consistency_confidence",
            "aggregate_confidence",
        ),
        Index(
            "idx_confidence_low",
            "aggregate_confidence",
            sqlite_where=text("aggregate_confidence < 0.7"),
            postgresql_where=text("aggregate_confidence < 0.7"),
        ),
    )

    id: int | None = _pk()
    conversation_id: str = Field(sa_column=_fk("conversation.id", ondelete="CASCADE"))
    extraction_index: int = 0
    retrieval_confidence: float | None = None
    source_confidence: float | None = None
    extraction_confidence: float | None = None
    consistency_confidence: float | None = None
    aggregate_confidence: float
    uncertainty_level: str | None = Field(default=None, sa_column=Column(String(20)))
    uncertainty_explanation: str | None = Field(
        default=None, sa_column=_patient_text(Text, owners=("conversation_id",))
    )
    calculated_at: datetime = _ts()


class EvidenceValidation(SQLModel, table=True):
    """Spec 053 counts for one transcript's evidence quotes. Holds no text."""

    __tablename__ = "evidence_validation"

    id: int | None = _pk()
    conversation_id: str | None = Field(
        default=None, sa_column=_fk("conversation.id", ondelete="CASCADE", nullable=True)
    )
    transcript_hash: str = Field(sa_column=Column(String(64), nullable=False))
    transcript_len: int
    mode: str = Field(sa_column=Column(String(20), nullable=False))
    status: str = Field(sa_column=Column(String(30), nullable=False))
    extracted_count: int
    validated_count: int
    rejected_count: int
    rejected_by_domain: Any = Field(default=None, sa_column=Column(JSONType))
    failure_category: str | None = Field(default=None, sa_column=Column(String(40)))
    created_at: datetime = _ts()


class SelfCheckResult(SQLModel, table=True):
    """SelfCheck sentence scores for an answer (higher = more likely hallucinated)."""

    __tablename__ = "selfcheck_result"
    __table_args__ = tuple(_score_check("selfcheck_result", "risk_score"))

    id: int | None = _pk()
    conversation_id: str = Field(sa_column=_fk("conversation.id", ondelete="CASCADE"))
    method: str = Field(sa_column=Column(String(30), nullable=False))
    status: str = Field(sa_column=Column(String(20), nullable=False))
    reason: str | None = Field(default=None, sa_column=Column(Text))
    sample_count: int = 0
    model: str | None = Field(default=None, sa_column=Column(String(200)))
    sentence_scores: Any = Field(
        default=None, sa_column=_patient_text(JSONType, owners=("conversation_id",))
    )
    passage_score: float | None = None
    risk_score: float | None = None
    risk_level: str | None = Field(default=None, sa_column=Column(String(20)))
    created_at: datetime = _ts()


class ClaimAudit(SQLModel, table=True):
    """SPEC-16 verification of one claim of an answer."""

    __tablename__ = "claim_audit"
    __table_args__ = tuple(
        _score_check("claim_audit", "evidence_support", "evidence_dependence", "consistency_score")
    )

    id: int | None = _pk()
    conversation_id: str = Field(sa_column=_fk("conversation.id", ondelete="CASCADE"))
    claim_id: str = Field(sa_column=Column(String(64), nullable=False))
    claim_text: str | None = Field(
        default=None, sa_column=_patient_text(Text, owners=("conversation_id",))
    )
    evidence_ids: Any = Field(default=None, sa_column=Column(JSONType))
    evidence_support: float | None = None
    evidence_dependence: float | None = None
    consistency_score: float | None = None
    confidence_justified: bool | None = None
    evidence_gap_bits: float | None = None
    is_flagged: bool = False
    flag_reason: str | None = Field(default=None, sa_column=Column(String(40)))
    gap_type: str | None = Field(default=None, sa_column=Column(String(40)))
    created_at: datetime = _ts()


class Review(SQLModel, table=True):
    """A clinician's verdict on a flagged statement: who, when, what, and a note."""

    __tablename__ = "review"
    __table_args__ = (
        CheckConstraint(
            "verdict IN ('confirmed', 'false_alarm', 'unsure')", name="ck_review_verdict"
        ),
    )

    id: int | None = _pk()
    statement_check_id: int | None = Field(
        default=None,
        sa_column=Column(
            BigInteger().with_variant(Integer(), "sqlite"),
            ForeignKey("statement_check.id", ondelete="CASCADE"),
            index=True,
        ),
    )
    conversation_id: str = Field(sa_column=_fk("conversation.id", ondelete="CASCADE"))
    reviewer: str = Field(sa_column=Column(String(200), nullable=False))
    verdict: str = Field(sa_column=Column(String(20), nullable=False))
    note: str | None = Field(
        default=None, sa_column=_patient_text(Text, owners=("conversation_id",))
    )
    created_at: datetime = _ts(index=True)


class AuditEvent(SQLModel, table=True):
    """Who viewed or changed what, and when (no patient text)."""

    __tablename__ = "audit_event"

    id: int | None = _pk()
    at: datetime = _ts(index=True)
    actor: str = Field(sa_column=Column(String(200), nullable=False))
    action: str = Field(sa_column=Column(String(40), nullable=False, index=True))
    target_type: str | None = Field(default=None, sa_column=Column(String(40)))
    target_id: str | None = Field(default=None, sa_column=Column(String(200)))
    detail: Any = Field(default=None, sa_column=Column(JSONType))


class EntityMention(SQLModel, table=True):
    """A clinical entity stated in an answer: the per-patient timeline for consistency."""

    __tablename__ = "entity_mention"
    __table_args__ = (
        Index("idx_entity_patient_kind_name", "patient_id", "kind", "name"),
        Index("idx_entity_patient_time", "patient_id", "at"),
    )

    id: int | None = _pk()
    patient_id: str = Field(sa_column=_fk("patient.id", ondelete="CASCADE", index=False))
    conversation_id: str = Field(sa_column=_fk("conversation.id", ondelete="CASCADE"))
    at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    kind: str = Field(sa_column=Column(String(20), nullable=False))
    name: str = Field(sa_column=Column(String(200), nullable=False))
    assertion: str = Field(sa_column=Column(String(20), nullable=False))
    action: str | None = Field(default=None, sa_column=Column(String(20)))
    value: str | None = Field(
        default=None, sa_column=_patient_text(String(100), owners=("conversation_id",))
    )
    unit: str | None = Field(default=None, sa_column=Column(String(40)))
    dose: str | None = Field(
        default=None, sa_column=_patient_text(String(100), owners=("conversation_id",))
    )
    frequency: str | None = Field(
        default=None, sa_column=_patient_text(String(100), owners=("conversation_id",))
    )
    statement: str | None = Field(
        default=None, sa_column=_patient_text(Text, owners=("conversation_id",))
    )
    statement_start: int | None = None
    statement_end: int | None = None


class QualitySums(SQLModel):
    """Counts and sums of one rollup bucket; averages are ``sum_x / n_x`` (exact over filters).

    Grounding and consistency also keep their sums of squares (migration 0013): with the
    counts and sums, the per-model table's 95 % intervals, read from the rollup.
    """

    n: int = 0
    n_flagged: int = 0
    n_grounding: int = 0
    sum_grounding: float = 0.0
    sumsq_grounding: float = 0.0
    n_consistency: int = 0
    sum_consistency: float = 0.0
    sumsq_consistency: float = 0.0
    n_confidence: int = 0
    sum_confidence: float = 0.0
    n_risk: int = 0
    sum_risk: float = 0.0
    n_quality: int = 0
    sum_quality: float = 0.0


class QualityDaily(QualitySums, table=True):
    """Per-day rollup of conversation scores, maintained on every write.

    Trend charts read this instead of scanning conversations: sums and counts per day, model
    and patient, so averages over any filter stay exact.
    """

    __tablename__ = "quality_daily"
    __table_args__ = (UniqueConstraint("day", "model_used", "patient_id", name="uq_quality_daily"),)

    id: int | None = _pk()
    day: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False, index=True))
    model_used: str = Field(sa_column=Column(String(200), nullable=False))
    patient_id: str = Field(sa_column=Column(String(64), nullable=False))


class QualityDailyModel(QualitySums, table=True):
    """Per-day, per-model rollup: what trend charts read when no patient filter is set.

    The same sums as :class:`QualityDaily` without the patient key, so a year of data is a
    few hundred rows whatever the number of patients.
    """

    __tablename__ = "quality_daily_model"
    __table_args__ = (UniqueConstraint("day", "model_used", name="uq_quality_daily_model"),)

    id: int | None = _pk()
    day: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False, index=True))
    model_used: str = Field(sa_column=Column(String(200), nullable=False))


class LLMCall(SQLModel, table=True):
    """An LLM request's accounting (tokens, latency) and its cached response."""

    __tablename__ = "llm_call"

    id: int | None = _pk()
    cache_key: str = Field(sa_column=Column(String(64), nullable=False, unique=True))
    model: str = Field(sa_column=Column(String(200), nullable=False))
    response_text: str | None = Field(default=None, sa_column=Column(Text))
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    finish_reason: str | None = Field(default=None, sa_column=Column(String(30)))
    purpose: str | None = Field(default=None, sa_column=Column(String(40)))
    created_at: datetime = _ts()


class EmbeddingCache(SQLModel, table=True):
    """Embedding of a text by (model, content hash): nothing is embedded twice across runs."""

    __tablename__ = "embedding_cache"

    model: str = Field(sa_column=Column(String(100), primary_key=True))
    content_hash: str = Field(sa_column=Column(String(64), primary_key=True))
    dim: int
    vector: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    created_at: datetime = _ts()


class ApiKey(SQLModel, table=True):
    """A key of the HTTP API: a name, its scopes, and the SHA-256 of its token (the token
    itself is shown once, at creation, and never stored)."""

    __tablename__ = "api_key"

    id: int | None = _pk()
    name: str = Field(sa_column=Column(String(200), nullable=False))
    token_hash: str = Field(sa_column=Column(String(64), nullable=False, unique=True))
    # comma-separated, from core.api scopes: ingest, read, review, admin
    scopes: str = Field(sa_column=Column(String(100), nullable=False))
    created_at: datetime = _ts()
    revoked_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))


class SettingChange(SQLModel, table=True):
    """A setting applied from the dashboard (e.g. the review threshold chosen on the
    calibration page): its value, the one before, who applied it, when and why. The newest
    row of a name is the value in force; the rows are its history."""

    __tablename__ = "setting_change"

    id: int | None = _pk()
    name: str = Field(sa_column=Column(String(60), nullable=False, index=True))
    value: float | None = None  # None: back to the default
    previous: float | None = None
    actor: str = Field(sa_column=Column(String(200), nullable=False))
    reason: str | None = Field(default=None, sa_column=Column(String(500)))
    changed_at: datetime = _ts(index=True)


class RescoreRun(SQLModel, table=True):
    """One re-scoring of stored answers (or of record files) by one verifier version: which
    version, with which settings, over which answers, when, and how many changed flag.

    The counts are those of its :class:`RescoreResult` rows, written when the run finishes;
    a run killed half-way stays ``running`` until it is resumed under the same id.
    """

    __tablename__ = "rescore_run"

    id: str = Field(sa_column=Column(String(64), primary_key=True))
    # the learned verifier's version and a prefix of its weights' SHA-256 ("rules" when off)
    verifier_version: str = Field(sa_column=Column(String(100), nullable=False))
    settings_hash: str = Field(sa_column=Column(String(64), nullable=False))
    source: str = Field(sa_column=Column(String(10), nullable=False))  # stored | files
    # the selection: since, until, model, patient, only_flagged, files, cutoff (opaque ids)
    filters: Any = Field(default=None, sa_column=Column(JSONType))
    status: str = Field(sa_column=Column(String(20), nullable=False))  # running | finished
    started_at: datetime = _ts(index=True)
    finished_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    selected: int = 0
    checked: int = 0
    failed: int = 0
    newly_flagged: int = 0
    cleared: int = 0


class RescoreResult(SQLModel, table=True):
    """One answer's scores before (as stored) and after a re-scoring run; at most one row per
    run and answer, so a resumed run writes nothing twice. No text: ids, flags and scores.

    ``change``: ``flagged`` (newly flagged), ``cleared``, ``same``, ``new`` (no stored answer
    to compare with, e.g. a record from a file) or ``failed`` (the checks could not run;
    ``reason`` names the error type).
    """

    __tablename__ = "rescore_result"
    __table_args__ = (
        UniqueConstraint("run_id", "conversation_id", name="uq_rescore_result_run_conversation"),
        Index("idx_rescore_result_run_change", "run_id", "change"),
        *_score_check(
            "rescore_result",
            "old_grounding",
            "new_grounding",
            "old_risk",
            "new_risk",
            "old_quality",
            "new_quality",
        ),
    )

    id: int | None = _pk()
    run_id: str = Field(
        sa_column=Column(
            String(64), ForeignKey("rescore_run.id", ondelete="CASCADE"), nullable=False
        )
    )
    # not a foreign key: a record re-scored from a file need not be stored
    conversation_id: str = Field(sa_column=Column(String(64), nullable=False, index=True))
    change: str = Field(sa_column=Column(String(10), nullable=False))
    old_flagged: bool | None = None
    new_flagged: bool | None = None
    old_grounding: float | None = None
    new_grounding: float | None = None
    old_risk: float | None = None
    new_risk: float | None = None
    old_quality: float | None = None
    new_quality: float | None = None
    old_flagged_statements: int | None = None
    new_flagged_statements: int | None = None
    reason: str | None = Field(default=None, sa_column=Column(String(200)))
    checked_at: datetime = _ts()


ALL_TABLES = [
    m.__table__  # type: ignore[union-attr]
    for m in (
        Patient,
        Conversation,
        StatementCheck,
        ConsistencyCheck,
        ConfidenceMetric,
        EvidenceValidation,
        SelfCheckResult,
        ClaimAudit,
        Review,
        AuditEvent,
        EntityMention,
        QualityDaily,
        QualityDailyModel,
        LLMCall,
        EmbeddingCache,
        ApiKey,
        RescoreRun,
        RescoreResult,
        SettingChange,
    )
]


class AlertFiring(SQLModel, table=True):
    """One firing of an alert rule (core.alerts) for one condition: a rule and what it is
    about (a model, a patient, or the whole service). While it stays open or acknowledged, the
    condition firing again adds to it (``occurrences``, ``last_at``, ``conversation_ids``)
    rather than firing twice; the partial unique index holds that under concurrent writers.
    Holds ids, counts and scores only: no patient text."""

    __tablename__ = "alert_firing"
    __table_args__ = (
        CheckConstraint(
            "state IN ('open', 'acknowledged', 'resolved')", name="ck_alert_firing_state"
        ),
        Index(
            "uq_alert_firing_open",
            "condition_key",
            unique=True,
            sqlite_where=text("state != 'resolved'"),
            postgresql_where=text("state != 'resolved'"),
        ),
        Index("idx_alert_firing_state_time", "state", "last_at"),
    )

    id: int | None = _pk()
    rule: str = Field(sa_column=Column(String(100), nullable=False))
    kind: str = Field(sa_column=Column(String(30), nullable=False))
    # the rule and what it is about, e.g. "flagged-share|model:gpt-x" or "contradiction|patient:p-1"
    condition_key: str = Field(sa_column=Column(String(400), nullable=False))
    state: str = Field(default="open", sa_column=Column(String(20), nullable=False))
    model: str | None = Field(default=None, sa_column=Column(String(200)))
    patient_id: str | None = Field(default=None, sa_column=Column(String(64), index=True))
    value: float | None = None  # the share, score or ECE measured when it last fired
    threshold: float | None = None
    counts: Any = Field(default=None, sa_column=Column(JSONType))
    # the answers behind it (conversation ids, newest last, bounded)
    conversation_ids: Any = Field(default=None, sa_column=Column(JSONType))
    occurrences: int = 1
    first_at: datetime = _ts()
    last_at: datetime = _ts()
    acknowledged_by: str | None = Field(default=None, sa_column=Column(String(200)))
    acknowledged_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    resolved_by: str | None = Field(default=None, sa_column=Column(String(200)))
    resolved_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))


class AlertDelivery(SQLModel, table=True):
    """One attempt to deliver a firing to a webhook: when, the HTTP status or the error's class,
    and what came of it (``delivered``, ``retry``, ``failed``, ``dropped``). No body, no text."""

    __tablename__ = "alert_delivery"

    id: int | None = _pk()
    firing_id: int = Field(
        sa_column=Column(
            BigInteger().with_variant(Integer(), "sqlite"),
            ForeignKey("alert_firing.id", ondelete="CASCADE"),
            nullable=False,
            index=True,
        )
    )
    webhook: str = Field(sa_column=Column(String(100), nullable=False))
    attempt: int
    status_code: int | None = None
    error_class: str | None = Field(default=None, sa_column=Column(String(100)))
    outcome: str = Field(sa_column=Column(String(20), nullable=False))
    duration_ms: int | None = None
    at: datetime = _ts(index=True)


class IngestJob(SQLModel, table=True):
    """One answer received for queued ingestion (``POST /v1/answers?mode=async``,
    ``groundwatch import --queue``): the raw record until a worker has stored its result, and
    what became of it. Its job in the PostgreSQL queue (``queue_job_id``, a procrastinate job)
    holds the state and the number of tries. ``error_class`` and ``error_message`` say why the
    last try failed, without record text (class names, counts, 12-char hashes)."""

    __tablename__ = "ingest_job"

    id: int | None = _pk()
    queue_job_id: int | None = Field(
        default=None, sa_column=Column(BigInteger, unique=True, nullable=True)
    )
    external_id: str = Field(sa_column=Column(String(200), nullable=False))
    conversation_id: str = Field(sa_column=Column(String(64), nullable=False, index=True))
    # the record as received (the import format); cleared once its result is stored
    payload: Any = Field(
        default=None, sa_column=_patient_text(JSONType, owners=("conversation_id",))
    )
    payload_hash: str = Field(sa_column=Column(String(12), nullable=False))
    replace: bool = False  # an edit of a stored record may replace it (admin keys only)
    submitted_by: str = Field(sa_column=Column(String(200), nullable=False))
    created_at: datetime = _ts(index=True)
    finished_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    outcome: str | None = Field(default=None, sa_column=Column(String(20)))
    error_class: str | None = Field(default=None, sa_column=Column(String(100)))
    error_message: str | None = Field(default=None, sa_column=Column(String(300)))


class LoginLock(SQLModel, table=True):
    """Failed dashboard logins of one account, persisted so that a lock holds in every
    browser session and across restarts: the failures in a row since the last success or
    lock, the locks in a row (each doubles the next one) and when the current lock ends.
    Keyed by a 12-char hash of the typed user name (known or not), never the name itself."""

    __tablename__ = "login_lock"

    login_key: str = Field(sa_column=Column(String(64), primary_key=True))
    failures: int = 0
    lockouts: int = 0
    locked_until: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    updated_at: datetime = _ts()
