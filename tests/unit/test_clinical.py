"""Clinical mention extraction on hand-written sentences."""

from __future__ import annotations

import logging

import pytest

from core.clinical import (
    ANY_ALLERGEN,
    ClinicalExtractor,
    Mention,
    condition_group,
    drug_classes,
    extract_mentions,
    is_chronic,
)
from core.text import split_sentences


def one(text: str, kind: str | None = None) -> Mention:
    found = [m for m in extract_mentions(text) if kind is None or m.kind == kind]
    assert len(found) == 1, found
    return found[0]


def test_medication_dose_unit_frequency_route() -> None:
    m = one("Lisinopril 10 mg PO daily.")
    assert (m.kind, m.name, m.dose, m.unit, m.frequency, m.route) == (
        "medication",
        "lisinopril",
        "10",
        "mg",
        "qd",
        "po",
    )
    assert m.assertion == "affirmed"
    assert m.action is None


@pytest.mark.parametrize(
    ("text", "frequency"),
    [
        ("Metformin 500 mg b.i.d.", "bid"),
        ("Metformin 500 mg bid", "bid"),
        ("Metformin 500 mg twice daily", "bid"),
        ("Aspirin 81 mg q.d.", "qd"),
        ("Furosemide 40 mg t.i.d.", "tid"),
        ("Atorvastatin 40 mg nightly", "qhs"),
        ("Albuterol 2 puffs q4h PRN", "q4h prn"),
        ("Oxycodone 5 mg every 6 hours as needed", "q6h prn"),
        ("Acetaminophen 500 mg PRN", "prn"),
    ],
)
def test_frequency_abbreviations(text: str, frequency: str) -> None:
    assert one(text, "medication").frequency == frequency


def test_brand_names_resolve_to_generic() -> None:
    names = [m.name for m in extract_mentions("Takes Lipitor 40 mg and Eliquis 5 mg twice daily.")]
    assert names == ["atorvastatin", "apixaban"]


def test_two_sentences_split_after_bid() -> None:
    text = "Metformin 500 mg b.i.d. Lisinopril 10 mg daily."
    spans = split_sentences(text)
    assert [s.text for s in spans] == ["Metformin 500 mg b.i.d.", "Lisinopril 10 mg daily."]
    meds = extract_mentions(text)
    assert [(m.name, m.frequency) for m in meds] == [("metformin", "bid"), ("lisinopril", "qd")]
    assert meds[1].sentence == "Lisinopril 10 mg daily."
    assert text[meds[1].start : meds[1].end] == "Lisinopril"


def test_line_labels_and_capitalised_lines_are_read() -> None:
    text = (
        "ALLERGIES\nPenicillin allergy.\n\nVITALS\n\nBlood pressure: 128/72 mmHg\n"
        "Maternal grandfather: pancreatic cancer.\n\nPAST HISTORY\n\nHIV\n"
    )
    got = [(m.kind, m.name, m.assertion, m.value) for m in extract_mentions(text)]
    assert ("vital", "blood pressure", "affirmed", "128/72") in got
    assert ("condition", "cancer", "family", None) in got
    assert ("condition", "hiv infection", "affirmed", None) in got
    vital = next(m for m in extract_mentions(text) if m.kind == "vital")
    assert vital.sentence == "Blood pressure: 128/72 mmHg"


def test_offsets_point_into_original_text() -> None:
    text = "Plan:\n  - Continue metformin 1000 mg b.i.d.\n  - No h/o CKD."
    for m in extract_mentions(text):
        assert text[m.start : m.end] == m.text
        assert text[m.sentence_start : m.sentence_end] == m.sentence


@pytest.mark.parametrize(
    ("text", "name", "action"),
    [
        ("Metformin was d/c'd last month.", "metformin", "stopped"),
        ("Metformin dc'd due to GI upset.", "metformin", "stopped"),
        ("Discontinued metformin.", "metformin", "stopped"),
        ("She is no longer taking warfarin.", "warfarin", "stopped"),
        ("Started insulin glargine 10 units qhs.", "insulin glargine", "started"),
        ("Metformin was restarted.", "metformin", "started"),
        ("Lisinopril was increased to 20 mg daily.", "lisinopril", "increased"),
        ("Prednisone tapered to 5 mg daily.", "prednisone", "decreased"),
        ("Continue aspirin 81 mg daily.", "aspirin", "continued"),
    ],
)
def test_actions(text: str, name: str, action: str) -> None:
    m = one(text, "medication")
    assert (m.name, m.action, m.assertion) == (name, action, "affirmed")


def test_action_scope_with_two_drugs() -> None:
    got = {
        m.name: m.action
        for m in extract_mentions("Discontinued metformin and started insulin glargine.")
    }
    assert got == {"metformin": "stopped", "insulin glargine": "started"}
    got = {m.name: m.action for m in extract_mentions("Lisinopril and metformin were stopped.")}
    assert got == {"lisinopril": "stopped", "metformin": "stopped"}
    got = {
        m.name: m.action
        for m in extract_mentions("Metformin 500 mg b.i.d., lisinopril was stopped.")
    }
    assert got == {"metformin": None, "lisinopril": "stopped"}


@pytest.mark.parametrize(
    ("text", "name", "assertion"),
    [
        ("No history of diabetes.", "diabetes mellitus", "negated"),
        ("No h/o COPD.", "chronic obstructive pulmonary disease", "negated"),
        ("Denies chest pain.", "chest pain", "negated"),
        ("h/o CHF.", "congestive heart failure", "historical"),
        ("History of T2DM.", "type 2 diabetes mellitus", "historical"),
        ("Patient has type 2 diabetes.", "type 2 diabetes mellitus", "affirmed"),
        ("HTN, well controlled.", "hypertension", "affirmed"),
        ("Family history of breast cancer.", "breast cancer", "family"),
        ("Diabetes in her mother.", "diabetes mellitus", "family"),
        ("Pneumonia was ruled out.", "pneumonia", "negated"),
        ("Consider evaluation if AFib recurs.", "atrial fibrillation", "hypothetical"),
    ],
)
def test_condition_assertions(text: str, name: str, assertion: str) -> None:
    m = one(text, "condition")
    assert (m.name, m.assertion) == (name, assertion)


