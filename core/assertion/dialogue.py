"""The dialogue's questions and answers: a question answered "no" denies what it asked.

A reply's yes or no (:func:`reply_answer`), the sentence that answers a question
(:func:`reply_index`, over a run of short questions answered at once), and how each sentence
of a dialogue says its terms with its reply read in (:func:`dialogue_polarity`). The words
are the ``question`` rules of the JSON; the token reading (:mod:`core.assertion.reading`)
says what a question asks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from core.assertion.reading import (
    content_word,
    finding_stems,
    findings_as_words,
    opens_wh_question,
    polarity_marks,
    strip_speaker,
)
from core.assertion.rules import load_rules
from core.text import stem, tokens

Polarity = dict[str, set[bool]]
"""Stem -> how a text says it: {True} asserted, {False} negated, both when said both ways."""

_R = load_rules()
_NEG_CUES = _R.neg_cues
_ASKS = _R.asks
_ASK_PAIRS = _R.ask_pairs
_YES_WORDS = _R.yes_words
_YES_PHRASES = _R.yes_phrases
_NO_WORDS = _R.no_words
_HESITATIONS = _R.hesitations
_FILLERS = _R.fillers
QUESTION_RUN = _R.question_run
"""Questions in a row that one reply may answer."""


def _polarity(toks: list[str]) -> tuple[Polarity, set[str]]:
    """Content stems of one evidence sentence with how each is said (both, when said both
    ways), and the stems it asks about. What a condition supposes is neither said nor asked.
    (Grounding reads a statement by its marks alone: a statement asks nothing.)"""
    said: Polarity = {}
    asked: set[str] = set()
    for tok, mark in zip(toks, polarity_marks(toks), strict=True):
        if not content_word(tok) or mark == "if":
            continue
        if mark is None:
            asked.add(stem(tok))
        else:
            said.setdefault(stem(tok), set()).add(bool(mark))
    return said, asked


# A reply that opens with a plain no and a stop: "no . let me ...", "not really , ...".
_NO_FIRST_RE = re.compile(
    rf"\s*(?:(?:{'|'.join(sorted(_HESITATIONS))})\s*,?\s*)?"
    r"(?:no|nope|nah|never|not really|not at all|not in a while)\s*[.,!]",
    re.I,
)


# Words that say yes alone and strengthen a "not" after them.
_INTENSIFIERS = frozenset({"absolutely", "definitely", "certainly"})


def reply_answer(sentence: str) -> bool | None:
    """A short reply's yes (True) or no (False); None when neither, or when the reply goes
    on to say more (a "no" before a new clause often answers something else)."""
    text = strip_speaker(sentence)
    if _NO_FIRST_RE.match(text):
        return False  # "no . let me pull my notes out ...": the answer comes first
    toks = tokens(text)
    words = [t for t in toks[:6] if t.isalpha() and t not in _FILLERS]
    if words and words[0] in _NO_WORDS and len(words) > 1 and words[1] in _NO_WORDS | {"i"}:
        return False  # "no no i have never had ...", "no i actually tried ..."
    if sum(content_word(t) for t in toks) > 6 or not words:
        return None
    if words[0] in _NO_WORDS or (words[0] in {"i", "not"} and "not" in words[:3]):
        return False
    if words[0] in _INTENSIFIERS and words[1:2] == ["not"]:
        return False  # "absolutely not": a yes word alone, a no with "not" after it
    if words[0] in _YES_WORDS or words[:2] in _YES_PHRASES:
        # "i did at first but not any more", "yeah. no.": mixed, the reply's own words decide
        after = toks[toks.index(words[1]) + 1 :] if words[:2] in _YES_PHRASES else toks[1:]
        return None if any(t in _NEG_CUES for t in after) else True
    return None


def _named_in_reply(reply: str, listed: set[str]) -> set[str]:
    """The listed stems a short, plain reply names (none when it negates anything)."""
    toks = tokens(findings_as_words(strip_speaker(reply)))
    if any(t in _NEG_CUES or t == "?" for t in toks):
        return set()
    content = {stem(t) for t in toks if content_word(t)}
    if len(content) > 6:
        return set()
    return content & listed


# A reply that denies whatever it has not named: "but everything else has been okay".
_REST_DENIED_RE = re.compile(
    r"\b(?:nothing else|(?:everything|all) else (?:(?:has|is|was|'s) )?(?:been )?"
    r"(?:fine|okay|ok|good|normal|alright)|other than that\s*,?\s*(?:no|nothing|fine|okay))\b",
    re.I,
)


# A tag that turns a statement into a question only in form: "you have some edema , okay ?"
_TAG_QUESTION_RE = re.compile(
    r",\s*(?:okay|ok|right|alright|all right|correct|yeah)\s*\?\s*$", re.I
)


def is_question(sentence: str) -> bool:
    """Whether a sentence asks (a tag such as "..., okay ?" does not make it ask). A question
    cut off by the reply ("have you had any fever-", "chest pain , shortness of breath ,
    belly pain-") asks too."""
    text = sentence.rstrip()
    if text.endswith("-"):
        return _cut_question(strip_speaker(text))
    return text.endswith("?") and not _TAG_QUESTION_RE.search(sentence)


def _cut_question(text: str) -> bool:
    """A cut-off sentence that opens as a question, or lists findings and nothing else."""
    toks = [t for t in tokens(findings_as_words(text)) if t.isalpha() and t not in _FILLERS]
    if len(toks) >= 2 and ((toks[0], toks[1]) in _ASK_PAIRS or toks[0] in _ASKS):
        return True
    findings = finding_stems()
    items = [tokens(findings_as_words(item)) for item in text.rstrip("- ").split(",")]
    return len(items) > 1 and all(
        0 < len(item) <= 3 and any(stem(t) in findings or t in {"pain", "ache"} for t in item)
        for item in items
    )


def _short_question(sentence: str) -> bool:
    return is_question(sentence) and len(sentence.split()) <= 16


def reply_index(sentences: Sequence[str], i: int) -> int:
    """Index of the sentence that answers sentence ``i``: the next one, or, after a run of
    short questions answered at once ("chest pain ?" "shortness of breath ?" "no"), the
    first after the run."""
    j = i + 1
    if is_question(sentences[i]):
        while j < min(len(sentences) - 1, i + QUESTION_RUN) and _short_question(sentences[j]):
            j += 1
    return j


def _sentence_polarity(sentences: Sequence[str], i: int) -> Polarity:
    """Polarity of the terms of sentence ``i``; a question answered "no" negates what it
    asked, answered "yes" asserts it, and is otherwise undecided. Wh-questions ("how far are
    you running") presuppose what they ask about."""
    sentence = sentences[i]
    toks = tokens(findings_as_words(strip_speaker(sentence)))
    question = is_question(sentence)
    j = reply_index(sentences, i)
    reply = reply_answer(sentences[j]) if j < len(sentences) else None
    pol, asked = _polarity(toks)
    words = [t for t in toks if t.isalpha()]
    if asked and words[-1] in _NO_WORDS and not question:
        # answered within the line: "any nausea vomiting or diarrhea ... like that no"
        return {key: {False} for key in asked} | {k: v for k, v in pol.items() if k not in asked}
    if reply is None and j < len(sentences) and question:
        # a list question answered by naming some of it: "any chest pain , shortness of
        # breath , or belly pain ?" "shortness of breath ." denies the rest
        named = _named_in_reply(sentences[j], asked)
        if not named and asked:
            # "... sore throat , cough ?" "i've had a little nasal congestion ." "but
            # everything else has been okay": what the reply names is had, the rest denied
            replied = [t for t in sentences[j : j + 2] if not is_question(t)]
            if any(_REST_DENIED_RE.search(t) for t in replied):
                heard = {stem(t) for r in replied for t in tokens(findings_as_words(r))}
                named = (asked & heard) or {""}
        if named:
            rest = {k: v for k, v in pol.items() if k not in asked}
            return {key: {key in named} for key in asked} | rest
    if reply is not None:
        # what the reply names itself, it says itself ("did any of your children have
        # problems ?" "i do not have siblings , and my children are healthy")
        own = {stem(t) for t in tokens(findings_as_words(sentences[j])) if content_word(t)}
        asked -= own
        pol = {k: v for k, v in pol.items() if k not in own}
    out: Polarity = {}
    if (
        question
        and any(t.isalpha() and t not in _FILLERS for t in toks)
        and not any(opens_wh_question(toks, k) for k in range(len(toks)))
    ):
        # a whole yes/no question ("diarrhea ?", "have you noticed any weight gain ?"):
        # "yes" confirms it as asked, "no" turns it round; a question put in the negative
        # ("and no chest pain while exercising ?") is confirmed by either
        if reply is not None:
            negative = any(False in said for said in pol.values())
            for key in asked:
                out.setdefault(key, set()).add(reply)
            for key, said in pol.items():
                out.setdefault(key, set()).update(s if reply or negative else not s for s in said)
        return out
    for key, said in pol.items():
        if key not in asked:
            out.setdefault(key, set()).update(said)
    if reply is not None:
        for key in asked:
            out.setdefault(key, set()).add(reply)
    return out


def _union(polarities: Iterable[Polarity]) -> Polarity:
    out: Polarity = {}
    for pol in polarities:
        for key, said in pol.items():
            out.setdefault(key, set()).update(said)
    return out


@lru_cache(maxsize=1024)
def dialogue_polarity(sentences: tuple[str, ...]) -> tuple[Polarity, ...]:
    """How each sentence of a dialogue (or a text) says its terms, a question read with its
    reply (see ``_sentence_polarity``; cached, so read-only)."""
    return tuple(_sentence_polarity(sentences, i) for i in range(len(sentences)))


@lru_cache(maxsize=1024)
def text_polarity(sentences: tuple[str, ...]) -> Polarity:
    """The polarity of all ``sentences`` (a whole source, or a candidate's evidence): the
    union of their sentences' (see :func:`dialogue_polarity`; cached, so read-only)."""
    return _union(dialogue_polarity(sentences))
