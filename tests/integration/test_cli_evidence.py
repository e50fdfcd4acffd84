"""``groundwatch evidence``: the command-line contract, every bad input, one real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.cli import app
from core.config import reset_settings_cache

SECRET = "Margaret"
TRANSCRIPT = (
    "Doctor: How have you been sleeping?\n"
    "Patient: Honestly\u2026 I can\u2019t  sleep <sigh> at night, I wake at four.\n"
    f"Doctor: And your appetite?\nPatient: I barely eat since {SECRET} left.\n"
)


@pytest.fixture(autouse=True)
def _fresh_settings(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for var in list(os.environ):
        if var.startswith("GROUNDWATCH_"):
            monkeypatch.delenv(var, raising=False)
    reset_settings_cache()
    yield
    reset_settings_cache()


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    transcript = tmp_path / "t.txt"
    transcript.write_text(TRANSCRIPT, encoding="utf-8")
    evidence = tmp_path / "e.json"
    evidence.write_text(
        json.dumps(
            {
                "PHQ8_Sleep": ["I can't sleep at night", "I sleep twelve hours"],
                "PHQ8_Appetite": ["I barely eat"],
            }
        ),
        encoding="utf-8",
    )
    return {"t": transcript, "e": evidence, "dir": tmp_path}


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["evidence", *args])
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), repr(result.exception)
    return result.exit_code, result.stdout, result.stderr


def test_json_output_follows_the_contract(files: dict[str, Path]) -> None:
    code, out, _ = run(str(files["t"]), str(files["e"]), "--json")
    assert code == 0
    data = json.loads(out)
    assert set(data) >= {"validated", "rejected", "matches", "stats"}
    assert data["validated"]["PHQ8_Sleep"] == ["I can't sleep at night"]
    assert data["rejected"]["PHQ8_Sleep"] == ["I sleep twelve hours"]
    assert data["stats"] == {
        "extracted_count": 3,
        "validated_count": 2,
        "rejected_count": 1,
        "rejected_by_domain": {k: int(k == "PHQ8_Sleep") for k in data["validated"]},
    }
    first = data["matches"][0]
    assert set(first) >= {"key", "quote", "grounded", "method", "score", "start", "end"}
    assert TRANSCRIPT[first["start"] : first["end"]] == "I can\u2019t  sleep <sigh> at night"
    assert data["matches"][1]["grounded"] is False


def test_human_output_has_no_quote_text(files: dict[str, Path]) -> None:
    code, out, _ = run(str(files["t"]), str(files["e"]))
    assert code == 0
    assert "2/3 quote(s) grounded" in out
    assert "twelve" not in out


def test_fuzzy_mode_and_threshold(files: dict[str, Path], tmp_path: Path) -> None:
    ev = tmp_path / "f.json"
    ev.write_text(json.dumps({"PHQ8_Sleep": ["I cant sleep at nite"]}), encoding="utf-8")
    code, out, _ = run(str(files["t"]), str(ev), "--json")
    assert code == 0
    assert json.loads(out)["stats"]["validated_count"] == 0
    code, out, _ = run(str(files["t"]), str(ev), "--json", "--mode", "fuzzy", "--threshold", "0.85")
    match = json.loads(out)["matches"][0]
    assert match["grounded"]
    assert match["method"] == "fuzzy"
    assert "sleep" in TRANSCRIPT[match["start"] : match["end"]]


def test_keys_any_and_unknown_key_warning(files: dict[str, Path], tmp_path: Path) -> None:
    ev = tmp_path / "k.json"
    ev.write_text(json.dumps({"mood": ["I barely eat"]}), encoding="utf-8")
    _, out, _ = run(str(files["t"]), str(ev), "--json")
    data = json.loads(out)
    assert "mood" not in data["validated"]
    assert data["warnings"]
    _, out, _ = run(str(files["t"]), str(ev), "--json", "--keys", "any")
    assert json.loads(out)["validated"] == {"mood": ["I barely eat"]}


def test_json_transcript_as_turns(files: dict[str, Path], tmp_path: Path) -> None:
    turns = tmp_path / "turns.json"
    turns.write_text(
        json.dumps(
            [
                {"speaker": "Doctor", "text": "How is your sleep?"},
                {"speaker": "Patient", "text": "I wake at four every day."},
            ]
        ),
        encoding="utf-8",
    )
    ev = tmp_path / "w.json"
    ev.write_text(json.dumps({"PHQ8_Sleep": ["I wake at four"]}), encoding="utf-8")
    code, out, _ = run(str(turns), str(ev), "--json")
    match = json.loads(out)["matches"][0]
    assert code == 0
    assert match["grounded"]
    assert (match["turn"], match["turn_start"], match["turn_end"]) == (1, 0, 14)
    joined = "Doctor: How is your sleep?\nPatient: I wake at four every day."
    assert joined[match["start"] : match["end"]] == "I wake at four"
    text_obj = tmp_path / "text.json"
    text_obj.write_text(json.dumps({"text": "I wake at four."}), encoding="utf-8")
    code, out, _ = run(str(text_obj), str(ev), "--json")
    assert code == 0
    assert json.loads(out)["matches"][0]["start"] == 0


def test_schema_violation_exits_2_with_violations(files: dict[str, Path], tmp_path: Path) -> None:
    ev = tmp_path / "bad.json"
    ev.write_text(json.dumps({"PHQ8_Sleep": f"{SECRET} said so", "PHQ8_Tired": [1]}), "utf-8")
    code, out, err = run(str(files["t"]), str(ev), "--json")
    assert code == 2
    data = json.loads(out)
    assert data["error"] == "evidence_schema"
    assert set(data["violations"]) == {"PHQ8_Sleep", "PHQ8_Tired"}
    assert SECRET not in out + err
    code, out, err = run(str(files["t"]), str(ev))
    assert code == 2
    assert "PHQ8_Sleep" in err
    assert SECRET not in out + err


def test_fail_on_all_rejected_exits_3(files: dict[str, Path], tmp_path: Path) -> None:
    ev = tmp_path / "none.json"
    ev.write_text(json.dumps({"PHQ8_Depressed": ["I want to disappear"]}), encoding="utf-8")
    code, out, _ = run(str(files["t"]), str(ev), "--json")
    assert code == 0
    assert json.loads(out)["failure_event"]["category"] == "EVIDENCE_HALLUCINATION"
    code, out, _ = run(str(files["t"]), str(ev), "--json", "--fail-on-all-rejected")
    assert code == 3
    data = json.loads(out)
    assert data["error"] == "evidence_hallucination"
    assert data["stats"]["validated_count"] == 0
    code, _, err = run(str(files["t"]), str(ev), "--fail-on-all-rejected")
    assert code == 3
    assert "none of the 1" in err


def _bad(tmp_path: Path, name: str, content: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content)
    return path


@pytest.mark.parametrize(
    ("which", "name", "content", "code", "error"),
    [
        ("e", "e.json", b"{not json", 2, "invalid_json"),
        ("e", "e.json", b'{"PHQ8_Sleep": ["\xff\xfe"]}', 2, "invalid_utf8"),
        ("t", "t.txt", b"Patient: " + SECRET.encode() + b" \xc3\x28 left", 2, "invalid_utf8"),
        ("t", "t.txt", b"", 2, "empty"),
        ("t", "t.txt", b"   \n\t ", 2, "empty"),
        ("e", "e.json", b"", 2, "empty"),
        ("e", "e.json", b'["a list", "of quotes"]', 2, "evidence_schema"),
        ("t", "t.json", b'{"turns": "nope"}', 2, "invalid_transcript"),
        ("t", "t.json", b'[{"speaker": "P"}]', 2, "invalid_transcript"),
        ("t", "t.json", b"{broken", 2, "invalid_json"),
    ],
)
@pytest.mark.parametrize("as_json", [True, False])
def test_bad_input_gives_one_clear_line_and_the_right_code(
    files: dict[str, Path],
    tmp_path: Path,
    which: str,
    name: str,
    content: bytes,
    code: int,
    error: str,
    as_json: bool,
) -> None:
    bad_dir = tmp_path / "bad"
    bad_dir.mkdir()
    bad = _bad(bad_dir, name, content)
    args = [str(bad), str(files["e"])] if which == "t" else [str(files["t"]), str(bad)]
    got, out, err = run(*args, *(["--json"] if as_json else []))
    assert got == code
    assert "Traceback" not in out + err
    assert SECRET not in out + err
    if as_json:
        assert json.loads(out)["error"] == error
    else:
        assert err.startswith("error: ")
        assert out == ""


def test_missing_file_exits_1(files: dict[str, Path]) -> None:
    code, out, _ = run(str(files["dir"] / "nope.txt"), str(files["e"]), "--json")
    assert code == 1
    assert json.loads(out)["error"] == "io_error"
    code, _, err = run(str(files["t"]), str(files["dir"] / "nope.json"))
    assert code == 1
    assert "file not found" in err


def test_size_limits_come_from_settings(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GROUNDWATCH_MAX_TRANSCRIPT_CHARS", "50")
    reset_settings_cache()
    code, out, _ = run(str(files["t"]), str(files["e"]), "--json")
    assert code == 2
    assert json.loads(out)["error"] == "too_large"
    assert SECRET not in out
    monkeypatch.setenv("GROUNDWATCH_MAX_TRANSCRIPT_CHARS", "1000000")
    monkeypatch.setenv("GROUNDWATCH_MAX_INPUT_BYTES", "20")
    reset_settings_cache()
    code, out, _ = run(str(files["t"]), str(files["e"]), "--json")
    assert code == 2
    assert json.loads(out)["error"] == "too_large"


@pytest.mark.parametrize(
    "extra", [["--mode", "semantic"], ["--threshold", "0.2"], ["--keys", "phq9"]]
)
def test_bad_options_exit_1(files: dict[str, Path], extra: list[str]) -> None:
    code, out, _ = run(str(files["t"]), str(files["e"]), "--json", *extra)
    assert code == 1
    assert json.loads(out)["error"] == "usage"


def test_settings_choose_the_default_mode(
    files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GROUNDWATCH_EVIDENCE_QUOTE_VALIDATION_MODE", "fuzzy")
    reset_settings_cache()
    _, out, _ = run(str(files["t"]), str(files["e"]), "--json")
    assert json.loads(out)["mode"] == "fuzzy"


def test_real_process_python_m_core_cli(files: dict[str, Path], tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if not k.startswith("GROUNDWATCH_")}
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-m", "core.cli", "evidence", str(files["t"]), str(files["e"]), "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-500:]
    data = json.loads(proc.stdout)
    assert data["stats"]["validated_count"] == 2
    # the rejection is logged on stderr with hashes, never the quote
    assert "evidence_quote_rejected" in proc.stderr
    assert "twelve" not in proc.stderr
    assert SECRET not in proc.stderr
    bad = _bad(tmp_path, "list.json", b"[1, 2]")
    proc = subprocess.run(
        [sys.executable, "-m", "core.cli", "evidence", str(files["t"]), str(bad)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "__root__" in proc.stderr
