"""``groundwatch alerts``: evaluate the alert rules now, list firings, acknowledge, resolve.

The rules come from ``GROUNDWATCH_ALERTS_FILE`` (docs/alerts.md). ``check`` delivers webhooks
synchronously: it returns once every webhook answered or ran out of attempts.
"""

from __future__ import annotations

from typing import Annotated, Literal

import typer

from core.cli.common import EXIT_INVALID, EXIT_IO, JsonOpt, emit, fail, migrated_engine
from core.config import get_settings
from core.storage.db import read_session, write_session

alerts_app = typer.Typer(
    help="Alert rules (GROUNDWATCH_ALERTS_FILE): check now, list, acknowledge, resolve.",
    no_args_is_help=True,
)


def check(
    last: Annotated[
        int, typer.Option("--last", min=1, max=100_000, help="Recent answers the rules read.")
    ] = 500,
    as_json: JsonOpt = False,
) -> None:
    """Evaluate every rule now and deliver new firings (no duplicate while one is open).

    Per-answer rules read the LAST most recent answers; the flagged share is judged at each
    model's newest answer; the calibration drift on the most recent verdicts.
    """
    from core.alerts import AlertMonitor, AlertRulesError

    settings = get_settings()
    if settings.alerts_file is None:
        fail(
            "no alerts file: set GROUNDWATCH_ALERTS_FILE",
            code=EXIT_IO,
            as_json=as_json,
            error="usage",
        )
    engine = migrated_engine(as_json)
    try:
        monitor = AlertMonitor.from_settings(settings, engine, delivery="sync")
    except AlertRulesError as exc:
        fail(str(exc), code=EXIT_INVALID, as_json=as_json, error="alerts_file")
    assert monitor is not None
    result = monitor.check(last=last)
    out = result.to_dict()
    counts = {
        s: sum(f.status == s for f in result.findings) for s in ("firing", "clear", "not_evaluated")
    }
    out["counts"] = counts
    lines = [
        f"firing {counts['firing']}, clear {counts['clear']}, not evaluated "
        f"{counts['not_evaluated']}; opened {len(result.opened)} alert(s), "
        f"{len(result.updated)} already open"
    ]
    for f in result.findings:
        if f.status != "clear":
            lines.append(
                f"  {f.status}: {f.condition_key}" + (f" ({f.reason})" if f.reason else "")
            )
    emit(out, as_json=as_json, human="\n".join(lines))


def list_alerts(
    state: Annotated[
        list[str] | None,
        typer.Option("--state", help="open, acknowledged or resolved (repeatable; default: all)."),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=10_000)] = 100,
    as_json: JsonOpt = False,
) -> None:
    """Firings, open first, with their state and who changed it."""
    from core.storage import alerts as store

    states = tuple(state or store.STATES)
    bad = [s for s in states if s not in store.STATES]
    if bad:
        fail(
            f"--state: {bad[0]!r} is not one of {', '.join(store.STATES)}",
            code=EXIT_IO,
            as_json=as_json,
            error="usage",
        )
    with read_session(migrated_engine(as_json)) as session:
        rows = store.list_firings(session=session, states=states, limit=limit)  # type: ignore[arg-type]
    items = [
        {
            "id": f.id,
            "rule": f.rule,
            "kind": f.kind,
            "condition": f.condition_key,
            "state": f.state,
            "value": f.value,
            "threshold": f.threshold,
            "occurrences": f.occurrences,
            "first_at": f.first_at,
            "last_at": f.last_at,
            "acknowledged_by": f.acknowledged_by,
            "resolved_by": f.resolved_by,
        }
        for f in rows
    ]
    human = "\n".join(
        f"{i['id']:>5} {i['state']:<12} {i['condition']} x{i['occurrences']}" for i in items
    )
    emit({"alerts": items}, as_json=as_json, human=human or "no alerts")


def _change(
    alert_id: int, by: str, state: Literal["acknowledged", "resolved"], as_json: bool
) -> None:
    from core.storage import alerts as store

    actor = by.strip()
    if not actor or len(actor) > 200:
        fail(
            "--by: give who you are (1 to 200 characters)",
            code=EXIT_IO,
            as_json=as_json,
            error="usage",
        )
    try:
        with write_session(migrated_engine(as_json)) as session:
            firing = store.change_state(
                session=session, firing_id=alert_id, state=state, actor=actor
            )
    except store.AlertStateError as exc:
        fail(str(exc), code=EXIT_INVALID, as_json=as_json, error="alert_state")
    emit(
        {"id": firing.id, "state": firing.state, "by": actor},
        as_json=as_json,
        human=f"alert {firing.id} {firing.state} by {actor}",
    )


def acknowledge(
    alert_id: Annotated[int, typer.Argument(help="The alert's id (groundwatch alerts list).")],
    by: Annotated[str, typer.Option("--by", help="Who acknowledges it (audited).")],
    as_json: JsonOpt = False,
) -> None:
    """Acknowledge an open alert: someone is on it (it still holds off duplicates)."""
    _change(alert_id, by, "acknowledged", as_json)


def resolve(
    alert_id: Annotated[int, typer.Argument(help="The alert's id (groundwatch alerts list).")],
    by: Annotated[str, typer.Option("--by", help="Who resolves it (audited).")],
    as_json: JsonOpt = False,
) -> None:
    """Resolve an alert: the condition firing again opens a new alert."""
    _change(alert_id, by, "resolved", as_json)


def register(app: typer.Typer) -> None:
    """Attach ``groundwatch alerts ...``."""
    alerts_app.command("check")(check)
    alerts_app.command("list")(list_alerts)
    alerts_app.command("ack")(acknowledge)
    alerts_app.command("resolve")(resolve)
    app.add_typer(alerts_app, name="alerts")
