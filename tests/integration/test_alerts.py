"""Alerts against real backends, on SQLite and PostgreSQL: rules evaluated after each stored
batch, firings stored once per open condition, webhooks delivered to a real HTTP receiver
started by the test (signature checked, a 500 retried, then delivered), the delivery log,
acknowledging and resolving; the API (real uvicorn server, background delivery, /metrics) and
the command line (synchronous delivery); and no patient text in any webhook body or log line.

The pipeline runs without models (exact and fuzzy grounding, rule-based consistency), which is
all the rules need and keeps the module fast.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import select
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from core.alerts import AlertMonitor, AlertRulesError, load_config
from core.alerts.rules import Webhook
from core.alerts.webhooks import (
    SIGNATURE_HEADER,
    BackgroundSender,
    Delivery,
    WebhookSender,
    verify,
)
from core.config import load_settings, reset_settings_cache
from core.pipeline import QualityPipeline
from core.records import parse_record
from core.storage import alerts as store
from core.storage import models as m
from core.storage import repo
from core.storage.db import read_session, write_session
from tests.integration.api_server import add_key, serve

SECRET = "test-secret-0123456789abcdef"
SENTINEL = "Zebrafinch-Quokka-7731"  # patient text that must never leave in a webhook or log


# --------------------------------------------------------------------------- receiver


@dataclass
class Received:
    firing_id: int
    body: dict[str, Any]
    raw: bytes
    signed: bool
    status: int


@dataclass
class Receiver:
    """A real HTTP server on a free port: answers 500 to the first request for each firing and
    200 afterwards, and keeps every request with whether its signature was right."""

    url: str
    requests: list[Received] = field(default_factory=list)

    def delivered(self) -> list[Received]:
        return [r for r in self.requests if r.status == 200]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    seen: set[int] = set()
    lock = threading.Lock()
    box: list[Receiver] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            firing = int(self.headers.get("X-Groundwatch-Delivery", "0"))
            with lock:
                status = 200 if firing in seen else 500
                seen.add(firing)
                box[0].requests.append(
                    Received(
                        firing,
                        json.loads(raw),
                        raw,
                        verify(raw, SECRET, self.headers.get(SIGNATURE_HEADER)),
                        status,
                    )
                )
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:  # keep the test output quiet
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    box.append(Receiver(f"http://127.0.0.1:{server.server_address[1]}/hook"))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield box[0]
    finally:
        server.shutdown()
        server.server_close()


def alerts_file(tmp_path: Path, url: str, **extra: Any) -> Path:
    doc = {
        "dashboard_url": "https://groundwatch.example.org",
        "webhooks": [
            {"name": "oncall", "url": url, "secret_env": "TEST_ALERTS_SECRET", "backoff_s": 0.01}
        ],
        "rules": [
            {"name": "contradiction", "kind": "contradiction"},
            {
                "name": "low-grounding",
                "kind": "score_below",
                "score": "grounding",
                "threshold": 0.5,
            },
            {
                "name": "flagged-share",
                "kind": "flagged_share",
                "window": "7d",
                "threshold": 0.5,
                "min_answers": 2,
            },
            {"name": "drift", "kind": "calibration_drift", "verdicts": 10, "threshold": 0.2},
        ],
        **extra,
    }
    path = tmp_path / "alerts.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def record(rid: str, day: int, dose: str, *, patient: str = "p-1") -> dict[str, Any]:
    return {
        "id": rid,
        "patient_id": patient,
        "timestamp": f"2026-01-{day:02d}T09:00:00Z",
        "query": f"What does {SENTINEL} take for diabetes?",
        "answer": f"{SENTINEL} takes metformin {dose} twice daily.",
        "sources": [{"id": "note-1", "text": f"{SENTINEL}: metformin 500 mg twice daily."}],
        "model": "model-a",
    }


def ingest(pipeline: QualityPipeline, *records: dict[str, Any]) -> list[str]:
    reports = pipeline.process_many([parse_record(r, max_text_chars=100_000) for r in records])
    return [r.conversation_id for r in reports]


def firings(engine: Engine) -> dict[str, list[m.AlertFiring]]:
    with read_session(engine) as s:
        rows = store.list_firings(session=s)
    out: dict[str, list[m.AlertFiring]] = {}
    for f in rows:
        out.setdefault(f.condition_key, []).append(f)
    return out


def deliveries(engine: Engine, firing_id: int) -> list[tuple[int, str, int | None]]:
    with read_session(engine) as s:
        rows = store.list_deliveries(session=s, firing_id=firing_id)
    return sorted((d.attempt, d.outcome, d.status_code) for d in rows)


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_ALERTS_SECRET", SECRET)


def _pipeline(engine: Engine, monitor: AlertMonitor | None) -> QualityPipeline:
    return QualityPipeline(
        settings=load_settings(),
        engine=engine,
        embedder=None,
        learned=None,
        nli=None,
        llm=None,
        alerts=monitor,
    )


# --------------------------------------------------------------------------- pipeline hook


@pytest.mark.usefixtures("secret_env")
def test_firings_are_stored_once_signed_retried_and_delivered(
    engine: Engine, receiver: Receiver, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    sleeps: list[float] = []
    registry = CollectorRegistry()
    monitor = AlertMonitor(
        config=load_config(alerts_file(tmp_path, receiver.url)),
        engine=engine,
        delivery="sync",
        registry=registry,
        sleep=sleeps.append,
    )
    pipeline = _pipeline(engine, monitor)
    first, second = ingest(pipeline, record("a-1", 1, "500 mg"), record("a-2", 2, "1000 mg"))

    found = firings(engine)
    assert set(found) == {
        "contradiction|patient:p-1",  # 1000 mg against the earlier 500 mg
        "low-grounding|patient:p-1",  # the answers' wording is not in the note
        "flagged-share|model:model-a",  # 2 of 2 flagged in the 7 days
    }, found
    contradiction = found["contradiction|patient:p-1"][0]
    assert contradiction.state == "open"
    assert contradiction.conversation_ids == [second]
    assert contradiction.counts == {"contradicted_statements": 0, "contradicted_earlier": 1}
    share = found["flagged-share|model:model-a"][0]
    assert (share.value, share.counts["answers"], share.counts["flagged"]) == (1.0, 2, 2)
    # one batch: every condition fires once, though both answers meet the grounding rule
    assert all(len(v) == 1 for v in found.values())
    assert found["low-grounding|patient:p-1"][0].occurrences == 2

    # each new firing: a 500, then (after the backoff) a 200; every body signed
    by_firing: dict[int, list[int]] = {}
    for r in receiver.requests:
        by_firing.setdefault(r.firing_id, []).append(r.status)
    ids = {f[0].id for f in found.values()}
    assert by_firing == {fid: [500, 200] for fid in ids}
    assert all(r.signed for r in receiver.requests)
    assert sleeps == [0.01] * len(ids)
    for fid in ids:
        assert deliveries(engine, int(fid or 0)) == [(1, "retry", 500), (2, "delivered", 200)]
    body = next(r.body for r in receiver.delivered() if r.firing_id == contradiction.id)
    assert body["rule"] == "contradiction"
    assert body["patient_id"] == "p-1"
    assert body["answers"] == [
        {
            "id": "a-2",
            "conversation_id": second,
            "link": f"https://groundwatch.example.org/report?id={second}",
        }
    ]
    assert body["link"] == f"https://groundwatch.example.org/alerts?alert={contradiction.id}"

    # the condition holds again while open: no second firing, no second webhook
    before = len(receiver.requests)
    ingest(pipeline, record("a-3", 3, "2000 mg"))
    again = firings(engine)["contradiction|patient:p-1"]
    assert len(again) == 1
    assert again[0].occurrences == 2
    assert len(receiver.requests) == before
    # acknowledged still holds duplicates off; resolved lets the condition fire anew
    with write_session(engine) as s:
        store.change_state(
            session=s, firing_id=int(contradiction.id or 0), state="acknowledged", actor="dr-a"
        )
    ingest(pipeline, record("a-4", 4, "250 mg"))
    assert len(firings(engine)["contradiction|patient:p-1"]) == 1
    with write_session(engine) as s:
        store.change_state(
            session=s, firing_id=int(contradiction.id or 0), state="resolved", actor="dr-b"
        )
        with pytest.raises(store.AlertStateError, match="is resolved"):
            store.change_state(
                session=s, firing_id=int(contradiction.id or 0), state="acknowledged", actor="x"
            )
    ingest(pipeline, record("a-5", 5, "750 mg"))
    rows = firings(engine)["contradiction|patient:p-1"]
    assert [r.state for r in rows] == ["open", "resolved"]
    old = rows[1]
    assert (old.acknowledged_by, old.resolved_by) == ("dr-a", "dr-b")
    assert old.acknowledged_at is not None
    assert old.resolved_at is not None
    assert deliveries(engine, int(rows[0].id or 0)) == [(1, "retry", 500), (2, "delivered", 200)]
    with read_session(engine) as s:
        audit = repo.list_audit_events(session=s)
    assert {(e.action, e.actor) for e in audit} >= {
        ("alert_acknowledge", "dr-a"),
        ("alert_resolve", "dr-b"),
    }

    # the counters on the registry
    series = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for fam in text_string_to_metric_families(_exposition(registry))
        for s in fam.samples
    }
    assert (
        series[
            (
                "groundwatch_alert_firings_total",
                (("kind", "contradiction"), ("rule", "contradiction")),
            )
        ]
        == 2
    )
    assert (
        series[
            ("groundwatch_webhook_deliveries_total", (("outcome", "retry"), ("webhook", "oncall")))
        ]
        == 4
    )
    assert (
        series[
            (
                "groundwatch_webhook_deliveries_total",
                (("outcome", "delivered"), ("webhook", "oncall")),
            )
        ]
        == 4
    )

    # no patient text in any body, nor in any log line
    assert all(SENTINEL not in r.raw.decode() for r in receiver.requests)
    assert SENTINEL not in caplog.text
    assert first  # the first answer was stored (it fired nothing alone but the share needs it)


def _exposition(registry: CollectorRegistry) -> str:
    from prometheus_client import generate_latest

    return generate_latest(registry).decode()


@pytest.mark.usefixtures("secret_env")
def test_calibration_drift_fires_on_the_recent_verdicts(
    engine: Engine, receiver: Receiver, tmp_path: Path
) -> None:
    monitor = AlertMonitor(
        config=load_config(alerts_file(tmp_path, receiver.url)),
        engine=engine,
        delivery="sync",
        sleep=lambda _s: None,
    )
    pipeline = _pipeline(engine, None)  # answers stored first, then the verdicts
    ids = ingest(
        pipeline, *(record(f"d-{i}", i + 1, "500 mg", patient=f"q-{i}") for i in range(12))
    )
    with read_session(engine) as s:
        checks = list(
            s.execute(
                select(m.StatementCheck).where(m.StatementCheck.status != "grounded")  # type: ignore[arg-type]
            ).scalars()
        )
    assert len(checks) >= 10
    result = monitor.check()
    drift = [f for f in result.findings if f.rule == "drift"]
    assert [f.status for f in drift] == ["not_evaluated"]
    assert "0 verdicts" in drift[0].reason
    # every flagged statement called a false alarm: the risk predicts hallucinations that are not
    with write_session(engine) as s:
        for c in checks[:10]:
            repo.create_review(
                session=s, statement_check_id=int(c.id or 0), reviewer="dr-c", verdict="false_alarm"
            )
    result = monitor.check()
    (drift_finding,) = [f for f in result.findings if f.rule == "drift"]
    assert drift_finding.status == "firing"
    assert drift_finding.firing is not None
    assert drift_finding.firing.value is not None
    assert drift_finding.firing.value > 0.2
    assert drift_finding.firing.counts["verdicts"] == 10
    assert set(drift_finding.firing.conversation_ids) <= set(ids)
    opened = firings(engine)["drift|service"]
    assert len(opened) == 1
    # the CLI's check again: the same conditions are open already, nothing new fires or is sent
    sent = len(receiver.requests)
    again = monitor.check()
    assert again.opened == ()
    assert opened[0].id in again.updated
    assert len(receiver.requests) == sent


def test_concurrent_evaluations_open_one_alert_per_condition(engine: Engine) -> None:
    """Eight writers fire the same condition at once: one alert, eight occurrences (the
    partial unique index and the retry in ``fire``), every answer kept."""
    n = 8
    barrier = threading.Barrier(n)

    def work(i: int) -> bool:
        barrier.wait()
        with write_session(engine) as s:
            _, new = store.fire(
                session=s,
                firing_in=store.FiringIn(
                    rule="r",
                    kind="contradiction",
                    condition_key="r|patient:p-9",
                    patient_id="p-9",
                    conversation_ids=(f"c-{i}",),
                ),
            )
        return new

    with ThreadPoolExecutor(n) as pool:
        news = list(pool.map(work, range(n)))
    assert sum(news) == 1
    (row,) = firings(engine)["r|patient:p-9"]
    assert row.occurrences == n
    assert sorted(row.conversation_ids) == sorted(f"c-{i}" for i in range(n))


def test_a_delivery_that_cannot_wait_is_logged_dropped_never_lost(engine: Engine) -> None:
    """The background queue is bounded: a delivery that does not fit, or still waits when the
    sender closes, is logged ``dropped`` with the reason's class."""
    release = threading.Event()

    class Slow(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            release.wait(30)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    hook = Webhook(name="slow", url=f"http://127.0.0.1:{server.server_address[1]}/", secret=SECRET)
    with write_session(engine) as s:
        firing, _ = store.fire(
            session=s, firing_in=store.FiringIn(rule="r", kind="contradiction", condition_key="r|x")
        )
    fid = int(firing.id or 0)
    sender = BackgroundSender(WebhookSender(engine=engine, secrets={"slow": SECRET}), maxsize=1)
    try:
        sender.submit(Delivery(fid, b"{}", (hook,)))  # taken by the thread, held by the server
        deadline = time.monotonic() + 10
        while sender._queue.qsize():  # wait until the thread holds the first one
            assert time.monotonic() < deadline
            time.sleep(0.01)
        sender.submit(Delivery(fid, b"{}", (hook,)))  # waits in the queue
        sender.submit(Delivery(fid, b"{}", (hook,)))  # does not fit
        sender.close(timeout=0.2)  # the waiting one never leaves
    finally:
        release.set()
        sender.wait(10)  # the held one finishes
        server.shutdown()
        server.server_close()
    with read_session(engine) as s:
        rows = store.list_deliveries(session=s, firing_id=fid)
    dropped = sorted(r.error_class or "" for r in rows if r.outcome == "dropped")
    assert dropped == ["QueueFull", "Shutdown"]
    assert [(r.attempt, r.status_code) for r in rows if r.outcome == "delivered"] == [(1, 200)]


# --------------------------------------------------------------------------- the API


@pytest.mark.usefixtures("secret_env")
def test_the_api_fires_in_the_background_and_counts_on_metrics(
    engine: Engine,
    db_url: str,
    receiver: Receiver,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from core.api import create_app

    caplog.set_level(logging.DEBUG)
    settings = load_settings(
        database_url=db_url,
        alerts_file=alerts_file(
            tmp_path, receiver.url, rules=[{"name": "contradiction", "kind": "contradiction"}]
        ),
        enable_grounding_verification=False,  # no model to load: consistency alone fires
        learned_verifier=False,
    )
    token = add_key(engine, "app", ["ingest"])
    app = create_app(settings=settings, engine=engine)
    server, thread, url = serve(app)
    try:
        with httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60
        ) as c:
            deadline = time.monotonic() + 120
            while c.get("/v1/ready").status_code != 200:
                assert time.monotonic() < deadline, c.get("/v1/ready").text
                time.sleep(0.1)
            assert c.post("/v1/answers", json=record("api-1", 1, "500 mg")).status_code == 201
            assert c.post("/v1/answers", json=record("api-2", 2, "1000 mg")).status_code == 201
            deadline = time.monotonic() + 30
            while len(receiver.delivered()) < 1:
                assert time.monotonic() < deadline, receiver.requests
                time.sleep(0.05)
            # an identical answer again (unchanged) and a new contradiction: nothing new is sent
            assert c.post("/v1/answers", json=record("api-2", 2, "1000 mg")).status_code == 200
            assert c.post("/v1/answers", json=record("api-3", 3, "20 mg")).status_code == 201
            assert app.state.runtime.alerts.wait(30)
            text = c.get("/metrics").text
    finally:
        server.should_exit = True
        thread.join(timeout=30)
    assert [r.status for r in receiver.requests] == [500, 200]
    assert receiver.requests[1].signed
    assert receiver.requests[1].body["condition"] == "contradiction|patient:p-1"
    (row,) = firings(engine)["contradiction|patient:p-1"]
    assert row.occurrences == 2
    samples = {
        (s.name, s.labels.get("outcome")): s.value
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
        if s.name.startswith(("groundwatch_alert_firings_total", "groundwatch_webhook"))
    }
    assert samples[("groundwatch_alert_firings_total", None)] == 1
    assert samples[("groundwatch_webhook_deliveries_total", "retry")] == 1
    assert samples[("groundwatch_webhook_deliveries_total", "delivered")] == 1
    assert all(SENTINEL not in r.raw.decode() for r in receiver.requests)
    assert SENTINEL not in caplog.text


# --------------------------------------------------------------------------- the command line


@pytest.mark.usefixtures("secret_env")
def test_import_delivers_before_it_returns_and_check_fires_nothing_twice(
    use_db: str,
    receiver: Receiver,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from core.cli import app

    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("GROUNDWATCH_ALERTS_FILE", str(alerts_file(tmp_path, receiver.url)))
    monkeypatch.setenv("GROUNDWATCH_ENABLE_GROUNDING_VERIFICATION", "false")
    reset_settings_cache()
    lines = tmp_path / "records.jsonl"
    lines.write_text(
        "\n".join(json.dumps(record(f"c-{i}", i, d)) for i, d in ((1, "500 mg"), (2, "1000 mg")))
        + "\n",
        encoding="utf-8",
    )
    runner = CliRunner()
    done = runner.invoke(app, ["import", str(lines), "--json"])
    assert done.exit_code == 0, done.output
    # synchronous: the webhook answered before the command returned
    assert [r.status for r in receiver.requests] == [500, 200]
    checked = runner.invoke(app, ["alerts", "check", "--json"])
    assert checked.exit_code == 0, checked.output
    out = json.loads(checked.stdout.strip().splitlines()[-1])
    assert out["opened"] == []
    assert len(out["updated"]) == 1
    assert len(receiver.requests) == 2
    listed = json.loads(runner.invoke(app, ["alerts", "list", "--json"]).stdout)
    (alert,) = listed["alerts"]
    assert alert["state"] == "open"
    acked = runner.invoke(app, ["alerts", "ack", str(alert["id"]), "--by", "dr-d", "--json"])
    assert json.loads(acked.stdout)["state"] == "acknowledged"
    wrong = runner.invoke(app, ["alerts", "ack", str(alert["id"]), "--by", "dr-d", "--json"])
    assert wrong.exit_code == 2
    assert "cannot become acknowledged" in json.loads(wrong.stdout)["message"]
    assert SENTINEL not in checked.output + done.output + caplog.text


def test_an_invalid_alerts_file_stops_import_and_api_naming_rule_and_field(
    use_db: str, engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.api import create_app
    from core.cli import app

    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "rules:\n  - name: low\n    kind: score_below\n    score: grounding\n    threshold: 2\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("GROUNDWATCH_ALERTS_FILE", str(bad))
    reset_settings_cache()
    lines = tmp_path / "records.jsonl"
    lines.write_text(json.dumps(record("x-1", 1, "500 mg")) + "\n", encoding="utf-8")
    done = CliRunner().invoke(app, ["import", str(lines), "--json"])
    assert done.exit_code == 2
    message = json.loads(done.stdout.strip().splitlines()[-1])["message"]
    assert "rule 'low' (rules[0]), field threshold" in message
    with read_session(engine) as s:
        assert repo.count_conversations(session=s) == 0
    with pytest.raises(AlertRulesError, match=r"rule 'low' \(rules\[0\]\), field threshold"):
        create_app(settings=load_settings(database_url=use_db, alerts_file=bad), engine=engine)
