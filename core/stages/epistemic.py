"""The SPEC-16 claim audit (claims, evidence audit, evidence dependence) of each answer;
stores one ``claim_audit`` row per claim."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.checks import OK, failed, skipped, unavailable
from core.stages.base import PipelineContext, Work, unit_interval
from core.storage import models as m


class EpistemicStage:
    """Audits each answer's claims against its sources (skipped when disabled)."""

    name = "epistemic"

    def run(self, pipeline: PipelineContext, works: Sequence[Work]) -> None:
        if not pipeline.settings.enable_epistemic_verification:
            for w in works:
                w.checks[self.name] = skipped("epistemic verification disabled")
            return
        try:
            from core.epistemic import EpistemicVerifier
            from core.grounding import SourceChunk
        except ImportError as exc:  # pragma: no cover - both ship with the package
            for w in works:
                w.checks[self.name] = unavailable(f"module missing: {exc.name}")
            return
        verifier: Any = None
        for w in works:
            rec = w.record
            sources = [
                SourceChunk(id=s.id, text=s.text, type=s.type, similarity=s.similarity)
                for s in rec.sources
                if s.text.strip()
            ]
            try:
                if verifier is None:
                    verifier = EpistemicVerifier(
                        grounding=pipeline.grounding_verifier,
                        embedder=pipeline.embedder,
                        llm=pipeline.llm,
                    )
                report = verifier.verify(
                    rec.answer, sources, question=rec.query, response_id=rec.id
                )
            except Exception as exc:
                w.checks[self.name] = failed(type(exc).__name__)
                continue
            w.results[self.name] = report
            w.checks[self.name] = getattr(report, "status", None) or OK
            for tier, status in getattr(report, "checks", {}).items():
                w.checks[f"{self.name}.{tier}"] = status
            if getattr(report, "has_critical_gaps", False):
                w.warnings.append(
                    f"Claim audit: {report.flagged_claims} of {report.total_claims} claims flagged"
                )

    def rows(self, work: Work, conversation_id: str) -> list[Any]:
        """The ``claim_audit`` rows of a record's report."""
        report = work.epistemic
        if report is None:
            return []
        gap_by_claim = {g.claim_id: g.gap_type for g in getattr(report, "gaps", ())}
        return [
            m.ClaimAudit(
                conversation_id=conversation_id,
                claim_id=str(c.claim_id)[:64],
                claim_text=c.claim_text,
                evidence_ids=list(c.evidence_ids),
                evidence_support=unit_interval(c.evidence_support),
                evidence_dependence=unit_interval(c.evidence_dependence),
                consistency_score=unit_interval(c.consistency_score),
                confidence_justified=c.confidence_justified,
                evidence_gap_bits=c.evidence_gap_bits,
                is_flagged=bool(c.is_flagged),
                flag_reason=c.flag_reason,
                gap_type=gap_by_claim.get(c.claim_id),
            )
            for c in report.claims
        ]
