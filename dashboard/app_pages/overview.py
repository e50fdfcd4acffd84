"""Overview: KPIs with deltas, a per-model table with intervals, trends per model with
threshold lines, CSV of each chart, and the answers behind a selected point.

The view lives in the URL: the sidebar's filters, ``period`` (day or week), ``merged`` (one
line for all models) and the selected point (``day``, ``day_model``).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard import auth, data, exports, figures, url_state
from dashboard.downloads import csv_button
from dashboard.highlight import md_text
from dashboard.sidebar import current_filters

user = auth.guard("overview")
st.title("Overview")
f = current_filters()
if f.start is None:
    st.info("No answers stored yet. Load the demo with `groundwatch demo` or import records.")
    st.stop()

k = data.kpis(f)
prev_f = f.previous()
prev = data.kpis(prev_f) if prev_f is not None else None
rate = float(data.settings().check_sample_rate)
st.caption(
    (
        f"{f.start} to {f.end} · deltas against {prev_f.start} to {prev_f.end}"
        if prev_f is not None
        else f"{f.start} to {f.end}"
    )
    + (
        " · checks run on every answer"
        if rate >= 1.0
        else f" · checks run on {rate:.0%} of answers (the rest are stored with their checks "
        "marked skipped)"
    ),
    help="The check sample rate in force (GROUNDWATCH_CHECK_SAMPLE_RATE): an answer is checked "
    "when a hash of its id falls under it, so the same answer always gets the same decision.",
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
    delta=f"{k['conversations'] - prev['conversations']:+,d}"
    if prev and prev["conversations"]
    else None,
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

# --------------------------------------------------------------------------- per model

st.subheader("By model")
summary = data.model_summary(f)
st.caption(
    "Each model over the date range, with 95 % intervals (Wilson for the share flagged, "
    "Student's t for the means) and the change against the period of the same length before."
)
# a static table: a few rows of text need no data grid, whose script the browser would load
# and start before the trends could be drawn
st.table(exports.model_summary_display(summary))
csv_button(
    "Table (CSV)",
    "overview_models",
    exports.model_summary_rows(summary),
    exports.MODEL_SUMMARY_FIELDS,
)

# --------------------------------------------------------------------------- trends

if (v := url_state.read("period")) is not None and v in ("day", "week"):
    st.session_state["overview_granularity"] = v
if (v := url_state.read("merged")) is not None:
    st.session_state["overview_split"] = v != "1"
if url_state.read("day") is not None or url_state.read("day_model") is not None:
    day = url_state.as_date(st.query_params.get("day"))
    st.session_state["overview_drill"] = (
        (day.isoformat(), st.query_params.get("day_model") or None) if day else None
    )

st.subheader("Trends")
models_in_view = list(f.models) or data.models()
c1, c2 = st.columns([1, 3])
with c1:
    granularity = (
        st.segmented_control(
            "Period",
            ["day", "week"],
            default="day",
            key="overview_granularity",
            # a selected day is no week: its list closes
            on_change=lambda: st.session_state.update(overview_drill=None),
        )
        or "day"
    )
with c2:
    split = len(models_in_view) > 1 and st.toggle(
        "One line per model",
        value=True,
        key="overview_split",
        help="Off: one line for all the models in the filter.",
    )
points = (
    data.trend_by_model(f, granularity)
    if split or len(f.models) == 1
    else data.trend(f, granularity)
)
st.caption(
    f"Hover a point for its value and how many answers it stands on; hollow grey points stand "
    f"on fewer than {figures.MIN_POINT_ANSWERS} answers. Click a point to list its answers."
)


def _selected(event: Any, chart: str) -> None:
    """A newly selected point opens its answers (a selection already seen changes nothing,
    so that closing the list sticks). Each small chart has its own selection: the one that
    changed names the point."""
    for name, picked in figures.selected_points(event.selection if points else {}).items():
        seen_key = f"overview_seen_{chart}_{name}"
        if picked != st.session_state.get(seen_key):
            st.session_state[seen_key] = picked
            if picked is not None:
                st.session_state["overview_drill"] = picked


chart_rows = exports.chart_rows(
    points, min_answers=figures.MIN_POINT_ANSWERS, all_models=figures.ALL_MODELS
)
scores_event = st.vega_lite_chart(
    figures.model_trends_figure(points, thresholds=data.thresholds()),
    key="overview_scores",
    # stacked charts are drawn at their content's width unless told to fill the column
    width="stretch",
    on_select="rerun" if points else "ignore",  # an empty chart has no point to select
)
_selected(scores_event, "scores")
csv_button("Scores (CSV)", "overview_scores", chart_rows, exports.TREND_FIELDS)
volume_event = st.vega_lite_chart(
    figures.model_volume_figure(points),
    key="overview_volume",
    on_select="rerun" if points else "ignore",  # an empty chart has no point to select
)
_selected(volume_event, "volume")
csv_button("Volume (CSV)", "overview_volume", chart_rows, exports.VOLUME_FIELDS)

# --------------------------------------------------------------------------- drill-down

drill = st.session_state.get("overview_drill")
day = url_state.as_date(drill[0]) if drill else None
if drill and day is not None:
    model = drill[1]
    label = model or figures.ALL_MODELS
    span = f"week of {day}" if granularity == "week" else str(day)
    st.subheader(f"Answers of {span} · {md_text(label)}")
    answers = data.answers_at(f, day, granularity=granularity, model=model)
    if not answers:
        st.caption("No answers of this point within the filters.")
    else:
        links = auth.can_open(user, "report")
        st.dataframe(
            exports.drill_rows(answers, report_links=links),
            hide_index=True,
            key="overview_answers",
            column_config={
                "report": st.column_config.LinkColumn("report", display_text="open report")
            }
            if links
            else None,
        )
        if len(answers) >= 200:
            st.caption("The newest 200 answers are listed.")
    st.button(
        "Close the list",
        key="overview_drill_close",
        on_click=lambda: st.session_state.update(overview_drill=None),
    )
else:
    drill = None

url_state.write(
    {
        "period": granularity if granularity != "day" else None,
        "merged": "1" if len(models_in_view) > 1 and not split else None,
        "day": drill[0] if drill else None,
        "day_model": drill[1] if drill and drill[1] else None,
    }
)
