"""Evidence quotes (spec 053/054): each quote the LLM extracted, grounded in the record's
transcript; stores the counts and status (no text) in ``evidence_validation``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.checks import OK, failed, skipped
from core.records import ConversationRecord
from core.stages.base import PipelineContext, Work
from core.storage import models as m


def transcript_text(record: ConversationRecord) -> str:
    """Text the evidence quotes are grounded in: transcript sources, else all sources."""
    chosen = [s for s in record.sources if s.type == "transcript"] or list(record.sources)
    return "\n\n".join(s.text for s in chosen)


class EvidenceStage:
    """Grounds each record's evidence quotes (skipped without quotes or when disabled)."""

    name = "evidence"

    def run(self, pipeline: PipelineContext, works: Sequence[Work]) -> None:
        s = pipeline.settings
        for w in works:
            rec = w.record
            if rec.evidence is None:
                w.checks[self.name] = skipped("no evidence quotes in the record")
                continue
            if not (s.evidence_quote_validation_enabled and s.enable_evidence_validation):
                w.checks[self.name] = skipped("evidence validation disabled")
                continue
            text = transcript_text(rec)
            if not text.strip():
                w.checks[self.name] = skipped("no transcript to ground the quotes in")
                continue
            try:
                from core.evidence import validate_evidence_schema

                validated = validate_evidence_schema(rec.evidence, keys=None)
                result = pipeline.evidence_grounder.check(validated, text)
            except Exception as exc:  # a failing check is stored as failed, not raised
                w.checks[self.name] = failed(type(exc).__name__)
                continue
            w.results[self.name] = result
            w.checks[self.name] = OK
            if result.failure_event is not None:
                w.warnings.append(
                    "EVIDENCE_HALLUCINATION: none of the "
                    f"{result.stats.extracted_count} evidence quotes occurs in the transcript"
                )
            elif result.stats.rejected_count:
                w.warnings.append(
                    f"{result.stats.rejected_count} of {result.stats.extracted_count} "
                    "evidence quotes not found in the transcript"
                )

    def rows(self, work: Work, conversation_id: str) -> list[Any]:
        result = work.evidence
        if result is None:
            return []
        return [m.EvidenceValidation(conversation_id=conversation_id, **result.to_storage_dict())]
