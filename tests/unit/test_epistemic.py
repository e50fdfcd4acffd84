"""SPEC-16 epistemic verification: citations, specifics, claims, audit, report (fakes only)."""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from core.backends.llm import ChatResponse, LLMResponseError, LLMUnavailableError
from core.epistemic import (
    CitationResolver,
    EpistemicVerifier,
    InMemoryVerificationCache,
    VerificationConfig,
    gap_bits_from_probability,
    strip_citations,
)
from core.epistemic.prompts import UnparseableReplyError, parse_claim_lines, parse_support_score
from core.epistemic.specifics import compare_specifics, quantities, stated_count_mismatch
from core.grounding import SourceChunk

NOTE = SourceChunk(
    id="note-1",
    text=(
        "Current medications: metformin 500 mg twice daily, lisinopril 10 mg once daily, "
        "atorvastatin 20 mg at night and aspirin 81 mg daily."
    ),
)
LAB = SourceChunk(id="lab-1", text="Laboratory results: HbA1c 7.8%. Potassium 4.6 mmol/L.")
VISIT = SourceChunk(
    id="note-3",
    text="Blood pressure 142/90 mmHg. He denies chest pain. Mild swelling of the left ankle.",
)
SOURCES = [NOTE, LAB, VISIT]


# --- fakes -------------------------------------------------------------------------------


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9.%/]+", text.lower())) - {"he", "his", "the", "was", "is"}


@dataclass(frozen=True)
class _G:
    status: str
    verification_method: str
    confidence: float
    source_chunk_id: str | None
    supporting_evidence: str | None
    evidence_start: int | None = None
    evidence_end: int | None = None
    reason: str | None = None


class FakeGrounder:
    """Grounded when most of the statement's words occur in one source (a stand-in)."""

    def __init__(self, *, fail: bool = False) -> None:
        self.calls = 0
        self.fail = fail

    def verify_statement(self, statement: str, sources: Sequence[SourceChunk]) -> _G:
        self.calls += 1
        if self.fail:
            raise RuntimeError("backend down")
        wanted = _words(statement)
        best, share = None, 0.0
        for src in sources:
            s = len(wanted & _words(src.text)) / max(1, len(wanted))
            if s > share:
                best, share = src, s
        if best is not None and share >= 0.75:
            return _G("grounded", "semantic_match", 0.9, best.id, best.text, 0, len(best.text))
        return _G("unsupported", "unsupported", 0.6, best.id if best else None, None)


class FakeEmbedder:
    """Bag-of-words vectors: similar wording, high cosine."""

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in texts:
            vec = np.zeros(64, dtype=np.float32)
            for word in _words(text):
                vec[hash(word) % 64] += 1.0
            norm = float(np.linalg.norm(vec)) or 1.0
            rows.append(vec / norm)
        return np.stack(rows)


class FakeLLM:
    """Answers each prompt kind with a scripted reply and counts tokens."""

    model = "fake"

    def __init__(
        self,
        *,
        score: str = "0.9 - stated",
        claims: str | None = None,
        without: str = "Unrelated generic text about weather.",
        error: Exception | None = None,
    ) -> None:
        self.score = score
        self.claims = claims
        self.without = without
        self.error = error
        self.prompts: list[str] = []

    def chat(self, messages: Sequence[dict[str, str]], **_: Any) -> ChatResponse:
        prompt = messages[-1]["content"]
        self.prompts.append(prompt)
        if self.error is not None:
            raise self.error
        if prompt.startswith("Evaluate whether"):
            text = self.score
        elif prompt.startswith("List every atomic"):
            text = self.claims or ""
        elif prompt.startswith("Given this evidence"):
            text = "He takes metformin 500 mg twice daily."
        else:
            text = self.without
        return ChatResponse(text, "fake", 20, 5, 1.0)


