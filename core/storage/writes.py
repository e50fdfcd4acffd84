"""Writes: a record's conversation and check rows stored in one transaction (idempotent on
the record's external id), the daily rollups every write maintains, verdicts and audit events.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import delete, func, insert, select, text
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from core.storage.db import insert_for, write_session
from core.storage.models import (
    AuditEvent,
    ClaimAudit,
    ConfidenceMetric,
    ConsistencyCheck,
    Conversation,
    EntityMention,
    EvidenceValidation,
    Patient,
    QualityDaily,
    QualityDailyModel,
    QualitySums,
    Review,
    SelfCheckResult,
    StatementCheck,
    strip_patient_text,
)
from core.text import content_hash

Verdict = Literal["confirmed", "false_alarm", "unsure"]
VERDICTS: tuple[Verdict, ...] = ("confirmed", "false_alarm", "unsure")


_NAMESPACE = uuid.UUID("6f1d8f6e-3c2a-4f57-9a55-1f0c3f4a9b10")


def conversation_id_for(external_id: str) -> str:
    """Deterministic conversation id of an external record id (idempotent imports)."""
    return uuid.uuid5(_NAMESPACE, external_id).hex


@dataclass(slots=True)
class ConversationBundle:
    """A conversation and all its check rows, stored together in one transaction."""

    conversation: Conversation
    statements: list[StatementCheck] = field(default_factory=list)
    consistency: list[ConsistencyCheck] = field(default_factory=list)
    confidence: list[ConfidenceMetric] = field(default_factory=list)
    evidence: list[EvidenceValidation] = field(default_factory=list)
    selfcheck: list[SelfCheckResult] = field(default_factory=list)
    claims: list[ClaimAudit] = field(default_factory=list)
    mentions: list[EntityMention] = field(default_factory=list)

    def add(self, rows: Iterable[Any]) -> None:
        """File each row under the list of its table (a pipeline stage's rows)."""
        for row in rows:
            getattr(self, _BUNDLE_LIST[type(row)]).append(row)

    def children(self) -> Iterator[Any]:
        """Every check row, list after list (the one place that names the lists)."""
        for name in dict.fromkeys(_BUNDLE_LIST.values()):
            yield from getattr(self, name)

    def strip_patient_text(self) -> None:
        """Clear every column tagged as patient text in every row held (conversation history
        off): which columns is read from the schema's tags, as retention does."""
        strip_patient_text(self.conversation)
        for row in self.children():
            strip_patient_text(row)


# Which list of a bundle holds each child table's rows.
_BUNDLE_LIST: dict[type, str] = {
    StatementCheck: "statements",
    ConsistencyCheck: "consistency",
    ConfidenceMetric: "confidence",
    EvidenceValidation: "evidence",
    SelfCheckResult: "selfcheck",
    ClaimAudit: "claims",
    EntityMention: "mentions",
}


StoreStatus = Literal["imported", "updated", "unchanged"]


@dataclass(frozen=True, slots=True)
class StoreOutcome:
    """What storing a record did."""

    status: StoreStatus
    conversation_id: str


class RecordExistsError(ValueError):
    """A record with this id is stored already with other content, and the caller may not
    replace it (the message names the record id, never its text)."""


def ensure_patient(*, session: Session, patient_id: str) -> None:
    """Create the patient row if it does not exist (safe under concurrency)."""
    stmt = insert_for(session)(Patient).values(id=patient_id, created_at=datetime.now(UTC))
    session.execute(stmt.on_conflict_do_nothing(index_elements=["id"]))


def _day(ts: datetime) -> datetime:
    ts = ts.astimezone(UTC)
    return datetime(ts.year, ts.month, ts.day, tzinfo=UTC)


_COUNTERS = tuple(QualitySums.model_fields)


def _rollup_values(conv: Conversation | Any, sign: int) -> dict[str, Any]:
    def pair(value: float | None) -> tuple[int, float]:
        return (0, 0.0) if value is None else (sign, sign * float(value))

    def square(value: float | None) -> float:
        return 0.0 if value is None else sign * float(value) * float(value)

    ng, sg = pair(conv.grounding_score)
    nc, sc = pair(conv.consistency_score)
    nf, sf = pair(conv.confidence_score)
    nr, sr = pair(conv.hallucination_risk)
    nq, sq = pair(conv.overall_quality)
    return {
        "day": _day(conv.query_timestamp),
        "model_used": conv.model_used,
        "patient_id": conv.patient_id,
        "n": sign,
        "n_flagged": sign if conv.is_flagged else 0,
        "n_grounding": ng,
        "sum_grounding": sg,
        "sumsq_grounding": square(conv.grounding_score),
        "n_consistency": nc,
        "sum_consistency": sc,
        "sumsq_consistency": square(conv.consistency_score),
        "n_confidence": nf,
        "sum_confidence": sf,
        "n_risk": nr,
        "sum_risk": sr,
        "n_quality": nq,
        "sum_quality": sq,
    }


def _apply_rollups(session: Session, deltas: Sequence[dict[str, Any]]) -> None:
    """Add conversation deltas to both rollups: summed in Python, one upsert per table."""
    if not deltas:
        return
    for model, keys in (
        (QualityDaily, ("day", "model_used", "patient_id")),
        (QualityDailyModel, ("day", "model_used")),
    ):
        merged: dict[tuple[Any, ...], dict[str, Any]] = {}
        for d in deltas:
            key = tuple(d[k] for k in keys)
            row = merged.get(key)
            if row is None:
                merged[key] = {**{k: d[k] for k in keys}, **{c: d[c] for c in _COUNTERS}}
            else:
                for c in _COUNTERS:
                    row[c] += d[c]
        table = model.__table__  # type: ignore[union-attr]
        stmt = insert_for(session)(table)
        stmt = stmt.on_conflict_do_update(
            index_elements=list(keys),
            set_={c: table.c[c] + stmt.excluded[c] for c in _COUNTERS},
        )
        # a fixed key order keeps concurrent writers from deadlocking on the rollup rows
        session.execute(stmt, [merged[k] for k in sorted(merged, key=str)])


def _rollup(session: Session, conv: Conversation | Any, sign: int) -> None:
    _apply_rollups(session, [_rollup_values(conv, sign)])


# the child tables whose rows a record's new version replaces (consistency rows are keyed by
# current_conversation_id and deleted apart)
_CHILD_MODELS: tuple[Any, ...] = tuple(t for t in _BUNDLE_LIST if t is not ConsistencyCheck)


def store_conversation(
    *, session: Session, bundle: ConversationBundle, replace: bool = True
) -> StoreOutcome:
    """Store a conversation and its checks; idempotent on ``external_id``.

    The same content again changes nothing (``unchanged``); an edited record replaces the
    previous version and its check rows (``updated``), unless ``replace`` is false: then it
    raises :class:`RecordExistsError` and the caller's transaction stores nothing; never a
    duplicate. Clinicians'
    verdicts survive an edit: each follows its statement into the new version when the
    statement is still there (same text), else it stays with the conversation, detached.
    """
    conv = bundle.conversation
    conv.id = conversation_id_for(conv.external_id)
    ensure_patient(session=session, patient_id=conv.patient_id)
    existing = session.get(Conversation, conv.id)
    status: StoreStatus = "imported"
    reviewed: dict[int, StatementKey] = {}
    if existing is not None:
        if existing.content_hash == conv.content_hash:
            return StoreOutcome("unchanged", conv.id)
        if not replace:
            raise RecordExistsError(
                f"record id {conv.external_id!r} is stored already with other content"
            )
        reviewed = _detach_reviews(session, conv.id)
        _rollup(session, existing, -1)
        for model in _CHILD_MODELS:
            session.execute(delete(model).where(model.conversation_id == conv.id))
        session.execute(
            delete(ConsistencyCheck).where(col(ConsistencyCheck.current_conversation_id) == conv.id)
        )
        conv.created_at = existing.created_at
        conv.updated_at = datetime.now(UTC)
        session.expunge(existing)
        session.merge(conv)
        status = "updated"
    else:
        session.add(conv)
    session.flush()
    for row in bundle.children():
        _attach(row, conv)
        session.add(row)
    _rollup(session, conv, +1)
    session.flush()
    if reviewed:
        _reattach_reviews(session, reviewed, bundle.statements)
    return StoreOutcome(status, conv.id)


def _attach(row: Any, conv: Conversation) -> None:
    """A check row made the conversation's: its id, and on a statement the copies of the
    answer's time, model and patient that the review queue reads without a join."""
    if isinstance(row, ConsistencyCheck):
        row.current_conversation_id = conv.id
    elif hasattr(row, "conversation_id"):
        row.conversation_id = conv.id
    if isinstance(row, StatementCheck):
        row.query_timestamp = conv.query_timestamp
        row.model_used = conv.model_used
        row.patient_id = conv.patient_id


StatementKey = tuple[str, int]


def _statement_keys(
    rows: Iterable[tuple[Any, str | None, str | None, int]],
) -> dict[Any, StatementKey]:
    """Each statement's identity: the hash of its text (stored, or computed from the text) and
    its occurrence among the answer's statements with that text (the same sentence twice is
    two statements), in statement order. Rows: (id, hash, text, index); no hash and no text:
    no identity."""
    seen: dict[str, int] = {}
    keys: dict[Any, StatementKey] = {}
    for row_id, digest, said, _ in sorted(rows, key=lambda r: r[3]):
        digest = digest or (content_hash(said) if said is not None else None)
        if digest is None:
            continue
        keys[row_id] = (digest, seen.get(digest, 0))
        seen[digest] = seen.get(digest, 0) + 1
    return keys


def _detach_reviews(session: Session, conversation_id: str) -> dict[int, StatementKey]:
    """Unlink the conversation's reviews from its statement checks (about to be replaced),
    so that deleting those does not delete the verdicts. Returns, per review id, the identity
    of the statement it was given on (when it has one)."""
    statements = session.execute(
        select(
            col(StatementCheck.id),
            col(StatementCheck.statement_hash),
            col(StatementCheck.statement),
            col(StatementCheck.statement_index),
        ).where(col(StatementCheck.conversation_id) == conversation_id)
    ).all()
    keys = _statement_keys((r[0], r[1], r[2], int(r[3])) for r in statements)
    reviews = session.execute(
        select(col(Review.id), col(Review.statement_check_id)).where(
            col(Review.conversation_id) == conversation_id
        )
    ).all()
    if reviews:
        session.execute(
            Review.__table__.update()  # type: ignore[attr-defined]
            .where(Review.conversation_id == conversation_id)
            .values(statement_check_id=None)
        )
    return {int(r[0]): keys[r[1]] for r in reviews if r[1] in keys}


def _reattach_reviews(
    session: Session, reviewed: dict[int, StatementKey], statements: list[StatementCheck]
) -> None:
    """Link each detached review to the new statement check with the same identity (same
    text, same occurrence); the others stay detached, never moved to another statement."""
    keys = _statement_keys(
        (row.id, row.statement_hash, row.statement, row.statement_index)
        for row in statements
        if row.id is not None
    )
    by_key = {key: int(row_id) for row_id, key in keys.items()}
    for review_id, key in reviewed.items():
        target = by_key.get(key)
        if target is not None:
            session.execute(
                Review.__table__.update()  # type: ignore[attr-defined]
                .where(Review.id == review_id)
                .values(statement_check_id=target)
            )


def _row(obj: Any) -> dict[str, Any]:
    """Column values of a model instance, leaving out an unset autoincrement key."""
    table = type(obj).__table__
    out: dict[str, Any] = {}
    for column in table.columns:
        value = getattr(obj, column.key)
        if value is None and column.primary_key and column.autoincrement in (True, "auto"):
            continue
        out[column.key] = value
    return out


def store_many(
    *, session: Session, bundles: Sequence[ConversationBundle], replace: bool = True
) -> list[StoreOutcome]:
    """Store many bundles inside the caller's transaction, batched.

    New records go in with one multi-row insert per table and one rollup upsert; unchanged
    records are skipped; edited records take the per-record path of
    :func:`store_conversation`. Same outcomes as storing them one by one.
    """
    for b in bundles:
        b.conversation.id = conversation_id_for(b.conversation.external_id)
    ids = [b.conversation.id for b in bundles]
    if len(set(ids)) != len(ids):  # the same record twice: keep the one-by-one semantics
        return [store_conversation(session=session, bundle=b, replace=replace) for b in bundles]
    patients = sorted({b.conversation.patient_id for b in bundles})
    if patients:
        now = datetime.now(UTC)
        stmt = insert_for(session)(Patient.__table__)  # type: ignore[attr-defined]
        session.execute(
            stmt.on_conflict_do_nothing(index_elements=["id"]),
            [{"id": p, "created_at": now} for p in patients],
        )
    existing: dict[str, str] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        stmt_ids = select(col(Conversation.id), col(Conversation.content_hash)).where(
            col(Conversation.id).in_(chunk)
        )
        existing.update((str(cid), str(h)) for cid, h in session.execute(stmt_ids))
    outcomes: dict[str, StoreOutcome] = {}
    fresh: list[ConversationBundle] = []
    for b in bundles:
        conv = b.conversation
        if conv.id not in existing:
            fresh.append(b)
        elif existing[conv.id] == conv.content_hash:
            outcomes[conv.id] = StoreOutcome("unchanged", conv.id)
        else:
            outcomes[conv.id] = store_conversation(session=session, bundle=b, replace=replace)
    if fresh:
        session.execute(
            insert(Conversation.__table__),  # type: ignore[attr-defined]
            [_row(b.conversation) for b in fresh],
        )
        children: dict[Any, list[dict[str, Any]]] = {}
        for b in fresh:
            for row in b.children():
                _attach(row, b.conversation)
                children.setdefault(type(row).__table__, []).append(_row(row))
        for table, values in children.items():
            # rows without an optional key must not share a statement with rows that have it
            by_keys: dict[tuple[str, ...], list[dict[str, Any]]] = {}
            for r in values:
                by_keys.setdefault(tuple(sorted(r)), []).append(r)
            for group in by_keys.values():
                session.execute(insert(table), group)
        _apply_rollups(session, [_rollup_values(b.conversation, +1) for b in fresh])
        for b in fresh:
            outcomes[b.conversation.id] = StoreOutcome("imported", b.conversation.id)
    session.flush()
    return [outcomes[i] for i in ids]


def stored_conversations(
    *, session: Session, conversation_ids: Sequence[str]
) -> dict[str, Conversation]:
    """The stored conversations among ``conversation_ids`` (id -> row), read in chunks: what
    the pipeline compares content hashes with before it runs any check."""
    found: dict[str, Conversation] = {}
    unique = sorted(set(conversation_ids))
    for start in range(0, len(unique), 500):
        chunk = unique[start : start + 500]
        stmt = select(Conversation).where(col(Conversation.id).in_(chunk))
        found.update((str(c.id), c) for c in session.scalars(stmt))
    return found


def store_bundles(*, engine: Engine, bundles: Sequence[ConversationBundle]) -> list[StoreOutcome]:
    """Store many bundles in ONE transaction: all land or none does."""
    with write_session(engine) as session:
        return store_many(session=session, bundles=bundles)


def create_review(
    *,
    session: Session,
    statement_check_id: int,
    reviewer: str,
    verdict: Verdict,
    note: str | None = None,
) -> Review:
    """Store a verdict on a flagged statement, with who gave it and when."""
    if verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}")
    if not reviewer.strip():
        raise ValueError("reviewer must not be empty")
    check = session.get(StatementCheck, statement_check_id)
    if check is None:
        raise LookupError(f"no statement check with id {statement_check_id}")
    review = Review(
        statement_check_id=statement_check_id,
        conversation_id=check.conversation_id,
        reviewer=reviewer.strip(),
        verdict=verdict,
        note=(note or None),
        created_at=datetime.now(UTC),
    )
    session.add(review)
    session.flush()
    return review


