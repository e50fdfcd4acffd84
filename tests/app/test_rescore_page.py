"""AppTests of the Re-scoring page on a seeded database with two stored runs: the runs listed,
the newest finished run's counts and largest changes (linking to the reports), two runs
compared, and an analyst who sees the counts but no report links."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from streamlit.testing.v1 import AppTest

from core.storage import models as m
from core.storage import rescore as store
from core.storage.db import get_engine, read_session, write_session
from tests.app.seed import APP, Seeded, login, open_page


def _row(run: str, cid: str, old: bool, new: bool, old_risk: float, new_risk: float) -> Any:
    change = "same" if old == new else ("flagged" if new else "cleared")
    return {
        "run_id": run,
        "conversation_id": cid,
        "change": change,
        "old_flagged": old,
        "new_flagged": new,
        "old_risk": old_risk,
        "new_risk": new_risk,
    }


def seed_runs(seeded: Seeded) -> list[str]:
    """Run r1 (finished): a newly flagged, b cleared, c the same. Run r2 (finished, newer): a
    and c newly flagged, b the same (flagged). Run r3: stopped half-way (running)."""
    engine = get_engine(seeded.url)
    with read_session(engine) as s:
        cids = list(s.execute(select(m.Conversation.id).limit(3)).scalars())
    a, b, c = cids
    for run, rows in (
        (
            "r1",
            [
                _row("r1", a, False, True, 0.1, 0.6),
                _row("r1", b, True, False, 0.7, 0.1),
                _row("r1", c, False, False, 0.1, 0.1),
            ],
        ),
        (
            "r2",
            [
                _row("r2", a, False, True, 0.1, 0.5),
                _row("r2", b, True, True, 0.7, 0.8),
                _row("r2", c, False, True, 0.1, 0.4),
            ],
        ),
        ("r3", [_row("r3", a, False, False, 0.1, 0.1)]),
    ):
        with write_session(engine) as s:
            store.create_run(
                session=s,
                run_id=run,
                verifier_version=f"v-{run}@abc",
                settings_hash="0123456789abcdef",
                source="stored",
                filters={},
            )
            store.write_results(session=s, rows=rows)
            if run != "r3":
                store.finish_run(session=s, run_id=run, selected=3)
    return cids


def table(at: AppTest, column: str) -> Any:
    """The one table on the page with this column."""
    (frame,) = [d.value for d in at.dataframe if column in d.value.columns]
    return frame


def metric(at: AppTest, label: str) -> str:
    return next(str(x.value) for x in at.metric if x.label == label)


def test_runs_listed_newest_finished_shown_and_two_compared(fresh_db, use_db):
    use_db(fresh_db)
    a, b, c = seed_runs(fresh_db)
    at = open_page("rescore")
    assert not at.exception, [e.value for e in at.exception]
    runs = table(at, "verifier")
    assert list(runs["run"]) == ["r3", "r2", "r1"]  # newest first
    # the newest finished run (r2, not the stopped r3): a (+0.4) and c (+0.3) newly flagged
    assert at.selectbox(key="rescore_run").value == "r2"
    assert metric(at, "Checked") == "3"
    assert metric(at, "Newly flagged") == "2"
    assert metric(at, "Cleared") == "0"
    top = table(at, "change")
    assert list(top["conversation_id"]) == [a, c]
    assert list(top["report"]) == [f"/report?id={a}", f"/report?id={c}"]
    # r1: a newly flagged (+0.5) and b cleared (-0.6), largest first
    at.selectbox(key="rescore_run").set_value("r1").run()
    assert (metric(at, "Newly flagged"), metric(at, "Cleared")) == ("1", "1")
    assert list(table(at, "change")["conversation_id"]) == [b, a]
    # the stopped run says how to go on
    at.selectbox(key="rescore_run").set_value("r3").run()
    assert "groundwatch rescore --resume r3" in at.warning[0].value
    # compare r1 (A) with r2 (B): b and c flagged by r2 only, a by both
    at.radio(key="rescore_view").set_value("Compare two runs").run()
    at.selectbox(key="rescore_a").set_value("r1").run()
    at.selectbox(key="rescore_b").set_value("r2").run()
    assert not at.exception, [e.value for e in at.exception]
    assert metric(at, "Checked by both") == "3"
    assert metric(at, "Flagged by B only") == "2"
    assert metric(at, "Flagged by A only") == "0"
    assert metric(at, "Flagged by both") == "1"
    diff = table(at, "flagged_a")
    assert list(diff["conversation_id"]) == [b, c]  # risk +0.7, then +0.3


def test_an_analyst_sees_the_counts_without_report_links(fresh_db, use_db, users_file):
    use_db(fresh_db)
    seed_runs(fresh_db)
    at = AppTest.from_file(APP, default_timeout=60).run()
    login(at, "andy")
    at.switch_page("app_pages/rescore.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert metric(at, "Newly flagged") == "2"
    assert "report" not in table(at, "change").columns


def test_no_run_yet_says_how_to_start_one(fresh_db, use_db):
    use_db(fresh_db)
    at = open_page("rescore")
    assert not at.exception, [e.value for e in at.exception]
    assert any("No re-scoring run yet" in i.value for i in at.info)
