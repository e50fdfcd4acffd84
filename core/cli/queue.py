"""``groundwatch worker`` (checks queued answers) and ``import --queue`` (queues a file).

Both need PostgreSQL: on SQLite they stop with one clear line (exit 1).
"""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from core.cli.common import EXIT_INVALID, EXIT_IO, emit, fail, migrated_engine
from core.config import get_settings
from core.records import ConversationRecord


def queue_records(records: list[ConversationRecord], rejected: list[dict], as_json: bool) -> None:
    """Store the records and their jobs in one transaction (``import --queue``)."""
    from core.queue import QueueUnavailable, enqueue, require_postgres

    engine = migrated_engine(as_json)
    try:
        require_postgres(engine)
        ids = enqueue(engine=engine, records=records, replace=True, submitted_by="cli")
    except QueueUnavailable as exc:
        fail(str(exc), code=EXIT_IO, as_json=as_json, error="queue_unavailable")
    result = {
        "queued": len(ids),
        "first_job": ids[0] if ids else None,
        "last_job": ids[-1] if ids else None,
        "rejected": rejected,
    }
    human = f"queued {len(ids)} (jobs {result['first_job']}-{result['last_job']})"
    if rejected and not as_json:
        human += "\n" + "\n".join(f"  line {e['line']}: {e['error']}" for e in rejected[:100])
    emit(result, as_json=as_json, human=human)


def worker(
    threads: Annotated[
        int,
        typer.Option(
            "--threads",
            min=1,
            max=256,
            help="PyTorch threads of this worker (1: run one worker per core).",
        ),
    ] = 1,
) -> None:
    """Check queued answers until stopped (SIGINT/SIGTERM finish the batch in progress).

    Run as many as the machines have cores, anywhere the database is reachable: the models
    load once per worker, at start, and jobs are shared out by the PostgreSQL queue.
    """
    from core.queue import QueueUnavailable, require_postgres, run_worker

    settings = get_settings()
    engine = migrated_engine(False)
    try:
        require_postgres(engine)
    except QueueUnavailable as exc:
        fail(str(exc), code=EXIT_IO, as_json=False, error="queue_unavailable")
    for name in ("core", "groundwatch"):
        logging.getLogger(name).setLevel(settings.log_level)
    from core.alerts import AlertMonitor, AlertRulesError
    from core.pipeline import QualityPipeline

    try:  # the alert rules run after each stored batch, as for the API and the import
        alerts = AlertMonitor.from_settings(settings, engine)
    except AlertRulesError as exc:
        fail(str(exc), code=EXIT_INVALID, as_json=False, error="alerts_file")
    pipeline = QualityPipeline(settings=settings, engine=engine, alerts=alerts)
    loaded = pipeline.backend_status  # every model loads now, once, not on the first job
    import torch

    torch.set_num_threads(threads)  # after loading: the embedder sets one per core
    shown = ", ".join(f"{name} {status.status}" for name, status in loaded.items())
    typer.echo(f"groundwatch worker: models loaded ({shown}), waiting for jobs", err=True)
    try:
        run_worker(settings=settings, engine=engine, pipeline=pipeline)
    finally:
        if alerts is not None:
            alerts.close(timeout=5.0)


def register(app: typer.Typer) -> None:
    """Attach the worker command."""
    app.command("worker")(worker)
