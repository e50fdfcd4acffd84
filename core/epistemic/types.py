"""SPEC-16 result types and configuration: frozen, JSON-safe through ``to_dict()``.

Score directions: ``evidence_support``, ``llm_support``, ``confidence``, ``consistency_score``
and ``overall_confidence`` are higher-is-better; ``evidence_dependence`` is 0 when the answer
does not change without the evidence and 1 when it changes completely; ``gap_bits`` is
higher-is-worse.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal

from core.checks import CheckStatus

GapType = Literal[
    "unsupported",
    "partial_support",
    "phantom_citation",
    "contradicted",
    "over_extrapolation",
    "evidence_independent",
]
GAP_TYPES: tuple[GapType, ...] = (
    "unsupported",
    "partial_support",
    "phantom_citation",
    "contradicted",
    "over_extrapolation",
    "evidence_independent",
)
# Gap types that are critical whatever their size in bits: the answer states something the
# record contradicts, cites a record that does not exist, or asserts without any evidence.
CRITICAL_GAP_TYPES: frozenset[str] = frozenset({"contradicted", "phantom_citation", "unsupported"})
Severity = Literal["critical", "warning"]
Mode = Literal["full", "sample", "critical_only"]
OnFailure = Literal["flag", "retry"]
ClaimExtraction = Literal["auto", "rules", "llm"]

SUGGESTED_ACTIONS: dict[str, str] = {
    "unsupported": "Remove the claim or cite the record that states it.",
    "partial_support": "Cite the source that actually states the claim.",
    "phantom_citation": "Cite an existing source; the cited one is not among the sources.",
    "contradicted": "Correct the claim to match the cited record.",
    "over_extrapolation": "Drop the details the evidence does not state.",
    "evidence_independent": "Check the claim against the record: it reads as general knowledge.",
}


@dataclass(frozen=True, slots=True)
class VerificationConfig:
    """Epistemic verification options (SPEC-16 defaults).

    Args:
        enabled: run the verification at all (``False``: the report says skipped).
        support_threshold: minimum support in [0, 1] for a claim to count as supported.
        dependence_threshold: a claim whose evidence dependence is below this is flagged
            ``evidence_independent``.
        gap_threshold_bits: a gap larger than this (in bits) is critical.
        on_failure: ``flag`` only reports; ``retry`` also sets ``should_retry`` on critical gaps.
        max_retries: retries the caller may make (``should_retry`` is false when 0).
        verification_model: name recorded with the LLM checks (the client's model is used).
        max_claims_per_response: claims beyond this are counted but not audited.
        parallel: run the per-claim LLM checks in parallel threads.
        mode: which claims get the LLM checks: ``full`` all, ``sample`` a deterministic
            ``sample_rate`` share chosen by claim hash and ``seed``, ``critical_only`` claims
            with clinical specifics, citations or certainty markers. The local tiers always
            audit every claim (they are cheap).
        sample_rate: share of claims sampled in ``sample`` mode.
        seed: salt of the sample hash (same seed, same claims: reproducible).
        claim_extraction: ``auto`` uses the LLM when one is given, ``rules`` never does.
        prompt_cost_per_1k: optional price of 1,000 prompt tokens (for ``cost``).
        completion_cost_per_1k: optional price of 1,000 completion tokens.
        min_answer_chars: answers shorter than this are skipped (SPEC-16 smart skip).
    """

    enabled: bool = True
    support_threshold: float = 0.7
    dependence_threshold: float = 0.3
    gap_threshold_bits: float = 2.0
    on_failure: OnFailure = "flag"
    max_retries: int = 2
    verification_model: str = "local"
    max_claims_per_response: int = 10
    parallel: bool = True
    mode: Mode = "sample"
    sample_rate: float = 0.3
    seed: int = 0
    claim_extraction: ClaimExtraction = "auto"
    prompt_cost_per_1k: float | None = None
    completion_cost_per_1k: float | None = None
    min_answer_chars: int = 100

    def __post_init__(self) -> None:
        for name in ("support_threshold", "dependence_threshold", "sample_rate"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"VerificationConfig.{name} must be within [0, 1], got {value}")
        if self.gap_threshold_bits < 0:
            raise ValueError("VerificationConfig.gap_threshold_bits must be >= 0")
        if self.max_retries < 0:
            raise ValueError("VerificationConfig.max_retries must be >= 0")
        if self.max_claims_per_response < 1:
            raise ValueError("VerificationConfig.max_claims_per_response must be >= 1")
        if self.mode not in ("full", "sample", "critical_only"):
            raise ValueError("VerificationConfig.mode must be full, sample or critical_only")
        if self.on_failure not in ("flag", "retry"):
            raise ValueError("VerificationConfig.on_failure must be flag or retry")
        if self.claim_extraction not in ("auto", "rules", "llm"):
            raise ValueError("VerificationConfig.claim_extraction must be auto, rules or llm")

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True, slots=True)
class Citation:
    """One citation marker found in the answer and what it resolves to.

    ``source_id`` is ``None`` for a phantom citation (no such source).
    """

    marker: str
    label: str
    start: int
    end: int
    source_id: str | None

    @property
    def is_phantom(self) -> bool:
        return self.source_id is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "marker": self.marker,
            "label": self.label,
            "start": self.start,
            "end": self.end,
            "source_id": self.source_id,
        }


@dataclass(frozen=True, slots=True)
class Claim:
    """An atomic claim of the answer with its span and the citations that apply to it."""

    claim_id: str
    text: str
    start: int
    end: int
    citations: tuple[Citation, ...] = ()

    @property
    def cited_ids(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.source_id for c in self.citations if c.source_id))

    @property
    def phantom_labels(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.label for c in self.citations if c.source_id is None))


@dataclass(frozen=True, slots=True)
class EpistemicGap:
    """A gap between a claim and its evidence.

    ``gap_bits`` (higher is worse) is ``-log2(p)`` of the LLM judge's support probability
    ``p`` (floored at 2**-10) and ``None`` when no such probability was measured.
    """

    claim_id: str
    claim_text: str
    gap_type: GapType
    severity: Severity
    reason: str
    suggested_action: str
    gap_bits: float | None = None
    source_ids: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "claim_id": self.claim_id,
            "claim_text": self.claim_text,
            "gap_type": self.gap_type,
            "severity": self.severity,
            "reason": self.reason,
            "suggested_action": self.suggested_action,
            "gap_bits": self.gap_bits,
            "source_ids": list(self.source_ids),
        }


@dataclass(frozen=True, slots=True)
class ClaimVerification:
    """Verification of one claim (maps onto one ``claim_audit`` row).

    Attributes:
        evidence_support: local audit support in [0, 1], higher is better (the grounding
            tier's confidence that the evidence states the claim; 0 when a rule found a
            contradiction; the share of the claim's specifics found for over-extrapolation).
        llm_support: the LLM judge's rating in [0, 1] (``None``: not run or unparseable).
        evidence_dependence: 1 - best cosine between the claim and the answer regenerated
            without the evidence (``None`` without an LLM or a question).
        consistency_score: best cosine between the claim and the answer regenerated with
            the evidence (``None`` when not computed).
        confidence: min of the available supports, higher is better.
        flag_reason: the most severe gap type, or ``None``.
    """

    claim_id: str
    claim_text: str
    start: int
    end: int
    evidence_ids: tuple[str, ...]
    cited_ids: tuple[str, ...]
    phantom_citations: tuple[str, ...]
    evidence_support: float | None
    llm_support: float | None
    evidence_dependence: float | None
    consistency_score: float | None
    confidence: float | None
    confidence_justified: bool
    evidence_gap_bits: float | None
    is_flagged: bool
    flag_reason: GapType | None
    reason: str | None
    verification_method: str | None
    evidence: str | None
    evidence_source_id: str | None
    evidence_start: int | None
    evidence_end: int | None
    llm_checked: bool
    llm_tokens: int
    cached: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "claim_id": self.claim_id,
            "claim_text": self.claim_text,
            "start": self.start,
            "end": self.end,
            "evidence_ids": list(self.evidence_ids),
            "cited_ids": list(self.cited_ids),
            "phantom_citations": list(self.phantom_citations),
            "evidence_support": self.evidence_support,
            "llm_support": self.llm_support,
            "evidence_dependence": self.evidence_dependence,
            "consistency_score": self.consistency_score,
            "confidence": self.confidence,
            "confidence_justified": self.confidence_justified,
            "evidence_gap_bits": self.evidence_gap_bits,
            "is_flagged": self.is_flagged,
            "flag_reason": self.flag_reason,
            "reason": self.reason,
            "verification_method": self.verification_method,
            "evidence": self.evidence,
            "evidence_source_id": self.evidence_source_id,
            "evidence_start": self.evidence_start,
            "evidence_end": self.evidence_end,
            "llm_checked": self.llm_checked,
            "llm_tokens": self.llm_tokens,
            "cached": self.cached,
        }


@dataclass(frozen=True, slots=True)
class VerificationUsage:
    """LLM and cache accounting of one verification.

    ``cost`` is ``None`` unless prices per 1,000 tokens are configured.
    """

    llm_calls: int = 0
    cached_llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_latency_ms: float = 0.0
    cache_hits: int = 0
    cache_misses: int = 0
    cost: float | None = None

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        return {
            "llm_calls": self.llm_calls,
            "cached_llm_calls": self.cached_llm_calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "llm_latency_ms": round(self.llm_latency_ms, 3),
            "cache_hits": self.cache_hits,
            "cache_misses": self.cache_misses,
            "cost": self.cost,
        }


@dataclass(frozen=True, slots=True)
class HallucinationReport:
    """SPEC-16 report for one answer.

    ``total_claims`` counts the claims extracted, ``verified_claims`` those audited (at most
    ``max_claims_per_response``), ``flagged_claims`` the audited claims with a gap.
    ``overall_confidence`` (higher is better) is the mean claim confidence, ``None`` when no
    claim was audited; ``max_gap_bits`` is ``None`` when no gap has a size in bits.
    ``evidence_dependence`` is the answer-level SPEC-16 scrubbing score (1 - cosine between
    the answers regenerated with and without the evidence).
    """

    response_id: str
    total_claims: int
    verified_claims: int
    flagged_claims: int
    claims: tuple[ClaimVerification, ...]
    gaps: tuple[EpistemicGap, ...]
    overall_confidence: float | None
    max_gap_bits: float | None
    has_critical_gaps: bool
    should_retry: bool
    retry_guidance: str | None
    evidence_dependence: float | None
    skipped: bool
    skip_reason: str | None
    claim_extraction: str | None
    mode: Mode
    warnings: tuple[str, ...]
    checks: dict[str, CheckStatus] = field(default_factory=dict)
    usage: VerificationUsage = field(default_factory=VerificationUsage)
    latency_ms: float = 0.0

    @property
    def flagged(self) -> tuple[ClaimVerification, ...]:
        return tuple(c for c in self.claims if c.is_flagged)

    def to_dict(self) -> dict[str, Any]:
        return {
            "response_id": self.response_id,
            "total_claims": self.total_claims,
            "verified_claims": self.verified_claims,
            "flagged_claims": self.flagged_claims,
            "overall_confidence": self.overall_confidence,
            "max_gap_bits": self.max_gap_bits,
            "has_critical_gaps": self.has_critical_gaps,
            "should_retry": self.should_retry,
            "retry_guidance": self.retry_guidance,
            "evidence_dependence": self.evidence_dependence,
            "skipped": self.skipped,
            "skip_reason": self.skip_reason,
            "claim_extraction": self.claim_extraction,
            "mode": self.mode,
            "claims": [c.to_dict() for c in self.claims],
            "gaps": [g.to_dict() for g in self.gaps],
            "warnings": list(self.warnings),
            "checks": {k: v.to_dict() for k, v in self.checks.items()},
            "usage": self.usage.to_dict(),
            "latency_ms": round(self.latency_ms, 3),
        }
