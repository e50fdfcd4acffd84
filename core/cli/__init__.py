"""The ``groundwatch`` command line (Typer). Each sub-module registers its commands."""

from __future__ import annotations

import importlib
import json
import logging
import os
import sys

import typer

from core.config import SettingsError, get_settings

app = typer.Typer(
    name="groundwatch",
    help="How far can LLM answers about patients be trusted? Checks, storage and dashboard.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
llm_app = typer.Typer(help="Local LLM server (OpenAI-compatible).", no_args_is_help=True)
app.add_typer(llm_app, name="llm")

# Modules under core.cli that define ``register(app)``; each owns a group of commands.
_COMMAND_MODULES: tuple[str, ...] = (
    "records",
    "evidence",
    "ground",
    "selfcheck",
    "verify",
    "llm",
    "users",
    "purge",
    "doctor",
    "api",
    "rescore",
    "queue",
    "alerts",
)

for _name in _COMMAND_MODULES:
    importlib.import_module(f"core.cli.{_name}").register(app)


def _usage_errors() -> tuple[type[Exception], ...]:
    """The usage-error classes a command can raise: Click's, and those of the copy of Click
    that newer Typer releases ship."""
    import click

    found: list[type[Exception]] = [click.UsageError]
    try:
        from typer._click.exceptions import UsageError
    except ImportError:  # a Typer that uses the installed Click
        return tuple(found)
    return (*found, UsageError)


def main() -> None:
    """Entry point of the console script: one clear line for configuration errors."""
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        if os.environ.get("GROUNDWATCH_LOG_LEVEL"):  # the command line is quiet unless asked
            logging.getLogger().setLevel(get_settings().log_level)
        code = app(standalone_mode=False)
    except typer.Abort:
        typer.echo("aborted", err=True)
        raise SystemExit(1) from None
    except SettingsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise SystemExit(1) from None
    except Exception as exc:  # never a traceback: its messages can quote record text
        if isinstance(exc, _usage_errors()):  # a wrong option or argument: exit 1, as documented
            if "--json" in sys.argv[1:]:
                message = exc.format_message()  # type: ignore[attr-defined]
                typer.echo(json.dumps({"error": "usage", "message": message}))
            else:
                exc.show()  # type: ignore[attr-defined]
            raise SystemExit(1) from None
        from core.incidents import log_unhandled

        incident = log_unhandled(exc, surface="command line")
        typer.echo(
            f"error: unexpected {type(exc).__name__} (incident {incident}); the log line with this "
            "code says where it happened, without record text",
            err=True,
        )
        raise SystemExit(1) from None
    if isinstance(code, int) and code:
        raise SystemExit(code)
