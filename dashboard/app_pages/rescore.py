"""Re-scoring: the runs of ``groundwatch rescore`` (which verifier version, when, how many
answers changed flag), one run's largest changes, or two runs compared."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import streamlit as st

from dashboard import auth, data

user = auth.guard("rescore")
st.title("Re-scoring")
st.caption(
    "Each run checks stored answers again with one verifier version (`groundwatch rescore`). "
    "The scores the answers were stored with stay as they are; every run keeps its own, so "
    "the newest can be read alone or two runs compared. Risk: higher is worse."
)

runs = data.rescore_runs()
if not runs:
    st.info(
        "No re-scoring run yet. Run `groundwatch rescore` (see docs/scale-out.md) to check "
        "stored answers again after the verifier or its settings change."
    )
    st.stop()

st.dataframe(runs, hide_index=True, key="rescore_runs")
links = auth.can_open(user, "report")


def _label(run_id: str) -> str:
    run = next(r for r in runs if r["run"] == run_id)
    return f"{run_id} · {run['verifier']} · {run['status']} · {run['started']:%Y-%m-%d %H:%M}"


def _report_link(conversation_id: str) -> str:
    return f"/report?id={quote(conversation_id, safe='')}"


def _table(rows: list[dict[str, Any]], key: str) -> None:
    if links:
        rows = [{**r, "report": _report_link(r["conversation_id"])} for r in rows]
    st.dataframe(
        rows,
        hide_index=True,
        key=key,
        column_config={"report": st.column_config.LinkColumn("report", display_text="open")}
        if links
        else None,
    )


ids = [r["run"] for r in runs]
view = st.radio("Show", ["One run", "Compare two runs"], horizontal=True, key="rescore_view")
if view == "One run":
    finished = [r["run"] for r in runs if r["status"] == "finished"]
    default = ids.index(finished[0]) if finished else 0  # the newest finished run
    chosen = st.selectbox("Run", ids, index=default, format_func=_label, key="rescore_run")
    report = data.rescore_report(str(chosen))
    if report is None:
        st.warning("This run is no longer stored.")
        st.stop()
    if report["status"] != "finished":
        st.warning(
            f"This run stopped before it finished ({report['checked']:,} of "
            f"{report['selected']:,} answers checked): go on with "
            f"`groundwatch rescore --resume {report['run_id']}`."
        )
    c = st.columns(5)
    c[0].metric("Checked", f"{report['checked']:,}")
    c[1].metric("Newly flagged", f"{report['newly_flagged']:,}")
    c[2].metric("Cleared", f"{report['cleared']:,}")
    c[3].metric("Unchanged", f"{report['same']:,}")
    c[4].metric("Could not be checked", f"{report['failed']:,}")
    if report["new"]:
        st.caption(f"{report['new']:,} answers had no stored scores to compare with.")
    st.subheader("Largest changes of flag")
    if report["top_changes"]:
        _table(report["top_changes"], "rescore_top")
    else:
        st.caption("No answer changed flag in this run.")
else:
    if len(ids) < 2:
        st.info("One run so far: a comparison needs two.")
        st.stop()
    c1, c2 = st.columns(2)
    run_a = c1.selectbox("Older run (A)", ids, index=1, format_func=_label, key="rescore_a")
    run_b = c2.selectbox("Newer run (B)", ids, index=0, format_func=_label, key="rescore_b")
    if run_a == run_b:
        st.info("Pick two different runs.")
        st.stop()
    cmp = data.rescore_compare(str(run_a), str(run_b))
    k = st.columns(4)
    k[0].metric("Checked by both", f"{cmp['both']:,}")
    k[1].metric("Flagged by B only", f"{cmp['flagged_in_b_only']:,}")
    k[2].metric("Flagged by A only", f"{cmp['flagged_in_a_only']:,}")
    k[3].metric("Flagged by both", f"{cmp['flagged_in_both']:,}")
    st.subheader("Largest differences (risk B - A)")
    if cmp["rows"]:
        _table(cmp["rows"], "rescore_compare")
    else:
        st.caption("The two runs flag the same answers.")
