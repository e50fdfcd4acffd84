"""Hallucination risk and the overall quality score (phase 9).

:func:`assess_hallucination_risk` turns the grounding, consistency, confidence and SelfCheck
results of one answer into a risk score, a level, the factors behind it and a recommendation.
:func:`overall_quality` combines the same inputs into one quality score.

Directions: ``grounding_score``, ``consistency_score``, ``confidence_score`` and
``overall_quality`` are in [0, 1], higher is better; ``risk_score`` / ``hallucination_risk``
and ``selfcheck_risk`` are in [0, 1], higher is worse. Any input may be ``None`` when its check
did not run; it then drops out and the remaining weights are renormalised (the result lists
which components it used, so a score built from one check is visible as such).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from core.checks import OK, CheckStatus, skipped

RiskLevel = Literal["very_low", "low", "medium", "high", "very_high"]
RISK_LEVELS: tuple[RiskLevel, ...] = ("very_low", "low", "medium", "high", "very_high")

# Lower bounds of each level. 0.3 (the seed's HALLUCINATION_RISK_THRESHOLD) starts "medium".
RISK_BANDS: tuple[tuple[float, RiskLevel], ...] = (
    (0.7, "very_high"),
    (0.5, "high"),
    (0.3, "medium"),
    (0.15, "low"),
    (0.0, "very_low"),
)

# Share of each component in the risk score (renormalised over the components present).
RISK_WEIGHTS: dict[str, float] = {
    "grounding": 0.35,
    "consistency": 0.2,
    "confidence": 0.15,
    "selfcheck": 0.3,
}
# Share of each component in the overall quality score (the risk enters as 1 - risk).
QUALITY_WEIGHTS: dict[str, float] = {
    "grounding": 0.4,
    "consistency": 0.25,
    "confidence": 0.15,
    "risk": 0.2,
}

RECOMMENDATIONS: dict[RiskLevel, str] = {
    "very_low": "No action needed: the answer is well supported.",
    "low": "Usable; spot-check the statements listed as contributing factors, if any.",
    "medium": "Review the flagged statements against the source record before relying on them.",
    "high": "Do not rely on this answer without verifying each statement against the sources.",
    "very_high": "Discard or regenerate this answer; it is likely to contain hallucinations.",
}


def risk_level_for(risk_score: float) -> RiskLevel:
    """The level of a risk score in [0, 1] (higher = worse), per :data:`RISK_BANDS`."""
    if not math.isfinite(risk_score):
        raise ValueError("risk_score: must be a finite number")
    for bound, level in RISK_BANDS:
        if risk_score >= bound:
            return level
    return "very_low"


def _check_score(name: str, value: float | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name}: expected a number or None, got {type(value).__name__}")
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name}: must be in [0, 1], got {value!r}")
    return float(value)


def _weighted(parts: dict[str, float], weights: dict[str, float]) -> float:
    total = sum(weights[k] for k in parts)
    return sum(weights[k] * v for k, v in parts.items()) / total


@dataclass(frozen=True, slots=True)
class HallucinationRisk:
    """The seed's HallucinationRisk for one answer.

    Attributes:
        risk_score: in [0, 1], higher = more likely hallucinated; ``None`` when no input ran.
        risk_level: ``very_low`` .. ``very_high``.
        contributing_factors: one line per input beyond its threshold (numbers only).
        recommendation: what the reader should do.
        flagged: ``risk_score`` above the risk threshold.
        components: the inputs used (name -> their contribution to risk, 0..1).
        status: ``ok``, or ``skipped`` when no input was available.
    """

    risk_score: float | None
    risk_level: RiskLevel | None
    contributing_factors: tuple[str, ...]
    recommendation: str
    flagged: bool
    components: tuple[tuple[str, float], ...] = ()
    status: CheckStatus = OK

    @property
    def warnings(self) -> list[str]:
        """The contributing factors, as the seed's ``warnings`` list."""
        return list(self.contributing_factors)

    def to_dict(self) -> dict[str, object]:
        """JSON-safe plain data."""
        return {
            "risk_score": self.risk_score,
            "risk_level": self.risk_level,
            "contributing_factors": list(self.contributing_factors),
            "recommendation": self.recommendation,
            "flagged": self.flagged,
            "components": dict(self.components),
            "status": self.status.status,
            "reason": self.status.reason,
        }


