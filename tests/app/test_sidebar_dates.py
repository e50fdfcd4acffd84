"""The sidebar's date range follows the data: an answer saved in a session is in that
session's review queue and filters on the next run, and a range picked by hand stays."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from sqlalchemy import select
from streamlit.testing.v1 import AppTest

from core.storage import models as m
from core.storage.db import get_engine, read_session
from dashboard import sidebar
from tests.app.seed import APP, DAYS, END, Seeded, save_upload

NEW_PATIENT = "p-new"


def no_errors(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def in_queue(at: AppTest) -> int:
    for x in at.metric:
        if x.label == "In queue":
            return int(str(x.value).replace(",", ""))
    raise AssertionError("no In queue metric")


def html_text(at: AppTest) -> str:
    return "\n".join(str(h.proto.body) for h in at.get("html"))


def saved_flagged(url: str) -> int:
    """Flagged statements of the uploaded answer, counted in the database."""
    with read_session(get_engine(url)) as s:
        conv = s.execute(
            select(m.Conversation).where(m.Conversation.patient_id == NEW_PATIENT)
        ).scalar_one()
        checks = s.execute(
            select(m.StatementCheck).where(m.StatementCheck.conversation_id == conv.id)
        ).scalars()
        return sum(c.status in ("unsupported", "contradicted") for c in checks)


def save(at: AppTest) -> None:
    save_upload(at, NEW_PATIENT)
    no_errors(at)
    assert any("Saved as conversation" in str(x.value) for x in at.success)


@pytest.fixture
def session_opened_on_end(monkeypatch: pytest.MonkeyPatch) -> date:
    """The session's "today" is the seed's last day (the session was opened then); the upload
    saved later is dated by the real clock, months after it."""
    monkeypatch.setattr(sidebar, "_today", lambda: END)
    today = datetime.now(UTC).date()
    assert today > END + timedelta(days=sidebar.DEFAULT_DAYS)  # the test needs the gap
    return today


def test_the_default_range_ends_today_and_a_saved_answer_joins_the_queue(
    fresh_db: Seeded, lexical_checks: None, use_db: object
) -> None:
    use_db(fresh_db)  # type: ignore[operator]
    today = datetime.now(UTC).date()
    at = AppTest.from_file(APP, default_timeout=60).run()
    no_errors(at)
    dates = at.date_input(key="sidebar_dates")
    # the stored answers are older than the last 30 days: the range still opens on them, and
    # ends today
    first = max(END - timedelta(days=DAYS - 1), END - timedelta(days=sidebar.DEFAULT_DAYS - 1))
    assert dates.value == (first, today)
    assert dates.max == today  # the last stored day (END) is earlier
    at.switch_page("app_pages/review.py").run()
    seeded_queue = in_queue(at)
    assert seeded_queue > 0

    save(at)
    at.switch_page("app_pages/review.py").run()  # the same session, its next run
    no_errors(at)
    assert at.date_input(key="sidebar_dates").value == (
        today - timedelta(days=sidebar.DEFAULT_DAYS - 1),
        today,
    )  # the range moves on to the newest answer
    assert in_queue(at) == saved_flagged(fresh_db.url) > 0
    assert f"patient {NEW_PATIENT}" in html_text(at)
    assert NEW_PATIENT in at.multiselect(key="sidebar_patients").options
    assert at.date_input(key="sidebar_dates").value[1] == today


def test_an_untouched_range_follows_the_new_last_day(
    fresh_db: Seeded, lexical_checks: None, use_db: object, session_opened_on_end: date
) -> None:
    use_db(fresh_db)  # type: ignore[operator]
    today = session_opened_on_end
    at = AppTest.from_file(APP, default_timeout=60).run()
    first = END - timedelta(days=DAYS - 1)
    assert at.date_input(key="sidebar_dates").value == (first, END)  # all the seed holds
    at.switch_page("app_pages/review.py").run()
    seeded_queue = in_queue(at)
    assert seeded_queue > 0

    save(at)
    at.switch_page("app_pages/review.py").run()
    no_errors(at)
    dates = at.date_input(key="sidebar_dates")
    assert dates.value == (today - timedelta(days=sidebar.DEFAULT_DAYS - 1), today)
    assert dates.max == today
    assert in_queue(at) == saved_flagged(fresh_db.url)  # only the new answer is that recent
    assert f"patient {NEW_PATIENT}" in html_text(at)


def test_a_range_picked_by_hand_is_kept_and_can_reach_the_new_day(
    fresh_db: Seeded, lexical_checks: None, use_db: object, session_opened_on_end: date
) -> None:
    use_db(fresh_db)  # type: ignore[operator]
    today = session_opened_on_end
    at = AppTest.from_file(APP, default_timeout=60).run()
    picked = (END - timedelta(days=5), END - timedelta(days=2))
    at.date_input(key="sidebar_dates").set_value(picked).run()
    at.switch_page("app_pages/review.py").run()
    queue = in_queue(at)

    save(at)
    at.switch_page("app_pages/review.py").run()
    no_errors(at)
    dates = at.date_input(key="sidebar_dates")
    assert dates.value == picked  # not moved to the new bounds
    assert dates.max == today  # but the new last day can be picked
    assert in_queue(at) == queue
    assert f"patient {NEW_PATIENT}" not in html_text(at)

    later = (END + timedelta(days=1), today)  # the days after the seed: the new answer only
    dates.set_value(later).run()
    no_errors(at)
    assert at.date_input(key="sidebar_dates").value == later
    assert in_queue(at) == saved_flagged(fresh_db.url)
    assert f"patient {NEW_PATIENT}" in html_text(at)


def test_a_picked_range_outside_the_stored_days_is_clamped(
    seeded_db: Seeded, use_db: object
) -> None:
    use_db(seeded_db)  # type: ignore[operator]
    today = datetime.now(UTC).date()
    first = END - timedelta(days=DAYS - 1)
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["sidebar_dates"] = (first - timedelta(days=400), today + timedelta(days=9))
    at.run()
    no_errors(at)
    assert at.date_input(key="sidebar_dates").value == (first, today)
