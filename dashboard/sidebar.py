"""The shared sidebar: date range, models, patients and the reviewer's name.

The router draws it once per run; pages read the current values with
:func:`current_filters` and :func:`reviewer_name` (widget keys prefixed ``sidebar_``).
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import streamlit as st

from dashboard import auth, data

DEFAULT_DAYS = 30


def _default_range(lo: date, hi: date) -> tuple[date, date]:
    return max(lo, hi - timedelta(days=DEFAULT_DAYS - 1)), hi


def render_sidebar() -> data.FilterState:
    """Draw the filters every page obeys and return them."""
    lo, hi = data.date_bounds()
    with st.sidebar:
        st.markdown("### Filters")
        if lo is not None and hi is not None:
            if "sidebar_dates" not in st.session_state:
                st.session_state["sidebar_dates"] = _default_range(lo, hi)
            st.date_input(
                "Date range",
                min_value=lo,
                max_value=hi,
                key="sidebar_dates",
                help=f"Answers from {lo} to {hi} are stored; the default shows the last "
                f"{DEFAULT_DAYS} days.",
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
                key="sidebar_reviewer",
                help="Stored with every verdict you give.",
                placeholder="e.g. Dr. Rivera",
            )
    return current_filters()


def current_filters() -> data.FilterState:
    """The sidebar's filter values (a date range still being picked counts as one day)."""
    dates: Any = st.session_state.get("sidebar_dates") or ()
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
    """The logged-in user's name; without a login, the name typed in the sidebar."""
    if auth.auth_mode() != "none":
        return auth.actor()
    return str(st.session_state.get("sidebar_reviewer") or "").strip()
