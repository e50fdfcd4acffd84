"""The alert monitor: evaluates the rules on stored answers, stores firings (one per open
condition) and hands new ones to the webhooks.

The pipeline calls :meth:`AlertMonitor.after_store` once a batch of answers is committed (the
one place every ingest passes: the API, ``groundwatch import``, the dashboard's upload and the
demo); ``groundwatch alerts check`` calls :meth:`AlertMonitor.check`. Neither can fail the
ingest: an error while evaluating is logged by class and counted, and the answers stay stored.

Delivery is ``background`` in long-running processes (the API, the dashboard: one sender
thread, the request never waits for a webhook) and ``sync`` on the command line (the command
returns once every webhook answered or ran out of attempts).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from prometheus_client import CollectorRegistry, Counter
from sqlalchemy.engine import Engine

from core.alerts import evaluate
from core.alerts.evaluate import Finding
from core.alerts.rules import (
    AlertsConfig,
    CalibrationDriftRule,
    ContradictionRule,
    FlaggedShareRule,
    ScoreBelowRule,
    load_config,
    resolve_secret,
)
from core.alerts.webhooks import BackgroundSender, Delivery, WebhookSender, payload
from core.config import Settings
from core.storage import alerts as store
from core.storage.db import read_session, write_session

log = logging.getLogger("core.alerts")

DeliveryMode = Literal["sync", "background"]


class AlertMetrics:
    """The alert series on a Prometheus registry (the API's own, so ``/metrics`` shows them)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.firings = Counter(
            "groundwatch_alert_firings",
            "Alert firings opened, by rule and kind (a condition already open is not counted).",
            ["rule", "kind"],
            registry=registry,
        )
        self.deliveries = Counter(
            "groundwatch_webhook_deliveries",
            "Webhook delivery attempts by webhook and outcome (delivered, retry, failed, dropped).",
            ["webhook", "outcome"],
            registry=registry,
        )
        self.errors = Counter(
            "groundwatch_alert_errors",
            "Alert evaluations that failed (the answers stayed stored; the log names the class).",
            registry=registry,
        )


