"""The public shapes of stored rows: what the API returns (and the dashboard reuses), each
declared once.

Each model reads its row with ``Model.model_validate(row)``: a field whose public name
differs from the column's names the column as its ``validation_alias`` (``explanation`` reads
``inconsistency_description``), so the renaming lives here and nowhere else. The JSON of a
model is the API's contract: scores rounded to 4 places and times in ISO 8601 with their UTC
offset (``2026-01-05T09:00:00+00:00``), in JSON only; ``model_dump()`` keeps the stored
floats and datetimes, as the dashboard reads them. A model also reads its own JSON back (by
field name).

Scores are floats in [0, 1]: grounding, consistency, confidence, overall quality and a
similarity are higher-is-better; hallucination risk and a statement's risk are higher-is-worse.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any, Literal, cast

from pydantic import (
    AliasPath,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    WithJsonSchema,
    computed_field,
)

from core.quality import RECOMMENDATIONS, RiskLevel
from core.storage.writes import StoreStatus, Verdict


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


def _iso(value: datetime) -> str:
    return value.isoformat()


# a score or share, rounded to 4 places in JSON
Score = Annotated[float | None, PlainSerializer(_round, when_used="json")]
Share = Annotated[float, PlainSerializer(_round, return_type=float, when_used="json")]
# a timezone-aware time, ``datetime.isoformat()`` in JSON (``+00:00``, not pydantic's ``Z``)
Timestamp = Annotated[
    datetime,
    PlainSerializer(_iso, return_type=str, when_used="json"),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]
# a JSON column that may hold NULL, shown empty
_Texts = Annotated[list[str], BeforeValidator(lambda v: v or [])]
_Checks = Annotated[dict[str, Any], BeforeValidator(lambda v: v or {})]

StatementStatus = Literal["grounded", "unsupported", "contradicted"]  # ck_statement_status


class _Public(BaseModel):
    model_config = ConfigDict(
        from_attributes=True,
        validate_by_alias=True,
        validate_by_name=True,
        # every field is in every response: the schema says so
        json_schema_serialization_defaults_required=True,
    )


def _answer(column: str) -> AliasPath:
    """A column of an answer's conversation row: the answer models read a row holding it as
    ``conversation`` (:class:`~core.storage.answers.AnswerRows`,
    :class:`~core.storage.answers.AnswerSummary`)."""
    return AliasPath("conversation", column)


# --------------------------------------------------------------------------- a stored answer


class Scores(_Public):
    """An answer's five scores, in [0, 1] (rounded to 4 places); None where the check did not
    run. Read from the conversation row."""

    grounding: Score = Field(validation_alias="grounding_score")
    consistency: Score = Field(validation_alias="consistency_score")
    confidence: Score = Field(validation_alias="confidence_score")
    hallucination_risk: Score = Field(description="Higher is worse.")
    overall_quality: Score


class Risk(_Public):
    """An answer's risk level, its hallucination risk (higher is worse) and what to do about
    it. Read from the conversation row."""

    level: str | None = Field(
        validation_alias="risk_level", description="very_low, low, medium, high or very_high."
    )
    score: Score = Field(validation_alias="hallucination_risk")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def recommendation(self) -> str | None:
        """What to do with an answer of this level (None without a level)."""
        return RECOMMENDATIONS.get(cast(RiskLevel, self.level)) if self.level else None


class WordSpan(_Public):
    """Words of a statement its evidence does not bear out: character offsets in the
    statement's text."""

    text: str
    start: int
    end: int


class StatementBase(_Public):
    """One statement of an answer as it was checked against the sources (a
    ``statement_check`` row). Text fields are None when record text is not kept or purged."""

    index: int = Field(validation_alias="statement_index", description="Its place in the answer.")
    text: str | None = Field(validation_alias="statement")
    status: StatementStatus
    method: str = Field(validation_alias="verification_method")
    confidence: Score = Field(validation_alias="grounding_confidence")
    start: int | None = Field(description="Character offset in the answer.")
    end: int | None
    source_id: str | None = Field(validation_alias="source_chunk_id")
    evidence: str | None = Field(validation_alias="supporting_evidence")
    evidence_start: int | None = Field(description="Character offset in the source.")
    evidence_end: int | None
    kind: str | None = Field(description="What is wrong with a flagged statement.")
    severity: str | None = Field(description="critical, high, medium or low.")


class StatementPublic(StatementBase):
    """A statement as the API returns it, with the words its evidence does not bear out
    (empty for a grounded statement)."""

    unsupported_words: list[WordSpan] = []


class ContradictionPublic(_Public):
    """What an answer contradicts in the patient's earlier answers (a ``consistency_check``
    row that found an inconsistency)."""

    check_type: str
    severity: str | None
    entity: str | None
    current_statement: str | None
    previous_statement: str | None
    previous_conversation_id: str | None
    explanation: str | None = Field(validation_alias="inconsistency_description")


class AnswerBase(_Public):
    """What every view of a stored answer shows: ids, time, model, flag and scores."""

    id: str = Field(
        validation_alias=_answer("external_id"), description="The record id it was sent with."
    )
    conversation_id: str = Field(validation_alias=_answer("id"))
    patient_id: str = Field(validation_alias=_answer("patient_id"))
    timestamp: Timestamp = Field(validation_alias=_answer("query_timestamp"))
    model: str = Field(validation_alias=_answer("model_used"))
    flagged: bool = Field(validation_alias=_answer("is_flagged"))
    scores: Scores = Field(validation_alias="conversation")


