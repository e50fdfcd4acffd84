"""API keys of the HTTP API: stored by the SHA-256 of their token (never the token), listed,
revoked, looked up.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from sqlalchemy import select
from sqlmodel import Session, col

from core.storage.models import ApiKey


def create_api_key(
    *, session: Session, name: str, scopes: Sequence[str], token_hash: str
) -> ApiKey:
    """Store a new API key: its name, scopes and the SHA-256 of its token (never the token)."""
    key = ApiKey(
        name=name,
        token_hash=token_hash,
        scopes=",".join(scopes),
        created_at=datetime.now(UTC),
    )
    session.add(key)
    session.flush()
    return key


def list_api_keys(*, session: Session) -> list[ApiKey]:
    """Every API key, oldest first (revoked ones included)."""
    return list(session.execute(select(ApiKey).order_by(col(ApiKey.id))).scalars())


def revoke_api_key(*, session: Session, key_id: int) -> ApiKey:
    """Revoke a key (a key revoked already keeps its first revocation time).

    Raises:
        LookupError: no key with this id.
    """
    key = session.get(ApiKey, key_id)
    if key is None:
        raise LookupError(f"no API key with id {key_id}")
    if key.revoked_at is None:
        key.revoked_at = datetime.now(UTC)
        session.add(key)
        session.flush()
    return key


def api_key_by_hash(*, session: Session, token_hash: str) -> ApiKey | None:
    """The key whose token has this SHA-256 (revoked or not), or None."""
    stmt = select(ApiKey).where(col(ApiKey.token_hash) == token_hash)
    return session.execute(stmt).scalar_one_or_none()


__all__ = [
    "api_key_by_hash",
    "create_api_key",
    "list_api_keys",
    "revoke_api_key",
]
