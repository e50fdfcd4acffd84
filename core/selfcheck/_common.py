"""Shared pieces of the SelfCheck detectors: result types, validation, tokens, sentences."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from core.checks import OK, CheckStatus
from core.quality import RiskLevel, risk_level_for
from core.text import split_sentences as project_split

Method = Literal["ngram", "embedding", "nli", "learned", "llm", "combined"]

_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)
_WORD = re.compile(r"\w+", re.UNICODE)


def tokenize(text: str, *, lowercase: bool = True) -> list[str]:
    """Word and punctuation tokens (a plain regex tokenizer, lower-cased by default)."""
    return _TOKEN.findall(text.lower() if lowercase else text)


def words(text: str) -> list[str]:
    """Word tokens only (no punctuation), as written."""
    return _WORD.findall(text)


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (the project's clinical-aware splitter), stripped and non-empty."""
    return [span.text.strip() for span in project_split(text) if span.text.strip()]


def validate_texts(values: object, *, name: str, allow_empty_items: bool = False) -> list[str]:
    """Check that ``values`` is a non-empty list of strings, naming the first bad item.

    Raises:
        ValueError: e.g. ``samples[2]: expected a string, got int``.
    """
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise ValueError(f"{name}: expected a list of strings, got {type(values).__name__}")
    if len(values) == 0:
        raise ValueError(f"{name}: need at least one item, got an empty list")
    out: list[str] = []
    for i, value in enumerate(values):
        if not isinstance(value, str):
            raise ValueError(f"{name}[{i}]: expected a string, got {type(value).__name__}")
        if not allow_empty_items and not value.strip():
            raise ValueError(f"{name}[{i}]: empty text")
        out.append(value)
    return out


@dataclass(frozen=True, slots=True)
class SentenceScore:
    """One sentence's score; higher = more likely hallucinated (``None`` if not scored)."""

    index: int
    text: str
    score: float | None
    details: tuple[tuple[str, float], ...] = ()
    # 1 = the sentence to check first; sentences with the same score are ordered by the
    # method's secondary key (the n-gram model's mean surprisal), then by position
    rank: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"index": self.index, "text": self.text, "score": self.score}
        if self.rank is not None:
            out["rank"] = self.rank
        if self.details:
            out["details"] = dict(self.details)
        return out


@dataclass(frozen=True, slots=True)
class SelfCheckResult:
    """What one SelfCheck detector found in one answer.

    Attributes:
        method: ``ngram``, ``embedding``, ``nli``, ``llm`` or ``combined``.
        sentences: per-sentence scores, higher = more likely hallucinated (range per method).
        passage_score: mean sentence score (same scale), ``None`` when the check did not run.
        risk_score: the passage's hallucination risk in [0, 1], higher = worse.
        risk_level: ``very_low`` .. ``very_high`` from ``risk_score``.
        sample_count: number of samples compared.
        status: ``ok``, or why no scores were produced (never a silent empty result).
        variant: which score is reported (e.g. ``max`` or ``mean`` for the n-gram model).
        model: the backend model used, if any.
    """

    method: Method
    sentences: tuple[SentenceScore, ...]
    passage_score: float | None
    risk_score: float | None
    risk_level: RiskLevel | None
    sample_count: int
    status: CheckStatus = OK
    variant: str | None = None
    model: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def scores(self) -> list[float | None]:
        """The sentence scores in order."""
        return [s.score for s in self.sentences]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe plain data in the shape of the ``groundwatch selfcheck`` output."""
        out: dict[str, Any] = {
            "method": self.method,
            "sentences": [s.to_dict() for s in self.sentences],
            "passage_score": self.passage_score,
            "risk_score": self.risk_score,
            "risk_level": self.risk_level,
            "sample_count": self.sample_count,
            "status": self.status.status,
        }
        if self.status.reason:
            out["reason"] = self.status.reason
        if self.variant:
            out["variant"] = self.variant
        if self.model:
            out["model"] = self.model
        if self.extra:
            out.update(self.extra)
        return out


def _clean(value: float) -> float:
    return float(value) if math.isfinite(value) else 1e6


def build_result(
    method: Method,
    sentences: Sequence[str],
    scores: Sequence[float],
    *,
    risk_score: float,
    sample_count: int,
    details: Sequence[dict[str, float]] | None = None,
    variant: str | None = None,
    model: str | None = None,
    extra: dict[str, Any] | None = None,
    tie_break: Sequence[float] | None = None,
) -> SelfCheckResult:
    """An ``ok`` result from per-sentence scores (passage score = their mean). Each sentence
    gets its ``rank`` by score, ties broken by ``tie_break`` (higher first), then position."""
    secondary = [_clean(v) for v in tie_break] if tie_break is not None else [0.0] * len(scores)
    order = sorted(
        range(len(scores)), key=lambda i: (-round(_clean(scores[i]), 6), -secondary[i], i)
    )
    ranks = {i: r for r, i in enumerate(order, start=1)}
    rows = tuple(
        SentenceScore(
            index=i,
            text=text,
            score=round(_clean(score), 6),
            details=tuple(
                (k, round(_clean(v), 6)) for k, v in (details[i] if details else {}).items()
            ),
            rank=ranks[i],
        )
        for i, (text, score) in enumerate(zip(sentences, scores, strict=True))
    )
    passage = round(sum(_clean(s) for s in scores) / len(scores), 6)
    risk = round(min(1.0, max(0.0, float(risk_score))), 6)
    return SelfCheckResult(
        method=method,
        sentences=rows,
        passage_score=passage,
        risk_score=risk,
        risk_level=risk_level_for(risk),
        sample_count=sample_count,
        status=OK,
        variant=variant,
        model=model,
        extra=dict(extra or {}),
    )


def not_run(
    method: Method,
    sentences: Sequence[str],
    *,
    status: CheckStatus,
    sample_count: int,
    model: str | None = None,
) -> SelfCheckResult:
    """A result that says why nothing was scored: every score is ``None``."""
    return SelfCheckResult(
        method=method,
        sentences=tuple(SentenceScore(i, t, None) for i, t in enumerate(sentences)),
        passage_score=None,
        risk_score=None,
        risk_level=None,
        sample_count=sample_count,
        status=status,
        model=model,
    )
