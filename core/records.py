"""The import record (one JSON object per line) and its validation at the edge.

Every line is validated before anything is stored; each error names the line, the field and
the reason, never the text itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
)

from core.text import JSONInputError, content_hash, loads_input, unstorable_text

SourceType = Literal["note", "document", "message", "transcript"]

MAX_ID_LEN = 200
# Timestamps outside this range are refused at the input boundary: no clinical record is that
# old or that far ahead, and dates near year 1 or 9999 overflow date arithmetic (the dashboard
# widens a range by a day) on either engine.
EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)
LATEST = datetime(2100, 1, 1, tzinfo=UTC)


class SourceIn(BaseModel):
    """A source chunk the answer was drawn from."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: Annotated[StrictStr, Field(min_length=1, max_length=MAX_ID_LEN)]
    text: StrictStr
    type: SourceType = "note"
    similarity: Annotated[StrictFloat | StrictInt | None, Field(ge=0.0, le=1.0)] = None


class ConversationRecord(BaseModel):
    """One query and answer about a patient, as imported.

    ``id``, ``patient_id``, ``query``, ``answer`` and ``sources`` are required.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: Annotated[StrictStr, Field(min_length=1, max_length=MAX_ID_LEN)]
    patient_id: Annotated[StrictStr, Field(min_length=1, max_length=64)]
    timestamp: datetime | None = None
    query: StrictStr
    answer: StrictStr
    sources: list[SourceIn]
    model: Annotated[StrictStr, Field(min_length=1, max_length=200)] = "unknown"
    samples: list[StrictStr] | None = None
    evidence: dict[str, Any] | None = None
    temperature: Annotated[StrictFloat | StrictInt | None, Field(ge=0.0, le=2.0)] = None
    query_intent: Annotated[StrictStr | None, Field(max_length=100)] = None

    @field_validator("id", "patient_id")
    @classmethod
    def _no_blank_ids(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value.strip()

    @field_validator("answer")
    @classmethod
    def _answer_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value

    @field_validator("timestamp")
    @classmethod
    def _aware_utc(cls, value: datetime | None) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        try:
            value = value.astimezone(UTC)
        except OverflowError:  # year 1 or 9999 with an offset
            value = EARLIEST - timedelta(days=1)
        if not EARLIEST <= value < LATEST:
            raise ValueError(
                f"must lie between {EARLIEST.year} and {LATEST.year} (UTC): "
                "no record is dated that far out"
            )
        return value

    @property
    def when(self) -> datetime:
        """The record's timestamp (UTC); records without one are stamped at import time."""
        return self.timestamp or datetime.now(UTC)

    def fingerprint(self) -> str:
        """Hash of the record's content: re-importing the same record changes nothing."""
        payload = self.model_dump(mode="json")
        return content_hash(json.dumps(payload, sort_keys=True, ensure_ascii=False))


@dataclass(frozen=True, slots=True)
class LineError:
    """Why one line of an import file was rejected (no record text)."""

    line: int
    error: str

    def to_dict(self) -> dict[str, object]:
        return {"line": self.line, "error": self.error}


def _format_validation(exc: ValidationError) -> str:
    parts = []
    for item in exc.errors()[:5]:
        loc = ""
        for piece in item["loc"]:
            loc += f"[{piece}]" if isinstance(piece, int) else (f".{piece}" if loc else str(piece))
        msg = item["msg"]
        if item["type"] == "missing":
            msg = "required field is missing"
        parts.append(f"field {loc or '(record)'}: {msg}")
    more = len(exc.errors()) - 5
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts)


def parse_record(obj: object, *, max_text_chars: int) -> ConversationRecord:
    """Validate one decoded JSON value as a record.

    Raises:
        ValueError: with a message naming the field and the reason.
    """
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    broken = unstorable_text(obj)
    if broken:
        raise ValueError(f"field {broken[0]}: {broken[1]}")
    try:
        record = ConversationRecord.model_validate(obj)
    except ValidationError as exc:
        raise ValueError(_format_validation(exc)) from None
    too_long = [
        name
        for name, value in (("query", record.query), ("answer", record.answer))
        if len(value) > max_text_chars
    ]
    too_long += [
        f"sources[{i}].text" for i, s in enumerate(record.sources) if len(s.text) > max_text_chars
    ]
    if too_long:
        raise ValueError(
            f"field {too_long[0]}: text longer than {max_text_chars} characters "
            "(GROUNDWATCH_MAX_TRANSCRIPT_CHARS)"
        )
    ids = [s.id for s in record.sources]
    if len(set(ids)) != len(ids):
        raise ValueError("field sources: duplicate source id")
    if record.evidence is not None:
        from core.evidence import EvidenceSchemaError, validate_evidence_schema

        try:
            validate_evidence_schema(record.evidence, keys=None)
        except EvidenceSchemaError as exc:
            first = next(iter(exc.violations.items()))
            raise ValueError(f"field evidence.{first[0]}: {first[1]}") from None
    return record


def parse_jsonl(
    data: bytes, *, max_text_chars: int
) -> tuple[list[tuple[int, ConversationRecord]], list[LineError]]:
    """Parse and validate every line of a JSONL import file.

    Blank lines are ignored. A record id appearing twice in one file is an error on the later
    line. Returns the valid records with their line numbers, and the errors.
    """
    records: list[tuple[int, ConversationRecord]] = []
    errors: list[LineError] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            errors.append(LineError(number, f"invalid UTF-8 at byte {exc.start} of the line"))
            continue
        if "\x00" in line:
            errors.append(LineError(number, "contains a NUL byte"))
            continue
        try:
            obj = loads_input(line)
        except JSONInputError as exc:
            errors.append(LineError(number, f"malformed JSON ({exc})"))
            continue
        try:
            record = parse_record(obj, max_text_chars=max_text_chars)
        except ValueError as exc:
            errors.append(LineError(number, str(exc)))
            continue
        if record.id in seen:
            errors.append(
                LineError(number, f"field id: duplicate of the record on line {seen[record.id]}")
            )
            continue
        seen[record.id] = number
        records.append((number, record))
    return records, errors
