"""Queued ingestion over HTTP (PostgreSQL only): ``POST /v1/answers?mode=async`` answers 202
with a job id (:func:`queue_answer`), ``/v1/jobs`` reports jobs, lists the dead-letter ones and
retries them, and ``/metrics`` gains the queue depth by state, read at scrape time.

On SQLite each of these answers 400 ``queue_unavailable``: answers are checked inline there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from fastapi import APIRouter, Depends, Path, Query
from fastapi.responses import JSONResponse
from prometheus_client.core import GaugeMetricFamily
from sqlalchemy.exc import SQLAlchemyError

from core.api.errors import ApiError, log
from core.api.keys import Caller
from core.api.runtime import Runtime
from core.queue import JobNotRetryable, QueueUnavailable, enqueue, require_postgres, retry
from core.records import ConversationRecord
from core.storage import jobs, repo
from core.storage.db import DatabaseError, read_session, write_session

MAX_JOB_PAGE = 500
_JOB_ID = Path(ge=1, le=2**63 - 1, description="The job id that POST ?mode=async answered.")


def require_queue(runtime: Runtime) -> None:
    """400 ``queue_unavailable`` unless the database is PostgreSQL."""
    try:
        require_postgres(runtime.engine)
    except QueueUnavailable as exc:
        raise ApiError(400, "queue_unavailable", str(exc)) from None


def queue_answer(runtime: Runtime, record: ConversationRecord, caller: Caller) -> JSONResponse:
    """Store the record and its job in one transaction; 202 with the job id."""
    require_queue(runtime)
    try:
        (job_id,) = enqueue(
            engine=runtime.engine,
            records=[record],
            replace="admin" in caller.scopes,
            submitted_by=caller.name,
        )
    except (DatabaseError, SQLAlchemyError) as exc:
        log.error("queueing failed: %s", type(exc).__name__)
        raise ApiError(
            503, "database", f"database error ({type(exc).__name__}); nothing was queued"
        ) from None
    runtime.metrics.answers.labels("queued").inc()
    with write_session(runtime.engine) as session:
        repo.record_audit(
            session=session,
            actor=caller.name,
            action="api_queue",
            target_type="ingest_job",
            target_id=str(job_id),
            detail={"records": 1},
        )
    return JSONResponse(
        {"job_id": job_id, "state": "queued", "record_id": record.id, "job": f"/v1/jobs/{job_id}"},
        status_code=202,
        headers={"Location": f"/v1/jobs/{job_id}"},
    )


class QueueDepth:
    """Prometheus collector: jobs of the queue by state, counted when ``/metrics`` is read,
    and whether that count could be read (``groundwatch_queue_depth_ok``)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def collect(self) -> Iterator[Any]:
        depth = GaugeMetricFamily(
            "groundwatch_queue_jobs", "Jobs of the ingestion queue by state.", labels=["state"]
        )
        ok = GaugeMetricFamily(
            "groundwatch_queue_depth_ok", "1 when the queue depth could be read, else 0."
        )
        try:
            with read_session(self.runtime.engine) as session:
                counts = jobs.queue_depth(session=session)
        except (DatabaseError, SQLAlchemyError) as exc:
            log.warning("queue depth unreadable: %s", type(exc).__name__)
            ok.add_metric([], 0)
            yield ok
            return
        for state, n in counts.items():
            depth.add_metric([state], n)
        ok.add_metric([], 1)
        yield depth
        yield ok


def jobs_router(
    runtime: Runtime, auth: Callable[[Runtime, Any], Callable[..., Caller]]
) -> APIRouter:
    """The ``/v1/jobs`` routes; on PostgreSQL also the queue depth on ``/metrics``."""
    router = APIRouter(prefix="/v1", tags=["jobs"])
    read = Depends(auth(runtime, "read"))
    admin = Depends(auth(runtime, "admin"))
    if runtime.engine.dialect.name == "postgresql":
        runtime.metrics.registry.register(QueueDepth(runtime))

    @router.get(
        "/jobs/{job_id}",
        summary="State of one queued answer",
        responses={
            400: {"description": "The database is not PostgreSQL (no queue)."},
            404: {"description": "No job with this id."},
        },
    )
    def get_job(job_id: int = _JOB_ID, caller: Caller = read) -> dict[str, Any]:
        """``queued``, ``running``, ``done`` (with the outcome: imported, updated, unchanged)
        or ``failed`` (the dead-letter state, after the last try: the error's class and a
        message without record text); ``attempts`` counts the tries so far."""
        require_queue(runtime)
        with read_session(runtime.engine) as session:
            found = jobs.job_views(session=session, ids=[job_id], limit=1)
        if not found:
            raise ApiError(404, "not_found", "no job with this id")
        return found[0].to_dict()

    @router.get("/jobs", summary="List queued answers by state, newest first")
    def list_jobs(
        state: jobs.JobState | None = Query(None, description="failed: the dead-letter list."),
        limit: int = Query(100, ge=1, le=MAX_JOB_PAGE),
        caller: Caller = read,
    ) -> dict[str, Any]:
        """Jobs in ``state`` (all when omitted), newest first, at most ``limit``."""
        require_queue(runtime)
        with read_session(runtime.engine) as session:
            found = jobs.job_views(session=session, state=state, limit=limit)
        return {"items": [j.to_dict() for j in found]}

    @router.post(
        "/jobs/{job_id}/retry",
        status_code=202,
        summary="Queue a dead-letter job again",
        responses={
            403: {"description": "The key lacks the admin scope."},
            404: {"description": "No job with this id."},
            409: {"description": "The job is not in the failed state."},
        },
    )
    def retry_job(job_id: int = _JOB_ID, caller: Caller = admin) -> dict[str, Any]:
        """A ``failed`` job gets one more try (admin keys only); audited."""
        require_queue(runtime)
        try:
            retry(engine=runtime.engine, ingest_id=job_id)
        except LookupError:
            raise ApiError(404, "not_found", "no job with this id") from None
        except JobNotRetryable as exc:
            raise ApiError(409, "not_failed", str(exc)) from None
        with write_session(runtime.engine) as session:
            repo.record_audit(
                session=session,
                actor=caller.name,
                action="job_retry",
                target_type="ingest_job",
                target_id=str(job_id),
                detail={},
            )
        return {"job_id": job_id, "state": "queued"}

    return router
