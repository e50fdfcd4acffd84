"""The dashboard's only Streamlit-aware data layer: one cached engine, cached SQL queries.

Pages never touch the database or the models directly: they call the functions here, which
run the aggregations of :mod:`core.storage.repo` in SQL and return plain, picklable data
(dicts, lists, tuples). Reads are cached with ``st.cache_data`` (short ttl, bounded entries)
keyed by the database URL and the filter values; writes clear the caches they affect. The
engine and the models are ``st.cache_resource``: loaded once per process.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, TypeVar

import streamlit as st

from core.auth import ANONYMOUS, Action, User, actor_for, can
from core.config import ENV_PREFIX, Settings, load_settings
from core.records import EARLIEST, LATEST
from core.storage import logins, repo
from core.storage import thresholds as thresholds_store
from core.storage.db import get_engine, read_session, upgrade_to_head, write_session
from core.storage.models import Conversation
from core.storage.public import ContradictionPublic, ReviewPublic, StatementBase
from core.text import short_hash

log = logging.getLogger(__name__)

TTL = 60
SCORE_KEYS = ("grounding", "consistency", "confidence", "risk", "quality")


@dataclass(frozen=True, slots=True)
class FilterState:
    """The shared sidebar filters: inclusive date range, models, patients (empty = all)."""

    start: date | None = None
    end: date | None = None
    models: tuple[str, ...] = ()
    patients: tuple[str, ...] = ()

    def key(self) -> tuple[Any, ...]:
        """Hashable cache key."""
        return (self.start, self.end, self.models, self.patients)

    def previous(self) -> FilterState | None:
        """The period of the same length just before this one (for KPI deltas)."""
        if self.start is None or self.end is None:
            return None
        days = (self.end - self.start).days + 1
        try:
            return FilterState(
                self.start - timedelta(days=days),
                self.start - timedelta(days=1),
                self.models,
                self.patients,
            )
        except OverflowError:  # a range reaching the first representable day
            return None


def to_filters(key: tuple[Any, ...]) -> repo.Filters:
    """Repository filters from a :meth:`FilterState.key` (end day inclusive -> exclusive)."""
    start, end, models, patients = key
    return repo.Filters(
        start=datetime.combine(start, time(), tzinfo=UTC) if start else None,
        end=datetime.combine(end + timedelta(days=1), time(), tzinfo=UTC)
        if end and end < date.max
        else None,
        models=tuple(models),
        patient_ids=tuple(patients),
    )


# --------------------------------------------------------------------------- resources


def settings() -> Settings:
    """Current settings, as the environment holds them now.

    Built again only when a ``GROUNDWATCH_*`` variable changed: building them takes 1-2 ms
    and a page run asks for them 20-30 times (every cached query reads the database URL).
    """
    return _settings_for(
        tuple(sorted((k, v) for k, v in os.environ.items() if k.upper().startswith(ENV_PREFIX)))
    )


@functools.lru_cache(maxsize=4)
def _settings_for(env: tuple[tuple[str, str], ...]) -> Settings:
    """The settings of one environment (``env``: its variables, the cache key)."""
    return load_settings()


def database_url() -> str:
    """The configured database URL."""
    return settings().database_url


@st.cache_resource(show_spinner=False)
def _engine(url: str) -> Any:
    upgrade_to_head(url)
    return get_engine(url)


def engine() -> Any:
    """The one engine of this process for the configured database (migrated once)."""
    return _engine(database_url())


@st.cache_resource(show_spinner="Loading the embedding model…")
def embedder(model_path: str | None) -> Any:
    """The MiniLM embedder, loaded once per process; None when it cannot be loaded."""
    from core.backends.embedder import EmbeddingUnavailableError, get_embedder

    try:
        return get_embedder(model_path)
    except EmbeddingUnavailableError as exc:
        log.warning("embedding model unavailable: %s", type(exc).__name__)
        return None


@st.cache_resource(show_spinner=False)
def grounding_verifier(use_embedder: bool, threshold: float) -> Any:
    """A grounding verifier (semantic tier only with the embedder), built once."""
    from core.backends import load_learned
    from core.grounding import GroundingVerifier

    emb = embedder(settings().embedding_model) if use_embedder else None
    learned, _ = load_learned(settings())  # unavailable: the result's checks say so
    return GroundingVerifier(embedder=emb, learned=learned, grounding_threshold=threshold)


@st.cache_resource(show_spinner="Loading the checks…")
def _pipeline(url: str) -> Any:
    from core.pipeline import QualityPipeline

    return QualityPipeline(settings=load_settings(database_url=url), engine=_engine(url))


def pipeline() -> Any:
    """The quality pipeline of this process (models loaded once)."""
    return _pipeline(database_url())


# --------------------------------------------------------------------------- sidebar


@st.cache_data(ttl=TTL, max_entries=16, show_spinner=False)
def _bounds(url: str) -> tuple[date | None, date | None]:
    with read_session(_engine(url)) as s:
        lo, hi = repo.date_bounds(session=s)
    # records are dated within [EARLIEST, LATEST) since the input boundary says so; a row stored
    # before that (year 1, 9999) must not stretch the pickers to where date arithmetic overflows
    first, last = EARLIEST.date(), (LATEST - timedelta(days=1)).date()
    return (
        min(max(lo.date(), first), last) if lo else None,
        min(max(hi.date(), first), last) if hi else None,
    )


def date_bounds() -> tuple[date | None, date | None]:
    """First and last day with stored answers."""
    return _bounds(database_url())


@st.cache_data(ttl=TTL, max_entries=16, show_spinner=False)
def _models(url: str) -> list[str]:
    with read_session(_engine(url)) as s:
        return repo.list_models(session=s)


def models() -> list[str]:
    """Models that produced stored answers."""
    return _models(database_url())


@st.cache_data(ttl=TTL, max_entries=16, show_spinner=False)
def _patients(url: str) -> list[str]:
    with read_session(_engine(url)) as s:
        return repo.list_patients(session=s)


def patients() -> list[str]:
    """All patient ids."""
    return _patients(database_url())


# --------------------------------------------------------------------------- overview


def _trend_row(p: repo.TrendPoint) -> dict[str, Any]:
    """A trend point's fields (a model's point: with its ``model``) and its flagged share."""
    return {**asdict(p), "flagged_share": p.flagged_share}


@st.cache_data(ttl=TTL, max_entries=64, show_spinner=False)
def _trend(url: str, key: tuple[Any, ...], granularity: str) -> list[dict[str, Any]]:
    with read_session(_engine(url)) as s:
        points = repo.quality_trend(
            session=s,
            filters=to_filters(key),
            granularity="week" if granularity == "week" else "day",
        )
    return [_trend_row(p) for p in points]


def trend(f: FilterState, granularity: str) -> list[dict[str, Any]]:
    """Scores, volume and flagged share per day or week (aggregated in SQL)."""
    return _trend(database_url(), f.key(), granularity)


@st.cache_data(ttl=TTL, max_entries=64, show_spinner=False)
def _kpis(url: str, key: tuple[Any, ...]) -> dict[str, Any]:
    with read_session(_engine(url)) as s:
        k = repo.kpis(session=s, filters=to_filters(key))
    return {**asdict(k), "flagged_share": k.flagged_share}


def kpis(f: FilterState) -> dict[str, Any]:
    """Headline numbers over the filters."""
    return _kpis(database_url(), f.key())


# --------------------------------------------------------------------------- review queue

A = TypeVar("A")
B = TypeVar("B")


def in_parallel(first: Callable[[], A], second: Callable[[], B]) -> tuple[A, B]:
    """Two reads at once: ``second`` in a thread of its own (with this script run's context,
    so that its cache and its session state are this run's), ``first`` here. Two queries that
    each scan the same rows take the time of the longer, not of both, on a server with two
    cores. The first error of either is raised."""
    from streamlit.runtime.scriptrunner import add_script_run_ctx, get_script_run_ctx

    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = second()
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc

    thread = threading.Thread(target=run, name="groundwatch-read", daemon=True)
    ctx = get_script_run_ctx(suppress_warning=True)
    if ctx is not None:
        add_script_run_ctx(thread, ctx)
    thread.start()
    try:
        a = first()
    finally:
        thread.join()
    if "error" in box:
        raise box["error"]
    return a, box["value"]


def _review_state(review_state: str) -> repo.ReviewState:
    return (
        "unreviewed"
        if review_state == "unreviewed"
        else "reviewed"
        if review_state == "reviewed"
        else "all"
    )


@st.cache_data(ttl=TTL, max_entries=64, show_spinner=False)
def _flagged(
    url: str,
    key: tuple[Any, ...],
    statuses: tuple[str, ...],
    review_state: str,
    offset: int,
    limit: int,
    kinds: tuple[str, ...] = (),
    severities: tuple[str, ...] = (),
    order: str = "risk",
) -> tuple[list[dict[str, Any]], int]:
    with read_session(_engine(url)) as s:
        rows, total = repo.flagged_statements(
            session=s,
            filters=to_filters(key),
            statuses=statuses,
            review_state=_review_state(review_state),
            offset=offset,
            limit=limit,
            kinds=kinds,
            severities=severities,
            order="severity" if order == "severity" else "risk",
        )
    return [asdict(r) for r in rows], total


def flagged(
    f: FilterState,
    *,
    statuses: tuple[str, ...] = ("unsupported", "contradicted"),
    review_state: str = "unreviewed",
    offset: int = 0,
    limit: int = 25,
    kinds: tuple[str, ...] = (),
    severities: tuple[str, ...] = (),
    order: str = "risk",
) -> tuple[list[dict[str, Any]], int]:
    """One page of flagged statements, riskiest first (``order="severity"``: most severe
    first, then riskiest), and the total count; ``kinds``/``severities`` narrow it."""
    return _flagged(
        database_url(),
        f.key(),
        tuple(statuses),
        review_state,
        offset,
        limit,
        tuple(kinds),
        tuple(severities),
        order,
    )


@st.cache_data(ttl=TTL, max_entries=64, show_spinner=False)
def _queue_facets(
    url: str,
    key: tuple[Any, ...],
    statuses: tuple[str, ...],
    review_state: str,
    kinds: tuple[str, ...],
    severities: tuple[str, ...],
    patients: bool,
) -> dict[str, dict[str, int]]:
    with read_session(_engine(url)) as s:
        return repo.queue_facets(
            session=s,
            filters=to_filters(key),
            statuses=statuses,
            review_state=_review_state(review_state),
            kinds=kinds,
            severities=severities,
            patients=patients,
        )


def queue_facets(
    f: FilterState,
    *,
    statuses: tuple[str, ...],
    review_state: str,
    kinds: tuple[str, ...] = (),
    severities: tuple[str, ...] = (),
    patients: bool = False,
) -> dict[str, dict[str, int]]:
    """Items left per kind, severity, model and (``patients``) patient: each counted under
    every other filter but its own (counted in SQL)."""
    return _queue_facets(
        database_url(),
        f.key(),
        tuple(statuses),
        review_state,
        tuple(kinds),
        tuple(severities),
        patients,
    )


def queue_rows(
    f: FilterState,
    *,
    statuses: tuple[str, ...] = ("unsupported", "contradicted"),
    review_state: str = "all",
    cap: int = 50_000,
    kinds: tuple[str, ...] = (),
    severities: tuple[str, ...] = (),
    order: str = "risk",
) -> list[dict[str, Any]]:
    """The whole queue under the filters (up to ``cap`` rows), for the CSV export."""
    out: list[dict[str, Any]] = []
    page = 2_000
    state = _review_state(review_state)
    with read_session(engine()) as s:
        while len(out) < cap:
            rows, _ = repo.flagged_statements(
                session=s,
                filters=to_filters(f.key()),
                statuses=statuses,
                review_state=state,
                offset=len(out),
                limit=min(page, cap - len(out)),
                kinds=kinds,
                severities=severities,
                order="severity" if order == "severity" else "risk",
            )
            out.extend(asdict(r) for r in rows)
            if len(rows) < page:
                break
    return out


def require(user: User | None, action: Action) -> None:
    """Refuse a write the user's role does not allow (checked where the write happens, not
    only where the button is drawn).

    Raises:
        PermissionError: naming the role and the action.
    """
    if not can(user, action):
        role = user.role if user is not None else "anonymous"
        raise PermissionError(f"your role ({role}) may not {action.replace('_', ' ')}")


def save_verdict(
    *, user: User | None, statement_check_id: int, reviewer: str, verdict: str, note: str
) -> int:
    """Store a verdict (with who and when) and an audit event; clear affected caches.

    The verdict carries ``reviewer``; the audit event carries ``core.auth.actor_for(user,
    reviewer)``: the logged-in user, or ``local-admin (reviewer)`` without a login.

    Raises:
        PermissionError: the user may not give verdicts. ValueError: empty reviewer or
        unknown verdict. LookupError: unknown statement.
    """
    require(user, "give_verdict")
    if verdict not in repo.VERDICTS:
        raise ValueError(f"verdict must be one of {', '.join(repo.VERDICTS)}")
    with write_session(engine()) as s:
        review = repo.create_review(
            session=s,
            statement_check_id=statement_check_id,
            reviewer=reviewer,
            verdict=verdict,
            note=note.strip() or None,
        )
        repo.record_audit(
            session=s,
            actor=actor_for(user, reviewer),
            action="review",
            target_type="statement_check",
            target_id=str(statement_check_id),
            detail={"verdict": verdict, "note_chars": len(note.strip())},
        )
        review_id = int(review.id or 0)
    for fn in (_flagged, _queue_facets, _reviewed, _reviews_export, _conversation):
        fn.clear()
    log.info("verdict stored statement=%d verdict=%s", statement_check_id, verdict)
    return review_id


def undo_verdict(*, user: User | None, review_id: int, reviewer: str) -> None:
    """Take back a verdict this reviewer gave (the queue's undo), audited as ``undo_review``.

    Raises:
        PermissionError: the user may not give verdicts. LookupError: no such verdict by
        this reviewer.
    """
    require(user, "give_verdict")
    with write_session(engine()) as s:
        review = repo.delete_review(session=s, review_id=review_id, reviewer=reviewer)
        repo.record_audit(
            session=s,
            actor=actor_for(user, reviewer),
            action="undo_review",
            target_type="statement_check",
            target_id=str(review.statement_check_id),
            detail={"review_id": review_id, "verdict": review.verdict},
        )
    for fn in (_flagged, _queue_facets, _reviewed, _reviews_export, _conversation):
        fn.clear()
    log.info("verdict %d taken back", review_id)


# Failed logins: MAX_LOGIN_FAILURES wrong passwords in a row lock the account for a minute,
# doubling per further lock up to an hour (core.storage.logins). The count and the lock are in
# the database, so a new browser session, a reload, a restart or a second server process
# changes nothing.
MAX_LOGIN_FAILURES = logins.MAX_LOGIN_FAILURES


def login_wait(key: str, *, now: datetime | None = None) -> float:
    """Seconds before the next login attempt for ``key`` (a hash of the typed user name) may
    be checked; 0 when it may be checked now."""
    with read_session(engine()) as s:
        return logins.login_state(session=s, login_key=key, now=now).wait_s


def login_failed(key: str, actor: str) -> float:
    """Count a wrong password for ``key`` (audited); the seconds the account is now locked
    for (0 while it is not)."""
    with write_session(engine()) as s:
        return logins.record_login_failure(session=s, login_key=key, actor=actor).wait_s


def login_succeeded(key: str) -> None:
    """A right password for ``key``: its failures and lock growth start again."""
    with write_session(engine()) as s:
        logins.record_login_success(session=s, login_key=key)


def audit_events(action: str | None, limit: int) -> list[dict[str, Any]]:
    """The newest ``limit`` audit events (of one ``action``, or all), newest first (not cached:
    the admin reads the trail as it is now)."""
    with read_session(engine()) as s:
        return [
            {
                "at": e.at.isoformat(),
                "actor": e.actor,
                "action": e.action,
                "target_type": e.target_type,
                "target_id": e.target_id,
                "detail": e.detail,
            }
            for e in repo.list_audit_events(session=s, action=action, limit=limit)
        ]


def audit(*, action: str, target_type: str, target_id: str, actor: str) -> None:
    """Append an audit event (ids only, never patient text) naming ``actor``: the session's
    :func:`dashboard.auth.actor` read during the script run (the logged-in user, or the
    local user with the typed reviewer name), or for a login event the account tried. The
    data layer reads no session: who acts is always said by the caller.
    """
    who = actor.strip() or ANONYMOUS
    with write_session(engine()) as s:
        repo.record_audit(
            session=s,
            actor=who,
            action=action,
            target_type=target_type,
            target_id=target_id,
        )


@st.cache_data(ttl=TTL, max_entries=8, show_spinner=False)
def _reviews_export(url: str) -> list[dict[str, Any]]:
    with read_session(_engine(url)) as s:
        return [
            {**ReviewPublic.model_validate(r).model_dump(mode="json"), "note": r.note}
            for r in repo.list_reviews(session=s)
        ]


def reviews_export() -> list[dict[str, Any]]:
    """All verdicts, newest first (for CSV export)."""
    return _reviews_export(database_url())


# --------------------------------------------------------------------------- query report


def _status_dict(value: Any) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name, v in (value or {}).items():
        if isinstance(v, dict):
            out[name] = {"status": v.get("status"), "reason": v.get("reason")}
        else:
            text = str(v)
            status, _, reason = text.partition(" (")
            out[name] = {"status": status, "reason": reason.rstrip(")") or None}
    return out


@st.cache_data(ttl=TTL, max_entries=128, show_spinner=False)
def _conversation(url: str, conversation_id: str) -> dict[str, Any] | None:
    with read_session(_engine(url)) as s:
        d = repo.get_conversation(session=s, conversation_id=conversation_id)
        if d is None:
            return None
        c = d.conversation
        reviews_by_statement: dict[int, dict[str, Any]] = {}
        for r in d.reviews:
            if r.statement_check_id is not None:
                reviews_by_statement[int(r.statement_check_id)] = {
                    "verdict": r.verdict,
                    "reviewer": r.reviewer,
                    "at": r.created_at,
                }
        previous_ids = {
            x.previous_conversation_id for x in d.consistency if x.previous_conversation_id
        }
        previous: dict[str, dict[str, Any]] = {}
        for pid in previous_ids:
            prev = s.get(Conversation, pid)
            if prev is not None:
                previous[pid] = {"external_id": prev.external_id, "timestamp": prev.query_timestamp}
        return {
            "id": c.id,
            "external_id": c.external_id,
            "patient_id": c.patient_id,
            "timestamp": c.query_timestamp,
            "model": c.model_used,
            "query": c.query,
            "answer": c.answer,
            "sources": list(c.sources or []),
            "scores": {
                "grounding": c.grounding_score,
                "consistency": c.consistency_score,
                "confidence": c.confidence_score,
                "risk": c.hallucination_risk,
                "quality": c.overall_quality,
            },
            "risk_level": c.risk_level,
            "is_flagged": c.is_flagged,
            "warnings": list(c.warnings or []),
            "checks": _status_dict(c.check_status),
            "execution_time_ms": c.execution_time_ms,
            "text_purged": c.text_purged_at is not None,
            "statements": [
                {
                    "id": int(x.id or 0),
                    **StatementBase.model_validate(x).model_dump(),
                    "risk": x.risk,
                    "reason": x.reason,
                    "review": reviews_by_statement.get(int(x.id or 0)),
                }
                for x in d.statements
            ],
            "contradictions": [
                {
                    **ContradictionPublic.model_validate(x).model_dump(),
                    "previous": previous.get(x.previous_conversation_id or ""),
                }
                for x in d.consistency
                if not x.is_consistent
            ],
            "confidence": [
                {
                    "index": x.extraction_index,
                    "retrieval": x.retrieval_confidence,
                    "source": x.source_confidence,
                    "extraction": x.extraction_confidence,
                    "consistency": x.consistency_confidence,
                    "aggregate": x.aggregate_confidence,
                    "uncertainty": x.uncertainty_level,
                    "explanation": x.uncertainty_explanation,
                }
                for x in d.confidence
            ],
            "evidence": [
                {
                    "mode": x.mode,
                    "status": x.status,
                    "extracted": x.extracted_count,
                    "validated": x.validated_count,
                    "rejected": x.rejected_count,
                    "rejected_by_domain": x.rejected_by_domain,
                    "failure_category": x.failure_category,
                }
                for x in d.evidence
            ],
            "selfcheck": [
                {
                    "method": x.method,
                    "status": x.status,
                    "reason": x.reason,
                    "samples": x.sample_count,
                    "sentences": _sentences(x.sentence_scores),
                    "passage_score": x.passage_score,
                    "risk_score": x.risk_score,
                    "risk_level": x.risk_level,
                }
                for x in d.selfcheck
            ],
            "claims": [
                {
                    "claim_id": x.claim_id,
                    "claim": x.claim_text,
                    "evidence_ids": x.evidence_ids,
                    "evidence_support": x.evidence_support,
                    "evidence_dependence": x.evidence_dependence,
                    "consistency": x.consistency_score,
                    "confidence_justified": x.confidence_justified,
                    "gap_bits": x.evidence_gap_bits,
                    "flagged": x.is_flagged,
                    "flag_reason": x.flag_reason,
                    "gap_type": x.gap_type,
                }
                for x in d.claims
            ],
        }


def _sentences(value: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, item in enumerate(value or []):
        if isinstance(item, dict):
            out.append(
                {
                    "index": item.get("index", i),
                    "text": item.get("text"),
                    "score": item.get("score"),
                    "rank": item.get("rank"),
                }
            )
        elif isinstance(item, int | float):
            out.append({"index": i, "text": None, "score": float(item)})
    return out


def conversation(conversation_id: str) -> dict[str, Any] | None:
    """One conversation with every check (by id or external id), or None."""
    return _conversation(database_url(), conversation_id)


@st.cache_data(ttl=TTL, max_entries=64, show_spinner=False)
def _recent(url: str, key: tuple[Any, ...], limit: int) -> list[dict[str, Any]]:
    with read_session(_engine(url)) as s:
        rows = repo.recent_conversations(session=s, filters=to_filters(key), limit=limit)
        return [
            {
                "id": c.id,
                "external_id": c.external_id,
                "patient_id": c.patient_id,
                "timestamp": c.query_timestamp,
                "model": c.model_used,
                "risk": c.hallucination_risk,
                "flagged": c.is_flagged,
            }
            for c in rows
        ]


def recent(f: FilterState, limit: int = 200) -> list[dict[str, Any]]:
    """Newest conversations matching the filters (for the report picker)."""
    return _recent(database_url(), f.key(), limit)


# --------------------------------------------------------------------------- calibration


@st.cache_data(ttl=TTL, max_entries=64, show_spinner=False)
def _reviewed(url: str, key: tuple[Any, ...]) -> list[dict[str, Any]]:
    with read_session(_engine(url)) as s:
        return [asdict(r) for r in repo.reviewed_statements(session=s, filters=to_filters(key))]


def reviewed(f: FilterState) -> list[dict[str, Any]]:
    """Latest verdict per reviewed statement, with the detector's scores."""
    return _reviewed(database_url(), f.key())


@st.cache_data(ttl=TTL, max_entries=64, show_spinner=False)
def _risk_histogram(url: str, key: tuple[Any, ...], bins: int) -> list[int]:
    with read_session(_engine(url)) as s:
        return repo.statement_risk_histogram(session=s, filters=to_filters(key), bins=bins)


def risk_histogram(f: FilterState, bins: int = 20) -> list[int]:
    """Counts of all statements per risk bin (for flag rates at any threshold)."""
    return _risk_histogram(database_url(), f.key(), bins)


# --------------------------------------------------------------------------- patients


@st.cache_data(ttl=TTL, max_entries=64, show_spinner=False)
def _patient(url: str, patient_id: str, key: tuple[Any, ...]) -> dict[str, Any]:
    # the answers within the filters, selected in SQL (the patient filter is this patient)
    f = to_filters(key)
    with read_session(_engine(url)) as s:
        history = repo.patient_answers(
            session=s, patient_id=patient_id, filters=repo.Filters(f.start, f.end, f.models)
        )
        contradictions = repo.patient_contradictions(session=s, patient_id=patient_id)
        mentions = repo.entity_timeline(session=s, patient_id=patient_id)
    per_conv = Counter(c.current_conversation_id for c in contradictions)
    contradicted = {(c.current_conversation_id, (c.entity or "").lower()) for c in contradictions}
    answers = [{**asdict(a), "contradictions": per_conv.get(a.id, 0)} for a in history]
    ids = {a["id"] for a in answers}
    return {
        "answers": answers,
        "mentions": [
            {
                "at": e.at,
                "kind": e.kind,
                "name": e.name,
                "assertion": e.assertion,
                "action": e.action,
                "dose": e.dose,
                "frequency": e.frequency,
                "conversation_id": e.conversation_id,
                "contradicted": (e.conversation_id, e.name.lower()) in contradicted,
            }
            for e in mentions
            if e.kind in ("medication", "condition", "allergy") and e.conversation_id in ids
        ],
        "contradictions": [
            {
                "at": c.checked_at,
                "conversation_id": c.current_conversation_id,
                **ContradictionPublic.model_validate(c).model_dump(),
            }
            for c in contradictions
            if c.current_conversation_id in ids
        ],
    }


def patient(patient_id: str, f: FilterState) -> dict[str, Any]:
    """One patient's answers, entity timeline and contradictions within the filters."""
    return _patient(database_url(), patient_id, f.key())


def log_safe(text: str | None) -> str:
    """How record text may appear in a log line: its length and short hash only."""
    return f"len={len(text or '')} sha={short_hash(text or '')}"


SCORE_THRESHOLDS_KEYS = {
    "grounding": "grounding_score_threshold",
    "consistency": "consistency_score_threshold",
    "confidence": "confidence_score_threshold",
    "risk": "hallucination_risk_threshold",
}


def thresholds() -> dict[str, float]:
    """The four score thresholds from the settings."""
    s = settings()
    return {k: float(getattr(s, v)) for k, v in SCORE_THRESHOLDS_KEYS.items()}


LOWEST_REVIEW_THRESHOLD = thresholds_store.LOWEST_REVIEW_THRESHOLD


def review_threshold() -> tuple[float | None, list[dict[str, Any]]]:
    """The review threshold in force (None: every statement that is not grounded is
    flagged) and its latest applications, newest first."""
    with read_session(engine()) as s:
        value = thresholds_store.review_threshold(session=s)
        history = thresholds_store.review_threshold_history(session=s, limit=10)
    return value, [asdict(h) for h in history]


def apply_review_threshold(
    value: float | None, reason: str, *, user: User | None, actor: str
) -> None:
    """Put a review threshold in force (None: back to the default), recorded with the
    user's name and reason and audited; from then on a statement below it flags neither its
    answer nor the review queue.

    ``actor`` is the name the change and its audit event carry (:func:`dashboard.auth.actor`).

    Raises:
        PermissionError: the user may not apply thresholds.
        ValueError: the value is out of range (the message says the range).
    """
    if not can(user, "apply_threshold"):
        raise PermissionError("only an admin applies a review threshold")
    with write_session(engine()) as s:
        change = thresholds_store.apply_review_threshold(
            session=s, value=value, actor=actor, reason=reason
        )
        repo.record_audit(
            session=s,
            actor=actor,
            action="apply_threshold",
            target_type="setting",
            target_id=thresholds_store.REVIEW_THRESHOLD,
            detail={"value": change.value, "previous": change.previous},
        )
    clear_all()


def clear_all() -> None:
    """Forget every cached query (after a write that changes aggregates)."""
    st.cache_data.clear()


# --------------------------------------------------------------------------- upload


@st.cache_data(ttl=600, max_entries=16, show_spinner=False)
def ground_evidence(
    transcript: str, evidence: dict[str, list[str]], mode: str, threshold: float
) -> dict[str, Any]:
    """Spec 053 quote grounding of uploaded evidence in an uploaded transcript."""
    from core.evidence import EvidenceGrounder

    grounder = EvidenceGrounder(
        mode="fuzzy" if mode == "fuzzy" else "substring", threshold=threshold
    )
    return grounder.check(evidence, transcript).to_dict()


@st.cache_data(ttl=600, max_entries=16, show_spinner="Grounding the answer…")
def ground_answer(answer: str, transcript: str, use_embedder: bool) -> dict[str, Any]:
    """Answer grounding of an uploaded answer against the uploaded transcript.

    Raises:
        ValueError: the answer holds no statement.
    """
    from core.grounding import SourceChunk

    verifier = grounding_verifier(use_embedder, thresholds()["grounding"])
    source = SourceChunk(id="transcript", text=transcript, type="transcript")
    return verifier.verify(answer, [source]).to_dict()


def save_upload(
    *,
    record_id: str,
    patient_id: str,
    model: str,
    query: str,
    answer: str,
    transcript: str,
    evidence: dict[str, list[str]] | None,
    user: User | None,
    actor: str,
) -> dict[str, Any]:
    """Run the uploaded answer through the pipeline and store it as a conversation.

    The audit event names ``actor`` (the session's :func:`dashboard.auth.actor`). The stored
    answer is dated now (UTC); all caches are cleared, so the sidebar's bounds and the review
    queue include it on the next run.

    Storing takes the ``store_record`` permission; a record id that is stored already with
    other content is replaced only for a user with ``replace_record`` (an admin), and the
    replacement is audited as such.

    Raises:
        PermissionError: the user may not store, or not replace, this record.
        ValueError: a field is invalid (message names the field).
    """
    from core.records import parse_record

    require(user, "store_record")
    s = settings()
    record = parse_record(
        {
            "id": record_id,
            "patient_id": patient_id,
            "timestamp": datetime.now(UTC).isoformat(),
            "query": query,
            "answer": answer,
            "sources": [{"id": "transcript", "text": transcript, "type": "transcript"}],
            "model": model or "unknown",
            "evidence": evidence,
        },
        max_text_chars=s.max_transcript_chars,
    )
    replace = can(user, "replace_record")
    try:
        report = pipeline().process(record, replace=replace)
    except repo.RecordExistsError:
        raise PermissionError(
            f"record id {record_id!r} is stored already; only an admin may replace a stored "
            "record: choose another id"
        ) from None
    audit(
        actor=actor,
        action="replace" if report.store_status == "updated" else "upload",
        target_type="conversation",
        target_id=report.conversation_id,
    )
    clear_all()
    log.info("upload stored as conversation %s (%s)", report.conversation_id, log_safe(answer))
    return {
        "conversation_id": report.conversation_id,
        "store_status": report.store_status,
        "is_flagged": report.is_flagged,
    }


# --------------------------------------------------------------------------- analyst views


@st.cache_data(ttl=TTL, max_entries=64, show_spinner=False)
def _trend_by_model(url: str, key: tuple[Any, ...], granularity: str) -> list[dict[str, Any]]:
    with read_session(_engine(url)) as s:
        points = repo.quality_trend_by_model(
            session=s,
            filters=to_filters(key),
            granularity="week" if granularity == "week" else "day",
        )
    return [_trend_row(p) for p in points]


def trend_by_model(f: FilterState, granularity: str) -> list[dict[str, Any]]:
    """:func:`trend` split by model: one row per model and period (aggregated in SQL)."""
    return _trend_by_model(database_url(), f.key(), granularity)


def _model_row(x: dict[str, Any] | None) -> dict[str, Any]:
    """Shares, means and 95 % intervals of one model (Wilson for the share, t for means)."""
    from core.stats import mean_interval, wilson_interval

    if x is None:
        return {"conversations": 0, "flagged": 0, "flagged_share": None}
    out: dict[str, Any] = {
        "conversations": x["conversations"],
        "flagged": x["flagged"],
        "flagged_share": x["flagged"] / x["conversations"] if x["conversations"] else None,
        "flagged_share_ci": wilson_interval(x["flagged"], x["conversations"]),
    }
    for name in ("grounding", "consistency"):
        n, total, squares = x[f"n_{name}"], x[f"sum_{name}"], x[f"sumsq_{name}"]
        out[name] = total / n if n else None
        out[f"{name}_n"] = n
        ci = mean_interval(n, total, squares)
        # scores lie in [0, 1]: so does every mean, and the interval is cut there
        out[f"{name}_ci"] = (max(0.0, ci[0]), min(1.0, ci[1])) if ci else None
    return out


@st.cache_data(ttl=TTL, max_entries=64, show_spinner=False)
def _model_stats(url: str, key: tuple[Any, ...]) -> dict[str, dict[str, Any]]:
    with read_session(_engine(url)) as s:
        return {x.model: asdict(x) for x in repo.model_stats(session=s, filters=to_filters(key))}


def _model_means(x: dict[str, Any] | None) -> dict[str, Any]:
    """A model's volume, share flagged and means over a period (no intervals)."""
    if x is None:
        return {"conversations": 0, "flagged_share": None}
    n = x["conversations"]
    out: dict[str, Any] = {"conversations": n, "flagged_share": x["flagged"] / n if n else None}
    for name in ("grounding", "consistency"):
        out[name] = x[f"sum_{name}"] / x[f"n_{name}"] if x[f"n_{name}"] else None
    return out


def model_summary(f: FilterState) -> list[dict[str, Any]]:
    """One row per model: volume, share flagged, mean grounding and consistency with their
    95 % intervals, and the change against the period of the same length just before
    (``None`` where either period has no value). Models of either period are listed.

    Both periods are read from the daily rollup, which keeps the sums of squares the
    intervals need (migration 0013): a few hundred rows whatever the period's length."""
    now = _model_stats(database_url(), f.key())
    prev_f = f.previous()
    before = _model_stats(database_url(), prev_f.key()) if prev_f is not None else {}
    rows = []
    for model in sorted(set(now) | set(before)):
        cur, old = _model_row(now.get(model)), _model_means(before.get(model))
        row = {"model": model, **cur}
        row["conversations_change"] = cur["conversations"] - old["conversations"]
        for name in ("flagged_share", "grounding", "consistency"):
            a, b = cur.get(name), old.get(name)
            row[f"{name}_change"] = None if a is None or b is None else a - b
        rows.append(row)
    return rows


@st.cache_data(ttl=TTL, max_entries=64, show_spinner=False)
def _answers_at(url: str, key: tuple[Any, ...], limit: int) -> list[dict[str, Any]]:
    with read_session(_engine(url)) as s:
        rows = repo.recent_conversations(session=s, filters=to_filters(key), limit=limit)
        # ids, times and scores only: no patient id, no record text (analysts read this)
        return [
            {
                "id": c.id,
                "external_id": c.external_id,
                "timestamp": c.query_timestamp,
                "model": c.model_used,
                "grounding": c.grounding_score,
                "consistency": c.consistency_score,
                "confidence": c.confidence_score,
                "risk": c.hallucination_risk,
                "flagged": c.is_flagged,
            }
            for c in rows
        ]


def answers_at(
    f: FilterState,
    period: date,
    *,
    granularity: str = "day",
    model: str | None = None,
    limit: int = 200,
) -> list[dict[str, Any]]:
    """The answers behind one chart point: those of ``period`` (a day, or the week starting
    that day) within the filters, of ``model`` when given, newest first, up to ``limit``.

    Rows carry ids, times, the model and the scores: never a patient id or record text.
    """
    last = period + timedelta(days=6 if granularity == "week" else 0)
    start = max(period, f.start) if f.start else period
    end = min(last, f.end) if f.end else last
    if end < start or (model is not None and f.models and model not in f.models):
        return []
    models = (model,) if model is not None else f.models
    sub = FilterState(start, end, models, f.patients)
    return _answers_at(database_url(), sub.key(), limit)


# --------------------------------------------------------------------------- alerts


def _alert_row(f: Any) -> dict[str, Any]:
    return {
        "id": int(f.id or 0),
        "rule": f.rule,
        "kind": f.kind,
        "condition": f.condition_key,
        "state": f.state,
        "model": f.model,
        "patient_id": f.patient_id,
        "value": f.value,
        "threshold": f.threshold,
        "counts": dict(f.counts or {}),
        "conversation_ids": list(f.conversation_ids or []),
        "occurrences": f.occurrences,
        "first_at": f.first_at,
        "last_at": f.last_at,
        "acknowledged_by": f.acknowledged_by,
        "acknowledged_at": f.acknowledged_at,
        "resolved_by": f.resolved_by,
        "resolved_at": f.resolved_at,
    }


@st.cache_data(ttl=10, max_entries=16, show_spinner=False)
def _alerts(url: str, states: tuple[str, ...], limit: int) -> list[dict[str, Any]]:
    from core.storage import alerts as alert_store

    with read_session(_engine(url)) as s:
        rows = alert_store.list_firings(session=s, states=states, limit=limit)  # type: ignore[arg-type]
        return [_alert_row(f) for f in rows]


def alerts(states: tuple[str, ...], limit: int = 200) -> list[dict[str, Any]]:
    """Alerts in ``states``, open first, then acknowledged, then resolved; the most recent
    first within each. Ids, counts and scores only."""
    return _alerts(database_url(), states, limit)


@st.cache_data(ttl=10, max_entries=4, show_spinner=False)
def _alert_counts(url: str) -> dict[str, int]:
    from core.storage import alerts as alert_store

    with read_session(_engine(url)) as s:
        return alert_store.count_firings(session=s)


def alert_counts() -> dict[str, int]:
    """How many alerts are open, acknowledged and resolved."""
    return _alert_counts(database_url())


def alert(alert_id: int) -> dict[str, Any] | None:
    """One alert by id (not cached: opened from a link, it shows its state now)."""
    from core.storage import alerts as alert_store

    with read_session(engine()) as s:
        found = alert_store.get_firing(session=s, firing_id=alert_id)
        return _alert_row(found) if found is not None else None


def alert_answers(conversation_ids: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """The answers behind an alert, by conversation id: record id, time and model (no text)."""
    from core.storage import alerts as alert_store

    with read_session(engine()) as s:
        facts = alert_store.answer_facts(session=s, conversation_ids=conversation_ids)
    return {
        a.conversation_id: {
            "external_id": a.external_id,
            "timestamp": a.timestamp,
            "model": a.model,
        }
        for a in facts
    }


def alert_deliveries(alert_id: int) -> list[dict[str, Any]]:
    """An alert's webhook delivery attempts, newest first (not cached: they arrive in the
    background)."""
    from core.storage import alerts as alert_store

    with read_session(engine()) as s:
        return [
            {
                "at": d.at,
                "webhook": d.webhook,
                "attempt": d.attempt,
                "outcome": d.outcome,
                "status_code": d.status_code,
                "error": d.error_class,
                "duration_ms": d.duration_ms,
            }
            for d in alert_store.list_deliveries(session=s, firing_id=alert_id)
        ]


def change_alert(*, user: User | None, actor: str, alert_id: int, state: str) -> None:
    """Acknowledge or resolve an alert, with who (``actor``) and when, audited.

    Raises:
        PermissionError: the user may not act on flagged answers (reviewers and admins may).
        ValueError: the alert does not exist or its state does not allow the change.
    """
    from core.storage import alerts as alert_store

    require(user, "give_verdict")
    if state not in ("acknowledged", "resolved"):
        raise ValueError("an alert can be acknowledged or resolved")
    with write_session(engine()) as s:
        alert_store.change_state(
            session=s,
            firing_id=alert_id,
            state=state,  # type: ignore[arg-type]
            actor=actor,
        )
    for fn in (_alerts, _alert_counts):
        fn.clear()
    log.info("alert %d %s", alert_id, state)


# --------------------------------------------------------------------------- ingestion queue


def queue_status() -> dict[str, Any] | None:
    """The ingestion queue as it is now (not cached): jobs by state and the dead-letter jobs,
    newest first, without record text; None on SQLite, which has no queue."""
    from core.storage import jobs as job_store

    eng = engine()
    if eng.dialect.name != "postgresql":
        return None
    with read_session(eng) as s:
        depth = job_store.queue_depth(session=s)
        dead = job_store.job_views(session=s, state="failed", limit=500)
    return {"depth": depth, "dead": [j.to_dict() for j in dead]}


def retry_job(*, user: User | None, actor: str, job_id: int) -> None:
    """Give a dead-letter job one more try (admins only), audited as ``actor``.

    Raises:
        PermissionError: the user is not an admin.
        ValueError: no such job, or it is not in the dead-letter state.
    """
    from core.queue import JobNotRetryable, retry

    require(user, "replace_record")
    try:
        retry(engine=engine(), ingest_id=job_id)
    except (LookupError, JobNotRetryable) as exc:
        raise ValueError(str(exc)) from None
    audit(action="job_retry", target_type="ingest_job", target_id=str(job_id), actor=actor)
    log.info("job %d queued again from the admin page", job_id)


# --------------------------------------------------------------------------- re-scoring runs


def _run_row(r: Any) -> dict[str, Any]:
    return {
        "run": r.id,
        "status": r.status,
        "verifier": r.verifier_version,
        "settings": r.settings_hash,
        "source": r.source,
        "started": r.started_at,
        "finished": r.finished_at,
        "selected": r.selected,
        "checked": r.checked,
        "newly_flagged": r.newly_flagged,
        "cleared": r.cleared,
        "failed": r.failed,
    }


@st.cache_data(ttl=TTL, max_entries=16, show_spinner=False)
def _rescore_runs(url: str) -> list[dict[str, Any]]:
    from core.storage import rescore as rescore_store

    with read_session(_engine(url)) as s:
        return [_run_row(r) for r in rescore_store.list_runs(session=s)]


def rescore_runs() -> list[dict[str, Any]]:
    """Re-scoring runs (``groundwatch rescore``), newest first: version, when, counts."""
    return _rescore_runs(database_url())


@st.cache_data(ttl=TTL, max_entries=32, show_spinner=False)
def _rescore_report(url: str, run_id: str) -> dict[str, Any] | None:
    from core.rescore import RescoreError, stored_report

    try:
        return stored_report(engine=_engine(url), run_id=run_id).to_dict()
    except RescoreError:
        return None


def rescore_report(run_id: str) -> dict[str, Any] | None:
    """One run's report (counts by change, the largest changes by conversation id), or None."""
    return _rescore_report(database_url(), run_id)


@st.cache_data(ttl=TTL, max_entries=32, show_spinner=False)
def _rescore_compare(url: str, run_a: str, run_b: str) -> dict[str, Any]:
    from core.storage import rescore as rescore_store

    with read_session(_engine(url)) as s:
        return asdict(rescore_store.compare_runs(session=s, run_a=run_a, run_b=run_b))


def rescore_compare(run_a: str, run_b: str) -> dict[str, Any]:
    """Two runs' new flags over the answers both checked: counts and the largest changes."""
    return _rescore_compare(database_url(), run_a, run_b)
