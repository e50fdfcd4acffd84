"""Spec 054 schema validation and spec 053 quote grounding: behaviour and privacy."""

from __future__ import annotations

import json
import logging

import pytest
from rapidfuzz import fuzz

from core.evidence import (
    FAILURE_CATEGORY,
    PHQ8_KEYS,
    EvidenceGrounder,
    EvidenceGroundingError,
    EvidenceSchemaError,
    ValidatedEvidence,
    normalize_for_quote_match,
    normalize_with_offsets,
    validate_evidence_grounding,
    validate_evidence_schema,
)

# --- spec 054: schema ---------------------------------------------------------------------


def test_complete_phq8_object_passes_unchanged() -> None:
    obj: dict[str, list[str]] = {key: [] for key in PHQ8_KEYS} | {
        "PHQ8_NoInterest": ["nothing is fun", "I stopped painting"],
        "PHQ8_Sleep": ["I wake at four"],
    }
    result = validate_evidence_schema(obj)
    assert result["PHQ8_NoInterest"] == ["nothing is fun", "I stopped painting"]
    assert result["PHQ8_Sleep"] == ["I wake at four"]
    assert result["PHQ8_Depressed"] == []
    assert result.warnings == ()
    assert result.quote_count == 3


def test_absent_and_null_keys_become_empty_lists() -> None:
    result = validate_evidence_schema({"PHQ8_Tired": ["worn out"], "PHQ8_Appetite": None})
    assert result.keys() == list(PHQ8_KEYS)
    assert result["PHQ8_Tired"] == ["worn out"]
    assert result["PHQ8_Appetite"] == []
    assert result["PHQ8_Moving"] == []


@pytest.mark.parametrize(
    ("value", "type_name"),
    [
        ("a sentence instead of a list", "str"),
        ({"quote": "nested"}, "dict"),
        (42, "int"),
        (4.5, "float"),
        (True, "bool"),
    ],
)
def test_non_list_value_is_a_violation_naming_the_type(value: object, type_name: str) -> None:
    with pytest.raises(EvidenceSchemaError) as info:
        validate_evidence_schema({"PHQ8_Sleep": value})
    reason = info.value.violations["PHQ8_Sleep"]
    assert reason.startswith("Expected list")
    assert type_name in reason


@pytest.mark.parametrize("bad", [123, True, None, ["nested"], {"a": 1}, 1.5])
def test_non_string_element_is_a_violation_naming_its_index(bad: object) -> None:
    with pytest.raises(EvidenceSchemaError) as info:
        validate_evidence_schema({"PHQ8_Concentrating": ["fine", bad]})
    assert "element 1" in info.value.violations["PHQ8_Concentrating"]


def test_blank_strings_dropped_and_duplicates_removed_in_first_order() -> None:
    obj = {"PHQ8_Failure": ["  b  ", "a", "   ", "", "b", "\ta\n", "c"]}
    result = validate_evidence_schema(obj)
    assert result["PHQ8_Failure"] == ["b", "a", "c"]
    assert result.dropped_blank == 2
    assert result.dropped_duplicates == 2


def test_all_violations_are_collected_in_one_error() -> None:
    obj = {"PHQ8_NoInterest": "one", "PHQ8_Depressed": 2, "PHQ8_Sleep": [], "PHQ8_Tired": [None]}
    with pytest.raises(EvidenceSchemaError) as info:
        validate_evidence_schema(obj)
    assert set(info.value.violations) == {"PHQ8_NoInterest", "PHQ8_Depressed", "PHQ8_Tired"}
    assert "3" in str(info.value)


@pytest.mark.parametrize(
    ("obj", "name"), [([], "list"), ("text", "str"), (None, "null"), (3, "int")]
)
def test_non_object_top_level_is_a_root_violation(obj: object, name: str) -> None:
    with pytest.raises(EvidenceSchemaError) as info:
        validate_evidence_schema(obj)
    assert list(info.value.violations) == ["__root__"]
    assert name in info.value.violations["__root__"]


