"""One engine per database URL, short sessions, and migrations to head.

SQLite runs with WAL, foreign keys and a busy timeout; write transactions start with
``BEGIN IMMEDIATE`` so concurrent writers queue instead of failing. PostgreSQL goes through
psycopg 3. Connection problems raise :class:`DatabaseError` with one clear line.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, OperationalError, SQLAlchemyError
from sqlmodel import Session

log = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


class DatabaseError(RuntimeError):
    """The database URL is invalid or the server cannot be reached (message is one line)."""


def _safe_url(url: str) -> str:
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparseable URL>"


def make_engine(url: str, *, pool_size: int = 10) -> Engine:
    """Create an engine for ``url`` (sqlite:// or postgresql://), normalising the driver."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise DatabaseError(
            "GROUNDWATCH_DATABASE_URL is not a valid database URL "
            "(expected sqlite:///file.db or postgresql://user@host:5432/db)"
        ) from None
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        db = parsed.database or ""
        if db and db != ":memory:" and not db.startswith("file:"):
            Path(db).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            parsed,
            connect_args={"check_same_thread": False, "timeout": 60},
        )
        _configure_sqlite(engine)
        return engine
    if backend == "postgresql":
        if parsed.drivername in ("postgresql", "postgres"):
            parsed = parsed.set(drivername="postgresql+psycopg")
        return create_engine(
            parsed,
            pool_size=pool_size,
            max_overflow=pool_size,
            pool_pre_ping=True,
            connect_args={"connect_timeout": 5},
        )
    raise DatabaseError(f"unsupported database backend {backend!r} (use sqlite or postgresql)")


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA busy_timeout=60000")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        mode = conn.get_execution_options().get("sqlite_begin", "DEFERRED")
        conn.exec_driver_sql(f"BEGIN {mode}")


@lru_cache(maxsize=8)
def get_engine(url: str) -> Engine:
    """The shared engine for ``url`` (one per process)."""
    return make_engine(url)


def check_connection(engine: Engine) -> None:
    """Open a connection once, turning any failure into one clear :class:`DatabaseError`."""
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except OperationalError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else type(exc).__name__
        raise DatabaseError(
            f"cannot connect to database {_safe_url(str(engine.url))}: {reason}"
        ) from None
    except SQLAlchemyError as exc:
        raise DatabaseError(
            f"database error on {_safe_url(str(engine.url))}: {type(exc).__name__}"
        ) from None


@contextmanager
def read_session(engine: Engine) -> Iterator[Session]:
    """A short read-only-intent session."""
    with Session(engine, expire_on_commit=False) as session:
        yield session


@contextmanager
def write_session(engine: Engine) -> Iterator[Session]:
    """A short write transaction: committed on success, rolled back on any error."""
    bound = engine.execution_options(sqlite_begin="IMMEDIATE")
    with Session(bound, expire_on_commit=False) as session:
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise


def insert_for(session: Session) -> Any:
    """The ``insert`` of the session's dialect (SQLite or PostgreSQL: both take an
    ``on_conflict_do_*`` clause)."""
    return postgresql.insert if session.get_bind().dialect.name == "postgresql" else sqlite.insert


def alembic_config(url: str) -> Any:
    """Alembic configuration pointing at the packaged migrations."""
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade_to_head(url: str) -> None:
    """Migrate the database at ``url`` to the newest schema (idempotent)."""
    from alembic import command

    engine = get_engine(url)
    check_connection(engine)
    cfg = alembic_config(url)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")
    log.info("database migrated to head")


def current_revision(engine: Engine) -> str | None:
    """The Alembic revision the database is at (None before the first migration)."""
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()
