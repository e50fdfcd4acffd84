"""The API's search, similar-query, trend, review-queue and verdict routes and its per-key rate
limit, against a real uvicorn server on a free port, driven with httpx, on SQLite and
PostgreSQL: results, ordering, scopes (401, 403), bad parameters (422 naming the parameter,
never echoing it), audit events, 429 with ``Retry-After``, and a purged answer no longer found
by full-text search.

One server and one set of answers per database serve the module (the checks run once); the
rate limit gets a server of its own with a limit of three a minute.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from core import retention
from core.api import create_app
from core.config import load_settings
from core.storage import repo
from core.storage.db import get_engine, read_session, upgrade_to_head
from tests.conftest import _drop_pg_database, _fresh_pg_database, postgres_server_url
from tests.integration.api_server import add_key, serve

pytestmark = [pytest.mark.model, pytest.mark.timeout(600)]

SENTINEL = "Zebrafinch-Quokka-7731"  # must never come back in an error body
NOTE = "Metformin 500 mg b.i.d. for type 2 diabetes. Lisinopril 10 mg daily. No known allergies."


def record(
    rid: str, patient: str, day: str, query: str, answer: str, **over: Any
) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": rid,
        "patient_id": patient,
        "timestamp": f"{day}T09:00:00Z",
        "query": query,
        "answer": answer,
        "sources": [{"id": "note-1", "text": NOTE}],
        "model": "model-a",
    }
    base.update(over)
    return base


RECORDS = [
    record(
        "r1",
        "p-1",
        "2026-01-05",
        "Is she still taking metformin for her diabetes?",
        "Metformin 500 mg b.i.d. for type 2 diabetes.",
    ),
    record(
        "r2",
        "p-1",
        "2026-01-06",
        "Has she complained of headaches recently?",
        "She reports migraines since March.",
        model="model-b",
    ),
    record(
        "r3",
        "p-1",
        "2026-01-14",
        "What dose of metformin does she take?",
        "She takes metformin 1000 mg three times daily.",
    ),
    record(
        "r4",
        "p-2",
        "2026-01-14",
        "Does he have any drug allergies?",
        "He is allergic to penicillin.",
        model="model-b",
    ),
    # dated long ago: the purge test removes its text
    record(
        "r5",
        "p-9",
        "2020-02-03",
        "What did the knee scan show?",
        f"A {SENTINEL} tear of the left meniscus.",
    ),
]


@dataclass
class Service:
    base_url: str
    engine: Engine
    keys: dict[str, str]

    def client(self, key: str | None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.keys[key]}"} if key else {}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=120)

    def audit(self, action: str) -> list[Any]:
        with read_session(self.engine) as s:
            return repo.list_audit_events(session=s, action=action)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def database(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A fresh database for the module, migrated."""
    if request.param == "sqlite":
        path: Path = tmp_path_factory.mktemp("api-read") / "gw.db"
        url = f"sqlite:///{path}"
        upgrade_to_head(url)
        yield url
        get_engine(url).dispose()
        return
    server = postgres_server_url()
    if server is None:
        pytest.skip("PostgreSQL not reachable (set GROUNDWATCH_TEST_POSTGRES_URL)")
    url, admin = _fresh_pg_database(server)
    try:
        upgrade_to_head(url)
        yield url
    finally:
        get_engine(url).dispose()
        _drop_pg_database(admin, url)