ANSWER = (
    "He takes metformin 500 mg twice daily [note-1]. His HbA1c was 7.8% [note-3]. "
    "The potassium was 4.6 mmol/L [lab-7]. He was started on insulin glargine at bedtime."
)


def verifier(**kwargs: Any) -> EpistemicVerifier:
    kwargs.setdefault("grounding", FakeGrounder())
    return EpistemicVerifier(**kwargs)


# --- citations ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "labels"),
    [
        ("BP was high [1].", ["1"]),
        ("BP was high [2, 3].", ["2", "3"]),
        ("BP was high [1-3].", ["1", "2", "3"]),
        ("BP was high [note-3].", ["note-3"]),
        ("BP was high [S2; S3].", ["S2", "S3"]),
        ("BP was high (source: note-3).", ["note-3"]),
        ("BP was high (sources: lab-1, note-3).", ["lab-1", "note-3"]),
        ("BP was high (note-3).", ["note-3"]),
        ("Per note-3, BP was high.", ["note-3"]),
        ("According to lab-1 the HbA1c was 7.8%.", ["lab-1"]),
    ],
)
def test_citation_forms_are_recognised(text: str, labels: list[str]) -> None:
    found = CitationResolver(["lab-1", "note-2", "note-3"]).find(text)
    assert [c.label for c in found] == labels


def test_non_citations_are_left_alone() -> None:
    resolver = CitationResolver(["lab-1"])
    assert resolver.find("He said [sic] it was fine (x2) twice per day.") == []
    assert resolver.find("Taken 2 times (per 24 hours).") == []


def test_numeric_citation_is_nth_source_when_ids_are_not_numeric() -> None:
    resolver = CitationResolver(["note-a", "note-b"])
    assert resolver.resolve("1") == "note-a"
    assert resolver.resolve("S2") == "note-b"
    assert resolver.resolve("3") is None  # beyond the sources: phantom


def test_numeric_citation_matches_numeric_ids_exactly() -> None:
    resolver = CitationResolver(["10", "20"])
    assert resolver.resolve("20") == "20"
    assert resolver.resolve("1") is None


def test_strip_citations_tidies_text() -> None:
    text = "HbA1c was 7.8% [lab-1]."
    found = CitationResolver(["lab-1"]).find(text)
    assert strip_citations(text, found) == "HbA1c was 7.8%."


# --- specifics ---------------------------------------------------------------------------


def test_dose_conflict_is_anchored_to_the_drug() -> None:
    finding = compare_specifics("He takes atorvastatin 10 mg at night.", [NOTE.text])
    assert finding.kind == "conflict"
    assert "10 mg" in (finding.reason or "")
    assert compare_specifics("He takes atorvastatin 20 mg at night.", [NOTE.text]).kind == "ok"


def test_frequency_abbreviations_match_words() -> None:
    assert compare_specifics("Metformin 500 mg BID.", [NOTE.text]).kind == "ok"
    assert compare_specifics("Metformin 500 mg two times a day.", [NOTE.text]).kind == "ok"


def test_count_stated_wrongly_is_a_conflict() -> None:
    finding = compare_specifics("He takes three medications.", [NOTE.text])
    assert finding.kind == "conflict"
    assert "count differs" in (finding.reason or "")
    assert compare_specifics("He takes four medications.", [NOTE.text]).kind == "ok"


def test_stated_count_disagreeing_with_own_list() -> None:
    assert stated_count_mismatch("He takes three medicines: a, b, c and d.") == (9, 3, 4)
    assert stated_count_mismatch("He takes four medicines: a, b, c and d.") is None


def test_negation_and_laterality_conflicts() -> None:
    assert compare_specifics("He reports chest pain.", [VISIT.text]).kind == "conflict"
    assert compare_specifics("He has no chest pain.", [VISIT.text]).kind == "ok"
    finding = compare_specifics("Swelling of the right ankle.", [VISIT.text])
    assert finding.kind == "conflict"
    assert "laterality" in (finding.reason or "")


