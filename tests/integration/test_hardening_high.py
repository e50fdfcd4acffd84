"""The high-severity hardening items, on SQLite and PostgreSQL alike.

- H1: a NUL or control character anywhere in a record is refused at the input boundary with
  the line and the field (never a database error carrying the record into a log); an
  unexpected exception reaches the user and the log as its type and an incident code only.
- H2: timestamps outside 1900-2100 (also with an offset) are refused at the input boundary.
- H3: storing an uploaded answer takes the right role; replacing a stored record takes an
  admin and is audited as a replacement.
(H4, purge of every derived table and cache, is in ``test_purge.py``.)
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlmodel import col
from typer.testing import CliRunner

from core.auth import LOCAL_ADMIN, User
from core.cli import app
from core.config import reset_settings_cache
from core.storage import models as m
from core.storage import repo
from core.storage.db import get_engine, read_session, upgrade_to_head, write_session

runner = CliRunner()
SENTINEL = "QZV-SENTINEL-HIGH"
TRANSCRIPT = f"Doctor: {SENTINEL} any medications?\nPatient: Metformin 500 mg twice a day."
ANSWER = "The patient takes metformin 500 mg twice a day."


def record(i: int, **changes: object) -> dict[str, object]:
    return {
        "id": f"rec-{i}",
        "patient_id": "p-1",
        "timestamp": f"2026-01-{i + 1:02d}T09:00:00Z",
        "query": f"{SENTINEL} medications?",
        "answer": ANSWER,
        "sources": [{"id": "s-1", "text": TRANSCRIPT, "type": "transcript"}],
        "model": "m",
        **changes,
    }


@pytest.fixture
def env(db_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("GROUNDWATCH_DATABASE_URL", db_url)
    monkeypatch.setenv("GROUNDWATCH_ENABLE_GROUNDING_VERIFICATION", "false")
    reset_settings_cache()
    upgrade_to_head(db_url)
    return db_url


def import_lines(tmp_path: Path, rows: list[object]) -> tuple[int, dict[str, object], str]:
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    result = runner.invoke(app, ["import", str(path), "--json"])
    output = result.stdout + result.stderr
    lines = [ln for ln in result.stdout.splitlines() if ln.strip()]
    return result.exit_code, json.loads(lines[0]) if lines else {}, output


def stored(url: str) -> int:
    with read_session(get_engine(url)) as s:
        return repo.count_conversations(session=s)


# --------------------------------------------------------------------------- H1


@pytest.mark.parametrize(
    "changes",
    [
        {"answer": f"{SENTINEL} takes \u0000 metformin"},
        {"sources": [{"id": "s-1", "text": f"{SENTINEL}\u0000", "type": "transcript"}]},
        {"query": f"{SENTINEL} \u001b[31m red"},
        {"evidence": {"meds": [f"{SENTINEL} \u0000 quote"]}},
    ],
    ids=["answer_nul", "source_nul", "query_escape", "evidence_nul"],
)
def test_control_characters_are_refused_on_both_engines_naming_line_and_field(
    env: str, tmp_path: Path, changes: dict[str, object], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    code, body, output = import_lines(tmp_path, [record(0), record(1, **changes)])
    assert code == 2, output[:500]
    assert body["error"] == "invalid_records"
    ((rejected),) = body["rejected"]  # type: ignore[misc]
    assert rejected["line"] == 2
    assert rejected["error"].startswith("field ")
    assert "control character" in rejected["error"]
    assert SENTINEL not in output
    assert SENTINEL not in caplog.text
    assert stored(env) == 0  # nothing of the file lands, and nothing is cached either
    with read_session(get_engine(env)) as s:
        assert s.execute(select(m.EmbeddingCache)).first() is None


def test_an_upload_with_a_nul_is_refused_before_the_database(
    env: str, caplog: pytest.LogCaptureFixture
) -> None:
    from dashboard import data

    caplog.set_level(logging.DEBUG)
    with pytest.raises(ValueError, match=r"field sources\[0\]\.text: contains a NUL"):
        data.save_upload(
            record_id="up-1",
            patient_id="p-1",
            model="m",
            query="meds?",
            answer=ANSWER,
            transcript=TRANSCRIPT + "\u0000",
            evidence=None,
            actor="t",
            user=LOCAL_ADMIN,
        )
    assert stored(env) == 0
    assert SENTINEL not in caplog.text


def test_the_command_line_reports_an_unexpected_error_without_its_message(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    import core.cli as cli

    def boom(**_: object) -> None:
        raise RuntimeError(f"INSERT ... [parameters: ('{SENTINEL} transcript',)]")

    monkeypatch.setattr(cli, "app", boom)
    caplog.set_level(logging.DEBUG)
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    assert exit_.value.code == 1
    err = capsys.readouterr().err
    assert "unexpected RuntimeError (incident " in err
    assert SENTINEL not in err
    assert SENTINEL not in caplog.text
    assert "unhandled RuntimeError in the command line" in caplog.text


# --------------------------------------------------------------------------- H2


@pytest.mark.parametrize(
    "timestamp",
    [
        "9999-12-31T23:59:59Z",
        "0001-01-01T00:00:00Z",
        "9999-12-31T23:59:59-05:00",
        "0001-01-01T00:00:00+05:00",
        "1899-12-31T23:59:59Z",
        "2100-01-01T00:00:00Z",
    ],
)
def test_timestamps_out_of_range_are_refused_on_both_engines(
    env: str, tmp_path: Path, timestamp: str
) -> None:
    code, body, output = import_lines(tmp_path, [record(0), record(1, timestamp=timestamp)])
    assert code == 2, output[:500]
    ((rejected),) = body["rejected"]  # type: ignore[misc]
    assert rejected["line"] == 2
    assert rejected["error"].startswith("field timestamp: ")
    assert "between 1900 and 2100" in rejected["error"]
    assert "Traceback" not in output
    assert stored(env) == 0


def test_timestamps_at_the_edges_of_the_range_are_stored(env: str, tmp_path: Path) -> None:
    rows = [record(0, timestamp="1900-01-01T00:00:00Z"), record(1, timestamp="2099-12-31T23:59Z")]
    code, _, output = import_lines(tmp_path, rows)
    assert code == 0, output[:500]
    assert stored(env) == 2


# --------------------------------------------------------------------------- H3

REVIEWER = User(username="rita", role="reviewer", source="password")
ANALYST = User(username="andy", role="analyst", source="password")
ADMIN = User(username="ada", role="admin", source="password")


def save(user: User | None, *, answer: str = ANSWER, record_id: str = "up-1") -> dict[str, object]:
    from dashboard import data

    return data.save_upload(
        record_id=record_id,
        patient_id="p-1",
        model="m",
        query="meds?",
        answer=answer,
        transcript=TRANSCRIPT,
        evidence=None,
        actor=user.username if user else "",
        user=user,
    )


def stored_answer(url: str, record_id: str) -> str | None:
    with read_session(get_engine(url)) as s:
        conv = s.execute(
            select(m.Conversation).where(col(m.Conversation.external_id) == record_id)
        ).scalar_one()
        return conv.answer


def audit_actions(url: str) -> list[tuple[str, str]]:
    with read_session(get_engine(url)) as s:
        return [(e.actor, e.action) for e in repo.list_audit_events(session=s)]


def test_an_analyst_cannot_store_an_upload(env: str) -> None:
    with pytest.raises(PermissionError, match=r"analyst"):
        save(ANALYST)
    with pytest.raises(PermissionError, match=r"anonymous"):
        save(None)
    assert stored(env) == 0


def test_a_reviewer_stores_new_records_but_cannot_overwrite_one(env: str) -> None:
    first = save(REVIEWER)
    assert first["store_status"] == "imported"
    with pytest.raises(PermissionError, match=r"only an admin may replace"):
        save(REVIEWER, answer="The patient takes warfarin 5 mg daily.")
    assert stored_answer(env, "up-1") == ANSWER  # the stored record is untouched
    assert stored(env) == 1


def test_an_admin_replaces_a_record_and_the_replacement_is_audited(env: str) -> None:
    save(REVIEWER)
    replaced = save(ADMIN, answer="The patient takes warfarin 5 mg daily.")
    assert replaced["store_status"] == "updated"
    assert stored_answer(env, "up-1") == "The patient takes warfarin 5 mg daily."
    actions = audit_actions(env)
    assert ("rita", "upload") in actions
    assert ("ada", "replace") in actions
    assert stored(env) == 1


def test_a_verdict_takes_the_give_verdict_permission(env: str) -> None:
    from dashboard import data

    saved = save(REVIEWER)
    with write_session(get_engine(env)) as s:
        sc = m.StatementCheck(
            conversation_id=str(saved["conversation_id"]),
            statement=ANSWER,
            statement_index=0,
            is_grounded=False,
            status="unsupported",
            verification_method="unsupported",
        )
        s.add(sc)
        s.flush()
        sc_id = int(sc.id or 0)
    with pytest.raises(PermissionError, match=r"analyst"):
        data.save_verdict(
            user=ANALYST,
            statement_check_id=sc_id,
            reviewer="andy",
            verdict="confirmed",
            note="",
        )
    assert data.save_verdict(
        user=REVIEWER, statement_check_id=sc_id, reviewer="rita", verdict="confirmed", note=""
    )
