"""Retention's purge: patient text removed from records dated before a cutoff (which
columns, from the schema's tags), and the caches derived from record text dropped.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import CursorResult, func, select
from sqlmodel import Session, col

from core.storage.models import Conversation, EmbeddingCache, LLMCall, patient_text_columns


def purge_text_before(*, session: Session, cutoff: datetime) -> int:
    """Remove the patient text of conversations dated before ``cutoff``, in every table;
    keep scores, statuses, offsets and verdicts.

    Which columns are cleared is derived from the schema: every column tagged as patient
    text (:func:`core.storage.models.patient_text_columns`), by the row's owner columns.
    Returns the number of conversations purged. Runs inside the caller's transaction.
    """
    ids = [
        r[0]
        for r in session.execute(
            select(col(Conversation.id)).where(
                col(Conversation.query_timestamp) < cutoff,
                col(Conversation.text_purged_at).is_(None),
            )
        )
    ]
    if not ids:
        return 0
    now = datetime.now(UTC)
    groups: dict[tuple[Any, str], list[str]] = {}
    for table, column, owners in patient_text_columns():
        for owner in owners:
            groups.setdefault((table, owner), []).append(column)
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        for (table, owner), columns in groups.items():
            values: dict[str, Any] = dict.fromkeys(columns)
            if table.name == Conversation.__tablename__:
                values["text_purged_at"] = now
            session.execute(table.update().where(table.c[owner].in_(chunk)).values(values))
    return len(ids)


def count_caches(*, session: Session) -> tuple[int, int]:
    """Cached embeddings and cached LLM responses held now."""
    vectors = session.execute(select(func.count()).select_from(EmbeddingCache))
    responses = session.execute(
        select(func.count()).select_from(LLMCall).where(col(LLMCall.response_text).is_not(None))
    )
    return int(vectors.scalar_one()), int(responses.scalar_one())


def purge_caches(*, session: Session) -> tuple[int, int]:
    """Drop everything the caches derived from record text: every embedding row (of any
    model) is deleted, every cached LLM response cleared (its token and latency accounting
    stays; a cleared response is a cache miss). Returns both counts. Runs inside the caller's
    transaction.

    The caches are keyed by a hash of the text they were computed from, not by record (the
    same sentence in two records is embedded once), and a row may be written long after the
    record is dated: which rows derive from a purged record cannot be told from the row. So a
    purge that removes any record text drops them all; they are recomputed on demand.
    """
    vectors = session.execute(EmbeddingCache.__table__.delete())  # type: ignore[attr-defined]
    responses = session.execute(
        LLMCall.__table__.update()  # type: ignore[attr-defined]
        .where(col(LLMCall.response_text).is_not(None))
        .values(response_text=None)
    )
    return (
        int(cast("CursorResult[Any]", vectors).rowcount),
        int(cast("CursorResult[Any]", responses).rowcount),
    )


__all__ = [
    "count_caches",
    "purge_caches",
    "purge_text_before",
]
