"""The arithmetic of a re-scoring report: each answer's change, the counts, the top changes,
the run's version and selection (plain data, no database, no Ray)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from core.config import load_settings
from core.rescore import (
    RUN_ID,
    Selection,
    change_of,
    result_row,
    settings_hash,
    summarise,
    verifier_version,
)
from core.storage.rescore import StoredAnswer


@pytest.mark.parametrize(
    ("old", "new", "change"),
    [
        (False, True, "flagged"),
        (True, False, "cleared"),
        (True, True, "same"),
        (False, False, "same"),
        (None, True, "new"),
        (None, False, "new"),
        (True, None, "failed"),
        (None, None, "failed"),
    ],
)
def test_change_of_each_pair_of_flags(old: bool | None, new: bool | None, change: str) -> None:
    assert change_of(old, new) == change


@dataclass
class _Metrics:
    grounding_score: float | None
    hallucination_risk: float | None
    overall_quality: float | None


@dataclass
class _Report:
    is_flagged: bool
    metrics: _Metrics
    grounding: Any = None


def _stored(flagged: bool, risk: float | None, grounding: float | None = 1.0) -> StoredAnswer:
    return StoredAnswer(
        conversation_id="c",
        record=None,
        flagged=flagged,
        grounding=grounding,
        risk=risk,
        quality=0.9,
        flagged_statements=1 if flagged else 0,
    )


def test_result_row_keeps_old_and_new_scores_and_the_direction() -> None:
    row = result_row(
        run_id="r1",
        conversation_id="c1",
        stored=_stored(False, 0.1, grounding=0.9),
        report=_Report(True, _Metrics(0.4, 0.6543219, 0.3)),
    )
    assert row["change"] == "flagged"
    assert (row["old_flagged"], row["new_flagged"]) == (False, True)
    assert (row["old_risk"], row["new_risk"]) == (0.1, 0.654322)
    assert (row["old_grounding"], row["new_grounding"]) == (0.9, 0.4)
    assert row["new_flagged_statements"] == 0  # no grounding result: no statement flagged
    assert row["reason"] is None


def test_a_failed_answer_has_no_new_scores_and_says_why() -> None:
    row = result_row(
        run_id="r1",
        conversation_id="c1",
        stored=_stored(True, 0.5),
        reason="checks failed: RuntimeError" + "x" * 300,
    )
    assert row["change"] == "failed"
    assert row["new_flagged"] is None
    assert row["new_risk"] is None
    assert len(row["reason"]) == 200


def test_an_answer_not_stored_before_is_new() -> None:
    row = result_row(
        run_id="r1", conversation_id="c1", stored=None, report=_Report(True, _Metrics(1, 0, 1))
    )
    assert row["change"] == "new"
    assert row["old_flagged"] is None
    assert row["old_risk"] is None


def _row(cid: str, change: str, old: float | None, new: float | None) -> dict[str, Any]:
    return {
        "conversation_id": cid,
        "change": change,
        "old_risk": old,
        "new_risk": new,
        "old_grounding": 1.0,
        "new_grounding": 0.5,
    }


def test_summary_counts_each_direction_and_orders_the_top_changes() -> None:
    rows = [
        _row("a", "flagged", 0.25, 0.5),  # +0.25
        _row("b", "cleared", 0.9, 0.1),  # -0.8: the largest change
        _row("c", "same", 0.2, 0.9),  # big move, but the flag did not change: not listed
        _row("d", "flagged", 0.0, 0.25),  # +0.25: tie with a, by id
        _row("e", "failed", 0.5, None),
        _row("f", "new", None, 0.7),
        _row("g", "cleared", None, 0.5),  # a missing risk counts as 0
    ]
    s = summarise(rows, top=3)
    assert (s.checked, s.newly_flagged, s.cleared, s.same, s.new, s.failed) == (7, 2, 2, 1, 1, 1)
    assert s.changed == 4
    assert [c.conversation_id for c in s.top] == ["b", "g", "a"]
    assert s.top[0].risk_delta == pytest.approx(-0.8)
    assert s.top[0].grounding_delta == pytest.approx(-0.5)
    assert s.top[1].risk_delta is None  # no old risk: no delta
    assert summarise(rows).top[-1].conversation_id == "d"
    d = s.to_dict()
    assert d["changed"] == 4
    assert d["top_changes"][0]["conversation_id"] == "b"


def test_summary_of_nothing_is_zero() -> None:
    s = summarise([])
    assert (s.checked, s.changed, s.top) == (0, 0, ())


def test_settings_hash_follows_the_scoring_settings_only() -> None:
    base = load_settings()
    assert settings_hash(base) == settings_hash(load_settings(database_url="sqlite:///other.db"))
    assert settings_hash(base) == settings_hash(load_settings(log_level="DEBUG"))
    assert settings_hash(base) != settings_hash(load_settings(grounding_score_threshold=0.8))
    assert settings_hash(base) != settings_hash(load_settings(enable_consistency_checking=False))
    assert settings_hash(base) != settings_hash(base, review_threshold=0.5)


def test_verifier_version_names_the_shipped_model_and_its_weights() -> None:
    version = verifier_version(load_settings())
    name, _, digest = version.partition("@")
    assert name
    assert len(digest) == 12
    assert verifier_version(load_settings(learned_verifier=False)) == "rules"


def test_selection_round_trips_through_its_stored_form() -> None:
    sel = Selection(
        since=datetime(2026, 1, 1, tzinfo=UTC),
        until=datetime(2026, 2, 1, tzinfo=UTC),
        model="m",
        patient_id="p-1",
        only_flagged=True,
    )
    assert Selection.from_dict(sel.to_dict()) == sel
    assert sel.source == "stored"
    assert Selection(files=("/x/a.jsonl",)).source == "files"


@pytest.mark.parametrize(
    ("run_id", "ok"),
    [("rs-20260101-1", True), ("a", True), ("-x", False), ("", False), ("a b", False)],
)
def test_run_ids(run_id: str, ok: bool) -> None:
    assert bool(RUN_ID.match(run_id)) is ok
