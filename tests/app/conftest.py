"""Fixtures of the dashboard AppTests: seeded databases and the database switch."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import streamlit as st

from core.config import reset_settings_cache
from tests.app.seed import Seeded, seed_database


@pytest.fixture(autouse=True)
def _fresh_caches() -> Iterator[None]:
    st.cache_data.clear()
    yield
    st.cache_data.clear()


@pytest.fixture(scope="module")
def seeded_db(tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    """A seeded database shared by the read-only tests of a module."""
    return seed_database(tmp_path_factory.mktemp("dash") / "seeded.db")


@pytest.fixture
def fresh_db(tmp_path: Path) -> Seeded:
    """A seeded database of its own, for tests that write."""
    return seed_database(tmp_path / "fresh.db")


@pytest.fixture
def use_db(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """Point the dashboard at a database: ``use_db(seeded)``."""

    def _use(seeded: Seeded) -> Seeded:
        monkeypatch.setenv("GROUNDWATCH_DATABASE_URL", seeded.url)
        reset_settings_cache()
        return seeded

    yield _use
    reset_settings_cache()
