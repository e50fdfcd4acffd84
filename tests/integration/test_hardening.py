"""A corpus of bad inputs through every CLI entry point: import, evidence, ground, selfcheck,
verify.

Each case must end in a clear error (exit 1 or 2, a JSON error object naming what is wrong)
or a safe result (exit 0, valid JSON) — never a traceback, never patient text in an error,
and never a partially stored import. Runs in-process (Typer's runner) so that the embedding
model loads once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from core.cli import app
from core.config import reset_settings_cache
from core.storage import repo
from core.storage.db import get_engine, read_session, upgrade_to_head

runner = CliRunner()
SENTINEL = "QZV-SENTINEL-HARDEN"
LIMIT = 64_000  # GROUNDWATCH_MAX_INPUT_BYTES for these tests
SCRIPT = '<script>alert("x")</script><img src=x onerror=alert(1)>'
ANSWER = f"{SENTINEL} The patient takes metformin 500 mg twice daily. {SCRIPT}"
SOURCE = f"{SENTINEL} Medications: metformin 500 mg twice daily. No known allergies."
DEEP = "[" * 20_000 + "]" * 20_000  # far deeper than the recursion limit


def good_record(i: int) -> dict[str, object]:
    return {
        "id": f"rec-{i}",
        "patient_id": "p-1",
        "timestamp": f"2026-01-{i + 1:02d}T09:00:00Z",
        "query": f"{SENTINEL} medications?",
        "answer": ANSWER,
        "sources": [{"id": "s-1", "text": SOURCE, "type": "transcript"}],
        "model": "m",
    }


def jl(*rows: object) -> bytes:
    return ("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n").encode()


TEN_K_QUOTES = {"PHQ8_Sleep": [f"{SENTINEL} quote {i}" for i in range(10_000)]}

# name -> file content; the entry points below pick from these.
BAD_JSON: dict[str, bytes] = {
    "malformed": b'{"PHQ8_Sleep": ["' + SENTINEL.encode() + b'" "x"]}',
    "truncated": b'{"PHQ8_Sleep": ["' + SENTINEL.encode() + b" sleeps bad",
    "wrong_type": json.dumps({"PHQ8_Sleep": 5, "x": {"y": SENTINEL}}).encode(),
    "invalid_utf8": b'["' + SENTINEL.encode() + b' \xff\xfe bad"]',
    "null_byte": b'["' + SENTINEL.encode() + b' \x00 nul"]',
    "too_large": b'["' + SENTINEL.encode() + b" " + b"x" * (LIMIT + 10) + b'"]',
    "empty": b"",
    "deeply_nested": DEEP.encode(),
    "nan": b'{"PHQ8_Sleep": NaN}',
    "not_json_at_all": SENTINEL.encode() + b" <html><body>hello</body></html>",
    # valid JSON whose escape decodes to no Unicode text (it cannot be stored or embedded)
    "unpaired_surrogate": b'{"PHQ8_Sleep": ["' + SENTINEL.encode() + b' \\ud800 x"]}',
    "huge_integer": b'{"PHQ8_Sleep": ["' + SENTINEL.encode() + b'"], "n": ' + b"9" * 5000 + b"}",
    "duplicate_keys": b'{"PHQ8_Sleep": ["' + SENTINEL.encode() + b'"], "PHQ8_Sleep": ["b"]}',
    "control_character": b'{"PHQ8_Sleep": ["' + SENTINEL.encode() + b' \\u0000 x"]}',
}
BAD_TEXT: dict[str, bytes] = {
    "invalid_utf8": SENTINEL.encode() + b" \xc3\x28 text",
    "null_byte": SENTINEL.encode() + b" \x00 text",
    "too_large": SENTINEL.encode() + b"x" * (LIMIT + 10),
    "empty": b"   \n",
}


@dataclass(frozen=True, slots=True)
class Outcome:
    code: int
    body: Any
    output: str


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    url = f"sqlite:///{tmp_path / 'gw.db'}"
    monkeypatch.setenv("GROUNDWATCH_DATABASE_URL", url)
    monkeypatch.setenv("GROUNDWATCH_MAX_INPUT_BYTES", str(LIMIT))
    monkeypatch.setenv("GROUNDWATCH_ENABLE_GROUNDING_VERIFICATION", "false")
    reset_settings_cache()
    upgrade_to_head(url)
    return tmp_path


def roomy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lift the size limit for the tests that send many (valid) quotes."""
    monkeypatch.setenv("GROUNDWATCH_MAX_INPUT_BYTES", "5000000")
    reset_settings_cache()


def write(tmp: Path, name: str, data: bytes) -> str:
    path = tmp / name
    path.write_bytes(data)
    return str(path)


