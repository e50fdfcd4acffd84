"""Shared fixtures: a fresh database per test on SQLite and on PostgreSQL, clean settings."""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine, make_url

from core.config import reset_settings_cache
from core.storage import db as storage_db

pytest_plugins = ["tests.fixtures_llm"]

DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/test"
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def postgres_server_url() -> str | None:
    """URL of the test PostgreSQL server, or None when it is not reachable.

    With ``GROUNDWATCH_REQUIRE_POSTGRES=1`` (set in CI) an unreachable server fails the tests
    instead of skipping them.
    """
    url = os.environ.get("GROUNDWATCH_TEST_POSTGRES_URL", DEFAULT_PG)
    url = url.replace("postgresql://", "postgresql+psycopg://", 1)
    try:
        eng = create_engine(url, connect_args={"connect_timeout": 3})
        with eng.connect() as conn:
            conn.execute(text("SELECT 1"))
        eng.dispose()
    except Exception:
        if os.environ.get("GROUNDWATCH_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"PostgreSQL required but unreachable at {url}")
        return None
    return url


@pytest.fixture(autouse=True)
def _clean_settings(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts from default settings (no GROUNDWATCH_* from the outer shell)."""
    for key in list(os.environ):
        if key.startswith("GROUNDWATCH_") and not key.startswith(
            ("GROUNDWATCH_TEST_", "GROUNDWATCH_REQUIRE_")
        ):
            monkeypatch.delenv(key, raising=False)
    reset_settings_cache()
    yield
    reset_settings_cache()


@pytest.fixture(autouse=True)
def _restore_log_levels() -> Iterator[None]:
    """The dashboard and the CLI set the level of Groundwatch's loggers for their process (the
    configured GROUNDWATCH_LOG_LEVEL); in the one process that runs every test, a level set by
    one test must not hide the log lines a later test reads."""
    loggers = [logging.getLogger(name) for name in ("", "core", "dashboard", "groundwatch")]
    levels = [lg.level for lg in loggers]
    yield
    for lg, level in zip(loggers, levels, strict=True):
        lg.setLevel(level)


def _fresh_pg_database(server_url: str) -> tuple[str, Engine]:
    name = f"gw_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(server_url).set(database=name).render_as_string(hide_password=False)
    return url, admin


def _drop_pg_database(admin: Engine, url: str) -> None:
    name = make_url(url).database
    storage_db.get_engine.cache_clear()
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database per test: parametrized over SQLite and PostgreSQL."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'gw.db'}"
        storage_db.get_engine.cache_clear()
        return
    server = postgres_server_url()
    if server is None:
        pytest.skip("PostgreSQL not reachable (set GROUNDWATCH_TEST_POSTGRES_URL)")
    url, admin = _fresh_pg_database(server)
    try:
        yield url
    finally:
        engine = storage_db.get_engine(url)
        engine.dispose()
        _drop_pg_database(admin, url)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> Iterator[str]:
    """A fresh SQLite database file."""
    yield f"sqlite:///{tmp_path / 'gw.db'}"
    storage_db.get_engine.cache_clear()


@pytest.fixture
def engine(db_url: str) -> Engine:
    """A migrated engine on the parametrized fresh database."""
    storage_db.upgrade_to_head(db_url)
    return storage_db.get_engine(db_url)


@pytest.fixture
def sqlite_engine(sqlite_url: str) -> Engine:
    """A migrated engine on a fresh SQLite database."""
    storage_db.upgrade_to_head(sqlite_url)
    return storage_db.get_engine(sqlite_url)


@pytest.fixture
def use_db(db_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Point GROUNDWATCH_DATABASE_URL at the fresh database for code that reads settings."""
    monkeypatch.setenv("GROUNDWATCH_DATABASE_URL", db_url)
    reset_settings_cache()
    return db_url


@pytest.fixture(scope="session")
def shared_data() -> Path | None:
    """The benchmark data directory beside the project, when present."""
    return SHARED_DATA if SHARED_DATA.is_dir() else None
