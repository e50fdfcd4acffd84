"""Pure figure builders: plain data in, a plotly Figure out (no Streamlit, no database).

Rows are plain mappings (as ``dashboard.data`` returns them), so every builder is easy to test
and to reuse outside the app. Scores are in [0, 1]; grounding, consistency and confidence are
higher-better, hallucination risk is higher-worse, and the charts say so in their titles.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

Row = Mapping[str, Any]

#: Every chart's plotly template. It is plotly's default template, applied as each figure is
#: created, rather than a layout value: given as a value, plotly validates the whole template
#: (a few hundred properties) again for each figure, 10-30 ms a chart.
TEMPLATE = "plotly_white"
pio.templates.default = TEMPLATE

#: Calm palette shared by all charts.
COLORS: dict[str, str] = {
    "grounding": "#2e6f9e",
    "consistency": "#3f8f6b",
    "confidence": "#8a6bb0",
    "risk": "#c0503a",
    "quality": "#5b6b7a",
    "volume": "#9fb3c8",
    "flagged": "#c98a00",
    "confirmed": "#b03030",
    "false_alarm": "#2e8b57",
    "unsure": "#8a8f98",
    "threshold": "#7a7f87",
}

SCORE_TITLES: dict[str, str] = {
    "grounding": "Grounding (higher is better)",
    "consistency": "Consistency (higher is better)",
    "confidence": "Confidence (higher is better)",
    "risk": "Hallucination risk (higher is worse)",
}

_LAYOUT: dict[str, Any] = {
    # the title sits on the plot's top edge, below the toolbar (modebar) that plotly draws in
    # the top right corner: on a phone the toolbar spans most of the width and would cover a
    # title placed in the top margin's upper half
    "margin": {"l": 40, "r": 20, "t": 70, "b": 40},
    "title_x": 0,
    "title_xref": "paper",
    "title_y": 1,
    "title_yref": "paper",
    "title_yanchor": "bottom",
    "title_pad_b": 10,
    "font": {"size": 12},
    "legend": {"orientation": "h", "y": -0.15},
}


def _empty(title: str, message: str = "No data for these filters") -> go.Figure:
    fig = go.Figure()
    fig.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    fig.update_layout(title=title, xaxis={"visible": False}, yaxis={"visible": False}, **_LAYOUT)
    return fig


def score_trends_figure(
    points: Sequence[Row], *, thresholds: Mapping[str, float], height: int = 520
) -> go.Figure:
    """Four small charts (grounding, consistency, confidence, risk) with threshold lines.

    Args:
        points: rows with ``period`` and the four score averages (None where unscored).
        thresholds: ``{metric: threshold}``; each chart draws its threshold as a dashed line.
    """
    if not points:
        return _empty("Scores over time")
    metrics = list(SCORE_TITLES)
    fig = make_subplots(
        rows=2, cols=2, subplot_titles=[SCORE_TITLES[m] for m in metrics], shared_xaxes=True
    )
    x = [p["period"] for p in points]
    for i, metric in enumerate(metrics):
        row, col = i // 2 + 1, i % 2 + 1
        fig.add_trace(
            go.Scatter(
                x=x,
                y=[p.get(metric) for p in points],
                mode="lines+markers",
                name=metric,
                line={"color": COLORS[metric], "width": 2},
                marker={"size": 4},
                connectgaps=False,
                showlegend=False,
            ),
            row=row,
            col=col,
        )
        if metric in thresholds:
            fig.add_hline(
                y=thresholds[metric],
                line={"dash": "dash", "color": COLORS["threshold"], "width": 1},
                annotation_text=f"threshold {thresholds[metric]:.2f}",
                annotation_position="top left",
                annotation_font_size=10,
                row=row,
                col=col,
            )
        fig.update_yaxes(range=[0, 1.02], row=row, col=col)
    fig.update_layout(height=height, **_LAYOUT)
    return fig


def volume_figure(points: Sequence[Row], *, height: int = 300) -> go.Figure:
    """Answers per period (bars) and the share flagged (line, right axis; higher is worse)."""
    if not points:
        return _empty("Volume and share flagged")
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    x = [p["period"] for p in points]
    fig.add_trace(
        go.Bar(
            x=x,
            y=[p["conversations"] for p in points],
            name="answers",
            marker_color=COLORS["volume"],
        ),
        secondary_y=False,
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=[p["flagged_share"] for p in points],
            name="share flagged",
            mode="lines+markers",
            line={"color": COLORS["flagged"], "width": 2},
            marker={"size": 4},
        ),
        secondary_y=True,
    )
    fig.update_yaxes(title_text="answers", secondary_y=False)
    fig.update_yaxes(title_text="share flagged", range=[0, 1], secondary_y=True)
    fig.update_layout(title="Volume and share flagged", height=height, **_LAYOUT)
    return fig


def reliability_figure(
    mean_predicted: Sequence[float],
    fraction_positive: Sequence[float],
    counts: Sequence[int],
    *,
    label: str = "detector",
) -> go.Figure:
    """Reliability diagram: predicted probability vs observed frequency, with the diagonal."""
    if not mean_predicted:
        return _empty("Reliability diagram", "No reviewed statements yet")
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[0, 1],
            y=[0, 1],
            mode="lines",
            name="perfect calibration",
            line={"dash": "dash", "color": COLORS["threshold"]},
        )
    )
    fig.add_trace(
        go.Scatter(
            x=list(mean_predicted),
            y=list(fraction_positive),
            mode="lines+markers",
            name=label,
            marker={"size": [6 + min(int(c), 200) ** 0.5 * 2 for c in counts]},
            text=[f"{int(c)} statements" for c in counts],
            line={"color": COLORS["risk"]},
        )
    )
    fig.update_layout(
        title="Reliability diagram",
        xaxis={"title": "predicted probability of hallucination", "range": [0, 1]},
        yaxis={"title": "share confirmed by reviewers", "range": [0, 1]},
        height=380,
        **_LAYOUT,
    )
    return fig


def score_by_verdict_figure(rows: Sequence[Row], *, score: str = "risk") -> go.Figure:
    """Histogram of a statement score (e.g. risk, higher is worse) per reviewer verdict."""
    if not rows:
        return _empty("Scores by verdict", "No reviewed statements yet")
    fig = go.Figure()
    for verdict in ("confirmed", "false_alarm", "unsure"):
        values = [r[score] for r in rows if r["verdict"] == verdict and r.get(score) is not None]
        if values:
            fig.add_trace(
                go.Histogram(
                    x=values,
                    name=verdict.replace("_", " "),
                    marker_color=COLORS[verdict],
                    opacity=0.7,
                    xbins={"start": 0, "end": 1.0001, "size": 0.05},
                )
            )
    fig.update_layout(
        barmode="overlay",
        title=f"Statement {score} by verdict",
        xaxis={"title": score, "range": [0, 1]},
        yaxis={"title": "statements"},
        height=340,
        **_LAYOUT,
    )
    return fig


def threshold_figure(
    thresholds: Sequence[float],
    flag_rate: Sequence[float],
    false_alarm_rate: Sequence[float],
    *,
    current: float | None = None,
) -> go.Figure:
    """Flag rate and false-alarm rate (both lower is calmer) as the risk threshold moves."""
    if not thresholds:
        return _empty("Threshold explorer", "No reviewed statements yet")
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=list(thresholds),
            y=list(flag_rate),
            name="flag rate",
            mode="lines",
            line={"color": COLORS["flagged"]},
        )
    )
    fig.add_trace(
        go.Scatter(
            x=list(thresholds),
            y=list(false_alarm_rate),
            name="false-alarm rate among flagged",
            mode="lines",
            line={"color": COLORS["false_alarm"]},
        )
    )
    if current is not None:
        fig.add_vline(x=current, line={"dash": "dot", "color": COLORS["threshold"]})
    fig.update_layout(
        title="Threshold explorer",
        xaxis={"title": "risk threshold (flag when risk >= threshold)", "range": [0, 1]},
        yaxis={"title": "rate", "range": [0, 1.02]},
        height=340,
        **_LAYOUT,
    )
    return fig


def patient_scores_figure(rows: Sequence[Row], *, thresholds: Mapping[str, float]) -> go.Figure:
    """One patient's answers over time: grounding and consistency (higher is better), risk
    (higher is worse); answers with a contradiction are marked with a red cross."""
    if not rows:
        return _empty("Answers over time", "No answers for this patient")
    fig = go.Figure()
    x = [r["timestamp"] for r in rows]
    for metric in ("grounding", "consistency", "risk"):
        fig.add_trace(
            go.Scatter(
                x=x,
                y=[r.get(metric) for r in rows],
                name=SCORE_TITLES[metric],
                mode="lines+markers",
                line={"color": COLORS[metric]},
                marker={"size": 6},
            )
        )
    marked = [r for r in rows if r.get("contradictions")]
    if marked:
        fig.add_trace(
            go.Scatter(
                x=[r["timestamp"] for r in marked],
                y=[r.get("consistency") or 0.0 for r in marked],
                name="contradiction",
                mode="markers",
                marker={"symbol": "x", "size": 12, "color": COLORS["confirmed"]},
                text=[f"{r['contradictions']} contradiction(s)" for r in marked],
            )
        )
    if "consistency" in thresholds:
        fig.add_hline(
            y=thresholds["consistency"],
            line={"dash": "dash", "color": COLORS["threshold"], "width": 1},
        )
    fig.update_layout(title="Answers over time", yaxis={"range": [0, 1.02]}, height=360, **_LAYOUT)
    return fig


_ASSERTION_SYMBOL = {
    "present": "circle",
    "negated": "circle-open",
    "historical": "square-open",
    "family": "diamond-open",
    "hypothetical": "triangle-up-open",
}
_ACTION_SYMBOL = {
    "started": "triangle-up",
    "stopped": "triangle-down",
    "increased": "arrow-up",
    "decreased": "arrow-down",
}
_KIND_COLOR = {"medication": "#2e6f9e", "condition": "#3f8f6b", "allergy": "#c0503a"}


def entity_timeline_figure(rows: Sequence[Row]) -> go.Figure:
    """The patient's clinical entities over time, one line per entity.

    Rows carry ``at``, ``kind``, ``name``, ``assertion``, ``action`` and ``contradicted``;
    stopped drugs point down, started drugs up, denials are hollow, contradictions get a red
    ring.
    """
    if not rows:
        return _empty("Entity timeline", "No medications, diagnoses or allergies recorded")
    fig = go.Figure()
    labels = sorted({f"{r['kind']}: {r['name']}" for r in rows})
    for kind in sorted({r["kind"] for r in rows}):
        sub = [r for r in rows if r["kind"] == kind]
        fig.add_trace(
            go.Scatter(
                x=[r["at"] for r in sub],
                y=[f"{r['kind']}: {r['name']}" for r in sub],
                mode="markers",
                name=kind,
                marker={
                    "size": 11,
                    "color": _KIND_COLOR.get(kind, COLORS["quality"]),
                    "symbol": [
                        _ACTION_SYMBOL.get(r.get("action") or "")
                        or _ASSERTION_SYMBOL.get(r.get("assertion") or "", "circle")
                        for r in sub
                    ],
                    "line": {
                        "width": [3 if r.get("contradicted") else 0 for r in sub],
                        "color": COLORS["confirmed"],
                    },
                },
                text=[
                    " ".join(
                        str(v) for v in (r.get("assertion"), r.get("action"), r.get("dose")) if v
                    )
                    for r in sub
                ],
                hovertemplate="%{y}<br>%{x}<br>%{text}<extra></extra>",
            )
        )
    fig.update_layout(
        title="Entity timeline (red ring: contradicted)",
        height=max(300, 28 * len(labels) + 120),
        yaxis={"categoryorder": "array", "categoryarray": labels},
        **_LAYOUT,
    )
    return fig


def selfcheck_figure(sentences: Sequence[Row], *, threshold: float | None = None) -> go.Figure:
    """SelfCheck sentence scores (higher is worse: the samples disagree with the sentence)."""
    if not sentences:
        return _empty("SelfCheck sentence scores", "No SelfCheck result for this answer")
    fig = go.Figure(
        go.Bar(
            x=[f"#{int(s.get('index', i)) + 1}" for i, s in enumerate(sentences)],
            y=[s.get("score") for s in sentences],
            marker_color=COLORS["risk"],
        )
    )
    if threshold is not None:
        fig.add_hline(y=threshold, line={"dash": "dash", "color": COLORS["threshold"]})
    fig.update_layout(
        title="SelfCheck sentence scores (higher is worse)",
        yaxis={"range": [0, 1.02], "title": "score"},
        xaxis={"title": "sentence"},
        height=280,
        **_LAYOUT,
    )
    return fig


def confidence_figure(parts: Mapping[str, float | None]) -> go.Figure:
    """Confidence breakdown by component (higher is better)."""
    items = [(k, v) for k, v in parts.items() if v is not None]
    if not items:
        return _empty("Confidence breakdown", "No confidence breakdown stored")
    fig = go.Figure(
        go.Bar(
            y=[k.replace("_", " ") for k, _ in items],
            x=[v for _, v in items],
            orientation="h",
            marker_color=COLORS["confidence"],
        )
    )
    fig.update_layout(
        title="Confidence breakdown (higher is better)",
        xaxis={"range": [0, 1]},
        height=60 + 40 * len(items),
        **_LAYOUT,
    )
    return fig


# --------------------------------------------------------------------------- analyst views

#: A chart point standing on fewer answers than this is drawn hollow and grey, and its hover
#: says "few answers": one uploaded answer must not read like a regression.
MIN_POINT_ANSWERS = 5

#: The label of the merged line when the chart is not split by model.
ALL_MODELS = "all selected models"

#: Line colours of the models, in the order the models are listed (repeats past ten).
MODEL_COLORS: tuple[str, ...] = (
    "#2e6f9e",
    "#c0503a",
    "#3f8f6b",
    "#8a6bb0",
    "#c98a00",
    "#5b6b7a",
    "#d4679a",
    "#2a9d8f",
    "#7f5539",
    "#6c757d",
)
_FEW_COLOR = "#a3a8b0"


def padded_range(
    values: Sequence[float | None], *, pad: float = 0.1, min_pad: float = 0.02
) -> list[float]:
    """A y-axis range fitted to ``values`` (scores in [0, 1]): their span with ``pad`` of it
    (at least ``min_pad``) on each side, clipped to [-min_pad, 1 + min_pad] so that a point
    at 0 or 1 is drawn whole; [0, 1] when there is no value."""
    present = [float(v) for v in values if v is not None]
    if not present:
        return [0.0, 1.0]
    lo, hi = min(present), max(present)
    margin = max((hi - lo) * pad, min_pad)
    return [max(-min_pad, lo - margin), min(1.0 + min_pad, hi + margin)]


def _model_label(row: Row) -> str:
    model = row.get("model")
    return ALL_MODELS if model is None else str(model)


def _by_model(rows: Sequence[Row]) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = {}
    for r in rows:
        out.setdefault(_model_label(r), []).append(r)
    for model_rows in out.values():
        model_rows.sort(key=lambda r: r["period"])
    return out


def _hover(label: str, row: Row, measure: str, value: str, min_answers: int) -> str:
    n = int(row.get("conversations") or 0)
    text = (
        f"{html.escape(label)}<br>{row['period']}<br>{measure} {value}<br>"
        f"{n:,} answer{'s' if n != 1 else ''}"
    )
    if n < min_answers:
        text += f"<br>few answers (fewer than {min_answers}): read with care"
    return text


def _markers(rows: Sequence[Row], color: str, min_answers: int) -> dict[str, Any]:
    few = [int(r.get("conversations") or 0) < min_answers for r in rows]
    return {
        "size": [9 if f else 6 for f in few],
        "symbol": ["circle-open" if f else "circle" for f in few],
        "color": [_FEW_COLOR if f else color for f in few],
        "line": {"width": 2, "color": [_FEW_COLOR if f else color for f in few]},
    }


def _point_data(label: str, rows: Sequence[Row]) -> list[list[str]]:
    """What a selected point says: its period (ISO day) and model ('' for the merged line)."""
    model = "" if label == ALL_MODELS else label
    return [[str(r["period"]), model] for r in rows]


def model_trends_figure(
    rows: Sequence[Row],
    *,
    thresholds: Mapping[str, float],
    min_answers: int = MIN_POINT_ANSWERS,
    height: int = 560,
) -> go.Figure:
    """Grounding, consistency, confidence (higher is better) and risk (higher is worse) over
    time, one line per model, in four small charts.

    Each y-axis is fitted to the values it shows (:func:`padded_range`), so a change from 0.90
    to 0.96 is visible; each chart draws its threshold as a dashed line (named at the chart's
    edge when it lies outside the range shown). The hover gives the model, the period, the
    value to two decimals and the number of answers behind the point; points standing on
    fewer than ``min_answers`` answers are hollow and grey and say so. Each point carries
    ``[period, model]`` as custom data (model '' on the merged line) for drill-down.

    Args:
        rows: rows with ``period``, ``conversations``, the four scores and ``model`` (absent
            or None: the merged line of all selected models).
        thresholds: ``{metric: threshold}`` from the settings.
        min_answers: fewer answers than this make a point "few answers".
    """
    if not rows:
        return _empty("Scores over time")
    metrics = list(SCORE_TITLES)
    fig = make_subplots(
        rows=2,
        cols=2,
        # two lines each, from the chart's left edge: on a phone a chart is ~120 px wide
        subplot_titles=[SCORE_TITLES[m].replace(" (", "<br>(") for m in metrics],
        shared_xaxes=True,
        vertical_spacing=0.14,
    )
    for i, title in enumerate(fig.layout.annotations):
        domain = fig.layout[f"xaxis{'' if i == 0 else i + 1}"].domain
        title.update(x=domain[0], xanchor="left", align="left", font_size=13)
    groups = _by_model(rows)
    # traces, lines and notes are added in one go each: plotly's per-call row/col lookups
    # and layout copies cost more than building the whole chart
    traces: list[go.Scatter] = []
    shapes: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    axes: dict[str, Any] = {}
    for i, metric in enumerate(metrics):
        suffix = "" if i == 0 else str(i + 1)  # make_subplots numbers the 2x2 axes row-major
        for j, (label, model_rows) in enumerate(groups.items()):
            color = MODEL_COLORS[j % len(MODEL_COLORS)]
            values = [r.get(metric) for r in model_rows]
            traces.append(
                go.Scatter(
                    x=[r["period"] for r in model_rows],
                    y=values,
                    xaxis=f"x{suffix}",
                    yaxis=f"y{suffix}",
                    mode="lines+markers",
                    name=html.escape(label),
                    legendgroup=label,
                    showlegend=i == 0,
                    line={"color": color, "width": 2},
                    marker=_markers(model_rows, color, min_answers),
                    connectgaps=False,
                    text=[
                        _hover(label, r, metric, "–" if v is None else f"{v:.2f}", min_answers)
                        for r, v in zip(model_rows, values, strict=True)
                    ],
                    customdata=_point_data(label, model_rows),
                    hovertemplate="%{text}<extra></extra>",
                )
            )
        y_range = padded_range([r.get(metric) for r in rows])
        axes[f"yaxis{suffix}"] = {"range": y_range, "tickformat": ".2f"}
        if metric in thresholds:
            line, line_notes = _threshold_line(float(thresholds[metric]), y_range, suffix)
            shapes.append(line)
            notes.extend(line_notes)
    fig.add_traces(traces)
    fig.update_layout(
        **axes,
        shapes=shapes,
        annotations=[*fig.layout.annotations, *notes],
        height=height,
        hovermode="closest",
        **_LAYOUT,
    )
    return fig


def _threshold_line(
    threshold: float, y_range: Sequence[float], suffix: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The threshold of the chart on axes ``x{suffix}``/``y{suffix}`` as a dashed line with
    its label; when outside ``y_range``, also a note at the chart's edge saying where."""
    line = {
        "type": "line",
        "xref": f"x{suffix} domain",
        "x0": 0,
        "x1": 1,
        "yref": f"y{suffix}",
        "y0": threshold,
        "y1": threshold,
        "line": {"dash": "dash", "color": COLORS["threshold"], "width": 1},
    }
    font = {"size": 10, "color": COLORS["threshold"]}
    notes: list[dict[str, Any]] = [
        {
            "text": f"threshold {threshold:.2f}",
            "showarrow": False,
            "xref": f"x{suffix} domain",
            "x": 0.0,
            "xanchor": "left",
            "yref": f"y{suffix}",
            "y": threshold,
            "yanchor": "bottom",
            "font": font,
        }
    ]
    if not y_range[0] <= threshold <= y_range[1]:
        where = "below" if threshold < y_range[0] else "above"
        notes.append(
            {
                "text": f"threshold {threshold:.2f} ({where} the range shown)",
                "showarrow": False,
                "xref": f"x{suffix} domain",
                "yref": f"y{suffix} domain",
                "x": 0.0,
                "y": 0.0 if where == "below" else 1.0,
                "xanchor": "left",
                "yanchor": "bottom" if where == "below" else "top",
                "font": font,
            }
        )
    return line, notes


