"""Record text is escaped before display, and never reaches a log line."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

import pytest

from dashboard.exports import report_html, report_markdown, rows_to_csv, statement_highlights
from dashboard.highlight import (
    Highlight,
    contradiction_badges,
    escape_text,
    find_span,
    highlight_html,
)
from dashboard.uploads import UploadError, read_evidence, read_transcript
from tests.app.seed import Seeded, open_page

SCRIPT = "<script>alert('x')</script>"


def test_script_in_text_is_shown_as_text():
    out = highlight_html(f"before {SCRIPT} after", [Highlight(0, 6, "grounded", SCRIPT)])
    assert "<script>" not in out
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in out
    assert 'title="&lt;script&gt;' in out  # tooltips are escaped too


def test_highlight_marks_exact_span_and_clips_overlaps():
    text = "a < b and c > d"
    out = highlight_html(
        text,
        [Highlight(0, 5, "evidence"), Highlight(3, 9, "rejected"), Highlight(50, 60, "focus")],
        box=False,
    )
    assert out.startswith('<mark class="gw-evidence"')
    assert ">a &lt; b</mark>" in out
    assert '<mark class="gw-rejected" style="' in out
    assert "> and</mark>" in out  # trimmed to start after the first span
    assert out.endswith(" c &gt; d")


def test_unknown_kind_never_becomes_a_class_name():
    out = highlight_html("abc", [Highlight(0, 1, 'x" onmouseover="alert(1)')], box=False)
    assert "onmouseover" not in out
    assert 'class="gw-focus"' in out


def test_contradiction_badges_escape_the_entity():
    html = contradiction_badges(
        {"severity": "major", "check_type": "entity", "entity": "<b>warfarin</b>"}
    )
    assert "major entity" in html
    assert "&lt;b&gt;warfarin&lt;/b&gt;" in html
    assert "<b>" not in html


def test_find_span_and_escape():
    assert find_span("Takes Lisinopril daily", "lisinopril") == (6, 16)
    assert find_span("abc", "zzz") is None
    assert escape_text(None) == ""


def test_report_html_escapes_everything():
    conv = {
        "external_id": "x<1>",
        "patient_id": "p",
        "timestamp": datetime(2026, 1, 1, tzinfo=UTC),
        "model": "m",
        "risk_level": "low",
        "query": SCRIPT,
        "answer": SCRIPT + " The patient is fine.",
        "scores": {"grounding": 1.0, "risk": 0.1},
        "statements": [
            {
                "index": 0,
                "text": SCRIPT,
                "start": 0,
                "end": len(SCRIPT),
                "status": "unsupported",
                "method": "unsupported",
                "confidence": 0.5,
                "evidence": None,
            }
        ],
        "contradictions": [],
        "checks": {"grounding": {"status": "ok", "reason": None}},
        "claims": [],
        "warnings": [],
    }
    html_doc = report_html(conv)
    assert "<script>" not in html_doc
    assert "x&lt;1&gt;" in html_doc
    assert "| unsupported |" in report_markdown(conv)
    assert statement_highlights(conv["answer"], conv["statements"])[0].kind == "unsupported"


def test_csv_export_has_header_and_rows():
    out = rows_to_csv([{"a": 1.23456, "b": None, "c": "x"}], ["a", "b"])
    assert out.splitlines() == ["a,b", "1.2346,"]


def test_upload_validation_messages_name_file_not_content():
    secret = "Patient Jane has HIV"
    with pytest.raises(UploadError) as info:
        read_transcript(
            "t.json", json.dumps({"other": secret}).encode(), max_bytes=1000, max_chars=1000
        )
    assert "t.json" in str(info.value)
    assert secret not in str(info.value)
    with pytest.raises(UploadError) as info:
        read_evidence("e.json", json.dumps({"k": [secret, 3]}).encode(), max_bytes=1000)
    assert "e.json" in str(info.value)
    assert "k:" in str(info.value)
    assert secret not in str(info.value)
    turns = [{"speaker": "Doctor", "text": "Hi"}, {"speaker": "Patient", "text": "Hello"}]
    assert (
        read_transcript("t.json", json.dumps(turns).encode(), max_bytes=1000, max_chars=1000)
        == "Doctor: Hi\nPatient: Hello"
    )
    # a FHIR resource is kept as it is, for the verifier to read as a structured record
    fhir = json.dumps({"resourceType": "Condition", "code": {"text": "gout"}})
    assert read_transcript("r.json", fhir.encode(), max_bytes=1000, max_chars=1000) == fhir


def test_no_record_text_in_logs(fresh_db, use_db, caplog):
    use_db(fresh_db)
    with caplog.at_level(logging.DEBUG):
        at = open_page("review")
        at.text_input(key="sidebar_reviewer").input("Dr. Log").run()
        at.button(key="review_confirmed").click().run()
        at.switch_page("app_pages/report.py").run()
        at.text_input(key="report_typed").input("rec-script").run()
        at.switch_page("app_pages/upload.py").run()
        at.toggle(key="upload_semantic").set_value(False)
        at.file_uploader(key="upload_transcript").set_value(
            ("visit.txt", b"Doctor: secret transcript words here.", "text/plain")
        )
        at.text_area(key="upload_answer_text").input("Secret answer about warfarin.")
        at.run()
    assert not at.exception
    logged = caplog.text
    for fragment in (
        "metformin",
        "gabapentin",
        "lisinopril",
        "secret transcript",
        "Secret answer",
        "alert(",
    ):
        assert fragment not in logged


# --------------------------------------------------------------------------- hardening


@pytest.mark.parametrize(
    "when", [datetime(9999, 12, 31, 23, 59, tzinfo=UTC), datetime(1, 1, 1, tzinfo=UTC)]
)
@pytest.mark.parametrize("page", ["overview", "review", "report", "calibration", "patients"])
def test_a_record_dated_out_of_range_breaks_no_page(
    fresh_db: Seeded, use_db: object, monkeypatch: pytest.MonkeyPatch, when: datetime, page: str
) -> None:
    """A record stored before the input boundary refused such dates (year 1 or 9999) must not
    stretch the date pickers to where date arithmetic overflows."""
    from streamlit.testing.v1 import AppTest

    from core.records import ConversationRecord, SourceIn
    from dashboard import data
    from tests.app.seed import APP

    use_db(fresh_db)  # type: ignore[operator]
    monkeypatch.setenv("GROUNDWATCH_ENABLE_GROUNDING_VERIFICATION", "false")
    old = ConversationRecord.model_construct(  # bypasses validation, as an older version did
        id="x-far",
        patient_id="p-1",
        timestamp=when,
        query="q",
        answer="The patient takes metformin.",
        sources=[SourceIn(id="s", text="He takes metformin daily.", type="note")],
        model="model-a",
        samples=None,
        evidence=None,
        temperature=None,
        query_intent=None,
    )
    data.pipeline().process(old)
    at = AppTest.from_file(APP, default_timeout=60).run()  # the sidebar's own default range
    at.switch_page(f"app_pages/{page}.py").run()
    assert not at.exception, [e.value[:200] for e in at.exception]
    assert not at.error, [e.value[:200] for e in at.error]


def test_an_unexpected_error_shows_its_type_and_an_incident_code_only(
    seeded_db: Seeded,
    use_db: object,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A database error quotes the statement and its parameters (the record's text): neither
    the browser nor the server log may receive it."""
    from dashboard import data

    secret = "ZQX-SENTINEL-INCIDENT transcript text"

    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError(f"(DataError) INSERT ... [parameters: ('{secret}',)]")

    use_db(seeded_db)  # type: ignore[operator]
    monkeypatch.setattr(data, "kpis", broken)
    caplog.set_level(logging.DEBUG)
    at = open_page("overview")
    assert not at.exception
    (error,) = at.error
    assert "RuntimeError" in error.value
    assert "incident" in error.value
    assert secret not in error.value
    assert secret not in caplog.text
    assert "unhandled RuntimeError in the dashboard at dashboard/" in caplog.text


