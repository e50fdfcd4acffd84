"""The kind and severity table of flagged statements (core/severity.py, docs/severity.md)."""

from __future__ import annotations

import pytest

from core.severity import (
    KINDS,
    SEVERITIES,
    SEVERITY_TABLE,
    EarlierConflict,
    classify,
    kind_label,
    rule_for,
    severity_rank,
)


def test_every_kind_has_a_catch_all_row_and_every_severity_is_known() -> None:
    for kind in KINDS:
        assert rule_for(kind, "other").kind == kind
    assert {r.severity for r in SEVERITY_TABLE} <= set(SEVERITIES)
    assert severity_rank("critical") > severity_rank("high") > severity_rank("medium")
    assert severity_rank("medium") > severity_rank("low") > severity_rank(None) == 0
    assert kind_label(None) == "unclassified"
    assert kind_label("invented") == "invented content"


def test_an_anticoagulant_dose_conflict_is_critical() -> None:
    c = classify(
        status="contradicted",
        statement="She takes warfarin 10 mg daily.",
        reason="dose differs: 10 mg vs 5 mg",
        evidence="Warfarin 5 mg daily.",
    )
    assert c is not None
    assert (c.kind, c.severity, c.subject) == ("number", "critical", "high_alert_drug")


def test_a_brand_name_anticoagulant_dose_from_the_learned_signals_is_critical() -> None:
    c = classify(
        status="contradicted",
        statement="He takes Eliquis 10 mg twice daily.",
        reason="the note says something else",  # wording the kind does not depend on
        evidence="Apixaban 5 mg twice daily.",
        signals=(("model", 0.2), ("conflict_numbers", 1.0), ("conflict_negation", 0.0)),
    )
    assert c is not None
    assert (c.kind, c.severity, c.basis) == ("number", "critical", "signals")


def test_a_dose_conflict_of_an_ordinary_drug_is_high() -> None:
    c = classify(
        status="contradicted",
        statement="The patient takes metformin 1000 mg twice daily.",
        reason="dose differs: 1000 mg vs 500 mg",
        evidence="metformin 500 mg twice daily",
    )
    assert c is not None
    assert (c.kind, c.severity) == ("number", "high")


def test_a_denied_allergy_is_critical() -> None:
    c = classify(
        status="contradicted",
        statement="She has no known drug allergies.",
        reason="negation differs: the statement denies known drug allergies, the source says it",
        evidence="Allergies: sulfa (rash).",
    )
    assert c is not None
    assert (c.kind, c.severity) == ("allergy", "critical")


def test_an_invented_social_history_detail_is_low_or_medium() -> None:
    c = classify(
        status="unsupported",
        statement="She lives alone with two cats and enjoys gardening.",
        reason="the sources do not bear it out (support 0.10)",
        evidence="Patient lives with her husband.",
    )
    assert c is not None
    assert c.kind == "invented"
    assert c.severity in ("low", "medium")
    smoking = classify(
        status="unsupported",
        statement="He smokes a pack a day.",
        reason="the sources do not bear it out (support 0.20)",
        evidence="No tobacco.",
    )
    assert smoking is not None
    assert smoking.severity in ("low", "medium")


def test_a_laterality_conflict_on_a_procedure_is_high() -> None:
    c = classify(
        status="contradicted",
        statement="He had a left knee replacement in 2019.",
        reason="laterality differs: left vs right knee",
        evidence="Right knee replacement in 2019.",
    )
    assert c is not None
    assert (c.kind, c.severity, c.subject) == ("side", "high", "procedure")
    finding = classify(
        status="contradicted",
        statement="There is swelling of the left ankle.",
        reason="laterality differs: left vs right ankle",
        evidence="Swelling of the right ankle.",
    )
    assert finding is not None
    assert (finding.kind, finding.severity) == ("side", "medium")


def test_a_drug_the_sources_do_not_name_is_a_drug_flag() -> None:
    c = classify(
        status="unsupported",
        statement="The patient also takes prednisone 20 mg once daily.",
        reason="prednisone is not in the source, which names metformin",
        evidence="Metformin 500 mg b.i.d., sertraline 10 mg daily.",
    )
    assert c is not None
    assert (c.kind, c.severity) == ("drug", "high")
    opioid = classify(
        status="unsupported",
        statement="She takes oxycodone at night.",
        reason="drug oxycodone not mentioned in the source",
        evidence="She takes melatonin at night.",
    )
    assert opioid is not None
    assert (opioid.kind, opioid.severity) == ("drug", "critical")


