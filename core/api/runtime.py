"""What one API process holds: settings, engine, the pipeline (loaded once, in the
background, so that liveness answers at once) and the metrics registry."""

from __future__ import annotations

import logging
import threading
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from sqlalchemy.engine import Engine

from core.api.limits import RateLimiter
from core.config import Settings
from core.storage.db import DatabaseError, alembic_config, check_connection, current_revision

log = logging.getLogger("core.api")

# how long a request waits for the pipeline to finish loading
LOAD_TIMEOUT_S = 300.0


class Metrics:
    """The Prometheus series of one app (its own registry: two apps in one process, as in
    tests, never share counters)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "groundwatch_api_requests",
            "HTTP requests by route template, method and status code.",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "groundwatch_api_request_duration_seconds",
            "Time from request to response, by route template.",
            ["route"],
            registry=self.registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
        )
        self.answers = Counter(
            "groundwatch_answers_checked",
            "Answers received through the API, by what storing them did "
            "(imported, updated, unchanged; queued: accepted for a worker).",
            ["store_status"],
            registry=self.registry,
        )
        self.flagged = Counter(
            "groundwatch_answers_flagged",
            "Answers checked through the API and flagged (new or updated ones).",
            registry=self.registry,
        )
        self.checks = Counter(
            "groundwatch_checks",
            "Checks run on answers received through the API, by check and status.",
            ["check", "status"],
            registry=self.registry,
        )


class Runtime:
    """Settings, engine, pipeline and metrics of one app."""

    def __init__(self, *, settings: Settings, engine: Engine) -> None:
        self.settings = settings
        self.engine = engine
        self.metrics = Metrics()
        self.limiter = RateLimiter(settings.api_rate_limit)
        from core.alerts import AlertMonitor

        # the alert rules, validated now (an invalid file stops start-up, naming rule and
        # field); webhooks are sent by a background thread, never by the request
        self.alerts = AlertMonitor.from_settings(
            settings, engine, delivery="background", registry=self.metrics.registry
        )
        self._pipeline: Any = None
        self._load_error: str | None = None
        self._loaded = threading.Event()
        self._started = False
        self._lock = threading.Lock()
        url = engine.url.render_as_string(hide_password=False)
        from alembic.script import ScriptDirectory

        self.head = ScriptDirectory.from_config(alembic_config(url)).get_current_head()

    def start_loading(self) -> None:
        """Load the pipeline (models included) in a background thread, once."""
        with self._lock:
            if self._started:
                return
            self._started = True
        threading.Thread(target=self._load, name="groundwatch-api-load", daemon=True).start()

    def _load(self) -> None:
        try:
            from core.pipeline import QualityPipeline

            self._pipeline = QualityPipeline(
                settings=self.settings, engine=self.engine, alerts=self.alerts
            )
            log.info("pipeline loaded")
        except Exception as exc:  # reported by /v1/ready and 503s, type only
            self._load_error = type(exc).__name__
            log.error("pipeline failed to load: %s", type(exc).__name__)
        finally:
            self._loaded.set()

    def close(self) -> None:
        """Give queued webhook deliveries a few seconds to finish (at shutdown)."""
        if self.alerts is not None:
            self.alerts.close(timeout=5.0)

    def pipeline(self, timeout: float = LOAD_TIMEOUT_S) -> Any:
        """The loaded pipeline, waiting for it while it loads; None when it could not load."""
        self.start_loading()
        self._loaded.wait(timeout)
        return self._pipeline

    def missing(self) -> list[str]:
        """What keeps the service from being ready (empty when ready): the database (reachable,
        migrated to the newest revision), the pipeline, and each backend the settings ask for.
        Names and statuses only."""
        found: list[str] = []
        try:
            check_connection(self.engine)
            at = current_revision(self.engine)
        except DatabaseError:
            found.append("database: not reachable")
        else:
            if at != self.head:
                found.append(
                    f"database: schema at revision {at or 'none'}, the code needs {self.head} "
                    "(run groundwatch init-db)"
                )
        if not self._loaded.is_set():
            found.append("models: still loading")
            return found
        if self._pipeline is None:
            found.append(f"models: the pipeline failed to load ({self._load_error})")
            return found
        s = self.settings
        wanted = {
            "embedder": s.enable_grounding_verification,
            "learned": s.enable_grounding_verification and s.learned_verifier,
            "nli": bool(s.nli_model),
            "llm": bool(s.llm_base_url),
        }
        for name, needed in wanted.items():
            status = self._pipeline.backend_status.get(name)
            if needed and status is not None and status.status != "ok":
                found.append(f"models: {name} {status}")
        return found
