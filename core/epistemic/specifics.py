"""Rule checks of a claim's specifics against its evidence text.

Catches procedural errors that similarity alone misses: a value or dose that differs from the
record (contradicted), a count stated wrongly (the record lists four medications, the claim
says three), a negation or laterality flipped, and specifics the record never states
(over-extrapolation). Pure functions over plain strings; no model. Quantities are read by the
fact checks of answer grounding (``facts.quantities``), negation and a reply's yes or no by
the assertion engine that grounding and extraction read too (``core.assertion.denies``,
``core.assertion.reply_answer``), so that the claim audit and grounding read a sentence
alike.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Literal

from core.assertion import denies, reply_answer
from core.assertion.rules import load_rules
from core.grounding.facts import Quantity, digits
from core.grounding.facts import quantities as read_quantities

_STOPWORDS = frozenset(
    """a an the of to in on at for with and or but is are was were be been being has have had
    do does did this that these those it its as by from per than then there their they them he
    she his her him patient patients pt who which what when where while also not no any all
    into out up over under about after before during since until so such very more most less
    will would should could can may might must shall reported reports report noted notes note
    documented states stated shows showed recorded according record records take takes taking
    took taken use uses using used start started starts continue continued get gets got now
    today currently current regular about approximately around mostly roughly told tell tells
    time times
    said says say mentioned mentions explained""".split()
)
# The words that show a sentence negates something (the assertion rules' ``marked_by``):
# never content, and a reason for a closer look. What is negated is read by the assertion
# engine (``core.assertion.denies``), not here.
_NEGATION = load_rules().negation_marker
_CLAUSE_SPLIT = re.compile(r"[;,]|\bbut\b|\bhowever\b|\balthough\b|\bwhereas\b|\bthough\b", re.I)
_LATERALITY = re.compile(r"\b(left|right|bilateral(?:ly)?|both\s+sides)\b", re.I)
_DATE = re.compile(
    r"\b\d{1,4}[/-]\d{1,2}[/-]\d{1,4}\b|\b(?:19|20)\d{2}\b|"
    r"\b\d{1,2}(?:st|nd|rd|th)?\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b",
    re.I,
)
_TOKEN = re.compile(r"[a-z0-9]+(?:[-/][a-z0-9]+)*", re.I)


@dataclass(frozen=True, slots=True)
class SpecificsFinding:
    """Outcome of comparing a claim's specifics with its evidence.

    ``kind`` is ``conflict`` (evidence states something else), ``addition`` (the claim adds
    specifics the evidence lacks) or ``ok``. ``coverage`` is the share of the claim's
    specifics found in the evidence (1.0 when the claim has none).
    """

    kind: Literal["ok", "conflict", "addition"]
    reason: str | None
    coverage: float
    anchored: bool = False  # the conflict ties itself to the evidence (a count of the noun)


def _stem(word: str) -> str:
    """Crude stem so that "uses", "using", "used" and "use" meet."""
    word = word.lower()
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            word = word[: -len(suffix)]
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


@lru_cache(maxsize=8192)
def content_tokens(text: str) -> frozenset[str]:
    """Lower-cased stemmed content words (no stopwords, no negation cues), numbers as the
    quantities reader writes them ("three" -> "3", "twice daily" -> "2 times daily")."""
    spelled = digits(_TWICE_DAILY.sub("2 times daily", normalize_frequencies(text)), ordinals=False)
    words = _TOKEN.findall(_TIMES_DAILY.sub(r"\1 times daily", spelled).lower())
    words += [part for w in words if "-" in w for part in w.split("-")]
    return frozenset(
        _stem(t)
        for t in words
        if t not in _STOPWORDS and not _NEGATION.fullmatch(t) and (len(t) > 1 or t.isdigit())
    )


_FREQUENCIES = (
    (re.compile(r"\b(?:b\.?i\.?d\.?|bid)(?=\W|$)", re.I), "twice daily"),
    (re.compile(r"\b(?:t\.?i\.?d\.?|tid)(?=\W|$)", re.I), "3 daily"),
    (re.compile(r"\b(?:q\.?i\.?d\.?|qid)(?=\W|$)", re.I), "4 daily"),
    (re.compile(r"\b(?:q\.?d\.?|o\.?d\.?|qday)(?=\W|$)", re.I), "once daily"),
    (re.compile(r"\b(once|twice)\s+(?:a|per|each)\s+day\b", re.I), r"\1 daily"),
    (re.compile(r"\b(\w+)\s+times?\s+(?:a|per|each)\s+day\b", re.I), r"\1 daily"),
    (re.compile(r"\b(\w+)\s+times?\s+daily\b", re.I), r"\1 daily"),
)


def normalize_frequencies(text: str) -> str:
    """Spell dosing frequencies one way ("b.i.d.", "2 times a day" -> "twice daily"/"2 daily")."""
    for pattern, repl in _FREQUENCIES:
        text = pattern.sub(repl, text)
    return text


@dataclass(frozen=True, slots=True)
class _Placed:
    """A quantity of :func:`core.grounding.facts.quantities` and where it stands in the text
    that reader saw (``_read``): ``[start, end)`` covers the number and its unit or counted
    noun; ``start`` is -1 when it could not be placed."""

    quantity: Quantity
    start: int
    end: int


def _raw_number(q: Quantity) -> str:
    """The number as written in the text read (``display`` less the unit facts appended)."""
    if q.unit in ("%", "+"):
        return q.display[: -len(q.unit)]
    if q.unit and q.unit != "score" and q.display.endswith(" " + q.unit):
        return q.display[: -len(q.unit) - 1]
    return q.display


_TIMES_DAILY = re.compile(r"\b(\d+) daily\b")
_TWICE_DAILY = re.compile(r"\btwice daily\b", re.I)
_ARTICLE = re.compile(r"an?\b", re.I)
_AGE = re.compile(r"\s*-?\s*years?\s*-?\s*old\b", re.I)
_UNIT_AFTER = re.compile(r"\s*-?\s*(?:%|\+|[A-Za-z]+)")
_FREQUENCY_AFTER = re.compile(r"\s+(?:daily|nightly|weekly|monthly)\b", re.I)
# a word or a unit facts does not know ("mmol/L"); a stopword first passes to the next
_NOUN_AFTER = re.compile(r"\s*-?\s*([A-Za-z]+(?:/[A-Za-z]+)*)(?:\s+([A-Za-z]+(?:/[A-Za-z]+)*))?")


@lru_cache(maxsize=4096)
def _read(text: str, *, ordinals: bool = False) -> tuple[str, tuple[_Placed, ...]]:
    """The text as :func:`core.grounding.facts.quantities` reads it (frequencies spelled one
    way, "3 times daily"; numbers as digits, spelled ordinals too with ``ordinals``, as facts
    reads evidence but not statements) and its quantities placed in it.

    Readings a claim check needs that facts does not make are added here: an age
    ("64-year-old") is no duration (unit ``age``); a number without a unit counts the noun
    after it ("3 medications": unit ``#medication``); "once" ("1 time") says nothing a
    frequency word does not; and in a claim, "a night" is no number. Dates are left out
    (their formats vary too much to compare).
    """
    seen = digits(normalize_frequencies(text), ordinals=ordinals)
    seen = _TIMES_DAILY.sub(r"\1 times daily", _TWICE_DAILY.sub("2 times daily", seen))
    dates = [m.span() for m in _DATE.finditer(seen)]
    placed: list[_Placed] = []
    cursor = 0
    for q in read_quantities(seen, ordinals=ordinals):
        number = re.compile(rf"(?<![\w.]){re.escape(_raw_number(q))}(?![\d.,/]\d|\d)")
        m = number.search(seen, cursor)
        if m is None:
            placed.append(_Placed(q, -1, -1))
            continue
        cursor = end = m.end()
        if any(s <= m.start() < e for s, e in dates) or (q.value, q.unit) == ("1", "times"):
            continue
        after = seen[end:]
        if q.unit is not None:
            unit = _UNIT_AFTER.match(after)
            end += unit.end() if unit else 0
            if q.unit == "times" and (often := _FREQUENCY_AFTER.match(seen, end)):
                end = often.end()  # "2 times daily" as one
            if q.unit == "year" and _AGE.match(after):
                q = replace(q, unit="age")
        elif "/" not in q.value and (words := _NOUN_AFTER.match(after)):
            noun, stop = words.group(1).lower(), words.end(1)
            if noun in _STOPWORDS and words.group(2):
                noun, stop = words.group(2).lower(), words.end(2)
            if noun not in _STOPWORDS:
                q = replace(q, unit="#" + _stem(noun))
                end += stop
        placed.append(_Placed(q, m.start(), end))
    if not ordinals and any(p.quantity.value == "1" for p in placed):
        # in a claim "a night", "an hour" is an article, not a number it states
        written = normalize_frequencies(text)
        spans = _in_original(written, seen, [(p.start, p.end) for p in placed])
        placed = [
            p
            for p, (a, b) in zip(placed, spans, strict=True)
            if p.quantity.value != "1" or p.start < 0 or not _ARTICLE.match(written[a:b])
        ]
    return seen, tuple(placed)


def quantities(text: str, *, ordinals: bool = False) -> list[Quantity]:
    """Numbers in ``text`` as :func:`core.grounding.facts.quantities` reads them, with an age
    told from a duration (unit ``age``) and the noun a bare number counts (unit ``#noun``,
    as in "3 medications"); dates and "once" are left out. ``ordinals`` as facts reads
    evidence ("the second dose", "a couple of"); a claim is read without."""
    return [p.quantity for p in _read(text, ordinals=ordinals)[1]]


def _enumeration_counts(text: str, noun: str) -> list[int]:
    """Item counts of lists that follow a mention of ``noun`` ("Medications: a, b and c")."""
    counts: list[int] = []
    stem = noun.lstrip("#")
    if not stem:
        return counts
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", text):
        lowered = sentence.lower()
        pos = lowered.find(stem[: max(4, len(stem) - 1)])
        if pos < 0:
            continue
        tail = sentence[pos:]
        tail = re.sub(
            r"^[A-Za-z]+\s*(?:include|includes|are|were|is|:|-|listed)?\s*:?\s*", "", tail
        )
        tail = tail.split(".")[0]
        items = [p for p in re.split(r",|\band\b|;", tail) if p.strip()]
        if len(items) >= 2:
            counts.append(len(items))
    return counts


def _clauses(text: str) -> list[str]:
    parts = [p.strip() for p in _CLAUSE_SPLIT.split(text)]
    return [p for p in parts if p]


def best_clause(claim: str, evidence: str) -> tuple[str, float]:
    """The evidence clause sharing most content words with the claim, with that share."""
    wanted = content_tokens(claim)
    if not wanted:
        return "", 0.0
    best, best_share = "", 0.0
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", evidence):
        for clause in _clauses(sentence):
            share = len(wanted & content_tokens(clause)) / len(wanted)
            if share > best_share:
                best, best_share = clause, share
    return best, best_share


def _negated(text: str) -> bool:
    return denies(text)


def _sides(text: str) -> set[str]:
    sides = set()
    for m in _LATERALITY.finditer(text):
        word = m.group(1).lower()
        sides.add("bilateral" if word.startswith(("bilateral", "both")) else word)
    return sides


def _anchor(seen: str, placed: tuple[_Placed, ...], at: _Placed) -> str | None:
    """The content word just before a quantity ("metformin" in "metformin 500 mg"), in the
    text as read (``_read``); numbers and their unit words are no anchor."""
    units = {w.lower() for p in placed for w in _TOKEN.findall(seen[p.start : p.end])}
    units |= {"daily", "nightly", "weekly", "monthly"}
    head = re.split(r"[;,]", seen[: at.start])[-1]
    before = _TOKEN.findall(head.lower())[-8:]
    for word in reversed(before):
        stem = _stem(word)
        if (
            word not in _STOPWORDS
            and word not in units
            and not re.fullmatch(r"[\d./]+", word)
            and len(stem) > 2
        ):
            return stem
    return None


def _anchored_values(evidence: str, anchor: str, unit: str) -> set[str] | None:
    """Values of ``unit`` in the evidence pieces that mention ``anchor`` (None: no mention)."""
    pieces = [
        p
        for sentence in re.split(r"(?<=[.!?])\s+|\n+", evidence)
        for p in re.split(r"[;,]|\band\b", sentence)
        if anchor in content_tokens(p)
    ]
    if not pieces:
        return None
    return {x.value for p in pieces for x in quantities(p, ordinals=True) if x.unit == unit}


def _evidence_negated(clause: str, evidence: str) -> bool | None:
    """Polarity of an evidence clause; a question takes the polarity of the reply after it.

    ``None`` when a question has no clear yes/no reply ("Any chest pain?" "Sometimes.").
    """
    pos = evidence.find(clause)
    after = evidence[pos + len(clause) :] if pos >= 0 else ""
    if not (clause.rstrip().endswith("?") or after.lstrip().startswith("?")):
        return _negated(clause)
    reply = after.lstrip().lstrip("?").lstrip()
    reply = re.sub(r"^\[[^\]]*\]\s*|^\w+:\s*", "", reply)
    answer = reply_answer(re.split(r"(?<=[.!?])\s+|\n", reply, maxsplit=1)[0])
    return None if answer is None else not answer


def compare_specifics(claim: str, evidence_texts: Iterable[str]) -> SpecificsFinding:
    """Compare the claim's quantities, counts, negation and laterality with the evidence.

    A quantity is checked against the evidence that mentions the word it qualifies
    ("metformin" for "metformin 500 mg") when the evidence mentions it, else against the
    whole evidence. Returns ``conflict`` when the evidence states another value (or count,
    polarity, side), ``addition`` when the claim carries quantities the evidence lacks,
    ``ok`` otherwise.
    """
    evidence = "\n".join(evidence_texts)
    ev_quantities = quantities(evidence, ordinals=True)
    ev_values = {(q.value, q.unit) for q in ev_quantities}
    ev_bare = {q.value for q in ev_quantities}
    seen, placed = _read(claim)
    claim_quantities = [p.quantity for p in placed]
    claim_values = {(q.value, q.unit) for q in claim_quantities}
    written = normalize_frequencies(claim)  # a reason quotes the claim's own words
    wording = _in_original(written, seen, [(p.start, p.end) for p in placed]) if placed else []
    anchored_addition = False
    found = 0
    additions: list[str] = []
    for p, (a, b) in zip(placed, wording, strict=True):
        q = p.quantity
        text = written[a:b].strip() if p.start >= 0 else q.display
        if q.unit and q.unit.startswith("#"):
            if (q.value, q.unit) in ev_values:
                found += 1
                continue
            counts = _enumeration_counts(evidence, q.unit)
            if q.value.isdigit() and int(q.value) in counts:
                found += 1
                continue
            if counts and q.value.isdigit():
                return SpecificsFinding(
                    "conflict",
                    f"count differs: claim says {q.value}, evidence lists {counts[0]}",
                    found / len(claim_quantities),
                    anchored=True,
                )
        anchor = _anchor(seen, placed, p) if q.unit and p.start >= 0 else None
        anchored = _anchored_values(evidence, anchor, q.unit) if anchor and q.unit else None
        if anchored is not None:
            if q.value in anchored:
                found += 1
                continue
            others = {v for v in anchored if (v, q.unit) not in claim_values}
            if others:
                return SpecificsFinding(
                    "conflict",
                    f"value differs: {text} vs {sorted(others)[0]} {(q.unit or '').lstrip('#')}",
                    found / len(claim_quantities),
                    anchored=True,
                )
            additions.append(text)
            anchored_addition = True
            continue
        if (q.value, q.unit) in ev_values or (not q.unit and q.value in ev_bare):
            found += 1
            continue
        additions.append(text)
    coverage = found / len(claim_quantities) if claim_quantities else 1.0
    clause, share = best_clause(claim, evidence)
    stripped_share = best_clause(without_quantities(claim), evidence)[1]
    if clause and max(share, stripped_share) >= 0.6:
        for claim_clause in _clauses(claim) or [claim]:
            if not content_tokens(claim_clause):
                continue
            ev_clause, ev_share = best_clause(without_quantities(claim_clause), evidence)
            ev_polarity = _evidence_negated(ev_clause, evidence)
            if (
                ev_share >= 0.6
                and ev_polarity is not None
                and _negated(claim_clause) != ev_polarity
            ):
                return SpecificsFinding(
                    "conflict", "negation differs from the evidence", coverage, anchored=True
                )
        claim_sides, ev_sides = _sides(claim), _sides(clause)
        if claim_sides and ev_sides and not claim_sides & ev_sides:
            return SpecificsFinding(
                "conflict",
                f"laterality differs: {'/'.join(sorted(claim_sides))} vs "
                f"{'/'.join(sorted(ev_sides))}",
                coverage,
                anchored=True,
            )
    if additions:
        return SpecificsFinding(
            "addition",
            "specifics absent from the evidence: " + ", ".join(additions),
            coverage,
            anchored=anchored_addition,
        )
    return SpecificsFinding("ok", None, coverage)


def _in_original(text: str, seen: str, spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` of the text as read (``_read``) mapped back onto ``text``: the reader rewrote
    words ("three" -> "3", "a week" -> "1 week"), so the two are aligned on the runs they
    share (difflib); a rewritten run maps to the words it replaced."""
    blocks = difflib.SequenceMatcher(None, seen, text, autojunk=False).get_opcodes()

    def back(pos: int, *, end: bool) -> int:
        for _, s1, s2, t1, t2 in blocks:
            if s1 <= pos < s2 or (end and s1 < pos <= s2):
                return t1 + (pos - s1 if s2 - s1 == t2 - t1 else (t2 - t1 if end else 0))
        return len(text) if end else 0

    return [(back(a, end=False), back(b, end=True)) for a, b in spans]


def without_quantities(text: str) -> str:
    """``text`` without its quantities and frequency words (what is left to support)."""
    text = normalize_frequencies(text)
    seen, placed = _read(text)
    spans = _in_original(text, seen, [(p.start, p.end) for p in placed if p.start >= 0])
    for a, b in sorted(spans, reverse=True):
        text = text[:a] + " " + text[b:]
    return re.sub(r"\b(?:daily|nightly|weekly|monthly)\b", " ", text, flags=re.I)


def lexical_support(
    claim: str, evidence_texts: Iterable[str], *, by_part: bool = True
) -> tuple[float, str]:
    """Share of the claim's content words found in one evidence sentence, and that sentence.

    A cheap tier for short factual claims that embedding similarity under-rates ("His
    potassium was 4.6 mmol/L" against "Potassium 4.6 mmol/L."); higher is better.
    """
    sentences = [
        (sentence, content_tokens(sentence))
        for text in evidence_texts
        for sentence in re.split(r"(?<=[.!?])\s+|\n+", text)
    ]
    parts = [p for p in re.split(r"[;,]|\band\b|\bbut\b", claim) if content_tokens(p)]
    if not by_part:
        parts = [claim]
    if not content_tokens(claim) or not parts:
        return 0.0, ""
    # each part of a conjoined claim may come from its own sentence ("never smoked and has
    # not been to the emergency department")
    worst, first = 1.0, ""
    for part in parts:
        wanted = content_tokens(part)
        best, best_share = "", 0.0
        for sentence, tokens in sentences:
            share = len(wanted & tokens) / len(wanted)
            if share > best_share:
                best, best_share = sentence, share
        worst = min(worst, best_share)
        first = first or best
    return worst, first


_STATED_LIST = re.compile(
    r"(?P<num>[a-z0-9-]+)\s+(?:[a-z-]+\s+){0,2}?(?P<noun>[a-z-]+s)\s*"
    r"(?::|\(|,\s*(?:namely|including|which are|:))\s*(?P<items>[^.;)]+)",
    re.I,
)


def stated_count_mismatch(text: str) -> tuple[int, int, int] | None:
    """A count that disagrees with the list right after it, in the same text.

    "takes three medications: metformin, lisinopril, atorvastatin and aspirin" gives
    ``(offset of the count, 3, 4)``: the right items, the wrong count (a procedural error).
    """
    for word in re.finditer(r"\b[a-z0-9]+\b", text, re.I):
        match = _STATED_LIST.match(text, word.start())
        if match is None:
            continue
        counted = read_quantities(match.group("num"), ordinals=False)
        if len(counted) != 1 or not counted[0].value.isdigit():
            continue
        stated = int(counted[0].value)
        items = [p for p in re.split(r",|\band\b|\bor\b", match.group("items")) if p.strip()]
        if len(items) >= 2 and len(items) != stated:
            return match.start("num"), stated, len(items)
    return None


def has_specifics(text: str) -> bool:
    """True when the text carries numbers, laterality or negation worth a closer check."""
    return bool(quantities(text) or _LATERALITY.search(text) or _NEGATION.search(text))
