"""Fixtures of the dashboard AppTests: seeded databases and the database switch."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import bcrypt
import pytest
import streamlit as st
import yaml

from core.config import reset_settings_cache
from tests.app.seed import PASSWORD, Seeded, seed_database


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


@pytest.fixture
def users_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A users file (reviewer rita, analyst andy, admin ada; password PASSWORD): login on."""
    path = tmp_path / "users.yaml"
    h = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()
    path.write_text(
        yaml.safe_dump(
            {
                "users": {
                    "rita": {"role": "reviewer", "password": h},
                    "andy": {"role": "analyst", "password": h},
                    "ada": {"role": "admin", "password": h},
                }
            }
        ),
        encoding="utf-8",
    )
    monkeypatch.setenv("GROUNDWATCH_AUTH_FILE", str(path))
    reset_settings_cache()
    yield path
    reset_settings_cache()


@pytest.fixture
def lexical_checks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Uploads are checked and saved without loading a model (the embedding model and the
    learned verifier reported unavailable; the lexical tiers still flag statements). Request
    it before ``use_db``. The process-wide verifier of the upload page is rebuilt before and
    after, so no other test gets one without the learned tier."""
    from dashboard import data

    monkeypatch.setenv("GROUNDWATCH_EMBEDDING_MODEL", str(tmp_path / "no-model"))
    monkeypatch.setenv("GROUNDWATCH_LEARNED_VERIFIER", "false")
    reset_settings_cache()
    data.grounding_verifier.clear()
    yield
    data.grounding_verifier.clear()
