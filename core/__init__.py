"""Groundwatch core: detectors, pipeline and storage (everything but the UI).

The evidence-quote API (specs 053 and 054) is importable from here directly; the other
detectors live in their modules (``core.grounding``, ``core.selfcheck``, ``core.consistency``,
``core.calibration``, ``core.epistemic``) because they load models.
"""

from core.evidence import (
    FAILURE_CATEGORY,
    PHQ8_KEYS,
    EvidenceGrounder,
    EvidenceGroundingError,
    EvidenceGroundingResult,
    EvidenceGroundingStats,
    EvidenceSchemaError,
    QuoteMatch,
    ValidatedEvidence,
    normalize_for_quote_match,
    validate_evidence_grounding,
    validate_evidence_schema,
)

__version__ = "0.1.0"

__all__ = [
    "FAILURE_CATEGORY",
    "PHQ8_KEYS",
    "EvidenceGrounder",
    "EvidenceGroundingError",
    "EvidenceGroundingResult",
    "EvidenceGroundingStats",
    "EvidenceSchemaError",
    "QuoteMatch",
    "ValidatedEvidence",
    "normalize_for_quote_match",
    "validate_evidence_grounding",
    "validate_evidence_schema",
]
