"""The analyst charts (dashboard.figures): one line per model, fitted y-axes, threshold lines,
hover with the count behind each point, few-answer points, and what a selection points at."""

from __future__ import annotations

from datetime import date

import pytest

from dashboard import exports, figures
from tests import vega_spec as vs

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


def _panel(spec: dict[str, object], metric: str) -> list[tuple[dict, list[dict]]]:
    """The views of the small chart of ``metric`` (its line, points, threshold, notes)."""
    (panel,) = [p for p in vs.panels(spec) if figures.SCORE_TITLES[metric] == vs.title_text(p)]
    return list(vs.units({**panel, "datasets": spec.get("datasets"), "data": spec.get("data")}))


def _points_of(spec: dict[str, object], metric: str) -> tuple[dict, list[dict]]:
    return next((u, rows) for u, rows in _panel(spec, metric) if vs.mark(u) == "point")


def test_one_line_per_model_in_every_chart() -> None:
    spec = vs.spec_of(figures.model_trends_figure(_rows(), thresholds=THRESHOLDS))
    assert len(vs.panels(spec)) == 4  # the four small charts
    for metric in figures.SCORE_TITLES:
        line, rows = next((u, r) for u, r in _panel(spec, metric) if vs.mark(u) == "line")
        assert line["encoding"]["y"]["field"] == metric
        assert line["encoding"]["color"]["field"] == "model"  # a line per model
        assert sorted({r["model"] for r in rows}) == ["model-a", "model-b"]
        # one legend entry per model: the colour scale lists each model once
        assert line["encoding"]["color"]["scale"]["domain"] == ["model-a", "model-b"]
        assert line["encoding"]["color"]["scale"]["range"] == list(figures.MODEL_COLORS[:2])


def test_the_merged_line_is_labelled_as_all_models() -> None:
    spec = vs.spec_of(figures.model_trends_figure(_rows((None,)), thresholds=THRESHOLDS))
    _, rows = _points_of(spec, "grounding")
    assert {r["model"] for r in rows} == {figures.ALL_MODELS}
    # what a click on the first point selects: its day, and '' for the merged line
    assert [rows[0][f] for f in figures.POINT_FIELDS] == ["2026-03-01", ""]


def test_y_axes_fit_the_data_with_padding() -> None:
    spec = vs.spec_of(figures.model_trends_figure(_rows(), thresholds=THRESHOLDS))
    line = next(u for u, _ in _panel(spec, "grounding") if vs.mark(u) == "line")
    low, high = line["encoding"]["y"]["scale"]["domain"]  # grounding: values 0.92 .. 0.97
    assert 0.9 <= low < 0.92
    assert 0.97 < high <= 0.99
    assert high - low < 0.2  # not the fixed 0..1 axis
    assert line["encoding"]["y"]["scale"]["zero"] is False
    assert figures.padded_range([0.5, 0.5]) == pytest.approx([0.48, 0.52])
    assert figures.padded_range([0.0, 1.0]) == [-0.02, 1.02]  # points at the edges drawn whole
    assert figures.padded_range([None]) == [0.0, 1.0]


def test_thresholds_are_dashed_lines_and_named_when_off_the_axis() -> None:
    spec = vs.spec_of(figures.model_trends_figure(_rows(), thresholds=THRESHOLDS))
    lines = {}
    for metric in figures.SCORE_TITLES:
        panel = {"layer": [u for u, _ in _panel(spec, metric)]}
        ((rule, y),) = vs.rules(panel)
        assert rule["mark"]["strokeDash"]  # dashed
        assert rule["mark"]["clip"] is True  # drawn only where it lies within the range shown
        lines[metric] = y
    assert lines == THRESHOLDS
    notes = vs.texts(spec)
    assert "threshold 0.70 (below the range shown)" in notes
    assert "threshold 0.30 (above the range shown)" in notes


def test_hover_gives_the_value_to_two_decimals_and_the_count() -> None:
    spec = vs.spec_of(figures.model_trends_figure(_rows(), thresholds=THRESHOLDS))
    points, rows = _points_of(spec, "grounding")
    tooltip = {t["field"]: t for t in points["encoding"]["tooltip"]}
    assert list(tooltip) == ["model", "day", "grounding", "answers", "note"]
    assert tooltip["grounding"]["format"] == ".2f"
    a = next(r for r in rows if r["model"] == "model-a" and r["day"] == "2026-03-02")
    assert a["grounding"] == pytest.approx(0.94)
    assert a["answers"] == 12
    assert a["note"] is None


