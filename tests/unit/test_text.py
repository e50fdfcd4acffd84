"""Sentence and statement splitting on clinical text, with offsets."""

from __future__ import annotations

import json
import re

import pytest

from core.text import (
    as_prose,
    asserts_nothing,
    fact_label,
    normalize,
    normalize_with_map,
    split_label,
    split_sentences,
    split_statements,
    strip_emphasis,
)

NOTE = """Assessment: Patient is stable. Takes metformin 500 mg b.i.d. daily.
HbA1c was 6.8% approx. 3 months ago. BP 132/84 today. Dr. Smith saw him.
PLAN
- Continue metformin.
- Recheck A1c in 3 months.
1. Follow up with Dr. Jones in 2 wks.
2) He denies fever, chills and weight loss, and he quit smoking in 2019."""


def texts(spans: list) -> list[str]:
    return [s.text for s in spans]


def statements_of(text: str) -> list[str]:
    """The statements of ``text``, each checked to index the original at its offsets."""
    spans = split_statements(text)
    for span in spans:  # (after the kind of fact its label names, if any)
        assert split_label(span.text)[1] == text[span.start : span.end]
    return texts(spans)


def test_sentences_survive_clinical_abbreviations_and_numbers() -> None:
    assert texts(split_sentences(NOTE)) == [
        "Patient is stable.",
        "Takes metformin 500 mg b.i.d. daily.",
        "HbA1c was 6.8% approx. 3 months ago.",
        "BP 132/84 today.",
        "Dr. Smith saw him.",
        "Continue metformin.",
        "Recheck A1c in 3 months.",
        "Follow up with Dr. Jones in 2 wks.",
        "He denies fever, chills and weight loss, and he quit smoking in 2019.",
    ]


def test_sentence_offsets_index_the_original() -> None:
    for span in split_sentences(NOTE):
        assert NOTE[span.start : span.end] == span.text


def test_header_only_lines_and_bullets_are_not_sentences() -> None:
    text = "HISTORY OF PRESENT ILLNESS\n\n* Cough for 2 weeks.\n* No fever.\nPlan:\nRest."
    assert texts(split_sentences(text)) == ["Cough for 2 weeks.", "No fever.", "Rest."]


MARKDOWN_SUMMARY = """**Summary of Visit**

**Chief Complaint:** Right knee swelling.

**History of Present Illness**:
- The patient reports swelling of the right knee for two weeks.
- Takes **ibuprofen** 400 mg twice daily.

### Assessment and Plan
1. **X-ray of the right knee ordered.**
2. *Follow up in 2 weeks.*

## 3. Social history
__Former smoker__, quit 10 years ago.
**BP 132/84**
"""


def test_markdown_headings_and_bold_titles_are_not_statements() -> None:
    # an LLM's summary in Markdown: its headings and bold titles claim nothing, and a
    # heading read as a statement is flagged as unsupported by every source
    assert statements_of(MARKDOWN_SUMMARY) == [
        "Right knee swelling.",
        "The patient reports swelling of the right knee for two weeks.",
        "Takes **ibuprofen** 400 mg twice daily.",
        "X-ray of the right knee ordered.",
        "Follow up in 2 weeks.",
        "Social history: __Former smoker__, quit 10 years ago.",
        "Social history: BP 132/84",  # (a title reaches to the next)
    ]


@pytest.mark.parametrize(
    ("title", "label"),
    [
        ("Allergies", "Allergies"),
        ("**Drug Allergies:**", "Allergies"),
        ("ALLERGIES/INTOLERANCES", "Allergies"),
        ("## Current medications", "Medications"),
        ("Meds", "Medications"),
        ("DH", "Medications"),  # drug history, as British notes write it
        ("PMH", "Past medical history"),
        ("3. Past Medical History", "Past medical history"),
        ("Family History", "Family history"),
        ("FHx", "Family history"),
        ("SOCIAL HISTORY", "Social history"),
        ("Past surgical history:", "Past surgical history"),
        ("Patient's medications", "Medications"),
        ("Plan", None),
        ("History of present illness", None),
        ("Chief complaint", None),
        ("Medication changes today", None),
    ],
)
def test_fact_label_reads_the_kinds_of_fact_a_label_names(title: str, label: str | None) -> None:
    assert fact_label(title) == label


