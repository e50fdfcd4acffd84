"""``groundwatch rescore``: the enabled checks again over stored answers or record files, on
Ray, with the change in flags recorded and reported (:mod:`core.rescore`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from sqlalchemy.exc import SQLAlchemyError

from core.cli.common import EXIT_INVALID, EXIT_IO, JsonOpt, emit, fail, migrated_engine, parse_when
from core.config import get_settings
from core.storage.db import DatabaseError


def _human(report: Any) -> str:
    s = report.summary
    lines = [
        f"run {report.run_id} ({report.status}): verifier {report.verifier_version}, "
        f"settings {report.settings_hash}",
        f"  selected {report.selected}, checked {s.checked}"
        + (f" ({report.resumed} before this start)" if report.resumed else "")
        + f", failed {s.failed}",
        f"  flag changed on {s.changed}: {s.newly_flagged} newly flagged, {s.cleared} cleared "
        f"({s.same} the same, {s.new} not stored before)",
    ]
    if s.top:
        lines.append("  largest changes (conversation id, change, risk old -> new):")
        for c in s.top:
            old = "-" if c.old_risk is None else f"{c.old_risk:.3f}"
            new = "-" if c.new_risk is None else f"{c.new_risk:.3f}"
            delta = "" if c.risk_delta is None else f" ({c.risk_delta:+.3f})"
            lines.append(f"    {c.conversation_id}  {c.change:<8} {old} -> {new}{delta}")
    return "\n".join(lines)


def rescore(
    files: Annotated[
        list[Path] | None,
        typer.Argument(help="JSONL or Parquet files of records (import format); none: stored."),
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Stored answers at or after this ISO date.")
    ] = None,
    until: Annotated[
        str | None, typer.Option("--until", help="Stored answers before this ISO date.")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", help="Only this model.")] = None,
    patient: Annotated[str | None, typer.Option("--patient", help="Only this patient.")] = None,
    only_flagged: Annotated[
        bool, typer.Option("--only-flagged", help="Only answers stored as flagged.")
    ] = False,
    run_id: Annotated[
        str | None,
        typer.Option("--run-id", help="Name the run; an existing run goes on where it stopped."),
    ] = None,
    resume: Annotated[
        str | None,
        typer.Option("--resume", help="Go on with this run (its own selection)."),
    ] = None,
    report: Annotated[
        str | None, typer.Option("--report", help="Print this run's report; check nothing.")
    ] = None,
    address: Annotated[
        str | None,
        typer.Option("--address", help="Ray cluster to run on (e.g. ray://head:10001)."),
    ] = None,
    num_cpus: Annotated[
        int | None,
        typer.Option("--num-cpus", min=1, help="Cores of the local Ray (default: all)."),
    ] = None,
    actors: Annotated[
        int | None,
        typer.Option("--actors", min=1, help="Actors, one model copy each (default: 1 per CPU)."),
    ] = None,
    batch_size: Annotated[
        int, typer.Option("--batch-size", min=1, max=10_000, help="Answers per actor call.")
    ] = 32,
    write_every: Annotated[
        int,
        typer.Option("--write-every", min=1, max=100_000, help="Results per written batch."),
    ] = 128,
    as_json: JsonOpt = False,
) -> None:
    """Check stored answers (or record files) again with the current verifier and settings,
    on Ray, and report which answers changed flag.

    The stored scores stay as they are: each run keeps its own results, so the dashboard can
    show the newest or compare two. A run stopped half-way goes on with --resume RUN (or the
    same --run-id): only what has no result yet is checked, nothing is written twice.
    """
    from core import rescore as rs

    settings = get_settings()
    chosen = [x for x in (run_id, resume, report) if x is not None]
    if len(chosen) > 1:
        fail(
            "use one of --run-id, --resume, --report", code=EXIT_IO, as_json=as_json, error="usage"
        )
    engine = migrated_engine(as_json)
    if report is not None:
        try:
            stored = rs.stored_report(engine=engine, run_id=report)
        except rs.RescoreError as exc:
            fail(str(exc), code=EXIT_IO, as_json=as_json, error="unknown_run")
        emit(stored.to_dict(), as_json=as_json, human=_human(stored))
        return
    selection = None
    if resume is None:
        selection = rs.Selection(
            since=parse_when(since, "--since", as_json=as_json),
            until=parse_when(until, "--until", as_json=as_json),
            model=model,
            patient_id=patient,
            only_flagged=only_flagged,
            files=tuple(str(f.resolve()) for f in files or ()),
        )
        if selection.files and (since or until or model or patient or only_flagged):
            fail(
                "filters apply to stored answers; give files or filters, not both",
                code=EXIT_IO,
                as_json=as_json,
                error="usage",
            )
    elif files or since or until or model or patient or only_flagged:
        fail(
            "--resume takes the run's own selection; give no files or filters",
            code=EXIT_IO,
            as_json=as_json,
            error="usage",
        )
    the_run = resume or run_id or rs.new_run_id()
    if not as_json:
        typer.echo(f"re-scoring run {the_run}", err=True)
    bar: Any = None

    def on_total(left: int, before: int) -> None:
        nonlocal bar
        if before:
            typer.echo(f"{before} answers done before; {left} left", err=True)
        bar = typer.progressbar(length=left, label="re-scoring", file=sys.stderr)
        bar.__enter__()

    def on_written(n: int) -> None:
        if bar is not None:
            bar.update(n)

    try:
        result = rs.rescore(
            settings=settings,
            engine=engine,
            run_id=the_run,
            selection=selection,
            resume=resume is not None,
            actors=actors,
            batch_size=batch_size,
            write_every=write_every,
            address=address,
            num_cpus=num_cpus,
            on_total=on_total,
            on_written=on_written,
        )
    except rs.RescoreError as exc:
        fail(str(exc), code=EXIT_INVALID, as_json=as_json, error="rescore")
    except DatabaseError as exc:
        fail(str(exc), code=EXIT_IO, as_json=as_json, error="database")
    except SQLAlchemyError as exc:
        fail(
            f"database error during the run ({type(exc).__name__}); what was written stays, "
            f"go on with --resume {the_run}",
            code=EXIT_IO,
            as_json=as_json,
            error="database",
        )
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    emit(result.to_dict(), as_json=as_json, human=_human(result))


def register(app: typer.Typer) -> None:
    """Attach ``rescore``."""
    app.command("rescore")(rescore)
