"""The HTTP API's pure parts: scopes, tokens and the opaque page cursor."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta, timezone

import pytest

from core.api.keys import TOKEN_PREFIX, Caller, new_token, parse_scopes, token_hash
from core.api.views import CursorError, decode_cursor, encode_cursor


def test_scopes_are_parsed_in_canonical_order_without_repeats() -> None:
    assert parse_scopes("read, ingest,read") == ("ingest", "read")
    assert parse_scopes(["admin", "review"]) == ("review", "admin")
    with pytest.raises(ValueError, match="unknown scope 'root'; allowed: ingest, read"):
        parse_scopes("read,root")
    with pytest.raises(ValueError, match="at least one scope"):
        parse_scopes(" , ")


def test_admin_may_do_everything_others_only_their_scopes() -> None:
    reader = Caller(1, "r", ("read",))
    assert reader.allows("read")
    assert not reader.allows("ingest")
    admin = Caller(2, "a", ("admin",))
    assert all(admin.allows(s) for s in ("ingest", "read", "review", "admin"))


def test_tokens_are_random_and_only_their_hash_is_kept() -> None:
    a, b = new_token(), new_token()
    assert a != b
    assert a.startswith(TOKEN_PREFIX)
    assert len(a) >= 40
    assert token_hash(a) == token_hash(a)
    assert len(token_hash(a)) == 64
    assert a not in token_hash(a)


def test_a_cursor_round_trips_and_a_forged_one_is_refused() -> None:
    at = datetime(2026, 1, 5, 9, 0, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
    cursor = encode_cursor(at, "abc123")
    assert "=" not in cursor
    back, conv_id = decode_cursor(cursor)
    assert back == at
    assert back.tzinfo is not None
    assert back.utcoffset() == timedelta(0)
    assert conv_id == "abc123"
    assert decode_cursor(encode_cursor(datetime(2026, 1, 1, tzinfo=UTC), "x"))[1] == "x"
    forged = [
        "not-base64!",
        base64.urlsafe_b64encode(b'{"a": 1}').decode(),
        base64.urlsafe_b64encode(b'["2026-01-01", "x"]').decode(),  # naive time
        base64.urlsafe_b64encode(b'["2026-01-01T00:00:00+00:00", 5]').decode(),
        base64.urlsafe_b64encode(b'["yesterday", "x"]').decode(),
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
        "",
    ]
    for value in forged:
        with pytest.raises(CursorError):
            decode_cursor(value)
