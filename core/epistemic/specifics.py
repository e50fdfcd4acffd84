"""Rule checks of a claim's specifics against its evidence text.

Catches procedural errors that similarity alone misses: a value or dose that differs from the
record (contradicted), a count stated wrongly (the record lists four medications, the claim
says three), a negation or laterality flipped, and specifics the record never states
(over-extrapolation). Pure functions over plain strings; no model.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

_NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "twenty": 20, "once": 1, "twice": 2, "single": 1,
}  # fmt: skip
_UNIT_ALIASES = {
    "milligram": "mg", "milligrams": "mg", "mgs": "mg", "microgram": "mcg", "micrograms": "mcg",
    "µg": "mcg", "ug": "mcg", "gram": "g", "grams": "g", "ml": "ml", "millilitre": "ml",
    "milliliter": "ml", "millilitres": "ml", "milliliters": "ml", "l": "l", "litre": "l",
    "liter": "l", "litres": "l", "liters": "l", "units": "unit", "iu": "unit", "u": "unit",
    "%": "%", "percent": "%", "kg": "kg", "kilograms": "kg", "lb": "lb", "lbs": "lb",
    "pounds": "lb", "mmhg": "mmhg", "bpm": "bpm", "beats": "bpm", "mmol/l": "mmol/l",
    "mg/dl": "mg/dl", "cm": "cm", "mm": "mm", "°c": "c", "c": "c", "°f": "f", "f": "f",
    "days": "day", "day": "day", "weeks": "week", "week": "week", "wk": "week", "wks": "week",
    "months": "month", "month": "month", "years": "year", "year": "year", "yrs": "year",
    "yr": "year", "hours": "hour", "hour": "hour", "hrs": "hour", "h": "hour", "minutes": "minute",
    "minute": "minute", "min": "minute", "mins": "minute", "times": "time", "time": "time",
    "tablets": "tablet", "tablet": "tablet", "tabs": "tablet", "puffs": "puff", "puff": "puff",
    "mg/kg": "mg/kg", "meq": "meq", "mcg/h": "mcg/h", "breaths": "breath", "x": "time",
    "daily": "daily", "/min": "/min",
}  # fmt: skip
_UNIT_ALIASES.update({unit: unit for unit in set(_UNIT_ALIASES.values())})
_STOPWORDS = frozenset(
    """a an the of to in on at for with and or but is are was were be been being has have had
    do does did this that these those it its as by from per than then there their they them he
    she his her him patient patients pt who which what when where while also not no any all
    into out up over under about after before during since until so such very more most less
    will would should could can may might must shall reported reports report noted notes note
    documented states stated shows showed recorded according record records take takes taking
    took taken use uses using used start started starts continue continued get gets got now
    today currently current regular about approximately around mostly roughly told tell tells
    said says say mentioned mentions explained""".split()
)
_NEGATION = re.compile(
    r"\b(?:no|not|non|never|none|denies|denied|deny|without|negative\s+for|absent|ruled\s+out|"
    r"free\s+of|nor|neither|unremarkable)\b|n't\b",
    re.I,
)
_CLAUSE_SPLIT = re.compile(r"[;,]|\bbut\b|\bhowever\b|\balthough\b|\bwhereas\b|\bthough\b", re.I)
_LATERALITY = re.compile(r"\b(left|right|bilateral(?:ly)?|both\s+sides)\b", re.I)
_NUM = r"(?:\d+(?:[.,]\d+)?(?:\s*/\s*\d+(?:[.,]\d+)?)?)"
_WORDNUM = "|".join(sorted((re.escape(w) for w in _NUMBER_WORDS if _NUMBER_WORDS[w]), key=len))
_QUANTITY = re.compile(
    rf"(?<![\w./-])(?P<num>{_NUM}|(?:{_WORDNUM})\b)\s*(?:-\s*)?"
    r"(?P<unit>%|°[cf]|mmol/l|mg/dl|mg/kg|mcg/h|/min|[a-zµ]+)?",
    re.I,
)
_DATE = re.compile(
    r"\b\d{1,4}[/-]\d{1,2}[/-]\d{1,4}\b|\b(?:19|20)\d{2}\b|"
    r"\b\d{1,2}(?:st|nd|rd|th)?\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b",
    re.I,
)
_TOKEN = re.compile(r"[a-z0-9]+(?:[-/][a-z0-9]+)*", re.I)


@dataclass(frozen=True, slots=True)
class Quantity:
    """A number with its unit (or the noun it counts), as found in a text."""

    value: str
    unit: str
    text: str
    start: int = 0


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


def content_tokens(text: str) -> set[str]:
    """Lower-cased stemmed content words (no stopwords, no negation cues)."""
    words = _TOKEN.findall(normalize_frequencies(text).lower())
    words += [part for w in words if "-" in w for part in w.split("-")]
    return {
        str(_NUMBER_WORDS[t]) if _NUMBER_WORDS.get(t) is not None else _stem(t)
        for t in words
        if t not in _STOPWORDS and not _NEGATION.fullmatch(t) and (len(t) > 1 or t.isdigit())
    }


def _number_value(raw: str) -> str:
    raw = raw.strip().lower().replace(",", ".")
    if raw in _NUMBER_WORDS:
        value = _NUMBER_WORDS[raw]
        return str(value) if value is not None else raw
    raw = re.sub(r"\s+", "", raw)
    if "/" in raw:
        return raw
    try:
        number = float(raw)
    except ValueError:
        return raw
    return str(int(number)) if number.is_integer() else str(number)


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


def quantities(text: str) -> list[Quantity]:
    """Numbers in ``text`` with their unit, or the noun they count ("3 medications").

    Dates are left out (their formats vary too much to compare as numbers).
    """
    text = normalize_frequencies(text)
    dates = [m.span() for m in _DATE.finditer(text)]
    found: list[Quantity] = []
    for match in _QUANTITY.finditer(text):
        start, end = match.span("num")
        if any(s <= start < e for s, e in dates):
            continue
        raw_unit = (match.group("unit") or "").lower()
        unit = _UNIT_ALIASES.get(raw_unit, "")
        if not unit and raw_unit and raw_unit not in _STOPWORDS:
            unit = "#" + _stem(raw_unit)  # counted noun
        elif not unit and raw_unit in _STOPWORDS:
            nxt = re.match(r"\s*([A-Za-z]+)", text[match.end() :])
            unit = "#" + _stem(nxt.group(1)) if nxt else ""
        num_raw = match.group("num")
        if num_raw.lower() in _NUMBER_WORDS and not unit:
            continue  # "one of", "both": not a quantity
        if num_raw.lower() in ("a couple of", "several", "single", "both") and not unit:
            continue
        value = _number_value(num_raw)
        if re.match(r"\s*-?\s*old\b", text[match.end() :], re.I):
            unit = "age"
        if unit == "daily" and value == "1":
            continue  # "once daily" says no more than "daily"
        found.append(Quantity(value, unit, match.group(0).strip(), start))
    return found


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
    return bool(_NEGATION.search(text))


def _sides(text: str) -> set[str]:
    sides = set()
    for m in _LATERALITY.finditer(text):
        word = m.group(1).lower()
        sides.add("bilateral" if word.startswith(("bilateral", "both")) else word)
    return sides


def _anchor(claim: str, q: Quantity) -> str | None:
    """The content word just before a quantity ("metformin" in "metformin 500 mg")."""
    head = re.split(r"[;,]", normalize_frequencies(claim)[: q.start])[-1]
    before = _TOKEN.findall(head.lower())[-8:]
    for word in reversed(before):
        stem = _stem(word)
        if (
            word not in _STOPWORDS
            and word not in _UNIT_ALIASES
            and word not in _NUMBER_WORDS
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
    return {x.value for p in pieces for x in quantities(p) if x.unit == unit}


_REPLY = re.compile(
    r"^\W*(?:\[?\w+\]?\s*:?\s*)??(?:(?P<no>no|none|nope|never|not)|(?P<yes>yes|yeah|yep))\b",
    re.I,
)


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
    match = _REPLY.match(reply)
    if match is None:
        return None
    return match.group("no") is not None


def compare_specifics(claim: str, evidence_texts: Iterable[str]) -> SpecificsFinding:
    """Compare the claim's quantities, counts, negation and laterality with the evidence.

    A quantity is checked against the evidence that mentions the word it qualifies
    ("metformin" for "metformin 500 mg") when the evidence mentions it, else against the
    whole evidence. Returns ``conflict`` when the evidence states another value (or count,
    polarity, side), ``addition`` when the claim carries quantities the evidence lacks,
    ``ok`` otherwise.
    """
    evidence = "\n".join(evidence_texts)
    ev_quantities = quantities(evidence)
    ev_values = {(q.value, q.unit) for q in ev_quantities}
    ev_bare = {q.value for q in ev_quantities}
    claim_quantities = quantities(claim)
    claim_values = {(q.value, q.unit) for q in claim_quantities}
    anchored_addition = False
    found = 0
    additions: list[str] = []
    for q in claim_quantities:
        if q.unit.startswith("#"):
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
        anchor = _anchor(claim, q) if q.unit else None
        anchored = _anchored_values(evidence, anchor, q.unit) if anchor else None
        if anchored is not None:
            if q.value in anchored:
                found += 1
                continue
            others = {v for v in anchored if (v, q.unit) not in claim_values}
            if others:
                return SpecificsFinding(
                    "conflict",
                    f"value differs: {q.text} vs {sorted(others)[0]} {q.unit.lstrip('#')}",
                    found / len(claim_quantities),
                    anchored=True,
                )
            additions.append(q.text)
            anchored_addition = True
            continue
        if (q.value, q.unit) in ev_values or (not q.unit and q.value in ev_bare):
            found += 1
            continue
        additions.append(q.text)
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


def without_quantities(text: str) -> str:
    """``text`` without its quantities and frequency words (what is left to support)."""
    text = normalize_frequencies(text)
    for q in sorted(quantities(text), key=lambda q: -len(q.text)):
        text = text.replace(q.text, " ")
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
    rf"\b(?P<num>\d+|{_WORDNUM})\s+(?:[a-z-]+\s+){{0,2}}?(?P<noun>[a-z-]+s)\s*"
    r"(?::|\(|,\s*(?:namely|including|which are|:))\s*(?P<items>[^.;)]+)",
    re.I,
)


def stated_count_mismatch(text: str) -> tuple[int, int, int] | None:
    """A count that disagrees with the list right after it, in the same text.

    "takes three medications: metformin, lisinopril, atorvastatin and aspirin" gives
    ``(offset of the count, 3, 4)``: the right items, the wrong count (a procedural error).
    """
    for match in _STATED_LIST.finditer(text):
        stated = _number_value(match.group("num"))
        if not stated.isdigit():
            continue
        items = [p for p in re.split(r",|\band\b|\bor\b", match.group("items")) if p.strip()]
        if len(items) >= 2 and len(items) != int(stated):
            return match.start("num"), int(stated), len(items)
    return None


def has_specifics(text: str) -> bool:
    """True when the text carries numbers, laterality or negation worth a closer check."""
    return bool(quantities(text) or _LATERALITY.search(text) or _NEGATION.search(text))
