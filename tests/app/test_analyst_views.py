"""The analyst views on a seeded database: the per-model table, one line per model, chart
CSVs, the answers behind a chart point, the view kept in the URL, and every page's address."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from streamlit.testing.v1 import AppTest

from core.storage import models as m
from core.storage.db import get_engine, read_session
from tests import vega_spec as vs
from tests.app.seed import APP, DAYS, END, MODELS, PATIENTS, Seeded, login, open_page

START = END - timedelta(days=DAYS - 1)


def no_errors(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def metric(at: AppTest, label: str) -> str:
    return next(str(x.value) for x in at.metric if x.label == label)


def chart(at: AppTest, key: str) -> dict[str, Any]:
    """The Vega-Lite spec of the chart ``key`` as Streamlit sent it, its datasets as rows."""
    for c in at.get("vega_lite_chart"):
        if c.proto.id.endswith(f"-{key}"):
            return vs.streamlit_spec(c.proto)
    raise AssertionError(f"no chart {key}")


def lines(spec: dict[str, Any]) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """The line views of a chart with the rows each draws."""
    return [(u, rows) for u, rows in vs.units(spec) if vs.mark(u) == "line"]


def models_drawn(spec: dict[str, Any]) -> set[str]:
    return {r["model"] for _, rows in lines(spec) for r in rows}


def count(url: str, start: date, end: date, model: str | None = None) -> int:
    """Answers stored between two days (inclusive), counted straight from the table."""
    lo = datetime.combine(start, time(), tzinfo=UTC)
    hi = datetime.combine(end + timedelta(days=1), time(), tzinfo=UTC)
    c = m.Conversation
    stmt = select(func.count()).where(c.query_timestamp >= lo, c.query_timestamp < hi)
    if model:
        stmt = stmt.where(c.model_used == model)
    with read_session(get_engine(url)) as s:
        return int(s.execute(stmt).scalar_one())


def new_session(params: dict[str, Any]) -> AppTest:
    """A new browser session opening the app's address with ``params`` as its query string."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(params)
    return at.run()


# --------------------------------------------------------------------------- per model


def test_the_overview_has_a_row_per_model_with_intervals_and_changes(seeded_db, use_db):
    use_db(seeded_db)
    at = open_page(dates=(END - timedelta(days=4), END))
    no_errors(at)
    # a static table (a few rows of text): the data grid's script costs the page its speed
    table = at.table[0].value
    assert list(table["model"]) == list(MODELS)
    for model in MODELS:
        row = table[table["model"] == model].iloc[0]
        answers = count(seeded_db.url, END - timedelta(days=4), END, model)
        assert row["answers"] == f"{answers:,d}"
        before = count(seeded_db.url, END - timedelta(days=9), END - timedelta(days=5), model)
        assert row["answers vs before"] == f"{answers - before:+,d}"
        # every seeded answer is flagged: 100 % with a Wilson interval below it
        assert row["share flagged [95 % CI]"].startswith("100% [")
        assert row["share flagged vs before"] == "+0 pts"
        assert row["grounding [95 % CI]"] == "0.33 [0.33, 0.33]"
        assert row["grounding vs before"] == "+0.00"
    assert [b.label for b in at.get("download_button")][:1] == ["Table (CSV)"]


def test_trends_draw_one_line_per_model_and_a_merged_line_on_request(seeded_db, use_db):
    use_db(seeded_db)
    at = open_page()
    no_errors(at)
    scores = chart(at, "overview_scores")
    trend_lines = lines(scores)
    assert len(trend_lines) == 4  # the four small charts, each with a line per model
    for line, rows in trend_lines:
        assert line["encoding"]["color"]["field"] == "model"
        assert sorted({r["model"] for r in rows}) == list(MODELS)
    # the y-axis fits the data (grounding is 1/3 everywhere) and the threshold is dashed
    grounding = next(u for u, _ in trend_lines if u["encoding"]["y"]["field"] == "grounding")
    low, high = grounding["encoding"]["y"]["scale"]["domain"]
    assert low < 1 / 3 < high
    assert high - low < 0.1
    assert {y for rule, y in vs.rules(scores) if rule["mark"]["strokeDash"]} == {0.7, 0.8, 0.6, 0.3}
    # hover: value to two decimals and the count behind the point
    points, rows = next((u, r) for u, r in vs.units(scores) if vs.mark(u) == "point")
    tooltip = {t["field"]: t for t in points["encoding"]["tooltip"]}
    assert tooltip["grounding"]["format"] == ".2f"
    assert "answers" in tooltip
    assert round(rows[0]["grounding"], 2) == 0.33
    assert rows[0]["answers"] >= 1
    volume = chart(at, "overview_volume")
    bars = next(u for u, _ in vs.units(volume) if vs.mark(u) == "bar")
    assert bars["encoding"]["y"]["field"] == "answers"
    share = next(u for u, _ in lines(volume))
    assert share["encoding"]["y"]["field"] == "flagged_share"
    assert sorted(models_drawn(volume)) == list(MODELS)  # answers and share flagged per model

    at.toggle(key="overview_split").set_value(False).run()
    no_errors(at)
    assert models_drawn(chart(at, "overview_scores")) == {"all selected models"}
    assert at.query_params.get("merged") == "1"

    # two models chosen in the sidebar: one line each, and no merged toggle is needed to say so
    at.toggle(key="overview_split").set_value(True).run()
    at.multiselect(key="sidebar_models").set_value([MODELS[1]]).run()
    assert models_drawn(chart(at, "overview_scores")) == {MODELS[1]}


