"""Pure figure builders: plain data in, an Altair (Vega-Lite) chart out (no Streamlit, no
database).

Rows are plain mappings (as ``dashboard.data`` returns them), so every builder is easy to test
and to reuse outside the app. Scores are in [0, 1]; grounding, consistency and confidence are
higher-better, hallucination risk is higher-worse, and the charts say so in their titles.

Each chart carries its data inline (``data.values``): a few hundred points at most, drawn by
Streamlit's Vega-Lite element, whose front end is a sixth the size of plotly's. Text (model
names, record ids) is data, never markup: Vega draws it as text and its tooltips escape it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any

import altair as alt

Row = Mapping[str, Any]
#: What every builder returns: a single, layered or stacked Altair chart (st.altair_chart).
Figure = alt.Chart | alt.LayerChart | alt.VConcatChart

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

#: The names of the point selections of the charts a click drills down from (overview,
#: patients) start with this; each selectable view has its own (``point_grounding``, ...), as
#: Vega-Lite does not share one point selection between the views of a stacked chart.
SELECTION = "point"
#: The fields a selected point of the overview's charts carries: its period (ISO day, text:
#: not the time axis' field, which a selection would give as epoch milliseconds) and model
#: ('' for the merged line); of the patients chart: the answer's record id and conversation id.
POINT_FIELDS = ("period", "model_key")
ANSWER_FIELDS = ("external_id", "conversation_id")

_DASH = [5, 4]
_DOT = [2, 3]
#: Axis labels drawn inside the plot, along its left edge: the chart's width is then the
#: plot's width, so that a chart stretched to a phone's 390 px does not reach past it.
_INNER_Y_AXIS: dict[str, Any] = {
    "labelAlign": "left",
    "labelBaseline": "bottom",
    "labelPadding": -6,
    "labelColor": "#6b7280",
    "ticks": False,
    "domain": False,
    "title": None,
}


def _data(rows: Sequence[Mapping[str, Any]]) -> alt.Data:
    return alt.Data(values=[dict(r) for r in rows])


#: The name of a composed chart's shared points (its layers or stacked charts read them).
DATASET = "points"


def _shared(chart: Any, values: list[dict[str, Any]]) -> Any:
    """``chart`` (layered or stacked) reading ``values`` as the named dataset :data:`DATASET`.
    Named, because Streamlit hands a composed chart's top-level inline values to Vega apart
    from the spec, where its layers do not find them."""
    chart.data = alt.NamedData(name=DATASET)
    chart.datasets = {DATASET: values}
    return chart


def _title(text: str | list[str], subtitle: str | None = None) -> alt.TitleParams:
    kwargs: dict[str, Any] = {"anchor": "start", "fontSize": 13, "offset": 6}
    if subtitle:
        kwargs["subtitle"] = subtitle
    return alt.TitleParams(text, **kwargs)


def _iso(value: Any) -> str:
    """A day or time as ISO text (what the chart's time axis reads, in UTC)."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


def _utc_x(field: str, title: str | None = None, *, fmt: str = "%b %d") -> alt.X:
    return alt.X(
        f"{field}:T",
        title=title,
        # inset: the first and last points are drawn whole inside the chart's width, the
        # first to the right of the y labels drawn inside the plot (_INNER_Y_AXIS)
        scale=alt.Scale(type="utc", padding=30),
        axis=alt.Axis(format=fmt, labelOverlap=True, labelFlush=16, grid=False),
    )


def _finish(chart: Any, *, legend: bool = True) -> Any:
    """The shared look: no view border, a legend under the chart (never beside it, where it
    would take the width a phone does not have)."""
    # Set on the chart itself: Altair's properties() and configure_*() each return a deep copy
    # of the whole chart (the overview's trends: ~0.2 s of the page run for three copies).
    # No padding at the sides: a chart stretched to its column is as wide as the column.
    chart.padding = {"left": 0, "right": 0, "top": 4, "bottom": 20}
    config: dict[str, Any] = {
        "view": {"stroke": None},
        "axis": {"labelFontSize": 11, "titleFontSize": 11, "gridColor": "#eef0f3"},
    }
    if legend:
        config["legend"] = {
            "orient": "bottom",
            "direction": "horizontal",
            "title": None,
            "labelLimit": 220,
            "columns": 3,
        }
    chart.config = alt.Config(**config)
    return chart


def _empty(title: str, message: str = "No data for these filters") -> alt.Chart:
    chart = (
        alt.Chart(_data([{"message": message}]), title=_title(title))
        .mark_text(fontSize=13, color=COLORS["threshold"])
        .encode(text="message:N")
        .properties(height=120)
    )
    return _finish(chart, legend=False)


def _rule(value: float, color: str, *, dash: list[int] = _DASH, field: str = "y") -> alt.Chart:
    enc = {"x": alt.datum(value)} if field == "x" else {"y": alt.datum(value)}
    return (
        alt.Chart(_data([{}]))
        .mark_rule(strokeDash=dash, color=color, strokeWidth=1, clip=True)
        .encode(**enc)
    )


def _label(value: float, text: str, color: str) -> alt.Chart:
    """A threshold's name at the chart's left edge, just above its line."""
    return (
        alt.Chart(_data([{"label": text}]))
        .mark_text(align="left", baseline="bottom", dx=40, dy=-2, fontSize=10, color=color)
        .encode(x=alt.value(0), y=alt.datum(value), text="label:N")
    )


# --------------------------------------------------------------------------- simple charts


def reliability_figure(
    mean_predicted: Sequence[float],
    fraction_positive: Sequence[float],
    counts: Sequence[int],
    *,
    label: str = "detector",
) -> Figure:
    """Reliability diagram: predicted probability vs observed frequency, with the diagonal."""
    if not mean_predicted:
        return _empty("Reliability diagram", "No reviewed statements yet")
    rows = [
        {"predicted": float(p), "observed": float(o), "statements": int(c), "series": label}
        for p, o, c in zip(mean_predicted, fraction_positive, counts, strict=True)
    ]
    diagonal = (
        alt.Chart(
            _data(
                [
                    {"x": 0.0, "series": "perfect calibration"},
                    {"x": 1.0, "series": "perfect calibration"},
                ]
            )
        )
        .mark_line(strokeDash=_DASH, color=COLORS["threshold"])
        .encode(x="x:Q", y="x:Q")
    )
    scale = alt.Scale(domain=[0, 1], nice=False)
    curve = (
        alt.Chart(_data(rows))
        .mark_line(
            color=COLORS["risk"], point=alt.OverlayMarkDef(filled=True, color=COLORS["risk"])
        )
        .encode(
            x=alt.X("predicted:Q", title="predicted probability of hallucination", scale=scale),
            y=alt.Y("observed:Q", title="share confirmed by reviewers", scale=scale),
            tooltip=[
                alt.Tooltip("predicted:Q", format=".2f"),
                alt.Tooltip("observed:Q", title="share confirmed", format=".2f"),
                alt.Tooltip("statements:Q", format=","),
            ],
        )
    )
    sized = (
        alt.Chart(_data(rows))
        .mark_circle(color=COLORS["risk"], opacity=0.35)
        .encode(
            x="predicted:Q",
            y="observed:Q",
            size=alt.Size("statements:Q", legend=None, scale=alt.Scale(range=[30, 400])),
            tooltip=[alt.Tooltip("statements:Q", format=",")],
        )
    )
    chart = alt.layer(diagonal, sized, curve).properties(
        title=_title("Reliability diagram", f"dashed: perfect calibration · line: {label}"),
        height=300,
    )
    return _finish(chart)


def score_by_verdict_figure(rows: Sequence[Row], *, score: str = "risk") -> Figure:
    """Histogram of a statement score (e.g. risk, higher is worse) per reviewer verdict (bins
    of 0.05, overlaid)."""
    from dashboard.exports import verdict_histogram_rows

    bars = verdict_histogram_rows(rows, score=score)
    if not bars:
        return _empty("Scores by verdict", "No reviewed statements yet")
    verdicts = [
        v for v in ("confirmed", "false_alarm", "unsure") if any(b["verdict"] == v for b in bars)
    ]
    for b in bars:
        b["verdict"] = str(b["verdict"]).replace("_", " ")
    chart = (
        alt.Chart(_data(bars))
        .mark_bar(opacity=0.7)
        .encode(
            x=alt.X("bin_start:Q", title=score, scale=alt.Scale(domain=[0, 1], nice=False)),
            x2="bin_end:Q",
            y=alt.Y("statements:Q", title="statements", stack=None),
            y2=alt.datum(0),
            color=alt.Color(
                "verdict:N",
                scale=alt.Scale(
                    domain=[v.replace("_", " ") for v in verdicts],
                    range=[COLORS[v] for v in verdicts],
                ),
            ),
            tooltip=[
                "verdict:N",
                alt.Tooltip("bin_start:Q", title="from", format=".2f"),
                alt.Tooltip("bin_end:Q", title="to", format=".2f"),
                alt.Tooltip("statements:Q", format=","),
            ],
        )
        .properties(title=_title(f"Statement {score} by verdict"), height=240)
    )
    return _finish(chart)


def threshold_figure(
    thresholds: Sequence[float],
    flag_rate: Sequence[float],
    false_alarm_rate: Sequence[float],
    *,
    current: float | None = None,
) -> Figure:
    """Flag rate and false-alarm rate (both lower is calmer) as the risk threshold moves."""
    if not thresholds:
        return _empty("Threshold explorer", "No reviewed statements yet")
    names = ("flag rate", "false-alarm rate among flagged")
    rows = [
        {"threshold": float(t), "rate": float(v), "series": name}
        for name, values in zip(names, (flag_rate, false_alarm_rate), strict=True)
        for t, v in zip(thresholds, values, strict=True)
    ]
    lines = (
        alt.Chart(_data(rows))
        .mark_line()
        .encode(
            x=alt.X(
                "threshold:Q",
                title="risk threshold (flag when risk >= threshold)",
                scale=alt.Scale(domain=[0, 1], nice=False),
            ),
            y=alt.Y("rate:Q", title="rate", scale=alt.Scale(domain=[0, 1.02], nice=False)),
            color=alt.Color(
                "series:N",
                scale=alt.Scale(
                    domain=list(names), range=[COLORS["flagged"], COLORS["false_alarm"]]
                ),
            ),
            tooltip=[
                "series:N",
                alt.Tooltip("threshold:Q", format=".2f"),
                alt.Tooltip("rate:Q", format=".1%"),
            ],
        )
    )
    layers: list[Any] = [lines]
    if current is not None:
        layers.append(_rule(float(current), COLORS["threshold"], dash=_DOT, field="x"))
    chart = alt.layer(*layers).properties(title=_title("Threshold explorer"), height=240)
    return _finish(chart)


def _metric_color(metrics: Sequence[str]) -> alt.Color:
    return alt.Color(
        "metric:N",
        title=None,
        scale=alt.Scale(
            domain=[SCORE_TITLES[m] for m in metrics], range=[COLORS[m] for m in metrics]
        ),
    )


#: A cross (x) drawn with strokes: the contradiction marker.
_CROSS = "M-1,-1L1,1M-1,1L1,-1"


def _crosses(marked: Sequence[Row], note: Any) -> alt.Chart:
    rows = [
        {
            "at": _iso(r["timestamp"]),
            "value": r.get("consistency") or 0.0,
            "answer": str(r.get("external_id")),
            "note": note(r),
            "external_id": str(r.get("external_id")),
            "conversation_id": str(r.get("id")),
        }
        for r in marked
    ]
    return (
        alt.Chart(_data(rows))
        .mark_point(shape=_CROSS, size=120, strokeWidth=2.5, color=COLORS["confirmed"])
        .encode(
            x=alt.X("at:T"),
            y=alt.Y("value:Q"),
            tooltip=["answer:N", alt.Tooltip("note:N", title="contradiction")],
        )
    )


_ASSERTION_SHAPE = {
    "present": ("circle", True),
    "negated": ("circle", False),
    "historical": ("square", False),
    "family": ("diamond", False),
    "hypothetical": ("triangle-up", False),
}
_ACTION_SHAPE = {
    "started": ("triangle-up", True),
    "stopped": ("triangle-down", True),
    "increased": ("arrow", True),
    "decreased": ("M-0.6,-1L0.6,-1L0,1Z", True),  # an arrow pointing down
}
_KIND_COLOR = {"medication": "#2e6f9e", "condition": "#3f8f6b", "allergy": "#c0503a"}


def entity_timeline_figure(rows: Sequence[Row]) -> Figure:
    """The patient's clinical entities over time, one line per entity.

    Rows carry ``at``, ``kind``, ``name``, ``assertion``, ``action`` and ``contradicted``;
    stopped drugs point down, started drugs up, denials are hollow, contradictions get a red
    ring.
    """
    if not rows:
        return _empty("Entity timeline", "No medications, diagnoses or allergies recorded")
    labels = sorted({f"{r['kind']}: {r['name']}" for r in rows})
    kinds = sorted({str(r["kind"]) for r in rows})
    points = []
    for r in rows:
        shape, filled = _ACTION_SHAPE.get(r.get("action") or "") or _ASSERTION_SHAPE.get(
            r.get("assertion") or "", ("circle", True)
        )
        points.append(
            {
                "at": _iso(r["at"]),
                "entity": f"{r['kind']}: {r['name']}",
                "kind": str(r["kind"]),
                "shape": shape,
                "hollow": not filled,
                "contradicted": bool(r.get("contradicted")),
                "detail": " ".join(
                    str(v) for v in (r.get("assertion"), r.get("action"), r.get("dose")) if v
                ),
            }
        )
    color = alt.Color(
        "kind:N",
        title=None,
        scale=alt.Scale(domain=kinds, range=[_KIND_COLOR.get(k, COLORS["quality"]) for k in kinds]),
    )
    chart = (
        alt.Chart(_data(points))
        .mark_point(size=110, filled=False, opacity=1)
        .encode(
            x=_utc_x("at"),
            y=alt.Y("entity:N", title=None, sort=labels, axis=alt.Axis(labelLimit=160)),
            shape=alt.Shape("shape:N", scale=None),
            color=color,
            fill=alt.condition("datum.hollow", alt.value("#ffffff"), color),
            stroke=alt.condition("datum.contradicted", alt.value(COLORS["confirmed"]), color),
            strokeWidth=alt.condition("datum.contradicted", alt.value(3), alt.value(1.5)),
            tooltip=["entity:N", alt.Tooltip("at:T", format="%Y-%m-%d %H:%M"), "detail:N"],
        )
        .properties(
            title=_title("Entity timeline (red ring: contradicted)"),
            height=max(180, 28 * len(labels)),
        )
    )
    return _finish(chart)


def selfcheck_figure(sentences: Sequence[Row], *, threshold: float | None = None) -> Figure:
    """SelfCheck sentence scores (higher is worse: the samples disagree with the sentence)."""
    if not sentences:
        return _empty("SelfCheck sentence scores", "No SelfCheck result for this answer")
    rows = [
        {"sentence": f"#{int(s.get('index', i)) + 1}", "score": s.get("score")}
        for i, s in enumerate(sentences)
    ]
    bars = (
        alt.Chart(_data(rows))
        .mark_bar(color=COLORS["risk"])
        .encode(
            x=alt.X("sentence:N", title="sentence", sort=None, axis=alt.Axis(labelAngle=0)),
            y=alt.Y("score:Q", title="score", scale=alt.Scale(domain=[0, 1.02], nice=False)),
            tooltip=["sentence:N", alt.Tooltip("score:Q", format=".2f")],
        )
    )
    layers: list[Any] = [bars]
    if threshold is not None:
        layers.append(_rule(float(threshold), COLORS["threshold"]))
    chart = alt.layer(*layers).properties(
        title=_title(["SelfCheck sentence scores", "(higher is worse)"]), height=180
    )
    return _finish(chart)


def confidence_figure(parts: Mapping[str, float | None]) -> Figure:
    """Confidence breakdown by component (higher is better)."""
    items = [(k, v) for k, v in parts.items() if v is not None]
    if not items:
        return _empty("Confidence breakdown", "No confidence breakdown stored")
    rows = [{"component": k.replace("_", " "), "value": float(v)} for k, v in items]
    chart = (
        alt.Chart(_data(rows))
        .mark_bar(color=COLORS["confidence"])
        .encode(
            y=alt.Y("component:N", title=None, sort=None),
            x=alt.X("value:Q", title=None, scale=alt.Scale(domain=[0, 1], nice=False)),
            tooltip=["component:N", alt.Tooltip("value:Q", format=".2f")],
        )
        .properties(
            title=_title(["Confidence breakdown", "(higher is better)"]), height=28 * len(items)
        )
    )
    return _finish(chart, legend=False)


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


def _model_color(labels: Sequence[str], *, legend: bool = True) -> alt.Color:
    return alt.Color(
        "model:N",
        title=None,
        scale=alt.Scale(
            domain=list(labels),
            range=[MODEL_COLORS[j % len(MODEL_COLORS)] for j in range(len(labels))],
        ),
        legend=alt.Legend() if legend else None,
    )


def _few_note(n: int, min_answers: int) -> str | None:
    return f"few answers (fewer than {min_answers}): read with care" if n < min_answers else None


def _point_row(label: str, row: Row, min_answers: int) -> dict[str, Any]:
    """What a chart point holds: its day, model (as stored: '' for the merged line, so that a
    selected point names it), label, the answers behind it and whether they are few."""
    n = int(row.get("conversations") or 0)
    return {
        "day": _iso(row["period"]),
        "period": _iso(row["period"]),
        "model": label,
        "model_key": "" if label == ALL_MODELS else label,
        "answers": n,
        "few": n < min_answers,
        "note": _few_note(n, min_answers),
    }


def _points(
    value: str, title: str, fmt: str, color: alt.Color, tooltip_head: list[Any]
) -> alt.Chart:
    """The selectable points of a line: filled in the model's colour, or hollow, grey and
    larger where they stand on few answers."""
    return (
        alt.Chart()
        .mark_point(filled=False, opacity=1, strokeWidth=2)
        .encode(
            x=alt.X("day:T"),
            y=alt.Y(f"{value}:Q"),
            color=color,
            fill=alt.condition("datum.few", alt.value("#ffffff"), color),
            stroke=alt.condition("datum.few", alt.value(_FEW_COLOR), color),
            size=alt.condition("datum.few", alt.value(70), alt.value(36)),
            tooltip=[
                *tooltip_head,
                alt.Tooltip(f"{value}:Q", title=title, format=fmt),
                alt.Tooltip("answers:Q", format=","),
                alt.Tooltip("note:N", title="note"),
            ],
        )
    )


def _threshold_layers(threshold: float, y_range: Sequence[float], color: str) -> list[Any]:
    """A chart's threshold as a dashed line with its name; when outside ``y_range``, a note at
    the chart's edge saying where it lies instead."""
    if y_range[0] <= threshold <= y_range[1]:
        return [_rule(threshold, color), _label(threshold, f"threshold {threshold:.2f}", color)]
    where = "below" if threshold < y_range[0] else "above"
    note = (
        alt.Chart(_data([{"label": f"threshold {threshold:.2f} ({where} the range shown)"}]))
        .mark_text(
            align="left",
            baseline="bottom" if where == "below" else "top",
            dx=40,
            dy=-2 if where == "below" else 2,
            fontSize=10,
            color=color,
        )
        .encode(
            x=alt.value(0),
            y=alt.value("height") if where == "below" else alt.value(0),
            text="label:N",
        )
    )
    return [_rule(threshold, color), note]


def _selectable(chart: alt.Chart, view: str, fields: Sequence[str]) -> alt.Chart:
    """``chart`` (one layer) with a click selection of one of its points, named
    ``point_<view>`` and carrying ``fields`` (Altair lifts it to the top of the spec)."""
    chart = chart.properties(name=view)
    chart.params = [
        alt.SelectionParameter(
            name=f"{SELECTION}_{view}",
            select=alt.PointSelectionConfig(type="point", fields=list(fields), on="click"),
        )
    ]
    return chart


def model_trends_figure(
    rows: Sequence[Row],
    *,
    thresholds: Mapping[str, float],
    min_answers: int = MIN_POINT_ANSWERS,
    height: int = 560,
) -> Figure:
    """Grounding, consistency, confidence (higher is better) and risk (higher is worse) over
    time, one line per model, in four small charts stacked one above the other.

    Each y-axis is fitted to the values it shows (:func:`padded_range`), so a change from 0.90
    to 0.96 is visible; each chart draws its threshold as a dashed line (named at the chart's
    edge when it lies outside the range shown). The tooltip gives the model, the day, the
    value to two decimals and the number of answers behind the point; points standing on
    fewer than ``min_answers`` answers are hollow and grey and say so. Clicking a point
    selects its ``day`` and ``model_key`` (model '' on the merged line), the point selection
    :data:`SELECTION` that :func:`selected_point` reads, for drill-down.

    Args:
        rows: rows with ``period``, ``conversations``, the four scores and ``model`` (absent
            or None: the merged line of all selected models).
        thresholds: ``{metric: threshold}`` from the settings.
        min_answers: fewer answers than this make a point "few answers".
    """
    if not rows:
        return _empty("Scores over time")
    groups = _by_model(rows)
    labels = list(groups)
    metrics = list(SCORE_TITLES)
    values = [
        {**_point_row(label, r, min_answers), **{m: r.get(m) for m in metrics}}
        for label, model_rows in groups.items()
        for r in model_rows
    ]
    color = _model_color(labels)
    head = [alt.Tooltip("model:N"), alt.Tooltip("day:N")]
    panels: list[Any] = []
    for i, metric in enumerate(metrics):
        y_range = padded_range([r.get(metric) for r in rows])
        y = alt.Y(
            f"{metric}:Q",
            scale=alt.Scale(domain=y_range, nice=False, zero=False),
            axis=alt.Axis(format=".2f", tickCount=4, **_INNER_Y_AXIS),
        )
        x = _utc_x("day", fmt="%b %d") if i == len(metrics) - 1 else _utc_x("day")
        line = alt.Chart().mark_line(strokeWidth=2, invalid=None).encode(x=x, y=y, color=color)
        points = _selectable(
            _points(metric, metric, ".2f", color, head), f"trend_{metric}", POINT_FIELDS
        )
        layers = [line, points]
        if metric in thresholds:
            layers += _threshold_layers(float(thresholds[metric]), y_range, COLORS["threshold"])
        title = SCORE_TITLES[metric].replace(" (", "\n(").split("\n")
        panels.append(
            alt.layer(*layers).properties(title=_title(title), height=max(60, (height - 160) // 4))
        )
    chart = _shared(alt.vconcat(*panels, spacing=14), values)
    return _finish(chart)


def model_volume_figure(
    rows: Sequence[Row], *, min_answers: int = MIN_POINT_ANSWERS, height: int = 320
) -> Figure:
    """Answers per period (bars, stacked by model) and the share flagged (higher is worse; one
    line per model on the right axis, fitted to its values). Tooltips give the counts; share
    points standing on fewer than ``min_answers`` answers are hollow and grey and say so;
    clicking a bar or a point selects its ``day`` and ``model_key`` for drill-down."""
    if not rows:
        return _empty("Volume and share flagged")
    groups = _by_model(rows)
    labels = list(groups)
    values = [
        {**_point_row(label, r, min_answers), "flagged_share": r.get("flagged_share")}
        for label, model_rows in groups.items()
        for r in model_rows
    ]
    color = _model_color(labels)
    head = [alt.Tooltip("model:N"), alt.Tooltip("day:N")]
    bars = (
        alt.Chart()
        .mark_bar(opacity=0.45)
        .encode(
            x=alt.X(
                "day:T",
                title=None,
                timeUnit="utcyearmonthdate",
                scale=alt.Scale(type="utc"),
                axis=alt.Axis(format="%b %d", labelOverlap=True, labelFlush=16, grid=False),
            ),
            y=alt.Y(
                "answers:Q",
                stack="zero",
                axis=alt.Axis(tickCount=4, format=",d", **_INNER_Y_AXIS),
            ),
            color=color,
            tooltip=[*head, alt.Tooltip("answers:Q", format=","), alt.Tooltip("note:N")],
        )
    )
    # Vega-Lite selects in one view of a layered chart: the bars, a (day, model) each
    bars = _selectable(bars, "volume", POINT_FIELDS)
    share_axis = alt.Axis(
        format=".0%",
        tickCount=4,
        orient="right",
        labelAlign="right",
        labelBaseline="bottom",
        labelPadding=-6,
        labelColor=COLORS["flagged"],
        ticks=False,
        domain=False,
        grid=False,
        title=None,
    )
    share_y = alt.Y(
        "flagged_share:Q",
        scale=alt.Scale(
            domain=padded_range([r.get("flagged_share") for r in rows]), nice=False, zero=False
        ),
        axis=share_axis,
    )
    share_x = alt.X("day:T", timeUnit="utcyearmonthdate", bandPosition=0.5)
    line = (
        alt.Chart().mark_line(strokeWidth=2, invalid=None).encode(x=share_x, y=share_y, color=color)
    )
    points = (
        _points("flagged_share", "share flagged", ".0%", color, head)
        .encode(x=share_x, y=share_y)
        .properties(name="volume_share")
    )
    chart = (
        _shared(alt.layer(bars, line, points), values)
        .resolve_scale(y="independent")
        .properties(
            title=_title(
                "Volume and share flagged",
                "bars: answers (left) · lines: share flagged (right)",
            ),
            height=height - 110,
        )
    )
    return _finish(chart)


def patient_answers_figure(rows: Sequence[Row], *, thresholds: Mapping[str, float]) -> Figure:
    """One patient's answers over time: grounding and consistency (higher is better) and risk
    (higher is worse), one point per answer.

    The y-axis is fitted to the values shown (:func:`padded_range`); each score's threshold
    is a dashed line in its colour; the tooltip names the answer, its model and time and gives
    the value to two decimals; answers with a contradiction get a red cross. Clicking a point
    selects its ``external_id`` and ``conversation_id`` (:data:`ANSWER_FIELDS`), to open its
    report.
    """
    if not rows:
        return _empty("Answers over time", "No answers for this patient")
    metrics = ("grounding", "consistency", "risk")
    values = [
        {
            "at": _iso(r["timestamp"]),
            "time": f"{r['timestamp']:%Y-%m-%d %H:%M}",
            "metric": SCORE_TITLES[m],
            "score": m,
            "value": r.get(m),
            "answer": str(r.get("external_id")),
            "model": str(r.get("model")),
            "external_id": str(r.get("external_id")),
            "conversation_id": str(r.get("id")),
        }
        for m in metrics
        for r in rows
    ]
    shown = [r.get(m) for r in rows for m in metrics]
    y_range = padded_range(shown)
    y = alt.Y(
        "value:Q",
        scale=alt.Scale(domain=y_range, nice=False, zero=False),
        axis=alt.Axis(format=".2f", tickCount=5, **_INNER_Y_AXIS),
    )
    color = _metric_color(metrics)
    lines = alt.Chart().mark_line(invalid=None).encode(x=_utc_x("at"), y=y, color=color)
    points = (
        alt.Chart()
        .mark_point(filled=True, size=50, opacity=1)
        .encode(
            x=alt.X("at:T"),
            y=y,
            color=color,
            tooltip=[
                "answer:N",
                "model:N",
                alt.Tooltip("time:N", title="time (UTC)"),
                alt.Tooltip("score:N"),
                alt.Tooltip("value:Q", format=".2f"),
            ],
        )
    )
    points = _selectable(points, "answers", ANSWER_FIELDS)
    layers: list[Any] = [lines]
    marked = [r for r in rows if r.get("contradictions")]
    if marked:  # under the points, which take the clicks (Vega-Lite selects in one view)
        layers.append(_crosses(marked, lambda r: f"{int(r['contradictions'])} contradiction(s)"))
    layers.append(points)
    for metric in metrics:
        if metric in thresholds:
            t = float(thresholds[metric])
            layers += [
                _rule(t, COLORS[metric]),
                _label(t, f"{metric} threshold {t:.2f}", COLORS[metric]),
            ]
    chart = _shared(alt.layer(*layers), values).properties(
        title=_title("Answers over time"), height=300
    )
    return _finish(chart)


def _first(points: Any, fields: Sequence[str]) -> tuple[str, str | None] | None:
    if not isinstance(points, list | tuple):
        return None
    for p in points:
        if isinstance(p, Mapping) and p.get(fields[0]):
            other = p.get(fields[1])
            return str(p[fields[0]]), (str(other) if other else None)
    return None


def selected_points(
    selection: Mapping[str, Any] | None, fields: Sequence[str] = POINT_FIELDS
) -> dict[str, tuple[str, str | None] | None]:
    """Per point selection of a chart drawn here (``point_<view>``), its first selected
    point, from Streamlit's Vega-Lite selection state (``event.selection``:
    ``{name: [{field: value, ...}, ...]}``, ``{}`` where nothing is selected): by default
    ``(period, model)`` (model None for the merged line); with ``fields=ANSWER_FIELDS``
    ``(record id, conversation id)``; None where nothing usable is selected."""
    return {
        str(name): _first(points, fields)
        for name, points in (selection or {}).items()
        if str(name).startswith(SELECTION)
    }


def selected_point(
    selection: Mapping[str, Any] | None, fields: Sequence[str] = POINT_FIELDS
) -> tuple[str, str | None] | None:
    """The first selected point of any of a chart's point selections
    (:func:`selected_points`), or None."""
    return next((p for p in selected_points(selection, fields).values() if p), None)


__all__ = [
    "ALL_MODELS",
    "ANSWER_FIELDS",
    "COLORS",
    "MIN_POINT_ANSWERS",
    "MODEL_COLORS",
    "POINT_FIELDS",
    "SCORE_TITLES",
    "SELECTION",
    "confidence_figure",
    "entity_timeline_figure",
    "model_trends_figure",
    "model_volume_figure",
    "padded_range",
    "patient_answers_figure",
    "reliability_figure",
    "score_by_verdict_figure",
    "selected_point",
    "selected_points",
    "selfcheck_figure",
    "threshold_figure",
]