def test_points_on_few_answers_are_hollow_grey_and_say_so() -> None:
    spec = vs.spec_of(figures.model_trends_figure(_rows(), thresholds=THRESHOLDS))
    points, rows = _points_of(spec, "grounding")
    enc = points["encoding"]
    # hollow (white fill), grey outline and larger where the point stands on few answers
    assert enc["fill"]["condition"] == {"test": "datum.few", "value": "#ffffff"}
    assert enc["stroke"]["condition"] == {"test": "datum.few", "value": figures._FEW_COLOR}
    assert enc["fill"]["field"] == enc["stroke"]["field"] == "model"  # else the model's colour
    assert enc["size"]["condition"]["value"] > enc["size"]["value"]
    b = [r for r in rows if r["model"] == "model-b"]
    assert b[0]["few"] is True
    assert b[0]["answers"] == 1
    assert b[0]["note"].startswith("few answers")
    assert b[1]["few"] is False
    assert b[1]["note"] is None


def test_volume_is_stacked_per_model_with_a_share_line_each() -> None:
    spec = vs.spec_of(figures.model_volume_figure(_rows()))
    views = list(vs.units(spec))
    ((bars, rows),) = [(u, r) for u, r in views if vs.mark(u) == "bar"]
    assert bars["encoding"]["y"]["field"] == "answers"
    assert bars["encoding"]["y"]["stack"] == "zero"  # stacked by model
    assert bars["encoding"]["color"]["field"] == "model"
    assert any(t["field"] == "answers" for t in bars["encoding"]["tooltip"])
    a = next(r for r in rows if r["model"] == "model-a" and r["day"] == "2026-03-02")
    assert a["answers"] == 12
    (line,) = [u for u, _ in views if vs.mark(u) == "line"]
    assert line["encoding"]["y"]["field"] == "flagged_share"
    assert line["encoding"]["color"]["field"] == "model"  # a share line per model
    assert spec["resolve"]["scale"]["y"] == "independent"  # on its own (right) axis
    assert line["encoding"]["y"]["axis"]["orient"] == "right"
    low, high = line["encoding"]["y"]["scale"]["domain"]
    assert 0.2 <= low
    assert high <= 0.4
    # a click on a bar selects its day and model
    (sel,) = vs.selections(spec).values()
    assert sel["select"]["fields"] == list(figures.POINT_FIELDS)


def test_model_names_are_data_not_markup_in_legend_and_hover() -> None:
    # Vega draws legend labels as text and Streamlit's tooltips escape their values
    # (vega-tooltip's sanitize): a model's name is handed over as data, never as HTML
    rows = _rows(("<b>evil</b>",))
    spec = vs.spec_of(figures.model_trends_figure(rows, thresholds=THRESHOLDS))
    points, data = _points_of(spec, "grounding")
    assert points["encoding"]["fill"]["scale"]["domain"] == ["<b>evil</b>"]
    assert {r["model"] for r in data} == {"<b>evil</b>"}
    assert not any("<br>" in str(v) for r in data for v in r.values())
    # the drill-down still gets the model as stored
    assert data[0]["model_key"] == "<b>evil</b>"


def test_every_small_chart_has_a_point_selection_for_drill_down() -> None:
    spec = vs.spec_of(figures.model_trends_figure(_rows(), thresholds=THRESHOLDS))
    sels = vs.selections(spec)
    assert sorted(sels) == sorted(f"point_trend_{m}" for m in figures.SCORE_TITLES)
    for sel in sels.values():
        assert sel["select"] == {"type": "point", "fields": ["period", "model_key"], "on": "click"}


def test_a_selected_point_names_its_day_and_model() -> None:
    # Streamlit's selection state: each selection's list of points ({} when none)
    picked = {"point_trend_grounding": [{"period": "2026-03-02", "model_key": "model-b"}]}
    assert figures.selected_point(picked) == ("2026-03-02", "model-b")
    merged = {"point_trend_risk": {}, "point_volume": [{"period": "2026-03-02", "model_key": ""}]}
    assert figures.selected_point(merged) == ("2026-03-02", None)
    assert figures.selected_points(merged) == {
        "point_trend_risk": None,
        "point_volume": ("2026-03-02", None),
    }
    assert figures.selected_point({"point_volume": [{"day": 1772582400000}]}) is None
    assert figures.selected_point({"point_volume": {}}) is None
    assert figures.selected_point({}) is None
    answer = {"point_answers": [{"external_id": "rec-1", "conversation_id": "conv-1"}]}
    assert figures.selected_point(answer, fields=figures.ANSWER_FIELDS) == ("rec-1", "conv-1")


