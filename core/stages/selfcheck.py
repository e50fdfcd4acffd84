"""SelfCheck: each answer's sentences scored against samples of the same answer (given in the
record, or drawn from the LLM when sampling is enabled); stores ``selfcheck_result``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.backends.llm import LLMError, temperature_schedule
from core.checks import failed, skipped, unavailable
from core.stages.base import PipelineContext, Work
from core.storage import models as m


def _generate_samples(pipeline: PipelineContext, w: Work) -> list[str]:
    assert pipeline.llm is not None
    s = pipeline.settings
    context = "\n\n".join(f"[{src.id}] {src.text}" for src in w.record.sources)[:6000]
    messages = [
        {"role": "system", "content": "Answer the question about the patient from the record."},
        {"role": "user", "content": f"Record:\n{context}\n\nQuestion: {w.record.query}"},
    ]
    # SelfCheck needs samples that can differ: the seed's schedule (step 0.1) starts from a
    # sampling temperature rather than 0, where every sample would equal the answer.
    temps = temperature_schedule(
        s.hallucination_detection_samples, step=s.hallucination_detection_temp_range, start=0.7
    )
    replies = pipeline.llm.sample(messages, s.hallucination_detection_samples, temperatures=temps)
    return [r.text for r in replies]


class SelfCheckStage:
    """The combined SelfCheck detector over each answer and its samples."""

    name = "selfcheck"

    def run(self, pipeline: PipelineContext, works: Sequence[Work]) -> None:
        from core.text import split_sentences

        detector: Any = None
        for w in works:
            rec = w.record
            samples = list(rec.samples or [])
            if not samples:
                if not pipeline.settings.enable_hallucination_detection:
                    w.checks[self.name] = skipped(
                        "no samples in the record and sampling is disabled "
                        "(GROUNDWATCH_ENABLE_HALLUCINATION_DETECTION)"
                    )
                    continue
                if pipeline.llm is None:
                    w.checks[self.name] = unavailable("no samples and no LLM configured")
                    continue
                try:
                    samples = _generate_samples(pipeline, w)
                except LLMError as exc:
                    w.checks[self.name] = (
                        unavailable(str(exc)) if exc.status == "unavailable" else failed(str(exc))
                    )
                    continue
            sentences = [span.text for span in split_sentences(rec.answer)]
            if not sentences:
                w.checks[self.name] = skipped("answer has no sentences")
                continue
            try:
                if detector is None:
                    from core import selfcheck

                    # the shipped weights use no embedding features (no help on WikiBio)
                    detector = selfcheck.SelfCheckCombined()
                result = detector.predict(sentences, samples)
            except Exception as exc:
                w.checks[self.name] = failed(type(exc).__name__)
                continue
            w.results[self.name] = result
            w.checks[self.name] = result.status
            if result.risk_score is not None and result.risk_score >= 0.5:
                w.warnings.append(
                    f"SelfCheck ({result.method}): samples disagree with the answer "
                    f"(risk {result.risk_score:.2f})"
                )

    def rows(self, work: Work, conversation_id: str) -> list[Any]:
        """The ``selfcheck_result`` row of a record (also when the check did not run)."""
        status = work.checks.get(self.name)
        if status is None or status.status == "skipped":
            return []
        res = work.selfcheck
        if res is None:
            return [
                m.SelfCheckResult(
                    conversation_id=conversation_id,
                    method="combined",
                    status=status.status,
                    reason=status.reason,
                    sample_count=0,
                )
            ]
        scores = [
            {
                "index": s.index,
                "text": s.text,
                "score": s.score,
                "rank": s.rank,
            }
            for s in res.sentences
        ]
        return [
            m.SelfCheckResult(
                conversation_id=conversation_id,
                method=res.method,
                status=res.status.status,
                reason=res.status.reason,
                sample_count=res.sample_count,
                model=res.model,
                sentence_scores=scores,
                passage_score=res.passage_score,
                risk_score=res.risk_score,
                risk_level=res.risk_level,
            )
        ]
