"""Unexpected failures, reported without record text.

An exception's message can carry whatever it was handed: a database driver quotes the failing
statement with its parameters (the query, the answer, the transcript), a parser the offending
text. The top-level handlers of the command line and the dashboard therefore never print or
log an exception's message or traceback: :func:`log_unhandled` logs its type, where in
Groundwatch's code it was raised (file and line), a hash of its message and an incident code,
and the user sees the type and the code only.
"""

from __future__ import annotations

import logging
import secrets
import traceback
from pathlib import Path

from core.text import short_hash

log = logging.getLogger("groundwatch.incident")

_ROOT = Path(__file__).resolve().parent.parent


def where(exc: BaseException) -> str:
    """The innermost frame of Groundwatch's own code that the exception passed through, as
    ``path:line`` relative to the project (library frames are skipped: their paths are not
    ours to show)."""
    found = "unknown"
    for frame in traceback.extract_tb(exc.__traceback__):
        try:
            relative = Path(frame.filename).resolve().relative_to(_ROOT)
        except ValueError:
            continue
        if relative.parts and relative.parts[0] in ("core", "dashboard"):
            found = f"{relative}:{frame.lineno}"
    return found


def log_unhandled(exc: BaseException, *, surface: str) -> str:
    """Log an unexpected exception by type, place and message hash; returns the incident code
    to show the user (the same code is in the log line)."""
    code = secrets.token_hex(4)
    chained = exc.__cause__ or exc.__context__
    log.error(
        "unhandled %s in the %s at %s (message sha %s%s); incident %s",
        type(exc).__name__,
        surface,
        where(exc),
        short_hash(str(exc)),
        f", caused by {type(chained).__name__}" if chained is not None else "",
        code,
    )
    return code


__all__ = ["log_unhandled", "where"]