def invoke(*args: str) -> Outcome:
    result = runner.invoke(app, [*args, "--json"])
    output = result.stdout + result.stderr
    exc = result.exception
    assert exc is None or isinstance(exc, SystemExit), f"{args[0]} crashed: {exc!r}"
    assert "Traceback" not in output
    body = None
    lines = [ln for ln in result.stdout.splitlines() if ln.strip()]
    if lines:
        body = json.loads(lines[0])
    return Outcome(result.exit_code, body, output)


def assert_clear_error(out: Outcome, *, codes: tuple[int, ...] = (1, 2)) -> dict[str, object]:
    assert out.code in codes, out.output[:500]
    assert isinstance(out.body, dict), out.output[:500]
    assert out.body.get("error"), out.output[:500]
    message = json.dumps(out.body)
    assert SENTINEL not in message, "patient text leaked into an error"
    assert SCRIPT not in message
    return out.body


def count(tmp: Path) -> int:
    with read_session(get_engine(f"sqlite:///{tmp / 'gw.db'}")) as s:
        return repo.count_conversations(session=s)


# --------------------------------------------------------------------------- import


IMPORT_CASES: dict[str, bytes] = {
    "malformed_line": jl(good_record(0), '{"id": "rec-x", "answer": ' + json.dumps(SENTINEL)),
    "truncated_file": jl(good_record(0))[:-40],
    "wrong_types": jl(good_record(0), {**good_record(1), "answer": 42, "sources": "s"}),
    "missing_fields": jl(good_record(0), {"id": "rec-2", "answer": SENTINEL}),
    "invalid_utf8": jl(good_record(0)) + b'{"id": "\xff\xfe"}\n',
    "null_byte": jl(good_record(0)) + b'{"id": "a\x00"}\n',
    "nan_similarity": jl(
        good_record(0),
        {**good_record(1), "sources": [{"id": "s", "text": SOURCE, "similarity": float("nan")}]},
    ),
    "not_an_object": jl(good_record(0), [SENTINEL]),
    "deeply_nested": jl(good_record(0)) + DEEP.encode() + b"\n",
    "duplicate_ids": jl(good_record(0), good_record(0)),
    "bad_evidence": jl(good_record(0), {**good_record(1), "evidence": {"PHQ8_Sleep": SENTINEL}}),
    "too_large": jl(good_record(0), {**good_record(1), "answer": "x" * LIMIT}),
    "unpaired_surrogate": jl(good_record(0))
    + b'{"id": "rec-9", "patient_id": "p-1", "answer": "\\udc00 x", "sources": []}\n',
    "huge_integer": jl(good_record(0)) + b'{"id": "rec-9", "n": ' + b"9" * 5000 + b"}\n",
    "duplicate_keys": jl(good_record(0))
    + b'{"id": "rec-9", "id": "rec-10", "patient_id": "p-1", "answer": "x", "sources": []}\n',
    "control_character": jl(good_record(0))
    + b'{"id": "rec-9", "patient_id": "p-1", "answer": "\\u0000 x", "sources": []}\n',
}


@pytest.mark.parametrize("case", sorted(IMPORT_CASES))
def test_import_rejects_bad_input_and_stores_nothing(env: Path, case: str) -> None:
    path = write(env, "records.jsonl", IMPORT_CASES[case])
    out = invoke("import", path)
    body = assert_clear_error(out)
    if case != "too_large":
        rejected = body["rejected"]
        assert isinstance(rejected, list)
        assert rejected
        assert all(isinstance(r["line"], int) and r["error"] for r in rejected)
    assert count(env) == 0, "a rejected batch must store nothing"


def test_import_skip_invalid_stores_only_the_valid_lines(env: Path) -> None:
    path = write(env, "records.jsonl", IMPORT_CASES["wrong_types"])
    out = invoke("import", path, "--skip-invalid")
    assert out.code == 0
    assert isinstance(out.body, dict)
    assert out.body["imported"] == 1
    assert [r["line"] for r in out.body["rejected"]] == [2]
    assert count(env) == 1


