"""The words a statement adds are outlined on their own in the dashboard's highlights."""

from __future__ import annotations

from dashboard.exports import statement_highlights, word_marks
from dashboard.highlight import highlight_html

ANSWER = "The knee is swollen. An MRI of the knee was ordered."
EVIDENCE = "Patient: my knee is swollen. Doctor: let's get an X-ray of the knee."


def test_unsupported_words_tile_the_statement() -> None:
    start = ANSWER.index("An MRI")
    marks = word_marks(ANSWER, start, len(ANSWER), "unsupported", EVIDENCE)
    assert [ANSWER[h.start : h.end] for h in marks if h.kind == "focus"] == ["MRI", "ordered"]
    # the highlights cover the statement exactly, without gaps or overlaps
    assert marks[0].start == start
    assert marks[-1].end == len(ANSWER)
    for a, b in zip(marks, marks[1:], strict=False):
        assert a.end == b.start


def test_grounded_statement_is_one_highlight() -> None:
    marks = word_marks(ANSWER, 0, 20, "grounded", EVIDENCE)
    assert [(h.start, h.end, h.kind) for h in marks] == [(0, 20, "grounded")]


def test_verifier_offsets_are_used_and_escaped() -> None:
    answer = "Started <b>warfarin</b> today."
    statements = [
        {
            "index": 0,
            "text": answer,
            "start": 0,
            "end": len(answer),
            "status": "unsupported",
            "verification_method": "unsupported",
            "confidence": 0.9,
            "unsupported_words": [{"text": "warfarin", "start": 11, "end": 19}],
        }
    ]
    marks = statement_highlights(answer, statements)
    assert [answer[h.start : h.end] for h in marks if h.kind == "focus"] == ["warfarin"]
    html = highlight_html(answer, marks)
    assert "<b>" not in html
    assert "&lt;b&gt;" in html


def test_words_of_a_statement_that_says_its_label_first_are_marked_where_they_are() -> None:
    answer = "## Allergies\n- Amoxicillin and sulfa\n"
    start = answer.index("Amoxicillin")
    text = "Allergies: Amoxicillin and sulfa"
    statements = [
        {
            "index": 0,
            "text": text,
            "start": start,
            "end": start + len("Amoxicillin and sulfa"),
            "status": "unsupported",
            "verification_method": "learned",
            "unsupported_words": [
                {"text": "Allergies", "start": 0, "end": 9},  # the label: not in the answer there
                {"text": "Amoxicillin", "start": 11, "end": 22},
            ],
        }
    ]
    marks = statement_highlights(answer, statements)
    assert [answer[h.start : h.end] for h in marks if h.kind == "focus"] == ["Amoxicillin"]
    assert marks[0].start == start
    assert marks[-1].end == start + len("Amoxicillin and sulfa")
