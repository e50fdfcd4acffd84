"""The alerts file: rules and webhooks, read from YAML and validated with pydantic.

Four kinds of rule (``kind``):

- ``flagged_share``: the share of a model's answers flagged over a sliding window (ending at
  the newest answer) above ``threshold``, once the window holds ``min_answers``; one condition
  per model.
- ``contradiction``: an answer with a contradicted statement (grounding) or a contradiction of
  the patient's earlier answers (consistency); one condition per patient.
- ``score_below``: an answer's grounding or consistency score (higher is better) below
  ``threshold``; one condition per patient or per model (``per``).
- ``calibration_drift``: the expected calibration error of the statement risk against the most
  recent ``verdicts`` clinician verdicts above ``threshold``; one condition for the service.

An invalid file raises :class:`AlertRulesError`, naming the file, the rule (by name and
position) or webhook, and the field.
"""

from __future__ import annotations

import os
import re
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from core.config import SettingsError

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
MAX_FILE_BYTES = 1_000_000
_WINDOW = re.compile(r"^\s*(\d+)\s*([smhd])\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class AlertRulesError(SettingsError):
    """The alerts file is missing, not YAML, or invalid (the message names rule and field)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Webhook(_Strict):
    """Where firings are sent: a URL, the secret that signs the body, and the retry policy
    (attempt n waits ``backoff_s * 2**(n-2)`` seconds after a failure, at most
    ``max_backoff_s``)."""

    name: str = Field(pattern=NAME_PATTERN)
    url: str = Field(pattern=r"^https?://\S+$", max_length=2000)
    secret: str | None = Field(default=None, min_length=16, repr=False)
    secret_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    max_attempts: int = Field(default=5, ge=1, le=10)
    backoff_s: float = Field(default=1.0, ge=0.0, le=60.0)
    max_backoff_s: float = Field(default=60.0, ge=0.0, le=600.0)
    timeout_s: float = Field(default=10.0, gt=0.0, le=120.0)

    @model_validator(mode="after")
    def _one_secret(self) -> Webhook:
        if self.secret is not None and self.secret_env is not None:
            raise ValueError("give secret or secret_env, not both")
        return self

    def delays(self) -> list[float]:
        """The waits before attempts 2..max_attempts (exponential, bounded)."""
        return [
            min(self.max_backoff_s, self.backoff_s * 2**i) for i in range(self.max_attempts - 1)
        ]


class _Rule(_Strict):
    name: str = Field(pattern=NAME_PATTERN)
    notify: tuple[str, ...] | None = Field(
        default=None, description="Webhook names to send firings to; unset: every webhook."
    )


def _seconds(value: Any) -> Any:
    if isinstance(value, str):
        match = _WINDOW.match(value)
        if not match:
            raise ValueError("expected a duration such as 30m, 1h or 7d (s, m, h, d)")
        return timedelta(seconds=int(match.group(1)) * _UNITS[match.group(2)])
    if isinstance(value, int) and not isinstance(value, bool):
        return timedelta(seconds=value)
    raise ValueError("expected a duration such as 30m, 1h or 7d (s, m, h, d)")


class FlaggedShareRule(_Rule):
    """The share of a model's answers flagged over a sliding window above a threshold."""

    kind: Literal["flagged_share"]
    window: timedelta
    threshold: float = Field(ge=0.0, lt=1.0)
    min_answers: int = Field(default=20, ge=1, le=1_000_000)

    @field_validator("window", mode="before")
    @classmethod
    def _window(cls, value: Any) -> Any:
        return _seconds(value)

    @field_validator("window")
    @classmethod
    def _window_range(cls, value: timedelta) -> timedelta:
        if not timedelta(minutes=1) <= value <= timedelta(days=365):
            raise ValueError("must lie between 1m and 365d")
        return value


class ContradictionRule(_Rule):
    """Any contradicted statement in a patient's answer, or a contradiction of the patient's
    earlier answers."""

    kind: Literal["contradiction"]
    source: Literal["any", "grounding", "consistency"] = "any"


class ScoreBelowRule(_Rule):
    """An answer's grounding or consistency score (higher is better) below a threshold."""

    kind: Literal["score_below"]
    score: Literal["grounding", "consistency"]
    threshold: float = Field(gt=0.0, le=1.0)
    per: Literal["patient", "model"] = "patient"


class CalibrationDriftRule(_Rule):
    """The ECE of the statement risk over the most recent clinician verdicts above a
    threshold (lower ECE is better)."""

    kind: Literal["calibration_drift"]
    verdicts: int = Field(default=100, ge=10, le=100_000)
    threshold: float = Field(gt=0.0, lt=1.0)
    bins: int = Field(default=10, ge=2, le=50)


Rule = Annotated[
    FlaggedShareRule | ContradictionRule | ScoreBelowRule | CalibrationDriftRule,
    Field(discriminator="kind"),
]
KINDS = ("flagged_share", "contradiction", "score_below", "calibration_drift")


class AlertsConfig(_Strict):
    """The whole alerts file."""

    dashboard_url: str | None = Field(
        default=None,
        pattern=r"^https?://\S+$",
        description="Public address of the dashboard; webhook bodies link to it.",
    )
    webhooks: tuple[Webhook, ...] = ()
    rules: tuple[Rule, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _names(self) -> AlertsConfig:
        seen: set[str] = set()
        for rule in self.rules:
            if rule.name in seen:
                raise ValueError(f"rule {rule.name!r}: the name is used twice")
            seen.add(rule.name)
        hooks = [w.name for w in self.webhooks]
        if len(set(hooks)) != len(hooks):
            raise ValueError("webhooks: a name is used twice")
        for rule in self.rules:
            for name in rule.notify or ():
                if name not in hooks:
                    raise ValueError(f"rule {rule.name!r}, field notify: no webhook named {name!r}")
        return self

    def webhooks_for(self, rule: _Rule) -> list[Webhook]:
        """The webhooks a rule's firings go to."""
        if rule.notify is None:
            return list(self.webhooks)
        return [w for w in self.webhooks if w.name in rule.notify]

    def rule(self, name: str) -> Any:
        """The rule with this name, or None."""
        return next((r for r in self.rules if r.name == name), None)


def _where(loc: tuple[Any, ...], raw: Any) -> str:
    """A readable place for a pydantic error location: rule 'x' (rules[2]), field threshold."""
    if len(loc) >= 2 and loc[0] in ("rules", "webhooks") and isinstance(loc[1], int):
        section, index = str(loc[0]), loc[1]
        items = raw.get(section) if isinstance(raw, dict) else None
        item = items[index] if isinstance(items, list) and index < len(items) else None
        name = item.get("name") if isinstance(item, dict) else None
        what = "rule" if section == "rules" else "webhook"
        label = (
            f"{what} {name!r} ({section}[{index}])"
            if isinstance(name, str)
            else f"{section}[{index}]"
        )
        rest = [str(p) for p in loc[2:] if str(p) not in KINDS]
        return f"{label}, field {'.'.join(rest)}" if rest else label
    return f"field {'.'.join(str(p) for p in loc)}" if loc else "the file"


def parse_config(raw: Any, *, source: str = "alerts file") -> AlertsConfig:
    """Validate a decoded alerts file.

    Raises:
        AlertRulesError: naming each problem's rule or webhook and field.
    """
    if not isinstance(raw, dict):
        raise AlertRulesError(f"{source}: expected a mapping with 'rules' (and 'webhooks')")
    try:
        return AlertsConfig.model_validate(raw)
    except ValidationError as exc:
        parts = []
        for err in exc.errors():
            msg = str(err["msg"]).removeprefix("Value error, ")
            if err["type"] == "union_tag_invalid":
                msg = f"unknown kind; allowed: {', '.join(KINDS)}"
            elif err["type"] == "union_tag_not_found":
                msg = f"kind is missing; allowed: {', '.join(KINDS)}"
            where = _where(tuple(err["loc"]), raw)
            parts.append(msg if where == "the file" else f"{where}: {msg}")
        raise AlertRulesError(f"{source}: " + "; ".join(parts)) from None


def load_config(path: Path) -> AlertsConfig:
    """Read and validate the alerts file at ``path``.

    Raises:
        AlertRulesError: the file cannot be read, is not YAML, or is invalid.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise AlertRulesError(
            f"alerts file {path}: cannot be read ({type(exc).__name__}; GROUNDWATCH_ALERTS_FILE)"
        ) from None
    if len(data) > MAX_FILE_BYTES:
        raise AlertRulesError(f"alerts file {path}: larger than {MAX_FILE_BYTES} bytes")
    try:
        raw = yaml.safe_load(data.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise AlertRulesError(f"alerts file {path}: not valid YAML{where}") from None
    return parse_config(raw, source=f"alerts file {path}")


def resolve_secret(hook: Webhook, default: str | None) -> str:
    """The secret that signs ``hook``'s bodies: its own, the variable it names, or the
    default (``GROUNDWATCH_ALERTS_WEBHOOK_SECRET``).

    Raises:
        AlertRulesError: no secret, or a named variable that is unset.
    """
    if hook.secret is not None:
        return hook.secret
    if hook.secret_env is not None:
        value = os.environ.get(hook.secret_env)
        if not value:
            raise AlertRulesError(
                f"webhook {hook.name!r}, field secret_env: the variable {hook.secret_env} is unset"
            )
        return value
    if default:
        return default
    raise AlertRulesError(
        f"webhook {hook.name!r}: no secret (set secret or secret_env, or "
        "GROUNDWATCH_ALERTS_WEBHOOK_SECRET)"
    )


__all__ = [
    "KINDS",
    "AlertRulesError",
    "AlertsConfig",
    "CalibrationDriftRule",
    "ContradictionRule",
    "FlaggedShareRule",
    "Rule",
    "ScoreBelowRule",
    "Webhook",
    "load_config",
    "parse_config",
    "resolve_secret",
]