def test_no_rows_give_an_empty_chart() -> None:
    spec = vs.spec_of(figures.model_trends_figure([], thresholds=THRESHOLDS))
    assert [vs.mark(u) for u, _ in vs.units(spec)] == ["text"]
    assert vs.texts(spec) == ["No data for these filters"]
    assert not vs.selections(spec)


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
    spec = vs.spec_of(figures.patient_answers_figure(rows, thresholds=THRESHOLDS))
    views = list(vs.units(spec))
    points, data = next((u, r) for u, r in views if u.get("name") == "answers")
    tooltip = [t["field"] for t in points["encoding"]["tooltip"]]
    assert tooltip == ["answer", "model", "time", "score", "value"]
    assert (
        next(t for t in points["encoding"]["tooltip"] if t["field"] == "value")["format"] == ".2f"
    )
    grounding = [r for r in data if r["score"] == "grounding"]
    assert (grounding[1]["answer"], grounding[1]["model"], grounding[1]["time"]) == (
        "rec-1",
        "model-a",
        "2026-03-02 09:00",
    )
    assert grounding[1]["value"] == pytest.approx(0.85)
    # a click on a point selects its record id and conversation id, to open its report
    (sel,) = vs.selections(spec).values()
    assert sel["select"]["fields"] == list(figures.ANSWER_FIELDS)
    assert [grounding[1][f] for f in figures.ANSWER_FIELDS] == ["rec-1", "conv-1"]
    low, high = points["encoding"]["y"]["scale"]["domain"]
    assert 0.2 < low < 0.3
    assert 0.9 < high < 1.0
    dashed = {y for rule, y in vs.rules(spec) if rule["mark"]["strokeDash"]}
    assert dashed == {0.7, 0.8, 0.3}
    crosses, marked = next((u, r) for u, r in views if u["mark"].get("shape") == figures._CROSS)
    assert [r["note"] for r in marked] == ["1 contradiction(s)", "2 contradiction(s)"]
    assert crosses["mark"]["color"] == figures.COLORS["confirmed"]


def _every_figure() -> list[tuple[str, dict[str, object]]]:
    from datetime import datetime

    at = datetime(2026, 3, 1, 9, 30)
    answers = [
        {"timestamp": at, "grounding": 0.9, "consistency": 0.8, "risk": 0.2, "external_id": "r1"}
        | {"id": "c1", "model": "m", "contradictions": 1}
    ]
    mentions = [
        {"at": at, "kind": "medication", "name": "warfarin", "assertion": "present"}
        | {"action": "stopped", "dose": "5 mg", "contradicted": True}
    ]
    verdicts = [{"verdict": "confirmed", "risk": 0.8}, {"verdict": "false_alarm", "risk": 0.4}]
    return [
        ("trends", figures.model_trends_figure(_rows(), thresholds=THRESHOLDS)),
        ("trends, empty", figures.model_trends_figure([], thresholds=THRESHOLDS)),
        ("volume", figures.model_volume_figure(_rows())),
        ("patient", figures.patient_answers_figure(answers, thresholds=THRESHOLDS)),
        ("entities", figures.entity_timeline_figure(mentions)),
        ("reliability", figures.reliability_figure([0.2, 0.7], [0.1, 0.8], [4, 5])),
        ("reliability, empty", figures.reliability_figure([], [], [])),
        ("by verdict", figures.score_by_verdict_figure(verdicts)),
        ("thresholds", figures.threshold_figure([0.3, 0.5], [0.4, 0.2], [0.3, 0.1], current=0.5)),
        ("selfcheck", figures.selfcheck_figure([{"index": 0, "score": 0.7}], threshold=0.5)),
        ("confidence", figures.confidence_figure({"retrieval": 0.8, "aggregate": None})),
    ]


@pytest.mark.parametrize(("name", "spec"), [pytest.param(n, s, id=n) for n, s in _every_figure()])
def test_every_figure_is_a_valid_vega_lite_spec(name: str, spec: dict[str, object]) -> None:
    vs.spec_of(spec)  # raises on anything the Vega-Lite schema does not allow
    assert any(rows for _, rows in vs.units(spec)), f"{name} draws no data"


def test_a_spec_the_schema_does_not_allow_is_caught() -> None:
    import jsonschema

    spec = figures.confidence_figure({"retrieval": 0.8})
    spec["mark"] = {"type": "lyne"}
    with pytest.raises(jsonschema.ValidationError):
        vs.spec_of(spec)


def test_a_change_that_rounds_to_zero_reads_plus_zero() -> None:
    # two sums of the same scores may differ in the last bit: no "-0.00" for "no change"
    assert exports._change(-1e-12, ".2f") == "+0.00"
    assert exports._change(-0.006, ".2f") == "-0.01"
    assert exports._change(0, ",d") == "+0"
    assert exports._change(None, ".2f") == "–"