def model_volume_figure(
    rows: Sequence[Row], *, min_answers: int = MIN_POINT_ANSWERS, height: int = 320
) -> go.Figure:
    """Answers per period (bars, stacked by model) and the share flagged (higher is worse; one
    line per model on the right axis, fitted to its values). Hover gives the counts; share
    points standing on fewer than ``min_answers`` answers are hollow and grey and say so;
    every bar and point carries ``[period, model]`` for drill-down."""
    if not rows:
        return _empty("Volume and share flagged")
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    groups = _by_model(rows)
    traces: list[Any] = []
    for j, (label, model_rows) in enumerate(groups.items()):
        color = MODEL_COLORS[j % len(MODEL_COLORS)]
        x = [r["period"] for r in model_rows]
        traces.append(
            go.Bar(
                x=x,
                y=[r["conversations"] for r in model_rows],
                yaxis="y",
                name=f"{html.escape(label)}: answers",
                legendgroup=label,
                marker_color=color,
                opacity=0.45,
                text=[
                    _hover(label, r, "answers", f"{int(r['conversations']):,}", min_answers)
                    for r in model_rows
                ],
                textposition="none",
                customdata=_point_data(label, model_rows),
                hovertemplate="%{text}<extra></extra>",
            )
        )
        shares = [r.get("flagged_share") for r in model_rows]
        traces.append(
            go.Scatter(
                x=x,
                y=shares,
                yaxis="y2",  # the secondary axis of make_subplots
                name=f"{html.escape(label)}: share flagged",
                legendgroup=label,
                mode="lines+markers",
                line={"color": color, "width": 2},
                marker=_markers(model_rows, color, min_answers),
                text=[
                    _hover(label, r, "share flagged", "–" if v is None else f"{v:.0%}", min_answers)
                    for r, v in zip(model_rows, shares, strict=True)
                ],
                customdata=_point_data(label, model_rows),
                hovertemplate="%{text}<extra></extra>",
            )
        )
    fig.add_traces(traces)
    fig.update_yaxes(title_text="answers", secondary_y=False)
    fig.update_yaxes(
        title_text="share flagged",
        range=padded_range([r.get("flagged_share") for r in rows]),
        tickformat=".0%",
        secondary_y=True,
    )
    fig.update_layout(title="Volume and share flagged", barmode="stack", height=height, **_LAYOUT)
    return fig