# read from core.storage.answers.AnswerRows
class AnswerPublic(AnswerBase):
    """One stored answer with its report: scores, flag, risk, checks, each statement and the
    contradictions. Text fields are None when record text is not kept
    (``GROUNDWATCH_ENABLE_CONVERSATION_HISTORY=false``) or was purged."""

    query: str | None = Field(validation_alias=_answer("query"))
    answer: str | None = Field(validation_alias=_answer("answer"))
    risk: Risk = Field(validation_alias="conversation")
    statements: list[StatementPublic]
    contradictions: list[ContradictionPublic]
    warnings: _Texts = Field(validation_alias=_answer("warnings"))
    checks: _Checks = Field(
        validation_alias=_answer("check_status"), description="Each check's status and reason."
    )
    execution_time_ms: int | None = Field(validation_alias=_answer("execution_time_ms"))


class AnswerStored(AnswerPublic):
    """An answer just sent: its report and what storing it did."""

    store_status: StoreStatus

    @classmethod
    def of(cls, answer: AnswerPublic, store_status: StoreStatus) -> AnswerStored:
        """``answer`` with its ``store_status``."""
        return cls(**dict(answer), store_status=store_status)


# read from core.storage.answers.AnswerSummary
class AnswerSummaryPublic(AnswerBase):
    """One line of a list of answers: no record text."""

    risk_level: str | None = Field(validation_alias=_answer("risk_level"))
    flagged_statements: int = Field(validation_alias=_answer("flagged_statements"))
    total_statements: int = Field(validation_alias=_answer("total_statements"))


class AnswerPage(_Public):
    """A page of answers, newest first."""

    items: list[AnswerSummaryPublic]
    next_cursor: str | None = Field(description="Pass as cursor for the next page; None: last.")


class StoreCounts(_Public):
    """How many answers of a batch were imported, updated and unchanged."""

    imported: int
    updated: int
    unchanged: int


class BatchStored(_Public):
    """A batch just sent: the counts and each answer's report, in the order sent."""

    counts: StoreCounts
    results: list[AnswerStored]


# --------------------------------------------------------------------------- reading and review


# read from core.storage.search.PastQuery and its score
class SimilarQuery(_Public):
    """One of a patient's past queries with its cosine similarity to a new one, in [-1, 1]
    (higher is more similar); ``query`` only for a key with the ``read`` scope (absent
    otherwise)."""

    model_config = ConfigDict(json_schema_serialization_defaults_required=False)

    id: str = Field(validation_alias="external_id")
    conversation_id: str
    timestamp: Timestamp
    score: Share
    query: str | None = None


class SimilarQueries(_Public):
    """A patient's past queries most similar to a new one, best first."""

    patient_id: str
    model: str = Field(description="The embedding model.")
    compared: int = Field(description="How many past queries were compared.")
    items: list[SimilarQuery]


# read from core.storage.queries.TrendPoint
class TrendPointPublic(_Public):
    """One period's answers, flagged answers and average scores (None where nothing was
    scored)."""

    period: date = Field(description="The day, or the Monday of the ISO week.")
    answers: int = Field(validation_alias="conversations")
    flagged: int
    flagged_share: Share
    grounding: Score
    consistency: Score
    confidence: Score
    risk: Score
    quality: Score


class Trends(_Public):
    """Quality per day or per ISO week."""

    by: Literal["day", "week"]
    points: list[TrendPointPublic]


# read from core.storage.queries.FlaggedStatement
class QueueItemPublic(_Public):
    """A flagged statement to review: the statement, its answer, evidence, kind, severity and
    the latest verdict."""

    statement_check_id: int
    answer_id: str = Field(validation_alias="external_id", description="The answer's record id.")
    conversation_id: str
    patient_id: str
    model: str
    timestamp: Timestamp
    statement_index: int
    statement: str | None
    start: int | None
    end: int | None
    status: StatementStatus
    kind: str | None
    severity: str | None
    method: str
    confidence: Score
    risk: Share
    reason: str | None
    source_id: str | None = Field(validation_alias="source_chunk_id")
    evidence: str | None
    evidence_start: int | None
    evidence_end: int | None
    verdict: Verdict | None
    reviewer: str | None


class QueuePage(_Public):
    """One page of the review queue and the number of items under the filters."""

    total: int
    offset: int
    items: list[QueueItemPublic]


class ReviewPublic(_Public):
    """A clinician's verdict on a statement (a ``review`` row): who, what, when."""

    review_id: int = Field(validation_alias="id")
    statement_check_id: int | None
    conversation_id: str
    verdict: Verdict
    reviewer: str
    created_at: Timestamp


__all__ = [
    "AnswerBase",
    "AnswerPage",
    "AnswerPublic",
    "AnswerStored",
    "AnswerSummaryPublic",
    "BatchStored",
    "ContradictionPublic",
    "QueueItemPublic",
    "QueuePage",
    "ReviewPublic",
    "Risk",
    "Scores",
    "SimilarQueries",
    "SimilarQuery",
    "StatementBase",
    "StatementPublic",
    "StoreCounts",
    "Trends",
    "TrendPointPublic",
    "WordSpan",
]
