"""Deciding whether a rule fires: pure functions from what storage read to findings.

Each function takes plain data (an answer's facts, a window's counts, recent verdicts) and
returns :class:`Finding` values; storing them and sending webhooks is the monitor's work.
A rule that could not be judged (too few answers in the window, too few verdicts, a score
that was not computed) says so with ``status="not_evaluated"`` and the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from core.alerts.rules import (
    CalibrationDriftRule,
    ContradictionRule,
    FlaggedShareRule,
    Rule,
    ScoreBelowRule,
)
from core.calibration import expected_calibration_error
from core.storage.alerts import MAX_LINKED, AnswerFacts, FiringIn, Verdict, WindowCounts

Status = Literal["firing", "clear", "not_evaluated"]


@dataclass(frozen=True, slots=True)
class Finding:
    """What one rule found about one condition: firing (with what to store), clear, or not
    evaluated (with the reason). Ids, counts and scores only."""

    rule: str
    kind: str
    status: Status
    condition_key: str
    reason: str = ""
    firing: FiringIn | None = None

    def to_dict(self) -> dict[str, object]:
        """JSON-safe summary (for ``groundwatch alerts check --json``)."""
        out: dict[str, object] = {
            "rule": self.rule,
            "kind": self.kind,
            "status": self.status,
            "condition": self.condition_key,
        }
        if self.reason:
            out["reason"] = self.reason
        if self.firing is not None:
            out["value"] = self.firing.value
            out["threshold"] = self.firing.threshold
            out["counts"] = dict(self.firing.counts)
        return out


def condition_key(rule: str, about: str) -> str:
    """The key that makes one condition: the rule's name and what it is about."""
    return f"{rule}|{about}"


def _clear(rule: Rule, key: str) -> Finding:
    return Finding(rule.name, rule.kind, "clear", key)


def _not_evaluated(rule: Rule, key: str, reason: str) -> Finding:
    return Finding(rule.name, rule.kind, "not_evaluated", key, reason=reason)


def _firing(rule: Rule, key: str, **found: Any) -> Finding:
    """A firing of ``rule`` for the condition ``key``; ``found``: the other fields of
    :class:`FiringIn` (value, threshold, counts, the answers behind it, model, patient)."""
    firing = FiringIn(rule=rule.name, kind=rule.kind, condition_key=key, **found)
    return Finding(rule.name, rule.kind, "firing", key, firing=firing)


def flagged_share(rule: FlaggedShareRule, model: str, counts: WindowCounts) -> Finding:
    """Fires when more than ``rule.threshold`` of the model's answers in the window are
    flagged, once the window holds ``rule.min_answers`` answers."""
    key = condition_key(rule.name, f"model:{model}")
    if counts.answers < rule.min_answers:
        return _not_evaluated(
            rule,
            key,
            f"{counts.answers} answers in the window, below min_answers {rule.min_answers}",
        )
    share = counts.flagged / counts.answers
    if share <= rule.threshold:
        return _clear(rule, key)
    return _firing(
        rule,
        key,
        model=model,
        value=round(share, 6),
        threshold=rule.threshold,
        counts={
            "answers": counts.answers,
            "flagged": counts.flagged,
            "window_s": int(rule.window.total_seconds()),
        },
        conversation_ids=counts.flagged_ids,
    )


def contradiction(rule: ContradictionRule, answer: AnswerFacts) -> Finding:
    """Fires for an answer with a contradicted statement (grounding) or a contradiction of the
    patient's earlier answers (consistency), as ``rule.source`` selects."""
    key = condition_key(rule.name, f"patient:{answer.patient_id}")
    grounding = answer.contradicted_statements if rule.source in ("any", "grounding") else 0
    earlier = answer.contradicted_earlier if rule.source in ("any", "consistency") else 0
    if grounding + earlier == 0:
        return _clear(rule, key)
    return _firing(
        rule,
        key,
        model=answer.model,
        patient_id=answer.patient_id,
        value=float(grounding + earlier),
        counts={"contradicted_statements": grounding, "contradicted_earlier": earlier},
        conversation_ids=(answer.conversation_id,),
    )


def score_below(rule: ScoreBelowRule, answer: AnswerFacts) -> Finding:
    """Fires for an answer whose grounding or consistency score (higher is better) is below
    ``rule.threshold``; not evaluated when that score was not computed."""
    about = f"patient:{answer.patient_id}" if rule.per == "patient" else f"model:{answer.model}"
    key = condition_key(rule.name, about)
    score = answer.grounding_score if rule.score == "grounding" else answer.consistency_score
    if score is None:
        return _not_evaluated(rule, key, f"no {rule.score} score stored")
    if score >= rule.threshold:
        return _clear(rule, key)
    return _firing(
        rule,
        key,
        model=answer.model,
        patient_id=answer.patient_id if rule.per == "patient" else None,
        value=round(float(score), 6),
        threshold=rule.threshold,
        counts={f"{rule.score}_score": round(float(score), 6)},
        conversation_ids=(answer.conversation_id,),
    )


def calibration_drift(rule: CalibrationDriftRule, verdicts: Sequence[Verdict]) -> Finding:
    """Fires when the ECE of the statement risk (a confirmed hallucination counts 1, a false
    alarm 0) over the ``rule.verdicts`` most recent verdicts is above ``rule.threshold``; not
    evaluated before that many verdicts exist."""
    key = condition_key(rule.name, "service")
    recent = list(verdicts)[: rule.verdicts]
    if len(recent) < rule.verdicts:
        return _not_evaluated(
            rule, key, f"{len(recent)} verdicts, below the {rule.verdicts} the rule needs"
        )
    y = np.array([v.confirmed for v in recent], dtype=float)
    p = np.array([min(1.0, max(0.0, v.risk)) for v in recent], dtype=float)
    ece = expected_calibration_error(y, p, n_bins=rule.bins)
    if ece <= rule.threshold:
        return _clear(rule, key)
    linked = tuple(dict.fromkeys(v.conversation_id for v in recent))[:MAX_LINKED]
    return _firing(
        rule,
        key,
        value=round(ece, 6),
        threshold=rule.threshold,
        counts={"verdicts": len(recent), "confirmed": int(y.sum()), "bins": rule.bins},
        conversation_ids=tuple(reversed(linked)),
    )


__all__ = [
    "Finding",
    "calibration_drift",
    "condition_key",
    "contradiction",
    "flagged_share",
    "score_below",
]
