"""The shared sidebar: date range, models, patients and the reviewer's name.

The router draws it once per run; pages read the current values with
:func:`current_filters` and :func:`reviewer_name` (widget keys prefixed ``sidebar_``).

The date range follows the data: until the user picks one, it is the last
:data:`DEFAULT_DAYS` days with stored answers, ending today (UTC) or on the last stored day
when that is later,
recomputed on every run from :func:`data.date_bounds`, so an answer saved in this session
(whose save clears the cached bounds) is inside it on the next run. A range the user picked
stays as picked (its last selectable day still moves with the data), only clamped into the
selectable days when it lies outside them.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import streamlit as st

from dashboard import auth, data, url_state

DEFAULT_DAYS = 30
DATES_KEY = "sidebar_dates"
# the range this sidebar last set by itself: while the widget still holds it, the user has not
# picked one, and it follows the data
AUTO_DATES_KEY = "sidebar_dates_auto"


def _today() -> date:
    """Today in UTC (the timestamps are stored in UTC)."""
    return datetime.now(UTC).date()


def _default_range(lo: date, hi: date, today: date) -> tuple[date, date]:
    """The last DEFAULT_DAYS days with stored answers, up to today (or up to the last stored
    day when later): a database whose answers are all older still opens on them."""
    return max(lo, hi - timedelta(days=DEFAULT_DAYS - 1)), max(hi, today)


def _days(value: Any) -> tuple[date, ...]:
    """The days of a date-range value (a range still being picked holds one)."""
    days = (value,) if isinstance(value, date) else tuple(value or ())
    return tuple(d for d in days if isinstance(d, date))


def _sync_dates(lo: date, hi: date, today: date) -> date:
    """Set the range before its widget is drawn; return the widget's last selectable day.

    A range the user never changed (none yet, or the one this sidebar set last) is replaced by
    the default for the current bounds. A range the user picked is kept, each day clamped into
    the selectable days (``st.date_input`` raises on a value outside its bounds).
    """
    last = max(hi, today)
    current = _days(st.session_state.get(DATES_KEY))
    if not current or current == st.session_state.get(AUTO_DATES_KEY):
        value = _default_range(lo, hi, today)
        st.session_state[AUTO_DATES_KEY] = value
        st.session_state[DATES_KEY] = value
    else:
        clamped = tuple(min(max(d, lo), last) for d in current)
        if clamped != current:
            st.session_state[DATES_KEY] = clamped
    return last


def _restore_from_url() -> None:
    """Take the filters of a link opened in this session (``from``, ``to``, ``models`` and,
    for the roles that see them, ``patients``) before the widgets are drawn; a value that
    does not parse or names no stored model or patient is ignored."""
    qp = st.query_params
    if url_state.read("from") is not None or url_state.read("to") is not None:
        start = url_state.as_date(qp.get("from"))
        end = url_state.as_date(qp.get("to")) or start
        if start is not None and end is not None and start <= end:
            st.session_state[DATES_KEY] = (start, end)  # a picked range: kept, clamped
    models = url_state.as_choices(url_state.read("models", many=True), data.models())
    if models is not None:
        st.session_state["sidebar_models"] = models
    if _sees_patients():
        patients = url_state.as_choices(url_state.read("patients", many=True), data.patients())
        if patients is not None:
            st.session_state["sidebar_patients"] = patients


def _write_to_url(f: data.FilterState) -> None:
    """Keep the filters in the URL, so that a link reproduces them (no patient ids for the
    roles that may not see them: the parameter is removed)."""
    url_state.write(
        {
            "from": f.start.isoformat() if f.start else None,
            "to": f.end.isoformat() if f.end else None,
            "models": list(f.models),
            "patients": list(f.patients) if _sees_patients() else None,
        }
    )


def render_sidebar() -> data.FilterState:
    """Draw the filters every page obeys and return them; they are kept in the URL."""
    lo, hi = data.date_bounds()
    _restore_from_url()
    with st.sidebar:
        st.markdown("### Filters")
        if lo is not None and hi is not None:
            last = _sync_dates(lo, hi, _today())
            st.date_input(
                "Date range",
                min_value=lo,
                max_value=last,
                key=DATES_KEY,
                help=f"Answers from {lo} to {hi} are stored (UTC); until you pick a range, the "
                f"last {DEFAULT_DAYS} days with answers, up to today, are shown, and a new answer "
                "joins them.",
            )
        else:
            st.caption("No answers stored yet.")
        st.multiselect("Model", data.models(), key="sidebar_models", placeholder="All models")
        if _sees_patients():
            st.multiselect(
                "Patient", data.patients(), key="sidebar_patients", placeholder="All patients"
            )
        st.divider()
        if auth.auth_mode() == "none":  # with a login, verdicts carry the logged-in user
            st.text_input(
                "Reviewer name",
                key=auth.REVIEWER_KEY,
                max_chars=auth.MAX_REVIEWER_CHARS,
                help="Stored with every verdict you give; the audit trail adds it to the local "
                "user's name.",
                placeholder="e.g. Dr. Rivera",
            )
    f = current_filters()
    _write_to_url(f)
    return f


def current_filters() -> data.FilterState:
    """The sidebar's filter values (a date range still being picked counts as one day)."""
    dates: Any = st.session_state.get(DATES_KEY) or ()
    if isinstance(dates, date):
        dates = (dates,)
    start = dates[0] if len(dates) >= 1 else None
    end = dates[1] if len(dates) >= 2 else start
    return data.FilterState(
        start=start,
        end=end,
        models=tuple(st.session_state.get("sidebar_models") or ()),
        patients=tuple(st.session_state.get("sidebar_patients") or ()) if _sees_patients() else (),
    )


def _sees_patients() -> bool:
    """Whether the session's user may see patient ids (the roles that read record text; an
    analyst sees aggregates over all patients and is never sent the ids)."""
    return auth.can(auth.current_user(), "view_text")


def reviewer_name() -> str:
    """The name stored with a verdict: the logged-in user's name; without a login, the name
    typed in the sidebar ('' when none is typed). Audit events use :func:`auth.actor`."""
    if auth.auth_mode() != "none":
        user = auth.current_user()
        return user.label if user is not None else ""
    return auth.clean_reviewer(st.session_state.get(auth.REVIEWER_KEY))
