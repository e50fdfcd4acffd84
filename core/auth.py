"""Users, roles and permissions of the dashboard; de-identification of record text.

Users live in a YAML file (``GROUNDWATCH_AUTH_FILE``) with bcrypt-hashed passwords::

    users:
      alice:
        role: reviewer            # reviewer | analyst | admin
        password: "$2b$12$..."    # bcrypt hash, written by `groundwatch users add`
        email: alice@example.org  # optional; matches OpenID Connect logins
        name: Alice Rivera        # optional display name

Roles decide what a user may do (:data:`PERMISSIONS`):

- ``reviewer`` reads record text, gives verdicts and stores uploaded answers as new records;
- ``analyst`` may analyse an upload but stores nothing, and sees aggregates only: record text
  (queries, answers, sources, statements) is
  withheld, not masked, because pattern-based masking cannot promise to catch every name;
- ``admin`` manages users, reads the audit trail, may replace a stored record (audited), and
  may do everything a reviewer does.

This module is storage- and Streamlit-free; :mod:`dashboard.auth` draws the login.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

import bcrypt
import yaml

log = logging.getLogger(__name__)

Role = Literal["reviewer", "analyst", "admin"]
ROLES: tuple[Role, ...] = get_args(Role)

Action = Literal[
    "view_aggregates",
    "view_text",
    "give_verdict",
    "export_text",
    "upload",
    "store_record",
    "replace_record",
    "manage_users",
    "view_audit",
    "apply_threshold",
]
ACTIONS: tuple[Action, ...] = get_args(Action)

PERMISSIONS: Mapping[Role, frozenset[Action]] = {
    "analyst": frozenset({"view_aggregates", "upload"}),
    "reviewer": frozenset(
        {"view_aggregates", "view_text", "give_verdict", "export_text", "upload", "store_record"}
    ),
    "admin": frozenset(ACTIONS),
}

USERNAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
_BCRYPT_RE = re.compile(r"^\$2[aby]\$\d{2}\$[./A-Za-z0-9]{53}$")
BCRYPT_MAX_BYTES = 72
MIN_PASSWORD_CHARS = 8
MAX_AUTH_FILE_BYTES = 1_000_000
DEFAULT_BCRYPT_COST = 12


@functools.lru_cache(maxsize=4)
def _dummy_hash(cost: int) -> str:
    """A hash checked when the user is unknown, of the same bcrypt cost as the users' own, so
    that a wrong name takes as long as a wrong password (no user names found by timing)."""
    return bcrypt.hashpw(b"groundwatch-dummy-password", bcrypt.gensalt(rounds=cost)).decode()


def bcrypt_cost(password_hash: str) -> int:
    """The cost factor written in a bcrypt hash (``$2b$12$...`` -> 12)."""
    return int(password_hash.split("$")[2])


class AuthConfigError(ValueError):
    """The users file is missing, unreadable or invalid (message names file, user, field)."""


class PasswordPolicyError(ValueError):
    """A new password is too short or too long for bcrypt."""


@dataclass(frozen=True, slots=True)
class User:
    """A logged-in (or configured) user. ``source``: how the identity was established."""

    username: str
    role: Role
    email: str | None = None
    display_name: str | None = None
    source: Literal["password", "oidc", "local"] = "password"

    @property
    def label(self) -> str:
        """Name shown in the app and stored with verdicts and audit events."""
        return self.username

    def to_dict(self) -> dict[str, str | None]:
        """JSON-safe fields (never the password hash)."""
        return {
            "username": self.username,
            "role": self.role,
            "email": self.email,
            "display_name": self.display_name,
            "source": self.source,
        }


@dataclass(frozen=True, slots=True)
class UserEntry:
    """One user of the users file, with the bcrypt hash (None: OIDC-only user)."""

    user: User
    password_hash: str | None
    disabled: bool = False


LOCAL_ADMIN = User(username="local-admin", role="admin", source="local")

#: Who an audit event names when nobody is signed in.
ANONYMOUS = "anonymous"
#: The longest reviewer name kept (a name typed where no login says who is acting).
MAX_REVIEWER_CHARS = 80


def clean_reviewer(value: object) -> str:
    """A typed reviewer name as stored: whitespace collapsed, at most MAX_REVIEWER_CHARS."""
    return " ".join(str(value or "").split())[:MAX_REVIEWER_CHARS]


def actor_for(user: User | None, reviewer: str = "") -> str:
    """The name audit events of ``user`` are stored under.

    - a logged-in user (password or OIDC): the user name, e.g. ``rita`` (``reviewer`` is
      ignored: the login says who it is);
    - the local user when no login is configured: its name, followed by the reviewer name
      typed in the dashboard in parentheses when one is given, e.g. ``local-admin (Dr.
      Rivera)`` (the typed name is not checked, so it is kept apart from the identity);
    - nobody signed in: ``anonymous`` (pages refuse such a session before they audit).
    """
    if user is None:
        return ANONYMOUS
    if user.source != "local":
        return user.label
    typed = clean_reviewer(reviewer)
    return f"{user.label} ({typed})" if typed else user.label


def can(user: User | None, action: Action) -> bool:
    """Whether ``user`` may perform ``action`` (an anonymous user may do nothing)."""
    if user is None:
        return False
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}; known: {', '.join(ACTIONS)}")
    return action in PERMISSIONS[user.role]


# --------------------------------------------------------------------------- passwords


def check_password_policy(password: str) -> None:
    """Refuse passwords bcrypt cannot hash faithfully or that are too short.

    Raises:
        PasswordPolicyError: naming the rule that failed (never the password).
    """
    if len(password) < MIN_PASSWORD_CHARS:
        raise PasswordPolicyError(f"password must have at least {MIN_PASSWORD_CHARS} characters")
    if len(password.encode("utf-8")) > BCRYPT_MAX_BYTES:
        raise PasswordPolicyError(f"password must be at most {BCRYPT_MAX_BYTES} bytes in UTF-8")
    if "\x00" in password:
        raise PasswordPolicyError("password must not contain a NUL character")


def hash_password(password: str, *, rounds: int = DEFAULT_BCRYPT_COST) -> str:
    """The bcrypt hash of ``password`` (after :func:`check_password_policy`)."""
    check_password_policy(password)
    return bcrypt.hashpw(password.encode("utf-8"), bcrypt.gensalt(rounds=rounds)).decode("ascii")


def check_password(password: str, password_hash: str) -> bool:
    """Whether ``password`` matches the bcrypt hash (False for any malformed input)."""
    raw = password.encode("utf-8")
    if not raw or len(raw) > BCRYPT_MAX_BYTES or not _BCRYPT_RE.match(password_hash):
        return False
    try:
        return bool(bcrypt.checkpw(raw, password_hash.encode("ascii")))
    except ValueError:
        return False


# --------------------------------------------------------------------------- users file


class UserStore:
    """The users of one YAML file, validated on load.

    Args:
        path: the users file (``GROUNDWATCH_AUTH_FILE``).
        allow_missing: treat a missing file as empty (for ``groundwatch users add``).

    Raises:
        AuthConfigError: naming the file, the user and the field that is wrong.
    """

    def __init__(self, path: Path | str, *, allow_missing: bool = False) -> None:
        self.path = Path(path)
        self.entries: dict[str, UserEntry] = self._load(allow_missing)

    def _load(self, allow_missing: bool) -> dict[str, UserEntry]:
        p = self.path
        if not p.exists():
            if allow_missing:
                return {}
            raise AuthConfigError(f"users file not found: {p} (GROUNDWATCH_AUTH_FILE)")
        if not p.is_file():
            raise AuthConfigError(f"users file is not a regular file: {p}")
        if p.stat().st_size > MAX_AUTH_FILE_BYTES:
            raise AuthConfigError(f"users file is above {MAX_AUTH_FILE_BYTES} bytes: {p}")
        try:
            text = p.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise AuthConfigError(f"{p}: invalid UTF-8 at byte {exc.start}") from None
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            raise AuthConfigError(f"{p}: not valid YAML{where}") from None
        return parse_users(doc, where=str(p))

    def get(self, username: str) -> UserEntry | None:
        """The entry of ``username`` (case-sensitive), or None."""
        return self.entries.get(username)

    def find_by_email(self, email: str) -> UserEntry | None:
        """The entry whose email matches (case-insensitive), or None."""
        wanted = email.strip().lower()
        for entry in self.entries.values():
            if entry.user.email and entry.user.email.lower() == wanted:
                return entry
        return None

    def authenticate(self, username: str, password: str) -> User | None:
        """The user when name and password match an enabled entry, else None.

        An unknown name is checked against a dummy hash so that it takes as long as a wrong
        password (no user enumeration by timing).
        """
        entry = self.entries.get(username.strip())
        if entry is None or entry.password_hash is None or entry.disabled:
            costs = [bcrypt_cost(e.password_hash) for e in self.entries.values() if e.password_hash]
            check_password(password, _dummy_hash(max(costs, default=DEFAULT_BCRYPT_COST)))
            log.info("login refused (user %s)", "unknown" if entry is None else "not allowed")
            return None
        if not check_password(password, entry.password_hash):
            log.info("login refused (wrong password)")
            return None
        return entry.user

    def users(self) -> list[User]:
        """All configured users, by name (no hashes)."""
        return [self.entries[k].user for k in sorted(self.entries)]

    def add(
        self,
        username: str,
        *,
        role: Role,
        password: str | None,
        email: str | None = None,
        display_name: str | None = None,
    ) -> bool:
        """Add or update a user in memory; returns True when the user is new.

        ``password=None`` keeps an existing user's hash (role change) or creates an
        OIDC-only user.
        """
        if not USERNAME_RE.match(username):
            raise AuthConfigError(
                "user name must be 1-64 characters of letters, digits, '.', '_', '@', '-' "
                "and start with a letter or digit"
            )
        if role not in ROLES:
            raise AuthConfigError(f"role must be one of {', '.join(ROLES)}")
        old = self.entries.get(username)
        password_hash = hash_password(password) if password is not None else None
        if password_hash is None and old is not None:
            password_hash = old.password_hash
        self.entries[username] = UserEntry(
            user=User(
                username=username,
                role=role,
                email=email if email is not None else (old.user.email if old else None),
                display_name=display_name
                if display_name is not None
                else (old.user.display_name if old else None),
            ),
            password_hash=password_hash,
            disabled=False,
        )
        return old is None

    def remove(self, username: str) -> bool:
        """Remove a user in memory; returns whether it existed."""
        return self.entries.pop(username, None) is not None

    def save(self) -> None:
        """Write the file atomically with owner-only permissions (0600)."""
        doc: dict[str, Any] = {"users": {}}
        for name in sorted(self.entries):
            e = self.entries[name]
            item: dict[str, Any] = {"role": e.user.role}
            if e.password_hash is not None:
                item["password"] = e.password_hash
            if e.user.email:
                item["email"] = e.user.email
            if e.user.display_name:
                item["name"] = e.user.display_name
            if e.disabled:
                item["disabled"] = True
            doc["users"][name] = item
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".users-", suffix=".yaml", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write("# Groundwatch users: manage with `groundwatch users add`.\n")
                yaml.safe_dump(doc, fh, sort_keys=False, allow_unicode=True)
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def parse_users(doc: object, *, where: str = "users file") -> dict[str, UserEntry]:
    """Validate a decoded users document.

    Accepts ``users: {name: {role, password, email, name, disabled}}`` and, for files made
    for streamlit-authenticator, ``credentials: usernames: {name: {password, email, roles}}``.

    Raises:
        AuthConfigError: naming the user and the field that is wrong.
    """
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise AuthConfigError(f"{where}: expected a mapping with a 'users' key")
    if "users" in doc:
        raw = doc["users"]
        key = "users"
    elif isinstance(doc.get("credentials"), dict) and "usernames" in doc["credentials"]:
        raw = doc["credentials"]["usernames"]
        key = "credentials.usernames"
    else:
        raise AuthConfigError(f"{where}: expected a 'users' mapping")
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise AuthConfigError(f"{where}: '{key}' must map user names to settings")
    out: dict[str, UserEntry] = {}
    for name, item in raw.items():
        label = f"{where}: {key}.{name}"
        if not isinstance(name, str) or not USERNAME_RE.match(name):
            raise AuthConfigError(
                f"{where}: {key}: invalid user name (letters, digits, '.', '_', '@', '-'; "
                "at most 64)"
            )
        if not isinstance(item, dict):
            raise AuthConfigError(f"{label}: expected a mapping of settings")
        role = item.get("role")
        if role is None and isinstance(item.get("roles"), list) and item["roles"]:
            role = item["roles"][0]
        if role not in ROLES:
            raise AuthConfigError(f"{label}.role: must be one of {', '.join(ROLES)}")
        pw = item.get("password")
        if pw is not None and (not isinstance(pw, str) or not _BCRYPT_RE.match(pw)):
            raise AuthConfigError(
                f"{label}.password: not a bcrypt hash (set it with `groundwatch users add`)"
            )
        email = item.get("email")
        if email is not None and (not isinstance(email, str) or "@" not in email):
            raise AuthConfigError(f"{label}.email: not an e-mail address")
        display = item.get("name")
        if display is not None and not isinstance(display, str):
            raise AuthConfigError(f"{label}.name: must be text")
        disabled = item.get("disabled", False)
        if not isinstance(disabled, bool):
            raise AuthConfigError(f"{label}.disabled: must be true or false")
        if pw is None and email is None:
            raise AuthConfigError(f"{label}: needs a password or an email (OpenID Connect)")
        out[name] = UserEntry(
            user=User(username=name, role=role, email=email, display_name=display),
            password_hash=pw,
            disabled=disabled,
        )
    return out


# --------------------------------------------------------------------------- de-identification

_NAME = r"[A-Z][a-zA-Z'-]+(?:\s+[A-Z][a-zA-Z'-]+){0,2}"
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?"
_DEID_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"), "[EMAIL]"),
    (re.compile(r"\bhttps?://\S+", re.IGNORECASE), "[URL]"),
    (
        re.compile(
            r"\b(MRN|medical record(?: number)?|record (?:no|number)|patient id|ssn|nhs"
            r"(?: number)?)(\s*[:#]?\s*)[A-Z0-9][A-Z0-9-]{3,}\b",
            re.IGNORECASE,
        ),
        r"\1\2[ID]",
    ),
    (re.compile(r"\b\d{3}-\d{2}-\d{4}\b"), "[ID]"),
    (
        re.compile(
            r"(?<![\w-])(?:\+?\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)|\d{2,4})[\s.-]\d{3}[\s.-]?\d{3,4}\b"
        ),
        "[PHONE]",
    ),
    (
        re.compile(
            r"\b(?:\d{4}-\d{1,2}-\d{1,2}|\d{1,2}[/.]\d{1,2}[/.]\d{2,4}|"
            rf"(?:\d{{1,2}}\s+)?{_MONTH}(?:\s+\d{{1,2}}(?:st|nd|rd|th)?)?,?\s+\d{{4}})\b",
            re.IGNORECASE,
        ),
        "[DATE]",
    ),
    (re.compile(r"\b(?=[A-Z0-9-]*\d)[A-Z]{1,3}-?\d{5,}\b"), "[ID]"),
    (re.compile(r"\b\d{6,}\b"), "[ID]"),
    (re.compile(rf"\b(Mr|Mrs|Ms|Miss|Mx|Dr|Prof)(\.?\s+){_NAME}"), r"\1\2[NAME]"),
    (
        re.compile(rf"\b((?:[Nn]ame|[Pp]atient|[Ss]igned by|[Ss]een by)\s*:?\s+){_NAME}"),
        r"\1[NAME]",
    ),
)


def deidentify(text: str) -> str:
    """Mask e-mails, URLs, record numbers and other long ids, phones, dates and titled names.

    Best effort, for text a user chose to share (e.g. a report sent to an analyst); the
    dashboard does not rely on it: analysts are never sent record text at all. Masks are
    ``[EMAIL]``, ``[URL]``, ``[ID]``, ``[PHONE]``, ``[DATE]``, ``[NAME]``.
    """
    out = text
    for pattern, replacement in _DEID_PATTERNS:
        out = pattern.sub(replacement, out)
    return out


__all__ = [
    "ACTIONS",
    "ANONYMOUS",
    "LOCAL_ADMIN",
    "MAX_REVIEWER_CHARS",
    "PERMISSIONS",
    "ROLES",
    "Action",
    "AuthConfigError",
    "PasswordPolicyError",
    "Role",
    "User",
    "UserEntry",
    "UserStore",
    "actor_for",
    "can",
    "check_password",
    "check_password_policy",
    "clean_reviewer",
    "deidentify",
    "hash_password",
    "parse_users",
]
