"""The review threshold: which flagged statements are put before a reviewer.

Every statement the verifier does not ground is stored with its status and a review risk
(:func:`core.pipeline.statement_risk`: 0.25-0.75 unsupported, 0.5-1.0 contradicted, the surer
the detector the higher). By default every one of them is flagged. A threshold applied on the
calibration page (stored here with who, when and why, and audited) raises the bar: from then
on a statement counts as flagged, for its answer's flag and for the review queue, only when
its risk is at or above the threshold. The stored statuses never change; taking the
threshold back to the default restores every flag.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlmodel import Session, col, select

from core.storage.models import SettingChange

REVIEW_THRESHOLD = "review_threshold"
# the least risk of a statement that is not grounded: below it, a threshold would flag
# statements the verifier grounded, which the review queue does not hold
LOWEST_REVIEW_THRESHOLD = 0.25


@dataclass(frozen=True, slots=True)
class ThresholdChange:
    """One application of the threshold (``value`` None: back to the default)."""

    value: float | None
    previous: float | None
    actor: str
    reason: str | None
    changed_at: datetime


def review_threshold(*, session: Session) -> float | None:
    """The review threshold in force, or None when none was applied (every statement that is
    not grounded is flagged)."""
    row = session.execute(
        select(col(SettingChange.value))
        .where(col(SettingChange.name) == REVIEW_THRESHOLD)
        .order_by(col(SettingChange.changed_at).desc(), col(SettingChange.id).desc())
        .limit(1)
    ).first()
    return None if row is None or row[0] is None else float(row[0])


def apply_review_threshold(
    *, session: Session, value: float | None, actor: str, reason: str | None = None
) -> ThresholdChange:
    """Put ``value`` in force (None: the default) and record who did it and why.

    Raises:
        ValueError: ``value`` outside [0.25, 1], or an empty actor.
    """
    if not actor.strip():
        raise ValueError("applying a threshold needs the name of who applies it")
    if value is not None and not LOWEST_REVIEW_THRESHOLD <= float(value) <= 1.0:
        raise ValueError(
            f"the review threshold must lie between {LOWEST_REVIEW_THRESHOLD} (every statement "
            f"that is not grounded) and 1, not {value}"
        )
    previous = review_threshold(session=session)
    row = SettingChange(
        name=REVIEW_THRESHOLD,
        value=None if value is None else round(float(value), 4),
        previous=previous,
        actor=actor.strip(),
        reason=(reason or "").strip()[:500] or None,
        changed_at=datetime.now(UTC),
    )
    session.add(row)
    session.flush()
    return _change(row)


def review_threshold_history(*, session: Session, limit: int = 20) -> list[ThresholdChange]:
    """The latest applications of the threshold, newest first."""
    rows = session.exec(
        select(SettingChange)
        .where(col(SettingChange.name) == REVIEW_THRESHOLD)
        .order_by(col(SettingChange.changed_at).desc(), col(SettingChange.id).desc())
        .limit(limit)
    )
    return [_change(r) for r in rows]


def counts_as_flagged(status: str, risk: float, threshold: float | None) -> bool:
    """Whether a stored statement is flagged under ``threshold`` (None: every statement that
    is not grounded)."""
    if status == "grounded":
        return False
    return threshold is None or risk >= threshold - 1e-9


def _change(row: SettingChange) -> ThresholdChange:
    return ThresholdChange(
        value=row.value,
        previous=row.previous,
        actor=row.actor,
        reason=row.reason,
        changed_at=row.changed_at,
    )
