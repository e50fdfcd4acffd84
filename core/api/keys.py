"""API keys: scopes, token generation and hashing, and the key a request presents.

A token is 32 random bytes (URL-safe base64, prefixed ``gw_``); only its SHA-256 is stored
(:class:`~core.storage.models.ApiKey`), so a token is shown once, at creation.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

Scope = Literal["ingest", "read", "review", "admin"]
SCOPES: tuple[Scope, ...] = get_args(Scope)
TOKEN_PREFIX = "gw_"


def new_token() -> str:
    """A fresh random token (32 bytes of entropy)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    """SHA-256 of a token, hex: what is stored and looked up."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def parse_scopes(value: str | Sequence[str]) -> tuple[Scope, ...]:
    """Scopes from ``"ingest,read"`` or a list, in the canonical order, without repeats.

    Raises:
        ValueError: an unknown or missing scope, naming the allowed ones.
    """
    items = value.split(",") if isinstance(value, str) else list(value)
    wanted = {item.strip() for item in items if item.strip()}
    unknown = sorted(wanted - set(SCOPES))
    if unknown:
        raise ValueError(f"unknown scope {unknown[0]!r}; allowed: {', '.join(SCOPES)}")
    if not wanted:
        raise ValueError(f"at least one scope is needed; allowed: {', '.join(SCOPES)}")
    return tuple(s for s in SCOPES if s in wanted)


@dataclass(frozen=True, slots=True)
class Caller:
    """The key a request was made with: its id, name (the audit actor) and scopes."""

    key_id: int
    name: str
    scopes: tuple[Scope, ...]

    def allows(self, scope: Scope) -> bool:
        """Whether the key may act in ``scope`` (``admin`` may do everything)."""
        return scope in self.scopes or "admin" in self.scopes
