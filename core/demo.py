"""Synthetic clinical demo data, run through the real pipeline.

Every patient, visit note, transcript and answer here is invented from small templates. About
a third of the answers carry one planted hallucination of a kind the detectors catch: an
invented drug, a wrong dose, a negation flip, a laterality swap, a discontinued drug listed as
current, a chronic diagnosis denied, a vanished allergy. Some answers also say something true
in words of their own ("the patient has not missed a dose of metformin"), which a verifier
may flag, and a fifth something true that no source records ("the patient prefers morning
appointments"), which a verifier rightly finds unsupported and the reviewer, who knows the
patient, calls a false alarm. Some flagged statements get a reviewer's verdict (confirmed when the
statement is the planted one, else a false alarm), and about a quarter of those a second
reviewer's, who disagrees now and then (as two clinicians do), so the calibration page has
labels of every kind. Everything is drawn from ``random.Random(seed)``: the same
arguments give the same data.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlmodel import col

from core.records import ConversationRecord

log = logging.getLogger(__name__)

HALLUCINATION_KINDS = (
    "invented_drug",
    "wrong_dose",
    "negation_flip",
    "laterality_swap",
    "discontinued_relisted",
    "denied_chronic",
    "vanished_allergy",
)
MODELS = ("clinical-llm-a", "clinical-llm-b")
REVIEWERS = ("Dr. Rivera", "Dr. Okafor", "Nurse Lindqvist")

# condition -> (drug, dose, unit, frequency)
_CONDITIONS: dict[str, tuple[str, str, str, str]] = {
    "hypertension": ("lisinopril", "10", "mg", "once daily"),
    "type 2 diabetes": ("metformin", "500", "mg", "twice daily"),
    "hyperlipidemia": ("atorvastatin", "40", "mg", "at bedtime"),
    "hypothyroidism": ("levothyroxine", "75", "mcg", "every morning"),
    "atrial fibrillation": ("apixaban", "5", "mg", "twice daily"),
    "asthma": ("albuterol", "2", "puffs", "as needed"),
    "depression": ("sertraline", "50", "mg", "once daily"),
    "gout": ("allopurinol", "300", "mg", "once daily"),
}
_ALLERGIES = (
    ("penicillin", "hives"),
    ("sulfa drugs", "rash"),
    ("codeine", "nausea"),
    ("latex", "itching"),
    ("peanuts", "swelling"),
)
_INVENTED = (
    ("gabapentin", "300 mg at bedtime"),
    ("warfarin", "5 mg once daily"),
    ("prednisone", "20 mg once daily"),
    ("tramadol", "50 mg every six hours"),
    ("furosemide", "40 mg every morning"),
)
_JOINTS = ("knee", "shoulder", "hip", "ankle")
_DENIED = ("chest pain", "shortness of breath", "fever", "dizziness")
_STOPPED = (
    ("ibuprofen", "stomach upset"),
    ("naproxen", "heartburn"),
    ("amlodipine", "ankle swelling"),
)
_QUERIES = (
    "What medications is the patient currently taking?",
    "Summarise the most recent visit.",
    "Does the patient have any allergies or chronic conditions?",
    "What did the patient report at the last visit?",
)


@dataclass(frozen=True, slots=True)
class DemoReview:
    """A verdict the demo gives after the pipeline ran: the flagged statements of one record.

    A flagged statement inside ``planted`` (answer offsets) is confirmed; others are false
    alarms; ``unsure`` turns the verdict into "unsure".
    """

    record_id: str
    planted: tuple[int, int] | None
    reviewer: str
    unsure: bool = False
    note: str | None = None
    # a second reviewer of the same statements, who disagrees with the first this often
    second: str | None = None
    disagree: float = 0.0


@dataclass(frozen=True, slots=True)
class _Patient:
    id: str
    sex: str
    age: int
    conditions: tuple[str, ...]
    allergy: tuple[str, str]
    side: str
    joint: str
    stopped: tuple[str, str]
    stop_day: int
    denied: str


def _patient(rng: random.Random, index: int, days: int) -> _Patient:
    return _Patient(
        id=f"demo-p{index + 1:03d}",
        sex=rng.choice(("female", "male")),
        age=rng.randint(34, 88),
        conditions=tuple(rng.sample(sorted(_CONDITIONS), k=rng.choice((2, 2, 3)))),
        allergy=rng.choice(_ALLERGIES),
        side=rng.choice(("left", "right")),
        joint=rng.choice(_JOINTS),
        stopped=rng.choice(_STOPPED),
        stop_day=rng.randint(days // 4, (3 * days) // 4),
        denied=rng.choice(_DENIED),
    )


def _med(cond: str) -> str:
    drug, dose, unit, freq = _CONDITIONS[cond]
    return f"{drug} {dose} {unit} {freq}"


def _sources(p: _Patient, day: int, visit: int) -> list[dict[str, Any]]:
    stopped_drug, why = p.stopped
    meds = [_med(c) for c in p.conditions]
    if day < p.stop_day:
        meds.append(f"{stopped_drug} as needed for {p.side} {p.joint} pain")
        stop_line = ""
    else:
        stop_line = f" {stopped_drug.capitalize()} was stopped because of {why}."
    note = (
        f"Visit note. {p.age}-year-old {p.sex}. Active medications: {'; '.join(meds)}. "
        f"Allergies: {p.allergy[0]} ({p.allergy[1]}). "
        f"Chronic conditions: {', '.join(p.conditions)}. "
        f"The patient denies {p.denied}. Assessment: {p.side} {p.joint} osteoarthritis."
        f"{stop_line}"
    )
    drug0 = _CONDITIONS[p.conditions[0]]
    transcript = (
        "Doctor: How have you been since the last visit?\n"
        f"Patient: Mostly fine. My {p.side} {p.joint} still aches in the morning.\n"
        f"Doctor: Any {p.denied}?\n"
        f"Patient: No, no {p.denied} at all.\n"
        f"Doctor: Are you still taking the {drug0[0]} {drug0[1]} {drug0[2]} {drug0[3]}?\n"
        "Patient: Yes, I haven't missed a dose.\n"
        f"Doctor: And you are still allergic to {p.allergy[0]}?\n"
        f"Patient: Yes, it gives me {p.allergy[1]}."
    )
    return [
        {"id": f"{p.id}-note-{visit}", "text": note, "type": "note", "similarity": 0.84},
        {
            "id": f"{p.id}-visit-{visit}",
            "text": transcript,
            "type": "transcript",
            "similarity": 0.78,
        },
    ]


def _true_sentences(p: _Patient, day: int, rng: random.Random) -> list[str]:
    out = [f"The patient takes {_med(c)}." for c in p.conditions]
    out.append(f"The patient is allergic to {p.allergy[0]}.")
    out.append(f"The patient has {' and '.join(p.conditions)}.")
    out.append(f"The patient denies {p.denied}.")
    out.append(f"The patient has {p.side} {p.joint} osteoarthritis.")
    if day >= p.stop_day:
        out.append(f"{p.stopped[0].capitalize()} was stopped because of {p.stopped[1]}.")
    rng.shuffle(out)
    return out[: rng.randint(3, min(6, len(out)))]


def _true_in_other_words(p: _Patient, rng: random.Random) -> str:
    """A statement the sources bear out, said in words they do not use."""
    drug = _CONDITIONS[p.conditions[0]][0]
    return rng.choice(
        (
            f"The patient has not missed a dose of {drug}.",
            f"The {p.joint} on the {p.side} side still aches in the mornings.",
            f"{p.allergy[0].capitalize()} gives the patient {p.allergy[1]}.",
            f"The patient is {p.age} years old.",
            f"Apart from the {p.joint}, the patient says things have been mostly fine.",
        )
    )


# What a clinician knows of the patient that no source of the answer records: a verifier
# rightly finds no support for it, and the reviewer, who knows it is true, calls the flag a
# false alarm (the most common false alarm in practice: the record is incomplete).
_UNRECORDED = (
    "The patient walks for half an hour most days.",
    "The patient's daughter fills the weekly pill organiser.",
    "The patient prefers morning appointments.",
    "The patient had this season's flu vaccine at the pharmacy.",
    "The patient works part time at the town library.",
    "The patient sleeps about seven hours a night.",
)


def _planted(p: _Patient, kind: str, day: int, rng: random.Random) -> str | None:
    if kind == "invented_drug":
        drug, how = rng.choice(_INVENTED)
        return f"The patient also takes {drug} {how}."
    if kind == "wrong_dose":
        drug, dose, unit, freq = _CONDITIONS[p.conditions[0]]
        wrong = str(int(float(dose) * rng.choice((2, 4))))
        return f"The patient takes {drug} {wrong} {unit} {freq}."
    if kind == "negation_flip":
        return f"The patient reports {p.denied}."
    if kind == "laterality_swap":
        other = "left" if p.side == "right" else "right"
        return f"The patient has {other} {p.joint} osteoarthritis."
    if kind == "discontinued_relisted":
        if day < p.stop_day:
            return None
        return f"The patient is currently taking {p.stopped[0]} for {p.joint} pain."
    if kind == "denied_chronic":
        return f"The patient has no history of {p.conditions[-1]}."
    if kind == "vanished_allergy":
        return "No known drug allergies."
    raise ValueError(f"unknown hallucination kind: {kind}")


def generate_demo(
    *,
    patients: int = 30,
    answers: int = 600,
    days: int = 90,
    seed: int = 7,
    end: datetime | None = None,
) -> tuple[list[ConversationRecord], list[DemoReview]]:
    """Synthetic records (oldest first) and the verdicts to give once they are checked.

    Args:
        patients: number of patients (answers are spread over them).
        answers: number of answers (records).
        days: the span of the answers, ending at ``end``.
        seed: everything is drawn from ``random.Random(seed)``.
        end: last day (default: today, midnight UTC); with it fixed the output is identical.
    """
    if patients < 1 or answers < 1 or days < 1:
        raise ValueError("patients, answers and days must be at least 1")
    rng = random.Random(seed)
    anchor = (
        (end or datetime.now(UTC))
        .astimezone(UTC)
        .replace(hour=0, minute=0, second=0, microsecond=0)
    )
    start = anchor - timedelta(days=days)
    people = [_patient(rng, i, days) for i in range(patients)]
    records: list[ConversationRecord] = []
    reviews: list[DemoReview] = []
    for n in range(answers):
        p = people[n % patients] if n < patients else rng.choice(people)
        day = rng.randrange(days)
        at = start + timedelta(days=day, hours=rng.randint(7, 19), minutes=rng.randrange(60))
        model = MODELS[0] if rng.random() < 0.55 else MODELS[1]
        # model b improves over time; model a is steady
        rate = 0.30 if model == MODELS[0] else 0.45 - 0.30 * day / days
        sentences = _true_sentences(p, day, rng)
        planted_span: tuple[int, int] | None = None
        kind = rng.choice(HALLUCINATION_KINDS) if rng.random() < rate else None
        bad = _planted(p, kind, day, rng) if kind else None
        if bad is not None:
            sentences.insert(rng.randint(1, len(sentences)), bad)
        if rng.random() < 0.3:
            sentences.insert(rng.randint(0, len(sentences)), _true_in_other_words(p, rng))
        if rng.random() < 0.2:
            sentences.insert(rng.randint(1, len(sentences)), rng.choice(_UNRECORDED))
        answer = " ".join(sentences)
        if bad is not None:
            pos = answer.index(bad)
            planted_span = (pos, pos + len(bad))
        record = ConversationRecord(
            id=f"demo-{seed}-{n + 1:05d}",
            patient_id=p.id,
            timestamp=at,
            query=rng.choice(_QUERIES),
            answer=answer,
            sources=_sources(p, day, visit=day // 14 + 1),  # type: ignore[arg-type]
            model=model,
            temperature=0.2,
        )
        records.append(record)
        if rng.random() < 0.35:
            first, second = rng.sample(REVIEWERS, 2)
            reviews.append(
                DemoReview(
                    record_id=record.id,
                    planted=planted_span,
                    reviewer=first,
                    unsure=rng.random() < 0.08,
                    note=f"demo: {kind}" if kind and bad else None,
                    second=second if rng.random() < 0.25 else None,
                    disagree=0.15,
                )
            )
    records.sort(key=lambda r: r.when)
    return records, reviews


def run_demo(
    *,
    engine: Engine,
    records: list[ConversationRecord],
    reviews: list[DemoReview],
    progress: Callable[[int], Any] | None = None,
    settings: Any = None,
) -> dict[str, Any]:
    """Run the records through the real pipeline, store them, then store the verdicts.

    Returns a summary: counts of records stored, flagged, statements reviewed by verdict.
    """
    from core.config import get_settings
    from core.pipeline import QualityPipeline
    from core.storage import repo
    from core.storage.db import write_session
    from core.storage.models import StatementCheck

    pipeline = QualityPipeline(settings=settings or get_settings(), engine=engine)
    reports = pipeline.process_many(records, progress=progress)
    by_record = {r.external_id: r for r in reports}
    verdicts = {"confirmed": 0, "false_alarm": 0, "unsure": 0}
    with write_session(engine) as session:
        for rv in reviews:
            rep = by_record.get(rv.record_id)
            if rep is None or rep.store_status == "unchanged":
                continue
            rows = session.execute(
                select(StatementCheck).where(
                    col(StatementCheck.conversation_id) == rep.conversation_id,
                    col(StatementCheck.status) != "grounded",
                )
            ).scalars()
            for sc in rows:
                inside = (
                    rv.planted is not None
                    and sc.start is not None
                    and sc.end is not None
                    and sc.start < rv.planted[1]
                    and sc.end > rv.planted[0]
                )
                verdict: repo.Verdict = (
                    "unsure" if rv.unsure else "confirmed" if inside else "false_alarm"
                )
                repo.create_review(
                    session=session,
                    statement_check_id=int(sc.id or 0),
                    reviewer=rv.reviewer,
                    verdict=verdict,
                    note=rv.note if inside else None,
                )
                verdicts[verdict] += 1
                if rv.second is None:
                    continue
                # the second reader: seeded by the record and statement, so reruns agree
                flip = random.Random(f"{rv.record_id}:{sc.statement_index}").random()
                other: repo.Verdict = verdict
                if flip < rv.disagree:
                    other = {"confirmed": "false_alarm", "false_alarm": "confirmed"}.get(
                        verdict, "confirmed"
                    )  # type: ignore[assignment]
                repo.create_review(
                    session=session,
                    statement_check_id=int(sc.id or 0),
                    reviewer=rv.second,
                    verdict=other,
                    note=None,
                )
                verdicts[other] += 1
    summary = {
        "records": len(reports),
        "imported": sum(r.store_status == "imported" for r in reports),
        "updated": sum(r.store_status == "updated" for r in reports),
        "unchanged": sum(r.store_status == "unchanged" for r in reports),
        "flagged": sum(r.is_flagged for r in reports),
        "patients": len({r.patient_id for r in records}),
        "reviews": verdicts,
    }
    log.info("demo stored %d records, %d flagged", summary["records"], summary["flagged"])
    return summary


__all__ = ["HALLUCINATION_KINDS", "DemoReview", "generate_demo", "run_demo"]
