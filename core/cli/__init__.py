"""The ``groundwatch`` command line (Typer). Each sub-module registers its commands."""

from __future__ import annotations

import importlib
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
)

for _name in _COMMAND_MODULES:
    importlib.import_module(f"core.cli.{_name}").register(app)


def main() -> None:
    """Entry point of the console script: one clear line for configuration errors."""
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        if os.environ.get("GROUNDWATCH_LOG_LEVEL"):  # the command line is quiet unless asked
            logging.getLogger().setLevel(get_settings().log_level)
        app()
    except SettingsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise SystemExit(1) from None
    except Exception as exc:  # never a traceback: its messages can quote record text
        from core.incidents import log_unhandled

        code = log_unhandled(exc, surface="command line")
        typer.echo(
            f"error: unexpected {type(exc).__name__} (incident {code}); the log line with this "
            "code says where it happened, without record text",
            err=True,
        )
        raise SystemExit(1) from None