def test_negation_of_a_question_follows_the_reply() -> None:
    dialogue = "[doctor] Any chest pain? [patient] No, none at all."
    assert compare_specifics("He has no chest pain.", [dialogue]).kind == "ok"
    assert compare_specifics("He reports chest pain.", [dialogue]).kind == "conflict"


def test_added_specific_is_an_addition() -> None:
    finding = compare_specifics(
        "Spironolactone 25 mg was started.", ["Spironolactone was started."]
    )
    assert finding.kind == "addition"
    assert finding.coverage == 0.0


def test_once_and_articles_are_no_specifics() -> None:
    assert compare_specifics("He takes lisinopril 10 mg once daily.", [NOTE.text]).kind == "ok"
    assert [(q.value, q.unit) for q in quantities("She sleeps 6 hours a night.")] == [("6", "hour")]
    finding = compare_specifics("His potassium was 5.1 mmol/L.", [LAB.text])
    assert finding.kind == "conflict"
    assert "5.1 mmol/L" in (finding.reason or "")


def test_ages_and_dates_are_not_durations() -> None:
    units = {q.unit for q in quantities("A 64-year-old man seen on 12/03/2024.")}
    assert units == {"age"}


# --- prompt parsing ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "value"),
    [("0.8 - stated", 0.8), ("Score: .75", 0.75), ("80%", 0.8), ("7 out of 10", 0.7),
     ("1", 1.0), ("The 500 mg dose is stated, so 0.4", 0.4)],
)  # fmt: skip
def test_support_score_parsing(reply: str, value: float) -> None:
    assert parse_support_score(reply) == pytest.approx(value)


def test_support_score_without_number_raises() -> None:
    with pytest.raises(UnparseableReplyError, match="no support rating"):
        parse_support_score("I cannot tell.")


def test_claim_lines_parsing() -> None:
    assert parse_claim_lines("1. He takes metformin.\n- His HbA1c was 7.8%.\n\n") == [
        "He takes metformin.",
        "His HbA1c was 7.8%.",
    ]
    with pytest.raises(UnparseableReplyError):
        parse_claim_lines("\n\n")


# --- the verifier without an LLM ---------------------------------------------------------


def test_report_flags_each_gap_type() -> None:
    report = verifier().verify(ANSWER, SOURCES, response_id="r-1")
    by_text = {c.claim_text: c for c in report.claims}
    assert by_text["He takes metformin 500 mg twice daily."].is_flagged is False
    assert by_text["His HbA1c was 7.8%."].flag_reason == "partial_support"
    assert by_text["The potassium was 4.6 mmol/L."].flag_reason == "phantom_citation"
    assert by_text["He was started on insulin glargine at bedtime."].flag_reason == "unsupported"
    assert report.response_id == "r-1"
    assert report.total_claims == report.verified_claims == 4
    assert report.flagged_claims == 3
    assert report.has_critical_gaps
    assert report.should_retry is False  # on_failure="flag"
    assert "c3: phantom citation" in (report.retry_guidance or "")
    phantom = by_text["The potassium was 4.6 mmol/L."]
    assert phantom.phantom_citations == ("lab-7",)
    partial = [g for g in report.gaps if g.gap_type == "partial_support"][0]
    assert partial.source_ids == ("note-3", "lab-1")
    assert partial.severity == "warning"


def test_contradiction_found_by_rules_on_a_grounded_claim() -> None:
    answer = "He takes metformin 1000 mg twice daily [note-1]. " + "He denies chest pain. " * 4
    report = verifier().verify(answer, SOURCES)
    first = report.claims[0]
    assert first.flag_reason == "contradicted"
    assert first.evidence_support == 0.0
    assert "1000 mg" in (first.reason or "")


