"""SPEC-16 epistemic verification with the real backends: MiniLM, grounding, the local LLM."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from core.cli import app
from core.config import reset_settings_cache
from core.epistemic import EpistemicVerifier, VerificationConfig
from core.grounding import GroundingVerifier, SourceChunk

CASES = Path(__file__).resolve().parents[1] / "data" / "epistemic_cases.jsonl"
NOTE = SourceChunk(
    id="note-1",
    text=(
        "64-year-old man with type 2 diabetes. Current medications: metformin 500 mg twice "
        "daily, lisinopril 10 mg once daily and atorvastatin 20 mg at night."
    ),
)
VISIT = SourceChunk(
    id="note-2",
    text="Blood pressure 142/90 mmHg. He denies chest pain. Mild swelling of the left ankle.",
)
ANSWER = (
    "He takes metformin 1000 mg twice daily [note-1]. His blood pressure was 142/90 mmHg "
    "[note-1]. He denies chest pain [note-2]. The swelling is in the left ankle [note-9]. "
    "He was started on insulin glargine at bedtime."
)


@pytest.fixture(scope="module")
def embedder():  # type: ignore[no-untyped-def]
    from core.backends.embedder import get_embedder

    return get_embedder()


@pytest.fixture(scope="module")
def verifier(embedder) -> EpistemicVerifier:  # type: ignore[no-untyped-def]
    return EpistemicVerifier(grounding=GroundingVerifier(embedder=embedder), embedder=embedder)


def _cases() -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines() if line]
    for row in rows:
        row["sources"] = [SourceChunk(id=s["id"], text=s["text"]) for s in row["sources"]]
    return rows


def test_labelled_suite_is_well_formed() -> None:
    rows = _cases()
    assert len(rows) >= 60
    kinds = {r["gap_type"] for r in rows}
    assert kinds == {
        "none", "unsupported", "partial_support", "phantom_citation", "contradicted",
        "over_extrapolation", "evidence_independent",
    }  # fmt: skip
    for row in rows:
        assert len(row["answer"]) >= 100, row["id"]
        assert (row["target"] is None) == (row["gap_type"] == "none"), row["id"]
        if row["target"]:
            assert row["target"] in row["answer"], row["id"]


@pytest.mark.model
def test_each_gap_type_on_one_answer(verifier: EpistemicVerifier) -> None:
    report = verifier.verify(ANSWER, [NOTE, VISIT], response_id="it-1")
    reasons = [c.flag_reason for c in report.claims]
    assert reasons == [
        "contradicted", "partial_support", None, "phantom_citation", "unsupported",
    ]  # fmt: skip
    assert report.checks["audit"].status == "ok"
    assert report.checks["dependence"].status == "unavailable"
    assert report.has_critical_gaps
    grounded = report.claims[2]
    assert grounded.evidence_source_id == "note-2"
    assert grounded.confidence is not None
    assert grounded.confidence >= 0.5


@pytest.mark.model
@pytest.mark.slow
def test_controls_of_the_suite_raise_no_critical_gap(verifier: EpistemicVerifier) -> None:
    controls = [r for r in _cases() if r["gap_type"] == "none"]
    flagged = 0
    claims = 0
    for row in controls:
        report = verifier.verify(row["answer"], row["sources"], response_id=row["id"])
        claims += report.verified_claims
        flagged += report.flagged_claims
    assert claims >= 40
    assert flagged / claims < 0.05


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.parametrize(
    "kind", ["unsupported", "partial_support", "phantom_citation", "contradicted"]
)
def test_suite_gap_types_are_detected(verifier: EpistemicVerifier, kind: str) -> None:
    rows = [r for r in _cases() if r["gap_type"] == kind]
    typed = 0
    for row in rows:
        report = verifier.verify(row["answer"], row["sources"])
        start = row["answer"].index(row["target"])
        ids = {c.claim_id for c in report.claims if c.start <= start < c.end}
        typed += any(g.gap_type == kind and g.claim_id in ids for g in report.gaps)
    assert typed / len(rows) > 0.8


@pytest.fixture
def cli_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    monkeypatch.delenv("GROUNDWATCH_LLM_BASE_URL", raising=False)
    reset_settings_cache()
    answer = tmp_path / "answer.txt"
    answer.write_text(ANSWER, encoding="utf-8")
    note = tmp_path / "note-1.txt"
    note.write_text(NOTE.text, encoding="utf-8")
    listed = tmp_path / "sources.json"
    listed.write_text(json.dumps([{"id": "note-2", "text": VISIT.text}]), encoding="utf-8")
    return {"answer": answer, "note": note, "listed": listed}


@pytest.mark.model
def test_cli_verify_json_contract(cli_files: dict[str, Path]) -> None:
    args = ["verify", str(cli_files["answer"]), "--source", str(cli_files["note"]),
            "--source", str(cli_files["listed"]), "--json", "--response-id", "cli-1"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.stdout
    report = json.loads(result.stdout)
    for key in ("response_id", "total_claims", "verified_claims", "flagged_claims", "claims",
                "gaps", "overall_confidence", "max_gap_bits", "has_critical_gaps",
                "should_retry", "retry_guidance", "checks", "usage"):  # fmt: skip
        assert key in report
    assert report["response_id"] == "cli-1"
    assert report["claims"][0]["cited_ids"] == ["note-1"]  # a text file's id is its stem
    assert report["checks"]["llm_direct"]["status"] == "unavailable"
    strict = CliRunner().invoke(app, [*args, "--fail-on-critical"])
    assert strict.exit_code == 3


@pytest.mark.model
def test_cli_verify_stdin_and_human_output(cli_files: dict[str, Path]) -> None:
    args = ["verify", "-", "--source", str(cli_files["note"]), "--source",
            str(cli_files["listed"])]  # fmt: skip
    result = CliRunner().invoke(app, args, input=ANSWER)
    assert result.exit_code == 0
    assert "[phantom_citation]" in result.stdout
    assert "check dependence: unavailable" in result.stdout
    short = CliRunner().invoke(app, args, input="He is fine [note-1].")
    assert "verification skipped" in short.stdout


@pytest.mark.llm
@pytest.mark.model
@pytest.mark.slow
def test_with_the_real_local_llm(embedder, local_llm: str) -> None:  # type: ignore[no-untyped-def]
    from core.backends.llm import LLMClient

    config = VerificationConfig(mode="full", claim_extraction="rules", max_claims_per_response=4)
    with LLMClient(local_llm, timeout_s=180.0, max_retries=0) as llm:
        verifier = EpistemicVerifier(
            grounding=GroundingVerifier(embedder=embedder), embedder=embedder, llm=llm,
            config=config,
        )  # fmt: skip
        report = verifier.verify(ANSWER, [NOTE, VISIT], question="What does he take?")
    assert report.checks["dependence"].status == "ok"
    assert report.evidence_dependence is not None
    assert 0.0 <= report.evidence_dependence <= 1.0
    assert report.checks["llm_direct"].status in ("ok", "failed")  # a tiny model may ramble
    assert report.usage.llm_calls >= 2
    assert report.usage.prompt_tokens > 0
    for claim in report.claims:
        assert claim.evidence_dependence is not None
        assert 0.0 <= claim.evidence_dependence <= 1.0
        if claim.llm_support is None:
            assert claim.evidence_gap_bits is None  # never a made-up number
        else:
            assert 0.0 <= claim.llm_support <= 1.0
    # the local tiers still catch what they catch, LLM or not
    assert report.claims[0].flag_reason == "contradicted"
    assert report.claims[3].flag_reason == "phantom_citation"