LABELLED_SUMMARY = """Allergies: amoxicillin.

## Medications
- Metformin 500 mg twice daily
- Lisinopril: 10 mg daily

**Past medical history:** hypertension, diabetes and asthma.

FAMILY HISTORY
Mother had breast cancer. Father has diabetes.

Social history: He smokes and drinks, and he walks daily.

## Plan
- Start atorvastatin 20 mg.
Return in 2 weeks.

FAMILY HISTORY

Mother: melanoma.
No family history of breast cancer.
"""


def test_a_label_that_names_a_kind_of_fact_is_part_of_each_statement_under_it() -> None:
    # "Allergies: amoxicillin" says something else than "amoxicillin": a visit where
    # amoxicillin is taken bears out the one and not the other
    assert statements_of(LABELLED_SUMMARY) == [
        "Allergies: amoxicillin.",
        "Medications: Metformin 500 mg twice daily",
        "Medications: Lisinopril: 10 mg daily",  # an item's name under a title is no label
        "Past medical history: hypertension, diabetes and asthma.",
        "Family history: Mother had breast cancer.",
        "Family history: Father has diabetes.",
        "Social history: He smokes and drinks",
        "Social history: he walks daily.",
        "Start atorvastatin 20 mg.",  # a title of another kind ends the last one's reach
        "Return in 2 weeks.",
        "Family history: Mother: melanoma.",  # a line's name under a title is no label
        "Family history: No family history of breast cancer.",
    ]
    spans = split_statements(LABELLED_SUMMARY)
    assert LABELLED_SUMMARY[spans[0].start : spans[0].end] == "amoxicillin."
    # sentences of sources are read as written
    assert texts(split_sentences(LABELLED_SUMMARY))[0] == "amoxicillin."


def test_a_title_over_a_list_reaches_no_further_than_the_list() -> None:
    text = (
        "Allergies:\n\n- Penicillin\n\n- Sulfa\n\nHe was advised to return in two weeks.\n\n"
        "MEDICATIONS\n\nHe takes metformin.\n\nHe also takes lisinopril.\n\n"
        "## Family history\n\n- Mother: diabetes\n- Father: stroke\n\n1. Uncle: asthma"
    )
    assert statements_of(text) == [
        "Allergies: Penicillin",  # a blank line between the items keeps the list's title
        "Allergies: Sulfa",
        "He was advised to return in two weeks.",  # prose after the list is not the list's
        "Medications: He takes metformin.",  # paragraphs under a title stay under it
        "Medications: He also takes lisinopril.",
        "Family history: Mother: diabetes",
        "Family history: Father: stroke",
        "Family history: Uncle: asthma",  # a numbered list is a list too
    ]


def test_labels_in_html_carry_to_their_items() -> None:
    text = "<h3>Allergies</h3><ul><li>Penicillin (hives)</li><li>Sulfa</li></ul><p>Plan: rest</p>"
    assert [s.text for s in split_statements(text)] == [
        "Allergies: Penicillin (hives)",
        "Allergies: Sulfa",
        "rest",
    ]


@pytest.mark.parametrize(
    ("statement", "parts"),
    [
        ("Allergies: penicillin", ("Allergies", "penicillin")),
        ("Past medical history: asthma.", ("Past medical history", "asthma.")),
        ("Plan: rest", (None, "Plan: rest")),
        ("He has asthma.", (None, "He has asthma.")),
    ],
)
def test_split_label_parts_a_statement_from_its_label(statement: str, parts: tuple) -> None:
    assert split_label(statement) == parts