def test_unknown_keys_are_warned_about_not_dropped_in_silence() -> None:
    result = validate_evidence_schema({"PHQ8_Sleep": ["x"], "PHQ9_Suicide": ["y", "z"]})
    assert result.unknown_keys == ("PHQ9_Suicide",)
    assert len(result.warnings) == 1
    assert "PHQ9_Suicide" in result.warnings[0]
    assert "2 value(s)" in result.warnings[0]
    assert "PHQ9_Suicide" not in result.evidence


def test_any_keys_mode_keeps_every_string_key() -> None:
    result = validate_evidence_schema({"mood": ["low"], "sleep": None}, keys=None)
    assert result.evidence == {"mood": ["low"], "sleep": []}
    assert result.warnings == ()


def test_custom_key_set() -> None:
    result = validate_evidence_schema({"a": ["1"]}, keys=("a", "b"))
    assert result.evidence == {"a": ["1"], "b": []}


def test_violation_reasons_never_echo_the_value() -> None:
    secret = "my husband hits me when he drinks"
    with pytest.raises(EvidenceSchemaError) as info:
        validate_evidence_schema({"PHQ8_Sleep": secret, "PHQ8_Tired": ["ok", {"q": secret}]})
    assert secret not in json.dumps(info.value.violations)
    assert secret not in str(info.value)


def test_validated_evidence_to_dict_is_json_safe() -> None:
    result = validate_evidence_schema({"PHQ8_Sleep": ["x"], "bogus": []})
    data = json.loads(json.dumps(result.to_dict()))
    assert data["evidence"]["PHQ8_Sleep"] == ["x"]
    assert data["unknown_keys"] == ["bogus"]


# --- spec 053: normalisation ----------------------------------------------------------------


def test_normalisation_rules() -> None:
    text = "\ufeffI\u2019m  \u201cfine\u201d\u00a0<laughter>\n\tOK\u200b\u200c\u200d ＡＢ"
    assert normalize_for_quote_match(text) == 'i\'m "fine" ok ab'


def test_offset_map_points_back_into_the_original() -> None:
    original = "Doctor: Hi.\n\nPatient: I can\u2019t   sleep <sigh> at NIGHT."
    norm = normalize_with_offsets(original)
    assert norm.text == normalize_for_quote_match(original)
    pos = norm.text.index("i can't sleep at night")
    start, end = norm.original_span(pos, pos + len("i can't sleep at night"))
    assert original[start:end] == "I can\u2019t   sleep <sigh> at NIGHT"


def test_offsets_survive_length_changing_characters() -> None:
    original = "\u0130stanbul \ufb01ne e\u0301te \u2460 done"  # dotted I, fi ligature, combining
    norm = normalize_with_offsets(original)
    assert norm.text == normalize_for_quote_match(original)
    assert len(norm.starts) == len(norm.text)
    pos = norm.text.index("done")
    start, end = norm.original_span(pos, pos + 4)
    assert original[start:end] == "done"
    pos = norm.text.index("fine")
    start, end = norm.original_span(pos, pos + 4)
    assert original[start:end] == "\ufb01ne"


# --- spec 053: grounding (the spec's cases in our words, then more) --------------------------


def test_verbatim_quote_is_grounded_with_its_span() -> None:
    transcript = "Patient said: I can't sleep at night. Very tired."
    result = validate_evidence_grounding({"PHQ8_Sleep": ["I can't sleep at night"]}, transcript)
    assert result.validated["PHQ8_Sleep"] == ["I can't sleep at night"]
    assert result.stats.rejected_count == 0
    (match,) = result.matches
    assert (match.grounded, match.method, match.score) == (True, "substring", 1.0)
    assert transcript[match.start : match.end] == "I can't sleep at night"


