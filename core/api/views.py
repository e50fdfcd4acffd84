"""What the API returns for a stored answer: plain JSON built from the stored rows.

The same shape for ``POST /v1/answers`` (plus ``store_status``) and ``GET /v1/answers/{id}``;
the words a statement's evidence does not bear out come from the verifier when the answer was
just checked, else they are found again in the stored statement and evidence.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from core.quality import RECOMMENDATIONS
from core.storage import repo

Words = Sequence[tuple[int, int]]


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


def _words(st: Any, given: Mapping[int, Words] | None) -> list[dict[str, Any]]:
    text = st.statement
    if st.status == "grounded" or text is None:
        return []
    if given is not None and st.statement_index in given:
        spans = list(given[st.statement_index])
    elif st.supporting_evidence:
        from core.grounding.support import unsupported_words

        spans = [(w.start, w.end) for w in unsupported_words(text, [st.supporting_evidence])]
    else:
        return []
    return [{"text": text[a:b], "start": a, "end": b} for a, b in spans if 0 <= a < b <= len(text)]


def answer_view(
    rows: repo.AnswerRows, *, words: Mapping[int, Words] | None = None
) -> dict[str, Any]:
    """One stored answer: scores, flag, risk, checks, each statement and the contradictions.

    Scores are in [0, 1]: grounding, consistency, confidence and overall quality higher is
    better, hallucination risk higher is worse. Text fields are None when record text is not
    kept (``GROUNDWATCH_ENABLE_CONVERSATION_HISTORY=false``) or was purged.
    """
    c = rows.conversation
    level = c.risk_level
    return {
        "id": c.external_id,
        "conversation_id": c.id,
        "patient_id": c.patient_id,
        "timestamp": c.query_timestamp.isoformat(),
        "model": c.model_used,
        "query": c.query,
        "answer": c.answer,
        "flagged": bool(c.is_flagged),
        "scores": {
            "grounding": _round(c.grounding_score),
            "consistency": _round(c.consistency_score),
            "confidence": _round(c.confidence_score),
            "hallucination_risk": _round(c.hallucination_risk),
            "overall_quality": _round(c.overall_quality),
        },
        "risk": {
            "level": level,
            "score": _round(c.hallucination_risk),
            "recommendation": RECOMMENDATIONS.get(level) if level else None,  # type: ignore[call-overload]
        },
        "statements": [
            {
                "index": st.statement_index,
                "text": st.statement,
                "status": st.status,
                "method": st.verification_method,
                "confidence": _round(st.grounding_confidence),
                "start": st.start,
                "end": st.end,
                "source_id": st.source_chunk_id,
                "evidence": st.supporting_evidence,
                "evidence_start": st.evidence_start,
                "evidence_end": st.evidence_end,
                "unsupported_words": _words(st, words),
                "kind": st.kind,
                "severity": st.severity,
            }
            for st in rows.statements
        ],
        "contradictions": [
            {
                "check_type": k.check_type,
                "severity": k.severity,
                "entity": k.entity,
                "current_statement": k.current_statement,
                "previous_statement": k.previous_statement,
                "previous_conversation_id": k.previous_conversation_id,
                "explanation": k.inconsistency_description,
            }
            for k in rows.contradictions
        ],
        "warnings": list(c.warnings or []),
        "checks": dict(c.check_status or {}),
        "execution_time_ms": c.execution_time_ms,
    }


def summary_view(s: repo.AnswerSummary) -> dict[str, Any]:
    """One line of a list of answers (ids, time, model, scores, flag; no record text)."""
    return {
        "id": s.external_id,
        "conversation_id": s.conversation_id,
        "patient_id": s.patient_id,
        "timestamp": s.timestamp.isoformat(),
        "model": s.model,
        "flagged": s.is_flagged,
        "scores": {
            "grounding": _round(s.grounding_score),
            "consistency": _round(s.consistency_score),
            "confidence": _round(s.confidence_score),
            "hallucination_risk": _round(s.hallucination_risk),
            "overall_quality": _round(s.overall_quality),
        },
        "risk_level": s.risk_level,
        "flagged_statements": s.flagged_statements,
        "total_statements": s.total_statements,
    }


class CursorError(ValueError):
    """A cursor that this API did not hand out (or that was altered)."""


def encode_cursor(timestamp: datetime, conversation_id: str) -> str:
    """An opaque cursor: the last answer of a page (time and id), URL-safe."""
    raw = json.dumps([timestamp.astimezone(UTC).isoformat(), conversation_id])
    return base64.urlsafe_b64encode(raw.encode("utf-8")).decode("ascii").rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """The (time, id) a cursor stands for.

    Raises:
        CursorError: the cursor is not one this API hands out.
    """
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        when, conv_id = json.loads(raw.decode("utf-8"))
        at = datetime.fromisoformat(when)
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError):
        raise CursorError("not a cursor returned by this API") from None
    if not isinstance(conv_id, str) or at.tzinfo is None or len(conv_id) > 64:
        raise CursorError("not a cursor returned by this API")
    return at, conv_id
