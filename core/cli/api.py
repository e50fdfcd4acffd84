"""``groundwatch api`` (the HTTP API under uvicorn) and ``groundwatch keys`` (its API keys).

A key's token is shown once, at creation; only its SHA-256 is stored.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

import typer

from core.cli.common import EXIT_INVALID, EXIT_IO, JsonOpt, emit, fail, migrated_engine
from core.config import get_settings

keys_app = typer.Typer(help="API keys of the HTTP API (stored hashed).", no_args_is_help=True)


def serve_api(
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.", min=0, max=65535)] = 8000,
) -> None:
    """Serve the HTTP API (FastAPI under uvicorn) on the configured database, migrated first.

    The access log is off: each request is logged as method, route template, status and time,
    never its path or query string (they can carry patient ids or text)."""
    import uvicorn

    from core.api import create_app

    settings = get_settings()
    engine = migrated_engine(False)
    level = settings.log_level
    for name in ("core", "groundwatch", "uvicorn"):
        logging.getLogger(name).setLevel(level)
    app = create_app(settings=settings, engine=engine)
    typer.echo(f"Groundwatch API: http://{host}:{port}/v1 (docs: /docs)")
    uvicorn.run(
        app,
        host=host,
        port=port,
        access_log=False,
        log_config=None,
        log_level=level.lower(),
        server_header=False,
    )


def create_key(
    name: Annotated[str, typer.Option("--name", help="Who uses the key (the audit actor).")],
    scopes: Annotated[
        str, typer.Option("--scopes", help="Comma-separated: ingest, read, review, admin.")
    ],
    as_json: JsonOpt = False,
) -> None:
    """Create an API key; its token is printed once and never stored."""
    from core.api.keys import new_token, parse_scopes, token_hash
    from core.storage import repo
    from core.storage.db import write_session

    clean = name.strip()
    if not clean or len(clean) > 200:
        fail("--name: 1 to 200 characters", code=EXIT_INVALID, as_json=as_json, error="usage")
    try:
        chosen = parse_scopes(scopes)
    except ValueError as exc:
        fail(f"--scopes: {exc}", code=EXIT_INVALID, as_json=as_json, error="usage")
    engine = migrated_engine(as_json)
    token = new_token()
    with write_session(engine) as session:
        key = repo.create_api_key(
            session=session, name=clean, scopes=chosen, token_hash=token_hash(token)
        )
        key_id = int(key.id or 0)
    emit(
        {"id": key_id, "name": clean, "scopes": list(chosen), "token": token},
        as_json=as_json,
        human=(
            f"created API key {key_id} ({clean}; {', '.join(chosen)})\n"
            f"token (shown once, store it now): {token}"
        ),
    )


def list_keys(as_json: JsonOpt = False) -> None:
    """List API keys (never their tokens)."""
    from core.storage import repo
    from core.storage.db import read_session

    engine = migrated_engine(as_json)
    with read_session(engine) as session:
        rows: list[dict[str, Any]] = [
            {
                "id": int(k.id or 0),
                "name": k.name,
                "scopes": k.scopes.split(","),
                "created_at": k.created_at.isoformat(),
                "revoked_at": k.revoked_at.isoformat() if k.revoked_at else None,
            }
            for k in repo.list_api_keys(session=session)
        ]
    human = (
        "\n".join(
            f"{r['id']:>5}  {r['name']:<24} {','.join(r['scopes']):<28} "
            f"{'revoked ' + str(r['revoked_at']) if r['revoked_at'] else 'active'}"
            for r in rows
        )
        or "no API keys"
    )
    emit({"keys": rows}, as_json=as_json, human=human)


def revoke_key(
    key_id: Annotated[int, typer.Argument(help="The key's id (groundwatch keys list).")],
    as_json: JsonOpt = False,
) -> None:
    """Revoke an API key: requests with it are refused (401) from now on."""
    from core.storage import repo
    from core.storage.db import write_session

    engine = migrated_engine(as_json)
    try:
        with write_session(engine) as session:
            key = repo.revoke_api_key(session=session, key_id=key_id)
            revoked = key.revoked_at.isoformat() if key.revoked_at else None
    except LookupError as exc:
        fail(str(exc), code=EXIT_IO, as_json=as_json, error="unknown_key")
    emit(
        {"id": key_id, "status": "revoked", "revoked_at": revoked},
        as_json=as_json,
        human=f"revoked API key {key_id}",
    )


def register(app: typer.Typer) -> None:
    """Attach ``groundwatch api`` and ``groundwatch keys ...``."""
    app.command("api")(serve_api)
    keys_app.command("create")(create_key)
    keys_app.command("list")(list_keys)
    keys_app.command("revoke")(revoke_key)
    app.add_typer(keys_app, name="keys")
