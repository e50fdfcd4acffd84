"""Queries of queued ingestion: the ``ingest_job`` rows and the state of their jobs in the
PostgreSQL queue (procrastinate's ``procrastinate_jobs``, in the schema of that name).

A job's state is the queue's (``queued``, ``running``, ``done``, ``failed``: the dead-letter
state, after the last try); its outcome and last error are ours. Nothing here returns the
raw record but :func:`ingest_job`, which the worker reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import sqlalchemy as sa
from sqlmodel import Session, col, select

from core.storage.models import IngestJob

QUEUE_SCHEMA = "procrastinate"

JobState = Literal["queued", "running", "done", "failed", "cancelled"]
JOB_STATES: tuple[JobState, ...] = ("queued", "running", "done", "failed", "cancelled")

# procrastinate's job statuses -> ours
_STATE_OF: dict[str, JobState] = {
    "todo": "queued",
    "doing": "running",
    "succeeded": "done",
    "failed": "failed",
    "cancelled": "cancelled",
    "aborting": "running",
    "aborted": "cancelled",
}
_STATUSES_OF: dict[JobState, list[str]] = {}
for _status, _state in _STATE_OF.items():
    _STATUSES_OF.setdefault(_state, []).append(_status)

_queue_jobs = sa.table(
    "procrastinate_jobs",
    sa.column("id", sa.BigInteger),
    sa.column("status", sa.String),
    sa.column("attempts", sa.Integer),
    schema=QUEUE_SCHEMA,
)


@dataclass(frozen=True, slots=True)
class NewIngest:
    """One validated record to queue: its ids, the record as received and its short hash."""

    external_id: str
    conversation_id: str
    payload: dict[str, Any]
    payload_hash: str


@dataclass(frozen=True, slots=True)
class JobView:
    """What the API and the admin page show of a queued answer (no record text)."""

    id: int
    record_id: str
    state: JobState
    attempts: int
    submitted_by: str
    created_at: datetime
    finished_at: datetime | None
    outcome: str | None
    error_class: str | None
    error_message: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "record_id": self.record_id,
            "state": self.state,
            "attempts": self.attempts,
            "submitted_by": self.submitted_by,
            "created_at": self.created_at.isoformat(),
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "outcome": self.outcome,
            "error": None
            if self.error_class is None
            else {"class": self.error_class, "message": self.error_message},
        }


def add_ingest_jobs(
    *, session: Session, items: Sequence[NewIngest], replace: bool, submitted_by: str
) -> list[IngestJob]:
    """Insert one row per record (ids assigned); the caller defers their jobs in the same
    transaction and sets ``queue_job_id``."""
    rows = [
        IngestJob(
            external_id=item.external_id,
            conversation_id=item.conversation_id,
            payload=item.payload,
            payload_hash=item.payload_hash,
            replace=replace,
            submitted_by=submitted_by,
        )
        for item in items
    ]
    session.add_all(rows)
    session.flush()
    return rows


def ingest_job(*, session: Session, ingest_id: int) -> IngestJob | None:
    """The row of one queued answer, raw record included (for the worker)."""
    return session.get(IngestJob, ingest_id)


def finish_ingest_job(*, session: Session, ingest_id: int, outcome: str) -> None:
    """The result is stored: keep the outcome, drop the raw record and any earlier error."""
    session.execute(
        sa.update(IngestJob)
        .where(col(IngestJob.id) == ingest_id)
        .values(
            payload=sa.null(),  # SQL NULL, not a JSON null
            outcome=outcome,
            finished_at=datetime.now(UTC),
            error_class=None,
            error_message=None,
        )
    )


def purge_payloads_before(*, session: Session, cutoff: datetime, dry_run: bool = False) -> int:
    """Retention reaches the queue: clear the raw record of every answer received before
    ``cutoff`` that still holds one (in dead-letter, or never run), marking it ``purged``;
    returns how many (with ``dry_run``, how many would be). A later try of its job finds it
    finished and stores nothing."""
    old = (col(IngestJob.created_at) < cutoff, col(IngestJob.payload).is_not(None))
    if dry_run:
        return int(session.execute(select(sa.func.count()).where(*old)).scalar_one())
    result = session.execute(
        sa.update(IngestJob)
        .where(*old)
        .values(payload=sa.null(), outcome="purged", finished_at=datetime.now(UTC))
    )
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


def fail_ingest_job(
    *, session: Session, ingest_id: int, error_class: str, error_message: str
) -> None:
    """Keep why the last try failed (class and a message without record text)."""
    session.execute(
        sa.update(IngestJob)
        .where(col(IngestJob.id) == ingest_id)
        .values(error_class=error_class[:100], error_message=error_message[:300])
    )


def job_views(
    *,
    session: Session,
    ids: Sequence[int] | None = None,
    state: JobState | None = None,
    limit: int = 100,
) -> list[JobView]:
    """Queued answers with their queue state, newest first: those with ``ids``, or in
    ``state``, at most ``limit``."""
    q = (
        select(IngestJob, _queue_jobs.c.status, _queue_jobs.c.attempts)
        .join(_queue_jobs, _queue_jobs.c.id == col(IngestJob.queue_job_id))
        .order_by(col(IngestJob.id).desc())
        .limit(limit)
    )
    if ids is not None:
        q = q.where(col(IngestJob.id).in_(list(ids)))
    if state is not None:
        q = q.where(sa.cast(_queue_jobs.c.status, sa.Text).in_(_STATUSES_OF[state]))
    out = []
    for row, status, attempts in session.execute(q).all():
        out.append(
            JobView(
                id=int(row.id or 0),
                record_id=row.external_id,
                state=_STATE_OF.get(status, "queued"),
                attempts=int(attempts),
                submitted_by=row.submitted_by,
                created_at=row.created_at,
                finished_at=row.finished_at,
                outcome=row.outcome,
                error_class=row.error_class,
                error_message=row.error_message,
            )
        )
    return out


def queue_job_id(*, session: Session, ingest_id: int) -> int | None:
    """The queue's job id of a queued answer (None: no such answer)."""
    return session.execute(
        select(IngestJob.queue_job_id).where(col(IngestJob.id) == ingest_id)
    ).scalar_one_or_none()


def queue_depth(*, session: Session) -> dict[JobState, int]:
    """How many jobs of the queue are in each state (every state present, zeros included)."""
    counts: dict[JobState, int] = dict.fromkeys(JOB_STATES, 0)
    q = sa.select(_queue_jobs.c.status, sa.func.count()).group_by(_queue_jobs.c.status)
    for status, n in session.execute(q).all():
        counts[_STATE_OF.get(status, "queued")] += int(n)
    return counts