def test_negation_scope_ends_at_but() -> None:
    got = {
        m.name: m.assertion
        for m in extract_mentions("Denies chest pain but reports shortness of breath.")
    }
    assert got == {"chest pain": "negated", "shortness of breath": "affirmed"}


def test_negation_covers_a_list() -> None:
    got = {m.name: m.assertion for m in extract_mentions("No h/o COPD, asthma or CKD.")}
    assert set(got.values()) == {"negated"}
    assert len(got) == 3


def test_procedure_status_post_and_laterality() -> None:
    mentions = extract_mentions("Right knee osteoarthritis, s/p left hip replacement.")
    cond, proc = mentions
    assert (cond.name, cond.laterality, cond.assertion) == ("osteoarthritis", "right", "affirmed")
    assert (proc.kind, proc.name, proc.laterality, proc.assertion) == (
        "procedure",
        "hip replacement",
        "left",
        "historical",
    )


def test_allergies_and_nkda() -> None:
    got = [
        (m.kind, m.name, m.assertion) for m in extract_mentions("Allergic to penicillin and sulfa.")
    ]
    assert got == [("allergy", "penicillin", "affirmed"), ("allergy", "sulfonamide", "affirmed")]
    m = one("NKDA.")
    assert (m.kind, m.name, m.assertion) == ("allergy", ANY_ALLERGEN, "negated")
    pairs = [(m.kind, m.name) for m in extract_mentions("Penicillin allergy; takes aspirin 81 mg.")]
    assert pairs == [("allergy", "penicillin"), ("medication", "aspirin")]
    assert extract_mentions("Eats peanuts daily.") == []  # an allergen outside allergy context


@pytest.mark.parametrize(
    ("text", "kind", "assertion"),
    [
        ("Former smoker, 20 pack-years.", "smoking", "historical"),
        ("Quit smoking in 2010.", "smoking", "historical"),
        ("Never smoker.", "smoking", "negated"),
        ("Denies tobacco use.", "smoking", "negated"),
        ("Current smoker, 1 pack per day.", "smoking", "affirmed"),
        ("Drinks 2 beers per week.", "alcohol", "affirmed"),
        ("Denies alcohol use.", "alcohol", "negated"),
    ],
)
def test_smoking_and_alcohol(text: str, kind: str, assertion: str) -> None:
    m = one(text, kind)
    assert m.assertion == assertion


def test_pack_years_value() -> None:
    assert one("Former smoker, 20 pack-years.").value == "20 pack-years"


def test_vitals_and_labs_with_units() -> None:
    got = [
        (m.kind, m.name, m.value, m.unit)
        for m in extract_mentions(
            "BP 142/88 mmHg, HR 76 bpm, temp 98.6 F, SpO2 97%. HbA1c 7.2%, creatinine 1.3 mg/dL."
        )
    ]
    assert got == [
        ("vital", "blood pressure", "142/88", "mmhg"),
        ("vital", "heart rate", "76", "bpm"),
        ("vital", "temperature", "98.6", "f"),
        ("vital", "oxygen saturation", "97", "%"),
        ("lab", "hemoglobin a1c", "7.2", "%"),
        ("lab", "creatinine", "1.3", "mg/dl"),
    ]


def test_vital_without_value_is_not_a_mention() -> None:
    assert extract_mentions("Blood pressure is well controlled.") == []


def test_drug_class_negation() -> None:
    m = one("Not on any anticoagulants.")
    assert (m.name, m.assertion) == ("anticoagulant", "negated")
    assert "anticoagulant" in drug_classes("warfarin")


def test_lexicon_helpers() -> None:
    assert condition_group("type 2 diabetes mellitus") == "diabetes mellitus"
    assert is_chronic("chronic kidney disease")
    assert not is_chronic("pneumonia")


def test_empty_and_plain_text() -> None:
    assert extract_mentions("") == []
    assert extract_mentions("The weather is nice today.") == []


def test_to_dict_is_json_safe() -> None:
    import json

    json.dumps([m.to_dict() for m in extract_mentions("Metformin 500 mg b.i.d. No h/o CKD.")])


def test_no_patient_text_in_logs(caplog: pytest.LogCaptureFixture) -> None:
    secret = "Zyxwvut takes metformin 500 mg b.i.d. for diabetes."
    with caplog.at_level(logging.DEBUG):
        ClinicalExtractor().extract(secret)
    assert "Zyxwvut" not in caplog.text
    assert "metformin" not in caplog.text


@pytest.mark.parametrize(
    ("text", "dose", "unit"),
    [
        ("She takes metformin five hundred milligrams twice a day.", "500", "mg"),
        ("Metformin 1,000 mg BID.", "1000", "mg"),
        ("Potassium chloride 20 mEq daily.", "20", "mEq"),
        ("Norco 5/325 mg every 6 hours as needed.", "5/325", "mg"),
        ("Insulin glargine 20 units at night.", "20", "unit"),
        ("Vitamin B12 1000 µg daily.", "1000", "mcg"),
    ],
)
def test_doses_are_read_by_the_one_quantities_reader(text: str, dose: str, unit: str) -> None:
    (med,) = [m for m in extract_mentions(text) if m.kind == "medication"]
    assert (med.dose, med.unit) == (dose, unit)
