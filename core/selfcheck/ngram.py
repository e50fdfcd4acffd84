"""SelfCheck with a unigram language model built from the answer and its samples."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Literal

from core.selfcheck._common import SelfCheckResult, build_result, tokenize, validate_texts


class UnigramModel:
    """Token counts of the texts added, with add-``k`` smoothing.

    Mirrors the SelfCheckGPT reference: an ``<unk>`` entry with count 0, lower-cased tokens,
    p(w) = (count(w) + k) / (tokens + k * vocabulary).
    """

    def __init__(self, *, lowercase: bool = True) -> None:
        self.lowercase = lowercase
        self.counts: Counter[str] = Counter({"<unk>": 0})
        self.token_count = 0

    def add(self, text: str) -> None:
        """Count the tokens of ``text``."""
        tokens = tokenize(text, lowercase=self.lowercase)
        self.counts.update(tokens)
        self.token_count += len(tokens)

    def log_prob(self, token: str, *, k: float) -> float:
        """Natural log of p(token); unseen tokens get the ``<unk>`` probability."""
        key = token if self.counts.get(token, 0) > 0 else "<unk>"
        numerator = self.counts[key] + k
        denominator = self.token_count + k * len(self.counts)
        if numerator <= 0 or denominator <= 0:
            return -math.inf
        return math.log(numerator / denominator)


class SelfCheckNgram:
    """Unigram SelfCheck: tokens rare across answer + samples are likely hallucinated.

    Sentence score = the mean (``aggregate="mean"``) or max (``"max"``, the paper's best n-gram
    row) over the sentence's tokens of -log p(token) under a unigram model of the answer and all
    samples. Range [0, +inf), higher = more likely hallucinated. Both values are kept in each
    sentence's ``details``. The risk score maps the passage score through a logistic fitted on
    labelled data (``core/data/selfcheck_combined.json``).

    Args:
        aggregate: which of the two sentence scores is reported.
        smoothing: add-k smoothing constant (the reference uses k = 0; the answer is always in
            the model, so its tokens are never unseen).
        lowercase: lower-case tokens before counting.
    """

    method = "ngram"

    def __init__(
        self,
        *,
        aggregate: Literal["max", "mean"] = "max",
        smoothing: float = 0.0,
        lowercase: bool = True,
    ) -> None:
        if smoothing < 0:
            raise ValueError("smoothing: must be >= 0")
        self.aggregate = aggregate
        self.smoothing = smoothing
        self.lowercase = lowercase
        from core.selfcheck.weights import load_weights

        self._calibration = load_weights().calibration("ngram_" + aggregate)

    def sentence_scores(
        self, sentences: Sequence[str], samples: Sequence[str]
    ) -> list[dict[str, float]]:
        """``{"mean": ..., "max": ...}`` of -log p for each sentence."""
        model = UnigramModel(lowercase=self.lowercase)
        model.add(" ".join(sentences))
        for sample in samples:
            model.add(sample)
        out: list[dict[str, float]] = []
        for sentence in sentences:
            neg = [
                -model.log_prob(t, k=self.smoothing)
                for t in tokenize(sentence, lowercase=self.lowercase)
            ]
            if not neg:
                out.append({"mean": 0.0, "max": 0.0})
                continue
            out.append({"mean": sum(neg) / len(neg), "max": max(neg)})
        return out

    def predict(self, sentences: Sequence[str], samples: Sequence[str]) -> SelfCheckResult:
        """Score each sentence of the answer against the samples (higher = worse).

        Raises:
            ValueError: empty or non-string sentences or samples (the message names the item).
        """
        sentences = validate_texts(sentences, name="sentences")
        samples = validate_texts(samples, name="samples")
        details = self.sentence_scores(sentences, samples)
        scores = [d[self.aggregate] for d in details]
        passage = sum(scores) / len(scores)
        return build_result(
            "ngram",
            sentences,
            scores,
            risk_score=self._calibration(passage),
            sample_count=len(samples),
            details=details,
            variant=self.aggregate,
            # max surprisal ties whenever two sentences each hold one word the samples never
            # use; the sentence whose words are rarer on the whole is the one to check first
            tie_break=[d["mean"] for d in details] if self.aggregate == "max" else None,
        )
