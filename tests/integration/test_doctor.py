"""``groundwatch doctor`` on SQLite and PostgreSQL, with and without an LLM server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from typer.testing import CliRunner

from core.cli import app
from core.config import reset_settings_cache
from core.storage.db import alembic_config, upgrade_to_head

pytestmark = pytest.mark.model
runner = CliRunner()


def doctor(monkeypatch: pytest.MonkeyPatch, **env: str) -> tuple[int, dict[str, object]]:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    reset_settings_cache()
    result = runner.invoke(app, ["doctor", "--json"])
    return result.exit_code, json.loads(result.stdout)


def by_part(body: dict[str, object]) -> dict[str, dict[str, object]]:
    return {f["part"]: f for f in body["findings"]}  # type: ignore[index,union-attr]


def test_a_migrated_database_and_the_shipped_models_are_healthy(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    upgrade_to_head(db_url)
    code, body = doctor(monkeypatch, GROUNDWATCH_DATABASE_URL=db_url)
    parts = by_part(body)
    assert code == 0
    assert body["healthy"] is True
    assert parts["database"]["state"] == "ok"
    head = ScriptDirectory.from_config(alembic_config(db_url)).get_current_head()
    assert f"revision {head} (newest)" in str(parts["database"]["detail"])
    assert parts["embedding model"]["state"] == "ok"
    assert parts["learned verifier"]["state"] == "ok"
    assert parts["NLI model"]["state"] == "unavailable"  # optional: not a failure
    assert parts["LLM server"]["state"] == "unavailable"
    assert parts["login"]["state"] == "ok"
    assert parts["retention"]["state"] == "ok"


def test_an_unmigrated_database_fails_with_what_to_do(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, body = doctor(monkeypatch, GROUNDWATCH_DATABASE_URL=db_url)
    database = by_part(body)["database"]
    assert code == 1
    assert database["state"] == "failed"
    assert "init-db" in str(database["fix"])


def test_a_missing_sqlite_file_is_reported_not_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "none.db"
    code, body = doctor(monkeypatch, GROUNDWATCH_DATABASE_URL=f"sqlite:///{path}")
    assert code == 1
    assert "does not exist yet" in str(by_part(body)["database"]["detail"])
    assert not path.exists()


def test_with_the_real_local_llm_and_with_a_dead_one(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch, local_llm: str
) -> None:
    upgrade_to_head(sqlite_url)
    code, body = doctor(
        monkeypatch, GROUNDWATCH_DATABASE_URL=sqlite_url, GROUNDWATCH_LLM_BASE_URL=local_llm
    )
    assert code == 0
    assert by_part(body)["LLM server"]["state"] == "ok"
    code, body = doctor(
        monkeypatch,
        GROUNDWATCH_LLM_BASE_URL="http://127.0.0.1:9/v1",
        GROUNDWATCH_LLM_MAX_RETRIES="0",
        GROUNDWATCH_LLM_TIMEOUT_S="2",
    )
    llm = by_part(body)["LLM server"]
    assert code == 1
    assert llm["state"] == "failed"
    assert llm["fix"]


def test_a_broken_users_file_fails_the_login_part(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    upgrade_to_head(sqlite_url)
    users = tmp_path / "users.yaml"
    users.write_text("users: [this is not a mapping", encoding="utf-8")
    code, body = doctor(
        monkeypatch, GROUNDWATCH_DATABASE_URL=sqlite_url, GROUNDWATCH_AUTH_FILE=str(users)
    )
    assert code == 1
    assert by_part(body)["login"]["state"] == "failed"


def test_human_output_lists_every_part(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    upgrade_to_head(sqlite_url)
    monkeypatch.setenv("GROUNDWATCH_DATABASE_URL", sqlite_url)
    reset_settings_cache()
    result = runner.invoke(app, ["doctor"])
    assert result.exit_code == 0
    for part in (
        "database",
        "embedding model",
        "learned verifier",
        "LLM server",
        "retention",
        "check sample rate",
    ):
        assert part in result.stdout
    assert "everything configured works" in result.stdout


def test_the_check_sample_rate_in_force_is_reported(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    upgrade_to_head(sqlite_url)
    code, body = doctor(
        monkeypatch, GROUNDWATCH_DATABASE_URL=sqlite_url, GROUNDWATCH_CHECK_SAMPLE_RATE="0.1"
    )
    part = by_part(body)["check sample rate"]
    assert part["state"] == "ok"
    assert "10% of records are checked" in str(part["detail"])
    assert code == 0