def patient_answers_figure(rows: Sequence[Row], *, thresholds: Mapping[str, float]) -> go.Figure:
    """One patient's answers over time: grounding and consistency (higher is better) and risk
    (higher is worse), one point per answer.

    The y-axis is fitted to the values shown (:func:`padded_range`); each score's threshold
    is a dashed line in its colour; the hover names the answer, its model and time and gives
    the value to two decimals; answers with a contradiction get a red cross. Every point
    carries ``[answer id, conversation id]`` as custom data, to open its report.
    """
    if not rows:
        return _empty("Answers over time", "No answers for this patient")
    fig = go.Figure()
    x = [r["timestamp"] for r in rows]
    metrics = ("grounding", "consistency", "risk")
    for metric in metrics:
        values = [r.get(metric) for r in rows]
        fig.add_trace(
            go.Scatter(
                x=x,
                y=values,
                name=SCORE_TITLES[metric],
                mode="lines+markers",
                line={"color": COLORS[metric]},
                marker={"size": 7},
                text=[
                    f"{html.escape(str(r.get('external_id')))} · {html.escape(str(r.get('model')))}"
                    f"<br>{r['timestamp']:%Y-%m-%d %H:%M}<br>{metric} "
                    + ("–" if v is None else f"{v:.2f}")
                    for r, v in zip(rows, values, strict=True)
                ],
                customdata=[[str(r.get("external_id")), str(r.get("id"))] for r in rows],
                hovertemplate="%{text}<extra></extra>",
            )
        )
    marked = [r for r in rows if r.get("contradictions")]
    if marked:
        fig.add_trace(
            go.Scatter(
                x=[r["timestamp"] for r in marked],
                y=[r.get("consistency") or 0.0 for r in marked],
                name="contradiction",
                mode="markers",
                marker={"symbol": "x", "size": 12, "color": COLORS["confirmed"]},
                text=[
                    f"{html.escape(str(r.get('external_id')))}<br>"
                    f"{int(r['contradictions'])} contradiction(s)"
                    for r in marked
                ],
                customdata=[[str(r.get("external_id")), str(r.get("id"))] for r in marked],
                hovertemplate="%{text}<extra></extra>",
            )
        )
    for metric in metrics:
        if metric in thresholds:
            fig.add_hline(
                y=float(thresholds[metric]),
                line={"dash": "dash", "color": COLORS[metric], "width": 1},
                annotation_text=f"{metric} threshold {float(thresholds[metric]):.2f}",
                annotation_position="top left",
                annotation_font_size=10,
                annotation_font_color=COLORS[metric],
            )
    shown = [r.get(m) for r in rows for m in metrics]
    fig.update_layout(
        title="Answers over time",
        yaxis={"range": padded_range(shown), "tickformat": ".2f"},
        height=380,
        hovermode="closest",
        **_LAYOUT,
    )
    return fig


def selected_point(points: Sequence[Mapping[str, Any]]) -> tuple[str, str | None] | None:
    """The ``(period, model)`` of the first selected point of a chart drawn here (model None
    for the merged line), from Streamlit's selection ``points``; None when nothing usable is
    selected."""
    for p in points:
        data = p.get("customdata")
        if isinstance(data, list | tuple) and len(data) >= 2 and data[0]:
            return str(data[0]), (str(data[1]) or None)
    return None


__all__ = [
    "ALL_MODELS",
    "MIN_POINT_ANSWERS",
    "MODEL_COLORS",
    "COLORS",
    "SCORE_TITLES",
    "confidence_figure",
    "entity_timeline_figure",
    "model_trends_figure",
    "model_volume_figure",
    "padded_range",
    "patient_answers_figure",
    "patient_scores_figure",
    "reliability_figure",
    "score_by_verdict_figure",
    "score_trends_figure",
    "selected_point",
    "selfcheck_figure",
    "threshold_figure",
    "volume_figure",
]
