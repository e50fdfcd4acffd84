"""SelfCheck with a natural-language-inference cross-encoder."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from core.checks import failed, unavailable
from core.selfcheck._common import SelfCheckResult, build_result, not_run, validate_texts

log = logging.getLogger(__name__)


class NLIPredictor(Protocol):
    """Anything like :class:`core.backends.nli.NLIModel`."""

    def predict(self, pairs: Sequence[tuple[str, str]]) -> object: ...


class SelfCheckNLI:
    """A sentence that the samples contradict is likely hallucinated.

    Sentence score = mean over samples of P(contradiction | premise = sample, hypothesis =
    sentence). Range [0, 1], higher = more likely hallucinated. Risk = the passage score.
    Without an NLI model (none ships on PyPI; set ``GROUNDWATCH_NLI_MODEL``) the result's
    status is ``unavailable``.

    Args:
        model: an NLI model (see :class:`core.backends.nli.NLIModel`), or ``None``.
    """

    method = "nli"

    def __init__(self, *, model: NLIPredictor | None = None) -> None:
        self.model = model

    def predict(self, sentences: Sequence[str], samples: Sequence[str]) -> SelfCheckResult:
        """Score each sentence against the samples (higher = worse).

        Raises:
            ValueError: empty or non-string sentences or samples.
        """
        sentences = validate_texts(sentences, name="sentences")
        samples = validate_texts(samples, name="samples")
        name = getattr(self.model, "name", None)
        if self.model is None:
            return not_run(
                "nli",
                sentences,
                status=unavailable("no NLI model configured (GROUNDWATCH_NLI_MODEL)"),
                sample_count=len(samples),
            )
        pairs = [(sample, sentence) for sentence in sentences for sample in samples]
        try:
            scores_obj = self.model.predict(pairs)
            contradiction = np.asarray(scores_obj.contradiction, dtype=np.float64)  # type: ignore[attr-defined]
            matrix = contradiction.reshape(len(sentences), len(samples))
        except Exception as exc:
            log.warning("selfcheck nli failed pairs=%d error=%s", len(pairs), type(exc).__name__)
            return not_run(
                "nli",
                sentences,
                status=failed(f"NLI model error ({type(exc).__name__})"),
                sample_count=len(samples),
                model=name,
            )
        scores = [float(v) for v in matrix.mean(axis=1)]
        return build_result(
            "nli",
            sentences,
            scores,
            risk_score=sum(scores) / len(scores),
            sample_count=len(samples),
            model=name,
        )