def assess_hallucination_risk(
    grounding_score: float | None,
    consistency_score: float | None,
    confidence_score: float | None,
    selfcheck_risk: float | None = None,
    *,
    grounding_threshold: float = 0.7,
    consistency_threshold: float = 0.8,
    confidence_threshold: float = 0.6,
    risk_threshold: float = 0.3,
) -> HallucinationRisk:
    """The seed's assessHallucinationRisk.

    risk = weighted mean of ``1 - grounding``, ``1 - consistency``, ``1 - confidence`` and the
    SelfCheck risk (weights :data:`RISK_WEIGHTS`, renormalised over the inputs that are not
    ``None``). A grounding score below its threshold, or a SelfCheck risk above
    ``risk_threshold``, raises the level to at least ``medium``: one failing check is enough to
    ask for a review.

    Args:
        grounding_score: share of statements supported by the sources, higher = better.
        consistency_score: agreement with the patient's earlier answers, higher = better.
        confidence_score: calibrated confidence, higher = better.
        selfcheck_risk: SelfCheck passage risk, higher = worse.
        grounding_threshold: grounding below this is a contributing factor (seed: 0.7).
        consistency_threshold: consistency below this is a factor (seed: 0.8).
        confidence_threshold: confidence below this is a factor (seed: 0.6).
        risk_threshold: risk above this flags the answer (seed: 0.3).

    Raises:
        ValueError: a score outside [0, 1] (the message names it).
    """
    scores = {
        "grounding": _check_score("grounding_score", grounding_score),
        "consistency": _check_score("consistency_score", consistency_score),
        "confidence": _check_score("confidence_score", confidence_score),
        "selfcheck": _check_score("selfcheck_risk", selfcheck_risk),
    }
    for name, value in (
        ("grounding_threshold", grounding_threshold),
        ("consistency_threshold", consistency_threshold),
        ("confidence_threshold", confidence_threshold),
        ("risk_threshold", risk_threshold),
    ):
        _check_score(name, value)
    present = {k: v for k, v in scores.items() if v is not None}
    if not present:
        return HallucinationRisk(
            risk_score=None,
            risk_level=None,
            contributing_factors=(),
            recommendation="No quality check ran; the answer has not been assessed.",
            flagged=False,
            status=skipped("no grounding, consistency, confidence or SelfCheck score"),
        )
    risks = {k: (v if k == "selfcheck" else 1.0 - v) for k, v in present.items()}
    risk = round(_weighted(risks, RISK_WEIGHTS), 6)

    factors: list[str] = []
    thresholds = {
        "grounding": grounding_threshold,
        "consistency": consistency_threshold,
        "confidence": confidence_threshold,
    }
    for name, threshold in thresholds.items():
        if name in present and present[name] < threshold:
            factors.append(
                f"{name} score {present[name]:.2f} is below the threshold {threshold:.2f}"
            )
    selfcheck = present.get("selfcheck")
    if selfcheck is not None and selfcheck > risk_threshold:
        factors.append(
            f"SelfCheck risk {selfcheck:.2f} is above the threshold {risk_threshold:.2f} "
            "(sampled answers disagree)"
        )
    level = risk_level_for(risk)
    severe = (present.get("grounding", 1.0) < grounding_threshold) or (
        selfcheck is not None and selfcheck > risk_threshold
    )
    if severe and RISK_LEVELS.index(level) < RISK_LEVELS.index("medium"):
        level = "medium"
    flagged = risk > risk_threshold or RISK_LEVELS.index(level) >= RISK_LEVELS.index("medium")
    if flagged and not factors:
        factors.append(f"combined risk {risk:.2f} is above the threshold {risk_threshold:.2f}")
    return HallucinationRisk(
        risk_score=risk,
        risk_level=level,
        contributing_factors=tuple(factors),
        recommendation=RECOMMENDATIONS[level],
        flagged=flagged,
        components=tuple((k, round(v, 6)) for k, v in risks.items()),
    )


@dataclass(frozen=True, slots=True)
class QualityMetrics:
    """The seed's QualityMetrics for one answer.

    Attributes:
        grounding_score: higher = better, ``None`` if not checked.
        consistency_score: higher = better, ``None`` if not checked.
        confidence_score: higher = better, ``None`` if not checked.
        hallucination_risk: higher = worse, ``None`` if not assessed.
        overall_quality: weighted combination, higher = better; ``None`` when no input ran.
        components_used: names of the inputs that entered ``overall_quality``.
    """

    grounding_score: float | None
    consistency_score: float | None
    confidence_score: float | None
    hallucination_risk: float | None
    overall_quality: float | None
    components_used: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        """JSON-safe plain data."""
        return {
            "grounding_score": self.grounding_score,
            "consistency_score": self.consistency_score,
            "confidence_score": self.confidence_score,
            "hallucination_risk": self.hallucination_risk,
            "overall_quality": self.overall_quality,
            "components_used": list(self.components_used),
        }


def overall_quality(
    grounding_score: float | None,
    consistency_score: float | None,
    confidence_score: float | None,
    hallucination_risk: float | None,
) -> QualityMetrics:
    """The seed's calculateOverallQuality: one quality score, higher = better.

    overall = weighted mean of grounding, consistency, confidence and ``1 - risk`` with the
    weights of :data:`QUALITY_WEIGHTS` (0.4 / 0.25 / 0.15 / 0.2). Missing components (``None``:
    the check did not run) are left out and the weights of the others renormalised, so a
    missing check neither rewards nor punishes the answer; when every component is missing,
    ``overall_quality`` is ``None`` rather than a made-up number.

    Raises:
        ValueError: a score outside [0, 1] (the message names it).
    """
    parts = {
        "grounding": _check_score("grounding_score", grounding_score),
        "consistency": _check_score("consistency_score", consistency_score),
        "confidence": _check_score("confidence_score", confidence_score),
        "risk": _check_score("hallucination_risk", hallucination_risk),
    }
    present = {k: (1.0 - v if k == "risk" else v) for k, v in parts.items() if v is not None}
    overall = round(_weighted(present, QUALITY_WEIGHTS), 6) if present else None
    return QualityMetrics(
        grounding_score=parts["grounding"],
        consistency_score=parts["consistency"],
        confidence_score=parts["confidence"],
        hallucination_risk=parts["risk"],
        overall_quality=overall,
        components_used=tuple(present),
    )
