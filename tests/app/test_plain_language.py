"""AppTests of plain language on the query report and the calibration page: setup notes in
their own collapsed box, jargon in words with tooltips, a risk level that agrees with the
worst finding, calibration metrics explained and a warning below the minimum of verdicts
(real pages on a real SQLite database)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select
from streamlit.testing.v1 import AppTest

from core.storage import models as m
from core.storage import repo
from core.storage.db import get_engine, upgrade_to_head, write_session
from dashboard.plain import MIN_CALIBRATION_VERDICTS
from tests.app.seed import APP, DAYS, END, Seeded, open_page

NLI_NOTICE = "inference tier unavailable (GROUNDWATCH_NLI_MODEL is not set)"
LOW_GROUNDING = "grounding score 0.50 is below the threshold 0.70"
ANSWER = "The patient takes lisinopril 10 mg daily. The patient has no known drug allergies."
SOURCE = "Lisinopril 10 mg daily. Allergies: sulfa drugs (rash)."


def _conversation(ext: str, *, risk_level: str, warnings: list[str]) -> m.Conversation:
    return m.Conversation(
        id="",
        external_id=ext,
        patient_id="p-9",
        query="Any allergies?",
        query_timestamp=datetime.combine(END, datetime.min.time(), tzinfo=UTC) - timedelta(days=1),
        answer=ANSWER,
        model_used="model-a",
        sources=[{"id": "note-1", "text": SOURCE, "type": "note"}],
        grounding_score=0.5,
        hallucination_risk=0.35,
        risk_level=risk_level,
        is_flagged=True,
        warnings=warnings,
        check_status={
            "grounding": {"status": "ok", "reason": None},
            "grounding.inference": {"status": "unavailable", "reason": "GROUNDWATCH_NLI_MODEL"},
        },
        content_hash=ext,
    )


def _statements(*, allergy_status: str, severity: str | None) -> list[m.StatementCheck]:
    first, second = ANSWER.split(". ", 1)
    first += "."
    return [
        m.StatementCheck(
            conversation_id="",
            statement=first,
            statement_index=0,
            start=0,
            end=len(first),
            is_grounded=True,
            status="grounded",
            source_chunk_id="note-1",
            supporting_evidence="Lisinopril 10 mg daily.",
            verification_method="exact_match",
            grounding_confidence=0.95,
            risk=0.02,
        ),
        m.StatementCheck(
            conversation_id="",
            statement=second,
            statement_index=1,
            start=len(first) + 1,
            end=len(ANSWER),
            is_grounded=allergy_status == "grounded",
            status=allergy_status,
            verification_method="semantic_match",
            grounding_confidence=0.8,
            risk=0.9,
            reason="the source records an allergy to sulfa drugs",
            kind="allergy" if severity else None,
            severity=severity,
        ),
    ]


@pytest.fixture
def plain_db(tmp_path: Path) -> Seeded:
    """Two answers, both stored at risk level medium with a setup notice among the warnings:
    ``pl-critical`` holds a critical allergy flag, ``pl-calm`` a flag of no severity."""
    url = f"sqlite:///{tmp_path / 'plain.db'}"
    upgrade_to_head(url)
    with write_session(get_engine(url)) as s:
        for ext, status, severity in (
            ("pl-critical", "unsupported", "critical"),
            ("pl-calm", "unsupported", "low"),
        ):
            bundle = repo.ConversationBundle(
                conversation=_conversation(
                    ext, risk_level="medium", warnings=[LOW_GROUNDING, NLI_NOTICE]
                ),
                statements=_statements(allergy_status=status, severity=severity),
            )
            bundle.claims.append(
                m.ClaimAudit(
                    conversation_id="",
                    claim_id="c1",
                    claim_text="The patient has no known drug allergies.",
                    evidence_ids=[],
                    evidence_support=0.1,
                    evidence_dependence=0.2,
                    is_flagged=True,
                    flag_reason="unsupported",
                    gap_type="contradicted",
                )
            )
            repo.store_conversation(session=s, bundle=bundle)
    return Seeded(url, 2, {}, 2, "")


def _report(ext: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["sidebar_dates"] = (END - timedelta(days=DAYS - 1), END)
    at.run()
    at.switch_page("app_pages/report.py").run()
    at.text_input(key="report_typed").input(ext).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _setup_box(at: AppTest):
    boxes = [e for e in at.expander if e.label.startswith("Setup notes")]
    assert len(boxes) == 1, [e.label for e in at.expander]
    return boxes[0]


def _risk_line(at: AppTest) -> str:
    """The risk-level line as a reader sees it (Markdown escapes removed)."""
    lines = [x.value for x in at.markdown if x.value.startswith("Risk level:")]
    assert len(lines) == 1
    return re.sub(r"\\(.)", r"\1", lines[0])


# --------------------------------------------------------------------------- report


def test_setup_notes_sit_in_their_own_collapsed_box_not_among_findings(plain_db, use_db):
    use_db(plain_db)
    at = _report("pl-calm")
    box = _setup_box(at)
    assert box.proto.expanded is False
    assert box.label == "Setup notes: 1 check did not run"
    inside = " ".join(x.value for x in box.markdown) + " ".join(x.value for x in box.caption)
    assert "inference tier unavailable" in inside
    assert "grounding.inference: unavailable" in inside
    checks = box.dataframe[0].value
    assert set(checks["check"]) == {"grounding", "grounding.inference"}
    # the findings stay at the top, as warnings; no setup notice among them
    findings = [w.value for w in at.warning]
    assert LOW_GROUNDING in findings
    assert not any("tier unavailable" in w or "NLI" in w for w in findings)
    assert LOW_GROUNDING not in inside


def test_a_critical_flag_makes_the_risk_level_at_least_high(plain_db, use_db):
    use_db(plain_db)
    line = _risk_line(_report("pl-critical"))
    assert line.startswith("Risk level: **high**")
    assert "a critical finding: allergy (statement #2)" in line
    assert "alone gives medium" in line


def test_without_a_critical_flag_the_stored_risk_level_is_shown(plain_db, use_db):
    use_db(plain_db)
    line = _risk_line(_report("pl-calm"))
    assert line == "Risk level: **medium**"


def test_a_contradiction_makes_the_risk_level_at_least_high(seeded_db, use_db):
    use_db(seeded_db)  # every seeded answer (stored as medium) contradicts its source
    at = _report("rec-0005")
    line = _risk_line(at)
    assert line.startswith("Risk level: **high**")
    assert "a contradiction: statement #2 contradicts its source" in line


def test_the_report_explains_its_jargon(plain_db, use_db):
    use_db(plain_db)
    at = _report("pl-critical")
    headings = {x.value: x.proto.help for x in at.markdown}
    assert "**Claims checked against their evidence**" in headings
    assert "SPEC-16" in headings["**Claims checked against their evidence**"]  # in the tooltip
    assert not any("Claim audit (SPEC-16)" in h for h in headings)
    # claims: plain headers, no column of nothing but None
    claims = next(d.value for d in at.dataframe if "Claim" in d.value.columns)
    assert "claim_id" not in claims.columns
    assert "Gap (bits)" not in claims.columns  # None in every row
    assert "Support" in claims.columns
    for column in claims.columns:
        assert set(claims[column]) != {"—"}
    # methods in words, the stored value in the tooltip
    titles = [e.label for e in at.expander]
    assert any(t.startswith("#1 grounded · matched word for word") for t in titles)
    assert any(t.startswith("#2 unsupported · matched by meaning") for t in titles)
    assert not any("semantic_match" in t or "exact_match" in t for t in titles)
    how = {c.value: c.proto.help for c in at.caption if c.value.startswith("How it was checked")}
    assert how["How it was checked: matched by meaning."].endswith("= semantic_match.")
    # every score has its sentence
    assert all(x.help for x in at.metric)


def test_the_confidence_breakdown_is_explained_in_one_sentence(seeded_db, use_db):
    use_db(seeded_db)
    at = _report("rec-0005")
    assert any(c.value.startswith("Confidence says how far") for c in at.caption)


# --------------------------------------------------------------------------- calibration


def _verdicts(at: AppTest) -> list[str]:
    return [w.value for w in at.warning if "verdict" in w.value]


def test_calibration_warns_below_the_minimum_of_verdicts(seeded_db, use_db):
    use_db(seeded_db)  # 12 verdicts
    at = open_page("calibration")
    assert not at.exception
    warnings = _verdicts(at)
    assert len(warnings) == 1
    assert warnings[0].startswith("Only 12 verdicts")
    assert f"fewer than {MIN_CALIBRATION_VERDICTS}" in warnings[0]


def test_calibration_does_not_warn_at_the_minimum(fresh_db, use_db):
    with write_session(get_engine(fresh_db.url)) as s:
        reviewed = set(s.execute(select(m.Review.statement_check_id)).scalars())
        more = (
            s.execute(
                select(m.StatementCheck)
                .where(m.StatementCheck.status != "grounded")
                .where(m.StatementCheck.id.not_in(reviewed))  # type: ignore[union-attr]
                .limit(MIN_CALIBRATION_VERDICTS - len(reviewed))
            )
            .scalars()
            .all()
        )
        for j, sc in enumerate(more):
            repo.create_review(
                session=s,
                statement_check_id=int(sc.id or 0),
                reviewer="Dr. More",
                verdict="false_alarm" if j % 2 else "confirmed",
            )
    use_db(fresh_db)
    at = open_page("calibration")
    assert not at.exception
    reviewed_shown = next(x.value for x in at.metric if x.label == "Reviewed statements")
    assert int(reviewed_shown) == MIN_CALIBRATION_VERDICTS
    assert _verdicts(at) == []


def test_calibration_metrics_are_explained(seeded_db, use_db):
    use_db(seeded_db)
    at = open_page("calibration")
    helps = {x.label: x.help for x in at.metric}
    for label in ("ECE (lower is better)", "Brier (lower is better)", "AURC (lower is better)"):
        assert helps[label]
        assert helps[label].endswith(".")
    assert all(helps.values())
    box = next(e for e in at.expander if e.label == "What these numbers mean")
    assert "Expected calibration error" in box.markdown[0].value


def test_the_threshold_explorer_says_what_the_chosen_threshold_would_change(seeded_db, use_db):
    use_db(seeded_db)
    at = open_page("calibration")
    said = [x.value for x in at.info]
    assert any(s.startswith("This is the threshold in force (0.25)") for s in said)
    at.slider(key="calibration_threshold").set_value(0.9).run()
    said = [x.value for x in at.info]
    change = next(s for s in said if s.startswith("Raising the threshold from 0.25 to 0.90"))
    assert "flags away" in change
    assert "Among reviewed statements" in change
    at.slider(key="calibration_threshold").set_value(0.0).run()
    assert any(x.value.startswith("Lowering the threshold") for x in at.info)


def test_the_downloaded_reports_say_the_risk_level_the_page_shows(plain_db, use_db):
    from dashboard import data, exports

    use_db(plain_db)
    critical = data.conversation(repo.conversation_id_for("pl-critical"))
    calm = data.conversation(repo.conversation_id_for("pl-calm"))
    assert critical is not None
    assert calm is not None
    shown = (
        "high (a critical finding: allergy (statement #2); the combined risk score alone "
        "gives medium)"
    )
    assert f"- Risk level: {shown}\n" in exports.report_markdown(critical)
    assert "<p>Risk level: <strong>high (a critical finding" in exports.report_html(critical)
    assert "- Risk level: medium\n" in exports.report_markdown(calm)
    assert "<p>Risk level: <strong>medium</strong></p>" in exports.report_html(calm)
