"""Lexical support: which words of a statement its evidence bears out, and which it does not.

A word is borne out when the evidence says it in any inflection ("fractures" / "fractured"),
with numbers compared as values whether written or spoken ("76-year-old" / "seventy six years
old"). What is left over is what a reviewer should check first ("an MRI was ordered" against a
visit that never mentions one: "MRI", "ordered"), and the share of content words left over is
one input of the verifier's decision (a statement that adds words the source never says is
more often invented).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from core.grounding.facts import digits
from core.lexicon import shorthand_meaning, written_out
from core.text import Span, cached_for_short_texts, stem

# words that carry no claim of their own: left out of both sides of the comparison
_FUNCTION_WORDS = frozenset(
    """
    a an the and or but nor of in on at to for with without by from as into onto about
    is are was were be been being am has have had having do does did doing this that these
    those it its he she they his her hers their theirs him them i you we my your our me us
    who whom whose which what when where why how there here also very any some all each
    both either neither other another such same own so than too then now just only even
    patient patients pt mr mrs ms dr miss sir today currently will would can could should
    shall may might must also well okay ok yes yeah um uh mm hmm like per via s t
    """.split()
)
# How a note reports what was said, not what was said: "she states", "he reports", "the
# patient presents with". A visit never says these words, and a summary is not invented for
# using them.
_REPORTING_WORDS = frozenset(
    """
    say says said state states stated report reports reported reporting note notes noted
    describe describes described complain complains complained endorse endorses endorsed
    present presents presented presenting admit admits admitted mention mentions mentioned
    indicate indicates indicated tell tells told explain explains explained
    """.split()
)
_TOKEN_RE = re.compile(r"\d+(?:[./]\d+)*%?|[A-Za-z][A-Za-z']*")


def _key(token: str) -> str:
    if token[0].isdigit():
        return token.rstrip("%")
    low = token.lower()
    if low.endswith("'s"):
        low = low[:-2]
    return stem(low)


def _is_content(token: str) -> bool:
    if token[0].isdigit():
        return True
    low = token.lower().removesuffix("'s")
    return len(low) > 1 and low not in _FUNCTION_WORDS and low not in _REPORTING_WORDS


@cached_for_short_texts(maxsize=4096)
def evidence_keys(text: str) -> frozenset[str]:
    """Every content word of ``text`` as a stem, every number as its value (spoken numbers
    read as digits), and the words its clinical shorthand stands for ("BP": "blood",
    "pressure"). Cached for passages and sentences; a whole source is read once
    per answer by the caller (:func:`keys_of`) and passed on as ``keys``."""
    keys = {_key(t) for t in _TOKEN_RE.findall(text) if _is_content(t)}
    keys |= {_key(t) for t in _TOKEN_RE.findall(digits(text)) if t[0].isdigit()}
    meant = written_out(text)  # and what its clinical shorthand stands for ("BP")
    if meant != text:
        keys |= {_key(t) for t in _TOKEN_RE.findall(meant) if _is_content(t)}
    return frozenset(keys)


def keys_of(texts: Iterable[str]) -> frozenset[str]:
    """The :func:`evidence_keys` of several texts together."""
    return frozenset().union(*(evidence_keys(t) for t in texts))


def statement_words(statement: str) -> list[tuple[str, Span]]:
    """The statement's content words with their keys and offsets."""
    return [
        (_key(m.group(0)), Span(m.group(0), m.start(), m.end()))
        for m in _TOKEN_RE.finditer(statement)
        if _is_content(m.group(0))
    ]


def _meant(word: str, keys: frozenset[str]) -> bool:
    """Whether a word of clinical shorthand is borne out by what it stands for: at least half
    of the content words of its meaning ("SOBOE": "short of breath on exertion") said."""
    meaning = shorthand_meaning(word)
    if meaning is None:
        return False
    words = statement_words(meaning)
    return 2 * sum(k in keys for k, _ in words) >= len(words) > 0


def unsupported_words(
    statement: str, evidence: Iterable[str] = (), *, keys: frozenset[str] | None = None
) -> list[Span]:
    """The statement's content words that no evidence text says (or that are not among
    ``keys``, the evidence read before by :func:`keys_of`), adjacent ones merged into one
    phrase ("chest X-ray"), with offsets into ``statement``."""
    if keys is None:
        keys = keys_of(evidence)
    spans: list[Span] = []
    for key, span in statement_words(statement):
        if key in keys or _meant(span.text, keys):
            continue
        if spans and not statement[spans[-1].end : span.start].strip(" -"):
            last = spans.pop()
            span = Span(statement[last.start : span.end], last.start, span.end)
        spans.append(span)
    return spans


_LIST_BREAK_RE = re.compile(r"[,;:()/]|\band\b|\bor\b", re.I)


def unsaid_phrases(
    statement: str, evidence: Iterable[str] = (), *, keys: frozenset[str] | None = None
) -> list[str]:
    """The statement's phrases that no evidence text says, as a reader quotes them: the
    spans of :func:`unsupported_words` joined across the words between them that name
    nothing ("half an hour most days", not "half", "hour most days"); the items of a list
    stay apart."""
    spans = unsupported_words(statement, evidence, keys=keys)
    merged: list[tuple[int, int]] = []
    for span in spans:
        gap = statement[merged[-1][1] : span.start] if merged else ""
        if merged and not statement_words(gap) and not _LIST_BREAK_RE.search(gap):
            merged[-1] = (merged[-1][0], span.end)
        else:
            merged.append((span.start, span.end))
    return [statement[a:b] for a, b in merged]


def novelty(
    statement: str, evidence: Sequence[str] = (), *, keys: frozenset[str] | None = None
) -> float:
    """Share of the statement's content words that the evidence (or ``keys``, as in
    :func:`unsupported_words`) does not say, in [0, 1] (higher = more of the statement is
    new; 0 for a statement without content words)."""
    words = statement_words(statement)
    if not words:
        return 0.0
    if keys is None:
        keys = keys_of(evidence)
    return sum(k not in keys for k, _ in words) / len(words)
