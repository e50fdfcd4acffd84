"""SPEC-16 epistemic verification: claims, evidence audit, evidence dependence.

    from core.epistemic import EpistemicVerifier, VerificationConfig
    report = EpistemicVerifier(embedder=emb).verify(answer, sources, question=q)

See :mod:`core.epistemic.verifier` for the method and :mod:`core.epistemic.types` for the
report fields (maps onto ``claim_audit`` rows).
"""

from core.epistemic.citations import CitationResolver, strip_citations
from core.epistemic.types import (
    CRITICAL_GAP_TYPES,
    GAP_TYPES,
    Citation,
    Claim,
    ClaimVerification,
    EpistemicGap,
    GapType,
    HallucinationReport,
    VerificationConfig,
    VerificationUsage,
)
from core.epistemic.verifier import (
    EpistemicVerifier,
    InMemoryVerificationCache,
    StatementGrounder,
    VerificationCache,
    gap_bits_from_probability,
)

__all__ = [
    "CRITICAL_GAP_TYPES",
    "GAP_TYPES",
    "Citation",
    "CitationResolver",
    "Claim",
    "ClaimVerification",
    "EpistemicGap",
    "EpistemicVerifier",
    "GapType",
    "HallucinationReport",
    "InMemoryVerificationCache",
    "StatementGrounder",
    "VerificationCache",
    "VerificationConfig",
    "VerificationUsage",
    "gap_bits_from_probability",
    "strip_citations",
]
