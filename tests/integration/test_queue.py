"""Queued ingestion on a real PostgreSQL with real ``groundwatch worker`` processes.

Three workers share 1,000 queued answers; one is killed with SIGKILL while it checks one:
every answer is stored exactly once, none is lost, and the dead worker's job is run again by
the others after the heartbeat timeout. A poison record (an edit queued by a key that may not
replace) ends in the dead-letter state with its error and no record text, is listed, and is
retried through the API. SQLite refuses queued ingestion with one clear error.

The workers run the real pipeline with the embedding model and the rules deciding grounding
(``GROUNDWATCH_LEARNED_VERIFIER=false``), as the API tests do, to keep the module to a few
minutes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import text
from sqlalchemy.engine import Engine

from core.api import create_app
from core.config import load_settings
from tests.integration.api_server import add_key, serve

pytestmark = [pytest.mark.model, pytest.mark.slow, pytest.mark.timeout(900)]

GROUNDWATCH = str(Path(sys.executable).parent / "groundwatch")
SENTINEL = "Quokka-Zebrafinch-4417"  # record text that must never reach a log or a job error
STALLED_AFTER_S = 8  # beats every 1.6 s; a stopped victim (4.5 s) is never judged dead
POSTGRES = pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
SQLITE = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)


def small_record(i: int, **over: Any) -> dict[str, Any]:
    dose = 100 + i
    base: dict[str, Any] = {
        "id": f"q-{i}",
        "patient_id": f"p-{i % 50}",
        "timestamp": f"2026-03-01T{(i // 60) % 24:02d}:{i % 60:02d}:00Z",
        "query": "What does she take?",
        "answer": f"She takes metformin {dose} mg twice daily.",
        "sources": [{"id": "n-1", "text": f"Metformin {dose} mg twice daily.", "type": "note"}],
        "model": "m-1",
    }
    base.update(over)
    return base


def _env(db_url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GROUNDWATCH_")}
    env.update(
        GROUNDWATCH_DATABASE_URL=db_url,
        GROUNDWATCH_LEARNED_VERIFIER="false",
        GROUNDWATCH_QUEUE_STALLED_AFTER_S=str(STALLED_AFTER_S),
        GROUNDWATCH_QUEUE_RETRY_WAIT_S="0",
        GROUNDWATCH_LOG_LEVEL="INFO",
        **extra,
    )
    return env


class Workers:
    """``groundwatch worker`` processes, their stderr in files."""

    def __init__(self, tmp: Path, env: dict[str, str]) -> None:
        self.tmp, self.env = tmp, env
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, n: int) -> None:
        for _ in range(n):
            log = (self.tmp / f"worker-{len(self.procs)}.log").open("wb")
            self.procs.append(
                subprocess.Popen(
                    [GROUNDWATCH, "worker"], env=self.env, stdout=log, stderr=subprocess.STDOUT
                )
            )

    def logs(self) -> str:
        return "".join(p.read_text("utf-8", "replace") for p in self.tmp.glob("worker-*.log"))

    def stop(self) -> list[int | None]:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        codes: list[int | None] = []
        for p in self.procs:
            try:
                codes.append(p.wait(timeout=60))
            except subprocess.TimeoutExpired:
                p.kill()
                codes.append(None)
        return codes


@pytest.fixture
def workers(tmp_path: Path, db_url: str) -> Iterator[Workers]:
    w = Workers(tmp_path, _env(db_url))
    try:
        yield w
    finally:
        w.stop()


def _rows(engine: Engine, sql: str, **params: Any) -> list[Any]:
    with engine.connect() as conn:
        return list(conn.execute(text(sql), params).all())


def _wait(what: str, check: Any, timeout: float, workers: Workers) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        for p in workers.procs:
            assert p.poll() is None or p.returncode == -signal.SIGKILL, workers.logs()[-3000:]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def _done(engine: Engine) -> int:
    return _rows(
        engine, "SELECT count(*) FROM procrastinate.procrastinate_jobs WHERE status='succeeded'"
    )[0][0]


def _frozen_jobs(engine: Engine, proc: subprocess.Popen[bytes]) -> tuple[int, list[int]] | None:
    """Stop ``proc`` (SIGSTOP) and find its queue worker id: the one worker whose heartbeat
    no longer moves while the others beat (every 1.6 s). Return it with the jobs it holds, or
    None (and let it go on) when it holds none or the living ones were too slow to tell."""
    beats = "SELECT id, last_heartbeat FROM procrastinate.procrastinate_workers"
    proc.send_signal(signal.SIGSTOP)
    time.sleep(1.5)  # a beat it was sending when stopped has landed
    before = dict(_rows(engine, beats))
    time.sleep(3)
    after = dict(_rows(engine, beats))
    still = [w for w, at in after.items() if before.get(w) == at]
    held = []
    if len(still) == 1:
        held = _rows(
            engine,
            "SELECT id FROM procrastinate.procrastinate_jobs WHERE status='doing' AND worker_id=:w",
            w=still[0],
        )
    if not held:
        proc.send_signal(signal.SIGCONT)
        return None
    return still[0], [j for (j,) in held]


@pytest.mark.postgres
@POSTGRES
def test_three_workers_one_killed_every_answer_stored_once(
    engine: Engine, db_url: str, tmp_path: Path, workers: Workers
) -> None:
    n = 1000
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(small_record(i)) + "\n" for i in range(n)))
    started = time.monotonic()
    out = subprocess.run(
        [GROUNDWATCH, "import", "--queue", "--json", str(path)],
        env=_env(db_url),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["queued"] == n
    assert _rows(engine, "SELECT count(*) FROM conversation")[0][0] == 0  # nothing checked yet

    workers.start(3)
    victim = workers.procs[0]
    _wait("200 answers", lambda: _done(engine) >= 200, 600, workers)
    frozen = None
    for _ in range(20):
        frozen = _frozen_jobs(engine, victim)
        if frozen is not None:
            break
        time.sleep(0.3)
    assert frozen is not None, "the victim never held a job when stopped"
    dead_worker, dead_jobs = frozen
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=30)
    done_at_kill = _done(engine)
    assert done_at_kill < n, "the run ended before the kill: nothing would be retried"

    _wait("every answer", lambda: _done(engine) == n, 900, workers)
    elapsed = time.monotonic() - started

    statuses = _rows(
        engine, "SELECT status, count(*) FROM procrastinate.procrastinate_jobs GROUP BY status"
    )
    assert statuses == [("succeeded", n)]
    ids = [r[0] for r in _rows(engine, "SELECT external_id FROM conversation")]
    assert sorted(ids) == sorted(f"q-{i}" for i in range(n))  # none lost, none twice
    # each answer has one statement, checked once: no duplicate rows from a second check
    assert _rows(engine, "SELECT count(*) FROM statement_check")[0][0] == n
    outcomes = dict(_rows(engine, "SELECT outcome, count(*) FROM ingest_job GROUP BY outcome"))
    assert set(outcomes) <= {"imported", "unchanged"}
    assert sum(outcomes.values()) == n
    # the killed worker checks the jobs it holds as one batch: it may have stored some or all
    # of them before dying; those, and only those, found their result stored when run again
    unchanged = _rows(engine, "SELECT queue_job_id FROM ingest_job WHERE outcome = 'unchanged'")
    assert {j for (j,) in unchanged} <= set(dead_jobs), (unchanged, dead_jobs)
    assert _rows(engine, "SELECT count(*) FROM ingest_job WHERE payload IS NOT NULL")[0][0] == 0
    # the dead worker's jobs ran again on the living workers
    rerun = _rows(
        engine,
        "SELECT attempts, worker_id FROM procrastinate.procrastinate_jobs WHERE id = ANY(:j)",
        j=dead_jobs,
    )
    assert len(rerun) == len(dead_jobs)
    assert all(attempts == 2 and worker != dead_worker for attempts, worker in rerun), rerun
    assert "queued again" in workers.logs()

    codes = workers.stop()
    assert codes[1:] == [0, 0]  # SIGTERM: the living workers finish and exit cleanly
    sys.stderr.write(f"\n{n} queued answers, 3 workers, one killed: {elapsed:.0f} s\n")


@pytest.fixture
def api_pg(engine: Engine, db_url: str) -> Iterator[tuple[str, dict[str, str]]]:
    settings = load_settings(database_url=db_url, learned_verifier=False)
    keys = {
        "ingester": add_key(engine, "ingester", ["ingest", "read"]),
        "admin": add_key(engine, "admin", ["admin"]),
    }
    server, thread, url = serve(create_app(settings=settings, engine=engine))
    try:
        yield url, keys
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def _client(url: str, token: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=120)


def _metric(c: httpx.Client, name: str) -> dict[str, float]:
    body = c.get("/metrics").text
    return {
        s.labels.get("state", ""): s.value
        for fam in text_string_to_metric_families(body)
        for s in fam.samples
        if s.name == name
    }


@pytest.mark.postgres
@POSTGRES
def test_a_poison_record_ends_in_dead_letter_and_is_retried_through_the_api(
    engine: Engine, api_pg: tuple[str, dict[str, str]], workers: Workers
) -> None:
    url, keys = api_pg
    first = small_record(1, answer=f"She takes metformin 101 mg twice daily. {SENTINEL}")
    edit = small_record(1, answer=f"She takes metformin 202 mg twice daily. {SENTINEL}")
    with _client(url, keys["ingester"]) as c, _client(url, keys["admin"]) as admin:
        jobs = []
        for rec in (first, small_record(2), edit):  # the edit is queued before any is stored
            r = c.post("/v1/answers?mode=async", json=rec)
            assert r.status_code == 202, r.text
            assert r.headers["location"] == f"/v1/jobs/{r.json()['job_id']}"
            jobs.append(r.json()["job_id"])
        assert {j["state"] for j in c.get("/v1/jobs").json()["items"]} == {"queued"}
        assert _metric(c, "groundwatch_queue_jobs")["queued"] == 3

        workers.env["GROUNDWATCH_QUEUE_MAX_ATTEMPTS"] = "2"
        workers.start(1)
        poison = jobs[2]
        _wait(
            "the dead letter",
            lambda: c.get(f"/v1/jobs/{poison}").json()["state"] == "failed",
            300,
            workers,
        )
        view = c.get(f"/v1/jobs/{poison}").json()
        assert view["attempts"] == 2
        assert view["error"]["class"] == "RecordExistsError"
        assert "stored already with other content" in view["error"]["message"]
        assert [c.get(f"/v1/jobs/{j}").json()["state"] for j in jobs[:2]] == ["done", "done"]
        dead = c.get("/v1/jobs", params={"state": "failed"}).json()["items"]
        assert [j["id"] for j in dead] == [poison]
        depth = _metric(c, "groundwatch_queue_jobs")
        assert (depth["failed"], depth["done"], depth["queued"]) == (1, 2, 0)

        assert c.post(f"/v1/jobs/{poison}/retry").status_code == 403  # admin scope only
        assert admin.post(f"/v1/jobs/{jobs[0]}/retry").status_code == 409  # not failed
        assert admin.post("/v1/jobs/999999/retry").status_code == 404
        # an admin settles the conflict (the edit wins), then the dead letter is retried
        assert admin.post("/v1/answers", json=edit).json()["store_status"] == "updated"
        r = admin.post(f"/v1/jobs/{poison}/retry")
        assert r.status_code == 202, r.text
        _wait(
            "the retried job",
            lambda: c.get(f"/v1/jobs/{poison}").json()["state"] == "done",
            120,
            workers,
        )
        view = c.get(f"/v1/jobs/{poison}").json()
        assert view["outcome"] == "unchanged"
        assert view["error"] is None
        assert c.get("/v1/jobs", params={"state": "failed"}).json()["items"] == []
    logs = workers.logs()
    assert "RecordExistsError" in logs
    assert SENTINEL not in logs
    assert _rows(engine, "SELECT count(*) FROM ingest_job WHERE payload IS NOT NULL")[0][0] == 0


@SQLITE
def test_sqlite_refuses_queued_ingestion_clearly(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    settings = load_settings(database_url=db_url, learned_verifier=False)
    token = add_key(engine, "ingester", ["ingest", "read"])
    server, thread, url = serve(create_app(settings=settings, engine=engine))
    try:
        with _client(url, token) as c:
            r = c.post("/v1/answers?mode=async", json=small_record(1))
            assert r.status_code == 400
            assert r.json()["error"] == "queue_unavailable"
            assert "needs PostgreSQL" in r.json()["detail"]
            assert c.get("/v1/jobs/1").status_code == 400
            assert c.get("/v1/jobs").json()["error"] == "queue_unavailable"
            assert c.post("/v1/answers?mode=later", json=small_record(1)).status_code == 422
    finally:
        server.should_exit = True
        thread.join(timeout=30)
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(small_record(1)) + "\n")
    for args in (["import", "--queue", str(path)], ["worker"]):
        out = subprocess.run(
            [GROUNDWATCH, *args], env=_env(db_url), capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 1
        assert "queued ingestion needs PostgreSQL" in out.stderr
    assert _rows(engine, "SELECT count(*) FROM ingest_job")[0][0] == 0