@pytest.mark.slow
def test_import_of_html_payloads_and_10000_quotes_is_safe(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    roomy(monkeypatch)
    rec = {**good_record(0), "evidence": TEN_K_QUOTES}
    path = write(env, "records.jsonl", jl(rec, good_record(1)))
    out = invoke("import", path)
    assert out.code == 0, out.output[:500]
    assert isinstance(out.body, dict)
    assert out.body["imported"] == 2
    with read_session(get_engine(f"sqlite:///{env / 'gw.db'}")) as s:
        d = repo.get_conversation(session=s, conversation_id="rec-0")
        assert d is not None
        assert d.conversation.answer == ANSWER
        assert d.conversation.check_status["evidence"]["status"] == "ok"
        assert d.evidence
        assert d.evidence[0].extracted_count == 10_000


# --------------------------------------------------------------------------- evidence


@pytest.mark.parametrize("case", sorted(BAD_JSON))
def test_evidence_bad_evidence_file(env: Path, case: str) -> None:
    transcript = write(env, "t.txt", SOURCE.encode())
    evidence = write(env, "e.json", BAD_JSON[case])
    assert_clear_error(invoke("evidence", transcript, evidence))


@pytest.mark.parametrize("case", sorted(BAD_TEXT))
def test_evidence_bad_transcript(env: Path, case: str) -> None:
    transcript = write(env, "t.txt", BAD_TEXT[case])
    evidence = write(env, "e.json", json.dumps({"PHQ8_Sleep": ["metformin"]}).encode())
    assert_clear_error(invoke("evidence", transcript, evidence))


@pytest.mark.parametrize("case", ["malformed", "truncated", "deeply_nested", "wrong_type"])
def test_evidence_bad_json_transcript(env: Path, case: str) -> None:
    transcript = write(env, "t.json", BAD_JSON[case])
    evidence = write(env, "e.json", json.dumps({"PHQ8_Sleep": ["metformin"]}).encode())
    assert_clear_error(invoke("evidence", transcript, evidence))


def test_evidence_10000_quotes_and_html_is_a_safe_result(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    roomy(monkeypatch)
    transcript = write(env, "t.txt", (SOURCE + " " + SCRIPT).encode())
    quotes = {"PHQ8_Sleep": [*TEN_K_QUOTES["PHQ8_Sleep"][:9_998], SCRIPT, "metformin 500 mg"]}
    evidence = write(env, "e.json", json.dumps(quotes).encode())
    out = invoke("evidence", transcript, evidence, "--keys", "any")
    assert out.code == 0, out.output[:500]
    assert isinstance(out.body, dict)
    stats = out.body["stats"]
    assert stats["extracted_count"] == 10_000
    assert stats["validated_count"] == 2
    assert out.body["validated"] == {"PHQ8_Sleep": [SCRIPT, "metformin 500 mg"]}


# --------------------------------------------------------------------------- ground


@pytest.mark.parametrize("case", sorted(BAD_TEXT))
def test_ground_bad_answer(env: Path, case: str) -> None:
    answer = write(env, "a.txt", BAD_TEXT[case])
    source = write(env, "s.txt", SOURCE.encode())
    assert_clear_error(invoke("ground", answer, "--source", source))


@pytest.mark.parametrize("case", sorted(BAD_JSON))
def test_ground_bad_json_source(env: Path, case: str) -> None:
    answer = write(env, "a.txt", ANSWER.encode())
    source = write(env, "s.json", BAD_JSON[case])
    assert_clear_error(invoke("ground", answer, "--source", source))


@pytest.mark.parametrize(
    "cases",
    [
        b'{"id": "c1", "answer": "x", "sources": [{"id": "s", "text": "x"}]}\n{"id": ',
        b'{"id": "c1", "answer": 5, "sources": []}\n',
        b'{"id": "c1", "answer": "\xff", "sources": []}\n',
        DEEP.encode() + b"\n",
        b'{"id": "c1", "answer": "a \\ud800", "sources": [{"id": "s", "text": "x"}]}\n',
    ],
    ids=["truncated", "wrong_type", "invalid_utf8", "deeply_nested", "unpaired_surrogate"],
)
def test_ground_bad_batch(env: Path, cases: bytes) -> None:
    batch = write(env, "cases.jsonl", cases)
    result = runner.invoke(app, ["ground", "--batch", batch, "--json"])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert "Traceback" not in result.stdout + result.stderr
    assert result.exit_code in (1, 2)
    assert SENTINEL not in result.stderr


@pytest.mark.model
def test_ground_html_payload_is_a_safe_result(env: Path) -> None:
    answer = write(env, "a.txt", ANSWER.encode())
    source = write(env, "s.json", json.dumps([{"id": "s-1", "text": SOURCE + SCRIPT}]).encode())
    out = invoke("ground", answer, "--source", source)
    assert out.code == 0, out.output[:500]
    assert isinstance(out.body, dict)
    assert 0.0 <= float(out.body["grounding_score"]) <= 1.0
    assert any("metformin" in s["text"] for s in out.body["statements"])


# --------------------------------------------------------------------------- selfcheck


@pytest.mark.parametrize(
    "case",
    [*sorted(BAD_JSON), "empty_list", "list_of_numbers", "blank_sample"],
)
def test_selfcheck_bad_samples(env: Path, case: str) -> None:
    extra = {
        "empty_list": b"[]",
        "list_of_numbers": b"[1, 2, 3]",
        "blank_sample": b'["ok sample", "   "]',
    }
    answer = write(env, "a.txt", ANSWER.encode())
    samples = write(env, "s.json", extra.get(case) or BAD_JSON[case])
    assert_clear_error(invoke("selfcheck", answer, "--samples", samples, "--method", "ngram"))


@pytest.mark.parametrize("case", sorted(BAD_TEXT))
def test_selfcheck_bad_answer(env: Path, case: str) -> None:
    answer = write(env, "a.txt", BAD_TEXT[case])
    samples = write(env, "s.json", json.dumps(["The patient takes metformin."]).encode())
    assert_clear_error(invoke("selfcheck", answer, "--samples", samples, "--method", "ngram"))


def test_selfcheck_html_payload_and_many_samples_is_safe(env: Path) -> None:
    answer = write(env, "a.txt", ANSWER.encode())
    samples = write(env, "s.json", json.dumps([SCRIPT, SOURCE] * 200).encode())
    out = invoke("selfcheck", answer, "--samples", samples, "--method", "ngram")
    assert out.code == 0, out.output[:500]
    assert isinstance(out.body, dict)
    assert len(out.body["sentences"]) == 2
    assert 0.0 <= float(out.body["risk_score"]) <= 1.0


# --------------------------------------------------------------------------- verify


@pytest.mark.model
@pytest.mark.parametrize("case", sorted(BAD_TEXT))
def test_verify_bad_answer(env: Path, case: str) -> None:
    answer = write(env, "a.txt", BAD_TEXT[case])
    source = write(env, "s.txt", SOURCE.encode())
    assert_clear_error(invoke("verify", answer, "--source", source))


@pytest.mark.model
@pytest.mark.parametrize("case", sorted(BAD_JSON))
def test_verify_bad_json_source(env: Path, case: str) -> None:
    answer = write(env, "a.txt", ANSWER.encode())
    source = write(env, "s.json", BAD_JSON[case])
    assert_clear_error(invoke("verify", answer, "--source", source))


@pytest.mark.model
def test_verify_html_payload_is_a_safe_result(env: Path) -> None:
    answer = write(env, "a.txt", ANSWER.encode())
    source = write(env, "s.txt", (SOURCE + SCRIPT).encode())
    out = invoke("verify", answer, "--source", source)
    assert out.code == 0, out.output[:500]
    assert isinstance(out.body, dict)


# --------------------------------------------------------------------------- upload page

UPLOAD_CASES: dict[str, tuple[str, bytes]] = {
    "malformed": ("quotes.json", BAD_JSON["malformed"]),
    "truncated": ("quotes.json", BAD_JSON["truncated"]),
    "wrong_type": ("quotes.json", BAD_JSON["wrong_type"]),
    "invalid_utf8": ("quotes.json", BAD_JSON["invalid_utf8"]),
    "null_byte": ("quotes.json", BAD_JSON["null_byte"]),
    "deeply_nested": ("quotes.json", BAD_JSON["deeply_nested"]),
    "too_large": ("quotes.json", BAD_JSON["too_large"]),
}


@pytest.mark.parametrize("case", sorted(UPLOAD_CASES))
def test_upload_page_refuses_bad_evidence(env: Path, case: str) -> None:
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    app_path = Path(__file__).resolve().parents[2] / "dashboard" / "streamlit_app.py"
    st.cache_data.clear()
    at = AppTest.from_file(str(app_path), default_timeout=60).run()
    at.switch_page("app_pages/upload.py").run()
    at.file_uploader(key="upload_transcript").set_value(
        ("visit.txt", (SOURCE + SCRIPT).encode(), "text/plain")
    )
    name, payload = UPLOAD_CASES[case]
    at.file_uploader(key="upload_evidence").set_value((name, payload, "application/json"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.error]
    assert any(name in e for e in errors), errors
    assert all(SENTINEL not in e for e in errors)
    assert count(env) == 0


@pytest.mark.parametrize("command", ["ground", "selfcheck", "verify"])
def test_the_record_text_limit_applies_to_every_command(
    env: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """The longest text one record may hold is the same for import and for the commands that
    check a single answer (an answer of 3 million characters took 99 s in verify)."""
    monkeypatch.setenv("GROUNDWATCH_MAX_TRANSCRIPT_CHARS", "1000")
    reset_settings_cache()
    answer = write(env, "answer.txt", (SENTINEL + " takes metformin. ").encode() * 100)
    source = write(env, "note.txt", SOURCE.encode())
    samples = write(env, "samples.json", json.dumps(["He takes metformin."]).encode())
    extra = {
        "ground": ["--source", source],
        "selfcheck": ["--samples", samples],
        "verify": ["--source", source],
    }[command]
    body = assert_clear_error(invoke(command, answer, *extra), codes=(1, 2))
    assert "GROUNDWATCH_MAX_TRANSCRIPT_CHARS" in json.dumps(body)
