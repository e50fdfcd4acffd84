"""Storage commands: init-db, import, export, serve, demo."""

from __future__ import annotations

import csv
import io
import json
import os
import sys
from pathlib import Path
from typing import Annotated, Literal

import typer
from sqlalchemy.exc import SQLAlchemyError

from core.cli.common import (
    EXIT_INVALID,
    EXIT_IO,
    InputError,
    JsonOpt,
    emit,
    fail,
    migrated_engine,
    parse_when,
    read_bytes,
)
from core.config import get_settings
from core.storage.db import DatabaseError, read_session
from core.text import csv_cell, short_hash


def init_db(as_json: JsonOpt = False) -> None:
    """Create or upgrade the database schema to the newest version."""
    settings = get_settings()
    migrated_engine(as_json)
    from sqlalchemy.engine import make_url

    url = make_url(settings.database_url).render_as_string(hide_password=True)
    emit({"status": "ok", "database": url}, as_json=as_json, human=f"database ready: {url}")


def import_records(
    path: Annotated[Path, typer.Argument(help="JSONL file, one record per line ('-' = stdin).")],
    skip_invalid: Annotated[
        bool, typer.Option("--skip-invalid", help="Store the valid lines, list the rest.")
    ] = False,
    queue: Annotated[
        bool,
        typer.Option(
            "--queue",
            help="Queue the records for `groundwatch worker` instead of checking them here "
            "(PostgreSQL only).",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Validate every line, run the enabled checks, and store the records in one transaction.

    By default nothing is stored when any line is invalid. Re-importing the same records
    changes nothing; an edited record is updated, never duplicated. With ``--queue`` the
    records and their jobs are stored in one transaction and the workers check them.
    """
    from core.records import parse_jsonl

    settings = get_settings()
    try:
        data = read_bytes(path, what=str(path), max_bytes=settings.max_input_bytes)
    except InputError as exc:
        fail(str(exc), code=exc.code, as_json=as_json, error=exc.error)
    if not data.strip():
        fail(f"{path}: file is empty", code=EXIT_INVALID, as_json=as_json, error="empty")
    records, errors = parse_jsonl(data, max_text_chars=settings.max_transcript_chars)
    rejected = [e.to_dict() for e in errors]
    if errors and not skip_invalid:
        result = {"imported": 0, "updated": 0, "unchanged": 0, "rejected": rejected}
        if as_json:
            emit({**result, "error": "invalid_records"}, as_json=True)
        else:
            typer.echo(
                f"error: {len(errors)} invalid line(s); nothing stored "
                "(use --skip-invalid to store the valid ones)",
                err=True,
            )
            for e in errors[:100]:
                typer.echo(f"  line {e.line}: {e.error}", err=True)
        raise typer.Exit(EXIT_INVALID)
    if queue:
        from core.cli.queue import queue_records

        queue_records([r for _, r in records], rejected, as_json)
        return
    engine = migrated_engine(as_json)
    from core.alerts import AlertMonitor, AlertRulesError
    from core.pipeline import QualityPipeline

    try:  # the rules are checked before any record is; webhooks go out before the command ends
        alerts = AlertMonitor.from_settings(settings, engine, delivery="sync")
    except AlertRulesError as exc:
        fail(str(exc), code=EXIT_INVALID, as_json=as_json, error="alerts_file")
    pipeline = QualityPipeline(settings=settings, engine=engine, alerts=alerts)
    items = [r for _, r in records]
    try:
        with typer.progressbar(length=len(items), label="checking records", file=sys.stderr) as bar:
            reports = pipeline.process_many(items, progress=bar.update)
    except DatabaseError as exc:
        fail(str(exc), code=EXIT_IO, as_json=as_json, error="database")
    except SQLAlchemyError as exc:
        fail(
            f"database error during the import ({type(exc).__name__}); nothing was stored, "
            "re-run the import",
            code=EXIT_IO,
            as_json=as_json,
            error="database",
        )
    counts = {"imported": 0, "updated": 0, "unchanged": 0}
    for rep in reports:
        counts[rep.store_status] += 1
    result = {**counts, "rejected": rejected}
    human = (
        f"imported {counts['imported']}, updated {counts['updated']}, "
        f"unchanged {counts['unchanged']}, rejected {len(rejected)}"
    )
    if rejected and not as_json:
        human += "\n" + "\n".join(f"  line {e['line']}: {e['error']}" for e in rejected[:100])
    emit(result, as_json=as_json, human=human)


_CSV_FIELDS = [
    "id",
    "patient_id",
    "timestamp",
    "model",
    "grounding_score",
    "consistency_score",
    "confidence_score",
    "hallucination_risk",
    "overall_quality",
    "risk_level",
    "is_flagged",
    "statements",
    "unsupported_statements",
    "contradictions",
]


def export_records(
    patient: Annotated[str | None, typer.Option("--patient", help="Only this patient.")] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Only records at or after this ISO date.")
    ] = None,
    fmt: Annotated[
        Literal["json", "csv"], typer.Option("--format", help="json (one per line) or csv.")
    ] = "json",
    as_json: JsonOpt = False,
) -> None:
    """Export records with their scores, statement checks and contradictions."""
    from core.storage import repo

    when = parse_when(since, "--since", as_json=as_json)
    engine = migrated_engine(as_json)
    with read_session(engine) as session:
        if patient is not None and not repo.patient_exists(session=session, patient_id=patient):
            fail(
                f"unknown patient id (sha256 {short_hash(patient)})",
                code=EXIT_IO,
                as_json=as_json,
                error="unknown_patient",
            )
        rows = repo.iter_export(session=session, patient_id=patient, since=when)
        if fmt == "json":
            for row in rows:
                sys.stdout.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
            return
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=_CSV_FIELDS)
        writer.writeheader()
        for row in rows:
            writer.writerow(
                {
                    **{k: csv_cell(row.get(k)) for k in _CSV_FIELDS[:11]},
                    "statements": len(row["statement_checks"]),
                    "unsupported_statements": sum(
                        1 for s in row["statement_checks"] if s["status"] != "grounded"
                    ),
                    "contradictions": len(row["contradictions"]),
                }
            )
        sys.stdout.write(buf.getvalue())


# Never shown to a browser whatever the working directory: tracebacks (they carry server
# paths and, from a database error, record text) and the developer toolbar.
_SAFE_STREAMLIT = {
    "client.showErrorDetails": "none",
    "client.toolbarMode": "minimal",
    "server.headless": "true",
    "browser.gatherUsageStats": "false",
}


def _streamlit_options(config: Path) -> list[str]:
    """Command-line options from the project's Streamlit configuration, which Streamlit reads
    only from the working directory: ``serve`` started elsewhere behaves the same. The
    safety options are always given."""
    import tomllib

    options: dict[str, str] = {}
    if config.is_file():
        for section, values in tomllib.loads(config.read_text("utf-8")).items():
            for key, value in values.items():
                shown = str(value).lower() if isinstance(value, bool) else str(value)
                options[f"{section}.{key}"] = shown
    options.update(_SAFE_STREAMLIT)
    return [part for key, value in options.items() for part in (f"--{key}", value)]


def serve(
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8501,
    address: Annotated[
        str | None,
        typer.Option(help="Address to bind (default: 127.0.0.1 unless login is configured)."),
    ] = None,
) -> None:
    """Start the dashboard (Streamlit) on the configured database."""
    import dashboard

    settings = get_settings()
    migrated_engine(False)
    bind = address or ("0.0.0.0" if settings.auth_file else "127.0.0.1")
    if settings.auth_file is None and bind not in ("127.0.0.1", "localhost", "::1"):
        typer.echo(
            "error: no login configured (GROUNDWATCH_AUTH_FILE); the dashboard only listens "
            "on localhost without one",
            err=True,
        )
        raise typer.Exit(EXIT_IO)
    app_path = Path(dashboard.__file__).parent / "streamlit_app.py"
    typer.echo(
        f"Groundwatch dashboard: http://{'localhost' if bind == '127.0.0.1' else bind}:{port}"
    )
    cmd = [
        sys.executable,
        "-m",
        "dashboard.serve",  # Streamlit, with the pages' libraries imported before it starts
        "run",
        str(app_path),
        "--server.port",
        str(port),
        "--server.address",
        bind,
        *_streamlit_options(Path(dashboard.__file__).parent.parent / ".streamlit" / "config.toml"),
    ]
    env = {**os.environ, "GROUNDWATCH_DATABASE_URL": settings.database_url}
    sys.stdout.flush()
    # Become the Streamlit process, so that stopping `serve` stops the dashboard too.
    os.execve(sys.executable, cmd, env)


def demo(
    if_empty: Annotated[
        bool, typer.Option("--if-empty", help="Only when the database holds no conversation.")
    ] = False,
    patients: Annotated[int, typer.Option(min=1, max=10_000)] = 30,
    answers: Annotated[int, typer.Option(min=1, max=1_000_000)] = 600,
    days: Annotated[int, typer.Option(min=1, max=3650)] = 90,
    seed: Annotated[int, typer.Option()] = 7,
    as_json: JsonOpt = False,
) -> None:
    """Write realistic synthetic clinical data and run it through the real pipeline."""
    from core.storage import repo

    engine = migrated_engine(as_json)
    with read_session(engine) as session:
        existing = repo.count_conversations(session=session)
    if if_empty and existing:
        emit(
            {"status": "skipped", "reason": "database not empty", "conversations": existing},
            as_json=as_json,
            human=f"demo skipped: the database already holds {existing} conversations",
        )
        return
    from core.demo import generate_demo, run_demo

    records, reviews = generate_demo(patients=patients, answers=answers, days=days, seed=seed)
    with typer.progressbar(length=len(records), label="loading demo", file=sys.stderr) as bar:
        summary = run_demo(engine=engine, records=records, reviews=reviews, progress=bar.update)
    emit(summary, as_json=as_json, human=f"demo loaded: {json.dumps(summary)}")


def register(app: typer.Typer) -> None:
    """Attach the storage commands."""
    app.command("init-db")(init_db)
    app.command("import")(import_records)
    app.command("export")(export_records)
    app.command("serve")(serve)
    app.command("demo")(demo)