def test_bullets_of_word_processors_and_markdown_start_statements() -> None:
    text = "• Knee sprain\n◦ Ibuprofen 400 mg\n▪ Rest and ice\n– Follow up in 2 weeks\n+ Ice.\n"
    text += "+2 pitting edema of the legs."
    assert statements_of(text) == [
        "Knee sprain",
        "Ibuprofen 400 mg",
        "Rest and ice",
        "Follow up in 2 weeks",
        "Ice.",
        "+2 pitting edema of the legs.",
    ]


def test_a_markdown_table_is_read_one_row_a_statement() -> None:
    text = (
        "Her medications:\n\n| Drug | Dose |\n|:---|---:|\n| Metformin | 500 mg twice daily |\n"
        "| Lisinopril | 10 mg daily |\n\nShe denies chest pain. A | B is not a table."
    )
    assert statements_of(text) == [
        "Metformin | 500 mg twice daily",
        "Lisinopril | 10 mg daily",
        "She denies chest pain.",
        "A | B is not a table.",
    ]


def html_statements(text: str) -> list[str]:
    """The statements of an HTML ``text``: no tags in their text, offsets on the original."""
    spans = split_statements(text)
    for span in spans:
        assert "<" not in span.text
        assert " ".join(span.text.split()) == span.text
        original = re.sub(r"<[^<>]+>", " ", text[span.start : span.end])
        assert " ".join(original.split()).replace(" | ", " ") == span.text.replace(" | ", " ")
    return texts(spans)


def test_html_is_read_as_the_text_it_shows() -> None:
    text = (
        "<h2>Assessment</h2><p>He takes <b>metformin</b> 500 mg twice daily. "
        "He denies chest pain.</p><ul><li>Hypertension, stable</li>\n<li>Start "
        '<em class="drug">lisinopril</em> 10 mg</li></ul><p>Plan:<br>Return in 2 weeks.</p>'
    )
    assert html_statements(text) == [
        "He takes metformin 500 mg twice daily.",
        "He denies chest pain.",
        "Hypertension, stable",
        "Start lisinopril 10 mg",
        "Return in 2 weeks.",
    ]


def test_an_html_table_is_read_one_row_a_statement() -> None:
    text = (
        "<table><thead><tr><th>Drug</th><th>Dose</th></tr></thead><tbody>"
        "<tr><td>Metformin</td><td>500 mg</td></tr>\n"
        "<tr><td>Lisinopril</td><td>10 mg daily</td></tr></tbody></table>"
    )
    assert html_statements(text) == ["Metformin | 500 mg", "Lisinopril | 10 mg daily"]
    assert as_prose("Metformin | 500 mg") == "Metformin, 500 mg"


@pytest.mark.parametrize(
    "text", ["BP <140/90 and a < b > c.", "He has <3 risk factors.", "x<sup>2</sup> rose."]
)
def test_text_that_only_looks_like_html_is_read_as_written(text: str) -> None:
    assert statements_of(text) == [text]


def test_a_line_of_names_in_bold_is_not_a_title() -> None:
    assert statements_of("**Metformin** and **lisinopril**") == ["**Metformin** and **lisinopril**"]
    # a list item in bold names something; so does a line in italics
    assert statements_of("**Assessment**\n- **Hypertension**\n*Denies fever*") == [
        "Hypertension",
        "Denies fever",
    ]


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        ("Takes **metformin** daily.", "Takes metformin daily."),
        ("*Denies* fever and __chills__.", "Denies fever and chills."),
        ("**bold *and italic* too**", "bold and italic too"),
        ("snake_case_name and 2 * 3 * 4", "snake_case_name and 2 * 3 * 4"),
        ("Seen by Dr. _______ on ____.", "Seen by Dr. _______ on ____."),
    ],
)
def test_strip_emphasis_removes_markdown_marks_only(text: str, plain: str) -> None:
    assert strip_emphasis(text) == plain


def test_as_prose_reads_a_table_row_as_a_list() -> None:
    assert as_prose("**Metformin** | 500 mg | twice daily") == "Metformin, 500 mg, twice daily"
    assert as_prose("No markup here.") == "No markup here."