def test_count_stated_wrongly_in_the_answer_is_contradicted() -> None:
    answer = (
        "He takes three regular medications: metformin, lisinopril, atorvastatin and aspirin "
        "[note-1]. His potassium was 4.6 mmol/L [lab-1]."
    )
    report = verifier().verify(answer, SOURCES)
    assert report.claims[0].flag_reason == "contradicted"
    assert "states 3 but lists 4" in (report.claims[0].reason or "")


def test_without_llm_no_numbers_are_made_up() -> None:
    report = verifier().verify(ANSWER, SOURCES)
    assert report.checks["llm_direct"].status == "unavailable"
    assert report.checks["dependence"].status == "unavailable"
    assert report.checks["claims"].status == "ok"
    assert report.checks["audit"].status == "ok"
    assert report.evidence_dependence is None
    assert report.max_gap_bits is None
    for claim in report.claims:
        assert claim.llm_support is None
        assert claim.evidence_dependence is None
        assert claim.evidence_gap_bits is None
    assert report.usage.llm_calls == 0


@pytest.mark.parametrize(
    ("answer", "sources", "config", "reason"),
    [
        ("Short answer [1].", SOURCES, VerificationConfig(), "shorter than 100"),
        (ANSWER, [], VerificationConfig(), "no evidence"),
        (ANSWER, SOURCES, VerificationConfig(enabled=False), "disabled"),
    ],
)
def test_smart_skip(
    answer: str, sources: list[SourceChunk], config: VerificationConfig, reason: str
) -> None:
    grounder = FakeGrounder()
    report = verifier(grounding=grounder, config=config).verify(answer, sources)
    assert report.skipped
    assert reason in (report.skip_reason or "")
    assert {c.status for c in report.checks.values()} == {"skipped"}
    assert grounder.calls == 0
    assert report.overall_confidence is None


def test_max_claims_per_response_limits_the_audit() -> None:
    config = VerificationConfig(max_claims_per_response=2)
    report = verifier(config=config).verify(ANSWER, SOURCES)
    assert report.total_claims == 4
    assert report.verified_claims == 2
    assert any("not verified" in w for w in report.warnings)


def test_cache_reuses_claim_outcomes() -> None:
    grounder = FakeGrounder()
    cache = InMemoryVerificationCache()
    v = verifier(grounding=grounder, cache=cache)
    first = v.verify(ANSWER, SOURCES)
    calls = grounder.calls
    second = v.verify(ANSWER, SOURCES)
    assert grounder.calls == calls
    assert second.usage.cache_hits == second.verified_claims
    assert all(c.cached for c in second.claims)
    assert [c.flag_reason for c in first.claims] == [c.flag_reason for c in second.claims]
    changed = [SourceChunk(id="note-1", text=NOTE.text + " Extra."), LAB, VISIT]
    v.verify(ANSWER, changed)
    assert grounder.calls > calls  # evidence changed: new key


def test_grounding_failure_is_a_status_not_a_crash() -> None:
    report = verifier(grounding=FakeGrounder(fail=True)).verify(ANSWER, SOURCES)
    assert report.checks["audit"].status == "failed"
    assert "RuntimeError" in (report.checks["audit"].reason or "")


