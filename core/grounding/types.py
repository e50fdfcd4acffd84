"""Inputs and frozen results of answer grounding (phase 9 "Answer Grounding Verifier")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from core.checks import CheckStatus

SourceType = Literal["note", "document", "message", "transcript"]
SOURCE_TYPES: tuple[SourceType, ...] = ("note", "document", "message", "transcript")
Method = Literal["exact_match", "fuzzy_match", "semantic_match", "inference", "unsupported"]
Status = Literal["grounded", "unsupported", "contradicted"]


@dataclass(frozen=True, slots=True)
class SourceChunk:
    """One source an answer may draw on: a note, document, message or transcript.

    ``similarity`` is the retrieval score the caller got it with, if any (kept, not used).
    """

    id: str
    text: str
    type: SourceType = "note"
    similarity: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id.strip():
            raise ValueError("source id: must be a non-empty string")
        if not isinstance(self.text, str):
            raise ValueError(f"source {self.id!r} text: must be a string")
        if self.type not in SOURCE_TYPES:
            raise ValueError(
                f"source {self.id!r} type: {self.type!r} is not one of {', '.join(SOURCE_TYPES)}"
            )
        if self.similarity is not None and not 0.0 <= float(self.similarity) <= 1.0:
            raise ValueError(f"source {self.id!r} similarity: must be within [0, 1]")


@dataclass(frozen=True, slots=True)
class StatementGrounding:
    """How one statement of the answer stands against the sources.

    ``confidence`` in [0, 1] is the confidence in ``status`` (higher = surer), not a
    grounding score. ``start``/``end`` locate the statement in the answer;
    ``evidence_start``/``evidence_end`` locate ``supporting_evidence`` in the source
    ``source_chunk_id`` (the best match, also for unsupported or contradicted statements).
    A structured source (JSON, FHIR resources, a table: :mod:`core.grounding.structured`) is
    read as sentences: there ``supporting_evidence`` is the sentence read and the offsets
    locate the record it was read from in the source as given.
    ``support`` is the learned tier's calibrated probability that the sources support the
    statement (None where that tier did not read it: an exact match, or no learned model).
    ``unsupported_words`` are ``[start, end)`` offsets, in the statement, of the words the
    evidence does not bear out (for a statement not grounded). ``signals`` are the inputs of
    the learned decision, by name (the model's probability, the share of new words, ...).
    """

    index: int
    statement: str
    start: int
    end: int
    status: Status
    verification_method: Method
    confidence: float
    source_chunk_id: str | None
    supporting_evidence: str | None
    evidence_start: int | None
    evidence_end: int | None
    reason: str | None
    similarity: float | None = None
    support: float | None = None
    unsupported_words: tuple[tuple[int, int], ...] = ()
    signals: tuple[tuple[str, float], ...] = ()

    @property
    def is_grounded(self) -> bool:
        return self.status == "grounded"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-safe data (the CLI contract's statement fields, plus detail)."""
        return {
            "index": self.index,
            "text": self.statement,
            "status": self.status,
            "is_grounded": self.is_grounded,
            "verification_method": self.verification_method,
            "confidence": round(self.confidence, 4),
            "source_id": self.source_chunk_id,
            "evidence": self.supporting_evidence,
            "start": self.start,
            "end": self.end,
            "evidence_start": self.evidence_start,
            "evidence_end": self.evidence_end,
            "reason": self.reason,
            "similarity": None if self.similarity is None else round(self.similarity, 4),
            "support": None if self.support is None else round(self.support, 4),
            "unsupported_words": [
                {"text": self.statement[a:b], "start": a, "end": b}
                for a, b in self.unsupported_words
            ],
            "signals": {name: round(value, 4) for name, value in self.signals},
        }


@dataclass(frozen=True, slots=True)
class GroundingResult:
    """Grounding of a whole answer.

    ``grounding_score`` = grounded statements / all statements (higher is better).
    ``overall_grounded`` is true when the score reaches the threshold and no statement is
    contradicted. ``support_score`` (higher is better) is the least support of any statement:
    the learned tier's probability where it read the statement, 1 for an exact match, 0 for a
    contradiction; with no learned model, the grounding score. ``checks`` gives each tier's
    status (exact, fuzzy, semantic, learned, nli, llm_judge, inference), so a tier that could
    not run is stated, not hidden.
    """

    overall_grounded: bool
    grounding_score: float
    statements: tuple[StatementGrounding, ...]
    unsupported_statements: tuple[str, ...]
    warnings: tuple[str, ...]
    checks: dict[str, CheckStatus]
    support_score: float = 0.0

    @property
    def contradicted_count(self) -> int:
        return sum(s.status == "contradicted" for s in self.statements)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-safe data in the shape of the ``groundwatch ground --json`` contract."""
        return {
            "grounding_score": round(self.grounding_score, 4),
            "support_score": round(self.support_score, 4),
            "overall_grounded": self.overall_grounded,
            "statements": [s.to_dict() for s in self.statements],
            "unsupported_statements": list(self.unsupported_statements),
            "warnings": list(self.warnings),
            "checks": {name: str(check) for name, check in self.checks.items()},
        }
