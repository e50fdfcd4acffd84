"""The dashboard's login lock in the database, on SQLite and PostgreSQL: five wrong passwords
lock the account for a minute, each further lock in a row doubles, a right password starts
again, concurrent failures lock once, and every lock is audited."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

from sqlalchemy.engine import Engine

from core.storage import logins, repo
from core.storage.db import read_session, write_session

KEY = "a1b2c3d4e5f6"


def fail(engine: Engine, at: datetime, key: str = KEY) -> logins.LoginState:
    with write_session(engine) as s:
        return logins.record_login_failure(session=s, login_key=key, actor="rita", now=at)


def state(engine: Engine, at: datetime, key: str = KEY) -> logins.LoginState:
    with read_session(engine) as s:
        return logins.login_state(session=s, login_key=key, now=at)


def locks(engine: Engine) -> list[dict[str, object]]:
    with read_session(engine) as s:
        events = repo.list_audit_events(session=s, action="login_locked")
    return [e.detail or {} for e in events if e.target_id == KEY]


def test_five_failures_lock_for_a_growing_time_and_a_success_resets(engine: Engine) -> None:
    t0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    for i in range(logins.MAX_LOGIN_FAILURES - 1):
        after = fail(engine, t0)
        assert (after.failures, after.locked) == (i + 1, False)
    assert state(engine, t0).wait_s == 0
    locked = fail(engine, t0)
    assert locked.locked
    assert locked.wait_s == 60
    assert locked.lockouts == 1
    assert state(engine, t0 + timedelta(seconds=59)).wait_s == 1  # held in the database
    assert state(engine, t0 + timedelta(seconds=60)).locked is False
    assert state(engine, t0, key="another-key").wait_s == 0
    assert locks(engine) == [{"seconds": 60, "lock": 1}]

    t1 = t0 + timedelta(minutes=5)
    for _ in range(logins.MAX_LOGIN_FAILURES):
        second = fail(engine, t1)
    assert second.wait_s == 120
    assert second.lockouts == 2
    t2 = t1 + timedelta(minutes=5)
    for _ in range(logins.MAX_LOGIN_FAILURES):
        third = fail(engine, t2)
    assert third.wait_s == 240
    assert [d["seconds"] for d in locks(engine)] == [240, 120, 60]  # newest first

    with write_session(engine) as s:
        logins.record_login_success(session=s, login_key=KEY)
    assert state(engine, t2) == logins.LoginState(0, 0, 0.0)
    for _ in range(logins.MAX_LOGIN_FAILURES):
        again = fail(engine, t2 + timedelta(hours=1))
    assert again.wait_s == 60  # the growth started again
    with read_session(engine) as s:
        failed = [
            e
            for e in repo.list_audit_events(session=s, action="login_failed")
            if e.target_id == KEY
        ]
    assert len(failed) == 4 * logins.MAX_LOGIN_FAILURES  # every failure audited


def test_concurrent_failures_lock_once(engine: Engine) -> None:
    """Ten wrong passwords at once (ten sessions, ten connections): exactly two locks, the
    count never lost or doubled."""
    at = datetime.now(UTC)
    barrier = threading.Barrier(10)
    errors: list[BaseException] = []

    def one() -> None:
        try:
            barrier.wait(timeout=30)
            fail(engine, at)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert [d["lock"] for d in locks(engine)] == [2, 1]
    final = state(engine, at)
    assert (final.failures, final.lockouts) == (0, 2)
    assert final.wait_s == 120
