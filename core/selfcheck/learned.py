"""SelfCheck with the learned verifier: a sentence the samples do not bear out is suspect."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from core.checks import failed, unavailable
from core.selfcheck._common import SelfCheckResult, build_result, not_run, validate_texts

log = logging.getLogger(__name__)


class SupportPredictor(Protocol):
    """Anything like :class:`core.grounding.learned.SupportModel`."""

    def predict(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray: ...


class SelfCheckLearned:
    """SelfCheck-NLI with the learned verifier in place of an NLI model.

    Sentence score = mean over samples of 1 - P(the sample supports the sentence), where each
    sample is read as the grounding verifier reads a source: its passages most like the
    sentence. Range [0, 1], higher = more likely hallucinated. Risk = the passage score.
    Without the model the result's status is ``unavailable``.

    Args:
        model: the learned verifier, or ``None``.
        embedder: finds each sentence's passages in a sample (by words alone without it).
    """

    method = "learned"

    def __init__(self, *, model: SupportPredictor | None, embedder: Any | None = None) -> None:
        from core.grounding.verifier import GroundingVerifier

        self.model = model
        self._reader = GroundingVerifier(embedder=embedder)

    def predict(self, sentences: Sequence[str], samples: Sequence[str]) -> SelfCheckResult:
        """Score each sentence against the samples (higher = worse).

        Raises:
            ValueError: empty or non-string sentences or samples.
        """
        from core.grounding.types import SourceChunk

        sentences = validate_texts(sentences, name="sentences")
        samples = validate_texts(samples, name="samples")
        name = getattr(self.model, "version", None)
        if self.model is None:
            return not_run(
                "learned",
                sentences,
                status=unavailable("no learned verifier"),
                sample_count=len(samples),
            )
        try:
            pairs: list[tuple[str, str]] = []
            for k, sample in enumerate(samples):
                evidence = self._reader.evidence_texts(sentences, [SourceChunk(f"s{k}", sample)])
                pairs.extend(zip(sentences, evidence, strict=True))
            support = np.asarray(self.model.predict(pairs), dtype=np.float64)
            matrix = support.reshape(len(samples), len(sentences)).T
        except Exception as exc:
            log.warning(
                "selfcheck learned failed samples=%d error=%s", len(samples), type(exc).__name__
            )
            return not_run(
                "learned",
                sentences,
                status=failed(f"learned verifier error ({type(exc).__name__})"),
                sample_count=len(samples),
                model=name,
            )
        scores = [float(v) for v in 1.0 - matrix.mean(axis=1)]
        return build_result(
            "learned",
            sentences,
            scores,
            risk_score=sum(scores) / len(scores),
            sample_count=len(samples),
            model=name,
        )
