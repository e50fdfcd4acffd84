"""Faults: the PostgreSQL connection dies in the middle of an import; the LLM server dies in
the middle of a SelfCheck run.

- The import's database session is terminated with ``pg_terminate_backend`` from another
  connection while its transaction is writing: the batch rolls back entirely, and a re-run
  stores every record once (no duplicates). The shared server itself is never stopped.
- A local LLM server of the test's own is killed after a few sampling calls: the records whose
  samples could not be drawn are stored with SelfCheck ``unavailable`` (with the reason), the
  others as usual, and every record lands.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy import event, select
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import DBAPIError
from sqlmodel import col
from typer.testing import CliRunner

from core.backends.llm import ChatResponse, LLMClient
from core.backends.local_llm import LocalLLMServer
from core.cli import app
from core.config import load_settings, reset_settings_cache
from core.pipeline import QualityPipeline
from core.records import ConversationRecord, parse_record
from core.storage import models as m
from core.storage import repo
from core.storage.db import read_session

runner = CliRunner()
N_RECORDS = 120
# The batch's conversations are written first (one multi-row insert), then the rollup: the
# session is terminated when the rollup upsert starts, with the conversations already sent.
KILL_ON = "INSERT INTO QUALITY_DAILY "


def records(n: int) -> list[ConversationRecord]:
    return [
        parse_record(
            {
                "id": f"fault-{i}",
                "patient_id": f"p-{i % 4}",
                "timestamp": f"2026-02-{(i % 28) + 1:02d}T10:{i % 60:02d}:00Z",
                "query": "What does the patient take?",
                "answer": "The patient takes metformin 500 mg twice daily.",
                "sources": [{"id": "s-1", "text": "Metformin 500 mg twice daily.", "type": "note"}],
                "model": "m",
            },
            max_text_chars=10_000,
        )
        for i in range(n)
    ]


def quick_settings(url: str, **over: Any) -> Any:
    return load_settings(
        database_url=url,
        enable_grounding_verification=False,
        enable_epistemic_verification=False,
        **over,
    )


def libpq_url(engine: Engine) -> str:
    return (
        make_url(str(engine.url.render_as_string(hide_password=False)))
        .set(drivername="postgresql")
        .render_as_string(hide_password=False)
    )


class SessionKiller:
    """Terminates the backend that sends the ``at``-th statement starting with ``prefix``."""

    def __init__(self, engine: Engine, *, at: int = 1, prefix: str = KILL_ON) -> None:
        self.engine = engine
        self.at = at
        self.prefix = prefix
        self.seen = 0
        self.killed_pid: int | None = None
        self.admin_url = libpq_url(engine)

    def __enter__(self) -> SessionKiller:
        event.listen(self.engine, "before_cursor_execute", self._before)
        return self

    def __exit__(self, *exc: object) -> None:
        event.remove(self.engine, "before_cursor_execute", self._before)

    def _before(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if not statement.lstrip().upper().startswith(self.prefix):
            return
        self.seen += 1
        if self.seen != self.at or self.killed_pid is not None:
            return
        pid = conn.connection.dbapi_connection.info.backend_pid
        with psycopg.connect(self.admin_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        self.killed_pid = pid


def conversations(engine: Engine) -> int:
    with read_session(engine) as s:
        return repo.count_conversations(session=s)


@pytest.mark.postgres
@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_import_rolls_back_when_the_connection_dies(engine: Engine) -> None:
    url = str(engine.url.render_as_string(hide_password=False))
    batch = records(N_RECORDS)
    pipeline = QualityPipeline(
        settings=quick_settings(url), engine=engine, embedder=None, nli=None, llm=None
    )
    with SessionKiller(engine) as killer, pytest.raises(DBAPIError):
        pipeline.process_many(batch)
    assert killer.killed_pid is not None
    assert conversations(engine) == 0, "a broken batch must not land partly"
    with read_session(engine) as s:
        assert repo.kpis(session=s).conversations == 0  # the rollup rolled back too

    reports = pipeline.process_many(batch)
    assert {r.store_status for r in reports} == {"imported"}
    assert conversations(engine) == N_RECORDS
    again = pipeline.process_many(batch)
    assert {r.store_status for r in again} == {"unchanged"}
    assert conversations(engine) == N_RECORDS
    with read_session(engine) as s:
        assert repo.kpis(session=s).conversations == N_RECORDS


@pytest.mark.postgres
@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_cli_import_reports_a_lost_connection_cleanly(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = str(engine.url.render_as_string(hide_password=False))
    monkeypatch.setenv("GROUNDWATCH_DATABASE_URL", url)
    monkeypatch.setenv("GROUNDWATCH_ENABLE_GROUNDING_VERIFICATION", "false")
    monkeypatch.setenv("GROUNDWATCH_ENABLE_EPISTEMIC_VERIFICATION", "false")
    reset_settings_cache()
    path = tmp_path / "records.jsonl"
    path.write_text(
        "\n".join(json.dumps(r.model_dump(mode="json")) for r in records(N_RECORDS)) + "\n",
        encoding="utf-8",
    )
    with SessionKiller(engine) as killer:
        result = runner.invoke(app, ["import", str(path), "--json"])
    assert killer.killed_pid is not None
    assert "Traceback" not in result.stdout + result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert result.exit_code == 1
    assert json.loads(result.stdout)["error"] == "database"
    assert conversations(engine) == 0
    result = runner.invoke(app, ["import", str(path), "--json"])
    assert result.exit_code == 0, result.stdout
    assert json.loads(result.stdout)["imported"] == N_RECORDS
    assert conversations(engine) == N_RECORDS


# --------------------------------------------------------------------------- LLM server


class KillingClient(LLMClient):
    """A real client of a real server that kills the server after ``kill_after`` replies.

    Replies are kept short (``max_tokens``) so that the run stays bounded in time.
    """

    def __init__(self, server: LocalLLMServer, *, kill_after: int) -> None:
        super().__init__(server.base_url, model="local", timeout_s=60.0, max_retries=1)
        self.server = server
        self.kill_after = kill_after
        self.replies = 0

    def chat(
        self,
        messages: Sequence[dict[str, str]],
        *,
        temperature: float = 0.0,
        max_tokens: int = 256,
        seed: int | None = None,
        stop: Sequence[str] | None = None,
        use_cache: bool = True,
    ) -> ChatResponse:
        response = super().chat(
            messages,
            temperature=temperature,
            max_tokens=24,
            seed=seed,
            stop=stop,
            use_cache=use_cache,
        )
        self.replies += 1
        if self.replies == self.kill_after:
            self.server.kill()
        return response


@pytest.fixture
def own_llm_server() -> Iterator[LocalLLMServer]:
    server = LocalLLMServer(startup_timeout_s=180.0, n_ctx=1024)
    server.start()
    try:
        yield server
    finally:
        server.close()


@pytest.mark.llm
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_selfcheck_stored_unavailable_when_llm_dies(
    sqlite_engine: Engine, own_llm_server: LocalLLMServer
) -> None:
    url = str(sqlite_engine.url)
    settings = quick_settings(
        url,
        enable_hallucination_detection=True,
        hallucination_detection_samples=2,
        enable_consistency_checking=False,
    )
    client = KillingClient(own_llm_server, kill_after=3)
    pipeline = QualityPipeline(
        settings=settings, engine=sqlite_engine, embedder=None, nli=None, llm=client
    )
    batch = records(4)
    reports = pipeline.process_many(batch)
    assert not own_llm_server.running()
    statuses = [r.checks["selfcheck"].status for r in reports]
    assert statuses == ["ok", "unavailable", "unavailable", "unavailable"]
    assert all("unavailable" in (r.checks["selfcheck"].reason or "") for r in reports[1:])
    for r in reports:
        assert r.checks["confidence"].status == "ok"  # the rest ran as usual
    assert conversations(sqlite_engine) == 4
    with read_session(sqlite_engine) as s:
        rows = s.execute(select(m.SelfCheckResult).order_by(col(m.SelfCheckResult.id))).scalars()
        stored = {row.conversation_id: row for row in rows}
        for r in reports:
            row = stored[r.conversation_id]
            assert row.status == r.checks["selfcheck"].status
        first = stored[reports[0].conversation_id]
        assert first.sample_count == 2
        assert first.risk_score is not None
        for r in reports[1:]:
            assert stored[r.conversation_id].reason
            d = repo.get_conversation(session=s, conversation_id=r.conversation_id)
            assert d is not None
            assert d.conversation.check_status["selfcheck"]["status"] == "unavailable"
