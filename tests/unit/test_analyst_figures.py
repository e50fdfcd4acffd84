"""The analyst charts (dashboard.figures): one line per model, fitted y-axes, threshold lines,
hover with the count behind each point, few-answer points, and what a selection points at."""

from __future__ import annotations

from datetime import date

import pytest

from dashboard import exports, figures

THRESHOLDS = {"grounding": 0.7, "consistency": 0.8, "confidence": 0.6, "risk": 0.3}


def _rows(models: tuple[str | None, ...] = ("model-a", "model-b")) -> list[dict[str, object]]:
    rows = []
    for j, model in enumerate(models):
        for d in range(1, 4):
            rows.append(
                {
                    "model": model,
                    "period": date(2026, 3, d),
                    # model-b's first day stands on one answer (an upload)
                    "conversations": 1 if (j == 1 and d == 1) else 10 + d,
                    "flagged": 3,
                    "flagged_share": 0.2 + 0.05 * d,
                    "grounding": 0.90 + 0.02 * d + 0.01 * j,
                    "consistency": 0.95,
                    "confidence": 0.8,
                    "risk": 0.15 + 0.01 * d,
                }
            )
    return rows


def test_one_line_per_model_in_every_chart() -> None:
    fig = figures.model_trends_figure(_rows(), thresholds=THRESHOLDS)
    scatter = [t for t in fig.data if t.type == "scatter"]
    assert len(scatter) == 2 * 4  # two models in each of the four charts
    for axis in ("x", "x2", "x3", "x4"):
        assert sorted(t.name for t in scatter if (t.xaxis or "x") == axis) == [
            "model-a",
            "model-b",
        ]
    # one legend entry per model
    assert sorted(t.name for t in scatter if t.showlegend) == ["model-a", "model-b"]


def test_the_merged_line_is_labelled_as_all_models() -> None:
    fig = figures.model_trends_figure(_rows((None,)), thresholds=THRESHOLDS)
    assert {t.name for t in fig.data} == {figures.ALL_MODELS}
    assert list(fig.data[0].customdata[0]) == ["2026-03-01", ""]


def test_y_axes_fit_the_data_with_padding() -> None:
    fig = figures.model_trends_figure(_rows(), thresholds=THRESHOLDS)
    low, high = fig.layout.yaxis.range  # grounding: values 0.92 .. 0.97
    assert 0.9 <= low < 0.92
    assert 0.97 < high <= 0.99
    assert high - low < 0.2  # not the fixed 0..1 axis
    assert figures.padded_range([0.5, 0.5]) == pytest.approx([0.48, 0.52])
    assert figures.padded_range([0.0, 1.0]) == [-0.02, 1.02]  # points at the edges drawn whole
    assert figures.padded_range([None]) == [0.0, 1.0]


def test_thresholds_are_dashed_lines_and_named_when_off_the_axis() -> None:
    fig = figures.model_trends_figure(_rows(), thresholds=THRESHOLDS)
    lines = {s.yref: s.y0 for s in fig.layout.shapes if s.line.dash == "dash"}
    assert lines == {"y": 0.7, "y2": 0.8, "y3": 0.6, "y4": 0.3}
    notes = [a.text for a in fig.layout.annotations]
    assert "threshold 0.70 (below the range shown)" in notes
    assert "threshold 0.30 (above the range shown)" in notes


def test_hover_gives_the_value_to_two_decimals_and_the_count() -> None:
    fig = figures.model_trends_figure(_rows(), thresholds=THRESHOLDS)
    a = next(t for t in fig.data if t.name == "model-a")  # grounding, model-a
    assert a.hovertemplate == "%{text}<extra></extra>"
    assert a.text[1] == "model-a<br>2026-03-02<br>grounding 0.94<br>12 answers"


def test_points_on_few_answers_are_hollow_grey_and_say_so() -> None:
    fig = figures.model_trends_figure(_rows(), thresholds=THRESHOLDS)
    b = next(t for t in fig.data if t.name == "model-b")
    assert b.marker.symbol[0] == "circle-open"
    assert b.marker.symbol[1] == "circle"
    assert b.marker.color[0] != b.marker.color[1]
    assert "1 answer<br>few answers" in b.text[0]
    assert "few answers" not in b.text[1]


def test_volume_is_stacked_per_model_with_a_share_line_each() -> None:
    fig = figures.model_volume_figure(_rows())
    bars = [t for t in fig.data if t.type == "bar"]
    lines = [t for t in fig.data if t.type == "scatter"]
    assert len(bars) == 2
    assert len(lines) == 2
    assert fig.layout.barmode == "stack"
    assert "12 answers" in bars[0].text[1]
    low, high = fig.layout.yaxis2.range
    assert 0.2 <= low
    assert high <= 0.4


