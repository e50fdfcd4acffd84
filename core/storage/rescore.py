"""Queries and writes of re-scoring runs (:mod:`core.rescore`): the run record, the selection
of stored answers, each answer's scores before and after, and the comparisons the report and
the dashboard show.

Results are kept per run beside the stored scores, never over them: the scores an answer was
stored with (and the verdicts clinicians gave on its statements) stay as they were, and any
two versions can be compared. Writing a result twice is a no-op (unique on run and answer).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import CursorResult, and_, case, delete, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import aliased
from sqlmodel import Session, col

from core.storage.models import Conversation, RescoreResult, RescoreRun

# What a result says about its answer's flag (RescoreResult.change).
FLAGGED = "flagged"  # not flagged before, flagged now
CLEARED = "cleared"  # flagged before, not now
SAME = "same"
NEW = "new"  # nothing stored to compare with
FAILED = "failed"  # the checks could not run on it
CHANGES = (FLAGGED, CLEARED, SAME, NEW, FAILED)


@dataclass(frozen=True, slots=True)
class StoredAnswer:
    """A stored answer as the checks read it again: its record fields (``record`` in the
    import format, or ``None`` when its text was purged or never kept) and its stored scores."""

    conversation_id: str
    record: dict[str, Any] | None
    flagged: bool
    grounding: float | None
    risk: float | None
    quality: float | None
    flagged_statements: int


def create_run(
    *,
    session: Session,
    run_id: str,
    verifier_version: str,
    settings_hash: str,
    source: str,
    filters: dict[str, Any],
) -> RescoreRun:
    """Record a new run (``running``); the caller commits."""
    run = RescoreRun(
        id=run_id,
        verifier_version=verifier_version,
        settings_hash=settings_hash,
        source=source,
        filters=filters,
        status="running",
        started_at=datetime.now(UTC),
    )
    session.add(run)
    session.flush()
    return run


def get_run(*, session: Session, run_id: str) -> RescoreRun | None:
    """The run with this id, or ``None``."""
    return session.get(RescoreRun, run_id)


def list_runs(*, session: Session, limit: int = 200) -> list[RescoreRun]:
    """Runs, newest first."""
    stmt = (
        select(RescoreRun)
        .order_by(col(RescoreRun.started_at).desc(), col(RescoreRun.id))
        .limit(limit)
    )
    return list(session.execute(stmt).scalars())


def select_conversation_ids(
    *,
    session: Session,
    since: datetime | None = None,
    until: datetime | None = None,
    model: str | None = None,
    patient_id: str | None = None,
    only_flagged: bool = False,
    stored_before: datetime | None = None,
) -> list[str]:
    """Ids of the stored answers a run covers, oldest first: answered in [since, until),
    by ``model``, about ``patient_id``, flagged only, and stored (or last updated) before
    ``stored_before`` (the run's start, so that a resumed run covers the same answers)."""
    conds: list[Any] = []
    if since is not None:
        conds.append(col(Conversation.query_timestamp) >= since)
    if until is not None:
        conds.append(col(Conversation.query_timestamp) < until)
    if model is not None:
        conds.append(col(Conversation.model_used) == model)
    if patient_id is not None:
        conds.append(col(Conversation.patient_id) == patient_id)
    if only_flagged:
        conds.append(col(Conversation.is_flagged).is_(True))
    if stored_before is not None:
        conds.append(col(Conversation.updated_at) <= stored_before)
    stmt = (
        select(col(Conversation.id))
        .where(*conds)
        .order_by(col(Conversation.query_timestamp), col(Conversation.id))
    )
    return list(session.execute(stmt).scalars())


def done_ids(*, session: Session, run_id: str) -> set[str]:
    """The answers this run has a result for already (what a resumed run skips)."""
    stmt = select(col(RescoreResult.conversation_id)).where(col(RescoreResult.run_id) == run_id)
    return set(session.execute(stmt).scalars())


def stored_answers(*, session: Session, conversation_ids: Sequence[str]) -> list[StoredAnswer]:
    """The stored answers with these ids (those that exist), as records and stored scores."""
    if not conversation_ids:
        return []
    stmt = select(Conversation).where(col(Conversation.id).in_(list(conversation_ids)))
    out = []
    for conv in session.execute(stmt).scalars():
        record = None
        if conv.query is not None and conv.answer is not None and conv.sources is not None:
            record = {
                "id": conv.external_id,
                "patient_id": conv.patient_id,
                "timestamp": conv.query_timestamp.isoformat(),
                "query": conv.query,
                "answer": conv.answer,
                "sources": conv.sources,
                "model": conv.model_used,
                "samples": conv.samples,
                "evidence": conv.evidence,
                "query_intent": conv.query_intent,
            }
        out.append(
            StoredAnswer(
                conversation_id=conv.id,
                record=record,
                flagged=bool(conv.is_flagged),
                grounding=conv.grounding_score,
                risk=conv.hallucination_risk,
                quality=conv.overall_quality,
                flagged_statements=int(conv.flagged_statements or 0),
            )
        )
    return out


def write_results(*, session: Session, rows: Sequence[dict[str, Any]]) -> int:
    """Insert result rows (RescoreResult columns), skipping any this run has already; returns
    how many were new. The caller commits: a batch lands whole or not at all."""
    if not rows:
        return 0
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    now = datetime.now(UTC)
    stmt = insert(RescoreResult).values([{"checked_at": now, **r} for r in rows])
    stmt = stmt.on_conflict_do_nothing(index_elements=["run_id", "conversation_id"])
    result = cast("CursorResult[Any]", session.execute(stmt))
    return int(result.rowcount or 0)


@dataclass(frozen=True, slots=True)
class RunCounts:
    """How many results of a run fall under each change (see :data:`CHANGES`)."""

    checked: int
    newly_flagged: int
    cleared: int
    same: int
    new: int
    failed: int

    def to_dict(self) -> dict[str, int]:
        return {
            "checked": self.checked,
            "newly_flagged": self.newly_flagged,
            "cleared": self.cleared,
            "same": self.same,
            "new": self.new,
            "failed": self.failed,
        }


def run_counts(*, session: Session, run_id: str) -> RunCounts:
    """The counts of a run's results by change, counted in SQL."""
    stmt = (
        select(col(RescoreResult.change), func.count())
        .where(col(RescoreResult.run_id) == run_id)
        .group_by(col(RescoreResult.change))
    )
    by = {str(change): int(n) for change, n in session.execute(stmt)}
    return RunCounts(
        checked=sum(by.values()),
        newly_flagged=by.get(FLAGGED, 0),
        cleared=by.get(CLEARED, 0),
        same=by.get(SAME, 0),
        new=by.get(NEW, 0),
        failed=by.get(FAILED, 0),
    )


def finish_run(*, session: Session, run_id: str, selected: int) -> RescoreRun:
    """Mark a run finished and store its counts (from its results); the caller commits."""
    counts = run_counts(session=session, run_id=run_id)
    session.execute(
        update(RescoreRun)
        .where(col(RescoreRun.id) == run_id)
        .values(
            status="finished",
            finished_at=datetime.now(UTC),
            selected=selected,
            checked=counts.checked,
            failed=counts.failed,
            newly_flagged=counts.newly_flagged,
            cleared=counts.cleared,
        )
    )
    run = session.get(RescoreRun, run_id)
    assert run is not None
    session.refresh(run)
    return run


def reopen_run(*, session: Session, run_id: str) -> None:
    """Mark a run running again to go on with it; its failed results are removed, so they
    are checked again (replaced, never added twice). The caller commits."""
    session.execute(
        update(RescoreRun)
        .where(col(RescoreRun.id) == run_id)
        .values(status="running", finished_at=None)
    )
    session.execute(
        delete(RescoreResult).where(
            col(RescoreResult.run_id) == run_id, col(RescoreResult.change) == FAILED
        )
    )


def set_selected(*, session: Session, run_id: str, selected: int) -> None:
    """Store how many answers a running run covers (shown while it runs)."""
    session.execute(
        update(RescoreRun).where(col(RescoreRun.id) == run_id).values(selected=selected)
    )


def top_changes(*, session: Session, run_id: str, limit: int = 20) -> list[RescoreResult]:
    """The results whose flag changed, largest change in risk first (then by id)."""
    delta = func.abs(
        func.coalesce(col(RescoreResult.new_risk), 0.0)
        - func.coalesce(col(RescoreResult.old_risk), 0.0)
    )
    stmt = (
        select(RescoreResult)
        .where(
            col(RescoreResult.run_id) == run_id, col(RescoreResult.change).in_((FLAGGED, CLEARED))
        )
        .order_by(delta.desc(), col(RescoreResult.conversation_id))
        .limit(limit)
    )
    return list(session.execute(stmt).scalars())


def run_results(*, session: Session, run_id: str) -> list[RescoreResult]:
    """Every result of a run (tests and exports; a large run is better read in pages)."""
    stmt = (
        select(RescoreResult)
        .where(col(RescoreResult.run_id) == run_id)
        .order_by(col(RescoreResult.conversation_id))
    )
    return list(session.execute(stmt).scalars())


@dataclass(frozen=True, slots=True)
class Comparison:
    """Two runs over the answers both checked: flags that differ, and the largest changes
    (``rows``: conversation id, flag and risk in each run, risk delta ``b - a``)."""

    run_a: str
    run_b: str
    both: int
    flagged_in_b_only: int
    flagged_in_a_only: int
    flagged_in_both: int
    rows: list[dict[str, Any]]


def compare_runs(*, session: Session, run_a: str, run_b: str, limit: int = 20) -> Comparison:
    """Compare the new scores of two runs over the answers both checked (in SQL)."""
    a = aliased(RescoreResult)
    b = aliased(RescoreResult)
    joined = and_(
        col(a.conversation_id) == col(b.conversation_id),
        col(a.run_id) == run_a,
        col(b.run_id) == run_b,
    )
    a_flag = func.coalesce(col(a.new_flagged), False)
    b_flag = func.coalesce(col(b.new_flagged), False)
    both_ok = and_(col(a.change) != FAILED, col(b.change) != FAILED)

    def _count(cond: Any) -> Any:
        return func.coalesce(func.sum(case((cond, 1), else_=0)), 0)

    counts = session.execute(
        select(
            func.count(),
            _count(and_(b_flag.is_(True), a_flag.is_(False))),
            _count(and_(a_flag.is_(True), b_flag.is_(False))),
            _count(and_(a_flag.is_(True), b_flag.is_(True))),
        )
        .select_from(a)
        .join(b, joined)
        .where(both_ok)
    ).one()
    delta = func.coalesce(col(b.new_risk), 0.0) - func.coalesce(col(a.new_risk), 0.0)
    stmt = (
        select(
            col(a.conversation_id),
            col(a.new_flagged),
            col(b.new_flagged),
            col(a.new_risk),
            col(b.new_risk),
            delta,
        )
        .select_from(a)
        .join(b, joined)
        .where(both_ok, a_flag != b_flag)
        .order_by(func.abs(delta).desc(), col(a.conversation_id))
        .limit(limit)
    )
    rows = [
        {
            "conversation_id": cid,
            "flagged_a": bool(fa),
            "flagged_b": bool(fb),
            "risk_a": ra,
            "risk_b": rb,
            "risk_delta": None if d is None else round(float(d), 6),
        }
        for cid, fa, fb, ra, rb, d in session.execute(stmt)
    ]
    return Comparison(
        run_a=run_a,
        run_b=run_b,
        both=int(counts[0]),
        flagged_in_b_only=int(counts[1]),
        flagged_in_a_only=int(counts[2]),
        flagged_in_both=int(counts[3]),
        rows=rows,
    )
