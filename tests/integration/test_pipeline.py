"""The quality pipeline end to end on SQLite and PostgreSQL, with the real MiniLM model."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from core.checks import OK, skipped
from core.config import load_settings
from core.pipeline import QualityPipeline
from core.records import ConversationRecord
from core.stages import GroundingStage
from core.storage import models as m
from core.storage import repo
from core.storage.db import read_session

pytestmark = pytest.mark.model

NOTE = (
    "Medications: metformin 500 mg twice daily, lisinopril 10 mg daily, atorvastatin 20 mg "
    "nightly. Allergies: penicillin (rash). Problem list: type 2 diabetes, hypertension."
)


def rec(
    i: int, day: int, answer: str, *, patient: str = "p-1", **extra: object
) -> ConversationRecord:
    return ConversationRecord.model_validate(
        {
            "id": f"r-{i}",
            "patient_id": patient,
            "timestamp": datetime(2026, 1, day, 9, tzinfo=UTC).isoformat(),
            "query": "Summarise the patient's medications, allergies and problems.",
            "answer": answer,
            "sources": [{"id": f"note-{i}", "text": NOTE, "type": "note", "similarity": 0.8}],
            "model": "model-a",
            **extra,
        }
    )


HISTORY = [
    rec(
        1,
        2,
        "The patient takes metformin 500 mg twice daily, lisinopril 10 mg daily and "
        "atorvastatin 20 mg nightly. She is allergic to penicillin. She has type 2 "
        "diabetes and hypertension.",
    ),
    rec(2, 9, "Atorvastatin was discontinued due to myalgia. Blood pressure 142/88."),
    rec(
        3,
        16,
        "Blood pressure today 128/80. Lisinopril was stopped and then restarted at 10 mg daily.",
    ),
    # The contradictions: a discontinued drug listed as current, a denied chronic diagnosis,
    # an allergy that vanished.
    rec(
        4,
        23,
        "She currently takes atorvastatin 20 mg nightly. She has no history of diabetes. "
        "No known drug allergies.",
    ),
    # Another patient saying the opposite is not a contradiction for p-1.
    rec(5, 24, "He takes atorvastatin 20 mg nightly and has no diabetes.", patient="p-2"),
]


@pytest.fixture
def pipeline(engine: Engine) -> QualityPipeline:
    return QualityPipeline(settings=load_settings(), engine=engine, llm=None)


def test_consistency_over_a_patient_history(pipeline: QualityPipeline, engine: Engine) -> None:
    reports = pipeline.process_many(HISTORY)
    by_id = {r.external_id: r for r in reports}
    assert by_id["r-1"].checks["consistency"].status == "skipped"  # nothing earlier
    for legit in ("r-2", "r-3"):
        assert by_id[legit].consistency.is_consistent, by_id[legit].consistency.contradictions
    bad = by_id["r-4"].consistency
    kinds = {(c.entity, c.check_type) for c in bad.contradictions}
    entities = {e for e, _ in kinds}
    assert "medication:atorvastatin" in entities
    assert any(e.startswith("condition:") and "diabetes" in e for e in entities)
    assert "allergy:penicillin" in entities
    assert bad.consistency_score < 0.8
    assert by_id["r-4"].is_flagged
    assert by_id["r-5"].checks["consistency"].status == "skipped"
    with read_session(engine) as s:
        stored = repo.patient_contradictions(session=s, patient_id="p-1")
        timeline = repo.entity_timeline(session=s, patient_id="p-1")
        assert repo.patient_contradictions(session=s, patient_id="p-2") == []
    assert {c.current_conversation_id for c in stored} == {by_id["r-4"].conversation_id}
    assert all(c.previous_conversation_id for c in stored)
    assert {"atorvastatin", "penicillin"} <= {t.name for t in timeline}


def test_report_metrics_statuses_and_storage(pipeline: QualityPipeline, engine: Engine) -> None:
    good, bad = pipeline.process_many(
        [
            rec(
                1,
                2,
                "The patient takes metformin 500 mg twice daily. She is allergic to penicillin.",
            ),
            rec(
                2,
                3,
                "The patient takes metformin 1000 mg twice daily and warfarin 5 mg daily.",
                samples=["She takes metformin 500 mg.", "Metformin 500 mg."],
                temperature=0.3,
            ),
        ]
    )
    assert good.metrics.grounding_score == 1.0
    assert bad.metrics.grounding_score < 0.7
    assert bad.metrics.hallucination_risk > good.metrics.hallucination_risk
    assert bad.metrics.overall_quality < good.metrics.overall_quality
    assert good.checks["grounding"].status == "ok"
    # the shipped learned verifier is the inference tier: never unavailable on a fresh install
    assert good.checks["grounding.inference"].status in ("ok", "skipped")
    assert good.checks["grounding.nli"].status == "unavailable"
    assert "GROUNDWATCH_NLI_MODEL" in (good.checks["grounding.nli"].reason or "")
    assert good.checks["selfcheck"].status == "skipped"
    assert bad.checks["selfcheck"].status == "ok"
    assert bad.selfcheck.sample_count == 2
    assert bad.execution_time_ms >= 0
    assert any(
        "warfarin" in st.statement for st in bad.grounding.statements if st.status != "grounded"
    )
    with read_session(engine) as s:
        detail = repo.get_conversation(session=s, conversation_id="r-2")
    assert detail is not None
    c = detail.conversation
    assert c.grounding_score == pytest.approx(bad.metrics.grounding_score)
    assert c.check_status["grounding.inference"]["status"] == "ok"
    assert c.check_status["grounding.learned"]["status"] == "ok"
    assert c.feature_flags["hallucination_detection"] is False
    assert len(detail.statements) == len(bad.grounding.statements)
    assert detail.selfcheck
    assert detail.selfcheck[0].status == "ok"
    assert detail.confidence
    assert detail.confidence[0].extraction_confidence == pytest.approx(0.85)
    # the same record again changes nothing
    again = pipeline.process(
        rec(1, 2, "The patient takes metformin 500 mg twice daily. She is allergic to penicillin.")
    )
    assert again.store_status == "unchanged"


def test_evidence_quotes_are_grounded_and_counted(
    pipeline: QualityPipeline, engine: Engine
) -> None:
    transcript = "[doctor] How do you sleep? [patient] I can't sleep at night <laughter> at all."
    report = pipeline.process(
        ConversationRecord.model_validate(
            {
                "id": "ev-1",
                "patient_id": "p-9",
                "query": "PHQ-8 evidence",
                "answer": "The patient reports poor sleep.",
                "sources": [{"id": "t", "text": transcript, "type": "transcript"}],
                "evidence": {
                    "PHQ8_Sleep": ["I can't sleep at night"],
                    "PHQ8_Depressed": ["I feel hopeless every day"],
                },
            }
        )
    )
    assert report.checks["evidence"].status == "ok"
    assert report.evidence.stats.validated_count == 1
    assert report.evidence.stats.rejected_count == 1
    with read_session(engine) as s:
        d = repo.get_conversation(session=s, conversation_id="ev-1")
    assert d is not None
    assert d.evidence[0].rejected_count == 1
    assert d.evidence[0].transcript_len == len(transcript)


def test_disabled_history_keeps_scores_not_text(engine: Engine) -> None:
    settings = load_settings(enable_conversation_history=False)
    QualityPipeline(settings=settings, engine=engine, llm=None).process(
        rec(1, 2, "The patient takes metformin 500 mg twice daily.")
    )
    with read_session(engine) as s:
        d = repo.get_conversation(session=s, conversation_id="r-1")
    assert d is not None
    assert d.conversation.answer is None
    assert d.conversation.query is None
    assert d.conversation.grounding_score == 1.0
    assert all(st.statement is None for st in d.statements)


# Tables with patient-text columns that the pipeline does not write, each with the reason;
# every other one must get rows from the records below, so that no column is NULL by absence.
NOT_WRITTEN_BY_THE_PIPELINE = {
    "review": "a clinician's verdict, given after storing",
    "ingest_job": "the queue's copy of a record, written before the pipeline runs",
}
SENTINEL = "Zorblatt Quixley"


def history_batch() -> list[ConversationRecord]:
    """Two answers about one patient that fill every table the pipeline writes: statements
    with evidence and reasons, contradictions with the earlier answer (a dose, an allergy, a
    diagnosis), mentions with doses, SelfCheck sentences, claims, evidence counts, confidence."""
    return [
        rec(
            1,
            2,
            f"{SENTINEL} takes metformin 500 mg twice daily. She is allergic to penicillin. "
            "She has type 2 diabetes.",
        ),
        rec(
            2,
            9,
            f"{SENTINEL} takes metformin 1000 mg twice daily and warfarin 5 mg daily. "
            "No known drug allergies. She has no history of diabetes.",
            samples=[f"{SENTINEL} takes metformin 500 mg.", "Metformin 500 mg twice daily."],
            evidence={"PHQ8_Sleep": ["metformin 500 mg", f"{SENTINEL} sleeps badly"]},
            temperature=0.3,
        ),
    ]


def stored_patient_text(engine: Engine) -> dict[str, list[object]]:
    """Every stored value of every column tagged as patient text, by ``table.column`` (a JSON
    column cleared reads back as None too)."""
    with read_session(engine) as s:
        return {
            f"{table.name}.{column}": list(s.execute(select(table.c[column])).scalars())
            for table, column, _ in m.patient_text_columns()
        }


@pytest.mark.parametrize("history", [False, True], ids=["history-off", "history-on"])
def test_history_off_stores_no_tagged_column_of_any_table(engine: Engine, history: bool) -> None:
    """With conversation history off, every column the schema tags as patient text is empty
    in every row the pipeline stored, whatever table holds it (the column list comes from the
    tags, so a new tagged column is covered without editing this test); scores are kept.
    With history on, the same records keep their text."""
    settings = load_settings(enable_conversation_history=history)
    reports = QualityPipeline(settings=settings, engine=engine, llm=None).process_many(
        history_batch()
    )
    assert reports[1].checks["selfcheck"].status == "ok"
    assert reports[1].consistency is not None
    assert reports[1].consistency.contradictions
    values = stored_patient_text(engine)
    written = {t.name for t, _, _ in m.patient_text_columns()} - set(NOT_WRITTEN_BY_THE_PIPELINE)
    with read_session(engine) as s:
        rowless = [
            name
            for name in sorted(written)
            if s.execute(
                select(func.count()).select_from(m.SQLModel.metadata.tables[name])
            ).scalar_one()
            == 0
        ]
    assert rowless == [], "the records should give rows in every table the pipeline writes"
    with read_session(engine) as s:
        detail = repo.get_conversation(session=s, conversation_id="r-2")
    assert detail is not None
    assert detail.conversation.grounding_score is not None
    assert detail.conversation.consistency_score is not None
    assert all(st.statement_hash and st.status for st in detail.statements)
    if history:
        assert all(values["conversation.query"])
        assert all(values["conversation.answer"])
        assert any(SENTINEL in str(v) for v in values["statement_check.statement"])
        return
    stored = [key for key, vs in values.items() if any(v is not None for v in vs)]
    assert stored == [], "columns tagged as patient text stored with history off"
    with read_session(engine) as s:  # and nowhere else either
        left = [
            f"{table.name}.{k}"
            for table in m.SQLModel.metadata.sorted_tables
            for row in s.execute(select(table)).mappings()
            for k, v in row.items()
            if SENTINEL in str(v)
        ]
    assert left == []


def test_pipeline_logs_no_patient_text(
    pipeline: QualityPipeline, caplog: pytest.LogCaptureFixture
) -> None:
    sentinel = "Zebulon Quaxwright"
    caplog.set_level(logging.DEBUG)
    pipeline.process(
        rec(
            1,
            2,
            f"{sentinel} takes metformin 900 mg and quinapril.",
            evidence={"PHQ8_Sleep": [f"{sentinel} cannot sleep"]},
        )
    )
    for record in caplog.records:
        assert sentinel not in record.getMessage()
        assert "quinapril" not in record.getMessage()


def test_embeddings_persist_in_this_database_only(
    pipeline: QualityPipeline, engine: Engine
) -> None:
    import uuid

    from sqlalchemy import func, select

    from core.backends.embedder import get_embedder
    from core.storage.models import EmbeddingCache

    # a source no earlier test embedded, so it is not already in the process's memory cache
    note = f"Visit {uuid.uuid4().hex}: metformin 500 mg twice daily, lisinopril 10 mg daily."
    pipeline.process(
        ConversationRecord.model_validate(
            {
                "id": "emb-1",
                "patient_id": "p-1",
                "query": "Medications?",
                "answer": "The patient takes metformin 500 mg twice daily.",
                "sources": [{"id": "n", "text": note}],
            }
        )
    )
    with read_session(engine) as s:
        stored = s.execute(select(func.count()).select_from(EmbeddingCache)).scalar_one()
    assert stored > 0
    assert pipeline.embedder.store is not None
    assert get_embedder(None).store is None  # the shared model is not tied to one database


def test_an_unchanged_record_costs_a_lookup_and_no_check(
    pipeline: QualityPipeline, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = {r.external_id: r for r in pipeline.process_many(HISTORY)}
    edited = rec(3, 16, "Blood pressure today 130/80. Lisinopril was restarted at 10 mg daily.")
    checked: list[list[str]] = []
    original = GroundingStage.run

    def spy(self: GroundingStage, pipeline: object, works: list) -> None:  # type: ignore[type-arg]
        checked.append([w.record.id for w in works])
        original(self, pipeline, works)  # type: ignore[arg-type]

    monkeypatch.setattr(GroundingStage, "run", spy)
    again = pipeline.process_many([*HISTORY[:2], edited, *HISTORY[3:]])
    assert checked == [["r-3"]]  # only the edited record is checked again
    by_id = {r.external_id: r for r in again}
    assert by_id["r-3"].store_status == "updated"
    for key in ("r-1", "r-2", "r-4", "r-5"):
        stored, before = by_id[key], first[key]
        assert stored.store_status == "unchanged"
        assert stored.conversation_id == before.conversation_id
        assert stored.is_flagged == before.is_flagged
        assert stored.metrics.grounding_score == pytest.approx(before.metrics.grounding_score)
        assert stored.checks["grounding"].status == before.checks["grounding"].status
        assert stored.warnings == before.warnings
    checked.clear()
    assert {r.store_status for r in pipeline.process_many(HISTORY[:2])} == {"unchanged"}
    assert checked == []  # nothing to check: no model work at all
    with read_session(engine) as session:
        assert repo.count_conversations(session=session) == len(HISTORY)


def test_a_record_given_twice_in_one_batch_is_checked(pipeline: QualityPipeline) -> None:
    pipeline.process_many(HISTORY[:1])
    twice = [HISTORY[0], rec(1, 2, "The patient takes metformin 500 mg twice daily.")]
    reports = pipeline.process_many(twice)
    assert [r.store_status for r in reports][-1] == "updated"


class WordCountStage:
    """A toy detector added through the seam alone: no edit of the pipeline or storage."""

    name = "word_count"

    def run(self, pipeline: object, works: list) -> None:  # type: ignore[type-arg]
        for w in works:
            w.results[self.name] = len(w.record.answer.split())
            w.checks[self.name] = OK if w.record.answer.strip() else skipped("empty answer")

    def rows(self, work: object, conversation_id: str) -> list[object]:
        return []


def test_a_stage_registered_with_the_pipeline_runs_and_its_status_is_stored(
    pipeline: QualityPipeline, engine: Engine
) -> None:
    pipeline.stages.append(WordCountStage())
    (report,) = pipeline.process_many(HISTORY[:1])
    assert report.checks["word_count"] == OK
    with read_session(engine) as session:
        stored = repo.get_conversation(session=session, conversation_id=report.conversation_id)
    assert stored is not None
    assert stored.conversation.check_status["word_count"] == {"status": "ok", "reason": None}


def test_a_batch_of_unchanged_records_loads_no_model(
    pipeline: QualityPipeline, engine: Engine
) -> None:
    pipeline.process_many(HISTORY)
    fresh = QualityPipeline(settings=load_settings(), engine=engine, llm=None)
    assert {r.store_status for r in fresh.process_many(HISTORY)} == {"unchanged"}
    assert fresh._backends == {}  # nothing was loaded: no model work to do
    assert fresh.backend_status["embedder"].status == "ok"  # asking loads it


def test_records_outside_the_check_sample_rate_are_stored_with_every_check_skipped(
    engine: Engine,
) -> None:
    from core.pipeline import in_sample

    settings = load_settings().model_copy(update={"check_sample_rate": 0.5})
    pipeline = QualityPipeline(settings=settings, engine=engine, llm=None)
    reports = pipeline.process_many(HISTORY)
    for report in reports:
        if in_sample(report.external_id, 0.5):
            assert report.checks["grounding"].status == "ok"
            continue
        for name in ("evidence", "grounding", "selfcheck", "epistemic", "consistency"):
            assert report.checks[name].status == "skipped", name
            assert report.checks[name].reason == "not sampled (check sample rate 0.5)"
        assert report.metrics.grounding_score is None
        assert not report.is_flagged
    sampled = [r.external_id for r in reports if in_sample(r.external_id, 0.5)]
    assert 0 < len(sampled) < len(HISTORY)  # both kinds among these ids
    with read_session(engine) as session:
        assert repo.count_conversations(session=session) == len(HISTORY)
