"""`groundwatch init-db / import / export` through Typer's runner and as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.cli import app
from core.config import reset_settings_cache
from core.storage import repo
from core.storage.db import get_engine, read_session

runner = CliRunner()


def record(i: int, **over: object) -> dict[str, object]:
    base: dict[str, object] = {
        "id": f"ext-{i}",
        "patient_id": f"p-{i % 3}",
        "timestamp": f"2026-01-{(i % 28) + 1:02d}T09:00:00Z",
        "query": "What medications is the patient on?",
        "answer": "The patient takes metformin 500 mg twice daily.",
        "sources": [{"id": "s-1", "text": "Medications: metformin 500 mg b.i.d.", "type": "note"}],
        "model": "model-a",
    }
    base.update(over)
    return base


def write_jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def count(url: str) -> int:
    with read_session(get_engine(url)) as s:
        return repo.count_conversations(session=s)


def test_init_db(use_db: str) -> None:
    code, out, _ = run("init-db", "--json")
    assert code == 0
    assert json.loads(out)["status"] == "ok"


def test_import_is_idempotent_and_updates_edits(use_db: str, tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "r.jsonl", [record(i) for i in range(5)])
    code, out, _ = run("import", str(f), "--json")
    assert code == 0, out
    assert json.loads(out) == {"imported": 5, "updated": 0, "unchanged": 0, "rejected": []}
    code, out, _ = run("import", str(f), "--json")
    assert json.loads(out)["unchanged"] == 5
    edited = [record(i) for i in range(5)]
    edited[2]["answer"] = "The patient takes warfarin 5 mg daily."
    write_jsonl(f, edited)
    code, out, _ = run("import", str(f), "--json")
    assert json.loads(out) == {"imported": 0, "updated": 1, "unchanged": 4, "rejected": []}
    assert count(use_db) == 5
    with read_session(get_engine(use_db)) as s:
        d = repo.get_conversation(session=s, conversation_id="ext-2")
    assert d is not None
    assert d.conversation.answer is not None
    assert "warfarin" in d.conversation.answer
    assert d.conversation.grounding_score is not None
    assert any(st.status != "grounded" for st in d.statements)


BAD_LINES = [
    (b"{not json", "malformed JSON"),
    (json.dumps({k: v for k, v in record(1).items() if k != "answer"}).encode(), "field answer"),
    (json.dumps(record(1, patient_id=42)).encode(), "field patient_id"),
    (json.dumps(record(1, sources="s-1")).encode(), "field sources"),
    (json.dumps(record(1, sources=[{"id": "a", "text": 3}])).encode(), "field sources[0].text"),
    (json.dumps(record(1, timestamp="yesterday")).encode(), "field timestamp"),
    (json.dumps([1, 2]).encode(), "expected a JSON object"),
    (b'{"id": "x\xff"}', "invalid UTF-8"),
    (json.dumps(record(1, evidence={"PHQ8_Sleep": "not a list"})).encode(), "evidence"),
]


@pytest.mark.parametrize(("line", "reason"), BAD_LINES)
def test_bad_line_stores_nothing_and_names_line(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, line: bytes, reason: str
) -> None:
    monkeypatch.setenv("GROUNDWATCH_DATABASE_URL", sqlite_url)
    reset_settings_cache()
    good = json.dumps(record(0)).encode()
    f = tmp_path / "r.jsonl"
    f.write_bytes(good + b"\n" + line + b"\n")
    code, out, _ = run("import", str(f), "--json")
    assert code == 2
    payload = json.loads(out)
    assert payload["imported"] == 0
    assert payload["rejected"][0]["line"] == 2
    assert reason in payload["rejected"][0]["error"]
    run("init-db")
    assert count(sqlite_url) == 0


def test_skip_invalid_stores_the_valid_lines(use_db: str, tmp_path: Path) -> None:
    f = tmp_path / "r.jsonl"
    f.write_bytes(
        json.dumps(record(0)).encode() + b"\n{oops\n" + json.dumps(record(1)).encode() + b"\n"
    )
    code, out, _ = run("import", str(f), "--skip-invalid", "--json")
    assert code == 0
    payload = json.loads(out)
    assert payload["imported"] == 2
    assert payload["rejected"] == [{"line": 2, "error": payload["rejected"][0]["error"]}]
    assert count(use_db) == 2


def test_duplicate_id_in_one_file(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("GROUNDWATCH_DATABASE_URL", sqlite_url)
    f = write_jsonl(tmp_path / "r.jsonl", [record(0), record(0)])
    code, out, _ = run("import", str(f), "--json")
    assert code == 2
    assert "duplicate of the record on line 1" in json.loads(out)["rejected"][0]["error"]


def test_empty_missing_and_oversized_files(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("GROUNDWATCH_DATABASE_URL", sqlite_url)
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"\n\n")
    code, out, _ = run("import", str(empty), "--json")
    assert code == 2
    assert json.loads(out)["error"] == "empty"
    code, out, _ = run("import", str(tmp_path / "missing.jsonl"), "--json")
    assert code == 1
    assert "not found" in json.loads(out)["message"]
    monkeypatch.setenv("GROUNDWATCH_MAX_INPUT_BYTES", "100")
    reset_settings_cache()
    big = write_jsonl(tmp_path / "big.jsonl", [record(i) for i in range(3)])
    code, out, _ = run("import", str(big), "--json")
    assert code == 2
    assert json.loads(out)["error"] == "too_large"


def test_export_json_and_csv(use_db: str, tmp_path: Path) -> None:
    f = write_jsonl(
        tmp_path / "r.jsonl",
        [record(0), record(3, answer="The patient takes warfarin 5 mg.")],
    )
    assert run("import", str(f))[0] == 0
    code, out, _ = run("export", "--patient", "p-0")
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["id"] for r in rows] == ["ext-0", "ext-3"]
    assert rows[1]["statement_checks"][0]["status"] != "grounded"
    # a flagged statement about a high-alert drug, exported with its kind and severity
    assert rows[1]["statement_checks"][0]["kind"] is not None
    assert rows[1]["statement_checks"][0]["severity"] in ("critical", "high")
    code, out, _ = run("export", "--format", "csv", "--since", "2026-01-03")
    lines = out.strip().splitlines()
    assert lines[0].startswith("id,patient_id,timestamp")
    assert len(lines) == 2
    assert lines[1].startswith("ext-3,")
    code, out, err = run("export", "--patient", "nobody-in-particular", "--json")
    assert code == 1
    assert json.loads(out)["error"] == "unknown_patient"
    assert "nobody-in-particular" not in out + err  # identifiers are not echoed, only hashed


def test_subprocess_import_and_bad_database_url(sqlite_url: str, tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "r.jsonl", [record(0)])
    env = {**os.environ, "GROUNDWATCH_DATABASE_URL": sqlite_url}
    env["GROUNDWATCH_ENABLE_GROUNDING_VERIFICATION"] = "false"
    done = subprocess.run(
        [sys.executable, "-m", "core.cli", "import", str(f), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["imported"] == 1
    env["GROUNDWATCH_DATABASE_URL"] = "postgresql://nobody@127.0.0.1:1/none"
    bad = subprocess.run(
        [sys.executable, "-m", "core.cli", "init-db"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 1
    assert "Traceback" not in bad.stderr
    assert bad.stderr.strip().count("\n") == 0
    assert "cannot connect" in bad.stderr
    env["GROUNDWATCH_DATABASE_URL"] = "oracle://x"
    bad = subprocess.run(
        [sys.executable, "-m", "core.cli", "init-db"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 1
    assert "GROUNDWATCH_DATABASE_URL" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_csv_export_neutralises_formulas(use_db: str, tmp_path: Path) -> None:
    """Cells that a spreadsheet would run as a formula get a leading apostrophe."""
    import csv
    import io

    f = write_jsonl(
        tmp_path / "r.jsonl",
        [record(0, id='=HYPERLINK("http://x")', model="@SUM(A1)", patient_id="+p-9")],
    )
    assert run("import", str(f))[0] == 0
    code, out, _ = run("export", "--format", "csv")
    assert code == 0
    (row,) = list(csv.DictReader(io.StringIO(out)))
    assert row["id"] == '\'=HYPERLINK("http://x")'
    assert row["patient_id"] == "'+p-9"
    assert row["model"] == "'@SUM(A1)"


def test_serve_passes_the_project_streamlit_settings_from_any_directory(tmp_path: Path) -> None:
    """Streamlit reads .streamlit/config.toml from the working directory only: serve passes
    the project's settings as options, and never lets tracebacks or the toolbar through."""
    from core.cli.records import _streamlit_options

    root = Path(__file__).resolve().parents[2]
    options = _streamlit_options(root / ".streamlit" / "config.toml")
    pairs = dict(zip(options[::2], options[1::2], strict=True))
    assert pairs["--client.showErrorDetails"] == "none"
    assert pairs["--client.toolbarMode"] == "minimal"
    assert pairs["--theme.primaryColor"] == "#2e6f9e"
    bare = dict(zip(*[iter(_streamlit_options(tmp_path / "missing.toml"))] * 2, strict=True))
    assert bare["--client.showErrorDetails"] == "none"
    assert bare["--server.headless"] == "true"


def test_log_level_setting_is_applied_by_the_command_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import logging

    import core.cli as cli

    seen: list[int] = []
    monkeypatch.setattr(cli, "app", lambda **_: seen.append(logging.getLogger().level))
    monkeypatch.setenv("GROUNDWATCH_LOG_LEVEL", "DEBUG")
    reset_settings_cache()
    before = logging.getLogger().level
    try:
        cli.main()
    finally:
        logging.getLogger().setLevel(before)
    assert seen == [logging.DEBUG]
    monkeypatch.setenv("GROUNDWATCH_LOG_LEVEL", "LOUD")
    reset_settings_cache()
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    assert exit_.value.code == 1  # a bad value is named and refused, not ignored


@pytest.mark.parametrize("as_json", [True, False])
def test_usage_errors_exit_1_as_documented_and_honour_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    import core.cli as cli

    argv = ["groundwatch", "purge", "--older-than", "0", *(["--json"] if as_json else [])]
    monkeypatch.setattr("sys.argv", argv)
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    assert exit_.value.code == 1
    out, err = capsys.readouterr()
    if as_json:
        body = json.loads(out)
        assert body["error"] == "usage"
        assert "--older-than" in body["message"]
    else:
        assert "--older-than" in err