def delete_review(*, session: Session, review_id: int, reviewer: str) -> Review:
    """Take back a verdict (the undo of the review queue): only the reviewer who gave it may.

    Raises:
        LookupError: no verdict with this id given by ``reviewer``.
    """
    review = session.get(Review, review_id)
    if review is None or review.reviewer != reviewer.strip():
        raise LookupError(f"no verdict {review_id} given by this reviewer")
    session.delete(review)
    session.flush()
    return review


def record_audit(
    *,
    session: Session,
    actor: str,
    action: str,
    target_type: str | None = None,
    target_id: str | None = None,
    detail: dict[str, Any] | None = None,
) -> AuditEvent:
    """Append an audit event (who did what to which record; never patient text)."""
    event = AuditEvent(
        at=datetime.now(UTC),
        actor=actor,
        action=action,
        target_type=target_type,
        target_id=target_id,
        detail=detail,
    )
    session.add(event)
    session.flush()
    return event


# --------------------------------------------------------------------------- maintenance


def rebuild_model_rollup(*, session: Session) -> int:
    """Recompute ``quality_daily_model`` from ``quality_daily`` (after bulk loads).

    Returns the number of rows written.
    """
    cols = ", ".join(_COUNTERS)
    sums = ", ".join(f"sum({c})" for c in _COUNTERS)
    session.execute(QualityDailyModel.__table__.delete())  # type: ignore[attr-defined]
    session.execute(
        text(
            f"INSERT INTO quality_daily_model (day, model_used, {cols}) "
            f"SELECT day, model_used, {sums} FROM quality_daily GROUP BY day, model_used"
        )
    )
    return int(session.execute(select(func.count()).select_from(QualityDailyModel)).scalar_one())


__all__ = [
    "conversation_id_for",
    "ConversationBundle",
    "create_review",
    "delete_review",
    "ensure_patient",
    "rebuild_model_rollup",
    "record_audit",
    "RecordExistsError",
    "store_bundles",
    "store_conversation",
    "store_many",
    "stored_conversations",
    "StoreOutcome",
    "StoreStatus",
    "Verdict",
    "VERDICTS",
]
