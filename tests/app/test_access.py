"""Access control in the dashboard: the login gate, roles per page, and no record text for
analysts.

The first tests drive the gate of :mod:`dashboard.auth` in a minimal app; the router tests
run the real app (``dashboard/streamlit_app.py``) on a seeded database and check that every
page refuses an anonymous user when a users file is configured, and that an analyst never
receives record text on any page they can reach.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from sqlalchemy import select
from sqlmodel import col
from streamlit.testing.v1 import AppTest

from core.storage import models as m
from core.storage.db import get_engine, read_session
from tests.app.seed import APP, DAYS, END, PASSWORD, Seeded, login

PAGES_DIR = Path(APP).parent / "app_pages"
RECORD_TEXT = ("lisinopril", "metformin", "gabapentin", "Visit note", "penicillin")
PAGES = (
    "overview",
    "review",
    "report",
    "upload",
    "calibration",
    "patients",
    "alerts",
    "rescore",
    "admin",
)
SEED_DAYS = (END - timedelta(days=DAYS - 1), END)


def gate_app() -> None:
    import streamlit as st

    from dashboard import auth

    user = auth.require_login()
    if user is None:
        st.stop()
    st.markdown(f"welcome {user.username} ({user.role})")
    auth.guard(st.session_state.get("test_page", "overview"))
    st.markdown("PAGE CONTENT")


def markdown(at: AppTest) -> str:
    return "\n".join(str(x.value) for x in at.markdown)


def test_without_login_configured_the_local_admin_gets_a_banner(
    seeded_db: Seeded, use_db: object
) -> None:
    use_db(seeded_db)  # type: ignore[operator]
    at = AppTest.from_function(gate_app, default_timeout=60).run()
    assert any("No login configured: listening on localhost only" in i.value for i in at.info)
    assert "welcome local-admin (admin)" in markdown(at)
    assert "PAGE CONTENT" in markdown(at)


def test_login_form_refuses_anonymous_and_wrong_passwords(
    seeded_db: Seeded, use_db: object, users_file: Path
) -> None:
    use_db(seeded_db)  # type: ignore[operator]
    at = AppTest.from_function(gate_app, default_timeout=60).run()
    assert "PAGE CONTENT" not in markdown(at)
    assert at.text_input(key="auth_password") is not None
    login(at, "rita", "wrong password")
    assert "PAGE CONTENT" not in markdown(at)
    assert any("Wrong user name or password" in e.value for e in at.error)
    login(at, "nobody", PASSWORD)
    assert "PAGE CONTENT" not in markdown(at)
    login(at, "rita")
    assert not at.exception, [e.value for e in at.exception]
    assert "welcome rita (reviewer)" in markdown(at)
    assert "PAGE CONTENT" in markdown(at)
    with read_session(get_engine(seeded_db.url)) as s:
        actions = [
            (e.actor, e.action)
            for e in s.execute(select(m.AuditEvent).order_by(col(m.AuditEvent.id))).scalars()
        ]
    assert ("rita", "login_failed") in actions
    assert ("unknown", "login_failed") in actions
    assert ("rita", "login") in actions


def test_guard_refuses_roles_without_the_permission(
    seeded_db: Seeded, use_db: object, users_file: Path
) -> None:
    use_db(seeded_db)  # type: ignore[operator]
    at = AppTest.from_function(gate_app, default_timeout=60)
    at.session_state["test_page"] = "review"
    at.run()
    login(at, "andy")
    assert "welcome andy (analyst)" in markdown(at)
    assert "PAGE CONTENT" not in markdown(at)
    assert any("does not give access" in e.value for e in at.error)


def test_a_removed_user_loses_access_on_the_next_run(
    seeded_db: Seeded, use_db: object, users_file: Path
) -> None:
    use_db(seeded_db)  # type: ignore[operator]
    at = AppTest.from_function(gate_app, default_timeout=60).run()
    login(at, "ada")
    assert "PAGE CONTENT" in markdown(at)
    doc = yaml.safe_load(users_file.read_text(encoding="utf-8"))
    del doc["users"]["ada"]
    users_file.write_text(yaml.safe_dump(doc), encoding="utf-8")
    at.run()
    assert "PAGE CONTENT" not in markdown(at)


def test_broken_users_file_refuses_everyone(
    seeded_db: Seeded, use_db: object, users_file: Path
) -> None:
    use_db(seeded_db)  # type: ignore[operator]
    users_file.write_text("users:\n  rita: {role: boss, password: x}\n", encoding="utf-8")
    at = AppTest.from_function(gate_app, default_timeout=60).run()
    assert "PAGE CONTENT" not in markdown(at)
    assert any("users file cannot be used" in e.value for e in at.error)


# --------------------------------------------------------------------------- the real router


def page_text(at: AppTest) -> str:
    parts = [markdown(at)]
    parts += [str(h.proto.body) for h in at.get("html")]
    parts += [str(x.value) for x in at.caption]
    for df in at.dataframe:
        parts.append(df.value.to_csv())
    return "\n".join(parts)


@pytest.mark.parametrize("page", PAGES)
def test_every_page_refuses_an_anonymous_user(
    seeded_db: Seeded, use_db: object, users_file: Path, page: str
) -> None:
    use_db(seeded_db)  # type: ignore[operator]
    # run the page on its own (no router): its own guard must refuse
    at = AppTest.from_file(str(PAGES_DIR / f"{page}.py"), default_timeout=60)
    at.session_state["report_conversation"] = seeded_db.script_conversation_id
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    text = page_text(at)
    for fragment in RECORD_TEXT:
        assert fragment not in text, fragment
    assert not at.metric, "an anonymous user must see no numbers"
    assert any("log in" in e.value for e in at.error)


def test_the_router_shows_only_the_login_form_to_anonymous_users(
    seeded_db: Seeded, use_db: object, users_file: Path
) -> None:
    use_db(seeded_db)  # type: ignore[operator]
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["report_conversation"] = seeded_db.script_conversation_id
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.text_input(key="auth_password") is not None
    assert not at.metric
    assert not at.dataframe
    text = page_text(at)
    for fragment in RECORD_TEXT:
        assert fragment not in text, fragment


def test_an_analyst_never_receives_record_text(
    seeded_db: Seeded, use_db: object, users_file: Path
) -> None:
    use_db(seeded_db)  # type: ignore[operator]
    at = AppTest.from_file(APP, default_timeout=60).run()
    login(at, "andy")
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "Overview"
    assert at.metric, "the analyst sees the overview's aggregates"
    reached = []
    for page in PAGES:
        at.session_state["report_conversation"] = seeded_db.script_conversation_id
        try:
            at.switch_page(f"app_pages/{page}.py")
        except ValueError:  # not in the analyst's navigation at all
            continue
        at.run()
        reached.append(page)
        assert not at.exception, (page, [e.value for e in at.exception])
        text = page_text(at)
        for fragment in RECORD_TEXT:
            assert fragment not in text, (page, fragment)
    assert "overview" in reached


def test_a_reviewer_reads_text_and_verdicts_carry_the_login(
    seeded_db: Seeded, use_db: object, users_file: Path
) -> None:
    use_db(seeded_db)  # type: ignore[operator]
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["sidebar_dates"] = SEED_DAYS  # the default ends today, after the seed
    at.run()
    login(at, "rita")
    at.switch_page("app_pages/review.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert "metformin" in page_text(at)
    at.button(key="review_false_alarm").click().run()
    assert not at.exception, [e.value for e in at.exception]
    with read_session(get_engine(seeded_db.url)) as s:
        review = s.execute(select(m.Review).order_by(col(m.Review.id).desc())).scalars().first()
    assert review is not None
    assert review.reviewer == "rita"
    with read_session(get_engine(seeded_db.url)) as s:
        views = s.execute(select(m.AuditEvent).where(col(m.AuditEvent.action) == "view")).scalars()
        seen = {(e.actor, e.target_type) for e in views}
    assert ("rita", "statement_check") in seen  # the flagged statement view is audited


def test_an_analyst_can_analyse_an_upload_but_gets_no_save_form(
    seeded_db: Seeded, use_db: object, users_file: Path
) -> None:
    import json

    use_db(seeded_db)  # type: ignore[operator]
    at = AppTest.from_file(APP, default_timeout=60).run()
    login(at, "andy")
    at.switch_page("app_pages/upload.py").run()
    at.toggle(key="upload_semantic").set_value(False)
    transcript = {"transcript": "Doctor: Any medicines?\nPatient: Lisinopril 10 mg."}
    at.file_uploader(key="upload_transcript").set_value(
        ("visit.json", json.dumps(transcript).encode(), "application/json")
    )
    at.text_area(key="upload_answer_text").input("He takes lisinopril 10 mg.")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("can analyse an upload here but not store it" in i.value for i in at.info)
    assert not list(at.get("form_submit_button")), "no save button for an analyst"


def test_lockout_holds_across_sessions_and_is_audited(
    fresh_db: Seeded, use_db: object, users_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Five wrong passwords, each in a new session (a reload), lock the account in the
    database: the fifth says so, the right password is refused in yet another session, the
    lock is audited once, and it ends after a minute. Another account is not locked."""
    from datetime import UTC, datetime, timedelta

    from core.storage import logins
    from dashboard import auth, data

    use_db(fresh_db)  # type: ignore[operator]
    for i in range(data.MAX_LOGIN_FAILURES):
        at = AppTest.from_function(gate_app, default_timeout=60).run()
        login(at, "rita", "wrong password")
        said = "Wrong user name or password" if i < data.MAX_LOGIN_FAILURES - 1 else "locked"
        assert any(said in e.value for e in at.error), [e.value for e in at.error]
    at = AppTest.from_function(gate_app, default_timeout=60).run()
    login(at, "rita")
    assert "PAGE CONTENT" not in markdown(at)
    assert any("Too many failed attempts" in e.value for e in at.error)
    key = auth.login_key("rita")
    assert 0 < data.login_wait(key) <= logins.LOCK_BASE_S
    later = datetime.now(UTC) + timedelta(seconds=logins.LOCK_BASE_S + 1)
    assert data.login_wait(key, now=later) == 0  # the lock ends
    assert data.login_wait(auth.login_key("ada")) == 0  # another account is not locked
    locks = [e for e in data.audit_events("login_locked", 10) if e["target_id"] == key]
    assert [e["detail"] for e in locks] == [{"seconds": 60, "lock": 1}]


def test_an_analyst_is_never_sent_a_patient_id(
    seeded_db: Seeded, use_db: object, users_file: Path
) -> None:
    from tests.app.seed import PATIENTS

    use_db(seeded_db)  # type: ignore[operator]
    at = AppTest.from_file(APP, default_timeout=60).run()
    login(at, "andy")
    for page in ("overview", "calibration", "upload"):
        at.switch_page(f"app_pages/{page}.py").run()
        assert not at.exception, (page, [e.value for e in at.exception])
        options = [str(o) for w in at.multiselect for o in w.options]
        options += [str(o) for w in at.selectbox for o in w.options]
        shown = page_text(at)
        for patient in PATIENTS:
            assert patient not in options, (page, patient)
            assert patient not in shown, (page, patient)
        assert "Patient" not in [w.label for w in at.multiselect]
    # a reviewer does get the patient filter
    at = AppTest.from_file(APP, default_timeout=60).run()
    login(at, "rita")
    assert "Patient" in [w.label for w in at.multiselect]
    assert set(PATIENTS) <= {str(o) for w in at.multiselect for o in w.options}
