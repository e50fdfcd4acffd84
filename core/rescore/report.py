"""The arithmetic of a re-scoring report: each answer's change of flag, the counts, the
largest changes, and a stored run's report (counted in SQL).

Scores follow the pipeline's directions: ``risk`` (hallucination risk) higher is worse,
``grounding`` and ``quality`` higher is better.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Engine

from core.rescore.selection import RescoreError
from core.storage import rescore as store
from core.storage.db import read_session

TOP_CHANGES = 20


def change_of(old_flagged: bool | None, new_flagged: bool | None) -> str:
    """What happened to an answer's flag: ``flagged`` (newly), ``cleared``, ``same``, ``new``
    (nothing stored before) or ``failed`` (no new result)."""
    if new_flagged is None:
        return store.FAILED
    if old_flagged is None:
        return store.NEW
    if new_flagged == old_flagged:
        return store.SAME
    return store.FLAGGED if new_flagged else store.CLEARED


def _score(value: Any) -> float | None:
    return None if value is None else round(float(value), 6)


def result_row(
    *,
    run_id: str,
    conversation_id: str,
    stored: store.StoredAnswer | None,
    report: Any = None,
    reason: str | None = None,
) -> dict[str, Any]:
    """One result row (a :class:`~core.storage.models.RescoreResult`'s columns) from the
    stored answer (``None``: not stored) and the new report (``None``: failed, ``reason``)."""
    metrics = getattr(report, "metrics", None)
    new_flagged = None if report is None else bool(report.is_flagged)
    old_flagged = None if stored is None else stored.flagged
    return {
        "run_id": run_id,
        "conversation_id": conversation_id,
        "change": change_of(old_flagged, new_flagged),
        "old_flagged": old_flagged,
        "new_flagged": new_flagged,
        "old_grounding": None if stored is None else _score(stored.grounding),
        "new_grounding": _score(getattr(metrics, "grounding_score", None)),
        "old_risk": None if stored is None else _score(stored.risk),
        "new_risk": _score(getattr(metrics, "hallucination_risk", None)),
        "old_quality": None if stored is None else _score(stored.quality),
        "new_quality": _score(getattr(metrics, "overall_quality", None)),
        "old_flagged_statements": None if stored is None else stored.flagged_statements,
        "new_flagged_statements": None if report is None else _flagged_statements(report),
        "reason": None if reason is None else reason[:200],
    }


def _flagged_statements(report: Any) -> int:
    grounding = getattr(report, "grounding", None)
    if grounding is None:
        return 0
    return sum(1 for st in grounding.statements if st.status != "grounded")


@dataclass(frozen=True, slots=True)
class Change:
    """An answer whose flag changed: its id, the flag's direction and the score deltas
    (new - old; risk: higher is worse, grounding: higher is better)."""

    conversation_id: str
    change: str
    old_risk: float | None
    new_risk: float | None
    risk_delta: float | None
    grounding_delta: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "conversation_id": self.conversation_id,
            "change": self.change,
            "old_risk": self.old_risk,
            "new_risk": self.new_risk,
            "risk_delta": self.risk_delta,
            "grounding_delta": self.grounding_delta,
        }


def _delta(new: float | None, old: float | None) -> float | None:
    return None if new is None or old is None else round(new - old, 6)


def change_from_row(row: Mapping[str, Any]) -> Change:
    """The :class:`Change` of one result row."""
    return Change(
        conversation_id=str(row["conversation_id"]),
        change=str(row["change"]),
        old_risk=row.get("old_risk"),
        new_risk=row.get("new_risk"),
        risk_delta=_delta(row.get("new_risk"), row.get("old_risk")),
        grounding_delta=_delta(row.get("new_grounding"), row.get("old_grounding")),
    )


@dataclass(frozen=True, slots=True)
class ChangeSummary(store.RunCounts):
    """How many answers a run checked and how their flags moved (the stored
    :class:`~core.storage.rescore.RunCounts`), with the largest changes."""

    top: tuple[Change, ...] = ()

    @property
    def changed(self) -> int:
        """Answers whose flag changed, either way."""
        return self.newly_flagged + self.cleared

    def to_dict(self) -> dict[str, Any]:
        return {
            **store.RunCounts.to_dict(self),
            "changed": self.changed,
            "top_changes": [c.to_dict() for c in self.top],
        }


def summarise(rows: Iterable[Mapping[str, Any]], *, top: int = TOP_CHANGES) -> ChangeSummary:
    """Counts by change and the ``top`` flag changes, largest absolute risk change first
    (a missing risk counts as 0; ties by id): the same order the stored report uses."""
    counts = dict.fromkeys(store.CHANGES, 0)
    changed: list[Change] = []
    for row in rows:
        counts[str(row["change"])] += 1
        if row["change"] in (store.FLAGGED, store.CLEARED):
            changed.append(change_from_row(row))

    def size(c: Change) -> tuple[float, str]:
        return (-abs((c.new_risk or 0.0) - (c.old_risk or 0.0)), c.conversation_id)

    changed.sort(key=size)
    return ChangeSummary(
        checked=sum(counts.values()),
        newly_flagged=counts[store.FLAGGED],
        cleared=counts[store.CLEARED],
        same=counts[store.SAME],
        new=counts[store.NEW],
        failed=counts[store.FAILED],
        top=tuple(changed[:top]),
    )


@dataclass(frozen=True, slots=True)
class RescoreReport:
    """A run's record and its change summary (``resumed``: results it found from before)."""

    run_id: str
    verifier_version: str
    settings_hash: str
    source: str
    status: str
    selected: int
    resumed: int
    started_at: datetime
    finished_at: datetime | None
    summary: ChangeSummary
    filters: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "verifier_version": self.verifier_version,
            "settings_hash": self.settings_hash,
            "source": self.source,
            "status": self.status,
            "selected": self.selected,
            "resumed": self.resumed,
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "filters": self.filters,
            **self.summary.to_dict(),
        }


def stored_report(*, engine: Engine, run_id: str, top: int = TOP_CHANGES) -> RescoreReport:
    """The report of a stored run, counted in SQL.

    Raises:
        RescoreError: no run with this id.
    """
    with read_session(engine) as session:
        run = store.get_run(session=session, run_id=run_id)
        if run is None:
            raise RescoreError(f"no re-scoring run {run_id!r}")
        counts = store.run_counts(session=session, run_id=run_id)
        rows = store.top_changes(session=session, run_id=run_id, limit=top)
        top_rows = [
            change_from_row(
                {
                    "conversation_id": r.conversation_id,
                    "change": r.change,
                    "old_risk": r.old_risk,
                    "new_risk": r.new_risk,
                    "old_grounding": r.old_grounding,
                    "new_grounding": r.new_grounding,
                }
            )
            for r in rows
        ]
        summary = ChangeSummary(**counts.to_dict(), top=tuple(top_rows))
        return RescoreReport(
            run_id=run.id,
            verifier_version=run.verifier_version,
            settings_hash=run.settings_hash,
            source=run.source,
            status=run.status,
            selected=run.selected,
            resumed=0,
            started_at=run.started_at,
            finished_at=run.finished_at,
            summary=summary,
            filters=dict(run.filters or {}),
        )


# --------------------------------------------------------------------------- the actor
