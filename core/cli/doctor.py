"""``groundwatch doctor``: each configured part (database, models, LLM server, login,
retention) and whether it works."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from core.config import get_settings

_MARK = {"ok": "ok", "unavailable": "--", "failed": "FAILED"}


def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="Machine output.")] = False,
) -> None:
    """Check what is configured and working; exit 0 only when everything configured works."""
    from core.doctor import diagnose, healthy

    findings = diagnose(get_settings())
    ok = healthy(findings)
    if as_json:
        typer.echo(json.dumps({"healthy": ok, "findings": [f.to_dict() for f in findings]}))
    else:
        width = max(len(f.part) for f in findings)
        for f in findings:
            typer.echo(f"{_MARK[f.state]:>6}  {f.part:<{width}}  {f.detail}")
            if f.fix and f.state != "ok":
                typer.echo(f"{'':>6}  {'':<{width}}  -> {f.fix}")
        typer.echo("everything configured works" if ok else "something configured does not work")
    if not ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Attach ``groundwatch doctor``."""
    app.command("doctor")(doctor)
