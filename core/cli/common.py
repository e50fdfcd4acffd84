"""Shared helpers of the ``groundwatch`` commands: output, exit codes, safe file reading.

Exit codes (a stable contract): 0 done, 1 usage or I/O error, 2 invalid input (schema),
3 a requested strict failure. Error messages name the file, line and field, never the text.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, NoReturn

import typer

from core.inputs import (
    EXIT_INVALID,
    EXIT_IO,
    EXIT_OK,
    EXIT_STRICT,
    InputError,
    decode_utf8,
    parse_json,
)
from core.text import short_hash

__all__ = [
    "EXIT_INVALID",
    "EXIT_IO",
    "EXIT_OK",
    "EXIT_STRICT",
    "InputError",
    "decode_utf8",
    "parse_json",
]

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from core.grounding import SourceChunk

JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]
"""The ``--json`` option every command takes."""


def emit(obj: Any, *, as_json: bool, human: str | None = None) -> None:
    """Print ``obj`` as one JSON document (``--json``) or ``human`` text otherwise."""
    if as_json or human is None:
        sys.stdout.write(json.dumps(obj, ensure_ascii=False, default=str) + "\n")
    else:
        typer.echo(human)


def fail(
    message: str,
    *,
    code: int,
    as_json: bool,
    error: str = "error",
    **extra: Any,
) -> NoReturn:
    """Report an error (JSON object on stdout with ``--json``, one line on stderr) and exit."""
    if as_json:
        sys.stdout.write(
            json.dumps({"error": error, "message": message, **extra}, ensure_ascii=False) + "\n"
        )
    else:
        typer.echo(f"error: {message}", err=True)
        for key, value in extra.items():
            if isinstance(value, dict):
                for k, v in value.items():
                    typer.echo(f"  {key}.{k}: {v}", err=True)
            elif isinstance(value, list):
                for item in value[:50]:
                    typer.echo(f"  {key}: {item}", err=True)
    raise typer.Exit(code)


# the longest file name a file system takes: an argument longer than this, with a line
# break, or of several words and no folder, is text given where a path belongs (an answer
# pasted in), and is not echoed
_NAME_MAX = 255
_TEXT_WORDS = 4


def _shown_path(path: str) -> str:
    """A path as an error message may show it; text given in its place (a pasted answer)
    is named by its length and hash only, as patient text must be."""
    text_like = (
        len(path) > _NAME_MAX
        or "\n" in path
        or "\r" in path
        or (len(path.split()) >= _TEXT_WORDS and "/" not in path and "\\" not in path)
    )
    if not text_like:
        return path
    return (
        f"the argument is {len(path):,} characters of text (sha256 {short_hash(path)}), "
        "not a path: give the text in a file, or - to read it from stdin"
    )


def read_bytes(path: Path | str, *, what: str, max_bytes: int) -> bytes:
    """Read a file (or ``-`` for stdin), refusing missing, empty or oversized input."""
    if str(path) == "-":
        data = sys.stdin.buffer.read(max_bytes + 1)
    else:
        p = Path(path)
        if not p.exists():
            raise InputError(f"{what}: file not found: {_shown_path(str(path))}")
        if not p.is_file():
            raise InputError(f"{what}: not a regular file: {p}")
        size = p.stat().st_size
        if size > max_bytes:
            raise InputError(
                f"{what}: file is {size} bytes, above the limit of {max_bytes} bytes "
                "(GROUNDWATCH_MAX_INPUT_BYTES)",
                code=EXIT_INVALID,
                error="too_large",
            )
        data = p.read_bytes()
    if len(data) > max_bytes:
        raise InputError(
            f"{what}: input is above the limit of {max_bytes} bytes (GROUNDWATCH_MAX_INPUT_BYTES)",
            code=EXIT_INVALID,
            error="too_large",
        )
    return data


def read_text(
    path: Path | str,
    *,
    what: str,
    max_bytes: int,
    allow_empty: bool = False,
    max_chars: int | None = None,
) -> str:
    """Read a UTF-8 text file with clear errors for missing, empty, huge or undecodable input;
    ``max_chars``: the longest text one record may hold (GROUNDWATCH_MAX_TRANSCRIPT_CHARS), the
    same limit import applies."""
    text = decode_utf8(read_bytes(path, what=what, max_bytes=max_bytes), what=what)
    if not allow_empty and not text.strip():
        raise InputError(f"{what}: file is empty", code=EXIT_INVALID, error="empty")
    if max_chars is not None and len(text) > max_chars:
        raise InputError(
            f"{what}: {len(text):,} characters, above the limit of {max_chars:,} "
            "(GROUNDWATCH_MAX_TRANSCRIPT_CHARS)",
            code=EXIT_INVALID,
            error="too_large",
        )
    return text


def read_json(path: Path | str, *, what: str, max_bytes: int) -> Any:
    """Read a JSON document, naming line and column of a syntax error (no content echoed)."""
    return parse_json(read_text(path, what=what, max_bytes=max_bytes), what=what)


def _invalid_sources(message: str) -> InputError:
    return InputError(message, code=EXIT_INVALID, error="invalid_sources")


def parse_sources(
    data: Any, *, where: str, max_chars: int | None = None, or_else: str = ""
) -> list[SourceChunk]:
    """Source chunks from a JSON list of {"id", "text"[, "type", "similarity"]} objects
    (``or_else``: what else the caller would have taken, said when it is not such a list).

    Errors name the item and field that is wrong (``where[i].field``), never the text.
    """
    from core.grounding import SOURCE_TYPES, SourceChunk

    if not isinstance(data, list) or not data:
        raise _invalid_sources(
            f"{where}: must be a non-empty JSON list of {{id, text}} objects{or_else}"
        )
    chunks: list[SourceChunk] = []
    seen: set[str] = set()
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise _invalid_sources(f"{where}[{i}]: must be an object")
        for field in ("id", "text"):
            if not isinstance(item.get(field), str) or not item[field].strip():
                raise _invalid_sources(f"{where}[{i}].{field}: required, a non-empty string")
        kind = item.get("type", "note")
        if kind not in SOURCE_TYPES:
            raise _invalid_sources(f"{where}[{i}].type: must be one of {', '.join(SOURCE_TYPES)}")
        similarity = item.get("similarity")
        if similarity is not None and (
            isinstance(similarity, bool)
            or not isinstance(similarity, int | float)
            or not 0 <= similarity <= 1
        ):
            raise _invalid_sources(f"{where}[{i}].similarity: must be a number within [0, 1]")
        if max_chars is not None and len(item["text"]) > max_chars:
            raise InputError(
                f"{where}[{i}].text: {len(item['text'])} characters, above the limit of "
                f"{max_chars} (GROUNDWATCH_MAX_TRANSCRIPT_CHARS)",
                code=EXIT_INVALID,
                error="too_large",
            )
        if item["id"] in seen:
            raise _invalid_sources(f"{where}[{i}].id: duplicate source id")
        seen.add(item["id"])
        chunks.append(SourceChunk(item["id"], item["text"], kind, similarity))
    return chunks


def read_sources(
    paths: Sequence[Path],
    *,
    max_bytes: int,
    max_chars: int,
    file_id: Literal["name", "stem"] = "name",
) -> list[SourceChunk]:
    """Sources from files: a text file is one note (its id: the file name or stem), a .json
    file a list of {"id", "text"} objects or a FHIR resource or Bundle (one document, read as
    a structured record). Ids must be unique across all files."""
    from core.grounding import SourceChunk

    chunks: list[SourceChunk] = []
    kind: Literal["note", "document"]
    for path in paths:
        what = f"source {path}"
        text = read_text(path, what=what, max_bytes=max_bytes)
        if path.suffix.lower() == ".json":
            data = parse_json(text, what=what)
            # a FHIR resource or Bundle names its type; any other object is a list of sources
            # written wrong (and told so), not a record read as such by guess
            if not (isinstance(data, dict) and isinstance(data.get("resourceType"), str)):
                chunks.extend(
                    parse_sources(
                        data,
                        where=what,
                        max_chars=max_chars,
                        or_else=", or a FHIR resource or Bundle",
                    )
                )
                continue
            kind = "document"
        else:
            kind = "note"
        if len(text) > max_chars:
            raise InputError(
                f"{what}: {len(text)} characters, above the limit of {max_chars} "
                "(GROUNDWATCH_MAX_TRANSCRIPT_CHARS)",
                code=EXIT_INVALID,
                error="too_large",
            )
        chunks.append(SourceChunk(path.name if file_id == "name" else path.stem, text, kind))
    ids = [c.id for c in chunks]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise _invalid_sources(f"sources: duplicate source id across files ({len(duplicates)})")
    return chunks


def migrated_engine(as_json: bool) -> Engine:
    """The configured database, upgraded to the newest schema (a database error ends the
    command with exit 1, naming the database problem)."""
    from core.config import get_settings
    from core.storage.db import DatabaseError, get_engine, upgrade_to_head

    settings = get_settings()
    try:
        upgrade_to_head(settings.database_url)
    except DatabaseError as exc:
        fail(str(exc), code=EXIT_IO, as_json=as_json, error="database")
    return get_engine(settings.database_url)


def parse_when(value: str | None, option: str, *, as_json: bool) -> datetime | None:
    """An ISO date or datetime option (``--since``) as an aware datetime (UTC when no zone is
    given); a value that is neither ends the command with a usage error naming the option."""
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        fail(
            f"{option}: not an ISO date or datetime: {value!r}",
            code=EXIT_IO,
            as_json=as_json,
            error="usage",
        )
    return when if when.tzinfo else when.replace(tzinfo=UTC)
