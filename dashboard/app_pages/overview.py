"""Overview: quality trends with threshold lines, volume, share flagged, KPIs with deltas."""

from __future__ import annotations

import streamlit as st

from dashboard import auth, data, figures
from dashboard.sidebar import current_filters

auth.guard("overview")
st.title("Overview")
f = current_filters()
if f.start is None:
    st.info("No answers stored yet. Load the demo with `groundwatch demo` or import records.")
    st.stop()

k = data.kpis(f)
prev_f = f.previous()
prev = data.kpis(prev_f) if prev_f is not None else None
st.caption(
    f"{f.start} to {f.end} · deltas against {prev_f.start} to {prev_f.end}"
    if prev_f is not None
    else ""
)


def _delta(name: str) -> float | None:
    if prev is None or prev["conversations"] == 0:
        return None
    now, before = k.get(name), prev.get(name)
    if now is None or before is None:
        return None
    return round(float(now) - float(before), 3)


def _fmt(value: float | None, pct: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:.0%}" if pct else f"{value:.2f}"


cols = st.columns(6)
cols[0].metric(
    "Answers",
    f"{k['conversations']:,}",
    delta=(k["conversations"] - prev["conversations"]) if prev and prev["conversations"] else None,
    delta_color="off",
)
cols[1].metric(
    "Share flagged",
    _fmt(k["flagged_share"], pct=True),
    delta=_delta("flagged_share"),
    delta_color="inverse",
)
cols[2].metric("Grounding", _fmt(k["grounding"]), delta=_delta("grounding"))
cols[3].metric("Consistency", _fmt(k["consistency"]), delta=_delta("consistency"))
cols[4].metric("Confidence", _fmt(k["confidence"]), delta=_delta("confidence"))
cols[5].metric(
    "Hallucination risk",
    _fmt(k["risk"]),
    delta=_delta("risk"),
    delta_color="inverse",
    help="Higher is worse.",
)

granularity = (
    st.segmented_control("Period", ["day", "week"], default="day", key="overview_granularity")
    or "day"
)
points = data.trend(f, granularity)
st.plotly_chart(
    figures.score_trends_figure(points, thresholds=data.thresholds()),
    key="overview_scores",
)
st.plotly_chart(figures.volume_figure(points), key="overview_volume")
