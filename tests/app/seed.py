"""A small seeded database for the dashboard's AppTests (stored through the real repository).

Two models, three patients, twenty days of answers; each answer has grounded, unsupported and
contradicted statements with offsets into the answer and the source; one answer holds a
``<script>`` tag; contradictions, entity mentions, confidence, SelfCheck and claim-audit rows
and a few verdicts are there so every page has something real to show.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from sqlalchemy import select
from streamlit.testing.v1 import AppTest

from core.storage import models as m
from core.storage import repo
from core.storage.db import get_engine, upgrade_to_head, write_session

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "streamlit_app.py")
END = date(2026, 3, 20)
DAYS = 20
PATIENTS = ("p-1", "p-2", "p-3")
MODELS = ("model-a", "model-b")
SCRIPT_ANSWER_ID = "rec-script"
SOURCE = (
    "Visit note. Active medications: lisinopril 10 mg once daily; metformin 500 mg twice daily."
    " Allergies: penicillin (hives). The patient denies chest pain."
)


@dataclass(frozen=True, slots=True)
class Seeded:
    url: str
    conversations: int
    per_model: dict[str, int]
    flagged_statements: int
    script_conversation_id: str


def _answer(i: int) -> tuple[str, list[tuple[str, str, str | None, float]]]:
    """Answer text and (statement, status, evidence, confidence) per statement."""
    parts = [
        (
            "The patient takes lisinopril 10 mg once daily.",
            "grounded",
            "lisinopril 10 mg once daily",
            0.9,
        ),
        (
            "The patient takes metformin 1000 mg twice daily.",
            "contradicted",
            "metformin 500 mg twice daily",
            0.6 + (i % 4) * 0.1,
        ),
        (
            "The patient also takes gabapentin 300 mg at bedtime.",
            "unsupported",
            None,
            0.4 + (i % 5) * 0.1,
        ),
    ]
    return " ".join(p[0] for p in parts), parts


def seed_database(path: Path) -> Seeded:
    """Create and fill a SQLite database at ``path``."""
    url = f"sqlite:///{path}"
    upgrade_to_head(url)
    engine = get_engine(url)
    bundles = []
    per_model = dict.fromkeys(MODELS, 0)
    flagged = 0
    start = datetime.combine(END, datetime.min.time(), tzinfo=UTC) - timedelta(days=DAYS - 1)
    n = 0
    for day in range(DAYS):
        for k, pid in enumerate(PATIENTS):
            model = MODELS[(day + k) % 2]
            # model-a answers twice a day, model-b once: the model filter changes the numbers
            for rep in range(2 if model == "model-a" else 1):
                n += 1
                ext = f"rec-{n:04d}"
                answer, parts = _answer(n)
                if n == 7:
                    ext = SCRIPT_ANSWER_ID
                    answer = "<script>alert('x')</script> " + answer
                at = start + timedelta(days=day, hours=9 + k + rep)
                conv = m.Conversation(
                    id="",
                    external_id=ext,
                    patient_id=pid,
                    query="What medications is the patient taking?",
                    query_timestamp=at,
                    answer=answer,
                    model_used=model,
                    sources=[{"id": "note-1", "text": SOURCE, "type": "note"}],
                    grounding_score=1 / 3,
                    consistency_score=0.75 if n % 3 == 0 else 1.0,
                    confidence_score=0.5 + (n % 5) * 0.1,
                    hallucination_risk=0.2 + (n % 7) * 0.1,
                    overall_quality=0.5,
                    risk_level="medium",
                    is_flagged=True,
                    flagged_statements=2,
                    total_statements=3,
                    execution_time_ms=40,
                    check_status={
                        "grounding": {"status": "ok", "reason": None},
                        "nli": {"status": "unavailable", "reason": "no NLI model"},
                    },
                    warnings=["Low grounding score"],
                    content_hash=f"h{n}",
                )
                bundle = repo.ConversationBundle(conversation=conv)
                for idx, (text, status, evidence, conf) in enumerate(parts):
                    s0 = answer.index(text)
                    e0 = SOURCE.find(evidence) if evidence else -1
                    bundle.statements.append(
                        m.StatementCheck(
                            conversation_id="",
                            statement=text,
                            statement_index=idx,
                            start=s0,
                            end=s0 + len(text),
                            is_grounded=status == "grounded",
                            status=status,
                            source_chunk_id="note-1" if evidence else None,
                            supporting_evidence=evidence,
                            evidence_start=e0 if e0 >= 0 else None,
                            evidence_end=e0 + len(evidence) if evidence and e0 >= 0 else None,
                            grounding_confidence=conf,
                            verification_method="semantic_match" if evidence else "unsupported",
                            reason="dose differs" if status == "contradicted" else None,
                            risk=(0.5 + 0.5 * conf)
                            if status == "contradicted"
                            else (0.25 + 0.5 * conf)
                            if status == "unsupported"
                            else 0.02,
                        )
                    )
                    flagged += status != "grounded"
                if n % 3 == 0:
                    bundle.consistency.append(
                        m.ConsistencyCheck(
                            patient_id=pid,
                            current_conversation_id="",
                            previous_conversation_id=repo.conversation_id_for(f"rec-{n - 1:04d}")
                            if n > 3
                            else None,
                            check_type="entity_consistency",
                            is_consistent=False,
                            inconsistency_description="metformin dose changed without an action",
                            current_statement="The patient takes metformin 1000 mg twice daily.",
                            previous_statement="The patient takes metformin 500 mg twice daily.",
                            entity="metformin",
                            consistency_score=0.75,
                            severity="medium",
                        )
                    )
                for kind, name, assertion, action in (
                    ("medication", "lisinopril", "present", None),
                    ("medication", "metformin", "present", "increased" if n % 3 == 0 else None),
                    ("allergy", "penicillin", "present", None),
                ):
                    bundle.mentions.append(
                        m.EntityMention(
                            patient_id=pid,
                            conversation_id="",
                            at=at,
                            kind=kind,
                            name=name,
                            assertion=assertion,
                            action=action,
                        )
                    )
                bundle.confidence.append(
                    m.ConfidenceMetric(
                        conversation_id="",
                        retrieval_confidence=0.8,
                        source_confidence=0.7,
                        extraction_confidence=0.6,
                        consistency_confidence=0.9,
                        aggregate_confidence=0.75,
                        uncertainty_level="low",
                    )
                )
                bundle.selfcheck.append(
                    m.SelfCheckResult(
                        conversation_id="",
                        method="ngram",
                        status="ok",
                        sample_count=3,
                        sentence_scores=[
                            {"index": j, "text": p[0], "score": 0.2 + 0.3 * j}
                            for j, p in enumerate(parts)
                        ],
                        passage_score=0.5,
                        risk_score=0.5,
                        risk_level="medium",
                    )
                )
                bundle.claims.append(
                    m.ClaimAudit(
                        conversation_id="",
                        claim_id="c1",
                        claim_text=parts[2][0],
                        evidence_ids=[],
                        evidence_support=0.1,
                        evidence_dependence=0.2,
                        is_flagged=True,
                        flag_reason="unsupported",
                        gap_type="missing",
                    )
                )
                bundles.append(bundle)
                per_model[model] += 1
    outcomes = repo.store_bundles(engine=engine, bundles=bundles)
    script_id = repo.conversation_id_for(SCRIPT_ANSWER_ID)
    # a few verdicts for the calibration page
    with write_session(engine) as s:
        checks = s.execute(
            select(m.StatementCheck).where(m.StatementCheck.status != "grounded").limit(12)
        ).scalars()
        for j, sc in enumerate(checks):
            repo.create_review(
                session=s,
                statement_check_id=int(sc.id),
                reviewer="Dr. Seed",
                verdict="confirmed" if sc.status == "contradicted" or j % 3 else "false_alarm",
            )
    return Seeded(url, len(outcomes), per_model, flagged, script_id)


def open_page(page: str | None = None, *, dates: tuple[date, date] | None = None) -> AppTest:
    """Run the app (and switch to ``page``, e.g. ``"review"``), all dates selected by default."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["sidebar_dates"] = dates or (END - timedelta(days=DAYS - 1), END)
    at.run()
    if page:
        at.switch_page(f"app_pages/{page}.py").run()
    return at


