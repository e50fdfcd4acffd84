"""Queued ingestion on PostgreSQL: answers are accepted at once and checked by workers.

``enqueue`` stores each validated record (table ``ingest_job``) and its job in the queue in
ONE transaction; ``run_worker`` is one worker process: it loads the models once, holds up
to ``queue_worker_batch`` jobs at a time, checks their answers as one batch (one
``process_many`` call, as an import does: fewer model calls and transactions) and stores each
result, idempotent on the record id as an import is.
Any number of workers on any machine that reaches the database share the queue.

The queue is procrastinate's (PostgreSQL only: jobs are rows claimed with ``FOR UPDATE SKIP
LOCKED``, workers woken by ``LISTEN/NOTIFY``, retries with a wait, no broker to run), its
schema applied by our migrations into the PostgreSQL schema ``procrastinate``. Jobs of one
patient carry the same lock, so they run one at a time in the order received (consistency
checks each answer against the patient's earlier ones).

A job fails its try when the pipeline raises; it is tried ``queue_max_attempts`` times in
all, then stays ``failed`` (the dead-letter state) with its error class and a message
without record text, until an admin retries it (one more try). A worker that dies (power,
SIGKILL) stops sending heartbeats; after ``queue_stalled_after_s`` one of the living workers
puts its running job back in the queue (under an advisory lock, so two workers never requeue
the same job). A job whose result was stored just before its worker died finds it stored
and is not checked again.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session

from core.config import Settings
from core.records import ConversationRecord, parse_record
from core.storage import jobs
from core.storage.db import DatabaseError, read_session, write_session
from core.storage.repo import RecordExistsError, conversation_id_for
from core.text import short_hash

log = logging.getLogger(__name__)

QUEUE = "ingest"
TASK_NAME = "groundwatch.check_answer"
QUEUE_SCHEMA = jobs.QUEUE_SCHEMA
_SEARCH_PATH = f"{QUEUE_SCHEMA}, public"
# key of the advisory lock under which one worker at a time requeues stalled jobs
_RECOVERY_LOCK = 0x6777_7175_6575  # "gwqueu"


class QueueUnavailable(RuntimeError):
    """Queued ingestion was asked of a database that is not PostgreSQL."""


class JobNotRetryable(RuntimeError):
    """A retry was asked of a job that is not in the dead-letter (``failed``) state."""


class AnswerFailed(RuntimeError):
    """A try of a queued answer failed; the message carries no record text."""


class _InvalidRecord(ValueError):
    """The stored record no longer validates (the message names the field)."""


def require_postgres(engine: Engine) -> None:
    """Raise :class:`QueueUnavailable` unless ``engine`` is PostgreSQL."""
    if engine.dialect.name != "postgresql":
        raise QueueUnavailable(
            "queued ingestion needs PostgreSQL (GROUNDWATCH_DATABASE_URL is "
            f"{engine.dialect.name}); on SQLite answers are checked as they arrive"
        )


def _lock(record: ConversationRecord) -> str:
    return f"patient-{short_hash(record.patient_id)}"


def _driver(session: Session) -> Any:
    """The psycopg connection under the session, with the queue's schema on the search path
    for the rest of the transaction (procrastinate's functions name their tables bare)."""
    session.execute(text(f"SET LOCAL search_path TO {_SEARCH_PATH}"))
    return session.connection().connection.driver_connection


def _sync_manager() -> Any:
    """procrastinate's job manager on a connector that only ever runs on connections we
    hand it (its own pool is never opened)."""
    from procrastinate.manager import JobManager
    from procrastinate.sync_psycopg_connector import SyncPsycopgConnector

    return JobManager(SyncPsycopgConnector())


def enqueue(
    *,
    engine: Engine,
    records: Sequence[ConversationRecord],
    replace: bool,
    submitted_by: str,
) -> list[int]:
    """Store the records and one job each in ONE transaction; their job ids, in order.

    Raises:
        QueueUnavailable: the database is not PostgreSQL.
    """
    require_postgres(engine)
    from procrastinate.jobs import Job

    manager = _sync_manager()
    items = [
        jobs.NewIngest(
            external_id=r.id,
            conversation_id=conversation_id_for(r.id),
            payload=r.model_dump(mode="json"),
            payload_hash=r.fingerprint()[:12],
        )
        for r in records
    ]
    with write_session(engine) as session:
        rows = jobs.add_ingest_jobs(
            session=session, items=items, replace=replace, submitted_by=submitted_by
        )
        deferred = manager.batch_defer_jobs(
            jobs=[
                Job(
                    id=None,
                    queue=QUEUE,
                    task_name=TASK_NAME,
                    lock=_lock(record),
                    queueing_lock=None,
                    task_kwargs={"ingest_id": int(row.id or 0)},
                )
                for row, record in zip(rows, records, strict=True)
            ],
            connection=_driver(session),
        )
        for row, job in zip(rows, deferred, strict=True):
            row.queue_job_id = job.id
        session.flush()
        return [int(row.id or 0) for row in rows]


def retry(*, engine: Engine, ingest_id: int) -> None:
    """Put a dead-letter job back in the queue for one more try.

    Raises:
        QueueUnavailable: the database is not PostgreSQL.
        LookupError: no queued answer has this id.
        JobNotRetryable: the job is not in the ``failed`` state.
    """
    require_postgres(engine)
    from procrastinate.exceptions import ConnectorException
    from procrastinate.sql import queries

    try:
        _retry(engine, ingest_id, queries)
    except ConnectorException:  # another admin retried it between our read and our write
        raise JobNotRetryable(f"job {ingest_id} changed state meanwhile; look again") from None


def _retry(engine: Engine, ingest_id: int, queries: Any) -> None:
    with write_session(engine) as session:
        views = jobs.job_views(session=session, ids=[ingest_id], limit=1)
        if not views:
            raise LookupError(f"no queued answer with id {ingest_id}")
        if views[0].state != "failed":
            raise JobNotRetryable(
                f"job {ingest_id} is {views[0].state}; only failed jobs are retried"
            )
        job_id = jobs.queue_job_id(session=session, ingest_id=ingest_id)
        manager = _sync_manager()
        manager.connector.execute_query_one_with_connection(
            _driver(session),
            query=queries["retry_job"],
            job_id=job_id,
            retry_at=None,
            new_priority=None,
            new_queue_name=None,
            new_lock=None,
        )


def safe_error(exc: BaseException) -> tuple[str, str]:
    """The class and a message of a failed try that may be stored and shown: our own errors
    name ids and fields only; any other message is replaced by its length and hash."""
    name = type(exc).__name__
    if isinstance(exc, SQLAlchemyError):
        orig = getattr(exc, "orig", None)
        return name, f"database error ({type(orig).__name__ if orig else name})"
    if isinstance(exc, (RecordExistsError, DatabaseError, _InvalidRecord)):
        return name, str(exc)[:300]
    message = str(exc)
    return name, (
        f"message withheld ({len(message)} characters, sha256 {short_hash(message)}): "
        "it may quote the record"
    )


@dataclass(slots=True)
class _Checker:
    """What one worker process holds: the pipeline (models loaded once) and the engine."""

    settings: Settings
    engine: Engine
    pipeline: Any

    def check_many(self, ingest_ids: Sequence[int]) -> list[BaseException | None]:
        """Check and store the queued answers, as one batch (one pipeline call) when it can:
        the error of each answer's try, or None when its result is stored.

        A batch that fails as a whole (one record the pipeline cannot store fails the whole
        transaction) is checked again one answer at a time, so only that answer fails.
        """
        errors: dict[int, BaseException | None] = {}
        todo: list[tuple[int, ConversationRecord, bool]] = []
        with read_session(self.engine) as session:
            rows = {i: jobs.ingest_job(session=session, ingest_id=i) for i in ingest_ids}
        for ingest_id, row in rows.items():
            if row is None:
                errors[ingest_id] = AnswerFailed(f"no queued answer with id {ingest_id}")
            elif row.finished_at is not None:  # stored by an earlier try of this job
                errors[ingest_id] = None
            else:
                try:
                    record = parse_record(
                        row.payload, max_text_chars=self.settings.max_transcript_chars
                    )
                except ValueError as exc:
                    errors[ingest_id] = self._failed(ingest_id, _InvalidRecord(str(exc)))
                else:
                    todo.append((ingest_id, record, row.replace))
        for group in _batches(todo):
            try:
                self._store(group)
            except Exception as exc:
                if len(group) == 1:
                    errors[group[0][0]] = self._failed(group[0][0], exc)
                    continue
                for item in group:  # find the one that fails; the others are stored
                    try:
                        self._store([item])
                    except Exception as one:
                        errors[item[0]] = self._failed(item[0], one)
        return [errors.get(i) for i in ingest_ids]

    def _store(self, group: Sequence[tuple[int, ConversationRecord, bool]]) -> None:
        reports = self.pipeline.process_many([r for _, r, _ in group], replace=group[0][2])
        with write_session(self.engine) as session:
            for (ingest_id, _, _), report in zip(group, reports, strict=True):
                jobs.finish_ingest_job(
                    session=session, ingest_id=ingest_id, outcome=report.store_status
                )

    def _failed(self, ingest_id: int, exc: BaseException) -> AnswerFailed:
        name, message = safe_error(exc)
        with write_session(self.engine) as session:
            jobs.fail_ingest_job(
                session=session, ingest_id=ingest_id, error_class=name, error_message=message
            )
        log.warning("queued answer %d failed: %s", ingest_id, name)
        return AnswerFailed(f"{name}: {message}")


def _batches(
    items: Sequence[tuple[int, ConversationRecord, bool]],
) -> list[list[tuple[int, ConversationRecord, bool]]]:
    """Groups that one ``process_many`` call takes: the same ``replace``, each record id once."""
    groups: list[list[tuple[int, ConversationRecord, bool]]] = []
    for item in items:
        for group in groups:
            if group[0][2] == item[2] and all(r.id != item[1].id for _, r, _ in group):
                group.append(item)
                break
        else:
            groups.append([item])
    return groups


class _Batcher:
    """Gathers the jobs a worker holds (its procrastinate concurrency) into batches: each job
    waits for its answer's outcome while one thread checks the batch."""

    def __init__(
        self, checker: _Checker, *, size: int, window_s: float = 0.05, max_wait_s: float = 0.5
    ) -> None:
        self.checker = checker
        self.size = size
        self.window_s = window_s
        self.max_wait_s = max_wait_s
        self.pending: list[tuple[int, asyncio.Future[None]]] = []
        self.arrived = asyncio.Event()

    async def check(self, ingest_id: int) -> None:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.pending.append((ingest_id, done))
        self.arrived.set()
        await done

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self.arrived.wait()
            # while the freed slots go on claiming jobs (the batch grows), wait for them, up
            # to max_wait_s, so that one pipeline call takes them all
            deadline, seen = loop.time() + self.max_wait_s, 0
            while seen < len(self.pending) < self.size and loop.time() < deadline:
                seen = len(self.pending)
                await asyncio.sleep(self.window_s)
            batch, self.pending = self.pending[: self.size], self.pending[self.size :]
            if not self.pending:
                self.arrived.clear()
            started = loop.time()
            try:
                errors = await asyncio.to_thread(self.checker.check_many, [i for i, _ in batch])
            except Exception as exc:  # the database is gone: every job of the batch fails
                errors = [AnswerFailed(f"batch failed: {type(exc).__name__}")] * len(batch)
            log.info(
                "checked a batch of %d queued answers in %.2f s (%d failed)",
                len(batch),
                loop.time() - started,
                sum(e is not None for e in errors),
            )
            for (_, done), error in zip(batch, errors, strict=True):
                if done.done():  # its job was cancelled meanwhile
                    continue
                if error is None:
                    done.set_result(None)
                else:
                    done.set_exception(error)


def _conninfo(engine: Engine) -> str:
    return engine.url.set(drivername="postgresql").render_as_string(hide_password=False)


def _options() -> dict[str, Any]:
    return {"options": f"-c search_path={_SEARCH_PATH.replace(' ', '')}"}


def worker_app(*, settings: Settings, engine: Engine, pipeline: Any) -> tuple[Any, _Batcher]:
    """The procrastinate app of one worker process, its task bound to ``pipeline`` through
    the batcher that gathers the jobs the worker holds."""
    import procrastinate

    batcher = _Batcher(
        _Checker(settings=settings, engine=engine, pipeline=pipeline),
        size=settings.queue_worker_batch,
    )
    retries = settings.queue_max_attempts - 1
    app = procrastinate.App(
        connector=procrastinate.PsycopgConnector(
            conninfo=_conninfo(engine),
            kwargs=_options(),
            min_size=1,
            max_size=min(settings.queue_worker_batch, 8) + 2,
        )
    )

    @app.task(
        name=TASK_NAME,
        queue=QUEUE,
        retry=procrastinate.RetryStrategy(max_attempts=retries, wait=settings.queue_retry_wait_s)
        if retries
        else False,
    )
    async def check_answer(ingest_id: int) -> None:
        await batcher.check(ingest_id)

    return app, batcher


async def _requeue_stalled(app: Any, conninfo: str, *, after_s: float) -> None:
    """Every half ``after_s``: when no other worker is at it, put the running jobs of
    workers silent for ``after_s`` back in the queue."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(
        conninfo, autocommit=True, **_options()
    ) as conn:
        while True:
            await asyncio.sleep(after_s / 2)
            try:
                got = await (
                    await conn.execute("SELECT pg_try_advisory_lock(%s)", (_RECOVERY_LOCK,))
                ).fetchone()
                if not got or not got[0]:
                    continue
                try:
                    stalled = await app.job_manager.get_stalled_jobs(
                        queue=QUEUE, seconds_since_heartbeat=after_s
                    )
                    for job in stalled:
                        await app.job_manager.retry_job(job)
                        log.warning("job %s of a silent worker is queued again", job.id)
                    await app.job_manager.prune_stalled_workers(after_s)
                finally:
                    await conn.execute("SELECT pg_advisory_unlock(%s)", (_RECOVERY_LOCK,))
            except Exception as exc:  # the next round tries again
                log.warning("requeueing stalled jobs failed: %s", type(exc).__name__)


async def _serve(
    app: Any, batcher: _Batcher, engine: Engine, settings: Settings, name: str
) -> None:
    after = settings.queue_stalled_after_s
    async with app.open_async():
        side = [
            asyncio.create_task(batcher.run()),
            asyncio.create_task(_requeue_stalled(app, _conninfo(engine), after_s=after)),
        ]
        try:
            await app.run_worker_async(
                queues=[QUEUE],
                name=name,
                concurrency=settings.queue_worker_batch,
                update_heartbeat_interval=max(after / 5, 0.5),
                stalled_worker_timeout=after,
            )
        finally:
            for task in side:
                task.cancel()


def run_worker(*, settings: Settings, engine: Engine, pipeline: Any) -> None:
    """Run one worker until SIGINT/SIGTERM (the batch in progress is finished first)."""
    require_postgres(engine)
    name = f"groundwatch-{socket.gethostname()}-{os.getpid()}"
    app, batcher = worker_app(settings=settings, engine=engine, pipeline=pipeline)
    log.info("worker %s started", name)
    asyncio.run(_serve(app, batcher, engine, settings, name))