def test_days_with_few_answers_are_shown_as_such(seeded_db, use_db):
    use_db(seeded_db)
    at = open_page()
    scores = chart(at, "overview_scores")
    # model-b answers once or twice a day in the seed: every day of it stands on few answers
    points, rows = next((u, r) for u, r in vs.units(scores) if vs.mark(u) == "point")
    assert points["encoding"]["fill"]["condition"] == {"test": "datum.few", "value": "#ffffff"}
    b = [r for r in rows if r["model"] == MODELS[1]]
    assert b
    assert all(r["few"] for r in b)  # drawn hollow and grey
    assert all("few answers" in r["note"] for r in b)
    assert "(few answers" in at.caption[-1].value or any(
        "fewer than 5 answers" in c.value for c in at.caption
    )


def test_chart_csv_downloads_are_offered_for_each_chart(seeded_db, use_db):
    use_db(seeded_db)
    at = open_page()
    labels = [b.label for b in at.get("download_button")]
    assert labels == ["Table (CSV)", "Scores (CSV)", "Volume (CSV)"]


# --------------------------------------------------------------------------- the URL


def test_the_overview_keeps_its_view_in_the_url_and_a_new_session_reproduces_it(seeded_db, use_db):
    use_db(seeded_db)
    at = open_page(dates=(END - timedelta(days=6), END))
    at.multiselect(key="sidebar_models").set_value([MODELS[1]]).run()
    at.segmented_control(key="overview_granularity").set_value("week").run()
    no_errors(at)
    params = dict(at.query_params)
    assert params["from"] == (END - timedelta(days=6)).isoformat()
    assert params["to"] == END.isoformat()
    assert params["models"] in (MODELS[1], [MODELS[1]])
    assert params["period"] == "week"
    answers = metric(at, "Answers")

    shared = new_session(params)
    no_errors(shared)
    assert shared.title[0].value == "Overview"
    assert metric(shared, "Answers") == answers
    assert shared.multiselect(key="sidebar_models").value == [MODELS[1]]
    assert shared.segmented_control(key="overview_granularity").value == "week"
    assert shared.session_state["sidebar_dates"] == (END - timedelta(days=6), END)
    assert list(shared.table[0].value["model"]) == [MODELS[1]]


def test_a_shared_point_lists_its_answers_with_report_links(seeded_db, use_db):
    use_db(seeded_db)
    day = END - timedelta(days=3)
    at = new_session(
        {
            "from": START.isoformat(),
            "to": END.isoformat(),
            "day": day.isoformat(),
            "day_model": MODELS[0],
        }
    )
    no_errors(at)
    assert any(h.value.startswith(f"Answers of {day}") for h in at.subheader)
    answers = at.dataframe[0].value  # the per-model table is a static one
    assert len(answers) == count(seeded_db.url, day, day, MODELS[0])
    assert set(answers["model"]) == {MODELS[0]}
    assert all(link.startswith("/report?id=") for link in answers["report"])
    assert "patient_id" not in answers.columns
    assert at.query_params["day"] == day.isoformat()

    # the report link opens that answer
    conv_id = answers["report"].iloc[0].split("id=", 1)[1]
    report = new_session({"id": conv_id})
    report.switch_page("app_pages/report.py").run()
    no_errors(report)

    # closing the list takes the point out of the URL
    at.button(key="overview_drill_close").click().run()
    no_errors(at)
    assert "day" not in at.query_params
    assert not any(h.value.startswith("Answers of") for h in at.subheader)


