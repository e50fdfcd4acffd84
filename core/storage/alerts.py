"""Alert firings and webhook deliveries: keyword-only functions over a session, and the reads
the alert rules are evaluated on (flagged shares, scores, contradictions, recent verdicts).

A firing is keyed by its condition (a rule and what it is about). While a firing of that key
is open or acknowledged, the condition holding again adds to it instead of firing twice; a
partial unique index on the key (open and acknowledged rows only) keeps that true when two
processes evaluate at once. Every row holds ids, counts and scores, never patient text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import case, func, select
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col

from core.storage.models import (
    AlertDelivery,
    AlertFiring,
    ConsistencyCheck,
    Conversation,
    StatementCheck,
)
from core.storage.queries import latest_reviews
from core.storage.writes import record_audit

State = Literal["open", "acknowledged", "resolved"]
STATES: tuple[State, ...] = ("open", "acknowledged", "resolved")
Outcome = Literal["delivered", "retry", "failed", "dropped"]
# the answers kept behind one firing (the newest ones)
MAX_LINKED = 50


class AlertStateError(ValueError):
    """A firing that does not exist, or a change its state does not allow."""


@dataclass(frozen=True, slots=True)
class FiringIn:
    """What a rule found, to be stored as a firing (or added to the open one of its key)."""

    rule: str
    kind: str
    condition_key: str
    model: str | None = None
    patient_id: str | None = None
    value: float | None = None
    threshold: float | None = None
    counts: dict[str, Any] = field(default_factory=dict)
    conversation_ids: tuple[str, ...] = ()


def _merge_ids(old: Sequence[str] | None, new: Sequence[str]) -> list[str]:
    out = [i for i in (old or []) if i not in set(new)] + list(dict.fromkeys(new))
    return out[-MAX_LINKED:]


def _open_firing(session: Session, key: str) -> AlertFiring | None:
    """The open or acknowledged firing of ``key``, locked until the transaction ends (two
    writers adding to it one after the other, never over each other)."""
    stmt = (
        select(AlertFiring)
        .where(col(AlertFiring.condition_key) == key, col(AlertFiring.state) != "resolved")
        .with_for_update()
    )
    return session.execute(stmt).scalars().first()


def fire(
    *, session: Session, firing_in: FiringIn, now: datetime | None = None
) -> tuple[AlertFiring, bool]:
    """Store a firing, or add to the open (or acknowledged) one of the same condition.

    Returns:
        ``(firing, new)``: ``new`` is False when the condition was open already (its
        occurrences, last time, measured value and answers are updated; nothing else fires).
    """
    at = now or datetime.now(UTC)
    for _ in range(2):
        found = _open_firing(session, firing_in.condition_key)
        if found is not None:
            found.occurrences += 1
            found.last_at = at
            found.value = firing_in.value
            found.counts = dict(firing_in.counts)
            found.conversation_ids = _merge_ids(found.conversation_ids, firing_in.conversation_ids)
            session.add(found)
            session.flush()
            return found, False
        firing = AlertFiring(
            rule=firing_in.rule,
            kind=firing_in.kind,
            condition_key=firing_in.condition_key,
            state="open",
            model=firing_in.model,
            patient_id=firing_in.patient_id,
            value=firing_in.value,
            threshold=firing_in.threshold,
            counts=dict(firing_in.counts),
            conversation_ids=_merge_ids([], firing_in.conversation_ids),
            occurrences=1,
            first_at=at,
            last_at=at,
        )
        try:
            with session.begin_nested():
                session.add(firing)
                session.flush()
        except IntegrityError:
            # another writer opened this condition between our read and our insert: add to it
            continue
        return firing, True
    raise AlertStateError(f"condition {firing_in.condition_key!r}: could not be stored")


def get_firing(*, session: Session, firing_id: int) -> AlertFiring | None:
    """One firing by id."""
    return session.get(AlertFiring, firing_id)


def list_firings(
    *, session: Session, states: Sequence[State] = STATES, limit: int = 500
) -> list[AlertFiring]:
    """Firings in the given states: open first, then acknowledged, then resolved; the most
    recent first within each."""
    order = case(
        (col(AlertFiring.state) == "open", 0),
        (col(AlertFiring.state) == "acknowledged", 1),
        else_=2,
    )
    stmt = (
        select(AlertFiring)
        .where(col(AlertFiring.state).in_(list(states)))
        .order_by(order, col(AlertFiring.last_at).desc(), col(AlertFiring.id).desc())
        .limit(limit)
    )
    return list(session.execute(stmt).scalars())


def count_firings(*, session: Session) -> dict[str, int]:
    """How many firings are in each state."""
    stmt = select(col(AlertFiring.state), func.count()).group_by(col(AlertFiring.state))
    found = {str(s): int(n) for s, n in session.execute(stmt)}
    return {s: found.get(s, 0) for s in STATES}


def change_state(
    *, session: Session, firing_id: int, state: Literal["acknowledged", "resolved"], actor: str
) -> AlertFiring:
    """Acknowledge or resolve a firing, with who and when, and an audit event.

    An open firing may be acknowledged or resolved, an acknowledged one resolved; a resolved
    one stays resolved (the condition firing again opens a new firing).

    Raises:
        AlertStateError: no such firing, or the change is not allowed.
    """
    firing = session.get(AlertFiring, firing_id, with_for_update=True)
    if firing is None:
        raise AlertStateError(f"no alert with id {firing_id}")
    allowed = {"open": ("acknowledged", "resolved"), "acknowledged": ("resolved",)}
    if state not in allowed.get(firing.state, ()):
        raise AlertStateError(f"alert {firing_id} is {firing.state}; it cannot become {state}")
    at = datetime.now(UTC)
    previous = firing.state
    firing.state = state
    if state == "acknowledged":
        firing.acknowledged_by, firing.acknowledged_at = actor, at
    else:
        firing.resolved_by, firing.resolved_at = actor, at
    session.add(firing)
    record_audit(
        session=session,
        actor=actor,
        action=f"alert_{'acknowledge' if state == 'acknowledged' else 'resolve'}",
        target_type="alert_firing",
        target_id=str(firing_id),
        detail={"rule": firing.rule, "from": previous, "to": state},
    )
    session.flush()
    return firing


def record_delivery(
    *,
    session: Session,
    firing_id: int,
    webhook: str,
    attempt: int,
    outcome: Outcome,
    status_code: int | None = None,
    error_class: str | None = None,
    duration_ms: int | None = None,
) -> AlertDelivery:
    """Log one delivery attempt (status code or error class; never a body)."""
    row = AlertDelivery(
        firing_id=firing_id,
        webhook=webhook,
        attempt=attempt,
        outcome=outcome,
        status_code=status_code,
        error_class=error_class,
        duration_ms=duration_ms,
        at=datetime.now(UTC),
    )
    session.add(row)
    session.flush()
    return row


def list_deliveries(
    *, session: Session, firing_id: int | None = None, limit: int = 500
) -> list[AlertDelivery]:
    """Delivery attempts, newest first (of one firing, or all)."""
    stmt = select(AlertDelivery)
    if firing_id is not None:
        stmt = stmt.where(col(AlertDelivery.firing_id) == firing_id)
    stmt = stmt.order_by(col(AlertDelivery.at).desc(), col(AlertDelivery.id).desc()).limit(limit)
    return list(session.execute(stmt).scalars())


# --------------------------------------------------------------------------- what rules read


@dataclass(frozen=True, slots=True)
class AnswerFacts:
    """What the alert rules need of one stored answer: ids, scores, flag and contradictions
    (consistency and grounding scores: higher is better)."""

    conversation_id: str
    external_id: str
    patient_id: str
    model: str
    timestamp: datetime
    grounding_score: float | None
    consistency_score: float | None
    is_flagged: bool
    contradicted_statements: int
    contradicted_earlier: int


def answer_facts(*, session: Session, conversation_ids: Sequence[str]) -> list[AnswerFacts]:
    """The facts of the given stored answers, in time order (ids not stored are left out)."""
    if not conversation_ids:
        return []
    ids = list(dict.fromkeys(conversation_ids))
    grounding = (
        select(col(StatementCheck.conversation_id), func.count().label("n"))
        .where(
            col(StatementCheck.conversation_id).in_(ids),
            col(StatementCheck.status) == "contradicted",
        )
        .group_by(col(StatementCheck.conversation_id))
    )
    contradicted = {str(c): int(n) for c, n in session.execute(grounding)}
    earlier = (
        select(col(ConsistencyCheck.current_conversation_id), func.count().label("n"))
        .where(
            col(ConsistencyCheck.current_conversation_id).in_(ids),
            col(ConsistencyCheck.is_consistent).is_(False),
        )
        .group_by(col(ConsistencyCheck.current_conversation_id))
    )
    inconsistent = {str(c): int(n) for c, n in session.execute(earlier)}
    stmt = (
        select(Conversation)
        .where(col(Conversation.id).in_(ids))
        .order_by(col(Conversation.query_timestamp), col(Conversation.id))
    )
    return [
        AnswerFacts(
            conversation_id=c.id,
            external_id=c.external_id,
            patient_id=c.patient_id,
            model=c.model_used,
            timestamp=c.query_timestamp,
            grounding_score=c.grounding_score,
            consistency_score=c.consistency_score,
            is_flagged=bool(c.is_flagged),
            contradicted_statements=contradicted.get(c.id, 0),
            contradicted_earlier=inconsistent.get(c.id, 0),
        )
        for c in session.execute(stmt).scalars()
    ]


def external_ids(*, session: Session, conversation_ids: Sequence[str]) -> dict[str, str]:
    """The record id each answer was sent with, by conversation id."""
    if not conversation_ids:
        return {}
    stmt = select(col(Conversation.id), col(Conversation.external_id)).where(
        col(Conversation.id).in_(list(conversation_ids))
    )
    return {str(c): str(e) for c, e in session.execute(stmt)}


def recent_answer_ids(*, session: Session, limit: int) -> list[str]:
    """The ids of the ``limit`` most recent answers (by their time)."""
    stmt = (
        select(col(Conversation.id))
        .order_by(col(Conversation.query_timestamp).desc(), col(Conversation.id).desc())
        .limit(limit)
    )
    return [str(i) for i in session.execute(stmt).scalars()]


def latest_answer_time_by_model(*, session: Session) -> dict[str, datetime]:
    """The time of each model's most recent answer."""
    stmt = select(
        col(Conversation.model_used), func.max(col(Conversation.query_timestamp))
    ).group_by(col(Conversation.model_used))
    return {str(mdl): at for mdl, at in session.execute(stmt) if at is not None}


