"""Structured sources read as sentences (core.grounding.structured)."""

from __future__ import annotations

import json

import pytest

from core.grounding.structured import MAX_CHARS, reading
from tests.fhir_records import bundle_text

ALLERGY = {
    "resourceType": "AllergyIntolerance",
    "id": "a1",
    "meta": {"lastUpdated": "2024-03-01T10:00:00Z"},
    "clinicalStatus": {
        "coding": [
            {
                "system": "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical",
                "code": "active",
            }
        ]
    },
    "verificationStatus": {"coding": [{"code": "confirmed"}]},
    "type": "allergy",
    "criticality": "high",
    "code": {
        "coding": [
            {"system": "http://snomed.info/sct", "code": "91936005", "display": "Penicillin"}
        ]
    },
    "reaction": [{"manifestation": [{"text": "hives"}], "severity": "moderate"}],
}


def _lines(text: str) -> list[str]:
    r = reading(text)
    assert r is not None
    return [r.text[a:b] for a, b, _, _ in r.sentences]


def test_fhir_allergy_reads_as_a_sentence_without_codes_or_urls() -> None:
    [line] = _lines(bundle_text(ALLERGY))
    assert line.startswith("Allergy to Penicillin")
    for said in ("hives", "criticality high", "status active"):
        assert said in line
    for noise in ("http", "snomed", "91936005", "2024-03-01", "a1", "urn:uuid"):
        assert noise not in line


def test_fhir_refuted_allergy_and_condition_read_as_denials() -> None:
    refuted = {**ALLERGY, "verificationStatus": {"coding": [{"code": "refuted"}]}}
    condition = {
        "resourceType": "Condition",
        "verificationStatus": {"coding": [{"code": "refuted"}]},
        "code": {"text": "asthma"},
    }
    lines = _lines(bundle_text(refuted, condition))
    assert lines == [
        "The patient is not allergic to Penicillin (refuted).",
        "The patient does not have asthma (refuted).",
    ]


def test_fhir_medications_observations_and_family_history() -> None:
    text = bundle_text(
        {
            "resourceType": "MedicationStatement",
            "status": "not-taken",
            "medicationCodeableConcept": {"text": "warfarin"},
        },
        {
            "resourceType": "MedicationRequest",
            "status": "active",
            "medicationCodeableConcept": {"coding": [{"display": "lisinopril"}]},
            "dosageInstruction": [
                {
                    "route": {"text": "oral"},
                    "timing": {"repeat": {"frequency": 2, "period": 1, "periodUnit": "d"}},
                    "doseAndRate": [{"doseQuantity": {"value": 10, "unit": "mg"}}],
                }
            ],
        },
        {
            "resourceType": "Observation",
            "code": {"text": "Blood pressure"},
            "component": [
                {"code": {"text": "Systolic"}, "valueQuantity": {"value": 150, "unit": "mmHg"}},
                {"code": {"text": "Diastolic"}, "valueQuantity": {"value": 95, "unit": "mmHg"}},
            ],
        },
        {
            "resourceType": "Observation",
            "code": {"text": "Hemoglobin A1c"},
            "valueQuantity": {"value": 7.8, "unit": "%"},
            "interpretation": [{"coding": [{"code": "H", "display": "High"}]}],
            "referenceRange": [{"high": {"value": 5.7, "unit": "%"}}],
        },
        {
            "resourceType": "FamilyMemberHistory",
            "relationship": {"text": "mother"},
            "condition": [{"code": {"text": "breast cancer"}}],
        },
    )
    assert _lines(text) == [
        "Medication not taken: warfarin.",
        "Medication: lisinopril, 10 mg oral twice daily; status active.",
        "Blood pressure: 150/95 mmHg.",
        "Hemoglobin A1c: 7.8 %; High; normal range up to 5.7 %.",
        "Family history: mother has breast cancer.",
    ]


