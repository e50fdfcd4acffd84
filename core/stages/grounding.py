"""Answer grounding: every statement of the answer verified against the record's sources
(:class:`~core.grounding.GroundingVerifier`, all tiers), batched over the records. Its
statement rows are built with the record's consistency result (a statement's kind may be a
contradiction with an earlier answer), so the pipeline writes them."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from core.checks import OK, failed, skipped
from core.stages.base import PipelineContext, Work

log = logging.getLogger(__name__)


class GroundingStage:
    """Verifies each answer's statements; a tier that failed fails the check."""

    name = "grounding"

    def run(self, pipeline: PipelineContext, works: Sequence[Work]) -> None:
        if not pipeline.settings.enable_grounding_verification:
            for w in works:
                w.checks[self.name] = skipped("grounding verification disabled")
            return
        from core.grounding import SourceChunk

        todo: list[tuple[Work, list[Any]]] = []
        for w in works:
            chunks = [
                SourceChunk(id=s.id, text=s.text, type=s.type, similarity=s.similarity)
                for s in w.record.sources
                if s.text.strip()
            ]
            if not chunks:
                w.checks[self.name] = skipped("no source text to verify against")
                continue
            todo.append((w, chunks))
        if not todo:
            return
        verifier = pipeline.grounding_verifier
        try:
            results: list[Any] = verifier.verify_batch(
                [(w.record.answer, chunks) for w, chunks in todo]
            )
        except Exception as exc:
            log.warning("grounding batch failed (%s); retrying one by one", type(exc).__name__)
            results = []
            for w, chunks in todo:
                try:
                    results.append(verifier.verify(w.record.answer, chunks))
                except Exception as inner:
                    results.append(inner)
        for (w, _), result in zip(todo, results, strict=True):
            if isinstance(result, Exception):
                w.checks[self.name] = failed(type(result).__name__)
                continue
            w.results[self.name] = result
            degraded = [k for k, v in result.checks.items() if v.status != "ok"]
            broken = [k for k, v in result.checks.items() if v.status == "failed"]
            # a tier that failed fails the check (the verdicts stand on the other tiers)
            w.checks[self.name] = (
                failed(f"{broken[0]} tier: {result.checks[broken[0]].reason}") if broken else OK
            )
            for tier, status in result.checks.items():
                w.checks[f"{self.name}.{tier}"] = status
            w.warnings.extend(result.warnings)
            if degraded:
                log.debug("grounding tiers not run: %d", len(degraded))

    def rows(self, work: Work, conversation_id: str) -> list[Any]:
        return []  # the pipeline writes the statement rows (see the module docstring)
