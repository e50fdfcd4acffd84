"""``groundwatch purge``: remove record text past the retention period (audited)."""

from __future__ import annotations

import getpass
from typing import Annotated

import typer
from sqlalchemy.exc import SQLAlchemyError

from core.cli.common import EXIT_IO, JsonOpt, emit, fail
from core.config import get_settings
from core.storage.db import DatabaseError, get_engine, upgrade_to_head


def _cli_actor() -> str:
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):
        return "cli"


def purge(
    older_than: Annotated[
        int | None,
        typer.Option(
            "--older-than",
            min=1,
            max=36_500,
            help="Days to keep record text (default: GROUNDWATCH_RETENTION_DAYS).",
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count what would be purged; change nothing.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Remove query, answer, source and statement text older than DAYS; keep scores and verdicts.

    Embeddings and LLM responses cached before the cutoff go too: they derive from that text.

    Runs in one transaction with its audit event: all of it happens or none of it.
    """
    from core.retention import purge_expired

    settings = get_settings()
    days = older_than if older_than is not None else settings.retention_days
    if days is None:
        fail(
            "--older-than DAYS is required (or set GROUNDWATCH_RETENTION_DAYS)",
            code=EXIT_IO,
            as_json=as_json,
            error="usage",
        )
    try:
        upgrade_to_head(settings.database_url)
        engine = get_engine(settings.database_url)
        result = purge_expired(
            engine=engine, older_than_days=days, actor=_cli_actor(), dry_run=dry_run
        )
    except DatabaseError as exc:
        fail(str(exc), code=EXIT_IO, as_json=as_json, error="database")
    except SQLAlchemyError as exc:
        fail(
            f"database error ({type(exc).__name__}); nothing was purged",
            code=EXIT_IO,
            as_json=as_json,
            error="database",
        )
    verb = "would purge" if dry_run else "purged"
    emit(
        result.to_dict(),
        as_json=as_json,
        human=f"{verb} the text of {result.purged} conversation(s) older than {days} days "
        f"(before {result.cutoff:%Y-%m-%d %H:%M} UTC), {result.cached_embeddings} cached "
        f"embedding(s), {result.cached_llm_responses} cached LLM response(s) and "
        f"{result.queued_records} queued record(s) never stored",
    )


def register(app: typer.Typer) -> None:
    """Attach ``groundwatch purge``."""
    app.command("purge")(purge)