@dataclass(frozen=True, slots=True)
class WindowCounts:
    """Answers of one model in a time window: how many, how many flagged, and the flagged
    ones (newest last, at most :data:`MAX_LINKED`)."""

    answers: int
    flagged: int
    flagged_ids: tuple[str, ...]


def window_counts(*, session: Session, model: str, start: datetime, end: datetime) -> WindowCounts:
    """Counts of ``model``'s answers with ``start < time <= end``."""
    where = (
        col(Conversation.model_used) == model,
        col(Conversation.query_timestamp) > start,
        col(Conversation.query_timestamp) <= end,
    )
    total, flagged = session.execute(
        select(
            func.count(),
            func.coalesce(func.sum(case((col(Conversation.is_flagged).is_(True), 1), else_=0)), 0),
        ).where(*where)
    ).one()
    ids_stmt = (
        select(col(Conversation.id))
        .where(*where, col(Conversation.is_flagged).is_(True))
        .order_by(col(Conversation.query_timestamp).desc(), col(Conversation.id).desc())
        .limit(MAX_LINKED)
    )
    ids = [str(i) for i in session.execute(ids_stmt).scalars()]
    return WindowCounts(int(total), int(flagged), tuple(reversed(ids)))


@dataclass(frozen=True, slots=True)
class Verdict:
    """A clinician's latest verdict on a flagged statement, with the detector's risk (higher is
    worse): ``confirmed`` True for a confirmed hallucination, False for a false alarm."""

    risk: float
    confirmed: bool
    conversation_id: str
    reviewed_at: datetime