def test_vital_sign_line_in_capitals_is_kept() -> None:
    assert texts(split_sentences("BP 150/90.")) == ["BP 150/90."]


def test_speaker_tags_split_turns() -> None:
    dialogue = "[doctor] any fever ?\n[patient] no .\n[doctor] okay ."
    assert texts(split_sentences(dialogue)) == ["any fever ?", "no .", "okay ."]


def test_every_party_of_a_visit_is_a_speaker() -> None:
    # visits with family members and a second clinician name their parties so
    dialogue = (
        "Doctor: Any fever?\nGuest_family: No.\nGuest_family_2: None.\n"
        "Doctor_2: Any cough?\nGuest_clinician: Not that I saw."
    )
    assert texts(split_sentences(dialogue)) == [
        "Any fever?",
        "No.",
        "None.",
        "Any cough?",
        "Not that I saw.",
    ]


def test_a_stop_set_off_by_a_space_ends_a_sentence() -> None:
    # transcripts write "no . let me ..."; "No." would otherwise read as an abbreviation
    said = "[patient] no . let me pull my notes out ."
    assert [s.text for s in split_sentences(said)] == ["no .", "let me pull my notes out ."]
    assert [s.text for s in split_sentences("No. 5 was given.")] == ["No. 5 was given."]


def test_a_note_written_one_fact_per_line_is_one_statement_per_line() -> None:
    note = (
        "Hx: dizziness for the past few hours\n"
        "No ear discharge or ear pain\n"
        "Feels nauseous but not been sick\n"
        "3/7 hx of diarrhoea, mainly watery"
    )
    assert [s.text for s in split_sentences(note)] == [
        "dizziness for the past few hours",
        "No ear discharge or ear pain",
        "Feels nauseous but not been sick",
        "3/7 hx of diarrhoea, mainly watery",
    ]


def test_a_wrapped_paragraph_stays_one_sentence() -> None:
    # long lines (a wrapped paragraph) and lines that run on (a trailing "and", a comma) join
    wrapped = (
        "The patient is a 54-year-old man who presents today with three days of chest\n"
        "Pain radiating to the left arm, worse on exertion and\n"
        "Relieved by rest."
    )
    assert len(split_sentences(wrapped)) == 1
    assert len(split_sentences("Takes metformin,\nLisinopril and aspirin.")) == 1


def test_sentence_ends_before_a_unit_at_the_end() -> None:
    assert texts(split_sentences("He takes 500 mg. He is well.")) == [
        "He takes 500 mg.",
        "He is well.",
    ]


def test_coordinated_drugs_become_separate_statements() -> None:
    text = "The patient takes metformin and lisinopril."
    spans = split_statements(text)
    assert texts(spans) == ["The patient takes metformin", "The patient takes lisinopril"]
    assert text[spans[1].start : spans[1].end] == "lisinopril"


def test_negated_list_keeps_its_negation() -> None:
    spans = split_statements("He denies fever, chills and weight loss.")
    assert texts(spans) == ["He denies fever", "He denies chills", "He denies weight loss"]


def test_clauses_with_their_own_subject_are_split() -> None:
    text = "She has asthma, and she uses albuterol."
    spans = split_statements(text)
    assert texts(spans) == ["She has asthma", "she uses albuterol."]
    for s in spans:
        assert text[s.start : s.end] == s.text


@pytest.mark.parametrize(
    "text",
    [
        "Dose between 5 and 10 mg.",
        "Risks and benefits were discussed.",
        "He takes metformin or glipizide.",
    ],
)
def test_unsafe_coordination_is_left_whole(text: str) -> None:
    assert texts(split_statements(text)) == [text]


def test_normalize_keeps_values_and_maps_offsets() -> None:
    text = "BP 132/84, HbA1c 6.8%. Dose: 1,000 mg!"
    norm, mapping = normalize_with_map(text)
    assert norm == "bp 132/84 hba1c 6.8% dose 1000 mg"
    assert len(norm) == len(mapping)
    pos = norm.index("132/84")
    assert text[mapping[pos] : mapping[pos + 5] + 1] == "132/84"
    assert normalize("  He  DENIES\u2019 pain ") == "he denies pain"