def test_the_learned_signals_name_a_drug_or_a_condition_flag() -> None:
    statement = "She was started on warfarin for her atrial fibrillation."
    evidence = "She takes aspirin for her heart."

    def kind(signal: str, statement: str = statement) -> str:
        found = classify(
            status="unsupported",
            statement=statement,
            evidence=evidence,
            signals=(("model", 0.3), (signal, 1.0)),
        )
        assert found is not None
        assert found.basis == "signals"
        return found.kind

    assert kind("conflict_drugs") == "drug"
    assert kind("conflict_conditions") == "condition"
    # a statement stored when both were one family of names: read from what it names
    assert kind("conflict_names", "She was started on warfarin.") == "drug"
    assert kind("conflict_names", "She has atrial fibrillation.") == "condition"


def test_a_denied_symptom_said_present_is_a_high_negation() -> None:
    c = classify(
        status="contradicted",
        statement="The patient reports chest pain.",
        reason="negation differs: the statement says chest pain, the source denies it",
        evidence="The patient denies chest pain.",
    )
    assert c is not None
    assert (c.kind, c.severity) == ("negation", "high")


def test_a_statement_whose_opposite_the_sources_bear_out_is_a_negation() -> None:
    c = classify(
        status="contradicted",
        statement="The patient denies chest pain.",
        reason="the sources say the opposite: “The patient reports chest pain.”",
        evidence="Patient: yes, I get chest pain on the stairs.",
    )
    assert c is not None
    assert (c.kind, c.severity) == ("negation", "high")


def test_a_negation_the_model_does_not_bear_out_is_not_the_kind() -> None:
    """A negation conflict of the fact checks names the kind only where the learned verifier
    found the statement's opposite the better borne out (as it contradicts only there)."""
    said = "The diplopia continues; a referral to pulmonology was placed."
    evidence = "Patient: the double vision has stopped."
    for opposite, expected in ((2.5, "negation"), (0.0, "invented"), (-0.4, "invented")):
        c = classify(
            status="unsupported",
            statement=said,
            reason="the sources do not bear it out (support 0.04)",
            evidence=evidence,
            signals=(("model", 0.04), ("conflict_negation", 1.0), ("opposite", opposite)),
        )
        assert c is not None
        assert c.kind == expected, opposite
    # stored before the verifier read statements against their opposite: the checks' word
    old = classify(
        status="unsupported",
        statement=said,
        reason="the sources do not bear it out (support 0.04)",
        evidence=evidence,
        signals=(("model", 0.04), ("conflict_negation", 1.0)),
    )
    assert old is not None
    assert old.kind == "negation"


def test_a_condition_the_sources_do_not_name() -> None:
    serious = classify(
        status="unsupported",
        statement="She has a history of lung cancer.",
        reason="condition lung cancer not mentioned in the source",
        evidence="History of asthma.",
    )
    assert serious is not None
    assert (serious.kind, serious.severity) == ("condition", "high")
    mild = classify(
        status="unsupported",
        statement="She has eczema.",
        reason="condition eczema not mentioned in the source",
        evidence="History of asthma.",
    )
    assert mild is not None
    assert (mild.kind, mild.severity) == ("condition", "medium")


def test_a_vital_sign_conflict_is_high() -> None:
    c = classify(
        status="contradicted",
        statement="Blood pressure was 150/90 today.",
        reason="vital sign differs: 150/90 vs 130/80",
        evidence="BP 130/80.",
    )
    assert c is not None
    assert (c.kind, c.severity) == ("number", "high")


def test_the_kind_falls_back_on_the_fact_checks_when_the_reason_is_generic() -> None:
    c = classify(
        status="unsupported",
        statement="She takes warfarin 10 mg daily.",
        reason="the sources do not bear it out (support 0.30)",
        evidence="Warfarin 5 mg daily.",
    )
    assert c is not None
    assert (c.kind, c.basis, c.severity) == ("number", "facts", "critical")


def test_an_invented_statement_that_contradicts_an_earlier_answer() -> None:
    sentence = "She stopped taking metformin last month."
    c = classify(
        status="unsupported",
        statement=sentence,
        reason="the sources do not bear it out (support 0.20)",
        evidence=None,
        earlier=[EarlierConflict(sentence, "high"), EarlierConflict("Other.", "critical")],
    )
    assert c is not None
    assert (c.kind, c.severity) == ("earlier_answer", "high")
    # a consistency finding raises the table's severity to its own when higher
    raised = classify(
        status="unsupported",
        statement="She lives alone.",
        reason=None,
        evidence=None,
        earlier=[EarlierConflict("she lives alone", "critical")],
    )
    assert raised is not None
    assert raised.severity == "critical"


@pytest.mark.parametrize(
    ("status", "statement"),
    [("grounded", "She takes warfarin 5 mg."), ("unsupported", None), ("contradicted", "")],
)
def test_grounded_or_textless_statements_are_not_classified(
    status: str, statement: str | None
) -> None:
    assert classify(status=status, statement=statement, reason="dose differs: 1 vs 2") is None