def test_record_fields_are_shown_literally_never_as_markdown(
    fresh_db: Seeded, use_db: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ids and model names come from the record: bold, links, images (which the browser would
    fetch) and colour directives in them are shown as typed, in titles, captions and labels."""
    from core.records import parse_record
    from dashboard import data
    from dashboard.highlight import md_text

    use_db(fresh_db)  # type: ignore[operator]
    monkeypatch.setenv("GROUNDWATCH_ENABLE_GROUNDING_VERIFICATION", "false")
    record_id = "**rec** ![img](http://127.0.0.1:9/x.png) :red[x]"
    model = "[model](http://127.0.0.1:9/)"
    report = data.pipeline().process(
        parse_record(
            {
                "id": record_id,
                "patient_id": "p-1",
                "timestamp": "2026-03-20T09:00:00Z",
                "query": "meds?",
                "answer": "He takes metformin.",
                "sources": [{"id": "s", "text": "He takes metformin daily."}],
                "model": model,
            },
            max_text_chars=10_000,
        )
    )
    at = open_page()
    at.session_state["report_conversation"] = report.conversation_id
    at.switch_page("app_pages/report.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.subheader[0].value == f"Answer {md_text(record_id)}"
    caption = next(c.value for c in at.caption if c.value.startswith("Patient "))
    assert md_text(model) in caption
    for element in [*at.subheader, *at.caption, *at.markdown]:
        assert "![" not in element.value
        assert "](" not in element.value


@pytest.mark.parametrize("cell", ["=1+1", "+cmd", "-2+3", "@SUM(A1)", "\tx", "\rx"])
def test_csv_cells_that_start_a_formula_are_neutralised(cell: str) -> None:
    out = rows_to_csv([{"a": cell, "b": -1.5}], ["a", "b"])
    assert out.splitlines()[1].startswith(("'", "\"'"))
    assert out.strip().endswith(",-1.5")  # numbers stay numbers
