"""Every audit event names who acted, on every page, with a login and without one.

The events are read back through the repository. Downloads run their data callable after
the script (on the server, outside the session), so the tests capture each download's
callable and call it after the run, as the server does.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlmodel import col
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import AppTest

from core.auth import LOCAL_ADMIN, User
from core.storage import models as m
from core.storage import repo
from core.storage.db import get_engine, read_session
from dashboard import auth, data
from tests.app.seed import (
    APP,
    DAYS,
    END,
    SCRIPT_ANSWER_ID,
    UPLOAD_ANSWER,
    UPLOAD_TRANSCRIPT,
    Seeded,
    login,
    open_page,
    save_upload,
)

Downloads = dict[str, Callable[[], Any]]


@pytest.fixture
def downloads(monkeypatch: pytest.MonkeyPatch) -> Downloads:
    """The data callables of the download buttons drawn so far, by file name (the latest)."""
    captured: Downloads = {}
    original = MediaFileManager.add_deferred

    def add_deferred(self: MediaFileManager, data_callable: Any, *args: Any, **kw: Any) -> str:
        name = kw.get("file_name") or (args[2] if len(args) > 2 else None)
        captured[str(name)] = data_callable
        return original(self, data_callable, *args, **kw)

    monkeypatch.setattr(MediaFileManager, "add_deferred", add_deferred)
    return captured


def events(url: str) -> list[tuple[str, str, str | None, str | None]]:
    """(actor, action, target_type, target_id) of every audit event, oldest first."""
    with read_session(get_engine(url)) as s:
        rows = repo.list_audit_events(session=s, limit=10_000)
        return [(e.actor, e.action, e.target_type, e.target_id) for e in reversed(rows)]


def new_events(url: str, seen: int) -> list[tuple[str, str, str | None, str | None]]:
    return events(url)[seen:]


def no_errors(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def no_patient_text(url: str) -> None:
    """Audit entries hold ids only: no answer, transcript or source text in any field."""
    with read_session(get_engine(url)) as s:
        stored = list(s.execute(select(m.AuditEvent)).scalars())
    fragments = ("lisinopril", "metformin", "gabapentin", "warfarin", "every morning")
    for e in stored:
        text = f"{e.actor} {e.target_type} {e.target_id} {e.detail}".casefold()
        for fragment in fragments:
            assert fragment not in text, (e.action, fragment)
    assert UPLOAD_ANSWER not in str([e.detail for e in stored])
    assert UPLOAD_TRANSCRIPT not in str([e.detail for e in stored])


def external_id(url: str, conversation_id: str) -> str:
    with read_session(get_engine(url)) as s:
        conv = s.get(m.Conversation, conversation_id)
        assert conv is not None
        return conv.external_id


def walk_every_audited_action(at: AppTest, url: str, downloads: Downloads, who: str) -> None:
    """Views, exports, a verdict and an upload in one session: each event names ``who``."""
    seen = len(events(url))
    # a report view and its export
    at.switch_page("app_pages/report.py").run()
    at.text_input(key="report_typed").input(SCRIPT_ANSWER_ID).run()
    no_errors(at)
    script_conv = repo.conversation_id_for(SCRIPT_ANSWER_ID)
    downloads[f"report-{SCRIPT_ANSWER_ID}.html"]()
    downloads[f"report-{SCRIPT_ANSWER_ID}.md"]()
    got = new_events(url, seen)
    assert (who, "view", "conversation", script_conv) in got
    assert got.count((who, "export", "conversation", script_conv)) == 2

    # the review queue: the statement view, both exports, a verdict
    seen = len(events(url))
    at.switch_page("app_pages/review.py").run()
    no_errors(at)
    at.button(key="review_false_alarm").click().run()
    no_errors(at)
    downloads["review_queue.csv"]()
    downloads["verdicts.csv"]()
    got = new_events(url, seen)
    actions = [(a, action, target) for a, action, target, _ in got]
    assert (who, "view", "statement_check") in actions
    assert (who, "review", "statement_check") in actions
    assert (who, "export", "review_queue") in actions
    assert (who, "export", "verdicts") in actions

    # an upload saved as a conversation
    seen = len(events(url))
    save_upload(at, "p-audit")
    no_errors(at)
    assert any("Saved as conversation" in str(x.value) for x in at.success)
    got = new_events(url, seen)
    uploads = [e for e in got if e[1] == "upload"]
    assert len(uploads) == 1
    assert uploads[0][0] == who
    assert external_id(url, str(uploads[0][3])).startswith("upload-")


def test_without_login_events_name_the_local_user_and_the_typed_reviewer(
    fresh_db: Seeded, lexical_checks: None, use_db: object, downloads: Downloads
) -> None:
    use_db(fresh_db)  # type: ignore[operator]
    url = fresh_db.url
    # no name typed yet: the local user, never "anonymous"
    at = open_page("report")
    no_errors(at)
    shown = events(url)
    assert shown
    assert all(e[0] == "local-admin" for e in shown)
    assert {e[1] for e in shown} == {"view"}
    export = next(n for n in downloads if n.startswith("report-") and n.endswith(".html"))
    downloads[export]()
    assert events(url)[-1][:2] == ("local-admin", "export")

    at.text_input(key="sidebar_reviewer").input("  Dr.   Rivera ").run()
    walk_every_audited_action(at, url, downloads, "local-admin (Dr. Rivera)")
    with read_session(get_engine(url)) as s:
        review = s.execute(select(m.Review).order_by(col(m.Review.id).desc())).scalars().first()
    assert review is not None
    assert review.reviewer == "Dr. Rivera"  # the verdict keeps the typed name

    # the admin's audit export names the same actor
    at.switch_page("app_pages/admin.py").run()
    no_errors(at)
    downloads["audit_events.csv"]()
    assert events(url)[-1][:3] == ("local-admin (Dr. Rivera)", "export", "audit_event")

    assert all(e[0] != auth.ANONYMOUS for e in events(url))
    no_patient_text(url)


def test_with_login_events_name_the_logged_in_user(
    fresh_db: Seeded,
    lexical_checks: None,
    use_db: object,
    users_file: Path,
    downloads: Downloads,
) -> None:
    use_db(fresh_db)  # type: ignore[operator]
    url = fresh_db.url
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["sidebar_dates"] = (END - timedelta(days=DAYS - 1), END)
    at.run()
    login(at, "rita")
    no_errors(at)
    assert events(url)[-1][:2] == ("rita", "login")
    walk_every_audited_action(at, url, downloads, "rita")
    assert all(e[0] != auth.ANONYMOUS for e in events(url))
    no_patient_text(url)


def test_the_actor_convention() -> None:
    rita = User(username="rita", role="reviewer", source="password")
    assert auth.actor_for(rita) == "rita"
    assert auth.actor_for(rita, "Someone Else") == "rita"  # the login says who it is
    assert auth.actor_for(LOCAL_ADMIN) == "local-admin"
    assert auth.actor_for(LOCAL_ADMIN, "  Dr.\t Rivera ") == "local-admin (Dr. Rivera)"
    long = auth.actor_for(LOCAL_ADMIN, "x" * 500)
    assert long == f"local-admin ({'x' * auth.MAX_REVIEWER_CHARS})"
    assert auth.actor_for(None) == "anonymous"


def test_the_session_actor_cannot_be_read_after_the_script(
    fresh_db: Seeded, use_db: object
) -> None:
    """A callback that runs after the script must take the actor read during the run: asking
    for it later fails loudly instead of storing a wrong name, and the data layer never
    guesses one (it reads no session: an audit event without its actor is refused)."""
    use_db(fresh_db)  # type: ignore[operator]
    with pytest.raises(RuntimeError, match="during the script run"):
        auth.actor()
    before = len(events(fresh_db.url))
    with pytest.raises(TypeError, match="actor"):
        data.audit(action="export", target_type="verdicts", target_id="csv")  # type: ignore[call-arg]
    assert len(events(fresh_db.url)) == before