def test_invented_quote_is_rejected_and_counted_per_domain() -> None:
    transcript = "I've been feeling okay lately. Work is going well."
    result = validate_evidence_grounding(
        {"PHQ8_Depressed": ["I feel hopeless and worthless"], "PHQ8_Sleep": []}, transcript
    )
    assert result.validated == {"PHQ8_Depressed": [], "PHQ8_Sleep": []}
    assert result.rejected["PHQ8_Depressed"] == ["I feel hopeless and worthless"]
    assert result.stats.rejected_by_domain == {"PHQ8_Depressed": 1, "PHQ8_Sleep": 0}
    match = result.matches[0]
    assert match.method is None
    assert 0.0 < match.score < 1.0
    assert match.start is not None
    assert match.end is not None


def test_whitespace_and_case_differences_are_tolerated() -> None:
    transcript = "i can't sleep at all and I feel tired all the time"
    result = validate_evidence_grounding(
        {"PHQ8_Tired": ["I feel   tired"], "PHQ8_Sleep": ["I CAN'T SLEEP"]}, transcript
    )
    assert result.stats.validated_count == 2


def test_smart_quotes_tags_and_nbsp_in_transcript_still_match() -> None:
    transcript = "Well\u2026 I can\u2019t <laughter> really\u00a0focus on anything."
    result = validate_evidence_grounding(
        {"PHQ8_Concentrating": ["I can't really focus"]}, transcript
    )
    assert result.stats.validated_count == 1
    m = result.matches[0]
    assert transcript[m.start : m.end] == "I can\u2019t <laughter> really\u00a0focus"


def test_paraphrase_rejected_in_substring_mode_accepted_in_fuzzy_mode() -> None:
    transcript = "Patient: I cant sleep at night, I'm up at 4 every day."
    evidence = {"PHQ8_Sleep": ["I can't sleep at night"]}
    strict = validate_evidence_grounding(evidence, transcript)
    assert strict.stats.validated_count == 0
    fuzzy = validate_evidence_grounding(evidence, transcript, mode="fuzzy", fuzzy_threshold=0.9)
    assert fuzzy.stats.validated_count == 1
    m = fuzzy.matches[0]
    assert m.method == "fuzzy"
    assert 0.9 <= m.score < 1.0
    assert "sleep at night" in transcript[m.start : m.end]


def test_fuzzy_threshold_is_inclusive() -> None:
    transcript = "zz abcdefghij zz"
    # one substitution in a 10-character window: partial_ratio = 90.0 exactly
    evidence = {"k": ["abcdxfghij"]}
    assert fuzz.partial_ratio("abcdxfghij", transcript) == 90.0
    at = validate_evidence_grounding(evidence, transcript, mode="fuzzy", fuzzy_threshold=0.9)
    above = validate_evidence_grounding(evidence, transcript, mode="fuzzy", fuzzy_threshold=0.91)
    assert at.matches[0].score == pytest.approx(0.9)
    assert at.stats.validated_count == 1
    assert above.stats.validated_count == 0


def test_quote_that_normalises_to_nothing_is_rejected() -> None:
    result = validate_evidence_grounding({"k": ["<laughter>"]}, "some <laughter> text")
    assert result.stats.rejected_count == 1
    assert result.matches[0].start is None


def test_all_rejected_records_a_failure_event() -> None:
    transcript = "The weather was nice."
    result = validate_evidence_grounding({"PHQ8_Depressed": ["I want to die"]}, transcript)
    assert result.all_rejected
    event = result.failure_event
    assert event is not None
    assert event.category == FAILURE_CATEGORY == "EVIDENCE_HALLUCINATION"
    assert event.severity == "error"
    assert event.extracted_count == 1
    assert event.validation_mode == "substring"
    assert event.transcript_length == len(transcript)
    assert len(event.transcript_hash) == 12
    assert "I want to die" not in json.dumps(event.to_dict())