def test_bad_url_values_are_ignored(seeded_db, use_db):
    use_db(seeded_db)
    at = new_session(
        {"from": "yesterday", "models": ["no-such-model"], "period": "year", "day": "x"}
    )
    no_errors(at)
    assert at.title[0].value == "Overview"
    assert at.multiselect(key="sidebar_models").value == []
    assert at.segmented_control(key="overview_granularity").value == "day"


def test_calibration_and_patients_keep_their_state_in_the_url(seeded_db, use_db):
    use_db(seeded_db)
    at = open_page("calibration")
    at.slider(key="calibration_bins").set_value(7).run()
    at.slider(key="calibration_threshold").set_value(0.45).run()
    no_errors(at)
    params = dict(at.query_params)
    assert params["bins"] == "7"
    assert params["threshold"] == "0.45"
    shared = new_session(params)
    shared.switch_page("app_pages/calibration.py")
    shared.query_params.update(params)  # the address of the calibration page, same query
    shared.run()
    no_errors(shared)
    assert shared.slider(key="calibration_bins").value == 7
    assert shared.slider(key="calibration_threshold").value == 0.45
    assert [b.label for b in shared.get("download_button")] == [
        "Reliability (CSV)",
        "Risk by verdict (CSV)",
        "Threshold explorer (CSV)",
    ]

    at = open_page("patients")
    at.selectbox(key="patients_pick").set_value(PATIENTS[2]).run()
    assert at.query_params["patient"] == PATIENTS[2]
    shared = new_session({})
    shared.switch_page("app_pages/patients.py")
    shared.query_params.update({"patient": PATIENTS[2]})
    shared.run()
    no_errors(shared)
    assert shared.selectbox(key="patients_pick").value == PATIENTS[2]
    scores = chart(shared, "patients_scores")
    points = next(u for u, _ in vs.units(scores) if u.get("name") == "answers")
    assert points["encoding"]["y"]["scale"]["domain"] != [0, 1.02]  # fitted to the answers' scores
    assert "Answers (CSV)" in [b.label for b in shared.get("download_button")]


# --------------------------------------------------------------------------- addresses


def test_every_page_has_its_own_address_and_the_root_opens_the_overview(seeded_db, use_db):
    use_db(seeded_db)
    at = new_session({"models": MODELS[0]})
    no_errors(at)
    assert at.title[0].value == "Overview"
    # the pages st.navigation registered (AppTest keeps them; there is no public accessor):
    # no page is served at "/" only, each opens by its own path, /overview included
    registered = {
        Path(str(info.get("script_path") or "")).stem or "": info["url_pathname"]
        for info in at._registered_pages.values()
    }
    pages = ("overview", "review", "report", "upload", "calibration", "patients", "admin")
    assert {name: registered[name] for name in pages} == {n: n for n in pages}
    assert registered[""] == ""  # the root: a hidden page that opens the overview
    # the root keeps the query string on its way to the overview
    assert at.multiselect(key="sidebar_models").value == [MODELS[0]]


# --------------------------------------------------------------------------- analysts


def test_an_analyst_drills_down_without_patient_ids_or_report_links(
    seeded_db: Seeded, use_db: Any, users_file: Path
):
    use_db(seeded_db)
    day = END - timedelta(days=2)
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(
        {"patients": PATIENTS[0], "day": day.isoformat(), "day_model": MODELS[1]}
    )
    at.run()
    login(at, "andy")
    no_errors(at)
    # the shared patient filter is ignored and taken out of the address
    assert "patients" not in at.query_params
    assert int(metric(at, "Answers").replace(",", "")) > 0
    answers = at.dataframe[-1].value
    assert "report" not in answers.columns
    assert "patient_id" not in answers.columns
    shown = json.dumps([str(x) for x in answers.to_numpy().ravel()])
    for patient in PATIENTS:
        assert patient not in shown


def test_the_report_keeps_the_answer_it_shows_in_the_url(seeded_db, use_db):
    use_db(seeded_db)
    at = open_page("report")
    no_errors(at)
    shown = at.query_params["id"]  # the most recent flagged answer, opened by default
    at.text_input(key="report_typed").input(seeded_db.script_conversation_id).run()
    no_errors(at)
    assert at.query_params["id"] == seeded_db.script_conversation_id != shown
    shared = new_session({"id": seeded_db.script_conversation_id})
    shared.switch_page("app_pages/report.py")
    shared.query_params.update({"id": seeded_db.script_conversation_id})
    shared.run()
    no_errors(shared)
    assert shared.query_params["id"] == seeded_db.script_conversation_id
    assert any("rec-script" in h.value for h in shared.subheader)
