"""The one clinical lexicon: every name has one owner, and every reader sees the same names."""

from __future__ import annotations

from collections import Counter

import pytest

from core.clinical import extract_mentions, is_chronic
from core.grounding.facts import condition_mentions, drug_mentions
from core.grounding.facts import load_lexicon as facts_view
from core.lexicon import load_lexicon, shorthand_meaning, shorthand_used, written_out
from core.severity import subjects


def test_a_name_belongs_to_one_drug_and_one_condition() -> None:
    lex = load_lexicon()
    others = Counter(o for names in lex.drugs.values() for o in names)
    assert [o for o, n in others.items() if n > 1] == []
    assert not set(others) & set(lex.drugs), "a brand is not also a generic"
    owners = Counter(n for c in lex.conditions.values() for n in set(c.names))
    assert [n for n, k in owners.items() if k > 1] == []


@pytest.mark.parametrize(
    ("brand", "generic"),
    [("eliquis", "apixaban"), ("pradaxa", "dabigatran"), ("norvasc", "amlodipine")],
)
def test_grounding_extraction_and_severity_read_a_brand_alike(brand: str, generic: str) -> None:
    sentence = f"She takes {brand.title()} every day."
    (mention,) = [m for m in extract_mentions(sentence) if m.kind == "medication"]
    assert mention.name == generic
    assert brand in drug_mentions(sentence)
    assert facts_view().drug_brands[brand] == generic


def test_anticoagulant_brands_are_high_alert_wherever_they_are_read() -> None:
    assert "high_alert_drug" in subjects("He was started on Pradaxa 150 mg.")
    assert "high_alert_drug" in subjects("Continue Savaysa.")


def test_conditions_of_either_former_list_are_read_by_both() -> None:
    # once only in the fact checks' list
    assert "diverticulitis" in condition_mentions("History of diverticulitis.")
    assert [m.name for m in extract_mentions("History of diverticulitis.")] == ["diverticulitis"]
    assert is_chronic("fibromyalgia")
    assert not is_chronic("appendicitis")
    # once only in extraction's list
    assert "acute kidney injury" in condition_mentions("Admitted with acute kidney injury.")


def test_words_a_visit_says_for_a_condition_are_cues_not_the_condition() -> None:
    assert "blood pressure" in facts_view().condition_synonyms["hypertension"]
    assert not [
        m for m in extract_mentions("We checked her blood pressure.") if m.kind == "condition"
    ]
    assert "hypertension" not in condition_mentions("We checked her blood pressure.")


def test_complaints_are_findings_for_grounding_and_conditions_for_extraction() -> None:
    assert load_lexicon().conditions["chest pain"].symptom
    assert "chest pain" not in facts_view().conditions
    assert [m.name for m in extract_mentions("She has chest pain.")] == ["chest pain"]


def test_a_hyphenated_name_is_read_whole() -> None:
    found = condition_mentions("Non-small cell lung cancer.")
    assert "non small cell lung cancer" in found
    assert "small cell lung cancer" not in found


def test_everyday_words_and_titles_are_no_drug_names() -> None:
    # the first words of "plan b", "ms contin" and "pen vk"; the drug words of a salt or of a
    # long brand still count alone
    assert drug_mentions("Ms. Lee agrees with the treatment plan and signs with a pen.") == []
    assert drug_mentions("Isosorbide and Toprol were refilled.") == ["isosorbide", "toprol"]


def test_a_visit_that_talks_of_diabetes_talks_of_its_type() -> None:
    from core.grounding.facts import compare_facts

    said = ["So as far as your diabetes, your sugars have been okay."]
    check = compare_facts("History of type 2 diabetes.", said, said, families=("conditions",))
    assert check.status == "agree"
    other = compare_facts("History of gout.", said, said, families=("conditions",))
    assert other.status != "agree"


@pytest.mark.parametrize(
    ("note", "written"),
    [
        ("Palpitations with SOBOE.", "Palpitations with short of breath on exertion."),
        (
            "c/o cough 3/7, h/o COPD.",
            "complains of cough 3 days, history of chronic obstructive pulmonary disease.",
        ),
        ("LBP for 1/52.", "low back pain for 1 week."),
        ("Allergies: PCN. N+V", "Allergies: penicillin. nausea and vomiting"),
        ("Metformin 500mg BD.", "Metformin 500mg twice a day."),  # after a dose
        ("HR 96, RR: 18.", "heart rate 96, respiratory rate: 18."),  # before a count
    ],
)
def test_clinical_shorthand_is_written_out(note: str, written: str) -> None:
    assert written_out(note) == written


@pytest.mark.parametrize(
    "text",
    [
        "I could sob.",  # "SOB" only as written
        "Seen on 3/7 and again on 3/7/2021.",  # dates
        "Took 7/7 days, 60/52.",  # no count of days reaches 7, nor of weeks 52
        "The PE was normal.",  # two common readings: not in the table
        "Rates of BD were higher (HR 0.62; RR of 1.3).",  # bipolar disorder; ratios
    ],
)
def test_words_that_only_look_like_shorthand_stay(text: str) -> None:
    assert written_out(text) == text


def test_shorthand_the_source_writes_too_is_kept() -> None:
    kept = shorthand_used(["Doctor: your BP was high, and the ECG showed an old MI."])
    assert kept == {"bp", "mi"}
    assert written_out("BP high, old MI, SOB.", kept) == "BP high, old MI, short of breath."
    assert shorthand_meaning("SOBAR") == "short of breath at rest"
    assert shorthand_meaning("2/52") == "2 weeks"
    assert shorthand_meaning("sob") is None
    assert shorthand_meaning("9/7") is None
