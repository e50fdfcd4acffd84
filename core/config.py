"""Settings: every knob of Groundwatch, read from ``GROUNDWATCH_*`` environment variables.

An invalid value stops start-up with :class:`SettingsError`, whose message names the variable
and the allowed values; it never carries patient text.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

ENV_PREFIX = "GROUNDWATCH_"


class SettingsError(RuntimeError):
    """Raised when a ``GROUNDWATCH_*`` variable holds an invalid value."""


class Settings(BaseSettings):
    """Groundwatch configuration (environment variables prefixed ``GROUNDWATCH_``)."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, extra="ignore", validate_default=True, frozen=True
    )

    # Storage
    database_url: str = Field(
        default="sqlite:///groundwatch.db",
        description="SQLAlchemy URL: sqlite:///path.db or postgresql+psycopg://user@host/db.",
    )
    max_input_bytes: int = Field(
        default=50_000_000, ge=1, description="Largest file accepted by import/evidence/upload."
    )
    max_transcript_chars: int = Field(
        default=2_000_000, ge=1, description="Longest transcript or source text accepted."
    )

    # Phase 9 feature flags
    enable_conversation_history: bool = True
    enable_grounding_verification: bool = True
    enable_consistency_checking: bool = True
    enable_confidence_calibration: bool = True
    enable_hallucination_detection: bool = False
    enable_evidence_validation: bool = True
    enable_epistemic_verification: bool = True
    check_sample_rate: float = Field(
        default=1.0,
        ge=0.0,
        le=1.0,
        description=(
            "Share of records checked (gradual rollout): a record is checked when a hash of "
            "its id falls under the rate, so the same record always gets the same decision; "
            "the others are stored with every check skipped."
        ),
    )

    # Phase 9 thresholds
    grounding_score_threshold: float = Field(default=0.7, ge=0.0, le=1.0)
    consistency_score_threshold: float = Field(default=0.8, ge=0.0, le=1.0)
    confidence_score_threshold: float = Field(default=0.6, ge=0.0, le=1.0)
    hallucination_risk_threshold: float = Field(default=0.3, ge=0.0, le=1.0)
    hallucination_detection_samples: int = Field(default=3, ge=1, le=50)
    hallucination_detection_temp_range: float = Field(default=0.1, ge=0.0, le=2.0)

    # Spec 053 evidence-quote grounding
    evidence_quote_validation_enabled: bool = True
    evidence_quote_validation_mode: Literal["substring", "fuzzy"] = "substring"
    evidence_quote_fuzzy_threshold: float = Field(default=0.85, ge=0.5, le=1.0)
    evidence_quote_fail_on_all_rejected: bool = False
    evidence_quote_log_rejections: bool = True

    # Models and backends (all offline)
    embedding_model: str | None = Field(
        default=None, description="Path of a sentence-transformers model; default: MiniLM package."
    )
    embedding_precision: Literal["auto", "bf16", "fp32"] = Field(
        default="auto",
        description=(
            "Transformer precision: bf16 (a third to a half of fp32's CPU time with AMX or"
            " AVX512-BF16, vectors cached under a -bf16 model name), fp32, or auto (bf16 where"
            " the CPU has AMX or AVX512-BF16, else fp32)."
        ),
    )
    embedding_workers: int = Field(
        default=0,
        ge=0,
        le=64,
        description=(
            "Threads encoding batches side by side with single-threaded kernels; 0: one per"
            " core; 1: one batch at a time on PyTorch's intra-op threads."
        ),
    )
    learned_verifier: bool = Field(
        default=True,
        description="Grounding decided by the learned verifier shipped in the package.",
    )
    learned_verifier_path: Path | None = Field(
        default=None,
        description="Folder of another learned verifier (model.safetensors + verifier.json).",
    )
    nli_model: str | None = Field(
        default=None, description="Path or name of an NLI cross-encoder; unset: tier unavailable."
    )
    llm_base_url: str | None = Field(
        default=None, description="OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1."
    )
    llm_model: str = "local"
    llm_api_key: str | None = None
    llm_timeout_s: float = Field(default=60.0, gt=0)
    llm_max_retries: int = Field(default=2, ge=0, le=10)

    # Dashboard and access
    auth_file: Path | None = Field(
        default=None, description="YAML file of users (bcrypt hashes) and roles; unset: no login."
    )
    retention_days: int | None = Field(default=None, ge=1)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"

    # Alerts (docs/alerts.md)
    alerts_file: Path | None = Field(
        default=None,
        description="YAML file of alert rules and webhooks; unset: no alerts are evaluated.",
    )
    alerts_webhook_secret: str | None = Field(
        default=None,
        min_length=16,
        repr=False,
        description="Secret signing the webhook bodies of webhooks that name none of their own.",
    )

    # HTTP API (groundwatch api)
    api_max_batch: int = Field(
        default=100, ge=1, le=10_000, description="Most records one POST /v1/answers/batch takes."
    )
    api_max_body_bytes: int = Field(
        default=10_000_000, ge=1_000, description="Largest request body the API reads (else 413)."
    )
    otlp_patient_attribute: str = Field(
        default="groundwatch.patient_id",
        min_length=1,
        max_length=200,
        description=(
            "Span or resource attribute POST /v1/traces takes the patient id from (never guessed"
            " from session or user ids); LLM spans without it are rejected."
        ),
    )
    api_rate_limit: int = Field(
        default=6000,
        ge=0,
        le=1_000_000,
        description="Requests per minute per API key, in each API process (else 429); 0: off.",
    )

    # Queued ingestion (PostgreSQL only: groundwatch worker, POST /v1/answers?mode=async)
    queue_max_attempts: int = Field(
        default=3, ge=1, le=100, description="Tries of a queued answer before its dead-letter."
    )
    queue_retry_wait_s: int = Field(
        default=5, ge=0, le=3600, description="Seconds between two tries of a failing answer."
    )
    queue_stalled_after_s: float = Field(
        default=60.0,
        ge=2.0,
        le=86_400.0,
        description="A job whose worker sent no heartbeat for this long is run again.",
    )
    queue_worker_batch: int = Field(
        default=16,
        ge=1,
        le=256,
        description="Jobs a worker holds at once and checks as one batch (one pipeline call).",
    )

    @field_validator("database_url")
    @classmethod
    def _check_database_url(cls, value: str) -> str:
        allowed = ("sqlite", "postgresql")
        scheme = value.split(":", 1)[0].split("+", 1)[0]
        if "://" not in value or scheme not in allowed:
            raise ValueError("must be a URL starting with sqlite:// or postgresql://")
        return value


def _describe(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        field = str(item["loc"][0]) if item["loc"] else "?"
        var = ENV_PREFIX + field.upper()
        ctx = item.get("ctx") or {}
        allowed = ctx.get("expected")
        msg = item["msg"]
        if allowed:
            parts.append(f"{var}: invalid value; allowed: {allowed}")
        else:
            parts.append(f"{var}: {msg}")
    return "; ".join(parts)


def load_settings(**overrides: object) -> Settings:
    """Build settings from the environment plus explicit overrides.

    Raises:
        SettingsError: naming each invalid variable and what it allows.
    """
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        raise SettingsError("invalid configuration: " + _describe(exc)) from None


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once."""
    return load_settings()


def reset_settings_cache() -> None:
    """Forget the cached settings (tests change the environment)."""
    get_settings.cache_clear()


def env_snapshot() -> dict[str, str]:
    """The ``GROUNDWATCH_*`` variables currently set (for diagnostics; values not logged)."""
    return {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIX)}
