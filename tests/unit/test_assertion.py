"""The assertion engine: one reading of a sentence for grounding, extraction and the audit."""

from __future__ import annotations

import json

import pytest

from core.assertion import (
    denies,
    dialogue_polarity,
    is_question,
    load_rules,
    polarity_marks,
    read_negation,
    reply_answer,
)
from core.assertion.rules import RULES_PATH
from core.clinical import extract_mentions
from core.text import tokens


def assertion_of(text: str, name: str) -> str:
    (mention,) = [m for m in extract_mentions(text) if m.name == name]
    return mention.assertion


def test_rules_are_one_json_file_of_word_lists() -> None:
    raw = json.loads(RULES_PATH.read_text("utf-8"))
    assert {"negated", "clauses", "supposed", "question", "findings_as_words", "context"} <= set(
        raw
    )
    rules = load_rules()
    assert "denies" in rules.neg_cues
    assert ("free",) in rules.neg_after["free"]
    assert ("ruled", "out") in rules.neg_after["ruled"]
    # negation is the token reading's alone: the ConText table has no category for it
    assert {category for category, _ in rules.context.values()} >= {
        "historical",
        "hypothetical",
        "family",
    }
    assert "negated" not in {category for category, _ in rules.context.values()}
    for words in (rules.neg_cues, rules.scope_end, rules.conditions, rules.no_words):
        assert all(w == w.lower() for w in words)


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Negative nausea, negative vomiting.", "nausea"),
        ("He denies a history of gout.", "gout"),
        ("Chest pain free.", "chest pain"),
        ("Pneumonia was ruled out.", "pneumonia"),
        ("The workup ruled out pneumonia.", "pneumonia"),
        ("CT ruled out a pulmonary embolism.", "pulmonary embolism"),
        ("She does not smoke or drink alcohol.", "alcohol"),
        ("She walks to the mailbox without shortness of breath.", "shortness of breath"),
    ],
)
def test_grounding_extraction_and_the_audit_read_a_denial_alike(text: str, name: str) -> None:
    assert assertion_of(text, name) == "negated"
    assert denies(text)


def test_a_cue_that_negates_either_way_negates_what_follows_it_when_something_does() -> None:
    # "ruled out X" negates X; "X was ruled out by CT" negates X, not CT
    toks = tokens("the workup ruled out asthma .")
    marks = dict(zip(toks, polarity_marks(toks), strict=True))
    assert marks["asthma"] is False
    assert marks["workup"] is True
    toks = tokens("asthma was ruled out by ct .")
    marks = dict(zip(toks, polarity_marks(toks, speech=False), strict=True))
    assert marks["asthma"] is False
    assert marks["ct"] is True


def test_a_pseudo_negation_denies_nothing() -> None:
    text = "She has not only asthma but also COPD."
    assert assertion_of(text, "asthma") == "affirmed"
    assert not denies(text)


def test_a_name_is_read_as_one_word() -> None:
    # "non-" is part of the name, not a denial of it
    assert assertion_of("Stage III non-small cell lung cancer.", "lung cancer") == "affirmed"
    reading = read_negation("no h/o asthma", [(7, 13)])
    assert reading.negated(7, 13)
    assert not reading.negated(0, 2)


def test_negation_cues_end_the_other_categories_scopes() -> None:
    assert assertion_of("The parents deny any vomiting.", "vomiting") == "negated"
    assert assertion_of("No family history of colon cancer.", "colorectal cancer") == "family"
    assert assertion_of("Diabetes in her mother.", "diabetes mellitus") == "family"
    assert assertion_of("History of asthma.", "asthma") == "historical"
    assert assertion_of("Consider statin if LDL rises.", "statin") == "hypothetical"


def test_the_token_reading_marks_asked_and_supposed_words() -> None:
    assert polarity_marks(tokens("any chest pain ?")) == [None, None, None, True]
    marks = polarity_marks(tokens("if the pain does not improve , call"), speech=False)
    assert marks == [True, "if", "if", "if", "if", "if", True, True]


def test_a_question_answered_no_denies_what_it_asked() -> None:
    assert is_question("[doctor] any fever ?")
    assert reply_answer("[patient] no .") is False
    assert reply_answer("yes .") is True
    assert reply_answer("Absolutely not!") is False
    assert reply_answer("Absolutely.") is True
    assert reply_answer("Yeah. No.") is None  # mixed: the next words decide
    assert reply_answer("I did at first but not any more.") is None
    asked, replied = dialogue_polarity(("[doctor] any fever ?", "[patient] no ."))
    assert asked == {"fever": {False}}
    assert replied == {}


def test_a_family_member_s_no_answers_the_question_too() -> None:
    assert reply_answer("Guest_family: No.") is False
    assert reply_answer("Guest_family_1: Yes.") is True
    asked, _ = dialogue_polarity(("Doctor: Any diarrhea?", "Guest_family: None."))
    assert asked == {"diarrhea": {False}}
