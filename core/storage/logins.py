"""Failed dashboard logins and account locks, persisted in ``login_lock``.

After :data:`MAX_LOGIN_FAILURES` wrong passwords in a row on one account the account is
locked, in the database, for :func:`lock_seconds` (1 minute, then 2, 4, 8... up to an hour
for each further lock in a row): every browser session, every server process and a restart
see the same lock. While locked, no password is checked. A successful login clears the
count and the growth. Each lock is audited (``login_locked``, with its length).

An account is keyed by a 12-char hash of the typed user name, known or not, so a lock says
nothing about which names exist and no typed text is stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session

from core.storage.models import LoginLock
from core.storage.writes import record_audit

MAX_LOGIN_FAILURES = 5
LOCK_BASE_S = 60.0
MAX_LOCK_S = 3600.0


def lock_seconds(lockouts: int) -> float:
    """Length of the lock that follows ``lockouts`` earlier locks in a row: 60 s doubled per
    earlier lock, at most an hour."""
    return min(LOCK_BASE_S * 2.0 ** max(lockouts, 0), MAX_LOCK_S)


@dataclass(frozen=True, slots=True)
class LoginState:
    """Where an account stands: failures since the last success or lock, locks in a row,
    and the seconds left of the current lock (0: not locked)."""

    failures: int
    lockouts: int
    wait_s: float

    @property
    def locked(self) -> bool:
        return self.wait_s > 0


def _now(now: datetime | None) -> datetime:
    return (now or datetime.now(UTC)).astimezone(UTC)


def _state(row: LoginLock | None, now: datetime) -> LoginState:
    if row is None:
        return LoginState(0, 0, 0.0)
    wait = 0.0
    if row.locked_until is not None:
        wait = max(0.0, (row.locked_until - now).total_seconds())
    return LoginState(int(row.failures), int(row.lockouts), wait)


def login_state(*, session: Session, login_key: str, now: datetime | None = None) -> LoginState:
    """The account's failures, locks and remaining lock time."""
    return _state(session.get(LoginLock, login_key), _now(now))


def record_login_failure(
    *, session: Session, login_key: str, actor: str, now: datetime | None = None
) -> LoginState:
    """Count a wrong password (audited as ``login_failed``); the failure that reaches
    :data:`MAX_LOGIN_FAILURES` locks the account (audited as ``login_locked``). Safe under
    concurrent logins: the count is incremented in one upsert, the lock set once.

    Returns the account's state after this failure.
    """
    at = _now(now)
    dialect = session.get_bind().dialect.name
    make = postgresql.insert if dialect == "postgresql" else sqlite.insert
    table = LoginLock.__table__  # type: ignore[attr-defined]
    stmt = make(table).values(
        login_key=login_key, failures=1, lockouts=0, locked_until=None, updated_at=at
    )
    session.execute(
        stmt.on_conflict_do_update(
            index_elements=["login_key"],
            set_={"failures": table.c.failures + 1, "updated_at": at},
        )
    )
    record_audit(
        session=session,
        actor=actor,
        action="login_failed",
        target_type="login",
        target_id=login_key,
    )
    row = session.execute(
        select(table.c.failures, table.c.lockouts).where(table.c.login_key == login_key)
    ).one()
    if int(row.failures) >= MAX_LOGIN_FAILURES:
        seconds = lock_seconds(int(row.lockouts))
        locked = session.execute(
            update(table)
            .where(table.c.login_key == login_key, table.c.failures >= MAX_LOGIN_FAILURES)
            .values(
                failures=0,
                lockouts=table.c.lockouts + 1,
                locked_until=at + timedelta(seconds=seconds),
                updated_at=at,
            )
        )
        if cast("CursorResult[Any]", locked).rowcount:
            record_audit(
                session=session,
                actor=actor,
                action="login_locked",
                target_type="login",
                target_id=login_key,
                detail={"seconds": int(seconds), "lock": int(row.lockouts) + 1},
            )
    session.flush()
    session.expire_all()
    return login_state(session=session, login_key=login_key, now=at)


def record_login_success(*, session: Session, login_key: str) -> None:
    """A right password: the failures and the lock growth start again from nothing."""
    row = session.get(LoginLock, login_key)
    if row is not None:
        session.delete(row)
        session.flush()


__all__ = [
    "LOCK_BASE_S",
    "MAX_LOCK_S",
    "MAX_LOGIN_FAILURES",
    "LoginState",
    "lock_seconds",
    "login_state",
    "record_login_failure",
    "record_login_success",
]