@dataclass(frozen=True, slots=True)
class CheckResult:
    """What one evaluation found: every finding, and the firings opened by it."""

    findings: tuple[Finding, ...]
    opened: tuple[int, ...]
    updated: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe summary (no patient text)."""
        return {
            "findings": [f.to_dict() for f in self.findings],
            "opened": list(self.opened),
            "updated": list(self.updated),
        }


class AlertMonitor:
    """Evaluates ``config``'s rules on ``engine`` and delivers new firings.

    Args:
        config: the validated alerts file.
        engine: the database the answers are stored in.
        default_secret: ``GROUNDWATCH_ALERTS_WEBHOOK_SECRET``, for webhooks without their own.
        delivery: ``sync`` (send before returning) or ``background`` (a sender thread).
        registry: a Prometheus registry to count firings and deliveries on.
        sleep: the wait between attempts (tests shorten it).
    """

    def __init__(
        self,
        *,
        config: AlertsConfig,
        engine: Engine,
        default_secret: str | None = None,
        delivery: DeliveryMode = "background",
        registry: CollectorRegistry | None = None,
        sleep: Callable[[float], Any] | None = None,
    ) -> None:
        self.config = config
        self.engine = engine
        self.metrics = AlertMetrics(registry) if registry is not None else None
        secrets = {w.name: resolve_secret(w, default_secret) for w in config.webhooks}
        extra: dict[str, Any] = {"sleep": sleep} if sleep is not None else {}
        self.sender = WebhookSender(
            engine=engine, secrets=secrets, on_attempt=self._count_attempt, **extra
        )
        self.background = BackgroundSender(self.sender) if delivery == "background" else None

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        engine: Engine,
        *,
        delivery: DeliveryMode = "background",
        registry: CollectorRegistry | None = None,
    ) -> AlertMonitor | None:
        """The monitor of ``GROUNDWATCH_ALERTS_FILE``, or None when it is unset.

        Raises:
            AlertRulesError: the file is invalid (the message names rule and field).
        """
        if settings.alerts_file is None:
            return None
        return cls(
            config=load_config(settings.alerts_file),
            engine=engine,
            default_secret=settings.alerts_webhook_secret,
            delivery=delivery,
            registry=registry,
        )

    # ------------------------------------------------------------------ entry points

    def after_store(self, conversation_ids: Sequence[str]) -> CheckResult | None:
        """Evaluate the rules on answers just stored. Never raises: the answers are stored
        whatever happens here (an error is logged by class and counted)."""
        if not conversation_ids:
            return None
        try:
            return self._run(conversation_ids)
        except Exception as exc:
            log.error("alert evaluation failed: %s", type(exc).__name__)
            if self.metrics is not None:
                self.metrics.errors.inc()
            return None

    def check(self, *, last: int = 500) -> CheckResult:
        """Evaluate every rule now: the per-answer rules on the ``last`` most recent answers,
        the flagged share at each model's newest answer, the calibration drift on the recent
        verdicts. Errors propagate (the command reports them)."""
        with read_session(self.engine) as session:
            ids = store.recent_answer_ids(session=session, limit=last)
        return self._run(ids, every_model=True)

    def wait(self, timeout: float) -> bool:
        """Wait for background deliveries to finish (True when none is left)."""
        return self.background.wait(timeout) if self.background is not None else True

    def close(self, timeout: float = 5.0) -> None:
        """Let background deliveries finish for up to ``timeout`` seconds, then stop."""
        if self.background is not None:
            self.background.close(timeout)

    # ------------------------------------------------------------------ evaluation

    def findings(
        self, conversation_ids: Sequence[str], *, every_model: bool = False
    ) -> list[Finding]:
        """What each rule finds for the given answers (nothing is stored)."""
        out: list[Finding] = []
        with read_session(self.engine) as session:
            facts = store.answer_facts(session=session, conversation_ids=conversation_ids)
            ends: dict[str, Any] = {}
            if every_model:
                ends = store.latest_answer_time_by_model(session=session)
            else:
                for f in facts:
                    ends[f.model] = max(ends.get(f.model, f.timestamp), f.timestamp)
            drift_rules = [r for r in self.config.rules if isinstance(r, CalibrationDriftRule)]
            verdicts = (
                store.recent_verdicts(session=session, limit=max(r.verdicts for r in drift_rules))
                if drift_rules
                else []
            )
            for rule in self.config.rules:
                if isinstance(rule, FlaggedShareRule):
                    for model, end in sorted(ends.items()):
                        counts = store.window_counts(
                            session=session, model=model, start=end - rule.window, end=end
                        )
                        out.append(evaluate.flagged_share(rule, model, counts))
                elif isinstance(rule, ContradictionRule):
                    out.extend(evaluate.contradiction(rule, f) for f in facts)
                elif isinstance(rule, ScoreBelowRule):
                    out.extend(evaluate.score_below(rule, f) for f in facts)
                else:
                    out.append(evaluate.calibration_drift(rule, verdicts))
        return out

    def _run(self, conversation_ids: Sequence[str], *, every_model: bool = False) -> CheckResult:
        findings = self.findings(conversation_ids, every_model=every_model)
        opened: list[int] = []
        updated: list[int] = []
        deliveries: list[Delivery] = []
        for finding in findings:
            if finding.firing is None:
                continue
            with write_session(self.engine) as session:
                firing, new = store.fire(session=session, firing_in=finding.firing)
                fid = int(firing.id or 0)
                if not new:
                    updated.append(fid)
                    continue
                opened.append(fid)
                rule = self.config.rule(firing.rule)
                hooks = tuple(self.config.webhooks_for(rule)) if rule is not None else ()
                body = payload(
                    firing,
                    external_ids=store.external_ids(
                        session=session, conversation_ids=firing.conversation_ids or []
                    ),
                    dashboard_url=self.config.dashboard_url,
                )
            log.info("alert %d opened: rule %s (%s)", fid, firing.rule, firing.kind)
            if self.metrics is not None:
                self.metrics.firings.labels(firing.rule, firing.kind).inc()
            if hooks:
                deliveries.append(Delivery(fid, body, hooks))
        for delivery in deliveries:
            if self.background is not None:
                self.background.submit(delivery)
            else:
                self.sender.send(delivery)
        return CheckResult(tuple(findings), tuple(opened), tuple(dict.fromkeys(updated)))

    def _count_attempt(self, webhook: str, outcome: str) -> None:
        if self.metrics is not None:
            self.metrics.deliveries.labels(webhook, outcome).inc()


__all__ = ["AlertMetrics", "AlertMonitor", "CheckResult", "DeliveryMode"]
