"""Discrete semantic entropy over sampled answers (Kuhn et al., 2023; Farquhar et al., 2024).

Answers are grouped into meaning clusters: by bidirectional entailment with an NLI model or an
LLM, or, when neither is available, by an embedding-similarity threshold (a weaker stand-in
that the result names). The entropy of the cluster sizes measures how much the model's answers
disagree in meaning.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from core.backends.llm import LLMError
from core.checks import OK, CheckStatus, failed, skipped, unavailable
from core.quality import RiskLevel, risk_level_for
from core.selfcheck._common import validate_texts
from core.selfcheck.features import Encoder
from core.selfcheck.nli import NLIPredictor
from core.selfcheck.prompt import ChatClient, parse_answer

log = logging.getLogger(__name__)

Clustering = Literal["nli", "llm", "embedding"]

ENTAILMENT_PROMPT = (
    "We are evaluating answers to the question: {question}\n"
    "Possible Answer 1: {a}\nPossible Answer 2: {b}\n"
    "Does Possible Answer 1 semantically entail Possible Answer 2? Respond with Yes or No.\n\n"
    "Answer: "
)


@dataclass(frozen=True, slots=True)
class SemanticEntropyResult:
    """Semantic entropy of a set of sampled answers.

    Attributes:
        entropy: -sum p log p over meaning clusters (nats), >= 0, higher = more disagreement.
        normalized_entropy: entropy / log(number of answers), in [0, 1].
        risk_score: ``normalized_entropy``; higher = more likely hallucinated.
        risk_level: level of ``risk_score``.
        cluster_ids: the cluster of each answer, in input order.
        n_clusters: how many distinct meanings were found.
        clustering: ``nli``, ``llm`` or ``embedding`` (what decided "same meaning").
        sample_count: number of answers.
        status: ``ok`` or why no entropy was computed.
    """

    entropy: float | None
    normalized_entropy: float | None
    risk_score: float | None
    risk_level: RiskLevel | None
    cluster_ids: tuple[int, ...]
    n_clusters: int
    clustering: Clustering | None
    sample_count: int
    status: CheckStatus = OK

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe plain data."""
        return {
            "entropy": self.entropy,
            "normalized_entropy": self.normalized_entropy,
            "risk_score": self.risk_score,
            "risk_level": self.risk_level,
            "cluster_ids": list(self.cluster_ids),
            "n_clusters": self.n_clusters,
            "clustering": self.clustering,
            "sample_count": self.sample_count,
            "status": self.status.status,
            "reason": self.status.reason,
        }


def discrete_entropy(cluster_ids: Sequence[int]) -> float:
    """-sum p log p (natural log) of the share of answers in each cluster."""
    if not cluster_ids:
        raise ValueError("cluster_ids: need at least one answer")
    n = len(cluster_ids)
    counts = np.bincount(np.asarray(cluster_ids, dtype=np.int64))
    p = counts[counts > 0] / n
    return float(-(p * np.log(p)).sum())


class SemanticEntropy:
    """Discrete semantic entropy of sampled answers.

    Args:
        nli_model: cluster by bidirectional entailment with this NLI model (preferred).
        client: else cluster by bidirectional entailment asked of this LLM.
        encoder: else cluster by cosine similarity >= ``similarity_threshold``.
        similarity_threshold: cosine at or above which two answers mean the same (embedding
            clustering only).
        entailment_threshold: P(entailment) at or above which one answer entails another.
        question: passed to the LLM prompt as context.
    """

    def __init__(
        self,
        *,
        nli_model: NLIPredictor | None = None,
        client: ChatClient | None = None,
        encoder: Encoder | None = None,
        similarity_threshold: float = 0.9,
        entailment_threshold: float = 0.5,
    ) -> None:
        self.nli_model = nli_model
        self.client = client
        self.encoder = encoder
        self.similarity_threshold = similarity_threshold
        self.entailment_threshold = entailment_threshold

    @property
    def clustering(self) -> Clustering | None:
        """Which backend decides equivalence (``None``: nothing configured)."""
        if self.nli_model is not None:
            return "nli"
        if self.client is not None:
            return "llm"
        if self.encoder is not None:
            return "embedding"
        return None

    def _equivalence(self, answers: list[str], question: str) -> np.ndarray:
        n = len(answers)
        same = np.eye(n, dtype=bool)
        pairs = [(i, j) for i in range(n) for j in range(n) if i != j]
        if self.clustering == "nli":
            assert self.nli_model is not None
            scores = self.nli_model.predict([(answers[i], answers[j]) for i, j in pairs])
            entail = np.asarray(scores.entailment, dtype=np.float64)  # type: ignore[attr-defined]
            one_way = np.eye(n, dtype=bool)
            for (i, j), p in zip(pairs, entail, strict=True):
                one_way[i, j] = p >= self.entailment_threshold
            return one_way & one_way.T
        if self.clustering == "llm":
            assert self.client is not None
            one_way = np.eye(n, dtype=bool)
            for i, j in pairs:
                prompt = ENTAILMENT_PROMPT.format(question=question, a=answers[i], b=answers[j])
                reply = self.client.chat(
                    [{"role": "user", "content": prompt}], temperature=0.0, max_tokens=4
                )
                one_way[i, j] = parse_answer(reply.text) == "yes"
            return one_way & one_way.T
        assert self.encoder is not None
        vectors = self.encoder.encode(answers)
        return same | ((vectors @ vectors.T) >= self.similarity_threshold)

    def predict(self, answers: Sequence[str], *, question: str = "") -> SemanticEntropyResult:
        """Cluster the answers by meaning and return the entropy of the cluster sizes.

        Raises:
            ValueError: empty or non-string answers.
        """
        answers = validate_texts(answers, name="answers")
        n = len(answers)

        def not_run(status: CheckStatus) -> SemanticEntropyResult:
            return SemanticEntropyResult(None, None, None, None, (), 0, self.clustering, n, status)

        if n < 2:
            return not_run(skipped("semantic entropy needs at least 2 sampled answers"))
        if self.clustering is None:
            return not_run(unavailable("no NLI model, LLM or embedding model to compare answers"))
        try:
            same = self._equivalence(answers, question)
        except LLMError as exc:
            log.warning("semantic entropy: llm error with %d answers: %s", n, exc)
            status = unavailable(str(exc)) if exc.status == "unavailable" else failed(str(exc))
            return not_run(status)
        # Greedy assignment: an answer joins the first cluster whose first member it is
        # equivalent to in both directions.
        leaders: list[int] = []
        ids: list[int] = []
        for i in range(n):
            for cluster, leader in enumerate(leaders):
                if same[i, leader]:
                    ids.append(cluster)
                    break
            else:
                leaders.append(i)
                ids.append(len(leaders) - 1)
        entropy = discrete_entropy(ids)
        normalized = min(1.0, entropy / math.log(n))
        return SemanticEntropyResult(
            entropy=round(entropy, 6),
            normalized_entropy=round(normalized, 6),
            risk_score=round(normalized, 6),
            risk_level=risk_level_for(normalized),
            cluster_ids=tuple(ids),
            n_clusters=len(leaders),
            clustering=self.clustering,
            sample_count=n,
        )
