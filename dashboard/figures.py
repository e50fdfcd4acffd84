"""Pure figure builders: plain data in, a Vega-Lite spec out (no Streamlit, no database).

Rows are plain mappings (as ``dashboard.data`` returns them), so every builder is easy to test
and to reuse outside the app. Scores are in [0, 1]; grounding, consistency and confidence are
higher-better, hallucination risk is higher-worse, and the charts say so in their titles.

Each chart carries its data inline (``data.values``): a few hundred points at most, drawn by
Streamlit's Vega-Lite element (``st.vega_lite_chart``), whose front end is a sixth the size of
plotly's. Text (model names, record ids) is data, never markup: Vega draws it as text and its
tooltips escape it.

The specs are written as plain dicts rather than through Altair: Altair validates every
channel against the Vega-Lite schema as it is built and again when Streamlit converts it,
which cost the overview ~0.9 s of its ~1 s run for its two charts; a dict costs a
millisecond. The tests validate every spec against the Vega-Lite schema instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any

Row = Mapping[str, Any]
Spec = dict[str, Any]
#: What every builder returns: a single, layered or stacked Vega-Lite spec
#: (``st.vega_lite_chart``).
Figure = Spec

#: The Vega-Lite version the specs are written for (the one Streamlit's front end draws).
SCHEMA = "https://vega.github.io/schema/vega-lite/v6.4.1.json"

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


def _data(rows: Sequence[Mapping[str, Any]]) -> Spec:
    return {"values": [dict(r) for r in rows]}


_TYPES = {"N": "nominal", "Q": "quantitative", "T": "temporal", "O": "ordinal"}


def _f(shorthand: str, **props: Any) -> Spec:
    """A field channel from Vega-Lite shorthand: ``"day:T"`` -> temporal field ``day``."""
    field, kind = shorthand.split(":")
    return {"field": field, "type": _TYPES[kind], **props}


def _when(test: str, value: Any, otherwise: Spec) -> Spec:
    """A channel that takes ``value`` where ``test`` holds, else ``otherwise`` (a field
    channel or ``{"value": ...}``)."""
    return {"condition": {"test": test, "value": value}, **otherwise}


#: The name of a composed chart's shared points (its layers or stacked charts read them).
DATASET = "points"


def _shared(chart: Spec, values: list[dict[str, Any]]) -> Spec:
    """``chart`` (layered or stacked) reading ``values`` as the named dataset :data:`DATASET`.
    Named, because Streamlit hands a composed chart's top-level inline values to Vega apart
    from the spec, where its layers do not find them."""
    chart["data"] = {"name": DATASET}
    chart["datasets"] = {DATASET: values}
    return chart


def _title(text: str | list[str], subtitle: str | None = None) -> Spec:
    title: Spec = {"text": text, "anchor": "start", "fontSize": 13, "offset": 6}
    if subtitle:
        title["subtitle"] = subtitle
    return title


def _iso(value: Any) -> str:
    """A day or time as ISO text (what the chart's time axis reads, in UTC)."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


def _utc_x(field: str, title: str | None = None, *, fmt: str = "%b %d") -> Spec:
    return _f(
        f"{field}:T",
        title=title,
        # inset: the first and last points are drawn whole inside the chart's width, the
        # first to the right of the y labels drawn inside the plot (_INNER_Y_AXIS)
        scale={"type": "utc", "padding": 30},
        axis={"format": fmt, "labelOverlap": True, "labelFlush": 16, "grid": False},
    )


def _finish(chart: Spec, *, legend: bool = True) -> Spec:
    """The shared look: no view border, a legend under the chart (never beside it, where it
    would take the width a phone does not have); no padding at the sides, so that a chart
    stretched to its column is as wide as the column."""
    chart["padding"] = {"left": 0, "right": 0, "top": 4, "bottom": 20}
    config: Spec = {
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
    chart["config"] = config
    chart["$schema"] = SCHEMA
    return chart


def _empty(title: str, message: str = "No data for these filters") -> Spec:
    chart = {
        "data": _data([{"message": message}]),
        "title": _title(title),
        "mark": {"type": "text", "fontSize": 13, "color": COLORS["threshold"]},
        "encoding": {"text": _f("message:N")},
        "height": 120,
    }
    return _finish(chart, legend=False)


def _rule(value: float, color: str, *, dash: list[int] = _DASH, field: str = "y") -> Spec:
    return {
        "data": _data([{}]),
        "mark": {
            "type": "rule",
            "strokeDash": dash,
            "color": color,
            "strokeWidth": 1,
            "clip": True,
        },
        "encoding": {"x" if field == "x" else "y": {"datum": value}},
    }


def _edge_text(text: str, color: str, y: Spec, *, above: bool = True) -> Spec:
    """Small text at the chart's left edge, at ``y`` (a value of the y scale, ``{"datum":
    ...}``, or a pixel position, ``{"value": ...}``), just above it or just under it."""
    return {
        "data": _data([{"label": text}]),
        "mark": {
            "type": "text",
            "align": "left",
            "baseline": "bottom" if above else "top",
            "dx": 40,
            "dy": -2 if above else 2,
            "fontSize": 10,
            "color": color,
        },
        "encoding": {"x": {"value": 0}, "y": y, "text": _f("label:N")},
    }


def _label(value: float, text: str, color: str) -> Spec:
    """A threshold's name at the chart's left edge, just above its line."""
    return _edge_text(text, color, {"datum": value})


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
    diagonal = {
        "data": _data(
            [
                {"x": 0.0, "series": "perfect calibration"},
                {"x": 1.0, "series": "perfect calibration"},
            ]
        ),
        "mark": {"type": "line", "strokeDash": _DASH, "color": COLORS["threshold"]},
        "encoding": {"x": _f("x:Q"), "y": _f("x:Q")},
    }
    scale = {"domain": [0, 1], "nice": False}
    curve = {
        "data": _data(rows),
        "mark": {
            "type": "line",
            "color": COLORS["risk"],
            "point": {"filled": True, "color": COLORS["risk"]},
        },
        "encoding": {
            "x": _f("predicted:Q", title="predicted probability of hallucination", scale=scale),
            "y": _f("observed:Q", title="share confirmed by reviewers", scale=scale),
            "tooltip": [
                _f("predicted:Q", format=".2f"),
                _f("observed:Q", title="share confirmed", format=".2f"),
                _f("statements:Q", format=","),
            ],
        },
    }
    sized = {
        "data": _data(rows),
        "mark": {"type": "circle", "color": COLORS["risk"], "opacity": 0.35},
        "encoding": {
            "x": _f("predicted:Q"),
            "y": _f("observed:Q"),
            "size": _f("statements:Q", legend=None, scale={"range": [30, 400]}),
            "tooltip": [_f("statements:Q", format=",")],
        },
    }
    chart = {
        "layer": [diagonal, sized, curve],
        "title": _title("Reliability diagram", f"dashed: perfect calibration · line: {label}"),
        "height": 300,
    }
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
    chart = {
        "data": _data(bars),
        "mark": {"type": "bar", "opacity": 0.7},
        "encoding": {
            "x": _f("bin_start:Q", title=score, scale={"domain": [0, 1], "nice": False}),
            "x2": {"field": "bin_end"},
            "y": _f("statements:Q", title="statements", stack=None),
            "y2": {"datum": 0},
            "color": _f(
                "verdict:N",
                scale={
                    "domain": [v.replace("_", " ") for v in verdicts],
                    "range": [COLORS[v] for v in verdicts],
                },
            ),
            "tooltip": [
                _f("verdict:N"),
                _f("bin_start:Q", title="from", format=".2f"),
                _f("bin_end:Q", title="to", format=".2f"),
                _f("statements:Q", format=","),
            ],
        },
        "title": _title(f"Statement {score} by verdict"),
        "height": 240,
    }
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
    lines = {
        "data": _data(rows),
        "mark": {"type": "line"},
        "encoding": {
            "x": _f(
                "threshold:Q",
                title="risk threshold (flag when risk >= threshold)",
                scale={"domain": [0, 1], "nice": False},
            ),
            "y": _f("rate:Q", title="rate", scale={"domain": [0, 1.02], "nice": False}),
            "color": _f(
                "series:N",
                scale={"domain": list(names), "range": [COLORS["flagged"], COLORS["false_alarm"]]},
            ),
            "tooltip": [
                _f("series:N"),
                _f("threshold:Q", format=".2f"),
                _f("rate:Q", format=".1%"),
            ],
        },
    }
    layers: list[Spec] = [lines]
    if current is not None:
        layers.append(_rule(float(current), COLORS["threshold"], dash=_DOT, field="x"))
    chart = {"layer": layers, "title": _title("Threshold explorer"), "height": 240}
    return _finish(chart)


def _metric_color(metrics: Sequence[str]) -> Spec:
    return _f(
        "metric:N",
        title=None,
        scale={"domain": [SCORE_TITLES[m] for m in metrics], "range": [COLORS[m] for m in metrics]},
    )


#: A cross (x) drawn with strokes: the contradiction marker.
_CROSS = "M-1,-1L1,1M-1,1L1,-1"


def _crosses(marked: Sequence[Row], note: Any) -> Spec:
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
    return {
        "data": _data(rows),
        "mark": {
            "type": "point",
            "shape": _CROSS,
            "size": 120,
            "strokeWidth": 2.5,
            "color": COLORS["confirmed"],
        },
        "encoding": {
            "x": _f("at:T"),
            "y": _f("value:Q"),
            "tooltip": [_f("answer:N"), _f("note:N", title="contradiction")],
        },
    }


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
    color = _f(
        "kind:N",
        title=None,
        scale={"domain": kinds, "range": [_KIND_COLOR.get(k, COLORS["quality"]) for k in kinds]},
    )
    chart = {
        "data": _data(points),
        "mark": {"type": "point", "size": 110, "filled": False, "opacity": 1},
        "encoding": {
            "x": _utc_x("at"),
            "y": _f("entity:N", title=None, sort=labels, axis={"labelLimit": 160}),
            "shape": _f("shape:N", scale=None),
            "color": color,
            "fill": _when("datum.hollow", "#ffffff", color),
            "stroke": _when("datum.contradicted", COLORS["confirmed"], color),
            "strokeWidth": _when("datum.contradicted", 3, {"value": 1.5}),
            "tooltip": [_f("entity:N"), _f("at:T", format="%Y-%m-%d %H:%M"), _f("detail:N")],
        },
        "title": _title("Entity timeline (red ring: contradicted)"),
        "height": max(180, 28 * len(labels)),
    }
    return _finish(chart)


def selfcheck_figure(sentences: Sequence[Row], *, threshold: float | None = None) -> Figure:
    """SelfCheck sentence scores (higher is worse: the samples disagree with the sentence)."""
    if not sentences:
        return _empty("SelfCheck sentence scores", "No SelfCheck result for this answer")
    rows = [
        {"sentence": f"#{int(s.get('index', i)) + 1}", "score": s.get("score")}
        for i, s in enumerate(sentences)
    ]
    bars = {
        "data": _data(rows),
        "mark": {"type": "bar", "color": COLORS["risk"]},
        "encoding": {
            "x": _f("sentence:N", title="sentence", sort=None, axis={"labelAngle": 0}),
            "y": _f("score:Q", title="score", scale={"domain": [0, 1.02], "nice": False}),
            "tooltip": [_f("sentence:N"), _f("score:Q", format=".2f")],
        },
    }
    layers: list[Spec] = [bars]
    if threshold is not None:
        layers.append(_rule(float(threshold), COLORS["threshold"]))
    chart = {
        "layer": layers,
        "title": _title(["SelfCheck sentence scores", "(higher is worse)"]),
        "height": 180,
    }
    return _finish(chart)


def confidence_figure(parts: Mapping[str, float | None]) -> Figure:
    """Confidence breakdown by component (higher is better)."""
    items = [(k, v) for k, v in parts.items() if v is not None]
    if not items:
        return _empty("Confidence breakdown", "No confidence breakdown stored")
    rows = [{"component": k.replace("_", " "), "value": float(v)} for k, v in items]
    chart = {
        "data": _data(rows),
        "mark": {"type": "bar", "color": COLORS["confidence"]},
        "encoding": {
            "y": _f("component:N", title=None, sort=None),
            "x": _f("value:Q", title=None, scale={"domain": [0, 1], "nice": False}),
            "tooltip": [_f("component:N"), _f("value:Q", format=".2f")],
        },
        "title": _title(["Confidence breakdown", "(higher is better)"]),
        "height": 28 * len(items),
    }
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


def _model_color(labels: Sequence[str], *, legend: bool = True) -> Spec:
    return _f(
        "model:N",
        title=None,
        scale={
            "domain": list(labels),
            "range": [MODEL_COLORS[j % len(MODEL_COLORS)] for j in range(len(labels))],
        },
        legend={} if legend else None,
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


def _points(value: str, title: str, fmt: str, color: Spec, tooltip_head: list[Spec]) -> Spec:
    """The selectable points of a line: filled in the model's colour, or hollow, grey and
    larger where they stand on few answers (fill and stroke, which Vega-Lite would otherwise
    take from a colour channel it then drops with a warning)."""
    return {
        "mark": {"type": "point", "filled": False, "opacity": 1, "strokeWidth": 2},
        "encoding": {
            "x": _f("day:T"),
            "y": _f(f"{value}:Q"),
            "fill": _when("datum.few", "#ffffff", color),
            "stroke": _when("datum.few", _FEW_COLOR, color),
            "size": _when("datum.few", 70, {"value": 36}),
            "tooltip": [
                *tooltip_head,
                _f(f"{value}:Q", title=title, format=fmt),
                _f("answers:Q", format=","),
                _f("note:N", title="note"),
            ],
        },
    }


def _threshold_layers(threshold: float, y_range: Sequence[float], color: str) -> list[Spec]:
    """A chart's threshold as a dashed line with its name; when outside ``y_range``, a note at
    the chart's edge saying where it lies instead."""
    if y_range[0] <= threshold <= y_range[1]:
        return [_rule(threshold, color), _label(threshold, f"threshold {threshold:.2f}", color)]
    below = threshold < y_range[0]
    text = f"threshold {threshold:.2f} ({'below' if below else 'above'} the range shown)"
    # at the bottom edge (above it) or the top edge (under it)
    note = _edge_text(text, color, {"value": "height" if below else 0}, above=below)
    return [_rule(threshold, color), note]


def _selectable(chart: Spec, view: str, fields: Sequence[str], params: list[Spec]) -> Spec:
    """``chart`` (one view) named ``view``, with a click selection of one of its points named
    ``point_<view>`` carrying ``fields``, added to ``params`` (the top-level parameters of the
    whole spec, each naming the view it selects in)."""
    chart["name"] = view
    params.append(
        {
            "name": f"{SELECTION}_{view}",
            "select": {"type": "point", "fields": list(fields), "on": "click"},
            "views": [view],
        }
    )
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
    head = [_f("model:N"), _f("day:N")]
    x = _utc_x("day")
    panels: list[Spec] = []
    params: list[Spec] = []
    for metric in metrics:
        y_range = padded_range([r.get(metric) for r in rows])
        y = _f(
            f"{metric}:Q",
            scale={"domain": y_range, "nice": False, "zero": False},
            axis={"format": ".2f", "tickCount": 4, **_INNER_Y_AXIS},
        )
        line = {
            "mark": {"type": "line", "strokeWidth": 2, "invalid": None},
            "encoding": {"x": x, "y": y, "color": color},
        }
        points = _selectable(
            _points(metric, metric, ".2f", color, head), f"trend_{metric}", POINT_FIELDS, params
        )
        layers = [line, points]
        if metric in thresholds:
            layers += _threshold_layers(float(thresholds[metric]), y_range, COLORS["threshold"])
        title = SCORE_TITLES[metric].replace(" (", "\n(").split("\n")
        panels.append(
            {"layer": layers, "title": _title(title), "height": max(60, (height - 160) // 4)}
        )
    chart = _shared({"vconcat": panels, "spacing": 14, "params": params}, values)
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
    head = [_f("model:N"), _f("day:N")]
    params: list[Spec] = []
    bars = {
        "mark": {"type": "bar", "opacity": 0.45},
        "encoding": {
            "x": _f(
                "day:T",
                title=None,
                timeUnit="utcyearmonthdate",
                scale={"type": "utc"},
                axis={"format": "%b %d", "labelOverlap": True, "labelFlush": 16, "grid": False},
            ),
            "y": _f(
                "answers:Q",
                stack="zero",
                axis={"tickCount": 4, "format": ",d", **_INNER_Y_AXIS},
            ),
            "color": color,
            "tooltip": [*head, _f("answers:Q", format=","), _f("note:N")],
        },
    }
    # Vega-Lite selects in one view of a layered chart: the bars, a (day, model) each
    bars = _selectable(bars, "volume", POINT_FIELDS, params)
    share_axis = {
        "format": ".0%",
        "tickCount": 4,
        "orient": "right",
        "labelAlign": "right",
        "labelBaseline": "bottom",
        "labelPadding": -6,
        "labelColor": COLORS["flagged"],
        "ticks": False,
        "domain": False,
        "grid": False,
        "title": None,
    }
    share_y = _f(
        "flagged_share:Q",
        scale={
            "domain": padded_range([r.get("flagged_share") for r in rows]),
            "nice": False,
            "zero": False,
        },
        axis=share_axis,
    )
    share_x = _f("day:T", timeUnit="utcyearmonthdate", bandPosition=0.5)
    line = {
        "mark": {"type": "line", "strokeWidth": 2, "invalid": None},
        "encoding": {"x": share_x, "y": share_y, "color": color},
    }
    points = _points("flagged_share", "share flagged", ".0%", color, head)
    points["encoding"].update(x=share_x, y=share_y)
    points["name"] = "volume_share"
    chart = {
        "layer": [bars, line, points],
        "params": params,
        "resolve": {"scale": {"y": "independent"}},
        "title": _title(
            "Volume and share flagged", "bars: answers (left) · lines: share flagged (right)"
        ),
        "height": height - 110,
    }
    return _finish(_shared(chart, values))


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
    y = _f(
        "value:Q",
        scale={"domain": y_range, "nice": False, "zero": False},
        axis={"format": ".2f", "tickCount": 5, **_INNER_Y_AXIS},
    )
    color = _metric_color(metrics)
    lines = {
        "mark": {"type": "line", "invalid": None},
        "encoding": {"x": _utc_x("at"), "y": y, "color": color},
    }
    points = {
        "mark": {"type": "point", "filled": True, "size": 50, "opacity": 1},
        "encoding": {
            "x": _f("at:T"),
            "y": y,
            "color": color,
            "tooltip": [
                _f("answer:N"),
                _f("model:N"),
                _f("time:N", title="time (UTC)"),
                _f("score:N"),
                _f("value:Q", format=".2f"),
            ],
        },
    }
    params: list[Spec] = []
    points = _selectable(points, "answers", ANSWER_FIELDS, params)
    layers: list[Spec] = [lines]
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
    chart = {
        "layer": layers,
        "params": params,
        "title": _title("Answers over time"),
        "height": 300,
    }
    return _finish(_shared(chart, values))


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
