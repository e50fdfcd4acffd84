"""``groundwatch users``: add, list and remove dashboard users in the users file.

The file is ``GROUNDWATCH_AUTH_FILE`` (or ``--file``); passwords are stored as bcrypt hashes
and are read from a hidden prompt or from standard input, never from the command line.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from core.auth import ROLES, AuthConfigError, PasswordPolicyError, Role, UserStore
from core.cli.common import EXIT_INVALID, EXIT_IO, JsonOpt, emit, fail
from core.config import get_settings

users_app = typer.Typer(
    help="Dashboard users and roles (bcrypt-hashed users file).", no_args_is_help=True
)

FileOpt = Annotated[
    Path | None,
    typer.Option("--file", help="Users file (default: GROUNDWATCH_AUTH_FILE)."),
]


def _auth_file(path: Path | None, as_json: bool) -> Path:
    chosen = path or get_settings().auth_file
    if chosen is None:
        fail(
            "no users file: set GROUNDWATCH_AUTH_FILE or pass --file",
            code=EXIT_IO,
            as_json=as_json,
            error="usage",
        )
    return chosen


def _store(path: Path, *, allow_missing: bool, as_json: bool) -> UserStore:
    try:
        return UserStore(path, allow_missing=allow_missing)
    except AuthConfigError as exc:
        fail(str(exc), code=EXIT_INVALID, as_json=as_json, error="auth_config")


def _read_password(from_stdin: bool, as_json: bool) -> str:
    if from_stdin:
        line = sys.stdin.readline()
        password = line.rstrip("\r\n")
        if not password:
            fail(
                "--password-stdin: no password on standard input",
                code=EXIT_IO,
                as_json=as_json,
                error="usage",
            )
        return password
    return str(typer.prompt("Password", hide_input=True, confirmation_prompt=True))


def add_user(
    name: Annotated[str, typer.Argument(help="User name (letters, digits, . _ @ -).")],
    role: Annotated[str, typer.Option("--role", help=f"One of: {', '.join(ROLES)}.")],
    password_stdin: Annotated[
        bool, typer.Option("--password-stdin", help="Read the password from standard input.")
    ] = False,
    email: Annotated[
        str | None, typer.Option("--email", help="E-mail for OpenID Connect logins.")
    ] = None,
    no_password: Annotated[
        bool,
        typer.Option("--no-password", help="Keep the current password, or OIDC-only user."),
    ] = False,
    file: FileOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Add a user or update one's role and password (hashed with bcrypt)."""
    if role not in ROLES:
        fail(
            f"--role must be one of {', '.join(ROLES)}",
            code=EXIT_IO,
            as_json=as_json,
            error="usage",
        )
    path = _auth_file(file, as_json)
    store = _store(path, allow_missing=True, as_json=as_json)
    password = None if no_password else _read_password(password_stdin, as_json)
    if password is None and store.get(name) is None and email is None:
        fail(
            "a new user needs a password, or an --email for OpenID Connect",
            code=EXIT_IO,
            as_json=as_json,
            error="usage",
        )
    try:
        created = store.add(name, role=_role(role), password=password, email=email)
        store.save()
    except (AuthConfigError, PasswordPolicyError) as exc:
        fail(str(exc), code=EXIT_INVALID, as_json=as_json, error="invalid_user")
    except OSError as exc:
        fail(
            f"cannot write {path}: {exc.strerror}", code=EXIT_IO, as_json=as_json, error="io_error"
        )
    status = "added" if created else "updated"
    emit(
        {"status": status, "user": name, "role": role, "file": str(path)},
        as_json=as_json,
        human=f"{status} user {name} ({role}) in {path}",
    )


def _role(value: str) -> Role:
    for r in ROLES:
        if r == value:
            return r
    raise AuthConfigError(f"role must be one of {', '.join(ROLES)}")


def list_users(file: FileOpt = None, as_json: JsonOpt = False) -> None:
    """List users and roles (never the password hashes)."""
    path = _auth_file(file, as_json)
    store = _store(path, allow_missing=False, as_json=as_json)
    rows = [
        {
            **u.to_dict(),
            "password": store.entries[u.username].password_hash is not None,
            "disabled": store.entries[u.username].disabled,
        }
        for u in store.users()
    ]
    for row in rows:
        row.pop("source", None)
    human = (
        "\n".join(f"{r['username']:<24} {r['role']:<9} {r['email'] or ''}" for r in rows)
        or "no users"
    )
    emit({"users": rows, "file": str(path)}, as_json=as_json, human=human)


def remove_user(
    name: Annotated[str, typer.Argument(help="User name.")],
    file: FileOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Remove a user from the users file."""
    path = _auth_file(file, as_json)
    store = _store(path, allow_missing=False, as_json=as_json)
    if not store.remove(name):
        fail(f"no user named {name!r}", code=EXIT_IO, as_json=as_json, error="unknown_user")
    try:
        store.save()
    except OSError as exc:
        fail(
            f"cannot write {path}: {exc.strerror}", code=EXIT_IO, as_json=as_json, error="io_error"
        )
    emit({"status": "removed", "user": name}, as_json=as_json, human=f"removed user {name}")


def register(app: typer.Typer) -> None:
    """Attach ``groundwatch users ...``."""
    users_app.command("add")(add_user)
    users_app.command("list")(list_users)
    users_app.command("remove")(remove_user)
    app.add_typer(users_app, name="users")
