"""``groundwatch selfcheck``: the CLI contract and clean errors."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.cli import app
from core.config import reset_settings_cache

ANSWER = (
    "Anna Berg was born in Oslo in 1950. She studied medicine at the University of Bergen. "
    "She won the Nobel Prize in Chemistry in 1999."
)
SAMPLES = [
    "Anna Berg was born in Oslo in 1950. She studied medicine at the University of Bergen.",
    "Anna Berg (born 1950 in Oslo) is a Norwegian doctor. She studied medicine in Bergen.",
    "Born in Oslo in 1950, Anna Berg studied medicine at the University of Bergen.",
]

runner = CliRunner()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("GROUNDWATCH_NLI_MODEL", "GROUNDWATCH_LLM_BASE_URL", "GROUNDWATCH_MAX_INPUT_BYTES"):
        monkeypatch.delenv(var, raising=False)
    reset_settings_cache()


@pytest.fixture
def answer_file(tmp_path: Path) -> Path:
    path = tmp_path / "answer.txt"
    path.write_text(ANSWER, encoding="utf-8")
    return path


def write_json(tmp_path: Path, data: object, name: str = "samples.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize("method", ["ngram", "combined"])
def test_selfcheck_json_contract(tmp_path: Path, answer_file: Path, method: str) -> None:
    samples = write_json(tmp_path, SAMPLES)
    result = runner.invoke(
        app,
        ["selfcheck", str(answer_file), "--samples", str(samples), "--method", method, "--json"],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["method"] == method
    assert {"method", "sentences", "passage_score", "risk_score", "risk_level"} <= set(data)
    assert [s["index"] for s in data["sentences"]] == [0, 1, 2]
    assert data["sentences"][2]["text"].startswith("She won the Nobel Prize")
    scores = [s["score"] for s in data["sentences"]]
    assert scores.index(max(scores)) == 2
    assert 0.0 <= data["risk_score"] <= 1.0
    assert data["sample_count"] == 3


def test_selfcheck_human_output(tmp_path: Path, answer_file: Path) -> None:
    samples = write_json(tmp_path, SAMPLES)
    result = runner.invoke(
        app, ["selfcheck", str(answer_file), "--samples", str(samples), "--method", "ngram"]
    )
    assert result.exit_code == 0, result.output
    assert "risk:" in result.stdout
    assert "[2]" in result.stdout


def test_selfcheck_reads_answer_from_stdin(tmp_path: Path) -> None:
    samples = write_json(tmp_path, SAMPLES)
    result = runner.invoke(
        app,
        ["selfcheck", "-", "--samples", str(samples), "--method", "ngram", "--json"],
        input=ANSWER,
    )
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)["sentences"]) == 3


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"samples": SAMPLES}, "SAMPLES: expected a JSON list of strings, got dict"),
        ([], "SAMPLES: the list is empty"),
        (["fine", 7], "SAMPLES[1]: expected a string, got int"),
        (["fine", "   "], "SAMPLES[1]: empty text"),
    ],
)
def test_bad_samples_exit_2_naming_the_item(
    tmp_path: Path, answer_file: Path, data: object, message: str
) -> None:
    samples = write_json(tmp_path, data)
    result = runner.invoke(
        app, ["selfcheck", str(answer_file), "--samples", str(samples), "--json"]
    )
    assert result.exit_code == 2
    error = json.loads(result.stdout)
    assert error["error"] == "invalid_samples"
    assert error["message"].startswith(message)


def test_invalid_json_and_missing_files(tmp_path: Path, answer_file: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('["one", ', encoding="utf-8")
    result = runner.invoke(app, ["selfcheck", str(answer_file), "--samples", str(broken), "--json"])
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"] == "invalid_json"
    missing = runner.invoke(
        app, ["selfcheck", str(tmp_path / "nope.txt"), "--samples", str(broken), "--json"]
    )
    assert missing.exit_code == 1
    assert "file not found" in json.loads(missing.stdout)["message"]


def test_usage_errors(tmp_path: Path, answer_file: Path) -> None:
    samples = write_json(tmp_path, SAMPLES)
    neither = runner.invoke(app, ["selfcheck", str(answer_file), "--json"])
    assert neither.exit_code == 1
    assert json.loads(neither.stdout)["error"] == "usage"
    both = runner.invoke(
        app, ["selfcheck", str(answer_file), "--samples", str(samples), "--generate", "3", "--json"]
    )
    assert both.exit_code == 1
    no_prompt = runner.invoke(app, ["selfcheck", str(answer_file), "--generate", "3", "--json"])
    assert no_prompt.exit_code == 1
    assert "--prompt" in json.loads(no_prompt.stdout)["message"]


def test_generate_without_llm_is_a_clear_error(answer_file: Path) -> None:
    result = runner.invoke(
        app, ["selfcheck", str(answer_file), "--generate", "3", "--prompt", "Who?", "--json"]
    )
    assert result.exit_code == 1
    error = json.loads(result.stdout)
    assert error["error"] == "llm_unavailable"
    assert "GROUNDWATCH_LLM_BASE_URL" in error["message"]


@pytest.mark.parametrize("method", ["llm", "nli"])
def test_backend_methods_without_backend_report_unavailable(
    tmp_path: Path, answer_file: Path, method: str
) -> None:
    samples = write_json(tmp_path, SAMPLES)
    result = runner.invoke(
        app,
        ["selfcheck", str(answer_file), "--samples", str(samples), "--method", method, "--json"],
    )
    assert result.exit_code == 1
    error = json.loads(result.stdout)
    assert error["error"] == "selfcheck_unavailable"
    assert error["status"] == "unavailable"


def test_no_patient_text_in_logs(
    tmp_path: Path, answer_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    samples = write_json(tmp_path, SAMPLES)
    result = runner.invoke(
        app, ["selfcheck", str(answer_file), "--samples", str(samples), "--method", "llm", "--json"]
    )
    assert result.exit_code == 1
    assert "Anna Berg" not in caplog.text
    assert "Anna Berg" not in json.loads(result.stdout)["message"]


@pytest.mark.llm
@pytest.mark.slow
def test_generate_with_the_local_llm(
    answer_file: Path, local_llm: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GROUNDWATCH_LLM_BASE_URL", local_llm)
    reset_settings_cache()
    result = runner.invoke(
        app,
        [
            "selfcheck",
            str(answer_file),
            "--generate",
            "3",
            "--prompt",
            "In one sentence, who is Anna Berg?",
            "--max-tokens",
            "40",
            "--method",
            "ngram",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["sample_count"] == 3
    assert len(data["sentences"]) == 3
