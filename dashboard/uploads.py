"""Validation of uploaded files (pure): transcript (.txt or .json), evidence JSON, answer.

Each problem raises :class:`UploadError` with a message naming the file and the reason
(byte offset, line and column, key), never the file's content.
"""

from __future__ import annotations

from typing import Any

from core.evidence import EvidenceSchemaError, validate_evidence_schema
from core.inputs import InputError, decode_utf8, parse_json

TRANSCRIPT_KEYS = ("transcript", "text", "dialogue", "conversation")
TURN_TEXT_KEYS = ("text", "utterance", "content")
TURN_SPEAKER_KEYS = ("speaker", "role", "name")


class UploadError(ValueError):
    """An uploaded file cannot be used; the message says which file and why."""


def _decode(name: str, data: bytes, *, max_bytes: int) -> str:
    if len(data) > max_bytes:
        raise UploadError(
            f"{name}: file is {len(data):,} bytes, above the limit of {max_bytes:,} bytes "
            "(GROUNDWATCH_MAX_INPUT_BYTES)"
        )
    try:
        text = decode_utf8(data, what=name)
    except InputError as exc:
        raise UploadError(str(exc)) from None
    if not text.strip():
        raise UploadError(f"{name}: file is empty")
    return text


def _json(name: str, text: str) -> Any:
    try:
        return parse_json(text, what=name)
    except InputError as exc:
        raise UploadError(str(exc)) from None


def _turns(name: str, turns: list[Any]) -> str:
    lines = []
    for i, turn in enumerate(turns):
        if isinstance(turn, str):
            lines.append(turn)
            continue
        if not isinstance(turn, dict):
            raise UploadError(
                f"{name}: turn {i} is {type(turn).__name__}; expected an object with 'text'"
            )
        text = next((turn[k] for k in TURN_TEXT_KEYS if isinstance(turn.get(k), str)), None)
        if text is None:
            raise UploadError(f"{name}: turn {i} has no 'text' string")
        speaker = next((turn[k] for k in TURN_SPEAKER_KEYS if isinstance(turn.get(k), str)), None)
        lines.append(f"{speaker}: {text}" if speaker else text)
    return "\n".join(lines)


def read_transcript(name: str, data: bytes, *, max_bytes: int, max_chars: int) -> str:
    """The transcript text of an uploaded .txt or .json file.

    JSON may be a string, an object with a ``transcript``/``text`` string or a list of turns,
    or a list of turns (strings or ``{"speaker", "text"}`` objects); a FHIR resource or Bundle
    (an object with a ``resourceType``) is kept as it is: the verifier reads it as a
    structured record.
    """
    text = _decode(name, data, max_bytes=max_bytes)
    if name.lower().endswith(".json"):
        obj = _json(name, text)
        if isinstance(obj, dict) and isinstance(obj.get("resourceType"), str):
            obj = text
        elif isinstance(obj, dict):
            value = next((obj[k] for k in TRANSCRIPT_KEYS if k in obj), None)
            if value is None:
                raise UploadError(
                    f"{name}: expected a key {', '.join(repr(k) for k in TRANSCRIPT_KEYS)}, "
                    "or a FHIR resource or Bundle (a 'resourceType')"
                )
            obj = value
        if isinstance(obj, str):
            text = obj
        elif isinstance(obj, list):
            text = _turns(name, obj)
        else:
            raise UploadError(
                f"{name}: expected a transcript string, an object or a list of turns, "
                f"got {type(obj).__name__}"
            )
        if not text.strip():
            raise UploadError(f"{name}: the transcript is empty")
    if len(text) > max_chars:
        raise UploadError(
            f"{name}: transcript has {len(text):,} characters, above the limit of "
            f"{max_chars:,} (GROUNDWATCH_MAX_TRANSCRIPT_CHARS)"
        )
    return text


def read_evidence(name: str, data: bytes, *, max_bytes: int) -> dict[str, list[str]]:
    """Evidence quotes ``{key: [quote, ...]}`` of an uploaded JSON file (spec 054 schema)."""
    obj = _json(name, _decode(name, data, max_bytes=max_bytes))
    try:
        validated = validate_evidence_schema(obj, keys=None)
    except EvidenceSchemaError as exc:
        parts = [f"{k}: {v}" for k, v in list(exc.violations.items())[:5]]
        raise UploadError(
            f"{name}: wrong shape, expected {{key: [quote, ...]}}; " + "; ".join(parts)
        ) from None
    if validated.quote_count == 0:
        raise UploadError(f"{name}: holds no evidence quote")
    return {k: list(v) for k, v in validated.evidence.items()}


def read_answer(name: str, data: bytes, *, max_bytes: int, max_chars: int) -> str:
    """The answer text of an uploaded .txt file (or a JSON object with ``answer``)."""
    text = _decode(name, data, max_bytes=max_bytes)
    if name.lower().endswith(".json"):
        obj = _json(name, text)
        if not isinstance(obj, dict) or not isinstance(obj.get("answer"), str):
            raise UploadError(f"{name}: expected an object with an 'answer' string")
        text = obj["answer"]
        if not text.strip():
            raise UploadError(f"{name}: the answer is empty")
    if len(text) > max_chars:
        raise UploadError(f"{name}: answer has {len(text):,} characters, above {max_chars:,}")
    return text


__all__ = ["UploadError", "read_answer", "read_evidence", "read_transcript"]
