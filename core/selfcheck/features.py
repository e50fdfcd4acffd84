"""Features of each answer sentence for the combined SelfCheck detector.

Every feature is oriented so that higher = more likely hallucinated. Sentence features compare
the sentence with the samples; passage features (``p_`` prefix) average a sentence feature over
the whole answer, because a model that does not know a topic tends to be wrong throughout.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from core.selfcheck._common import split_sentences, tokenize, words
from core.selfcheck.ngram import SelfCheckNgram

STOPWORDS = frozenset(
    """a an the and or but if of at by for with about against between into through during before
    after above below to from up down in out on off over under again further then once here there
    when where why how all any both each few more most other some such no nor not only own same so
    than too very s t can will just don should now is are was were be been being have has had
    having do does did doing he she it they them his her its their him i me my we our you your
    who whom which what this that these those as also would could one""".split()
)
_STARTERS = frozenset("he she it they his her its their the a an in on at after during".split())


def specifics(sentence: str) -> list[str]:
    """Names, numbers and dates in a sentence, lower-cased: the details a model makes up.

    Capitalised words (the first word only when it is not a common sentence starter) and
    tokens with digits.
    """
    found: list[str] = []
    for i, word in enumerate(words(sentence)):
        lower = word.lower()
        if any(ch.isdigit() for ch in word):
            found.append(lower)
        elif word[:1].isupper() and lower not in STOPWORDS:
            if i == 0 and lower in _STARTERS:
                continue
            found.append(lower)
    return found


def content_words(sentence: str) -> list[str]:
    """Lower-cased words that are not stop words or punctuation."""
    return [w for w in (t.lower() for t in words(sentence)) if w not in STOPWORDS]


def _support(items: Sequence[str], sample_sets: Sequence[frozenset[str]]) -> list[float]:
    """For each item, the share of samples that contain it."""
    n = len(sample_sets)
    return [sum(item in s for s in sample_sets) / n for item in items]


def _bigrams(tokens: Sequence[str]) -> set[tuple[str, str]]:
    return set(itertools.pairwise(tokens))


class Encoder(Protocol):
    """Anything with ``encode(texts) -> normalised rows`` (the MiniLM :class:`Embedder`)."""

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


SENTENCE_FEATURES: tuple[str, ...] = (
    "ngram_max",
    "ngram_mean",
    "spec_unsupported_mean",
    "spec_unsupported_max",
    "spec_unsupported_median",
    "spec_share_rare",
    "spec_count_rare",
    "spec_not_joint",
    "spec_not_half",
    "number_unsupported_max",
    "content_unsupported_mean",
    "content_unsupported_max",
    "content_share_rare",
    "content_best_missing",
    "bigram_unsupported",
    "embedding",
)
_AVERAGED: tuple[str, ...] = (
    "ngram_max",
    "ngram_mean",
    "spec_unsupported_mean",
    "spec_unsupported_max",
    "spec_not_joint",
    "spec_not_half",
    "content_unsupported_mean",
    "content_best_missing",
    "bigram_unsupported",
    "embedding",
)
PASSAGE_FEATURES: tuple[str, ...] = tuple("p_" + f for f in _AVERAGED) + (
    "p_spec_pooled_unsupported",
    "samples_disagree",
)
FEATURES: tuple[str, ...] = SENTENCE_FEATURES + PASSAGE_FEATURES
NO_EMBEDDING_FEATURES: tuple[str, ...] = tuple(
    f for f in FEATURES if f not in ("embedding", "p_embedding")
)
RARE = 0.25  # a specific found in fewer than this share of samples counts as unsupported


def embedding_scores(
    sentences: Sequence[str], samples: Sequence[str], encoder: Encoder
) -> list[float]:
    """1 - mean over samples of the best cosine between the sentence and that sample's
    sentences (range [0, 2], in practice [0, 1]; higher = more likely hallucinated)."""
    sample_sentences = [split_sentences(s) or [s] for s in samples]
    flat = [t for group in sample_sentences for t in group]
    vectors = encoder.encode(list(sentences) + flat)
    main, rest = vectors[: len(sentences)], vectors[len(sentences) :]
    sims = main @ rest.T
    best = np.zeros((len(sentences), len(samples)), dtype=np.float64)
    start = 0
    for j, group in enumerate(sample_sentences):
        best[:, j] = sims[:, start : start + len(group)].max(axis=1)
        start += len(group)
    return [float(1.0 - v) for v in best.mean(axis=1)]


def sentence_features(
    sentences: Sequence[str],
    samples: Sequence[str],
    *,
    encoder: Encoder | None = None,
) -> list[dict[str, float]]:
    """Feature dictionaries (names in :data:`FEATURES`), one per sentence.

    Without an encoder the embedding features are NaN (use :data:`NO_EMBEDDING_FEATURES`).
    """
    ngram = SelfCheckNgram().sentence_scores(sentences, samples)
    sample_words = [frozenset(t.lower() for t in words(s)) for s in samples]
    sample_bigrams = [_bigrams(tokenize(s)) for s in samples]
    emb = embedding_scores(sentences, samples, encoder) if encoder is not None else None
    rows: list[dict[str, float]] = []
    pooled: list[float] = []
    for i, sentence in enumerate(sentences):
        content = content_words(sentence) or [t.lower() for t in words(sentence)] or ["<empty>"]
        content_support = _support(content, sample_words)
        content_set = set(content)
        spec = specifics(sentence)
        spec_set = set(spec)
        spec_support = _support(spec, sample_words) if spec else content_support
        pooled.extend(spec_support if spec else [])
        numbers = [t for t in spec if any(ch.isdigit() for ch in t)]
        bigrams = _bigrams(tokenize(sentence))
        if bigrams:
            bigram_support = float(
                np.mean([len(bigrams & b) / len(bigrams) for b in sample_bigrams])
            )
        else:
            bigram_support = float(np.mean(content_support))
        rare = [u < RARE for u in spec_support] if spec else []
        row = {
            "ngram_max": ngram[i]["max"],
            "ngram_mean": ngram[i]["mean"],
            "spec_unsupported_mean": 1.0 - float(np.mean(spec_support)),
            "spec_unsupported_max": 1.0 - float(np.min(spec_support)),
            "spec_unsupported_median": 1.0 - float(np.median(spec_support)) if spec else 0.0,
            "spec_share_rare": float(np.mean(rare)) if rare else 0.0,
            "spec_count_rare": float(sum(rare)),
            "spec_not_joint": (
                1.0 - float(np.mean([spec_set <= s for s in sample_words])) if spec else 0.0
            ),
            "spec_not_half": (
                1.0
                - float(np.mean([len(spec_set & s) >= 0.5 * len(spec_set) for s in sample_words]))
                if spec
                else 0.0
            ),
            "number_unsupported_max": (
                1.0 - float(np.min(_support(numbers, sample_words))) if numbers else 0.0
            ),
            "content_unsupported_mean": 1.0 - float(np.mean(content_support)),
            "content_unsupported_max": 1.0 - float(np.min(content_support)),
            "content_share_rare": float(np.mean([u < 0.5 for u in content_support])),
            "content_best_missing": 1.0
            - max(len(content_set & s) / len(content_set) for s in sample_words),
            "bigram_unsupported": 1.0 - bigram_support,
            "embedding": emb[i] if emb is not None else float("nan"),
        }
        rows.append(row)
    for name in _AVERAGED:
        mean = float(np.mean([r[name] for r in rows]))
        for row in rows:
            row["p_" + name] = mean
    pooled_unsupported = 1.0 - float(np.mean(pooled)) if pooled else 0.0
    disagree = _samples_disagree(samples, sample_words)
    for row in rows:
        row["p_spec_pooled_unsupported"] = pooled_unsupported
        row["samples_disagree"] = disagree
    return rows


def _samples_disagree(samples: Sequence[str], sample_words: Sequence[frozenset[str]]) -> float:
    """1 - mean share of one sample's specifics found in each other sample (0 with one sample)."""
    if len(samples) < 2:
        return 0.0
    shares: list[float] = []
    for i, sample in enumerate(samples):
        spec = set(specifics(sample))
        if not spec:
            continue
        for j, other in enumerate(sample_words):
            if i != j:
                shares.append(len(spec & other) / len(spec))
    return 1.0 - float(np.mean(shares)) if shares else 0.0
