"""The combined SelfCheck detector: fitted weights over several offline signals."""

from __future__ import annotations

from collections.abc import Sequence

from core.checks import unavailable
from core.selfcheck._common import SelfCheckResult, build_result, not_run, validate_texts
from core.selfcheck.features import Encoder, sentence_features
from core.selfcheck.weights import SelfCheckWeights, load_weights


class SelfCheckCombined:
    """Logistic combination of n-gram, specifics-recurrence, overlap and embedding signals.

    The features (:mod:`core.selfcheck.features`) ask, for each sentence, how rare its tokens
    are across the samples, whether its names, dates and numbers recur in the samples, how many
    of its words and bigrams the samples repeat, how close the samples' sentences come in
    meaning, and the same averaged over the answer. The weights are fitted on labelled data
    with passage-grouped cross-validation by ``benchmarks/fit_selfcheck.py`` and shipped in
    ``core/data/selfcheck_combined.json``.

    Sentence score = P(hallucinated) under the fitted model, range [0, 1], higher = more likely
    hallucinated. Risk = the passage mean. The probabilities reflect the base rate of the data
    the weights were fitted on (about 73 % inaccurate sentences in WikiBio), so compare them
    across answers rather than reading them as absolute rates.

    Args:
        encoder: sentence encoder for the embedding features; ``None`` (or weights without an
            embedding model) uses the model fitted without them (``variant`` says which).
        weights: fitted weights; ``None`` loads the shipped file.
    """

    method = "combined"

    def __init__(
        self, *, encoder: Encoder | None = None, weights: SelfCheckWeights | None = None
    ) -> None:
        self.weights = weights if weights is not None else load_weights()
        use_embedding = encoder is not None and "with_embedding" in self.weights.models
        self.encoder = encoder if use_embedding else None
        self.variant = "with_embedding" if use_embedding else "no_embedding"
        self.model = self.weights.models.get(self.variant)

    def predict(self, sentences: Sequence[str], samples: Sequence[str]) -> SelfCheckResult:
        """Score each sentence against the samples (higher = worse).

        Raises:
            ValueError: empty or non-string sentences or samples.
        """
        sentences = validate_texts(sentences, name="sentences")
        samples = validate_texts(samples, name="samples")
        if self.model is None:
            return not_run(
                "combined",
                sentences,
                status=unavailable(
                    f"no fitted weights for {self.variant} (run benchmarks/fit_selfcheck.py)"
                ),
                sample_count=len(samples),
            )
        rows = sentence_features(sentences, samples, encoder=self.encoder)
        scores = [self.model.probability(row) for row in rows]
        return build_result(
            "combined",
            sentences,
            scores,
            risk_score=sum(scores) / len(scores),
            sample_count=len(samples),
            variant=self.variant,
            details=[{f: row[f] for f in self.model.features} for row in rows],
        )
