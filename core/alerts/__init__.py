"""Alerts: rules from a YAML file evaluated on stored answers, firings stored one per open
condition, and signed webhooks with retries (docs/alerts.md)."""

from core.alerts.monitor import AlertMonitor, CheckResult
from core.alerts.rules import AlertRulesError, AlertsConfig, load_config, parse_config

__all__ = [
    "AlertMonitor",
    "AlertRulesError",
    "AlertsConfig",
    "CheckResult",
    "load_config",
    "parse_config",
]