# --------------------------------------------------------------------------- session helpers

PASSWORD = "correct horse battery"
UPLOAD_TRANSCRIPT = "Doctor: Still on the lisinopril 10 mg?\nPatient: Yes, every morning."
UPLOAD_ANSWER = "He takes lisinopril 10 mg every morning. He also takes warfarin 5 mg daily."


def login(at: AppTest, username: str, password: str = PASSWORD) -> AppTest:
    """Fill in and submit the login form."""
    at.text_input(key="auth_username").input(username)
    at.text_input(key="auth_password").input(password)
    at.button[0].click().run()
    return at


def save_upload(at: AppTest, patient_id: str) -> AppTest:
    """On the upload page of a running app: paste a transcript and an answer (lexical checks
    only) and save them as a conversation of ``patient_id``, as a user would."""
    at.switch_page("app_pages/upload.py").run()
    at.toggle(key="upload_semantic").set_value(False)
    at.text_area(key="upload_transcript_text").input(UPLOAD_TRANSCRIPT)
    at.text_area(key="upload_answer_text").input(UPLOAD_ANSWER)
    at.run()
    at.text_input(key="upload_patient").input(patient_id)
    at.text_input(key="upload_query").input("Which medicines does he take?")
    at.get("form_submit_button")[0].click().run()
    return at
