"""Patient text never reaches a log or an error message.

Sentinel "patient text" goes through the CLI (good and bad inputs), the pipeline (every check
enabled, the real embedding model) and the dashboard (AppTest: report, review and upload
pages). Every log record of every logger is captured at DEBUG; none may contain a sentinel,
and neither may any error message (stderr, JSON ``error``/``message`` objects, ``st.error``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

from core.cli import app
from core.config import load_settings, reset_settings_cache
from core.pipeline import QualityPipeline
from core.records import parse_record
from core.storage import repo
from core.storage.db import get_engine, read_session, upgrade_to_head

runner = CliRunner()
NAME = "Zorblatt Quixley"
TOKEN = "QXZ-SENTINEL"
SENTINELS = (NAME, TOKEN, "Quixley", "zorblatt")
APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "streamlit_app.py")
SOURCE = (
    f"Visit note for {NAME} ({TOKEN}-mrn). Medications: metformin 500 mg twice daily; "
    "lisinopril 10 mg once daily. Denies chest pain."
)


def record(i: int, **over: object) -> dict[str, object]:
    base: dict[str, object] = {
        "id": f"priv-{i}",
        "patient_id": "p-priv",
        "timestamp": f"2026-03-{i + 1:02d}T09:00:00Z",
        "query": f"What does {NAME} take? {TOKEN}",
        "answer": (
            f"{NAME} takes metformin 1000 mg twice daily. {NAME} also takes warfarin. "
            f"{TOKEN} has no allergies."
        ),
        "sources": [{"id": "s-1", "text": SOURCE, "type": "transcript"}],
        "samples": [f"{NAME} takes metformin 500 mg.", f"{TOKEN} takes aspirin daily."],
        "evidence": {"PHQ8_Sleep": [f"{NAME} sleeps badly", "metformin 500 mg"]},
        "model": "m",
    }
    base.update(over)
    return base


class Everything(logging.Handler):
    """Captures every record of every logger, formatted with its arguments."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            text += " " + repr(record.exc_info[1])
        self.lines.append(f"{record.name}: {text}")


@pytest.fixture
def logs() -> Iterator[Everything]:
    handler = Everything()
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    # loggers that do not propagate get the handler directly
    extra = [
        lg
        for lg in logging.Logger.manager.loggerDict.values()
        if isinstance(lg, logging.Logger) and not lg.propagate
    ]
    for lg in extra:
        lg.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
        for lg in extra:
            lg.removeHandler(handler)


def assert_clean(where: str, *texts: str) -> None:
    blob = "\n".join(texts).lower()
    for s in SENTINELS:
        assert s.lower() not in blob, f"patient text in {where}"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite:///{tmp_path / 'gw.db'}"
    monkeypatch.setenv("GROUNDWATCH_DATABASE_URL", url)
    monkeypatch.setenv("GROUNDWATCH_LOG_LEVEL", "DEBUG")
    reset_settings_cache()
    upgrade_to_head(url)
    return url