def test_no_failure_event_when_something_is_grounded_or_nothing_extracted() -> None:
    partly = validate_evidence_grounding({"k": ["nice", "awful"]}, "It was nice.")
    assert partly.failure_event is None
    empty = validate_evidence_grounding({"k": []}, "It was nice.")
    assert empty.failure_event is None
    assert empty.status.status == "skipped"
    assert partly.status.status == "ok"


def test_strict_mode_raises_with_the_result_attached() -> None:
    grounder = EvidenceGrounder(fail_on_all_rejected=True)
    with pytest.raises(EvidenceGroundingError) as info:
        grounder.check({"PHQ8_Sleep": ["never said"]}, "Something else entirely.")
    assert info.value.result.failure_event is not None
    assert info.value.result.stats.rejected_count == 1
    assert "never said" not in str(info.value)


def test_strict_mode_does_not_raise_when_one_quote_is_grounded() -> None:
    grounder = EvidenceGrounder(fail_on_all_rejected=True)
    result = grounder.check({"a": ["never said", "else"]}, "Something else entirely.")
    assert result.stats.validated_count == 1


def test_prepared_transcript_gives_the_same_result() -> None:
    transcript = "Patient: I have no energy. I sleep all day."
    grounder = EvidenceGrounder(mode="fuzzy")
    evidence = {"PHQ8_Tired": ["no energy", "no enrgy at all"]}
    assert grounder.check(evidence, transcript) == grounder.check(
        evidence, grounder.prepare(transcript)
    )


def test_validated_evidence_warnings_flow_into_the_result() -> None:
    checked = validate_evidence_schema({"PHQ8_Sleep": ["sleep"], "extra": []})
    result = EvidenceGrounder().check(checked, "I sleep badly")
    assert any("unknown key" in w for w in result.warnings)


def test_empty_transcript_rejects_everything_with_a_warning() -> None:
    result = validate_evidence_grounding({"k": ["anything"]}, "   <noise>  ")
    assert result.all_rejected
    assert "transcript is empty after normalisation" in result.warnings


def test_locate_rejected_off_leaves_rejected_quotes_without_span() -> None:
    result = validate_evidence_grounding(
        {"k": ["zebra crossing"]}, "A quiet day at home.", locate_rejected=False
    )
    assert result.matches[0].start is None
    assert result.matches[0].score == 0.0


def test_malformed_evidence_is_refused_by_the_grounder() -> None:
    with pytest.raises(EvidenceSchemaError) as info:
        EvidenceGrounder().check({"k": "not a list"}, "text")
    assert "k" in info.value.violations
    with pytest.raises(EvidenceSchemaError):
        EvidenceGrounder().check(["x"], "text")  # type: ignore[arg-type]


@pytest.mark.parametrize("threshold", [0.0, -0.1, 1.01])
def test_invalid_threshold_is_refused(threshold: float) -> None:
    with pytest.raises(ValueError, match="threshold"):
        EvidenceGrounder(mode="fuzzy", threshold=threshold)


def test_invalid_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="mode"):
        EvidenceGrounder(mode="semantic")  # type: ignore[arg-type]


def test_result_dicts_are_json_safe_and_storage_has_no_text() -> None:
    transcript = "I barely eat anything these days."
    result = validate_evidence_grounding(
        {"PHQ8_Appetite": ["I barely eat", "I binge every night"]}, transcript
    )
    data = json.loads(json.dumps(result.to_dict()))
    assert set(data) >= {"validated", "rejected", "matches", "stats"}
    assert set(data["matches"][0]) >= {"key", "quote", "grounded", "method", "score", "start"}
    row = result.to_storage_dict()
    assert row == {
        "transcript_hash": result.transcript_hash,
        "transcript_len": len(transcript),
        "mode": "substring",
        "status": "ok",
        "extracted_count": 2,
        "validated_count": 1,
        "rejected_count": 1,
        "rejected_by_domain": {"PHQ8_Appetite": 1},
        "failure_category": None,
    }
    dumped = json.dumps(row)
    assert "eat" not in dumped
    assert "binge" not in dumped


