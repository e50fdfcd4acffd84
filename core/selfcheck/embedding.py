"""SelfCheck with sentence embeddings (MiniLM): the BERTScore variant's shape."""

from __future__ import annotations

from collections.abc import Sequence

from core.checks import unavailable
from core.selfcheck._common import SelfCheckResult, build_result, not_run, validate_texts
from core.selfcheck.features import Encoder, embedding_scores


class SelfCheckEmbedding:
    """A sentence that no sample says in other words is likely hallucinated.

    Sentence score = 1 - mean over samples of the best cosine similarity between the sentence
    and that sample's sentences. Range [0, 2] in theory, [0, 1] in practice for MiniLM;
    higher = more likely hallucinated. Risk = the passage score clipped to [0, 1].

    Args:
        encoder: an object with ``encode(texts)`` returning L2-normalised rows; ``None`` loads
            the shared MiniLM :class:`core.backends.embedder.Embedder` (takes seconds once).
    """

    method = "embedding"

    def __init__(self, *, encoder: Encoder | None = None) -> None:
        self._error: str | None = None
        if encoder is None:
            from core.backends.embedder import EmbeddingUnavailableError, get_embedder

            try:
                encoder = get_embedder()
            except EmbeddingUnavailableError as exc:
                self._error = str(exc)
        self.encoder = encoder

    def predict(self, sentences: Sequence[str], samples: Sequence[str]) -> SelfCheckResult:
        """Score each sentence against the samples (higher = worse).

        Raises:
            ValueError: empty or non-string sentences or samples.
        """
        sentences = validate_texts(sentences, name="sentences")
        samples = validate_texts(samples, name="samples")
        if self.encoder is None:
            return not_run(
                "embedding",
                sentences,
                status=unavailable(self._error or "no embedding model"),
                sample_count=len(samples),
            )
        scores = embedding_scores(sentences, samples, self.encoder)
        passage = sum(scores) / len(scores)
        return build_result(
            "embedding",
            sentences,
            scores,
            risk_score=passage,
            sample_count=len(samples),
            model=getattr(self.encoder, "model_name", None),
        )
