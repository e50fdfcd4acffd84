"""Routes that read what is stored and take clinicians' verdicts: a patient's similar past
queries, the quality trend, the review queue and verdicts (``read_router``).

They reuse the queries of the dashboard (:mod:`core.storage.repo`: the day/week trend over
the rollup, the review queue with its sort, filters and severity, verdicts with their rules)
and the embedding model with its database cache. Every read of patient text is audited with
the key's name, as the dashboard audits its users; a verdict's reviewer is the key's name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from datetime import UTC, date, datetime, time
from typing import Any, Literal

import numpy as np
from fastapi import APIRouter, Depends, Path, Query
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.exc import SQLAlchemyError

from core.api.errors import ApiError
from core.api.keys import Caller, Scope
from core.api.runtime import Runtime
from core.backends import load_embedder
from core.records import EARLIEST, LATEST
from core.storage import repo, search
from core.storage.db import read_session, write_session
from core.storage.public import (
    QueueItemPublic,
    QueuePage,
    ReviewPublic,
    SimilarQueries,
    SimilarQuery,
    TrendPointPublic,
    Trends,
)

Auth = Callable[[Runtime, Scope | tuple[Scope, ...]], Callable[..., Caller]]

MAX_SIMILAR = 50
MAX_SIMILAR_SCAN = 1000  # a patient's newest queries compared with the new one
MAX_QUERY_CHARS = 4000
MAX_QUEUE_PAGE = 200
MAX_NOTE_CHARS = 2000

QueueStatus = Literal["unsupported", "contradicted"]
QueueState = Literal["unreviewed", "reviewed", "all"]
# core.severity's kinds and severities with "unclassified" (a unit test keeps them equal)
QueueKind = Literal[
    "number",
    "negation",
    "side",
    "drug",
    "condition",
    "allergy",
    "invented",
    "earlier_answer",
    "unclassified",
]
QueueSeverity = Literal["critical", "high", "medium", "low", "unclassified"]


class ReviewIn(BaseModel):
    """A clinician's verdict on a flagged statement (the reviewer is the API key's name)."""

    model_config = ConfigDict(extra="forbid")

    statement_check_id: int = Field(
        ge=1, description="The statement, as the review queue names it."
    )
    verdict: repo.Verdict = Field(
        description="confirmed (a hallucination), false_alarm, or unsure."
    )
    note: str | None = Field(default=None, max_length=MAX_NOTE_CHARS)


def _day(value: date | None, name: str) -> datetime | None:
    if value is None:
        return None
    at = datetime.combine(value, time(), tzinfo=UTC)
    if not EARLIEST <= at < LATEST:
        raise ApiError(
            422,
            "invalid_parameter",
            f"query parameter {name}: must lie between {EARLIEST.year} and {LATEST.year}",
        )
    return at


def _filters(
    *, since: date | None, until: date | None, model: str | None, patient_id: str | None
) -> repo.Filters:
    start, end = _day(since, "since"), _day(until, "until")
    if start is not None and end is not None and end <= start:
        raise ApiError(422, "invalid_parameter", "query parameter until: must be after since")
    return repo.Filters(
        start=start,
        end=end,
        models=(model,) if model else (),
        patient_ids=(patient_id,) if patient_id else (),
    )


def read_router(runtime: Runtime, *, auth: Auth) -> APIRouter:
    """The routes of this module, under ``/v1``, guarded by ``auth`` (the app's key check:
    401 without a valid key, 429 over the rate limit, 403 outside the scopes named)."""
    router = APIRouter(prefix="/v1")
    any_key = Depends(auth(runtime, ("ingest", "read", "review")))
    read = Depends(auth(runtime, "read"))
    queue_reader = Depends(auth(runtime, ("read", "review")))
    reviewer = Depends(auth(runtime, "review"))

    def audit(
        caller: Caller, action: str, target_type: str, target_id: str | None, **detail: Any
    ) -> None:
        with write_session(runtime.engine) as session:
            repo.record_audit(
                session=session,
                actor=caller.name,
                action=action,
                target_type=target_type,
                target_id=target_id,
                detail={"via": "api", **detail},
            )

    @router.get(
        "/patients/{patient_id}/similar",
        summary="A patient's past queries most similar to a new one",
        tags=["search"],
        response_model_exclude_unset=True,  # an item's query, only with the read scope
        responses={
            404: {"description": "No patient with this id."},
            503: {"description": "The embedding model is not available (the detail says why)."},
        },
    )
    def similar(
        patient_id: str = Path(max_length=64),
        query: str = Query(min_length=1, max_length=MAX_QUERY_CHARS, description="The new query."),
        limit: int = Query(5, ge=1, le=MAX_SIMILAR),
        caller: Caller = any_key,
    ) -> SimilarQueries:
        """The patient's stored queries ranked by cosine similarity of their embeddings
        (all-MiniLM-L6-v2; vectors cached in the database) to ``query``, best first: ids,
        score in [-1, 1] (higher is more similar) and time. The texts of the past queries come
        only with the ``read`` scope. The newest 1,000 queries of the patient are compared;
        queries whose text was purged are not. The read is audited."""
        if not query.strip():
            raise ApiError(422, "invalid_parameter", "query parameter query: is blank")
        with read_session(runtime.engine) as session:
            if not repo.patient_exists(session=session, patient_id=patient_id):
                raise ApiError(404, "not_found", "no patient with this id")
            past = search.patient_queries(
                session=session, patient_id=patient_id, limit=MAX_SIMILAR_SCAN
            )
        embedder, status = load_embedder(
            runtime.settings, store=repo.DbEmbeddingStore(runtime.engine)
        )
        if embedder is None:
            raise ApiError(503, "unavailable", f"embedding model: {status}")
        vectors = embedder.encode([query] + [p.query for p in past])
        scores = np.clip(vectors[1:] @ vectors[0], -1.0, 1.0) if past else np.zeros(0)
        ranked = sorted(
            zip(past, scores.tolist(), strict=True),
            key=lambda ps: (-ps[1], -ps[0].timestamp.timestamp(), ps[0].conversation_id),
        )[:limit]
        with_text = caller.allows("read")
        items = []
        for p, score in ranked:
            fields = {**asdict(p), "score": score}
            if not with_text:
                del fields["query"]  # left out of the item, not null
            items.append(SimilarQuery.model_validate(fields))
        audit(
            caller,
            "view" if with_text else "list",
            "patient",
            patient_id,
            similar=len(items),
            compared=len(past),
            text=with_text,
        )
        return SimilarQueries(
            patient_id=patient_id, model=embedder.model_name, compared=len(past), items=items
        )

    @router.get("/trends", summary="Quality per day or week", tags=["quality"])
    def trends(
        by: Literal["day", "week"] = Query("day", description="day, or ISO week (Monday)."),
        model: str | None = Query(None, min_length=1, max_length=200),
        patient_id: str | None = Query(None, min_length=1, max_length=64),
        since: date | None = Query(None, description="First day (YYYY-MM-DD), inclusive."),
        until: date | None = Query(None, description="Last day (YYYY-MM-DD), exclusive."),
        caller: Caller = read,
    ) -> Trends:
        """Answers, flagged answers and the average scores per period, as the dashboard's
        overview draws them (aggregated in SQL over the daily rollup). Scores are in [0, 1]:
        grounding, consistency, confidence and quality higher is better, risk higher is worse;
        None where nothing was scored. No record text."""
        filters = _filters(since=since, until=until, model=model, patient_id=patient_id)
        with read_session(runtime.engine) as session:
            points = repo.quality_trend(session=session, filters=filters, granularity=by)
        return Trends(by=by, points=[TrendPointPublic.model_validate(p) for p in points])

    @router.get("/review-queue", summary="Flagged statements to review", tags=["review"])
    def review_queue(
        status: list[QueueStatus] = Query(["unsupported", "contradicted"]),
        review_state: QueueState = Query("unreviewed"),
        kind: list[QueueKind] = Query([], description="Keep these kinds (none: all)."),
        severity: list[QueueSeverity] = Query([], description="Keep these (none: all)."),
        model: str | None = Query(None, min_length=1, max_length=200),
        patient_id: str | None = Query(None, min_length=1, max_length=64),
        since: date | None = Query(None, description="First day (YYYY-MM-DD), inclusive."),
        until: date | None = Query(None, description="Last day (YYYY-MM-DD), exclusive."),
        order: Literal["severity", "risk"] = Query(
            "severity", description="severity: most severe first, then riskiest; risk: riskiest."
        ),
        limit: int = Query(25, ge=1, le=MAX_QUEUE_PAGE),
        offset: int = Query(0, ge=0, le=1_000_000),
        caller: Caller = queue_reader,
    ) -> QueuePage:
        """The dashboard's review queue: unsupported and contradicted statements with their
        evidence, latest verdict, kind and severity, in the same order and under the same
        filters (and the review threshold in force), one page at a time with the total. Needs
        the ``read`` or ``review`` scope; the read is audited with the statements' ids."""
        filters = _filters(since=since, until=until, model=model, patient_id=patient_id)
        with read_session(runtime.engine) as session:
            rows, total = repo.flagged_statements(
                session=session,
                filters=filters,
                statuses=tuple(dict.fromkeys(status)),
                review_state=review_state,
                offset=offset,
                limit=limit,
                kinds=tuple(kind),
                severities=tuple(severity),
                order=order,
            )
        audit(
            caller,
            "list",
            "statement_check",
            None,
            items=len(rows),
            statement_check_ids=[r.statement_check_id for r in rows],
        )
        items = [QueueItemPublic.model_validate(r) for r in rows]
        return QueuePage(total=total, offset=offset, items=items)

    @router.post(
        "/reviews",
        status_code=201,
        summary="Give a verdict on a flagged statement",
        tags=["review"],
        responses={
            404: {"description": "No statement with this id."},
            422: {"description": "A field is missing or invalid (the detail names it)."},
        },
    )
    def post_review(body: ReviewIn, caller: Caller = reviewer) -> ReviewPublic:
        """Store a clinician's verdict as the review page does: the reviewer is the key's
        name, the time is now, the note optional; audited as ``review``. Needs the ``review``
        scope. A later verdict on the same statement supersedes this one in the queue."""
        note = (body.note or "").strip()
        try:
            with write_session(runtime.engine) as session:
                review = repo.create_review(
                    session=session,
                    statement_check_id=body.statement_check_id,
                    reviewer=caller.name,
                    verdict=body.verdict,
                    note=note or None,
                )
                repo.record_audit(
                    session=session,
                    actor=caller.name,
                    action="review",
                    target_type="statement_check",
                    target_id=str(body.statement_check_id),
                    detail={"verdict": body.verdict, "note_chars": len(note), "via": "api"},
                )
                out = ReviewPublic.model_validate(review)
        except LookupError:
            raise ApiError(
                404, "not_found", "field statement_check_id: no statement with this id"
            ) from None
        except ValueError as exc:
            raise ApiError(422, "invalid_review", str(exc)) from None
        except SQLAlchemyError as exc:
            raise ApiError(
                503, "database", f"database error ({type(exc).__name__}); nothing was stored"
            ) from None
        return out

    return router


__all__ = ["ReviewIn", "read_router"]