def test_model_names_are_escaped_in_legend_and_hover() -> None:
    rows = _rows(("<b>evil</b>",))
    fig = figures.model_trends_figure(rows, thresholds=THRESHOLDS)
    assert fig.data[0].name == "&lt;b&gt;evil&lt;/b&gt;"
    assert fig.data[0].text[0].startswith("&lt;b&gt;evil")
    # the drill-down still gets the model as stored
    assert fig.data[0].customdata[0][1] == "<b>evil</b>"


def test_a_selected_point_names_its_day_and_model() -> None:
    assert figures.selected_point([{"customdata": ["2026-03-02", "model-b"]}]) == (
        "2026-03-02",
        "model-b",
    )
    assert figures.selected_point([{"customdata": ["2026-03-02", ""]}]) == ("2026-03-02", None)
    assert figures.selected_point([{"x": "2026-03-02"}]) is None
    assert figures.selected_point([]) is None


def test_no_rows_give_an_empty_chart() -> None:
    fig = figures.model_trends_figure([], thresholds=THRESHOLDS)
    assert not fig.data
    assert fig.layout.annotations[0].text == "No data for these filters"


def test_chart_csv_holds_what_the_chart_draws_and_neutralises_formulas() -> None:
    rows = _rows(("=cmd|' /C calc'!A0", "model-b"))
    shown = exports.chart_rows(rows, min_answers=5, all_models=figures.ALL_MODELS)
    text = exports.rows_to_csv(shown, exports.TREND_FIELDS)
    lines = text.splitlines()
    assert lines[0] == "period,model,answers,few_answers,grounding,consistency,confidence,risk"
    assert len(lines) == 1 + 6
    assert "2026-03-01,model-b,1,True,0.93," in text
    assert "\n=cmd" not in text
    assert ",=cmd" not in text


def test_calibration_csvs_hold_the_points_the_charts_draw() -> None:
    rel = exports.reliability_rows([0.15, 0.55], [0.1, 0.6], [10, 5])
    assert exports.rows_to_csv(rel, exports.RELIABILITY_FIELDS).splitlines() == [
        "mean_predicted_risk,share_confirmed,statements",
        "0.15,0.1,10",
        "0.55,0.6,5",
    ]
    thr = exports.threshold_rows([0.0, 0.5], [1.0, 0.25], [0.4, 0.1])
    assert exports.rows_to_csv(thr, exports.THRESHOLD_FIELDS).splitlines()[1:] == [
        "0.0,1.0,0.4",
        "0.5,0.25,0.1",
    ]
    reviewed = [
        {"verdict": "false_alarm", "risk": 0.12},
        {"verdict": "confirmed", "risk": 0.95},
        {"verdict": "confirmed", "risk": 0.97},
        {"verdict": "confirmed", "risk": 0.10},  # on a bin's edge: the bin it starts
        {"verdict": "unsure", "risk": None},
    ]
    assert exports.verdict_histogram_rows(reviewed) == [
        {"verdict": "confirmed", "bin_start": 0.1, "bin_end": 0.15, "statements": 1},
        {"verdict": "confirmed", "bin_start": 0.95, "bin_end": 1.0, "statements": 2},
        {"verdict": "false_alarm", "bin_start": 0.1, "bin_end": 0.15, "statements": 1},
    ]


def test_a_patients_answers_chart_fits_its_axis_and_points_at_reports() -> None:
    from datetime import UTC, datetime

    rows = [
        {
            "id": f"conv-{i}",
            "external_id": f"rec-{i}",
            "model": "model-a",
            "timestamp": datetime(2026, 3, i + 1, 9, tzinfo=UTC),
            "grounding": 0.8 + 0.05 * i,
            "consistency": 0.9,
            "risk": 0.3,
            "contradictions": i,
        }
        for i in range(3)
    ]
    fig = figures.patient_answers_figure(rows, thresholds=THRESHOLDS)
    grounding = fig.data[0]
    assert grounding.text[1] == "rec-1 · model-a<br>2026-03-02 09:00<br>grounding 0.85"
    assert list(grounding.customdata[1]) == ["rec-1", "conv-1"]
    low, high = fig.layout.yaxis.range
    assert 0.2 < low < 0.3
    assert 0.9 < high < 1.0
    dashed = {s.y0 for s in fig.layout.shapes if s.line.dash == "dash"}
    assert dashed == {0.7, 0.8, 0.3}
    crosses = fig.data[-1]
    assert crosses.name == "contradiction"
    assert len(crosses.x) == 2
