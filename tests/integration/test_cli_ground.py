"""``groundwatch ground``: the CLI contract, batch mode and clean errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.cli import app
from core.config import reset_settings_cache
from tests.fhir_records import METFORMIN, bundle_text

NOTE = (
    "Takes metformin 500 mg twice daily. He denies chest pain. "
    "Exam shows swelling of the left knee."
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("GROUNDWATCH_NLI_MODEL", "GROUNDWATCH_LLM_BASE_URL", "GROUNDWATCH_MAX_INPUT_BYTES"):
        monkeypatch.delenv(var, raising=False)
    reset_settings_cache()


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    answer = tmp_path / "answer.txt"
    answer.write_text(
        "He takes metformin 1000 mg twice daily. He denies chest pain. The left knee is swollen.",
        encoding="utf-8",
    )
    note = tmp_path / "note.txt"
    note.write_text(NOTE, encoding="utf-8")
    listed = tmp_path / "sources.json"
    listed.write_text(
        json.dumps(
            [{"id": "msg-1", "text": "Patient message: knee still hurts.", "type": "message"}]
        ),
        encoding="utf-8",
    )
    return {"answer": answer, "note": note, "listed": listed}


def run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), input=stdin)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.model
def test_ground_json_contract(files: dict[str, Path]) -> None:
    code, out, _ = run(
        "ground",
        str(files["answer"]),
        "--source",
        str(files["note"]),
        "--source",
        str(files["listed"]),
        "--json",
    )
    assert code == 0
    data = json.loads(out)
    assert set(data) >= {
        "grounding_score",
        "overall_grounded",
        "statements",
        "unsupported_statements",
        "warnings",
        "checks",
    }
    statuses = [s["status"] for s in data["statements"]]
    assert statuses == ["contradicted", "grounded", "grounded"]
    first = data["statements"][0]
    assert first["source_id"] == "note.txt"
    assert first["reason"] == "dose differs: 1000 mg vs 500 mg"
    assert data["grounding_score"] == pytest.approx(2 / 3, abs=1e-3)
    assert data["overall_grounded"] is False
    assert data["checks"]["learned"] == "ok"
    assert data["checks"]["inference"] == "ok"  # the shipped learned verifier is that tier
    answer = files["answer"].read_text(encoding="utf-8")
    for s in data["statements"]:
        assert answer[s["start"] : s["end"]] == s["text"]


@pytest.mark.model
def test_ground_reads_stdin_and_prints_human_output(files: dict[str, Path]) -> None:
    code, out, _ = run("ground", "-", "--source", str(files["note"]), stdin="He denies chest pain.")
    assert code == 0
    assert "grounding score 1.00 (grounded)" in out
    assert "exact_match" in out


@pytest.mark.model
def test_batch_writes_one_result_per_line_with_its_id(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        "\n".join(
            json.dumps(c)
            for c in [
                {
                    "id": "a",
                    "answer": "He denies chest pain.",
                    "sources": [{"id": "n", "text": NOTE}],
                },
                {"id": 7, "answer": "He takes warfarin.", "sources": [{"id": "n", "text": NOTE}]},
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    code, out, _ = run("ground", "--batch", str(cases), "--json")
    assert code == 0
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line["id"] for line in lines] == ["a", "7"]
    assert lines[0]["overall_grounded"] is True
    assert lines[1]["statements"][0]["status"] == "unsupported"


def test_invalid_batch_names_the_lines_and_processes_nothing(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        '{"id": "a", "answer": "Secret Zebulon text.", "sources": [{"id": "n", "text": "x"}]}\n'
        "{not json\n"
        '{"id": "b", "answer": "", "sources": []}\n'
        '{"id": "c", "answer": "ok", "sources": [{"id": "n"}]}\n',
        encoding="utf-8",
    )
    code, out, _ = run("ground", "--batch", str(cases), "--json")
    assert code == 2
    data = json.loads(out)
    assert data["error"] == "invalid_batch"
    assert [r["line"] for r in data["rejected"]] == [2, 3, 4]
    assert "answer" in data["rejected"][1]["error"]
    assert "sources[0].text" in data["rejected"][2]["error"]
    assert "Zebulon" not in out


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("{broken", "not valid JSON"),
        ('{"id": "x"}', "non-empty JSON list"),
        ('[{"id": "x", "text": "t", "type": "email"}]', "[0].type"),
        ('[{"id": "x", "text": "t"}, {"id": "x", "text": "u"}]', "[1].id: duplicate"),
        ('[{"id": "x", "text": "t", "similarity": 3}]', "[0].similarity"),
    ],
)
def test_bad_source_json_exits_2_naming_the_field(
    files: dict[str, Path], tmp_path: Path, content: str, fragment: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content, encoding="utf-8")
    code, out, _ = run("ground", str(files["answer"]), "--source", str(bad), "--json")
    assert code == 2
    assert fragment in json.loads(out)["message"]


def test_missing_files_and_options(files: dict[str, Path], tmp_path: Path) -> None:
    code, out, _ = run(
        "ground", str(tmp_path / "nope.txt"), "--source", str(files["note"]), "--json"
    )
    assert code == 1
    assert "file not found" in json.loads(out)["message"]
    code, _, err = run("ground", str(files["answer"]))
    assert code == 1
    assert "--source" in err
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n", encoding="utf-8")
    code, out, _ = run("ground", str(empty), "--source", str(files["note"]), "--json")
    assert code == 2
    assert json.loads(out)["error"] == "empty"


@pytest.mark.model
def test_a_fhir_bundle_file_is_read_as_a_structured_record(
    files: dict[str, Path], tmp_path: Path
) -> None:
    record = tmp_path / "record.json"
    text = bundle_text(METFORMIN)
    record.write_text(text, encoding="utf-8")
    code, out, _ = run("ground", str(files["answer"]), "--source", str(record), "--json")
    assert code == 0, out
    first = json.loads(out)["statements"][0]  # "He takes metformin 1000 mg twice daily."
    assert first["status"] == "contradicted"
    assert first["source_id"] == "record.json"
    assert "500 mg" in first["evidence"]
    assert "{" not in first["evidence"]  # read as a sentence
    located = json.loads(text[first["evidence_start"] : first["evidence_end"]])
    assert located["resourceType"] == "MedicationStatement"  # the record in the file