def cli(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    exc = result.exception
    assert exc is None or isinstance(exc, SystemExit), repr(exc)
    return result.exit_code, result.stdout, result.stderr


def error_parts(stdout: str) -> list[str]:
    out = []
    for line in stdout.splitlines():
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and "error" in obj:
            out.append(json.dumps({k: v for k, v in obj.items() if k != "error"} | obj))
    return out


@pytest.mark.model
@pytest.mark.slow
def test_cli_logs_and_errors_hold_no_patient_text(
    env: str, tmp_path: Path, logs: Everything, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text("\n".join(json.dumps(record(i)) for i in range(3)) + "\n", encoding="utf-8")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps(record(9, answer=42))
        + "\n"
        + json.dumps({"id": NAME, "patient_id": TOKEN, "answer": NAME})
        + "\n"
        + '{"id": "x", "answer": "'
        + NAME
        + '"\n',
        encoding="utf-8",
    )
    transcript = tmp_path / "t.txt"
    transcript.write_text(SOURCE, encoding="utf-8")
    evidence = tmp_path / "e.json"
    evidence.write_text(
        json.dumps({"PHQ8_Sleep": [f"{NAME} never said this", "metformin"]}), encoding="utf-8"
    )
    bad_evidence = tmp_path / "bad_e.json"
    bad_evidence.write_text(json.dumps({"PHQ8_Sleep": NAME, TOKEN: [NAME]}), encoding="utf-8")
    answer = tmp_path / "a.txt"
    answer.write_text(str(record(0)["answer"]), encoding="utf-8")
    samples = tmp_path / "s.json"
    samples.write_text(json.dumps(record(0)["samples"]), encoding="utf-8")
    bad_samples = tmp_path / "bad_s.json"
    bad_samples.write_text(json.dumps([NAME, 5]), encoding="utf-8")

    outputs: list[tuple[int, str, str]] = [
        cli("import", str(good), "--json"),
        cli("import", str(bad), "--json"),
        cli("import", str(bad)),
        cli("evidence", str(transcript), str(evidence), "--keys", "any", "--json"),
        cli("evidence", str(transcript), str(bad_evidence), "--json"),
        cli("evidence", str(transcript), str(bad_evidence)),
        cli("ground", str(answer), "--source", str(transcript), "--json"),
        cli("selfcheck", str(answer), "--samples", str(samples), "--json"),
        cli("selfcheck", str(answer), "--samples", str(bad_samples), "--json"),
        cli("verify", str(answer), "--source", str(transcript), "--json"),
        cli("export", "--patient", "p-priv", "--format", "csv"),
        cli("purge", "--older-than", "1", "--json"),
        # an answer pasted where its file belongs: the error names its length, not its text
        cli("ground", str(record(0)["answer"]), "--source", str(transcript), "--json"),
        cli("ground", f"{NAME} takes warfarin", "--source", str(transcript)),
        cli("selfcheck", f"{TOKEN}\n{NAME}", "--samples", str(samples)),
    ]
    for code, stdout, stderr in outputs[-3:]:
        assert code == 1
        assert "characters of text" in stdout + stderr
        assert "not a path" in stdout + stderr
    assert outputs[0][0] == 0
    assert json.loads(outputs[0][1])["imported"] == 3
    assert outputs[1][0] == 2
    assert outputs[4][0] == 2
    for code, stdout, stderr in outputs:
        assert_clean("stderr", stderr)
        assert_clean("an error object", *error_parts(stdout))
        if code != 0:
            assert_clean("the output of a failed command", stdout)
    assert logs.lines, "expected the commands to log something"
    assert_clean("a log record", *logs.lines)


@pytest.mark.model
@pytest.mark.slow
def test_pipeline_and_dashboard_hold_no_patient_text(
    env: str, logs: Everything, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = load_settings(database_url=env, enable_hallucination_detection=True)
    engine = get_engine(env)
    pipeline = QualityPipeline(settings=settings, engine=engine, llm=None)
    recs = [parse_record(record(i), max_text_chars=100_000) for i in range(3)]
    reports = pipeline.process_many(recs)
    assert all(r.checks["grounding"].status == "ok" for r in reports)
    assert any(r.is_flagged for r in reports)
    for r in reports:
        assert_clean("a check reason", *(str(c) for c in r.checks.values()))
        assert_clean("a warning", *r.warnings)
    assert_clean("a pipeline log record", *logs.lines)
    with read_session(engine) as s:
        rows, total = repo.flagged_statements(session=s)
    assert total > 0

    st.cache_data.clear()
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["report_conversation"] = reports[-1].conversation_id
    at.run()
    for page in ("report", "review", "upload"):
        at.switch_page(f"app_pages/{page}.py").run()
        assert not at.exception, [e.value for e in at.exception]
        assert_clean(f"an error on the {page} page", *(e.value for e in at.error))
    at.file_uploader(key="upload_transcript").set_value(
        ("visit.txt", f"{NAME} \xff".encode("latin-1"), "text/plain")
    ).run()
    at.file_uploader(key="upload_evidence").set_value(
        ("quotes.json", json.dumps({"PHQ8_Sleep": NAME}).encode(), "application/json")
    ).run()
    assert at.error, "bad uploads must be refused with an error"
    assert_clean("an upload error", *(e.value for e in at.error))
    assert_clean("a dashboard log record", *logs.lines)
    st.cache_data.clear()
