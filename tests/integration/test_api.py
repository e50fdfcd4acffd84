"""The HTTP API against a real uvicorn server on a free port, driven with httpx, on SQLite and
PostgreSQL: every route, keys and scopes, body limits, the import's bad-input corpus (each a
4xx naming the field, nothing stored), idempotency, cursor pagination, /metrics parsed by
prometheus-client, and no patient text in any log line or error body.

The pipeline runs the real embedding model (loaded once per process: every app of this
module reuses it) with the rules deciding grounding (``GROUNDWATCH_LEARNED_VERIFIER=false``),
to keep the module fast.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from alembic.script import ScriptDirectory
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import func, select
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from core.api import create_app
from core.api.keys import new_token, token_hash
from core.config import load_settings, reset_settings_cache
from core.storage import models as m
from core.storage import repo
from core.storage.db import alembic_config, get_engine, read_session, write_session
from tests.integration.api_server import Server, add_key, running_api, serve

pytestmark = [pytest.mark.model, pytest.mark.timeout(600)]

SENTINEL = "Zebrafinch-Quokka-7731"  # patient text that must never reach a log or error body
MAX_BATCH = 10
MAX_BODY = 200_000


def record(i: int, **over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": f"ext-{i}",
        "patient_id": f"p-{i % 3}",
        "timestamp": f"2026-01-{(i % 28) + 1:02d}T09:00:00Z",
        "query": "What is she taking for diabetes?",
        "answer": "She takes metformin 500 mg twice daily. She had an MRI of the left knee.",
        "sources": [{"id": "note-1", "text": "Metformin 500 mg b.i.d., lisinopril 10 mg daily."}],
        "model": ("model-a", "model-b")[i % 2],
    }
    base.update(over)
    return base


@pytest.fixture
def api(engine: Engine, db_url: str) -> Iterator[Server]:
    """A real uvicorn server on a free port over the fresh, migrated database, ready."""
    settings = load_settings(
        database_url=db_url,
        learned_verifier=False,
        api_max_batch=MAX_BATCH,
        api_max_body_bytes=MAX_BODY,
    )
    keys = {
        "ingest-read": ["ingest", "read"],
        "reader": ["read"],
        "ingester": ["ingest"],
        "admin": ["admin"],
    }
    with running_api(engine, settings, keys) as server:
        yield server


def _audit(engine: Engine, action: str) -> list[m.AuditEvent]:
    with read_session(engine) as s:
        return repo.list_audit_events(session=s, action=action)


def _declared(c: httpx.Client, model: str) -> set[str]:
    """The fields the OpenAPI document declares for a public model."""
    return set(c.get("/openapi.json").json()["components"]["schemas"][model]["properties"])


# --------------------------------------------------------------------------- answers


def test_an_answer_is_checked_stored_and_read_back_idempotently(api: Server) -> None:
    with api.client() as c, api.client("admin") as admin:
        r = c.post("/v1/answers", json=record(1))
        assert r.status_code == 201, r.text
        body = r.json()
        assert body["store_status"] == "imported"
        assert body["id"] == "ext-1"
        assert body["flagged"] is True
        assert set(body["scores"]) == {
            "grounding",
            "consistency",
            "confidence",
            "hallucination_risk",
            "overall_quality",
        }
        assert body["scores"]["grounding"] == 0.5
        assert body["risk"]["level"]
        assert body["risk"]["recommendation"]
        first, second = body["statements"]
        assert first["status"] == "grounded"
        assert first["source_id"] == "note-1"
        assert (first["evidence_start"], first["evidence_end"]) == (0, 48)
        assert second["status"] == "unsupported"
        assert second["method"]
        assert 0 <= second["confidence"] <= 1
        assert "MRI" in [w["text"] for w in second["unsupported_words"]]
        assert second["kind"]
        assert second["severity"]
        assert body["contradictions"] == []
        assert body["checks"]["grounding"]["status"] == "ok"
        # exactly the fields the OpenAPI document declares
        assert set(body) == _declared(c, "AnswerStored")
        assert set(body["scores"]) == _declared(c, "Scores")
        assert set(body["risk"]) == _declared(c, "Risk")
        assert set(first) == set(second) == _declared(c, "StatementPublic")
        assert set(second["unsupported_words"][0]) == _declared(c, "WordSpan")

        again = c.post("/v1/answers", json=record(1))
        assert again.status_code == 200
        assert again.json()["store_status"] == "unchanged"
        assert again.json()["statements"] == body["statements"]
        assert api.count() == 1

        edited = record(1, answer="She takes metformin 500 mg twice daily.")
        refused = c.post("/v1/answers", json=edited)
        assert refused.status_code == 409
        assert refused.json()["error"] == "conflict"
        assert "field id" in refused.json()["detail"]
        assert c.get("/v1/answers/ext-1").json()["answer"] == record(1)["answer"]

        replaced = admin.post("/v1/answers", json=edited)
        assert replaced.status_code == 200, replaced.text
        assert replaced.json()["store_status"] == "updated"
        assert len(replaced.json()["statements"]) == 1
        assert api.count() == 1

        got = c.get("/v1/answers/ext-1")
        assert got.status_code == 200
        assert set(got.json()) == _declared(c, "AnswerPublic")
        assert got.json()["answer"] == edited["answer"]
        assert got.json()["statements"] == replaced.json()["statements"]
        missing = c.get("/v1/answers/nope")
        assert missing.status_code == 404
        assert missing.json() == {"error": "not_found", "detail": "no answer with this id"}

    views = _audit(api.engine, "view")
    assert [e.actor for e in views] == ["ingest-read", "ingest-read"]  # the 404 read nothing
    assert all(e.target_type == "conversation" for e in views)
    assert {e.actor for e in _audit(api.engine, "api_ingest")} == {"ingest-read", "admin"}


def test_a_later_answer_contradicting_an_earlier_one_is_reported(api: Server) -> None:
    with api.client() as c:
        c.post(
            "/v1/answers",
            json=record(
                1,
                patient_id="p-x",
                timestamp="2026-01-01T09:00:00Z",
                answer="She takes warfarin 5 mg daily.",
                sources=[{"id": "n", "text": "Warfarin 5 mg daily."}],
            ),
        ).raise_for_status()
        r = c.post(
            "/v1/answers",
            json=record(
                2,
                patient_id="p-x",
                timestamp="2026-02-01T09:00:00Z",
                answer="She takes warfarin 10 mg daily.",
                sources=[{"id": "n", "text": "Warfarin 10 mg daily."}],
            ),
        )
        assert r.status_code == 201, r.text
        found = r.json()["contradictions"]
        assert found
        assert found[0]["check_type"]
        assert set(found[0]) == _declared(c, "ContradictionPublic")
        assert r.json()["flagged"] is True
        assert c.get("/v1/answers/ext-2").json()["contradictions"] == found


def test_a_batch_lands_whole_or_not_at_all(api: Server) -> None:
    with api.client() as c:
        r = c.post("/v1/answers/batch", json={"records": [record(i) for i in range(3)]})
        assert r.status_code == 200, r.text
        assert r.json()["counts"] == {"imported": 3, "updated": 0, "unchanged": 0}
        assert [v["id"] for v in r.json()["results"]] == ["ext-0", "ext-1", "ext-2"]

        again = c.post("/v1/answers/batch", json={"records": [record(i) for i in range(4)]})
        assert again.json()["counts"] == {"imported": 1, "updated": 0, "unchanged": 3}
        assert api.count() == 4

        bad = [record(10), record(11, answer=5), record(12), record(13, timestamp="0001-01-01")]
        r = c.post("/v1/answers/batch", json={"records": bad})
        assert r.status_code == 422
        assert r.json()["error"] == "invalid_records"
        detail = r.json()["detail"]
        assert [d["index"] for d in detail] == [1, 3]
        assert "field answer" in detail[0]["error"]
        assert "field timestamp" in detail[1]["error"]

        dup = c.post("/v1/answers/batch", json={"records": [record(20), record(20)]})
        assert dup.status_code == 422
        assert dup.json()["detail"] == [
            {"index": 1, "error": "field id: duplicate of the record at index 0"}
        ]
        many = c.post(
            "/v1/answers/batch", json={"records": [record(100 + i) for i in range(MAX_BATCH + 1)]}
        )
        assert many.status_code == 413
        assert "GROUNDWATCH_API_MAX_BATCH" in many.json()["detail"]
        conflict = c.post(
            "/v1/answers/batch", json={"records": [record(30), record(2, answer="Edited.")]}
        )
        assert conflict.status_code == 409
        assert "index 1" in conflict.json()["detail"]
        for shape in ([record(40)], {"records": []}, {"records": "x"}):
            r = c.post("/v1/answers/batch", json=shape)
            assert r.status_code == 422, shape
            assert "field records" in r.json()["detail"]
    assert api.count() == 4


def test_concurrent_clients_lose_and_duplicate_nothing(api: Server) -> None:
    """Clients posting side by side, each also posting one record they all share: every
    record stored once, the shared one created by exactly one request, no 5xx."""
    clients, each = 4, 5

    def work(n: int) -> list[int]:
        codes = []
        with api.client() as c:
            for i in range(each):
                codes.append(c.post("/v1/answers", json=record(100 * (n + 1) + i)).status_code)
                codes.append(c.post("/v1/answers", json=record(999)).status_code)
        return codes

    with ThreadPoolExecutor(clients) as pool:
        codes = [code for part in pool.map(work, range(clients)) for code in part]
    assert set(codes) <= {200, 201}, codes
    assert codes.count(201) == clients * each + 1
    assert api.count() == clients * each + 1


# --------------------------------------------------------------------------- keys


def test_keys_and_scopes(api: Server) -> None:
    revoked = add_key(api.engine, "gone", ["admin"])
    with write_session(api.engine) as s:
        key_id = max(int(k.id or 0) for k in repo.list_api_keys(session=s))
        repo.revoke_api_key(session=s, key_id=key_id)
    with httpx.Client(base_url=api.base_url) as anon:
        r = anon.post("/v1/answers", json=record(1))
        assert r.status_code == 401
        assert r.headers["www-authenticate"] == "Bearer"
        assert r.json()["error"] == "unauthorized"
        for header in (f"Bearer {new_token()}", f"Bearer {revoked}", "Basic abc", "Bearer"):
            r = anon.get("/v1/answers", headers={"Authorization": header})
            assert r.status_code == 401, header
        assert anon.get("/v1/answers/ext-1").status_code == 401
        assert anon.post("/v1/answers/batch", json={"records": []}).status_code == 401
        assert anon.get("/v1/health").json() == {"status": "ok"}
        assert anon.get("/metrics").status_code == 200
    with api.client("reader") as reader, api.client("ingester") as ingester:
        r = reader.post("/v1/answers", json=record(1))
        assert r.status_code == 403
        assert r.json() == {"error": "forbidden", "detail": "this API key lacks the 'ingest' scope"}
        assert ingester.post("/v1/answers", json=record(1)).status_code == 201
        assert ingester.get("/v1/answers").status_code == 403
        assert ingester.get("/v1/answers/ext-1").status_code == 403
        assert reader.get("/v1/answers/ext-1").status_code == 200
    assert api.count() == 1


def test_keys_command_creates_lists_and_revokes(use_db: str) -> None:
    from core.cli import app

    runner = CliRunner()
    made = runner.invoke(
        app, ["keys", "create", "--name", "ehr", "--scopes", "read,ingest", "--json"]
    )
    assert made.exit_code == 0, made.output
    created = json.loads(made.stdout)
    assert created["scopes"] == ["ingest", "read"]
    token = created["token"]
    engine = get_engine(use_db)
    with read_session(engine) as s:
        (stored,) = repo.list_api_keys(session=s)
        assert stored.token_hash == token_hash(token)
        assert token not in json.dumps(stored.model_dump(mode="json"))
    listed = json.loads(runner.invoke(app, ["keys", "list", "--json"]).stdout)
    assert listed["keys"][0]["name"] == "ehr"
    assert listed["keys"][0]["revoked_at"] is None
    assert token not in json.dumps(listed)
    revoked = runner.invoke(app, ["keys", "revoke", str(created["id"]), "--json"])
    assert revoked.exit_code == 0
    assert json.loads(runner.invoke(app, ["keys", "list", "--json"]).stdout)["keys"][0][
        "revoked_at"
    ]
    bad = runner.invoke(app, ["keys", "create", "--name", "x", "--scopes", "root", "--json"])
    assert bad.exit_code == 2
    assert "allowed: ingest, read, review, admin" in json.loads(bad.stdout)["message"]
    assert runner.invoke(app, ["keys", "revoke", "999", "--json"]).exit_code == 1


# --------------------------------------------------------------------------- bad bodies


def _raw(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj).encode()


BAD_BODIES: list[tuple[str, bytes, int, str]] = [
    ("malformed JSON", b'{"id": "x", ', 400, "line 1"),
    ("empty body", b"", 400, "empty"),
    ("not an object", b'["' + SENTINEL.encode() + b'"]', 422, "expected a JSON object"),
    ("invalid UTF-8", b'{"id": "\xff\xfe"}', 400, "invalid UTF-8 at byte"),
    ("NUL byte", _raw(record(1)).replace(b"What", b"\x00What"), 400, "NUL byte"),
    ("NUL escape", _raw(record(1, query=SENTINEL + "\u0000")), 400, "query: contains a NUL"),
    ("wrong type", _raw(record(1, answer=5)), 422, "field answer"),
    (
        "missing field",
        _raw({k: v for k, v in record(1).items() if k != "sources"}),
        422,
        "field sources",
    ),
    ("blank answer", _raw(record(1, answer="  ")), 422, "field answer"),
    (
        "timestamp too early",
        _raw(record(1, timestamp="0001-01-01T00:00:00Z")),
        422,
        "field timestamp",
    ),
    (
        "timestamp too late",
        _raw(record(1, timestamp="9999-12-31T23:59:59-14:00")),
        422,
        "field timestamp",
    ),
    ("timestamp not a date", _raw(record(1, timestamp=SENTINEL)), 422, "field timestamp"),
    ("duplicate keys", b'{"id": "a", "id": "b", "patient_id": "p"}', 400, "duplicate key"),
    ("NaN", _raw(record(1)).replace(b'"model-b"', b"NaN"), 400, "NaN"),
    ("huge integer", _raw(record(1)).replace(b'"model-b"', b"1" * 5000), 400, "digits"),
    (
        "huge float",
        _raw(record(1, temperature=1.0)).replace(b"1.0", b"1e400"),
        422,
        "field temperature",
    ),
    (
        "similarity out of range",
        _raw(record(1, sources=[{"id": "s", "text": SENTINEL, "similarity": 7}])),
        422,
        "field sources[0].similarity",
    ),
    (
        "source type",
        _raw(record(1, sources=[{"id": "s", "text": SENTINEL, "type": "email"}])),
        422,
        "field sources[0].type",
    ),
    (
        "duplicate source id",
        _raw(record(1, sources=[{"id": "s", "text": "a"}, {"id": "s", "text": "b"}])),
        422,
        "field sources",
    ),
    (
        "deep nesting",
        b'{"evidence": ' + b"[" * 50_000 + b"]" * 50_000 + b"}",
        400,
        "nested too deeply",
    ),
    ("lone surrogate", _raw(record(1)).replace(b"What", b"\\ud800What"), 400, "query"),
    ("evidence schema", _raw(record(1, evidence={"PHQ8_Sleep": SENTINEL})), 422, "field evidence"),
]


def test_bad_bodies_are_refused_naming_the_field_and_store_nothing(api: Server) -> None:
    with api.client() as c:
        for name, body, status, says in BAD_BODIES:
            r = c.post("/v1/answers", content=body, headers={"Content-Type": "application/json"})
            assert r.status_code == status, (name, r.status_code, r.text[:300])
            payload = r.json()
            assert set(payload) == {"error", "detail"}, name
            assert says in json.dumps(payload), (name, payload)
            assert SENTINEL not in r.text, name
        big = json.dumps(record(1, answer="x " * MAX_BODY)).encode()
        r = c.post("/v1/answers", content=big, headers={"Content-Type": "application/json"})
        assert r.status_code == 413
        assert r.json()["error"] == "body_too_large"

        def chunks() -> Iterator[bytes]:  # no Content-Length: the limit counts the stream
            for _ in range(MAX_BODY // 1000 + 2):
                yield b" " * 1000

        r = c.post("/v1/answers", content=chunks(), headers={"Content-Type": "application/json"})
        assert r.status_code == 413
        for params, field in (
            ({"limit": 500}, "limit"),
            ({"limit": 0}, "limit"),
            ({"since": SENTINEL}, "since"),
            ({"until": "0001-01-01"}, "until"),
            ({"flagged": SENTINEL}, "flagged"),
            ({"cursor": SENTINEL}, "cursor"),
        ):
            r = c.get("/v1/answers", params=params)
            assert r.status_code == 422, params
            assert field in json.dumps(r.json()), params
            assert SENTINEL not in r.text
        assert c.get("/v1/nowhere").json()["error"] == "not_found"
        assert c.delete("/v1/answers").json()["error"] == "method_not_allowed"
    assert api.count() == 0


# --------------------------------------------------------------------------- listing


def test_pagination_walks_every_answer_once_newest_first(api: Server) -> None:
    # 25 answers; several share a timestamp, so the keyset's tie-break on the id is exercised
    rows = [
        record(i, timestamp=f"2026-01-{(i % 9) + 1:02d}T09:00:00Z", patient_id=f"p-{i % 2}")
        for i in range(25)
    ]
    with api.client() as c:
        for start in range(0, 25, MAX_BATCH):
            c.post("/v1/answers/batch", json={"records": rows[start : start + MAX_BATCH]})
        assert api.count() == 25
        seen: list[dict[str, Any]] = []
        cursor = None
        pages = 0
        while True:
            params: dict[str, Any] = {"limit": 10}
            if cursor:
                params["cursor"] = cursor
            r = c.get("/v1/answers", params=params)
            assert r.status_code == 200, r.text
            pages += 1
            seen.extend(r.json()["items"])
            cursor = r.json()["next_cursor"]
            if cursor is None:
                break
        assert pages == 3
        ids = [s["id"] for s in seen]
        assert len(ids) == len(set(ids)) == 25
        keys = [(s["timestamp"], s["conversation_id"]) for s in seen]
        assert keys == sorted(keys, reverse=True)
        assert "query" not in seen[0]
        assert "answer" not in seen[0]
        assert set(seen[0]) == _declared(c, "AnswerSummaryPublic")

        def ids_for(**params: Any) -> set[str]:
            r = c.get("/v1/answers", params={"limit": 200, **params})
            assert r.status_code == 200, r.text
            return {s["id"] for s in r.json()["items"]}

        assert ids_for(patient_id="p-1") == {f"ext-{i}" for i in range(25) if i % 2}
        assert ids_for(model="model-a") == {f"ext-{i}" for i in range(25) if i % 2 == 0}
        assert ids_for(since="2026-01-09", until="2026-01-10") == {
            f"ext-{i}" for i in range(25) if i % 9 == 8
        }
        assert ids_for(since="2026-01-09T00:00:00+00:00") == ids_for(since="2026-01-09")
        assert ids_for(flagged="true") | ids_for(flagged="false") == set(ids)
        assert ids_for(patient_id="nobody") == set()
    listed = _audit(api.engine, "list")
    assert listed
    assert all(e.actor == "ingest-read" for e in listed)


# --------------------------------------------------------------------------- service


def test_health_ready_docs_and_metrics(api: Server) -> None:
    with api.client() as c:
        c.post("/v1/answers", json=record(1)).raise_for_status()
        c.post("/v1/answers", json=record(1)).raise_for_status()
        c.get("/v1/answers/ext-1").raise_for_status()
        c.get("/v1/answers/nope")
        ready = c.get("/v1/ready")
        assert ready.status_code == 200
        assert ready.json()["status"] == "ready"
        doc = c.get("/openapi.json").json()
        for path in ("/v1/answers", "/v1/answers/batch", "/v1/answers/{answer_id}", "/v1/health"):
            assert path in doc["paths"], path
        assert "ConversationRecord" in doc["components"]["schemas"]
        assert "SourceIn" in doc["components"]["schemas"]
        assert doc["paths"]["/v1/answers"]["post"]["requestBody"]["content"]
        assert "HTTPBearer" in doc["components"]["securitySchemes"]
        page = c.get("/docs").text
        assert "/docs/assets/swagger-ui-bundle.js" in page
        assert "cdn" not in page.lower()  # the docs work offline
        assert c.get("/docs/assets/swagger-ui-bundle.js").status_code == 200
        assert c.get("/docs/assets/swagger-ui.css").status_code == 200
        text = httpx.get(api.base_url + "/metrics").text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    requests = {
        (s.labels["route"], s.labels["method"], s.labels["status"]): s.value
        for s in families["groundwatch_api_requests"].samples
        if s.name.endswith("_total")
    }
    assert requests[("/v1/answers", "POST", "201")] == 1
    assert requests[("/v1/answers", "POST", "200")] == 1
    assert requests[("/v1/answers/{answer_id}", "GET", "404")] == 1
    latency = families["groundwatch_api_request_duration_seconds"]
    counts = {s.labels["route"]: s.value for s in latency.samples if s.name.endswith("_count")}
    assert counts["/v1/answers"] == 2
    checked = {
        s.labels["store_status"]: s.value
        for s in families["groundwatch_answers_checked"].samples
        if s.name.endswith("_total")
    }
    assert checked == {"imported": 1, "unchanged": 1}
    flagged = [
        s for s in families["groundwatch_answers_flagged"].samples if s.name.endswith("_total")
    ]
    assert flagged[0].value == 1
    checks = {
        (s.labels["check"], s.labels["status"])
        for s in families["groundwatch_checks"].samples
        if s.name.endswith("_total")
    }
    assert ("grounding", "ok") in checks


def test_ready_names_a_database_that_is_not_migrated(sqlite_url: str) -> None:
    engine = get_engine(sqlite_url)  # an empty database: no schema
    settings = load_settings(database_url=sqlite_url, enable_grounding_verification=False)
    server, thread, url = serve(create_app(settings=settings, engine=engine))
    try:
        with httpx.Client(base_url=url) as c:
            assert c.get("/v1/health").status_code == 200
            deadline = time.monotonic() + 60
            while True:
                r = c.get("/v1/ready")
                assert r.status_code == 503
                if "models: still loading" not in r.json()["detail"]:
                    break
                assert time.monotonic() < deadline
                time.sleep(0.1)
            assert r.json()["error"] == "not_ready"
            head = ScriptDirectory.from_config(alembic_config(sqlite_url)).get_current_head()
            assert r.json()["detail"] == [
                f"database: schema at revision none, the code needs {head} "
                "(run groundwatch init-db)"
            ]
    finally:
        server.should_exit = True
        thread.join(timeout=30)


# --------------------------------------------------------------------------- privacy


def test_no_patient_text_in_logs_or_error_bodies(
    api: Server, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    secret = record(
        7,
        patient_id=SENTINEL[:20],
        query=f"Does {SENTINEL} take insulin?",
        answer=f"{SENTINEL} takes insulin 10 units at night.",
        sources=[{"id": "n", "text": f"{SENTINEL}: insulin glargine 10 units nightly."}],
    )
    bodies: list[str] = []
    with api.client() as c, api.client("reader") as reader:
        assert c.post("/v1/answers", json=secret).status_code == 201
        assert c.get("/v1/answers/ext-7").status_code == 200
        listed = c.get("/v1/answers", params={"patient_id": SENTINEL[:20], "model": SENTINEL})
        assert listed.status_code == 200
        for r in (
            c.post("/v1/answers", json={**secret, "answer": 5}),
            c.post("/v1/answers", json=secret | {"answer": SENTINEL + " edited"}),
            c.post(
                "/v1/answers/batch", json={"records": [secret, {**secret, "timestamp": SENTINEL}]}
            ),
            c.get(f"/v1/answers/{SENTINEL}"),
            c.get("/v1/answers", params={"since": SENTINEL}),
            reader.post("/v1/answers", json=secret),
            c.post("/v1/answers", content=json.dumps(secret).encode()[:-5]),
        ):
            assert 400 <= r.status_code < 500, r.text
            bodies.append(r.text)
    logged = "\n".join(  # the server's records (httpx and httpcore log this test's requests)
        f"{rec.name} {rec.getMessage()} {rec.exc_text or ''}"
        for rec in caplog.records
        if not rec.name.startswith(("httpx", "httpcore"))
    )
    assert "POST /v1/answers 201" in logged
    assert "GET /v1/answers/{answer_id} 404" in logged
    assert SENTINEL not in logged
    assert SENTINEL[:20] not in logged
    for body in bodies:
        assert SENTINEL not in body


def test_the_api_command_serves_and_logs_no_patient_text(tmp_path: Path) -> None:
    """``groundwatch api`` as a real process: keys from ``groundwatch keys create``, one
    answer in and out, and its whole output free of the record's text and of paths."""
    url = f"sqlite:///{tmp_path / 'api.db'}"
    env = {
        **os.environ,
        "GROUNDWATCH_DATABASE_URL": url,
        "GROUNDWATCH_ENABLE_GROUNDING_VERIFICATION": "false",  # no model load: fast
        "GROUNDWATCH_LOG_LEVEL": "DEBUG",
    }
    cli = [sys.executable, "-m", "core.cli"]
    made = subprocess.run(
        [*cli, "keys", "create", "--name", "app", "--scopes", "ingest,read", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    token = json.loads(made.stdout)["token"]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [*cli, "api", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(base + "/v1/ready").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, "the api command exited"
            assert time.monotonic() < deadline, "the api command never became ready"
            time.sleep(0.2)
        headers = {"Authorization": f"Bearer {token}"}
        secret = record(1, query=f"{SENTINEL}?", answer=f"{SENTINEL} takes insulin.")
        with httpx.Client(base_url=base, headers=headers, timeout=60) as c:
            r = c.post("/v1/answers", json=secret)
            assert r.status_code == 201, r.text
            assert r.json()["checks"]["grounding"]["status"] == "skipped"
            assert c.get("/v1/answers/ext-1").json()["answer"] == secret["answer"]
            assert c.get("/v1/answers", params={"model": SENTINEL}).json()["items"] == []
            assert c.post("/v1/answers", json={**secret, "answer": 5}).status_code == 422
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert "Groundwatch API: http://127.0.0.1" in out
    assert "POST /v1/answers 201" in out
    assert "GET /v1/answers 200" in out
    assert SENTINEL not in out
    assert "model=" not in out  # no query string reaches the log


@pytest.fixture(autouse=True)
def _fresh_settings() -> Iterator[None]:
    reset_settings_cache()
    yield
    reset_settings_cache()


def test_stored_keys_hold_only_the_hash(engine: Engine) -> None:
    token = add_key(engine, "k", ["read"])
    with read_session(engine) as s:
        n = s.execute(select(func.count()).select_from(m.ApiKey)).scalar_one()
        (key,) = repo.list_api_keys(session=s)
    assert n == 1
    assert key.token_hash == token_hash(token)
    assert len(key.token_hash) == 64
    assert token not in key.token_hash
