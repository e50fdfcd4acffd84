"""A page's filters and selection kept in the URL (``st.query_params``), so a link reproduces
the view.

Each run, a page first calls :func:`read` for each of its parameters *before* drawing the
widget that holds it, and puts a value it accepts into the widget's session state; after
drawing, it calls :func:`write` with the values the page now shows. A URL value is taken only
when it differs from the value this session last wrote: that is a link opened in a new
session (or an address edited by hand); otherwise the widgets lead and the URL follows them.
Streamlit clears the query string when the page changes, and the next :func:`write` puts the
new page's state back.

Values are plain strings (a list for a repeated parameter); a value that does not parse or is
not allowed is ignored, never an error. Parameters carry ids, dates and choices only: never
record text, and patient ids only for the roles that may see them (the sidebar decides).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import date
from typing import Any

import streamlit as st

#: Session-state key of the values this session last wrote to the URL.
WRITTEN_KEY = "url_state_written"


def _written() -> dict[str, Any]:
    written = st.session_state.get(WRITTEN_KEY)
    if not isinstance(written, dict):
        written = {}
        st.session_state[WRITTEN_KEY] = written
    return written


def read(param: str, *, many: bool = False) -> Any:
    """The URL's value of ``param`` (a list when ``many``) when it is new to this session,
    else None (absent, or the value this session wrote itself)."""
    qp = st.query_params
    if param not in qp:
        return None
    value: Any = list(qp.get_all(param)) if many else qp.get(param)
    if _written().get(param) == value:
        return None
    return value


def write(params: Mapping[str, str | Sequence[str] | None]) -> None:
    """Put the page's current values into the URL (None or empty: the parameter is removed)."""
    qp = st.query_params
    written = _written()
    for param, value in params.items():
        if value is None or value == "" or (not isinstance(value, str) and not list(value)):
            if param in qp:
                del qp[param]
            written.pop(param, None)
            continue
        new: Any = value if isinstance(value, str) else [str(v) for v in value]
        current: Any = qp.get(param) if isinstance(new, str) else list(qp.get_all(param))
        if current != new:
            qp[param] = new
        written[param] = new


# --------------------------------------------------------------------------- parsing


def as_date(value: Any) -> date | None:
    """An ISO day, or None."""
    try:
        return date.fromisoformat(str(value)[:10]) if value else None
    except ValueError:
        return None


def as_choice(value: Any, choices: Iterable[Any]) -> Any:
    """``value`` when it is one of ``choices`` (compared as text), else None."""
    if value is None:
        return None
    for c in choices:
        if str(c) == str(value):
            return c
    return None


def as_choices(values: Any, choices: Iterable[Any]) -> list[Any] | None:
    """The listed values that are among ``choices`` (in the URL's order), or None."""
    if values is None:
        return None
    allowed = {str(c): c for c in choices}
    out = [allowed[str(v)] for v in values if str(v) in allowed]
    return list(dict.fromkeys(out))


def as_number(value: Any, lo: float, hi: float, *, integer: bool = False) -> float | int | None:
    """A number within [lo, hi], or None."""
    try:
        number = int(str(value)) if integer else float(str(value))
    except (TypeError, ValueError):
        return None
    if number != number or not lo <= number <= hi:  # NaN or out of range
        return None
    return number


__all__ = [
    "WRITTEN_KEY",
    "as_choice",
    "as_choices",
    "as_date",
    "as_number",
    "read",
    "write",
]
