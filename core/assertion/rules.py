"""The assertion engine's rules, read once from ``core/data/assertion.json``.

Each category of the JSON is a list of words or phrases (its ``_about`` says what they do):
``negated`` (cues before and after, pseudo-phrases, affirmers), ``clauses`` (what ends a
scope), ``supposed`` (conditions and plans), ``question`` (the dialogue's questions and the
words of a reply's yes or no), ``findings_as_words`` (the names of one finding read as one
word) and ``context`` (ConText triggers by category and direction). A new cue is a line in
the JSON, not a new branch in the code.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

RULES_PATH = Path(__file__).parents[1] / "data" / "assertion.json"

Direction = Literal["forward", "backward", "both"]

PHRASE_TOKEN_RE = re.compile(r"\w+|[^\w\s]")
"""How extraction tokenises a sentence for its lexicon terms and the ConText phrases."""


def phrase_key(phrase: str) -> str:
    """A phrase as extraction's tables key it: its lower-case tokens joined by spaces."""
    return " ".join(PHRASE_TOKEN_RE.findall(phrase.lower()))


def _context_table(raw: Mapping[str, Any]) -> dict[str, tuple[str, Direction]]:
    """Phrase key -> (category, direction); a phrase listed in both directions of one
    category reaches both ways, and the first category to list a phrase keeps it."""
    table: dict[str, tuple[str, Direction]] = {}
    for category, by_direction in raw.items():
        if category.startswith("_"):
            continue
        for direction, phrases in by_direction.items():
            for phrase in phrases:
                key = phrase_key(phrase)
                if key in table and table[key][0] == category:
                    table[key] = (category, "both")
                else:
                    table.setdefault(key, (category, direction))
    return table


def _words(raw: Iterable[str]) -> frozenset[str]:
    return frozenset(raw)


def _pairs(raw: Iterable[Sequence[str]]) -> frozenset[tuple[str, str]]:
    return frozenset((a, b) for a, b in raw)


def _phrases(raw: Iterable[str]) -> dict[str, tuple[tuple[str, ...], ...]]:
    """First word -> the phrases (as word tuples) that start with it."""
    out: dict[str, list[tuple[str, ...]]] = {}
    for phrase in raw:
        words = tuple(phrase.split())
        out.setdefault(words[0], []).append(words)
    return {k: tuple(v) for k, v in out.items()}


def _marker(raw: Iterable[str]) -> re.Pattern[str]:
    """One pattern for words and phrases (a phrase's words apart by any space); a
    contraction's ending ("n't", of "don't") is found at the end of a word."""
    parts = [
        ("" if "'" in phrase else r"\b") + r"\s+".join(re.escape(w) for w in phrase.split()) + r"\b"
        for phrase in raw
    ]
    return re.compile("|".join(parts), re.I)


@dataclass(frozen=True, slots=True)
class Rules:
    """The rules of ``assertion.json``, one field per word class (see the JSON's ``_about``
    of each category)."""

    neg_cues: frozenset[str]
    negation_marker: re.Pattern[str]
    neg_after: Mapping[str, tuple[tuple[str, ...], ...]]
    neg_both_ways: frozenset[tuple[str, ...]]
    pseudo: frozenset[tuple[str, str]]
    affirmers: frozenset[str]
    links: frozenset[str]
    scope_words: int
    list_item_words: int
    scope_end: frozenset[str]
    subjects: frozenset[str]
    clause_starts: frozenset[str]
    comma_clause: frozenset[str]
    new_phrase: frozenset[str]
    prepositions: frozenset[str]
    copulas: frozenset[str]
    fine: frozenset[str]
    raising: frozenset[str]
    raised_by: frozenset[str]
    verbs_before_any: frozenset[str]
    conditions: frozenset[str]
    plan_cues: frozenset[str]
    asks: frozenset[str]
    ask_pairs: frozenset[tuple[str, str]]
    ask_always: frozenset[tuple[str, str]]
    auxiliaries: frozenset[str]
    asked_subjects: frozenset[str]
    openers: frozenset[str]
    wh_words: frozenset[str]
    wh_next: frozenset[str]
    relatives: frozenset[str]
    asked_participles: frozenset[str]
    yes_words: frozenset[str]
    yes_phrases: tuple[list[str], ...]
    no_words: frozenset[str]
    hesitations: frozenset[str]
    fillers: frozenset[str]
    question_run: int
    naming: re.Pattern[str]
    finding_phrases: tuple[tuple[re.Pattern[str], str], ...]
    context: Mapping[str, tuple[str, Direction]]


@lru_cache(maxsize=1)
def load_rules() -> Rules:
    """The packaged rules (read once per process)."""
    raw: dict[str, Any] = json.loads(RULES_PATH.read_text("utf-8"))
    neg, cl, sup, q, fw = (
        raw["negated"],
        raw["clauses"],
        raw["supposed"],
        raw["question"],
        raw["findings_as_words"],
    )
    clause_starts = _words(cl["clause_starts"])
    affirmers = _words(neg["affirmers"])
    return Rules(
        neg_cues=_words(neg["cues"]),
        negation_marker=_marker(neg["marked_by"]),
        neg_after=_phrases(neg["after"]),
        neg_both_ways=frozenset(tuple(p.split()) for p in neg["both_ways"]),
        pseudo=_pairs(p.split() for p in neg["pseudo"]),
        affirmers=affirmers,
        links=_words(neg["links"]),
        scope_words=int(neg["scope_words"]),
        list_item_words=int(neg["list_item_words"]),
        scope_end=_words(cl["ends"]),
        subjects=_words(cl["subjects"]),
        clause_starts=clause_starts,
        comma_clause=clause_starts - _words(cl["list_goes_on"]),
        new_phrase=_words(cl["new_phrase"]),
        prepositions=_words(cl["prepositions"]),
        copulas=_words(cl["copulas"]),
        fine=affirmers | _words(cl["fine"]),
        raising=_words(cl["raising"]),
        raised_by=_words(cl["raised_by"]),
        verbs_before_any=_words(cl["verbs_before_any"]),
        conditions=_words(sup["conditions"]),
        plan_cues=_words(sup["plan_cues"]),
        asks=_words(q["asks"]),
        ask_pairs=_pairs(q["ask_pairs"]),
        ask_always=_pairs(q["ask_always"]),
        auxiliaries=_words(q["auxiliaries"]),
        asked_subjects=_words(q["asked_subjects"]),
        openers=_words(q["openers"]),
        wh_words=_words(q["wh_words"]),
        wh_next=_words(q["wh_next"]),
        relatives=_words(q["relatives"]),
        asked_participles=_words(q["asked_participles"]),
        yes_words=_words(q["yes_words"]),
        yes_phrases=tuple(list(p) for p in q["yes_phrases"]),
        no_words=_words(q["no_words"]),
        hesitations=_words(q["hesitations"]),
        fillers=_words(q["fillers"]),
        question_run=int(q["question_run"]),
        naming=re.compile(fw["naming"], re.I),
        finding_phrases=tuple((re.compile(p, re.I), w) for p, w in fw["phrases"]),
        context=_context_table(raw["context"]),
    )
