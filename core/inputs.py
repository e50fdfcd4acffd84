"""Decoding of input text shared by the command line, the import record and the upload page.

Errors name what is wrong and where (byte offset, line, column, field), never the text itself;
:class:`InputError` carries the exit code the command line uses for it (0 done, 1 usage or I/O
error, 2 invalid input, 3 a requested strict failure).
"""

from __future__ import annotations

from typing import Any

from core.text import SURROGATE_ERROR, JSONInputError, loads_input, unstorable_text

EXIT_OK = 0
EXIT_IO = 1
EXIT_INVALID = 2
EXIT_STRICT = 3


class InputError(Exception):
    """A file could not be read as required; ``code`` is the exit code to use."""

    def __init__(self, message: str, *, code: int = EXIT_IO, error: str = "io_error") -> None:
        super().__init__(message)
        self.code = code
        self.error = error


def decode_utf8(data: bytes, *, what: str) -> str:
    """Decode UTF-8 (a BOM is dropped), naming the byte offset of the first invalid byte."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(
            f"{what}: invalid UTF-8 at byte {exc.start} (line {line})",
            code=EXIT_INVALID,
            error="invalid_utf8",
        ) from None
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise InputError(
            f"{what}: contains a NUL byte (line {line})", code=EXIT_INVALID, error="nul_byte"
        )
    return text


def parse_json(text: str, *, what: str) -> Any:
    """Decode JSON text, naming line and column of a syntax error (no content echoed), and
    where a string holds an unpaired surrogate escape."""
    try:
        value = loads_input(text)
    except JSONInputError as exc:
        raise InputError(
            f"{what}: not valid JSON ({exc})", code=EXIT_INVALID, error="invalid_json"
        ) from None
    broken = unstorable_text(value)
    if broken:
        raise InputError(
            f"{what}: {broken[0]}: {broken[1]}",
            code=EXIT_INVALID,
            error="invalid_unicode" if broken[1] == SURROGATE_ERROR else "control_character",
        )
    return value