def test_empty_text_has_no_sentences() -> None:
    assert split_sentences("") == []
    assert split_statements("   \n ") == []


def test_unpaired_surrogates_are_found_by_path() -> None:
    from core.text import unpaired_surrogate

    assert unpaired_surrogate({"a": ["ok", {"b": "fine \U0001f600"}]}) is None  # a pair is text
    assert unpaired_surrogate({"a": ["ok", {"b": "x \ud800"}]}) == "a[1].b"
    assert unpaired_surrogate({"sources": [{"text": "\udc00"}]}) == "sources[0].text"
    assert unpaired_surrogate(["\ud83d"]) == "[0]"
    assert unpaired_surrogate("\ud800") == "value"
    assert unpaired_surrogate({"e": {"k\ud800": []}}) == "e (a key)"
    assert unpaired_surrogate(5) is None
    # the first in document order, at any depth the JSON decoder accepts
    assert unpaired_surrogate({"a": ["ok", {"b": "\ud800"}], "c": "\ud800"}) == "a[1].b"
    deep = json.loads("[" * 900 + '"\\ud800"' + "]" * 900)
    assert unpaired_surrogate(deep) == "[0]" * 900


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"a": 1, "a": 2}', "duplicate key"),
        ('{"a": NaN}', "NaN is not a JSON number"),
        ('{"a": -Infinity}', "-Infinity is not a JSON number"),
        ('{"a": ' + "9" * 5000 + "}", "more digits than allowed"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"secret-text": }', "Expecting value at line 1, column 17"),
    ],
)
def test_input_json_is_decoded_by_one_set_of_rules(text: str, reason: str) -> None:
    from core.text import JSONInputError, loads_input

    with pytest.raises(JSONInputError, match=reason) as info:
        loads_input(text)
    assert "secret" not in str(info.value)
    assert loads_input('{"a": [1, 2.5, "x"], "b": {"a": null}}') == {
        "a": [1, 2.5, "x"],
        "b": {"a": None},
    }


def test_only_short_texts_are_cached() -> None:
    from core.text import SHORT_TEXT, cached_for_short_texts

    calls: list[int] = []

    @cached_for_short_texts(maxsize=8)
    def length(text: str, *, double: bool = False) -> int:
        calls.append(len(text))
        return len(text) * (2 if double else 1)

    short, long = "a" * 10, "b" * (SHORT_TEXT + 1)
    assert [length(short), length(short), length(short, double=True)] == [10, 10, 20]
    assert calls == [10, 10]  # the second call came from the cache; the option is its own key
    assert [length(long), length(long)] == [SHORT_TEXT + 1] * 2
    assert calls == [10, 10, SHORT_TEXT + 1, SHORT_TEXT + 1]  # a long text is never kept


@pytest.mark.parametrize(
    "statement",
    [
        "Yes.",
        "It is.",
        "yes, he was",
        "Thank you!",
        "Hello, how are you?",
        "Have you seen it?",
        "Me too, have you seen Mean Girls?",
        "Would you like me to summarise the labs?",
        "What makes it worse?",
        "I don't know.",
        "That’s cool.",
        "I guess so.",
    ],
)
def test_a_bare_reply_greeting_or_question_asserts_nothing(statement: str) -> None:
    assert asserts_nothing(statement)


@pytest.mark.parametrize(
    "statement",
    [
        "She is fine.",
        "It was 5.",
        "He doesn't smoke.",
        "She is great.",
        "None.",
        "Allergies: No.",
        "Did you know that the dunk was banned?",
        "Is that true?",
        "Canada is in North America, do you live there?",
        "Plan: recheck A1c in 3 months.",
        "",
    ],
)
def test_a_claim_a_number_a_label_or_a_question_about_a_claim_asserts_something(
    statement: str,
) -> None:
    assert not asserts_nothing(statement)
