"""Webhook delivery: a signed JSON body without patient text, retried with exponential
backoff, each attempt logged (status code or error class, never a body).

The body is serialised once and the same bytes are sent on every attempt; the header
``X-Groundwatch-Signature: sha256=<hex>`` is the HMAC-SHA256 of those bytes with the
webhook's secret, so a receiver recomputes it over the raw body it read.

A 2xx answer is ``delivered``; a 408, 425, 429, 5xx or a transport error is retried after
``backoff_s * 2**(n-1)`` seconds (at most ``max_backoff_s``) until ``max_attempts``; any other
answer (a 3xx or 4xx) fails at once. :class:`BackgroundSender` runs deliveries on one thread
with a bounded queue, so the answer that fired never waits for a webhook; a delivery that
does not fit in the queue, or is still waiting when the process ends (after up to
:data:`EXIT_WAIT_S` seconds), is logged ``dropped``.
"""

from __future__ import annotations

import atexit
import hashlib
import hmac
import json
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx
from sqlalchemy.engine import Engine

from core.alerts.rules import Webhook
from core.storage import alerts as store
from core.storage.db import write_session
from core.storage.models import AlertFiring

log = logging.getLogger("core.alerts")

SIGNATURE_HEADER = "X-Groundwatch-Signature"
RETRY_STATUSES = frozenset({408, 425, 429})
QUEUE_SIZE = 1000
# how long a process that ends waits for queued deliveries
EXIT_WAIT_S = 30.0

OnAttempt = Callable[[str, str], None]  # (webhook name, outcome)


def sign(body: bytes, secret: str) -> str:
    """The signature header's value: ``sha256=`` and the hex HMAC-SHA256 of ``body``."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def verify(body: bytes, secret: str, header: str | None) -> bool:
    """Whether ``header`` is the signature of ``body`` with ``secret`` (constant time)."""
    return header is not None and hmac.compare_digest(sign(body, secret), header)


def _iso(at: datetime | None) -> str | None:
    return at.isoformat() if at is not None else None


def payload(
    firing: AlertFiring, *, external_ids: dict[str, str], dashboard_url: str | None
) -> bytes:
    """The JSON body for a firing: rule, condition, counts, scores, ids and links. It is built
    from the firing's columns and the answers' ids only, so it cannot carry patient text."""
    base = dashboard_url.rstrip("/") if dashboard_url else None
    answers = [
        {
            "id": external_ids.get(cid),
            "conversation_id": cid,
            "link": f"{base}/report?id={cid}" if base else None,
        }
        for cid in firing.conversation_ids or []
    ]
    body = {
        "event": "alert.fired",
        "firing_id": firing.id,
        "rule": firing.rule,
        "kind": firing.kind,
        "condition": firing.condition_key,
        "state": firing.state,
        "model": firing.model,
        "patient_id": firing.patient_id,
        "value": firing.value,
        "threshold": firing.threshold,
        "counts": firing.counts or {},
        "occurrences": firing.occurrences,
        "first_at": _iso(firing.first_at),
        "last_at": _iso(firing.last_at),
        "answers": answers,
        "link": f"{base}/alerts?alert={firing.id}" if base else None,
    }
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")


@dataclass(frozen=True, slots=True)
class Delivery:
    """One firing's body, to be sent to each of ``webhooks``."""

    firing_id: int
    body: bytes
    webhooks: tuple[Webhook, ...]