@pytest.fixture(scope="module")
def svc(database: str) -> Iterator[Service]:
    """A real server over the module's database, ready, with the answers stored through it."""
    engine = get_engine(database)
    settings = load_settings(database_url=database, learned_verifier=False)
    keys = {
        name: add_key(engine, name, scopes)
        for name, scopes in {
            "ingester": ["ingest"],
            "reader": ["read"],
            "dr-rivera": ["review"],
            "admin": ["admin"],
        }.items()
    }
    server, thread, url = serve(create_app(settings=settings, engine=engine))
    try:
        with httpx.Client(base_url=url, timeout=120) as c:
            deadline = time.monotonic() + 300
            while c.get("/v1/ready").status_code != 200:
                assert time.monotonic() < deadline, c.get("/v1/ready").text
                time.sleep(0.2)
        service = Service(url, engine, keys)
        with service.client("ingester") as c:
            r = c.post("/v1/answers/batch", json={"records": RECORDS})
            assert r.status_code == 200, r.text
        yield service
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def _ids(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [item["id"] for item in response.json()["items"]]


def _bad(response: httpx.Response, status: int, field: str) -> None:
    assert response.status_code == status, response.text
    assert field in json.dumps(response.json()), response.text
    assert SENTINEL not in response.text


# --------------------------------------------------------------------------- search


def test_search_finds_query_and_answer_text_with_the_filters(svc: Service) -> None:
    with svc.client("reader") as c:
        assert _ids(c.get("/v1/answers", params={"q": "metformin"})) == ["r3", "r1"]
        assert _ids(c.get("/v1/answers", params={"q": "migraine"})) == ["r2"]  # stemmed
        assert _ids(c.get("/v1/answers", params={"q": "headache"})) == ["r2"]  # in the query
        assert _ids(c.get("/v1/answers", params={"q": "metformin -1000"})) == ["r1"]
        assert _ids(c.get("/v1/answers", params={"q": '"three times daily"'})) == ["r3"]
        assert _ids(c.get("/v1/answers", params={"q": "penicillin or migraines"})) == ["r4", "r2"]
        assert _ids(c.get("/v1/answers", params={"q": "penicillin", "patient_id": "p-1"})) == []
        assert _ids(c.get("/v1/answers", params={"q": "insulin"})) == []
        assert _ids(c.get("/v1/answers", params={"q": 'NEAR(x y) "*'})) == []  # no syntax
        first = c.get("/v1/answers", params={"q": "metformin", "limit": 1})
        assert _ids(first) == ["r3"]
        cursor = first.json()["next_cursor"]
        second = c.get("/v1/answers", params={"q": "metformin", "limit": 1, "cursor": cursor})
        assert _ids(second) == ["r1"]
        assert second.json()["next_cursor"] is None
        for q in ("-metformin", "", "?!", "x" * 501):
            _bad(c.get("/v1/answers", params={"q": q}), 422, "q")
    lists = [e for e in svc.audit("list") if (e.detail or {}).get("search")]
    assert lists
    assert {e.actor for e in lists} == {"reader"}


def _index_blocks(engine: Engine) -> bytes:
    """Every page of the SQLite full-text index, as stored (deleted terms linger there until
    the index is merged)."""
    with read_session(engine) as s:
        rows = s.execute(text("SELECT block FROM conversation_fts_data")).all()
    return b"".join(r[0] for r in rows if isinstance(r[0], bytes))


def test_a_purged_answer_is_no_longer_found(svc: Service) -> None:
    """Purged by retention, the answer's text leaves the full-text index: it is not found,
    and on SQLite its terms are gone from the index's pages and its copy from the index's
    content table."""
    # ends of the stemmed terms: the index stores a term after the prefix it shares with the
    # term before it, never without its end
    words = (b"rafinch", b"uokka", b"niscu")
    with svc.client("reader") as c:
        assert _ids(c.get("/v1/answers", params={"q": "meniscus"})) == ["r5"]
        assert _ids(c.get("/v1/answers", params={"q": "zebrafinch"})) == ["r5"]
    sqlite = svc.engine.dialect.name == "sqlite"
    if sqlite:
        assert all(w in _index_blocks(svc.engine) for w in words)
    result = retention.purge_expired(engine=svc.engine, older_than_days=1000, actor="admin")
    assert result.purged == 1
    with svc.client("reader") as c:
        assert _ids(c.get("/v1/answers", params={"q": "meniscus"})) == []
        assert _ids(c.get("/v1/answers", params={"q": "zebrafinch"})) == []
        assert _ids(c.get("/v1/answers", params={"patient_id": "p-9"})) == ["r5"]  # scores stay
        assert _ids(c.get("/v1/answers", params={"q": "metformin"})) == ["r3", "r1"]
    if sqlite:
        blocks = _index_blocks(svc.engine)
        assert [w for w in words if w in blocks] == []
        assert b"formin" in blocks  # the other answers stay indexed
        with read_session(svc.engine) as s:
            copies = s.execute(text("SELECT * FROM conversation_fts_content")).all()
        assert len(copies) == 4
        assert SENTINEL not in repr(copies)


# --------------------------------------------------------------------------- similar


def test_similar_past_queries_rank_by_meaning_and_show_text_only_to_readers(
    svc: Service,
) -> None:
    path = "/v1/patients/p-1/similar"
    with svc.client("ingester") as c:
        r = c.get(path, params={"query": "How much metformin is she on?", "limit": 3})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["compared"] == 3
    assert body["model"].startswith("all-MiniLM-L6-v2")
    items = body["items"]
    assert [i["id"] for i in items][:2] in (["r3", "r1"], ["r1", "r3"])
    assert items[-1]["id"] == "r2"  # the headache question comes last
    scores = [i["score"] for i in items]
    assert scores == sorted(scores, reverse=True)
    assert -1 <= scores[-1] < scores[0] <= 1
    assert all("query" not in i for i in items)  # no read scope: ids, scores, times only
    assert items[0]["timestamp"].startswith("2026-01-")
    with svc.client("reader") as c:
        one = c.get(path, params={"query": "Any headaches?", "limit": 1})
        assert one.status_code == 200
        (top,) = one.json()["items"]
        assert top["id"] == "r2"
        assert top["query"] == RECORDS[1]["query"]
        assert c.get("/v1/patients/p-404/similar", params={"query": "x"}).status_code == 404
        _bad(c.get(path), 422, "query")
        _bad(c.get(path, params={"query": " "}), 422, "query")
        _bad(c.get(path, params={"query": SENTINEL, "limit": 0}), 422, "limit")
    with svc.client(None) as anon:
        assert anon.get(path, params={"query": "x"}).status_code == 401
    views = [e for e in svc.audit("view") if e.target_type == "patient"]
    assert [(e.actor, e.target_id) for e in views] == [("reader", "p-1")]
    assert views[0].detail["similar"] == 1
    assert views[0].detail["text"] is True
    unseen = [e for e in svc.audit("list") if e.target_type == "patient"]
    assert [(e.actor, (e.detail or {}).get("text")) for e in unseen] == [("ingester", False)]


# --------------------------------------------------------------------------- trends


def test_trends_per_day_and_week_match_the_dashboards_query(svc: Service) -> None:
    with svc.client("reader") as c:
        day = c.get("/v1/trends", params={"by": "day", "since": "2026-01-01"})
        week = c.get("/v1/trends", params={"by": "week", "since": "2026-01-01"})
        model_b = c.get("/v1/trends", params={"model": "model-b", "since": "2026-01-01"})
        patient = c.get("/v1/trends", params={"by": "week", "patient_id": "p-1"})
        for params, field in (
            ({"by": "month"}, "by"),
            ({"since": SENTINEL}, "since"),
            ({"since": "2026-02-01", "until": "2026-01-01"}, "until"),
        ):
            _bad(c.get("/v1/trends", params=params), 422, field)
    with svc.client("ingester") as c:
        denied = c.get("/v1/trends")
    assert denied.status_code == 403
    assert "'read'" in denied.json()["detail"]
    days = day.json()["points"]
    with svc.client("reader") as c:
        schemas = c.get("/openapi.json").json()["components"]["schemas"]
    assert all(set(p) == set(schemas["TrendPointPublic"]["properties"]) for p in days)
    assert [(p["period"], p["answers"]) for p in days] == [
        ("2026-01-05", 1),
        ("2026-01-06", 1),
        ("2026-01-14", 2),
    ]
    weeks = week.json()["points"]
    assert [(p["period"], p["answers"]) for p in weeks] == [("2026-01-05", 2), ("2026-01-12", 2)]
    assert [p["answers"] for p in model_b.json()["points"]] == [1, 1]
    assert sum(p["answers"] for p in patient.json()["points"]) == 3
    with read_session(svc.engine) as s:
        expected = repo.quality_trend(
            session=s, filters=repo.Filters(patient_ids=("p-1",)), granularity="week"
        )
    assert [(p["period"], p["flagged"], p["grounding"]) for p in patient.json()["points"]] == [
        (e.period.isoformat(), e.flagged, None if e.grounding is None else round(e.grounding, 4))
        for e in expected
    ]


# --------------------------------------------------------------------------- review


def test_the_review_queue_is_the_dashboards_and_verdicts_are_audited(svc: Service) -> None:
    with read_session(svc.engine) as s:
        expected, total = repo.flagged_statements(
            session=s, review_state="unreviewed", order="severity", limit=200
        )
    assert total >= 2, "the fixture answers must leave statements to review"
    with svc.client("reader") as c:
        r = c.get("/v1/review-queue", params={"limit": 200})
        assert r.status_code == 200, r.text
        queue = r.json()
        assert queue["total"] == total
        assert [i["statement_check_id"] for i in queue["items"]] == [
            e.statement_check_id for e in expected
        ]
        first = queue["items"][0]
        assert first["statement"]
        schemas = c.get("/openapi.json").json()["components"]["schemas"]
        assert set(first) == set(schemas["QueueItemPublic"]["properties"])
        assert first["status"] in ("unsupported", "contradicted")
        assert first["severity"] in ("critical", "high", "medium", "low", None)
        page = c.get("/v1/review-queue", params={"limit": 1, "offset": 1}).json()
        assert [i["statement_check_id"] for i in page["items"]] == [expected[1].statement_check_id]
        only_p2 = c.get("/v1/review-queue", params={"patient_id": "p-2"}).json()
        assert {i["patient_id"] for i in only_p2["items"]} <= {"p-2"}
        for params, field in (
            ({"severity": "dire"}, "severity"),
            ({"kind": SENTINEL}, "kind"),
            ({"status": "grounded"}, "status"),
            ({"review_state": "some"}, "review_state"),
            ({"order": "time"}, "order"),
            ({"limit": 1000}, "limit"),
        ):
            _bad(c.get("/v1/review-queue", params=params), 422, field)
        target = first["statement_check_id"]
        refused = c.post("/v1/reviews", json={"statement_check_id": target, "verdict": "confirmed"})
        assert refused.status_code == 403
        assert "'review'" in refused.json()["detail"]
    with svc.client("ingester") as c:
        assert c.get("/v1/review-queue").status_code == 403
    with svc.client(None) as anon:
        assert anon.get("/v1/review-queue").status_code == 401
        assert anon.post("/v1/reviews", json={}).status_code == 401
    listed = [e for e in svc.audit("list") if e.target_type == "statement_check"]
    assert listed
    assert target in listed[-1].detail["statement_check_ids"]

    with svc.client("dr-rivera") as c:  # the review scope reads the queue too
        given = c.post(
            "/v1/reviews",
            json={"statement_check_id": target, "verdict": "false_alarm", "note": " seen "},
        )
        assert given.status_code == 201, given.text
        assert given.json()["reviewer"] == "dr-rivera"
        assert given.json()["verdict"] == "false_alarm"
        for body, field in (
            ({"statement_check_id": target, "verdict": SENTINEL}, "verdict"),
            ({"verdict": "confirmed"}, "statement_check_id"),
            ({"statement_check_id": target, "verdict": "unsure", "extra": 1}, "extra"),
            ({"statement_check_id": target, "verdict": "unsure", "note": "n" * 2001}, "note"),
        ):
            _bad(c.post("/v1/reviews", json=body), 422, field)
        missing = c.post("/v1/reviews", json={"statement_check_id": 10**9, "verdict": "unsure"})
        assert missing.status_code == 404
        assert "statement_check_id" in missing.json()["detail"]
        after = c.get("/v1/review-queue", params={"limit": 200}).json()
        assert after["total"] == total - 1
        assert target not in [i["statement_check_id"] for i in after["items"]]
        reviewed = c.get("/v1/review-queue", params={"review_state": "reviewed"}).json()
        assert [
            (i["statement_check_id"], i["verdict"], i["reviewer"]) for i in reviewed["items"]
        ] == [(target, "false_alarm", "dr-rivera")]
    (event,) = [e for e in svc.audit("review") if e.target_id == str(target)]
    assert event.actor == "dr-rivera"
    assert event.target_type == "statement_check"
    assert event.detail == {"verdict": "false_alarm", "note_chars": 4, "via": "api"}
    with read_session(svc.engine) as s:
        (stored,) = [r for r in repo.list_reviews(session=s) if r.statement_check_id == target]
    assert (stored.reviewer, stored.note) == ("dr-rivera", "seen")


def test_the_openapi_document_names_the_new_routes(svc: Service) -> None:
    with httpx.Client(base_url=svc.base_url) as c:
        paths = c.get("/openapi.json").json()["paths"]
    assert {
        "/v1/patients/{patient_id}/similar",
        "/v1/trends",
        "/v1/review-queue",
        "/v1/reviews",
    } <= set(paths)
    assert any(p["name"] == "q" for p in paths["/v1/answers"]["get"]["parameters"])


# --------------------------------------------------------------------------- rate limit


def test_each_key_is_limited_per_minute_with_retry_after(database: str, svc: Service) -> None:
    engine = get_engine(database)
    settings = load_settings(database_url=database, learned_verifier=False, api_rate_limit=3)
    server, thread, url = serve(create_app(settings=settings, engine=engine))
    try:
        one = {"Authorization": f"Bearer {svc.keys['reader']}"}
        other = {"Authorization": f"Bearer {svc.keys['admin']}"}
        with httpx.Client(base_url=url, timeout=60) as c:
            codes = [c.get("/v1/trends", headers=one).status_code for _ in range(3)]
            assert codes == [200, 200, 200]
            limited = c.get("/v1/trends", headers=one)
            assert limited.status_code == 429
            assert limited.json()["error"] == "rate_limited"
            assert "GROUNDWATCH_API_RATE_LIMIT" in limited.json()["detail"]
            assert 1 <= int(limited.headers["Retry-After"]) <= 20
            # every route draws on the key's allowance; another key has its own
            assert c.get("/v1/review-queue", headers=one).status_code == 429
            assert c.get("/v1/trends", headers=other).status_code == 200
            assert c.get("/v1/health").status_code == 200  # no key, no limit
    finally:
        server.should_exit = True
        thread.join(timeout=30)
