"""The demo through the real pipeline (MiniLM and the learned verifier): its verdicts hold
every label the calibration page needs, on any CPU the models run on."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy.engine import Engine

from core.config import load_settings
from core.demo import generate_demo, run_demo

pytestmark = pytest.mark.model


def test_demo_verdicts_hold_confirmed_errors_and_false_alarms(sqlite_engine: Engine) -> None:
    records, reviews = generate_demo(
        patients=12, answers=150, days=40, seed=7, end=datetime(2026, 3, 1, tzinfo=UTC)
    )
    summary = run_demo(
        engine=sqlite_engine, records=records, reviews=reviews, settings=load_settings()
    )
    verdicts = summary["reviews"]
    assert verdicts["confirmed"] >= 3, verdicts
    assert verdicts["false_alarm"] >= 3, verdicts  # true things no source records, at least
    share = verdicts["false_alarm"] / (verdicts["confirmed"] + verdicts["false_alarm"])
    assert 0.1 < share < 0.8, verdicts  # a verifier's share of false alarms, not all or none
