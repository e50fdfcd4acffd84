"""Hallucination risk and overall quality: hand-computed cases and input validation."""

from __future__ import annotations

import pytest

from core.quality import (
    QUALITY_WEIGHTS,
    RISK_WEIGHTS,
    assess_hallucination_risk,
    overall_quality,
    risk_level_for,
)


@pytest.mark.parametrize(
    ("score", "level"),
    [
        (0.0, "very_low"),
        (0.149, "very_low"),
        (0.15, "low"),
        (0.3, "medium"),
        (0.5, "high"),
        (0.69, "high"),
        (0.7, "very_high"),
        (1.0, "very_high"),
    ],
)
def test_risk_bands(score: float, level: str) -> None:
    assert risk_level_for(score) == level


def test_good_answer_is_very_low_risk() -> None:
    risk = assess_hallucination_risk(0.95, 0.95, 0.9, 0.05)
    expected = (0.35 * 0.05 + 0.2 * 0.05 + 0.15 * 0.1 + 0.3 * 0.05) / 1.0
    assert risk.risk_score == pytest.approx(expected, abs=1e-6)
    assert risk.risk_level == "very_low"
    assert risk.contributing_factors == ()
    assert not risk.flagged
    assert risk.recommendation


def test_low_grounding_is_a_factor_and_at_least_medium() -> None:
    risk = assess_hallucination_risk(0.6, 0.95, 0.9)
    # without SelfCheck, weights renormalise over 0.35 + 0.2 + 0.15
    assert risk.risk_score == pytest.approx((0.35 * 0.4 + 0.2 * 0.05 + 0.15 * 0.1) / 0.7, abs=1e-6)
    assert risk.contributing_factors == ("grounding score 0.60 is below the threshold 0.70",)
    assert risk.risk_level == "medium"
    assert risk.flagged
    assert dict(risk.components) == pytest.approx(
        {"grounding": 0.4, "consistency": 0.05, "confidence": 0.1}
    )


def test_thresholds_are_keyword_options() -> None:
    strict = assess_hallucination_risk(0.85, 0.95, 0.9, grounding_threshold=0.9)
    assert strict.contributing_factors[0].startswith("grounding score 0.85")
    lenient = assess_hallucination_risk(0.85, 0.95, 0.9)
    assert lenient.contributing_factors == ()


def test_selfcheck_disagreement_and_all_bad_scores() -> None:
    risk = assess_hallucination_risk(0.2, 0.3, 0.2, 0.9)
    assert risk.risk_level == "very_high"
    assert len(risk.contributing_factors) == 4
    assert "SelfCheck risk 0.90" in risk.contributing_factors[-1]
    only_selfcheck = assess_hallucination_risk(None, None, None, 0.4)
    assert only_selfcheck.risk_score == pytest.approx(0.4)
    assert only_selfcheck.flagged


def test_no_inputs_is_skipped_not_zero() -> None:
    risk = assess_hallucination_risk(None, None, None, None)
    assert risk.risk_score is None
    assert risk.status.status == "skipped"
    assert not risk.flagged


@pytest.mark.parametrize("bad", [1.5, -0.1, float("nan")])
def test_out_of_range_scores_are_rejected(bad: float) -> None:
    with pytest.raises(ValueError, match="consistency_score"):
        assess_hallucination_risk(0.9, bad, 0.9)
    with pytest.raises(ValueError, match="hallucination_risk"):
        overall_quality(0.9, 0.9, 0.9, bad)


def test_overall_quality_weighted_combination() -> None:
    metrics = overall_quality(0.9, 0.8, 0.7, 0.2)
    expected = 0.4 * 0.9 + 0.25 * 0.8 + 0.15 * 0.7 + 0.2 * (1 - 0.2)
    assert metrics.overall_quality == pytest.approx(expected, abs=1e-6)
    assert metrics.components_used == ("grounding", "consistency", "confidence", "risk")
    assert sum(QUALITY_WEIGHTS.values()) == pytest.approx(1.0)
    assert sum(RISK_WEIGHTS.values()) == pytest.approx(1.0)


def test_overall_quality_missing_components_renormalise() -> None:
    metrics = overall_quality(0.9, None, None, 0.2)
    assert metrics.overall_quality == pytest.approx((0.4 * 0.9 + 0.2 * 0.8) / 0.6, abs=1e-6)
    assert metrics.components_used == ("grounding", "risk")
    assert overall_quality(None, None, None, None).overall_quality is None
    assert metrics.to_dict()["consistency_score"] is None