def test_bad_input_is_named() -> None:
    v = verifier()
    with pytest.raises(ValueError, match="answer"):
        v.verify(None, SOURCES)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"sources\[1\]"):
        v.verify(ANSWER, [NOTE, {"id": "x", "text": "y"}])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="duplicate"):
        v.verify(ANSWER, [NOTE, NOTE])


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"support_threshold": 1.5}, "support_threshold"), ({"mode": "all"}, "mode"),
     ({"max_claims_per_response": 0}, "max_claims_per_response"),
     ({"sample_rate": -0.1}, "sample_rate"), ({"on_failure": "ask"}, "on_failure")],
)  # fmt: skip
def test_config_validation(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        VerificationConfig(**kwargs)


def test_report_to_dict_is_json_safe() -> None:
    report = verifier().verify(ANSWER, SOURCES)
    data = json.loads(json.dumps(report.to_dict()))
    assert data["checks"]["llm_direct"]["status"] == "unavailable"
    assert {g["gap_type"] for g in data["gaps"]} >= {"phantom_citation", "unsupported"}
    assert data["claims"][0]["evidence_ids"] == ["note-1"]
    assert VerificationConfig().to_dict()["sample_rate"] == 0.3


def test_on_failure_retry_sets_should_retry() -> None:
    config = VerificationConfig(on_failure="retry")
    assert verifier(config=config).verify(ANSWER, SOURCES).should_retry
    no_retries = VerificationConfig(on_failure="retry", max_retries=0)
    assert not verifier(config=no_retries).verify(ANSWER, SOURCES).should_retry


# --- the verifier with a (fake) LLM ------------------------------------------------------


def test_llm_direct_check_gives_support_and_bits() -> None:
    llm = FakeLLM(score="0.25 - dose not stated")
    config = VerificationConfig(mode="full", claim_extraction="rules")
    report = verifier(llm=llm, config=config).verify(ANSWER, SOURCES)  # type: ignore[arg-type]
    assert report.checks["llm_direct"].status == "ok"
    first = report.claims[0]
    assert first.llm_support == 0.25
    assert first.evidence_gap_bits == pytest.approx(2.0)
    assert first.flag_reason == "unsupported"  # the judge rated it below 0.7
    assert report.max_gap_bits == pytest.approx(2.0)
    assert report.usage.llm_calls == 4
    assert report.usage.prompt_tokens == 80
    assert report.usage.cost is None


def test_cost_is_computed_from_configured_prices() -> None:
    config = VerificationConfig(
        mode="full", claim_extraction="rules", prompt_cost_per_1k=1.0, completion_cost_per_1k=2.0
    )
    report = verifier(llm=FakeLLM(), config=config).verify(ANSWER, SOURCES)  # type: ignore[arg-type]
    assert report.usage.cost == pytest.approx(80 / 1000 * 1.0 + 20 / 1000 * 2.0)


def test_unparseable_judge_reply_fails_without_a_number() -> None:
    config = VerificationConfig(mode="full", claim_extraction="rules")
    llm = FakeLLM(score="I am not sure.")
    report = verifier(llm=llm, config=config).verify(ANSWER, SOURCES)  # type: ignore[arg-type]
    assert report.checks["llm_direct"].status == "failed"
    assert all(c.llm_support is None for c in report.claims)


@pytest.mark.parametrize(
    ("error", "status"),
    [(LLMUnavailableError("down"), "unavailable"), (LLMResponseError("bad"), "failed")],
)
def test_llm_errors_become_statuses(error: Exception, status: str) -> None:
    config = VerificationConfig(mode="full")
    llm = FakeLLM(error=error)
    v = verifier(llm=llm, config=config, embedder=FakeEmbedder())  # type: ignore[arg-type]
    report = v.verify(ANSWER, SOURCES, question="What does he take?")
    assert report.checks["llm_direct"].status == status
    assert report.checks["dependence"].status == status
    assert report.claim_extraction == "rules"
    assert any("claim extraction failed" in w for w in report.warnings)


def test_sample_mode_is_deterministic_and_partial() -> None:
    def judged(seed: int, rate: float) -> list[bool]:
        config = VerificationConfig(mode="sample", sample_rate=rate, seed=seed,
                                    claim_extraction="rules")  # fmt: skip
        report = verifier(llm=FakeLLM(), config=config).verify(ANSWER, SOURCES)  # type: ignore[arg-type]
        return [c.llm_checked for c in report.claims]

    assert judged(0, 0.5) == judged(0, 0.5)
    assert judged(0, 0.0) == [False] * 4
    assert judged(0, 1.0) == [True] * 4
    config = VerificationConfig(mode="sample", sample_rate=0.0, claim_extraction="rules")
    report = verifier(llm=FakeLLM(), config=config).verify(ANSWER, SOURCES)  # type: ignore[arg-type]
    assert report.checks["llm_direct"].status == "skipped"


def test_critical_only_mode_picks_claims_with_specifics_or_citations() -> None:
    config = VerificationConfig(mode="critical_only", claim_extraction="rules")
    answer = ANSWER + " He enjoys gardening with his grandchildren in the summer."
    report = verifier(llm=FakeLLM(), config=config).verify(answer, SOURCES)  # type: ignore[arg-type]
    checked = {c.claim_text: c.llm_checked for c in report.claims}
    assert checked["He takes metformin 500 mg twice daily."]
    assert not checked["He enjoys gardening with his grandchildren in the summer."]


def test_evidence_dependence_by_scrubbing() -> None:
    # Without the evidence the model says the very claim: the claim does not need it.
    llm = FakeLLM(without="He was started on insulin glargine at bedtime.")
    config = VerificationConfig(mode="sample", sample_rate=0.0, claim_extraction="rules")
    v = verifier(llm=llm, embedder=FakeEmbedder(), config=config)  # type: ignore[arg-type]
    report = v.verify(ANSWER, SOURCES, question="What does he take?")
    assert report.checks["dependence"].status == "ok"
    assert report.evidence_dependence is not None
    assert 0.0 <= report.evidence_dependence <= 1.0
    insulin = [c for c in report.claims if "insulin" in c.claim_text][0]
    assert insulin.evidence_dependence == pytest.approx(0.0, abs=1e-4)
    assert any(
        g.gap_type == "evidence_independent" and g.claim_id == insulin.claim_id for g in report.gaps
    )
    metformin = report.claims[0]
    assert metformin.consistency_score == pytest.approx(1.0, abs=1e-4)
    assert metformin.evidence_dependence is not None
    assert metformin.evidence_dependence > 0.3


def test_dependence_needs_a_question_and_an_embedder() -> None:
    config = VerificationConfig(sample_rate=0.0, claim_extraction="rules")
    no_question = verifier(llm=FakeLLM(), embedder=FakeEmbedder(), config=config)  # type: ignore[arg-type]
    assert no_question.verify(ANSWER, SOURCES).checks["dependence"].status == "skipped"
    no_embedder = verifier(llm=FakeLLM(), config=config)  # type: ignore[arg-type]
    report = no_embedder.verify(ANSWER, SOURCES, question="q?")
    assert report.checks["dependence"].status == "unavailable"


def test_llm_claims_are_aligned_and_invented_numbers_dropped() -> None:
    claims = (
        "1. He takes metformin 500 mg twice daily.\n"
        "2. His HbA1c was 9.9%.\n"  # invented number: dropped
        "3. He was started on insulin glargine at bedtime.\n"
        "4. The weather was sunny on Tuesday in Paris."  # matches nothing: dropped
    )
    config = VerificationConfig(sample_rate=0.0)
    report = verifier(llm=FakeLLM(claims=claims), config=config).verify(ANSWER, SOURCES)  # type: ignore[arg-type]
    assert report.claim_extraction == "llm"
    assert [c.claim_text for c in report.claims] == [
        "He takes metformin 500 mg twice daily.",
        "He was started on insulin glargine at bedtime.",
    ]
    assert report.claims[0].cited_ids == ("note-1",)


def test_verify_claim_single() -> None:
    config = VerificationConfig(mode="sample", sample_rate=0.0)
    v = verifier(llm=FakeLLM(score="0.5"), config=config)  # type: ignore[arg-type]
    result = v.verify_claim("He takes metformin 500 mg twice daily.", NOTE.text)
    assert result.llm_checked  # the single-claim check always asks the judge
    assert result.llm_support == 0.5
    assert result.evidence_ids == ("e1",)


def test_gap_bits_formula() -> None:
    assert gap_bits_from_probability(1.0) == 0.0
    assert gap_bits_from_probability(0.5) == pytest.approx(1.0)
    assert gap_bits_from_probability(0.0) == pytest.approx(10.0)
    assert math.isfinite(gap_bits_from_probability(1e-30))


# --- privacy -----------------------------------------------------------------------------


def test_patient_text_never_reaches_the_logs(caplog: pytest.LogCaptureFixture) -> None:
    secret = "Zanthoxylum Quibblesworth"
    answer = f"{secret} takes metformin 500 mg twice daily [note-1]. " + ANSWER
    sources = [SourceChunk(id="note-1", text=NOTE.text + f" Patient {secret}."), LAB, VISIT]
    config = VerificationConfig(mode="full")
    caplog.set_level(logging.DEBUG)
    for llm in (FakeLLM(), FakeLLM(error=LLMUnavailableError("down")), FakeLLM(score="?")):
        v = verifier(llm=llm, embedder=FakeEmbedder(), config=config)  # type: ignore[arg-type]
        v.verify(answer, sources, question=f"How is {secret}?")
    verifier(grounding=FakeGrounder(fail=True)).verify(answer, sources)
    verifier().verify("short " + secret, sources)
    assert caplog.records  # something was logged
    assert secret.split()[0] not in caplog.text
    assert "metformin" not in caplog.text


# --- command line (input errors are caught before any model loads) -----------------------


def _run(args: list[str]) -> Any:
    from core.cli import app

    return CliRunner().invoke(app, ["verify", *args])


def test_cli_rejects_bad_sources(tmp_path: Path) -> None:
    answer = tmp_path / "answer.txt"
    answer.write_text(ANSWER, encoding="utf-8")
    bad = tmp_path / "sources.json"
    bad.write_text('[{"id": "s-1"}]', encoding="utf-8")
    result = _run([str(answer), "--source", str(bad), "--json"])
    assert result.exit_code == 2
    out = json.loads(result.stdout)
    assert out["error"] == "invalid_sources"
    assert "[0].text" in out["message"]
    broken = tmp_path / "broken.json"
    broken.write_text("[{", encoding="utf-8")
    result = _run([str(answer), "--source", str(broken), "--json"])
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"] == "invalid_json"
    dup = tmp_path / "dup.json"
    dup.write_text('[{"id": "a", "text": "x"}, {"id": "a", "text": "y"}]', encoding="utf-8")
    result = _run([str(answer), "--source", str(dup), "--json"])
    assert result.exit_code == 2
    assert "duplicate source id" in json.loads(result.stdout)["message"]


def test_cli_usage_errors(tmp_path: Path) -> None:
    source = tmp_path / "note.txt"
    source.write_text(NOTE.text, encoding="utf-8")
    missing = _run([str(tmp_path / "nope.txt"), "--source", str(source), "--json"])
    assert missing.exit_code == 1
    assert "file not found" in json.loads(missing.stdout)["message"]
    bad_mode = _run([str(source), "--source", str(source), "--mode", "all", "--json"])
    assert bad_mode.exit_code == 1
    assert "--mode" in json.loads(bad_mode.stdout)["message"]
    assert NOTE.text not in missing.stdout + bad_mode.stdout


def test_claim_audit_reads_negation_as_the_fact_checks_do() -> None:
    # one engine (core.assertion.denies): "pain free" denies as "no pain" does
    assert (
        compare_specifics(
            "Chest pain free since Monday.", ["She has had no chest pain since Monday."]
        ).kind
        == "ok"
    )
    ok = "She stopped metformin last month, no side effects since."
    assert compare_specifics("She stopped taking metformin last month.", [ok]).kind == "ok"
    # a question takes the polarity of its reply, read by the same engine
    asked = "Doctor: Any chest pain? Patient: No, none at all."
    assert compare_specifics("He has chest pain.", [asked]).kind == "conflict"
    said = "Doctor: Any chest pain? Patient: Yeah, a little, mostly at night."
    assert compare_specifics("He has chest pain.", [said]).kind == "ok"
