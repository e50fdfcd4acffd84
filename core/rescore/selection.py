"""What a re-scoring run covers and which verifier version it is: the selection (stored
answers by filter, or record files), the files' records validated like ``import``, and the
version recorded with each run (the learned verifier's weights, the scoring settings)."""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from core.config import Settings
from core.records import parse_jsonl, parse_record
from core.storage.repo import conversation_id_for

log = logging.getLogger(__name__)


Source = Literal["stored", "files"]
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
# The settings that decide a score; their hash is recorded with every run (not the database,
# the log level or the dashboard's settings, which change no score).
SCORING_SETTINGS: tuple[str, ...] = (
    "enable_grounding_verification",
    "enable_consistency_checking",
    "enable_confidence_calibration",
    "enable_hallucination_detection",
    "enable_evidence_validation",
    "enable_epistemic_verification",
    "check_sample_rate",
    "grounding_score_threshold",
    "consistency_score_threshold",
    "confidence_score_threshold",
    "hallucination_risk_threshold",
    "hallucination_detection_samples",
    "hallucination_detection_temp_range",
    "evidence_quote_validation_enabled",
    "evidence_quote_validation_mode",
    "evidence_quote_fuzzy_threshold",
    "embedding_model",
    "embedding_precision",
    "learned_verifier",
    "learned_verifier_path",
    "nli_model",
    "llm_base_url",
    "llm_model",
)


class RescoreError(ValueError):
    """A run cannot start or resume as asked (the message says why; never record text)."""


# --------------------------------------------------------------------------- versions


def settings_hash(settings: Settings, *, review_threshold: float | None = None) -> str:
    """SHA-256 (16 hex digits) of the settings that decide a score (:data:`SCORING_SETTINGS`)
    and of the review threshold applied from the dashboard (stored in the database)."""
    values: dict[str, Any] = {name: getattr(settings, name) for name in SCORING_SETTINGS}
    values["review_threshold"] = review_threshold
    payload = json.dumps(values, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def verifier_version(settings: Settings) -> str:
    """Which learned verifier decides grounding: its version and a 12-digit prefix of its
    weights' SHA-256 (``v3@1a2b3c4d5e6f``); ``rules`` when it is turned off, ``unavailable``
    when its files are missing."""
    if not settings.learned_verifier or not settings.enable_grounding_verification:
        return "rules"
    from core.grounding.learned import MODEL_DIR, WEIGHTS, shipped_settings

    folder = Path(settings.learned_verifier_path or MODEL_DIR)
    try:
        version = str(shipped_settings(folder).get("version", "unknown"))
        digest = hashlib.sha256((folder / WEIGHTS).read_bytes()).hexdigest()[:12]
    except (OSError, ValueError):
        return "unavailable"
    return f"{version}@{digest}"


# --------------------------------------------------------------------------- selection


@dataclass(frozen=True, slots=True)
class Selection:
    """What a run re-scores: stored answers by filter (answered in [since, until), by model,
    about a patient, flagged only), or the records of JSONL/Parquet files (``files``)."""

    since: datetime | None = None
    until: datetime | None = None
    model: str | None = None
    patient_id: str | None = None
    only_flagged: bool = False
    files: tuple[str, ...] = ()

    @property
    def source(self) -> Source:
        return "files" if self.files else "stored"

    def to_dict(self) -> dict[str, Any]:
        """JSON form, stored with the run (ids and file paths; no record text)."""
        return {
            "since": self.since.isoformat() if self.since else None,
            "until": self.until.isoformat() if self.until else None,
            "model": self.model,
            "patient_id": self.patient_id,
            "only_flagged": self.only_flagged,
            "files": list(self.files),
        }

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> Selection:
        def when(v: Any) -> datetime | None:
            return datetime.fromisoformat(v) if v else None

        return cls(
            since=when(value.get("since")),
            until=when(value.get("until")),
            model=value.get("model"),
            patient_id=value.get("patient_id"),
            only_flagged=bool(value.get("only_flagged")),
            files=tuple(value.get("files") or ()),
        )


def read_record_files(
    paths: Sequence[str], *, max_bytes: int, max_text_chars: int
) -> dict[str, str]:
    """Records of JSONL or Parquet files in the import format, validated like ``import``:
    conversation id -> the record as JSON. An invalid line or row stops the run, naming the
    file, the line (or row) and the field, never the text; a record id seen twice is refused.

    Raises:
        RescoreError: a missing, oversized or invalid file.
    """
    out: dict[str, str] = {}
    for path in paths:
        p = Path(path)
        if not p.is_file():
            raise RescoreError(f"{path}: file not found")
        if p.stat().st_size > max_bytes:
            raise RescoreError(
                f"{path}: above the limit of {max_bytes} bytes (GROUNDWATCH_MAX_INPUT_BYTES)"
            )
        if p.suffix.lower() == ".parquet":
            records = _parquet_records(p, max_text_chars=max_text_chars)
        else:
            parsed, errors = parse_jsonl(p.read_bytes(), max_text_chars=max_text_chars)
            if errors:
                first = errors[0]
                raise RescoreError(
                    f"{path}: {len(errors)} invalid line(s); line {first.line}: {first.error}"
                )
            records = [r for _, r in parsed]
        for record in records:
            cid = conversation_id_for(record.id)
            if cid in out:
                raise RescoreError(f"{path}: record id seen twice ({len(record.id)} characters)")
            out[cid] = record.model_dump_json()
    return out


def _parquet_records(path: Path, *, max_text_chars: int) -> list[Any]:
    import pyarrow.parquet as pq

    try:
        rows = pq.read_table(path).to_pylist()
    except Exception as exc:  # pyarrow raises several types for a broken file
        raise RescoreError(f"{path}: not a readable Parquet file ({type(exc).__name__})") from None
    out = []
    for i, row in enumerate(rows, start=1):
        try:
            out.append(parse_record(_plain(row), max_text_chars=max_text_chars))
        except ValueError as exc:
            raise RescoreError(f"{path}: row {i}: {exc}") from None
    return out


def _plain(value: Any) -> Any:
    """A Parquet row as the import format: null fields of structs left out, a map (a list of
    key/value pairs) as an object."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
            return {str(k): _plain(v) for k, v in value}
        return [_plain(v) for v in value]
    return value


# --------------------------------------------------------------------------- results
