"""Cross-query consistency against a patient's timeline (rules, score, optional tiers)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from core.backends.nli import NLIScores
from core.consistency import (
    ConsistencyChecker,
    Contradiction,
    PatientTimeline,
    TimelineEntry,
    consistency_score,
    timeline_entries,
)

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
HISTORY = [
    (
        "c1",
        "Medications: metformin 500 mg b.i.d., lisinopril 10 mg daily, atorvastatin 40 mg "
        "nightly. Allergic to penicillin and sulfa. Patient has type 2 diabetes and HTN. "
        "Former smoker. BP 140/90, HbA1c 8.1%.",
    ),
    ("c2", "Metformin was discontinued due to GI upset. BP 128/80. HbA1c 7.4%."),
]


def rows(patient: str = "p1") -> list[TimelineEntry]:
    out: list[TimelineEntry] = []
    for day, (conv, text) in enumerate(HISTORY):
        out += timeline_entries(
            text, patient_id=patient, conversation_id=conv, timestamp=T0 + timedelta(days=day)
        )
    return out


AT = T0 + timedelta(days=10)


def check(text: str, entries: Sequence[TimelineEntry] | None = None, **kw: object):
    checker = ConsistencyChecker(**kw)  # type: ignore[arg-type]
    return checker.check(text, rows() if entries is None else entries, at=AT, patient_id="p1")


def types(result) -> list[tuple[str, str, str]]:
    return [(c.entity, c.check_type, c.severity) for c in result.contradictions]


def test_discontinued_drug_listed_as_current() -> None:
    r = check("She takes metformin 500 mg b.i.d. and lisinopril 10 mg daily.")
    assert types(r) == [("medication:metformin", "temporal_consistency", "high")]
    c = r.contradictions[0]
    assert c.previous_conversation_id == "c2"
    assert "discontinued" in c.previous_statement
    assert "metformin" in c.current_statement
    assert not r.is_consistent
    assert r.consistency_score == pytest.approx(0.5)


def test_restarted_drug_is_not_a_contradiction() -> None:
    r = check("Metformin was restarted at 500 mg b.i.d.")
    assert r.contradictions == ()
    assert r.is_consistent
    assert r.consistency_score == 1.0


def test_chronic_diagnosis_denied() -> None:
    r = check("No history of diabetes.")
    assert types(r) == [("condition:type 2 diabetes mellitus", "semantic_consistency", "high")]
    assert r.contradictions[0].previous_conversation_id == "c1"


def test_non_chronic_condition_may_resolve() -> None:
    entries = timeline_entries(
        "Treated for pneumonia.", patient_id="p1", conversation_id="a", timestamp=T0
    )
    assert check("No pneumonia now.", entries).contradictions == ()


def test_allergy_denied_is_critical() -> None:
    r = check("NKDA.")
    assert sorted(types(r)) == [
        ("allergy:penicillin", "temporal_consistency", "critical"),
        ("allergy:sulfonamide", "temporal_consistency", "critical"),
    ]
    assert r.consistency_score == pytest.approx(0.25 * 0.25)


def test_allergy_silently_vanishes_from_list() -> None:
    r = check("Allergies: penicillin.")
    assert types(r) == [("allergy:sulfonamide", "entity_consistency", "medium")]


def test_medication_list_mismatch() -> None:
    entries = timeline_entries(
        "Medications: metformin 500 mg b.i.d., lisinopril 10 mg daily, atorvastatin 40 mg nightly.",
        patient_id="p1",
        conversation_id="m1",
        timestamp=T0,
    )
    r = check(
        "Current medications: metformin 500 mg b.i.d., lisinopril 10 mg daily, "
        "aspirin 81 mg daily.",
        entries,
    )
    assert types(r) == [("medication:atorvastatin", "entity_consistency", "medium")]
    # a stopped drug may leave the list
    entries += timeline_entries(
        "Atorvastatin was stopped.",
        patient_id="p1",
        conversation_id="m2",
        timestamp=T0 + timedelta(days=1),
    )
    r = check(
        "Current medications: metformin 500 mg b.i.d., lisinopril 10 mg daily, "
        "aspirin 81 mg daily.",
        entries,
    )
    assert r.contradictions == ()


def test_dose_change_needs_an_explicit_action() -> None:
    r = check("Lisinopril 20 mg daily.")
    assert types(r) == [("medication:lisinopril", "entity_consistency", "medium")]
    assert "20 mg vs 10 mg" in r.contradictions[0].explanation
    assert check("Lisinopril was increased to 20 mg daily.").contradictions == ()


def test_vitals_and_labs_may_change() -> None:
    r = check("BP 150/95. HbA1c 6.9%. Lisinopril 10 mg daily.")
    assert r.contradictions == ()
    assert r.status.status == "ok"


def test_smoking_denied_after_former() -> None:
    r = check("Never smoker.")
    assert types(r) == [("smoking:tobacco", "semantic_consistency", "medium")]


def test_drug_class_denied_while_member_active() -> None:
    entries = timeline_entries(
        "Warfarin 5 mg daily.", patient_id="p1", conversation_id="w", timestamp=T0
    )
    r = check("Not on any anticoagulants.", entries)
    assert types(r) == [("medication:warfarin", "semantic_consistency", "high")]


def test_other_patients_are_ignored() -> None:
    mixed = rows("p1") + timeline_entries(
        "Warfarin 5 mg daily. Allergic to latex.",
        patient_id="p2",
        conversation_id="x",
        timestamp=T0,
    )
    r = ConsistencyChecker().check(
        "Not on any anticoagulants. NKDA.", mixed, at=AT, patient_id="p1"
    )
    assert {c.entity for c in r.contradictions} == {"allergy:penicillin", "allergy:sulfonamide"}


def test_mixed_patients_without_patient_id_is_an_error() -> None:
    mixed = rows("p1") + rows("p2")
    with pytest.raises(ValueError, match="2 patients"):
        ConsistencyChecker().check("NKDA.", mixed, at=AT)


def test_only_earlier_rows_count() -> None:
    r = ConsistencyChecker().check("NKDA.", rows(), at=T0 - timedelta(days=1), patient_id="p1")
    assert r.contradictions == ()
    assert r.status.status == "skipped"
    assert r.status.reason == "no earlier answers for this patient"


def test_own_conversation_is_excluded() -> None:
    r = ConsistencyChecker().check("NKDA.", rows(), at=AT, patient_id="p1", conversation_id="c1")
    assert r.contradictions == ()  # the allergies were only stated in c1


def test_empty_timeline_is_skipped_not_silent() -> None:
    r = ConsistencyChecker().check("Metformin 500 mg b.i.d.", [], at=AT)
    assert r.is_consistent
    assert r.consistency_score == 1.0
    assert r.status.status == "skipped"


def test_prebuilt_timeline_and_mentions() -> None:
    tl = PatientTimeline.build(rows(), patient_id="p1", before=AT)
    assert tl.states[("medication", "metformin")].status == "stopped"
    assert tl.states[("allergy", "penicillin")].status == "present"
    assert tl.n_conversations == 2
    from core.clinical import extract_mentions

    r = ConsistencyChecker().check(extract_mentions("NKDA."), tl)
    assert len(r.contradictions) == 2


def test_semantic_tier_unavailable_without_backend() -> None:
    r = check("Lisinopril 10 mg daily.")
    assert r.checks["semantic"].status == "unavailable"
    assert r.checks["rules"].status == "ok"


class FakeNLI:
    def __init__(self, contradiction: float) -> None:
        self.value = contradiction
        self.pairs: list[tuple[str, str]] = []

    def predict(self, pairs: Sequence[tuple[str, str]]) -> NLIScores:
        self.pairs += list(pairs)
        n = len(pairs)
        c = np.full(n, self.value)
        return NLIScores(entailment=1 - c, contradiction=c, neutral=np.zeros(n))


def test_semantic_tier_nli_adds_contradiction() -> None:
    nli = FakeNLI(0.97)
    r = check("Lisinopril 10 mg daily.", nli=nli)
    assert r.checks["semantic"].status == "ok"
    assert types(r) == [("medication:lisinopril", "semantic_consistency", "medium")]
    assert nli.pairs
    assert "lisinopril" in nli.pairs[0][0].lower()
    assert check("Lisinopril 10 mg daily.", nli=FakeNLI(0.2)).contradictions == ()


class BrokenNLI:
    def predict(self, pairs: Sequence[tuple[str, str]]) -> NLIScores:
        raise RuntimeError("model exploded")


def test_semantic_tier_failure_is_reported() -> None:
    r = check("Lisinopril 10 mg daily.", nli=BrokenNLI())
    assert r.checks["semantic"].status == "failed"
    assert "RuntimeError" in (r.checks["semantic"].reason or "")
    assert r.checks["rules"].status == "ok"
    # the whole check is stored as failed, never ok, when one of its tiers failed
    assert r.status.status == "failed"
    assert "semantic tier" in (r.status.reason or "")


class FakeLLM:
    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.calls = 0

    def chat(self, messages, *, temperature=None, max_tokens=None, seed=None):
        self.calls += 1

        class R:
            text = self.reply

        return R()


def test_semantic_tier_llm() -> None:
    llm = FakeLLM("CONTRADICTION")
    r = check("Lisinopril 10 mg daily.", llm=llm)
    assert llm.calls == 1
    assert types(r) == [("medication:lisinopril", "semantic_consistency", "medium")]
    assert check("Lisinopril 10 mg daily.", llm=FakeLLM("CONSISTENT")).contradictions == ()
    off = check("Lisinopril 10 mg daily.", llm=llm, semantic="off")
    assert off.checks["semantic"].status == "skipped"


def test_score_definition() -> None:
    def c(sev: str) -> Contradiction:
        return Contradiction("a", "b", "c", "entity_consistency", sev, "x", "e")  # type: ignore[arg-type]

    assert consistency_score([]) == 1.0
    assert consistency_score([c("low")]) == pytest.approx(0.9)
    assert consistency_score([c("medium")]) == pytest.approx(0.75)
    assert consistency_score([c("high"), c("critical")]) == pytest.approx(0.5 * 0.25)


def test_result_to_dict_is_json_safe() -> None:
    import json

    r = check("NKDA. She takes metformin 500 mg b.i.d.")
    data = json.loads(json.dumps(r.to_dict()))
    assert data["contradictions"][0]["previous_timestamp"].startswith("2026-01-0")
    assert json.dumps([e.to_dict() for e in rows()])


def test_invalid_options() -> None:
    with pytest.raises(ValueError, match="nli_threshold"):
        ConsistencyChecker(nli_threshold=0)
    with pytest.raises(ValueError, match="min_list_size"):
        ConsistencyChecker(min_list_size=0)


def test_no_patient_text_in_logs(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        r = ConsistencyChecker(nli=BrokenNLI()).check(  # type: ignore[arg-type]
            "Zyxwvut takes metformin 500 mg b.i.d.", rows(), at=AT, patient_id="p1"
        )
    assert r.contradictions
    assert caplog.records  # something was logged, but no text
    assert "Zyxwvut" not in caplog.text
    assert "metformin" not in caplog.text.lower()
    assert "p1" not in caplog.text
