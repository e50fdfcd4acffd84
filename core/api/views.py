"""What the API returns for a stored answer: the public models of
:mod:`core.storage.public`, read from the stored rows.

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

from core.storage import repo
from core.storage.models import StatementCheck
from core.storage.public import AnswerPublic, WordSpan

Words = Sequence[tuple[int, int]]


def _words(st: StatementCheck, given: Mapping[int, Words] | None) -> list[WordSpan]:
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
    return [WordSpan(text=text[a:b], start=a, end=b) for a, b in spans if 0 <= a < b <= len(text)]


def answer_view(rows: repo.AnswerRows, *, words: Mapping[int, Words] | None = None) -> AnswerPublic:
    """One stored answer: scores, flag, risk, checks, each statement with the words its
    evidence does not bear out (``words``: the verifier's, by statement index, when the answer
    was just checked) and the contradictions."""
    view = AnswerPublic.model_validate(rows)
    for statement, row in zip(view.statements, rows.statements, strict=True):
        statement.unsupported_words = _words(row, words)
    return view


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
