"""CSV downloads of what a chart or table shows, audited when the user downloads them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st

from dashboard import auth, data, exports


def csv_button(
    label: str, what: str, rows: Sequence[Mapping[str, Any]], fields: Sequence[str]
) -> None:
    """A download button for ``rows`` as CSV (``exports.rows_to_csv``: cells that would start
    a spreadsheet formula are neutralised); the download is audited as an ``export`` of
    ``what`` by the session's user. ``what`` also keys the widget and names the file."""
    csv_text = exports.rows_to_csv(rows, fields)
    actor = auth.actor()  # read now: the data callable runs on click, after the script

    def exported() -> str:
        data.audit(actor=actor, action="export", target_type=what, target_id="csv")
        return csv_text

    st.download_button(
        label,
        data=exported,
        file_name=f"{what}.csv",
        mime="text/csv",
        key=f"{what}_csv",
        on_click="ignore",
        icon=":material/download:",
    )


__all__ = ["csv_button"]
