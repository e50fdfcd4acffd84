"""Retention: remove record text past the retention period, keep scores and verdicts.

One transaction purges the text of every conversation dated before the cutoff from every
column the schema tags as patient text, drops the caches derived from record text (embedding
rows, cached LLM responses: keyed by text hash, not by record, so all of them whenever any
record text goes), and writes the ``purge`` audit event; if anything fails, nothing is purged
and nothing is audited. The full-text index loses the purged text with the rows
(:mod:`core.storage.search`): compacted in the same transaction on SQLite, the table vacuumed
after it on PostgreSQL.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from core.storage import jobs, repo, search
from core.storage.db import read_session, write_session
from core.storage.models import Conversation

log = logging.getLogger(__name__)

MAX_RETENTION_DAYS = 36_500


@dataclass(frozen=True, slots=True)
class PurgeResult:
    """What a purge did (or, with ``dry_run``, would do)."""

    purged: int
    cutoff: datetime
    older_than_days: int
    dry_run: bool
    audit_event_id: int | None
    # what the caches derived from record text: embedding rows deleted, LLM responses cleared
    cached_embeddings: int = 0
    cached_llm_responses: int = 0
    # raw records of queued answers never stored (dead-letter, never run), cleared
    queued_records: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe summary."""
        return {
            "purged": self.purged,
            "cutoff": self.cutoff.isoformat(),
            "older_than_days": self.older_than_days,
            "dry_run": self.dry_run,
            "audit_event_id": self.audit_event_id,
            "cached_embeddings": self.cached_embeddings,
            "cached_llm_responses": self.cached_llm_responses,
            "queued_records": self.queued_records,
        }


def retention_cutoff(older_than_days: int, *, now: datetime | None = None) -> datetime:
    """The moment before which record text is purged (UTC)."""
    if not 1 <= older_than_days <= MAX_RETENTION_DAYS:
        raise ValueError(f"older_than_days must be between 1 and {MAX_RETENTION_DAYS}")
    now = now or datetime.now(UTC)
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    return now.astimezone(UTC) - timedelta(days=older_than_days)


def count_purgeable(*, engine: Engine, cutoff: datetime) -> int:
    """Conversations older than ``cutoff`` whose text is still stored."""
    with read_session(engine) as session:
        stmt = select(func.count()).where(
            Conversation.query_timestamp < cutoff,  # type: ignore[arg-type]
            Conversation.text_purged_at.is_(None),  # type: ignore[union-attr]
        )
        return int(session.execute(stmt).scalar_one())


def purge_expired(
    *,
    engine: Engine,
    older_than_days: int,
    actor: str,
    now: datetime | None = None,
    dry_run: bool = False,
) -> PurgeResult:
    """Purge record text older than ``older_than_days`` in ONE audited transaction.

    Scores, statuses, statement offsets and verdicts stay. Re-running purges nothing more.

    Raises:
        ValueError: ``older_than_days`` outside 1..36500 or an empty ``actor``.
    """
    if not actor.strip():
        raise ValueError("actor must not be empty")
    cutoff = retention_cutoff(older_than_days, now=now)
    if dry_run:
        n = count_purgeable(engine=engine, cutoff=cutoff)
        vectors = responses = 0
        with read_session(engine) as session:
            if n:
                vectors, responses = repo.count_caches(session=session)
            queued = jobs.purge_payloads_before(session=session, cutoff=cutoff, dry_run=True)
        return PurgeResult(n, cutoff, older_than_days, True, None, vectors, responses, queued)
    with write_session(engine) as session:
        purged = repo.purge_text_before(session=session, cutoff=cutoff)
        queued = jobs.purge_payloads_before(session=session, cutoff=cutoff)
        vectors = responses = 0
        if purged:
            vectors, responses = repo.purge_caches(session=session)
            search.compact_index(session=session)
        event = repo.record_audit(
            session=session,
            actor=actor.strip(),
            action="purge",
            target_type="conversation",
            target_id=None,
            detail={
                "older_than_days": older_than_days,
                "cutoff": cutoff.isoformat(),
                "purged": purged,
                "cached_embeddings": vectors,
                "cached_llm_responses": responses,
                "queued_records": queued,
            },
        )
        event_id = int(event.id) if event.id is not None else None
    if purged:
        search.reclaim_purged(engine)
    log.info(
        "purged text of %d conversations older than %d days (%d cached embeddings, "
        "%d cached LLM responses, %d queued records never stored)",
        purged,
        older_than_days,
        vectors,
        responses,
        queued,
    )
    return PurgeResult(purged, cutoff, older_than_days, False, event_id, vectors, responses, queued)


__all__ = ["PurgeResult", "count_purgeable", "purge_expired", "retention_cutoff"]