def recent_verdicts(*, session: Session, limit: int) -> list[Verdict]:
    """The ``limit`` most recent verdicts that are a confirmed hallucination or a false alarm
    ('unsure' left out), the latest per statement, newest first."""
    latest = latest_reviews()
    stmt = (
        select(
            col(StatementCheck.risk),
            latest.c.verdict,
            col(StatementCheck.conversation_id),
            latest.c.created_at,
        )
        .join(latest, latest.c.statement_check_id == col(StatementCheck.id))
        .where(latest.c.verdict.in_(["confirmed", "false_alarm"]))
        .order_by(latest.c.created_at.desc(), col(StatementCheck.id).desc())
        .limit(limit)
    )
    return [
        Verdict(float(risk or 0.0), verdict == "confirmed", str(conv), at)
        for risk, verdict, conv, at in session.execute(stmt)
    ]


__all__ = [
    "MAX_LINKED",
    "STATES",
    "AlertStateError",
    "AnswerFacts",
    "FiringIn",
    "Verdict",
    "WindowCounts",
    "answer_facts",
    "change_state",
    "count_firings",
    "external_ids",
    "fire",
    "get_firing",
    "latest_answer_time_by_model",
    "list_deliveries",
    "list_firings",
    "recent_answer_ids",
    "recent_verdicts",
    "record_delivery",
    "window_counts",
]
