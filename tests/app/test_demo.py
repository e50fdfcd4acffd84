"""The synthetic demo data: deterministic, realistic shape, every planted kind present."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from core.demo import generate_demo

END = datetime(2026, 3, 1, tzinfo=UTC)


def test_same_seed_same_data_and_other_seed_differs():
    a = generate_demo(patients=30, answers=600, days=90, seed=7, end=END)
    b = generate_demo(patients=30, answers=600, days=90, seed=7, end=END)
    c = generate_demo(patients=30, answers=600, days=90, seed=8, end=END)
    assert a == b
    assert a[0] != c[0]


def test_shape_covers_patients_days_and_models():
    records, reviews = generate_demo(patients=30, answers=600, days=90, seed=7, end=END)
    assert len(records) == 600
    assert len({r.patient_id for r in records}) == 30
    days = {r.when.date() for r in records}
    assert len(days) > 60
    assert min(days) >= datetime(2025, 12, 1, tzinfo=UTC).date()
    assert max(r.when for r in records) < END
    assert {r.model for r in records} == {"clinical-llm-a", "clinical-llm-b"}
    assert [r.when for r in records] == sorted(r.when for r in records)
    assert all(any(s.type == "transcript" for s in r.sources) for r in records)
    assert 100 < len(reviews) < 300


def test_every_hallucination_kind_is_planted():
    records, reviews = generate_demo(patients=30, answers=600, days=90, seed=7, end=END)
    answers = " ".join(r.answer for r in records)
    assert "also takes" in answers  # invented drug
    assert "No known drug allergies." in answers  # vanished allergy
    assert "has no history of" in answers  # denied chronic diagnosis
    assert "is currently taking" in answers  # discontinued drug re-listed
    assert "reports" in answers  # negation flip
    planted = [rv for rv in reviews if rv.planted]
    by_id = {r.id: r for r in records}
    for rv in planted:
        start, end = rv.planted  # type: ignore[misc]
        assert by_id[rv.record_id].answer[start:end].startswith(("The patient", "No known"))


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="at least 1"):
        generate_demo(patients=0, answers=10, days=10, seed=1)


def test_second_readers_and_true_statements_in_other_words_are_planted():
    records, reviews = generate_demo(patients=30, answers=600, days=90, seed=7, end=END)
    seconds = [rv for rv in reviews if rv.second is not None]
    assert 0.15 < len(seconds) / len(reviews) < 0.35
    assert all(rv.second != rv.reviewer for rv in seconds)
    assert all(0 < rv.disagree < 0.5 for rv in seconds)
    reworded = [
        r for r in records if "has not missed a dose" in r.answer or "years old" in r.answer
    ]
    assert len(reworded) > 30