def test_plain_json_record_reads_by_its_keys_in_document_order() -> None:
    record = {
        "patient": {"name": "J. Doe", "age": 67},
        "medications": [
            {"name": "metformin", "dose": "500 mg", "frequency": "twice daily"},
            {"name": "atorvastatin", "dose": "40 mg", "frequency": "at night"},
        ],
        "allergies": ["penicillin", "latex"],
        "smoker": False,
        "notes": None,
    }
    assert _lines(json.dumps(record)) == [
        "Patient: J. Doe; age 67.",
        "Medications: metformin 500 mg twice daily.",
        "Medications: atorvastatin 40 mg at night.",
        "Allergies: penicillin, latex.",
        "Smoker: no.",
    ]


def test_each_sentence_locates_the_record_it_was_read_from() -> None:
    record = {"medications": [{"name": "metformin", "dose": "500 mg"}, {"name": "aspirin"}]}
    text = json.dumps(record, indent=2)
    r = reading(text)
    assert r is not None
    assert r.kind == "json"
    spans = [(r.text[a:b], text[x:y]) for a, b, x, y in r.sentences]
    assert json.loads(spans[0][1]) == {"name": "metformin", "dose": "500 mg"}
    assert json.loads(spans[1][1]) == {"name": "aspirin"}
    # a span of the reading maps to the records it overlaps
    second = r.text.index("aspirin")
    a, b = r.raw_span(second, second + 7)
    assert json.loads(text[a:b]) == {"name": "aspirin"}
    start, end = r.raw_span(0, len(r.text))
    assert text[start:end].startswith("{")
    assert text[start:end].endswith("}")


def test_a_byte_order_mark_is_no_content() -> None:
    assert _lines("\ufeff" + json.dumps({"allergies": ["latex"]})) == ["Allergies: latex."]


def test_json_lines_are_read_one_resource_per_line() -> None:
    text = "\n".join(
        json.dumps(x)
        for x in (
            ALLERGY,
            {"resourceType": "Condition", "code": {"text": "gout"}, "clinicalStatus": "active"},
        )
    )
    r = reading(text)
    assert r is not None
    assert r.kind == "fhir"
    assert [r.text[a:b] for a, b, _, _ in r.sentences][1] == "Condition: gout; active."


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("test\tvalue\tunit\tflag\npotassium\t5.9\tmmol/L\thigh\n", ["Potassium 5.9 mmol/L high."]),
        (
            "| drug | dose | frequency |\n|---|---|---|\n| aspirin | 81 mg | daily |\n",
            ["Aspirin 81 mg daily."],
        ),
        (
            "test,value,unit\nsodium,139,mmol/L\nTSH,2.1,mIU/L\n",
            ["Sodium 139 mmol/L.", "TSH 2.1 mIU/L."],
        ),
        (
            "analyte\tresult\tref range\ncreatinine\t1.4\t0.6-1.2\n",
            ["Creatinine 1.4; ref range 0.6-1.2."],
        ),
    ],
)
def test_tables_read_one_row_per_sentence(text: str, expected: list[str]) -> None:
    r = reading(text)
    assert r is not None
    assert r.kind == "table"
    lines = [r.text[a:b] for a, b, _, _ in r.sentences]
    assert lines == expected
    for _, _, x, y in r.sentences:  # each row is located on its own line of the table
        assert "\n" not in text[x:y]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "The patient takes metformin 500 mg twice daily.",
        "Doctor: Hi, how are you today, sir?\nPatient: Fine, thanks, doc.\nDoctor: Okay, good, so.",
        "DOCTOR\tHow are you?\nPATIENT\tFine.",
        "[Doctor] hello there\n[Patient] hi",
        '"just a string"',
        "42",
        '{"a": 1',  # malformed
        '{"a": 1} trailing words',
        "[1, 2] and more",
        "{}",
        "[]",
    ],
)
def test_prose_transcripts_and_broken_json_are_read_as_they_are(text: str) -> None:
    assert reading(text) is None


def test_deep_nesting_and_huge_sources_are_read_as_they_are() -> None:
    assert reading("[" * 5000 + "]" * 5000) is None
    huge = '{"a": "' + "x" * MAX_CHARS + '"}'
    assert reading(huge) is None


def test_html_in_a_value_stays_text() -> None:
    text = json.dumps({"note": "<b>penicillin</b> allergy", "allergies": ["penicillin"]})
    lines = _lines(text)
    assert lines[0] == "Note: <b>penicillin</b> allergy."
