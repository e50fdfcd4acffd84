"""Prompts of the LLM checks and robust parsing of their replies.

A reply that cannot be parsed raises :class:`UnparseableReplyError`; callers record the check
as ``failed``; no number is ever invented.
"""

from __future__ import annotations

import re

from core.backends.llm import Message

MAX_EVIDENCE_CHARS = 6000


class UnparseableReplyError(ValueError):
    """The LLM reply holds no usable answer (the message gives its length, not its text)."""


def _clip(text: str, limit: int = MAX_EVIDENCE_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + " [...]"


def direct_check_messages(claim: str, evidence: str) -> list[Message]:
    """SPEC-16 method 1: ask the model how fully the evidence supports the claim."""
    return [
        {
            "role": "system",
            "content": "You check medical claims against patient records. Be strict and brief.",
        },
        {
            "role": "user",
            "content": (
                "Evaluate whether the claim is fully supported by the evidence.\n\n"
                f"CLAIM: {claim}\n\nEVIDENCE:\n{_clip(evidence)}\n\n"
                "Rate support from 0.0 (completely unsupported or contradicted) to 1.0 (fully "
                "supported). Consider whether the evidence explicitly states what the claim "
                "asserts, whether the claim extrapolates beyond it, and any contradiction.\n"
                "Reply with the number first, then a brief reason. Example: 0.4 - dose not stated"
            ),
        },
    ]


def extraction_messages(answer: str) -> list[Message]:
    """SPEC-16 method 3: decompose the answer into atomic claims, one per line."""
    return [
        {"role": "system", "content": "You split text into atomic factual claims."},
        {
            "role": "user",
            "content": (
                "List every atomic factual claim in the text below, one per line, each as a "
                "short sentence using the text's own words. Output only the list.\n\n"
                f"TEXT:\n{_clip(answer)}"
            ),
        },
    ]


def with_evidence_messages(question: str, evidence: str) -> list[Message]:
    """Scrubbing, full context: answer the question from the evidence."""
    return [
        {
            "role": "user",
            "content": (f"Given this evidence:\n{_clip(evidence)}\n\nAnswer briefly: {question}"),
        }
    ]


def without_evidence_messages(question: str) -> list[Message]:
    """Scrubbing, evidence removed: answer the same question from the model's priors."""
    return [{"role": "user", "content": f"Answer briefly: {question}"}]


_SCORE = re.compile(
    r"(?<![\d.])(?P<num>(?:0?\.\d+|[01](?:\.\d+)?|\d{1,3}(?:\.\d+)?))\s*(?P<suffix>%|/\s*10\b|/\s*100\b|"
    r"out\s+of\s+10\b)?",
    re.I,
)


def parse_support_score(reply: str) -> float:
    """First rating in the reply, as a probability in [0, 1].

    Accepts ``0.8``, ``.8``, ``1``, ``80%``, ``8/10``, ``8 out of 10``, ``score: 0.75``.

    Raises:
        UnparseableReplyError: no rating found, or it lies outside the scale.
    """
    text = reply.strip()
    for match in _SCORE.finditer(text[:400]):
        value = float(match.group("num"))
        suffix = (match.group("suffix") or "").replace(" ", "").lower()
        if suffix == "%" or suffix == "/100":
            value /= 100.0
        elif suffix in ("/10", "outof10"):
            value /= 10.0
        elif value > 1.0:
            continue  # a number from the reason ("500 mg"), not a rating
        if 0.0 <= value <= 1.0:
            return value
    raise UnparseableReplyError(f"no support rating in the reply ({len(text)} characters)")


_BULLET = re.compile(r"^\s*(?:[-*•]+|\d+[.)]|claim\s*\d*\s*[:.)-])\s*", re.I)


def parse_claim_lines(reply: str) -> list[str]:
    """Claims of an extraction reply: one per non-empty line, bullets and numbers removed."""
    claims = []
    for line in reply.splitlines():
        text = _BULLET.sub("", line).strip().strip('"')
        if len(text) >= 8 and not text.endswith(":"):
            claims.append(text)
    if not claims:
        raise UnparseableReplyError(f"no claims in the reply ({len(reply)} characters)")
    return claims