class WebhookSender:
    """Sends deliveries synchronously: every attempt logged in ``alert_delivery``.

    Args:
        engine: where the delivery log is written.
        secrets: the signing secret of each webhook, by name.
        on_attempt: called with (webhook, outcome) after each attempt (metrics).
        sleep: how to wait between attempts (tests pass a recorder).
    """

    def __init__(
        self,
        *,
        engine: Engine,
        secrets: dict[str, str],
        on_attempt: OnAttempt | None = None,
        sleep: Callable[[float], Any] = time.sleep,
    ) -> None:
        self.engine = engine
        self.secrets = secrets
        self.on_attempt = on_attempt
        self.sleep = sleep

    def send(self, delivery: Delivery) -> dict[str, str]:
        """Deliver to each webhook in turn; the final outcome per webhook."""
        return {hook.name: self._send_one(delivery, hook) for hook in delivery.webhooks}

    def _send_one(self, delivery: Delivery, hook: Webhook) -> str:
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "groundwatch-alerts",
            "X-Groundwatch-Event": "alert.fired",
            "X-Groundwatch-Delivery": str(delivery.firing_id),
            SIGNATURE_HEADER: sign(delivery.body, self.secrets[hook.name]),
        }
        delays = hook.delays()
        outcome = "failed"
        with httpx.Client(timeout=hook.timeout_s, follow_redirects=False) as client:
            for attempt in range(1, hook.max_attempts + 1):
                started = time.perf_counter()
                status: int | None = None
                error: str | None = None
                try:
                    status = client.post(
                        hook.url, content=delivery.body, headers=headers
                    ).status_code
                except httpx.HTTPError as exc:
                    error = type(exc).__name__
                retryable = error is not None or (
                    status is not None and (status >= 500 or status in RETRY_STATUSES)
                )
                if status is not None and 200 <= status < 300:
                    outcome = "delivered"
                elif retryable and attempt < hook.max_attempts:
                    outcome = "retry"
                else:
                    outcome = "failed"
                self._log(delivery, hook, attempt, outcome, status, error, started)
                if outcome != "retry":
                    break
                self.sleep(delays[attempt - 1])
        return outcome

    def _log(
        self,
        delivery: Delivery,
        hook: Webhook,
        attempt: int,
        outcome: str,
        status: int | None,
        error: str | None,
        started: float,
    ) -> None:
        ms = int((time.perf_counter() - started) * 1000)
        log.info(
            "webhook %s alert %d attempt %d: %s (%s)",
            hook.name,
            delivery.firing_id,
            attempt,
            outcome,
            status if status is not None else error,
        )
        try:
            with write_session(self.engine) as session:
                store.record_delivery(
                    session=session,
                    firing_id=delivery.firing_id,
                    webhook=hook.name,
                    attempt=attempt,
                    outcome=outcome,  # type: ignore[arg-type]
                    status_code=status,
                    error_class=error,
                    duration_ms=ms,
                )
        except Exception as exc:  # the log is best effort; the attempt itself happened
            log.error("webhook %s: delivery log not written (%s)", hook.name, type(exc).__name__)
        if self.on_attempt is not None:
            self.on_attempt(hook.name, outcome)

    def drop(self, delivery: Delivery, reason: str) -> None:
        """Log every webhook of a delivery that will not be attempted as ``dropped``."""
        for hook in delivery.webhooks:
            self._log(delivery, hook, 0, "dropped", None, reason, time.perf_counter())


class BackgroundSender:
    """Runs a :class:`WebhookSender` on one daemon thread, fed by a bounded queue: submitting
    never blocks; what does not fit is logged ``dropped`` (never lost silently)."""

    def __init__(self, sender: WebhookSender, *, maxsize: int = QUEUE_SIZE) -> None:
        self.sender = sender
        self._queue: queue.Queue[Delivery | None] = queue.Queue(maxsize=maxsize)
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="groundwatch-webhooks", daemon=True)
        self._thread.start()
        # a process that ends (a command, a server stopping) lets queued deliveries finish
        atexit.register(self.close, EXIT_WAIT_S)

    def submit(self, delivery: Delivery) -> None:
        """Queue a delivery (returns at once)."""
        if self._closed:
            self.sender.drop(delivery, "Shutdown")
            return
        try:
            self._queue.put_nowait(delivery)
        except queue.Full:
            self.sender.drop(delivery, "QueueFull")

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                self.sender.send(item)
            except Exception as exc:  # one bad delivery must not stop the thread
                log.error("webhook delivery failed: %s", type(exc).__name__)
            finally:
                self._queue.task_done()

    def wait(self, timeout: float) -> bool:
        """Wait until the queue is empty; whether it emptied within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
        return True

    def close(self, timeout: float = 5.0) -> None:
        """Let queued deliveries finish for up to ``timeout`` seconds, then stop the thread;
        those still waiting are logged ``dropped`` (error class ``Shutdown``)."""
        if self._closed:
            return
        self._closed = True
        self.wait(timeout)
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                self.sender.drop(item, "Shutdown")
            self._queue.task_done()
        self._queue.put(None)


__all__ = [
    "SIGNATURE_HEADER",
    "BackgroundSender",
    "Delivery",
    "WebhookSender",
    "payload",
    "sign",
    "verify",
]