def test_results_are_frozen() -> None:
    result = validate_evidence_grounding({"k": ["a"]}, "a")
    with pytest.raises(AttributeError):
        result.mode = "fuzzy"  # type: ignore[misc]
    assert isinstance(validate_evidence_schema({}), ValidatedEvidence)


# --- privacy --------------------------------------------------------------------------------

SECRET_TRANSCRIPT = (
    "Patient: Since the divorce I drink vodka every morning and I think about ending it. "
    "Doctor: Thank you for telling me."
)
SECRET_QUOTES = {
    "PHQ8_Depressed": ["I think about ending it", "I hate my sister Margaret"],
    "PHQ8_Appetite": ["vodka every mornin"],
    "weird key with spaces": ["Margaret stole my pills"],
}


def _all_log_text(records: list[logging.LogRecord]) -> str:
    return "\n".join(r.getMessage() + repr(r.args) + repr(r.__dict__) for r in records)


@pytest.mark.parametrize("mode", ["substring", "fuzzy"])
@pytest.mark.parametrize("strict", [False, True])
def test_no_quote_or_transcript_text_in_any_log_record(
    caplog: pytest.LogCaptureFixture, mode: str, strict: bool
) -> None:
    caplog.set_level(logging.DEBUG)
    grounder = EvidenceGrounder(mode=mode, fail_on_all_rejected=strict)  # type: ignore[arg-type]
    checked = validate_evidence_schema(SECRET_QUOTES, keys=None)
    grounder.check(checked, SECRET_TRANSCRIPT)
    with pytest.raises(EvidenceGroundingError):
        EvidenceGrounder(mode=mode, fail_on_all_rejected=True).check(  # type: ignore[arg-type]
            {"k": ["Margaret stole my pills"]}, SECRET_TRANSCRIPT
        )
    with pytest.raises(EvidenceSchemaError):
        validate_evidence_schema({"PHQ8_Sleep": "Margaret stole my pills", "Margaret x": 1})
    assert caplog.records, "expected log records to inspect"
    logged = _all_log_text(caplog.records)
    for text in ["Margaret", "vodka", "divorce", "ending it", "sister", "pills", "weird key"]:
        assert text not in logged
    assert "quote_hash=" in logged
    assert "transcript_hash=" in logged


def test_normalisation_is_stable_when_a_removal_exposes_a_combining_mark() -> None:
    # Removing the zero-width space leaves "a" next to a combining acute accent; the steps
    # repeat until stable, so normalising twice changes nothing.
    once = normalize_for_quote_match("A\u200b\u0301 ok")
    assert once == "\u00e1 ok"
    assert normalize_for_quote_match(once) == once
    assert normalize_with_offsets("A\u200b\u0301 ok").text == once


def test_a_lone_surrogate_in_a_transcript_is_text_not_a_crash() -> None:
    from core.evidence import normalize_with_offsets

    norm = normalize_with_offsets("she \ud800  sleeps   badly")
    assert norm.text == "she \ud800 sleeps badly"
    result = EvidenceGrounder().check({"k": ["sleeps badly"]}, norm)
    assert result.stats.validated_count == 1


def test_a_free_text_key_is_named_by_its_hash_in_errors() -> None:
    from core.evidence import EvidenceSchemaError, validate_evidence_schema

    secret = "Patient Jane Roe said her husband hits her"
    with pytest.raises(EvidenceSchemaError) as info:
        validate_evidence_schema({secret: 5, "PHQ8_Sleep": 3}, keys=None)
    assert secret not in json.dumps(info.value.violations)
    assert "PHQ8_Sleep" in info.value.violations
    assert any(k.startswith("key#") for k in info.value.violations)
