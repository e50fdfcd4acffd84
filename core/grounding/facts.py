"""Clinical specifics that a similarity score cannot see: numbers and doses, vital signs,
negation, laterality, named drugs and conditions.

:func:`compare_facts` decides whether a statement's specifics are borne out by its evidence.
A close paraphrase that changes "500 mg" to "1000 mg", "denies" to "reports" or "left" to
"right" embeds almost exactly like the original; these checks are what keep it from being
accepted as grounded. Negation, questions and their replies are read by the assertion engine
(:mod:`core.assertion`) that extraction and the claim audit read too.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from itertools import chain
from typing import Literal

from rapidfuzz import fuzz

from core.assertion import (
    Mark,
    Polarity,
    content_word,
    dialogue_polarity,
    finding_stems,
    findings_as_words,
    is_question,
    load_rules,
    polarity_marks,
    strip_speaker,
    text_polarity,
)
from core.grounding.vocab import (
    condition_names,
    conditions_in,
    drug_names,
    generics_in,
    headings_in,
    headings_of,
    narrower,
)
from core.lexicon import load_lexicon as clinical_lexicon
from core.text import STOPWORDS, cached_for_short_texts, stem, token_spans, tokens

FactStatus = Literal["agree", "missing", "conflict"]


@dataclass(frozen=True, slots=True)
class FactCheck:
    """Outcome of comparing a statement's specifics with its evidence.

    ``agree``: every specific is borne out. ``missing``: some specific is not in the evidence
    (the statement is then unsupported). ``conflict``: the evidence asserts a different value
    (the statement is then contradicted). ``reason`` names the specific that decided it;
    ``term``, for a negation conflict, is the stem of the word said both ways; ``family`` is
    the family of checks (:data:`FAMILIES`) that decided it; ``said``, the statement's words
    for that specific as it may write them, best first ("20 mg", "20"; "left"), for marking.
    """

    status: FactStatus
    reason: str | None = None
    term: str | None = None
    family: str | None = None
    said: tuple[str, ...] = ()


AGREE = FactCheck("agree")


@dataclass(frozen=True, slots=True)
class Lexicon:
    """What the fact checks read of the clinical lexicon (:mod:`core.lexicon`): drug words
    with their generic names, diagnosis names with the words that say the same condition is
    discussed, and the stems of findings and examination signs."""

    drugs: frozenset[str]
    conditions: tuple[str, ...]
    condition_synonyms: dict[str, tuple[str, ...]]
    drug_brands: dict[str, str]
    findings: frozenset[str]  # symptoms and findings a clinician asks about (by stem)
    # signs that have no lay name, so an examiner who found one names it ("rales", "gallops");
    # not "masses" ("a lump") nor "hepatomegaly" ("your liver is enlarged")
    exam_signs: frozenset[str]


def _words_only(name: str) -> str:
    return " ".join(re.findall(r"[a-z0-9']+", name.lower()))


@lru_cache(maxsize=1)
def load_lexicon() -> Lexicon:
    """The fact checks' view of the packaged lexicon (built once per process)."""
    lex = clinical_lexicon()
    # names as a sentence is read for them: words only ("non-small cell" as "non small cell")
    conditions = tuple(dict.fromkeys(_words_only(n) for n in lex.diagnosis_names()))
    synonyms: dict[str, tuple[str, ...]] = {}
    for name, others in lex.diagnosis_synonyms().items():
        # each as written ("a-fib", found in a source as it is) and as words only
        spelled = tuple(dict.fromkeys([*others, *(_words_only(o) for o in others)]))
        synonyms[name] = synonyms[_words_only(name)] = spelled
    return Lexicon(
        drugs=lex.drug_words(),
        conditions=tuple(sorted(conditions, key=len, reverse=True)),
        condition_synonyms=synonyms,
        drug_brands=lex.brand_generics(),
        findings=finding_stems(),
        exam_signs=frozenset(stem(w) for w in lex.exam_signs),
    )


# --- numbers -----------------------------------------------------------------------------

_UNITS = {
    "mg": "mg",
    "milligram": "mg",
    "milligrams": "mg",
    "mgs": "mg",
    "mcg": "mcg",
    "microgram": "mcg",
    "micrograms": "mcg",
    "ug": "mcg",
    "g": "g",
    "gram": "g",
    "grams": "g",
    "kg": "kg",
    "kilogram": "kg",
    "kilograms": "kg",
    "kilo": "kg",
    "kilos": "kg",
    "lb": "lb",
    "lbs": "lb",
    "pound": "lb",
    "pounds": "lb",
    "ml": "ml",
    "milliliter": "ml",
    "milliliters": "ml",
    "cc": "ml",
    "l": "l",
    "liter": "l",
    "unit": "units",
    "units": "units",
    "iu": "units",
    "%": "%",
    "percent": "%",
    "mmhg": "mmhg",
    "bpm": "bpm",
    "beats": "bpm",
    "cm": "cm",
    "mm": "mm",
    "inch": "in",
    "centimeter": "cm",
    "centimeters": "cm",
    "millimeter": "mm",
    "millimeters": "mm",
    "inches": "in",
    "degree": "deg",
    "degrees": "deg",
    "f": "deg",
    "c": "deg",
    "day": "day",
    "days": "day",
    "week": "week",
    "weeks": "week",
    "wk": "week",
    "wks": "week",
    "month": "month",
    "months": "month",
    "year": "year",
    "years": "year",
    "yr": "year",
    "yrs": "year",
    "hour": "hour",
    "hours": "hour",
    "hr": "hour",
    "hrs": "hour",
    "minute": "minute",
    "minutes": "minute",
    "min": "minute",
    "times": "times",
    "time": "times",
    "tablet": "tablet",
    "tablets": "tablet",
    "tab": "tablet",
    "tabs": "tablet",
    "pill": "tablet",
    "pills": "tablet",
    "puff": "puff",
    "puffs": "puff",
    "µg": "mcg",
    "meq": "mEq",
    "capsule": "capsule",
    "capsules": "capsule",
    "cap": "capsule",
    "caps": "capsule",
    "drop": "drop",
    "drops": "drop",
    "patch": "patch",
    "patches": "patch",
    "spray": "spray",
    "sprays": "spray",
    "cigarettes": "cigarette",
    "packs": "pack",
    "pack": "pack",
    "+": "+",  # a grade: "2+ edema", "one plus pulses"
    "plus": "+",
}
DOSE_UNITS = frozenset(
    {"mg", "mcg", "g", "ml", "units", "mEq", "tablet", "capsule", "puff", "drop", "patch", "spray"}
)
_VITAL_UNITS = frozenset({"mmhg", "bpm", "deg"})
_VITAL_WORDS = (
    "blood pressure",
    "bp",
    "heart rate",
    "pulse",
    "temperature",
    "temp",
    "oxygen",
    "saturation",
    "o2",
    "respiratory rate",
    "weight",
    "bmi",
)

_ONES = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
}
_TENS = {
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
_WORD_NUMBER = "|".join([*_ONES, *_TENS, "hundred", "thousand"])
_WORD_RUN_RE = re.compile(
    rf"\b(?:{_WORD_NUMBER})(?:[\s-]+(?:and[\s-]+)?(?:{_WORD_NUMBER}))*\b", re.I
)
_NUMBER_RE = re.compile(
    r"(?<![\w.])(?<![A-Za-z]-)(\d+(?:,\d{3})*(?:\.\d+)?(?:\s*/\s*\d+(?:\.\d+)?)?)(?:\s*-?\s*(%|\+|[a-zµ]+))?",
    re.I,
)
# A month and day without a year: "biopsied on 04/10" (not the score 4/10).
_MONTH_DAY = r"(?:(?<=\bon )|\b(?=0))(\d{1,2})/(\d{1,2})\b(?!/)"
_DATE_RE = re.compile(r"\b\d{1,2}([/-])\d{1,2}\1\d{2,4}\b|\b\d{1,2}/\d{4}\b|" + _MONTH_DAY)
# "four out of ten" is the score "4/10".
_OUT_OF_RE = re.compile(r"\b(\d+)\s+out\s+of\s+(\d+)\b", re.I)
# "one and a half" is 1.5 (read as "one point five" below), and so is "two and half" as speech
# is often written down.
_AND_A_HALF_RE = re.compile(rf"\b({_WORD_NUMBER}|\d+) and (?:a )?half\b", re.I)
# "baby aspirin" is its dose: 81 mg.
_BABY_ASPIRIN_RE = re.compile(r"\b(?:baby|low[- ]dose) aspirin\b", re.I)
# "a pack and a half" is 1.5 packs, "an hour and a half" 1.5 hours, and so is "a tough
# year-and-a-half" 1.5 years.
_A_UNIT_AND_A_HALF_RE = re.compile(
    r"\ban? ([a-z]+) and a half\b|\b(day|week|month|year|hour)[\s-]+and[\s-]+a[\s-]+half\b", re.I
)
_HALF_RE = re.compile(r"\b(?:a|one) half\b|\bhalf (?:a|an)\b", re.I)
# A whole number and a fraction: "1-1/2 packs" and "2 1/4 inches" are 1.5 and 2.25.
_MIXED_NUMBER_RE = re.compile(r"(?<![\w./-])(\d{1,2})(?:\s+|-)([1-7])/([248])(?![\w./])")
_NEXT_RE = re.compile(r"\bnext\s+(?=(?:day|week|month|year)\b)", re.I)
_ONCE_TWICE_RE = re.compile(r"\b(?:once|twice)\b", re.I)  # "twice daily" is 2 times daily
_HALF_HOUR_RE = re.compile(r"\b(?:(?:a|one) )?half (?:an? )?hour\b", re.I)  # 30 minutes


_ROUND = frozenset({"hundred", "thousand"})


def _words_to_number(phrase: str) -> int | None:
    words = [w for w in re.split(r"[\s-]+", phrase.lower()) if w and w != "and"]
    # spoken years: "twenty eighteen" = 2018, "nineteen ninety five" = 1995
    if len(words) >= 2 and words[0] in {"nineteen", "twenty"} and words[1] not in _ROUND:
        rest = _words_to_number(" ".join(words[1:]))
        if rest is not None and 10 <= rest <= 99:
            return 100 * _ONES.get(words[0], _TENS.get(words[0], 0)) + rest
    # spoken values: "one twenty eight" = 128
    if len(words) >= 2 and words[0] in _ONES and 0 < _ONES[words[0]] < 10 and words[1] in _TENS:
        rest = _words_to_number(" ".join(words[1:]))
        return None if rest is None else 100 * _ONES[words[0]] + rest
    total, current, seen = 0, 0, False
    for word in words:
        if word == "and" or not word:
            continue
        if word in _ONES:
            current += _ONES[word]
        elif word in _TENS:
            current += _TENS[word]
        elif word == "hundred":
            current = max(current, 1) * 100
        elif word == "thousand":
            total += max(current, 1) * 1000
            current = 0
        else:
            return None
        seen = True
    return total + current if seen else None


def _spoken_numbers(phrase: str) -> str:
    """Digits for a run of number words; two units in a row are two numbers ("like four
    five" is 4 and 5, not 9), as in a spoken range or list."""
    groups: list[list[str]] = []
    for word in re.split(r"[\s-]+", phrase):
        low = word.lower()
        if groups and low in _ONES and groups[-1][-1].lower() in _ONES:
            groups.append([word])
        elif groups:
            groups[-1].append(word)
        else:
            groups.append([word])
    out = []
    for group in groups:
        value = _words_to_number(" ".join(group))
        out.append(str(value) if value is not None else " ".join(group))
    return " ".join(out)


_ORDINALS = {
    "first": "one",
    "second": "two",
    "third": "three",
    "fifth": "five",
    "eighth": "eight",
    "ninth": "nine",
    "twelfth": "twelve",
    "twentieth": "twenty",
    "thirtieth": "thirty",
}
_ORDINAL_RE = re.compile(
    r"\b(first|second|third|fifth|eighth|ninth|twelfth|twentieth|thirtieth|"
    r"(?:thir|four|fif|six|seven|eigh|nine)teenth|fourth|sixth|"
    r"seventh|tenth|eleventh)\b(?!\s+(?:of|opinion|thing)\b)",
    re.I,
)


def _ordinal(word: str) -> str:
    low = word.lower()
    return _ORDINALS.get(low) or (low[:-2] if low.endswith("th") else low)


_ORDINAL_SUFFIX_RE = re.compile(r"\b(\d+)(?:st|nd|rd|th)\b", re.I)
# "a week ago", "an hour" -> 1 week, 1 hour (speech rarely says "one").
_ONE_OF_RE = re.compile(
    r"\b(?:a|an)\s+(?=(?:day|week|month|year|hour|minute|night|pack|tablet|pill|beer|drink|"
    r"glass|cup|cigarette|time)s?\b)",
    re.I,
)
# "a couple of beers" grounds "2 beers" (evidence only: a statement's "couple" is vague).
_COUPLE_RE = re.compile(r"\ba couple (?:of )?", re.I)
_SPOKEN_DECIMAL_RE = re.compile(r"\b(\d+)\s+point\s+(\d+)\b|(?<![\d.])\bpoint\s+(\d+)\b", re.I)


# Adjacent spine levels run together in speech: "c56" is C5-6.
_SPINE_LEVEL_RE = re.compile(r"\b([ctl])([1-7])([2-8])\b", re.I)
# "l4 l5", "l4-l5", "l4 to l5": the level L4-5 written out
_SPINE_LEVELS_RE = re.compile(r"\b([ctl])(\d{1,2})\s*(?:-|to|and)?\s*\1(\d{1,2})\b", re.I)


def _spine_level(m: re.Match[str]) -> str:
    if int(m.group(3)) != int(m.group(2)) + 1:
        return m.group(0)
    return f"{m.group(1)}{m.group(2)}-{m.group(3)}"


def _mixed_number(m: re.Match[str]) -> str:
    numerator, denominator = int(m.group(2)), int(m.group(3))
    if numerator >= denominator:
        return m.group(0)
    return _canonical(str(int(m.group(1)) + numerator / denominator))


@cached_for_short_texts(maxsize=16384)
def digits(text: str, *, ordinals: bool = True) -> str:
    """Spelled-out numbers replaced by digits ("forty five" -> "45", "seven point one" ->
    "7.1", "twenty eighteen" -> "2018", "a week" -> "1 week", and with ``ordinals``
    "second" -> "2", "a couple of" -> "2", "twice" -> "2 times", "next week" -> "1 week"),
    so that written and spoken forms compare. A statement's "the first report", "once
    daily" or "over the next week" is no count, so statements are read without
    ``ordinals``; evidence is read with them."""
    text = _BABY_ASPIRIN_RE.sub("aspirin 81 mg", text)
    text = _AND_A_HALF_RE.sub(lambda m: f"{m.group(1)} point 5", text)
    text = _A_UNIT_AND_A_HALF_RE.sub(lambda m: f"1.5 {m.group(1) or m.group(2)}", text)
    text = _HALF_HOUR_RE.sub("30 minutes", text)
    text = _HALF_RE.sub("0.5", text)
    text = _MIXED_NUMBER_RE.sub(_mixed_number, text)
    text = _SPINE_LEVEL_RE.sub(_spine_level, text)
    text = _SPINE_LEVELS_RE.sub(_spine_level, text)
    if ordinals:
        text = _NEXT_RE.sub("1 ", text)  # "see you next week"
        text = _ONCE_TWICE_RE.sub(
            lambda m: "2 times" if m.group().lower() == "twice" else "1 time", text
        )
        text = _ORDINAL_RE.sub(lambda m: _ordinal(m.group(1)), text)
        text = _COUPLE_RE.sub("2 ", text)
    text = _ORDINAL_SUFFIX_RE.sub(r"\1", text)
    text = _ONE_OF_RE.sub("1 ", text)

    def repl(m: re.Match[str]) -> str:
        # "and" joins one number only after hundred or thousand ("one hundred and five");
        # elsewhere it joins two ("eleven and twenty four" is 11 and 24)
        parts = re.split(r"(?<!hundred)(?<!thousand)[\s-]+and[\s-]+", m.group(0), flags=re.I)
        return " and ".join(_spoken_numbers(part) for part in parts)

    text = _WORD_RUN_RE.sub(repl, text)

    def decimal(m: re.Match[str]) -> str:
        if m.group(3) is not None:
            return f"0.{m.group(3)}"
        return f"{m.group(1)}.{m.group(2)}"

    return _SPOKEN_DECIMAL_RE.sub(decimal, text)


@dataclass(frozen=True, slots=True)
class Quantity:
    """A number in a text with its normalised unit (``None`` when it has none)."""

    value: str
    unit: str | None
    display: str
    # content words (by stem) around the number: what it is a number of
    context: frozenset[str] = field(default=frozenset(), compare=False)

    @property
    def kind(self) -> str:
        if self.unit in DOSE_UNITS:
            return "dose"
        if self.unit == "score":
            return "score"
        if self.unit in _VITAL_UNITS or "/" in self.value:
            return "vital sign"
        return "number"


def _canonical(number: str) -> str:
    number = number.replace(",", "").replace(" ", "")
    if "/" in number:
        return "/".join(_canonical(p) for p in number.split("/"))
    try:
        value = float(number)
    except ValueError:
        return number
    return str(int(value)) if value.is_integer() else repr(value)


def quantities(text: str, *, ordinals: bool = True) -> list[Quantity]:
    """Numbers with units, spelled-out numbers included ("twenty milligrams" -> 20 mg)."""
    return list(_quantities(text, ordinals))


@lru_cache(maxsize=8192)
def _quantities(text: str, ordinals: bool) -> tuple[Quantity, ...]:
    converted = _DATE_RE.sub(" ", digits(text, ordinals=ordinals))
    converted = _OUT_OF_RE.sub(r"\1/\2", converted)
    # the low end of a range, and the first of two dimensions, take the unit of the second:
    # "four to six hours" is 4 hours, "two by three centimeters" 2 cm
    range_units = {
        m.start(1): (m.group(3) or "").lower()
        for pattern in (_RANGE_RE, _DIMENSIONS_RE)
        for m in pattern.finditer(converted)
    }
    found: list[Quantity] = []
    spans = token_spans(converted)
    for m in _NUMBER_RE.finditer(converted):
        unit = None
        for raw_unit in ((m.group(2) or "").lower(), range_units.get(m.start(), "")):
            unit = _unit_named(raw_unit)
            if unit is not None:
                break
        value = _canonical(m.group(1))
        if unit is None and "/" in value:
            # "4/10" is a score (pain, strength "4/5"); "132/84" a blood pressure
            unit = "score" if float(value.split("/")[1]) <= 10 else "mmhg"
        display = (
            f"{m.group(1)} {unit}"
            if unit and unit not in {"%", "+", "score"}
            else m.group(1) + (unit if unit in {"%", "+"} else "")
        )
        near = _near_tokens(converted, spans, m.start(), m.end())
        # what the value is of: the content words around it ("metformin"), not the words
        # any dose has ("daily", "times"), which would make every dose a rival of every other
        context = frozenset(
            stem(t)
            for t in near
            if t.isalpha() and len(t) > 2 and t not in STOPWORDS and t not in _COMMON
        )
        found.append(Quantity(value, unit, display.strip(), context))
    return tuple(found)


def _unit_named(word: str) -> str | None:
    """The unit a lower-case word names ("milligrams" -> "mg"), plural or not, or None."""
    unit = _UNITS.get(word)
    if unit is None and word.endswith("s"):
        unit = _UNITS.get(word[:-1])
    return unit


def _near_tokens(
    text: str, spans: Sequence[tuple[str, int, int]], start: int, end: int
) -> list[str]:
    """The three tokens before ``text[start:end]`` and the three after it, as the text cut
    there would be read: from ``spans``, the text's tokens read once (each number used to
    read the text's halves again, quadratic in a long record of numbers), or, where a token
    runs across a cut, from the halves. Token starts and ends never decrease along
    ``spans``."""
    first_after = bisect_right(spans, start, key=lambda span: span[2])  # ends after the start
    after = bisect_left(spans, end, key=lambda span: span[1])  # starts at or after the end
    cut = (first_after < len(spans) and spans[first_after][1] < start) or (
        after > 0 and spans[after - 1][2] > end
    )
    if cut:
        return tokens(text[:start])[-3:] + tokens(text[end:])[:3]
    return [t for t, _, _ in spans[max(0, first_after - 3) : first_after]] + [
        t for t, _, _ in spans[after : after + 3]
    ]


_COMMON = frozenset(
    "daily once twice times week weeks month months year years today since about time "
    "pain take takes taking continue will were been also than".split()
)


def _content_stems(text: str) -> set[str]:
    return {
        stem(t)
        for t in tokens(text)
        if t.isalpha() and len(t) > 4 and t not in STOPWORDS and t not in _COMMON
    }


# Units one is a whole number of another: "half an hour" is 30 minutes.
_UNIT_SIZES = {("hour", "minute"): 60, ("week", "day"): 7, ("year", "month"): 12}


def _same(a: Quantity, b: Quantity) -> bool:
    """Same value, and same unit when both have one (or the same amount in a larger or
    smaller unit of time: "0.5 hour" is "30 minute")."""
    if a.value == b.value and (a.unit is None or b.unit is None or a.unit == b.unit):
        return True
    for (big, small), size in _UNIT_SIZES.items():
        for x, y in ((a, b), (b, a)):
            if x.unit == big and y.unit == small:
                try:
                    return abs(float(x.value) * size - float(y.value)) < 1e-9
                except ValueError:
                    return False
    return False


def _parts_said(parts: list[str], values: list[str]) -> bool:
    """Whether each part of "132/84" is said on its own, as often as the parts need it
    ("7/7" takes two sevens, not the one of "a seven out of ten")."""
    pool = Counter(values)
    pool.subtract(parts)
    return all(pool[part] >= 0 for part in parts)


def _counted(text: str, found: list[Quantity]) -> list[Quantity]:
    """``found`` (the quantities of ``text``) without the bare numbers that ordinals make."""
    return [q for q in found if q.unit] + [
        q for q in quantities(text, ordinals=False) if not q.unit
    ]


def _related_sentences(statement: str, sentences: Sequence[str]) -> str:
    """Source sentences sharing at least two content words with the statement."""
    wanted = _content_stems(statement)
    return " ".join(s for s in sentences if len(wanted & _content_stems(s)) >= 2)


# A range of values: "3 to 4 times a day", "6-to-8-week", "two or three months" (not the hour
# of a clock time: "8 to 8:30" is no range of 8 to 8).
_RANGE_RE = re.compile(
    r"(?<![\w./:])(\d+(?:\.\d+)?)\s*(?:-\s*to\s*-|to|or|-)\s*(\d+(?:\.\d+)?)(?![\w./:])"
    r"(?:\s*-?\s*([a-z]+))?",
    re.I,
)
_DIMENSIONS_RE = re.compile(
    r"(?<![\w./])(\d+(?:\.\d+)?)\s*(?:x|by)\s*(\d+(?:\.\d+)?)\s*([a-z]+)", re.I
)


@lru_cache(maxsize=4096)
def _ranges(text: str, *, ordinals: bool = True) -> tuple[tuple[str, str, str | None], ...]:
    """(low, high, unit) of each range of values in ``text`` (cached; :func:`_range_unit`)."""
    converted = _DATE_RE.sub(" ", digits(text, ordinals=ordinals))
    return tuple(
        (
            _canonical(m.group(1)),
            _canonical(m.group(2)),
            _range_unit(m.group(3)) if m.group(3) else None,
        )
        for m in _RANGE_RE.finditer(converted)
    )


def _range_unit(word: str) -> str:
    """A range's unit as quantities name it ("milligrams" and "mg" are "mg"), else the
    word's stem ("glasses" -> "glass")."""
    low = word.lower()
    return _unit_named(low) or stem(low)


def _compare_ranges(statement: str, evidence: str) -> FactCheck | None:
    """A range that shares one end with a range of the evidence but not the other ("2 to 2
    weeks" against "one to two weeks")."""
    wanted = _ranges(statement, ordinals=False)
    if not wanted:
        return None
    have = _ranges(evidence)
    for low, high, unit in wanted:
        rivals = [
            (a, b)
            for a, b, u in have
            if (a == low) != (b == high) and (unit is None or u is None or u == unit)
        ]
        if rivals and not any(a == low and b == high for a, b, _ in have):
            a, b = rivals[0]
            return FactCheck("conflict", f"range differs: {low} to {high} vs {a} to {b}")
    return None


@lru_cache(maxsize=256)
def _source_quantities(sentences: tuple[str, ...]) -> tuple[Quantity, ...]:
    return tuple(q for sentence in sentences for q in quantities(sentence))


def _written(q: Quantity) -> tuple[str, ...]:
    """How a statement may write the quantity: with its unit, else the number alone."""
    number = q.display.split(" ", 1)[0]
    return (q.display, number) if number != q.display else (q.display,)


def _said_of_another(
    q: Quantity, pool: Sequence[Quantity], stated: Sequence[Quantity]
) -> Quantity | None:
    """The dose the evidence gives of the same drug, where it says the statement's dose of
    other things ("lisinopril 20 mg" against "lisinopril ten milligrams ... atorvastatin
    twenty milligrams": 10 mg): another dose of the same unit that shares more of the words
    around the statement's dose than any mention of the statement's own dose does (a tie
    bears it out), and that the statement does not state too. Doses only: an age or a
    duration is said of more kinds of thing, and reading them so conflicted with real
    sentences on dev data."""
    if q.unit not in DOSE_UNITS or not q.context:
        return None
    same = max((len(h.context & q.context) for h in pool if _same(q, h)), default=0)
    own = [
        h
        for h in pool
        if h.unit == q.unit
        and len(h.context & q.context) > same
        and not any(_same(h, mine) for mine in stated)
    ]
    return max(own, key=lambda h: len(h.context & q.context)) if own else None


# Words that make a number a bound: "more than 80 %" is borne out by 82 %, not refuted by it.
_BOUND_WORDS = {
    "at least": 1,
    "more than": 1,
    "greater than": 1,
    "higher than": 1,
    "above": 1,
    "exceeding": 1,
    "in excess of": 1,
    ">": 1,
    ">=": 1,
    "≥": 1,
    "at most": -1,
    "no more than": -1,
    "not more than": -1,
    "less than": -1,
    "fewer than": -1,
    "lower than": -1,
    "below": -1,
    "up to": -1,
    "<": -1,
    "<=": -1,
    "≤": -1,
}
_BOUND_RE = re.compile(
    r"(?<![\w])("
    + "|".join(re.escape(w) for w in sorted(_BOUND_WORDS, key=len, reverse=True))
    + r")\s*(\d+(?:,\d{3})*(?:\.\d+)?)(?![\d/])",
    re.I,
)


def _bounds(text: str) -> dict[str, int]:
    """The numbers a text gives as bounds, with their direction (1: the value is at least
    this, -1: at most)."""
    return {
        _canonical(m.group(2)): _BOUND_WORDS[m.group(1).lower()]
        for m in _BOUND_RE.finditer(digits(text, ordinals=False))
    }


_BOUND_STEMS = frozenset(stem(w) for words in _BOUND_WORDS for w in words.split() if w.isalpha())


def _within(q: Quantity, direction: int, h: Quantity) -> bool:
    """Whether ``h``, a value of the same unit said of the same thing (the words of the bound
    aside), lies on the side of the bound ``q`` that ``direction`` names."""
    of = q.context - _BOUND_STEMS
    if h.unit != q.unit or not (h.context & of or not of):
        return False
    try:
        return (float(h.value) - float(q.value)) * direction >= 0
    except ValueError:
        return False


def _said_of_the_same(q: Quantity, h: Quantity) -> bool:
    """Whether ``h`` is a value of ``q``'s unit said of the same thing: it shares a word
    around it with ``q``, or ``q`` has none."""
    return h.unit == q.unit and bool(h.context & q.context or not q.context)


def _in_range(
    q: Quantity, ranges: Sequence[tuple[str, str]], h: Quantity, ends: Collection[str]
) -> bool:
    """Whether ``h``, a value of the same unit said of the same thing, lies within a range
    of the statement that ``q`` is an end of ("2-3 weeks" against "a couple of weeks"). An
    end of a range the evidence gives (``ends``) is no such value: that range is compared
    as a range (:func:`_compare_ranges`), and "6 to 16 glasses" is not borne out by "six to
    eight glasses"."""
    if h.value in ends or not _said_of_the_same(q, h):
        return False
    try:
        value = float(h.value)
        return any(
            float(low) <= value <= float(high) for low, high in ranges if q.value in (low, high)
        )
    except ValueError:
        return False


def _compare_numbers(statement: str, evidence: str, source_sentences: Sequence[str]) -> FactCheck:
    ranged = _compare_ranges(statement, evidence)
    if ranged is not None:
        return ranged
    wanted = quantities(statement, ordinals=False)
    if not wanted:
        return AGREE
    have = quantities(evidence)
    # a value with a unit is not borne out by a bare ordinal ("2.0 cc" by "the second time")
    counted = _counted(evidence, have)
    if source_sentences and not all(
        any(_same(q, h) for h in (counted if q.unit else have)) for q in wanted
    ):
        # a value may be said elsewhere in the source, next to the same topic
        related = _related_sentences(statement, source_sentences)
        also = quantities(related)
        # (there, a value with a unit is borne out only by the same value with its unit)
        have, counted = have + also, counted + [h for h in also if h.unit]
    # "132/84" in a statement is borne out by "132 over 84" in speech.
    spoken = re.findall(r"(\d+)\s+over\s+(\d+)", digits(evidence))
    values = {h.value for h in have} | {_canonical(f"{a}/{b}") for a, b in spoken}
    bounds = _bounds(statement) if wanted else {}
    stated_ranges = [(low, high) for low, high, _ in _ranges(statement, ordinals=False)]
    # the ends of the evidence's own ranges, read only for a statement that gives a range
    ends = {e for a, b, _ in _ranges(evidence) for e in (a, b)} if stated_ranges else set()
    for q in wanted:
        pool = counted if q.unit else have
        direction = bounds.get(q.value)
        if direction is not None and any(_within(q, direction, h) for h in pool):
            continue  # "more than 80 %" against "82 %"
        if stated_ranges and any(_in_range(q, stated_ranges, h, ends) for h in pool):
            continue  # a range is borne out by a value within it
        if any(_same(q, h) for h in pool):
            other = _said_of_another(q, pool, wanted)
            if other is None:
                continue
            return FactCheck(
                "conflict", f"{q.kind} differs: {q.display} vs {other.display}", said=_written(q)
            )
        if "/" in q.value and q.value in values:
            continue
        if "/" in q.value and _parts_said(q.value.split("/"), [h.value for h in have]):
            continue
        if q.value.endswith("/10") and any(
            h.unit is None and h.value == q.value.split("/")[0] for h in have
        ):
            continue  # a pain score "3/10" against "my pain is a three"
        # a rival is another value of the same unit said of the same thing ("metformin
        # 1000 mg" against "metformin 500 mg"), not any number in the evidence
        rivals = [
            h for h in have if h.unit is not None and h.value != q.value and _said_of_the_same(q, h)
        ]
        if rivals:  # the rival said of most of the same things
            rival = max(rivals, key=lambda h: len(h.context & q.context))
            return FactCheck(
                "conflict",
                f"{q.kind} differs: {q.display} vs {rival.display}",
                said=_written(q),
            )
        if (
            q.unit is not None
            and q.context
            and any(
                _same(q, h) and h.context & q.context
                for h in _source_quantities(tuple(source_sentences))
            )
        ):
            continue  # the same value of the same thing, said elsewhere in the source
        return FactCheck(
            "missing", f"{q.kind} {q.display} not found in the evidence", said=_written(q)
        )
    return AGREE


# --- negation (read by the assertion engine, core.assertion) --------------------------

_RULES = load_rules()

# Laterality has its own check; words of time and sequence say nothing of negation.
_IGNORED_KEYS = frozenset(
    stem(w)
    for w in """
    left right bilateral time times day days week weeks month months year years today since
    about also than previous past last next ago once twice able couple few several long
    recent recently lower upper
    """.split()
)


# Words too general to name what a phrase is about ("no history of ...", "any other ...").
_GENERIC = frozenset(
    stem(w)
    for w in """
    history significant other any problems problem issues issue symptoms symptom patient
    notes states reports feel feels feeling having complains complaints current currently
    doing done taking take taken getting get going seem seemed really question questions
    evidence sign signs
    """.split()
)


# Generic words that are what a statement says when it names nothing else: "reports issues
# since that time".
_COMPLAINTS = frozenset(
    stem(w) for w in "issues issue problems problem complaints concerns symptoms".split()
)

# Words that make a negated phrase deny only the qualified thing ("no new lesions").
_QUALIFIERS = frozenset(
    stem(w)
    for w in """
    extra abnormal new acute focal additional further significant obvious gross apparent
    concerning specific unusual excessive
    """.split()
)

# Qualifiers that make a finding abnormal: asserted, they must be said ("extra heart sounds").
_ABNORMAL = frozenset(stem(w) for w in "extra abnormal".split())

_RUN_BREAKS = frozenset(
    ", or and nor . ; : of to in on at for from into with after before during since when while"
    " because but although though whereas which until unless"
    # a reporting verb parts what shows from what is shown: "x-rays show no fracture"
    " show shows showed shown reveal reveals revealed demonstrate demonstrates demonstrated".split()
)


Run = tuple[bool, tuple[str, ...]]  # (asserted?, content words said that way)


@dataclass(frozen=True, slots=True)
class _StatementReading:
    runs: tuple[Run, ...]
    both_ways: frozenset[str]  # stems the statement says both ways
    words: dict[str, str]  # stem -> the word as written (for reasons)
    predicates: tuple[tuple[bool, str], ...]  # its verb phrases (see ``_predicates``)


@lru_cache(maxsize=4096)
def _read_statement(statement: str) -> _StatementReading:
    """A statement's negation, read once however many candidates it is checked against."""
    toks = tokens(findings_as_words(statement))
    marks = polarity_marks(toks, speech=False)
    said: Polarity = {}
    for tok, mark in zip(toks, marks, strict=True):
        if content_word(tok) and mark in (True, False):
            said.setdefault(stem(tok), set()).add(bool(mark))
    planned = False
    for i, tok in enumerate(toks):
        if tok in _RULES.scope_end:
            planned = False
        elif tok in _RULES.plan_cues:
            planned = True
        elif planned and marks[i] is True:
            # a plan or advice asserts nothing yet: "she will check her blood sugar daily"
            # is not contradicted by "i haven't been checking my blood sugars"
            marks[i] = "if"
    return _StatementReading(
        runs=tuple(_phrases(toks, marks)),
        both_ways=frozenset(k for k, v in said.items() if len(v) > 1),
        words={stem(t): t for t in toks if t.isalpha()},
        predicates=tuple(_predicates(tokens(statement), speech=False)),
    )


def statement_terms(statement: str) -> frozenset[str]:
    """The stems of the words a statement says something of (its runs' words)."""
    return frozenset(stem(w) for _, run in _read_statement(statement).runs for w in run)


def _phrases(toks: list[str], marks: list[Mark]) -> list[Run]:
    """The statement's runs of content words said one way, split at lists, clauses and
    prepositions: "denies chest pain or shortness of breath with exercise" ->
    (False, [chest, pain]), (False, [dyspnea]), (False, [exercise]). A statement that names
    nothing but "issues", "problems" or "symptoms" has those for its runs."""
    runs: list[Run] = []
    vague_runs: list[Run] = []  # "reports issues since": said only when nothing else is
    current: list[str] = []
    vague: list[str] = []
    polarity: bool | None = None

    def close() -> None:
        if polarity is not None and current:
            runs.append((polarity, tuple(current)))
        elif polarity is not None and vague:
            vague_runs.append((polarity, tuple(vague)))

    for tok, mark in zip(toks, marks, strict=True):
        if tok in _RUN_BREAKS or mark not in (True, False):
            close()
            current, vague, polarity = [], [], None
            continue
        if not content_word(tok):
            continue
        key = stem(tok)
        if polarity is not None and mark != polarity:
            close()
            current, vague = [], []
        polarity = bool(mark)
        if key in _COMPLAINTS:
            vague.append(tok)
        elif key not in _IGNORED_KEYS and key not in _GENERIC:
            current.append(tok)
    close()
    return runs or vague_runs


def _phrase_conflict(
    runs: Sequence[Run], evidence: Polarity, source_sentences: Sequence[str], statement: str
) -> FactCheck | None:
    """A phrase the statement says one way that a source sentence says only the other way
    ("has not been watching his diet" against "i've been watching my diet"), when neither the
    evidence nor any source sentence says it the statement's way."""
    per_sentence = dialogue_polarity(tuple(source_sentences))
    for said, words in runs:
        pair = [stem(w) for w in words[:2]]
        if len(pair) < 2 or all(said in evidence.get(k, ()) for k in pair):
            continue
        same = other = False
        for pol in per_sentence:
            marks = [pol.get(k) for k in pair]
            if all(m and said in m for m in marks):
                same = True
                break
            if all(m == {not said} for m in marks):
                other = True
        if other and not same:
            reason = _negation_reason(said, words[:2], "source", statement)
            return FactCheck("conflict", reason, pair[0])
    return None


_COMPOUND_RE = re.compile(r"[^\W_]+(?:-[^\W_]+)+")


def _surface(statement: str, phrase: Sequence[str]) -> list[str]:
    """The phrase's words as the statement writes them: where one is part of a hyphenated
    word ("rays" of "X-rays", "follow" of "follow-up"), which the reading splits, the whole
    word, once; where the reading wrote a finding's name as one word, the statement's own
    name of it ("short of breath" for "dyspnea")."""
    compounds = {
        part: m.group(0)
        for m in _COMPOUND_RE.finditer(statement)
        for part in m.group(0).lower().split("-")
    }
    # a finding the reading wrote as one word ("dyspnea") in the statement's own words
    # ("shortness of breath")
    for pattern, word in _RULES.finding_phrases:
        if word in compounds or re.search(rf"\b{re.escape(word)}\b", statement, re.I):
            continue
        if (m := pattern.search(statement)) is not None:
            compounds[word] = m.group(0).strip()
    out: list[str] = []
    for word in phrase:
        shown = compounds.get(word.lower(), word)
        if not out or out[-1] != shown:
            out.append(shown)
    return out


def _negation_reason(said: bool, phrase: Sequence[str], where: str, statement: str) -> str:
    """Why a statement is contradicted on negation, in the words of the finding: "negation
    differs: the statement says chest pain, the evidence denies it"."""
    what = " ".join(_surface(statement, phrase))
    if said:
        return f"negation differs: the statement says {what}, the {where} denies it"
    return f"negation differs: the statement denies {what}, the {where} says it"


def _compare_negation(
    statement: str, evidence_sentences: Sequence[str], source_sentences: Sequence[str] = ()
) -> FactCheck:
    reading = _read_statement(statement)
    evid = text_polarity(tuple(evidence_sentences))
    findings = load_lexicon().findings
    for polarity, run in reading.runs:
        keys = [stem(w) for w in run if stem(w) not in reading.both_ways]
        # a phrase the evidence says the statement's way by one of its words is not
        # contradicted by another ("denies blood transfusions" against "any blood
        # transfusions ?" "no , i tried to give blood once")
        # ... unless that is the finding the phrase is about, said the other way ("lower
        # extremity edema" against "your lower extremities have no edema")
        head = keys[-1] if len(keys) > 1 and keys[-1] in findings else None
        if any(evid.get(k) == {polarity} for k in keys) and not (
            head and evid.get(head) == {not polarity}
        ):
            continue
        if not polarity and keys and keys[0] in _QUALIFIERS and True not in evid.get(keys[0], ()):
            # "no extra heart sounds" denies the extra, not the heart sounds
            continue
        for key in keys:
            seen = evid.get(key)
            if not seen and key in findings and source_sentences:
                # a symptom the matched text does not mention: how the rest of the source
                # speaks of it ("any fever ?" "no" earlier in the visit) decides
                seen = text_polarity(tuple(source_sentences)).get(key)
            if seen != {not polarity}:
                continue  # absent, said both ways, or said the statement's way
            phrase = [reading.words.get(stem(w), w) for w in run]
            reason = _negation_reason(polarity, phrase, "evidence", statement)
            return FactCheck("conflict", reason, key)
    conflict = _predicate_conflict(reading.predicates, evidence_sentences)
    if conflict is not None:
        return conflict
    conflict = _denied_clause_conflict(statement, evidence_sentences, source_sentences)
    if conflict is not None:
        return conflict
    conflict = _denied_history_conflict(statement, source_sentences)
    if conflict is not None:
        return conflict
    named = (_source_stems(tuple(source_sentences)), _source_stems(tuple(evidence_sentences)))

    def unsaid(word: str) -> bool:
        return all(stem(word) not in stems for stems in named)

    if source_sentences:
        conflict = _phrase_conflict(reading.runs, evid, source_sentences, statement)
        if conflict is not None:
            return conflict
        signs = load_lexicon().exam_signs
        for polarity, run in reading.runs:
            for word in run:
                if polarity and stem(word) in signs and unsaid(word):
                    # a sign found that the source never names ("wheezes , rales , or
                    # rhonchi" where the exam only says "lungs are clear"); a sign absent
                    # often goes unsaid, so only a positive one is held to this
                    return FactCheck("missing", f"sign {word!r} not mentioned in the source")
    for polarity, run in reading.runs:
        if polarity and len(run) > 1 and stem(run[0]) in _ABNORMAL and unsaid(run[0]):
            # "extra heart sounds" where the source only says "your heart sounds good": what
            # makes the finding abnormal must be said
            what = " ".join(run)
            return FactCheck("missing", f"{run[0]!r} of {what!r} not mentioned in the source")
    return AGREE


# A verb phrase's negation: "she has not been taking metformin" against "you have been
# taking metformin" (what a negated verb denies is no term the runs can compare).
_PREDICATE_AUX = frozenset("has have had is are was were does do did".split())
_CONTRACTED_AUX = ("'s", "'ve", "'re", "'m")  # "it's been", "i've been", "i'm having"
_VERB_NEG = frozenset({"not", "no", "never"})
_BE_FORMS = frozenset({"been", "be", "being"})
_SOFTENERS = frozenset("probably really just actually definitely still always ever".split())
_NOT_PREDICATES = frozenset("a an the any some this that these those it there".split())


def _predicates(toks: list[str], *, speech: bool) -> list[tuple[bool, str]]:
    """(negated?, stem of the word the auxiliary governs) for each "has (not) been
    taking", "is (not) able", "i've been taking" (``speech``: contracted forms and
    softeners such as "it's been probably about" count too)."""
    out: list[tuple[bool, str]] = []
    n = len(toks)
    for i, tok in enumerate(toks):
        if tok not in _PREDICATE_AUX and not (speech and tok.endswith(_CONTRACTED_AUX)):
            continue
        j, negated = i + 1, False
        if j < n and toks[j] in _VERB_NEG:
            negated, j = True, j + 1
        if j < n and toks[j] in _BE_FORMS:
            j += 1
        while speech and j < n and toks[j] in _SOFTENERS:
            j += 1
        if j < n and toks[j].isalpha() and toks[j] not in _NOT_PREDICATES:
            if toks[j] not in STOPWORDS or toks[j] == "about":
                out.append((negated, stem(toks[j])))
    return out


@lru_cache(maxsize=8192)
def _spoken_predicates(sentence: str) -> tuple[tuple[bool, str], ...]:
    """The verb phrases a source sentence states (none for a question; cached)."""
    if is_question(sentence):
        return ()
    return tuple(_predicates(tokens(strip_speaker(sentence)), speech=True))


def _predicate_conflict(
    said: Sequence[tuple[bool, str]], evidence_sentences: Sequence[str]
) -> FactCheck | None:
    """A verb phrase the statement negates (``said``: its predicates) that the evidence
    states plainly, or the other way round, when the evidence never says it the statement's
    way (questions aside)."""
    if not said:
        return None
    heard: dict[str, set[bool]] = {}
    for sentence in evidence_sentences:
        for negated, key in _spoken_predicates(sentence):
            heard.setdefault(key, set()).add(negated)
    for negated, key in said:
        if heard.get(key) == {not negated}:
            how = ("negates", "asserts") if negated else ("asserts", "negates")
            return FactCheck(
                "conflict", f"negation differs: the statement {how[0]} a verb the evidence {how[1]}"
            )
    return None


# A denied clause: "she denies that she has been taking ibuprofen", "denies he is a smoker".
_DENIED_CLAUSE_RE = re.compile(
    r"\b(?:denies|denied|denying)\s+(?:that\s+|(?=(?:he|she|they|there)\s))"
    r"(.+?)(?=[;.]|,?\s+but\b|$)",
    re.I,
)


_DOING_WELL_RE = re.compile(
    r"\bdoing (?:(?:relatively|really|very|pretty|quite|so) )?(?:well|good|fine|okay|great)\b",
    re.I,
)


def _negates(sentence: str) -> bool:
    return any(t in _RULES.neg_cues for t in tokens(sentence))  # "n't" is read as "not"


@lru_cache(maxsize=256)
def _stated(sentences: tuple[str, ...]) -> tuple[tuple[str, bool], ...]:
    """Each sentence of a source that asks nothing, without its speaker tag, and whether it
    holds a negation (cached: read once per source, not per candidate)."""
    out = []
    for sentence in sentences:
        if not is_question(sentence):
            text = strip_speaker(sentence)
            out.append((text, _negates(text)))
    return tuple(out)


def _denied_clause_conflict(
    statement: str, evidence_sentences: Sequence[str], source_sentences: Sequence[str]
) -> FactCheck | None:
    """A clause the statement denies that a sentence states plainly, with no negation in it:
    an evidence sentence sharing two of its words ("denies that her heart has been doing
    well" against "my heart's been doing well"), or any source sentence sharing half of them
    (three at least). A clause that holds a negation of its own is not read."""
    for m in _DENIED_CLAUSE_RE.finditer(statement):
        clause = m.group(1)
        if _negates(clause):
            continue
        plain = [text for text, negated in _stated(tuple(source_sentences)) if not negated]
        if _DOING_WELL_RE.search(clause) and any(_DOING_WELL_RE.search(t) for t in plain):
            # "denies that she is doing well" against "i'm doing okay": generic words that
            # the overlap below leaves out
            return FactCheck(
                "conflict", "negation differs: the statement denies what the source states"
            )
        words = _word_stems(clause) - _GENERIC
        elsewhere = max(3, (len(words) + 1) // 2)
        near = [t for t, negated in _stated(tuple(evidence_sentences)) if not negated]
        for sentence, enough in chain(((x, 2) for x in near), ((x, elsewhere) for x in plain)):
            shared = words & _word_stems(sentence)
            if len(shared) >= enough:
                return FactCheck(
                    "conflict",
                    "negation differs: the statement denies what the evidence states",
                    max(sorted(shared), key=len),
                )
    return None


# Words that put a condition in doubt: "your possible gout flare" gives the patient no gout.
_HEDGES = r"(?:possible|probable|suspected|likely|potential|presumed)"
# A denied history: "denies a history of diabetes and hypertension".
_DENIED_HISTORY_RE = re.compile(
    r"\b(?:denies|denied)\s+(?:any\s+|a\s+)?(?:(?:past|prior|personal)\s+)?"
    r"(?:medical\s+)?history\s+of\s+(.+?)(?=[;.]|,?\s+but\b|$)",
    re.I,
)


def _denied_history_conflict(statement: str, source_sentences: Sequence[str]) -> FactCheck | None:
    """A condition whose history the statement denies that the source gives the patient in
    so many words: "your diabetes", "you have high blood pressure" (the clinician's own
    account of the patient's history)."""
    lex = load_lexicon()
    for m in _DENIED_HISTORY_RE.finditer(statement):
        source = " ".join(text for text, _ in _stated(tuple(source_sentences))).lower()
        for condition in condition_mentions(m.group(1)):
            for name in (condition, *lex.condition_synonyms.get(condition, ())):
                said = rf"\byour (?:(?!{_HEDGES}\b)[a-z]+ )?{re.escape(name)}\b"
                said += r"|\byou have (?:a history of )?"
                if re.search(said + rf"{re.escape(name)}\b", source):
                    return FactCheck(
                        "conflict",
                        f"negation differs: the statement denies {condition!r}, "
                        "the source gives it the patient",
                        stem(condition.split()[-1]),
                    )
    return None


@lru_cache(maxsize=1024)
def _source_stems(sentences: tuple[str, ...]) -> frozenset[str]:
    """The stems of every word of ``sentences`` (cached: a source, or a candidate's context)."""
    return frozenset(
        stem(t)
        for sentence in sentences
        for t in tokens(findings_as_words(sentence))
        if t.isalpha()
    )


def mentions(sentences: Sequence[str], terms: Iterable[str], *, every: bool = True) -> bool:
    """Whether the sentences speak of every stem in ``terms`` (with ``every=False``: of
    any), in either polarity."""
    said = _source_stems(tuple(sentences))
    return said.issuperset(terms) if every else not said.isdisjoint(terms)


# --- laterality --------------------------------------------------------------------------

_NOT_SIDE_AFTER = frozenset({"now", "away", "thing", "there", "here", "?", ","})
_NOT_SIDE_BEFORE = frozenset({"all", "that's", "thats", "alright", "is", "you're", "okay"})
_SIDES = {"left": "left", "right": "right", "bilateral": "bilateral", "bilaterally": "bilateral"}


def _sides(text: str) -> set[str]:
    toks = tokens(text)
    sides = {_SIDES[t] for t in toks if t in _SIDES}
    for i, t in enumerate(toks):  # "both sides", "both my elbows"
        if t == "both" and any(
            w.endswith("s") or w in {"feet", "teeth"} for w in toks[i + 1 : i + 3] if w.isalpha()
        ):
            sides.add("bilateral")
    # "right now", "all right", "that's right" are not sides
    lateral_right = [
        i
        for i, t in enumerate(toks)
        if t == "right"
        and not (i + 1 < len(toks) and toks[i + 1] in _NOT_SIDE_AFTER)
        and not (i > 0 and toks[i - 1] in _NOT_SIDE_BEFORE)
    ]
    if not lateral_right:
        sides.discard("right")
    return sides


_SIDE_SKIP = frozenset("upper lower side sided sides and or the of my your his her a".split())
_SENTENCE_END_RE = re.compile(r"[.!?;\n]")


@lru_cache(maxsize=4096)
def _side_parts(text: str) -> frozenset[tuple[str, str]]:
    """(side, body part) pairs: "left shoulder" -> ("left", "shoulder") (cached: a source
    is read once, not per candidate)."""
    pairs: set[tuple[str, str]] = set()
    for segment in _SENTENCE_END_RE.split(text):
        pairs |= _segment_side_parts(tokens(segment))
    return frozenset(pairs)


def _segment_side_parts(toks: list[str]) -> set[tuple[str, str]]:
    pairs = set()
    for i, t in enumerate(toks):
        if t not in ("left", "right"):
            continue
        after = toks[i + 1 : i + 3]
        if toks[max(0, i - 2) : i] in (["on", "the"], ["to", "the"]) and (
            not after or not content_word(after[0]) or (after[0] == "side" and after[1:] != ["of"])
        ):
            # "cva tenderness on the right": the side of what comes before
            before = next(
                (w for w in reversed(toks[max(0, i - 5) : i - 2]) if content_word(w)), None
            )
            if before is not None:
                pairs.add((t, stem(before)))
            continue
        for nxt in toks[i + 1 : i + 5]:
            if nxt.isalpha() and nxt not in _SIDE_SKIP:
                pairs.add((t, stem(nxt)))
                break
    return pairs


_SIDE_STEMS = frozenset(stem(w) for w in ("left", "right", "bilateral", "bilaterally"))
_CLAUSE_SPLIT_RE = re.compile(r"[,;.?!]|\bbut\b|\bwhereas\b|\bwhile\b", re.I)


def _clause_side(statement: str, evidence: str) -> FactCheck | None:
    """When the evidence names both sides, the side of the clause that speaks of what the
    statement says ("edema of your right knee , but your left knee looks fine" against
    "edema of the left knee") decides; a tie decides nothing."""
    wanted = _content_stems(statement) - _SIDE_STEMS
    for side, part in sorted(_side_parts(statement)):
        best: dict[str, int] = {}
        for clause in _CLAUSE_SPLIT_RE.split(evidence):
            for said, said_part in _side_parts(clause):
                if said_part == part:
                    score = len(wanted & _content_stems(clause))
                    best[said] = max(best.get(said, 0), score)
        other = "right" if side == "left" else "left"
        if best.get(other, 0) > best.get(side, 0):
            word = _word_of(statement, part)
            return FactCheck(
                "conflict", f"laterality differs: {side} vs {other} {word}", said=(side,)
            )
    return None


def _word_stems(text: str) -> set[str]:
    """The stems of every content word of ``text`` (short ones too, unlike
    ``_content_stems``: "knee", "foot")."""
    return {stem(t) for t in tokens(text) if content_word(t)}


def _word_of(text: str, key: str) -> str:
    """The word of ``text`` whose stem is ``key`` (for reasons people read)."""
    return next((t for t in tokens(text) if stem(t) == key), key)


def _compare_laterality(
    statement: str, evidence: str, source: str, source_sentences: Sequence[str] = ()
) -> FactCheck:
    wanted = _sides(statement)
    if not wanted:
        return AGREE
    source_pairs = _side_parts(source)
    for side, part in sorted(_side_parts(statement)):
        other = "right" if side == "left" else "left"
        if (side, part) not in source_pairs and (other, part) in source_pairs:
            word = _word_of(statement, part)
            return FactCheck(
                "conflict", f"laterality differs: {side} vs {other} {word}", said=(side,)
            )
    near = _sides(evidence)
    if {"left", "right"} <= near:
        clash = _clause_side(statement, evidence) or _swapped_values(statement, evidence)
        if clash:
            return clash
    for side in sorted(wanted):
        if side in near:
            continue
        if side == "bilateral" and {"left", "right"} <= near or "bilateral" in near:
            continue
        others = near - {side}
        if others and side == "bilateral":
            # "lungs clear bilaterally" against "... your right knee ... your lungs sound
            # good": one side said of the statement's own part contradicts it, not any side
            wanted_stems = _word_stems(statement)
            others = {o for o, part in _side_parts(evidence) if part in wanted_stems}
        if others:
            return FactCheck(
                "conflict",
                f"laterality differs: {side} vs {sorted(others)[0]}",
                said=(side,),
            )
        if side == "bilateral":
            continue  # often implied by a plural ("lungs are clear", "lower extremities")
        if side not in _sides(source):
            return FactCheck("missing", f"laterality {side} not found in the source", said=(side,))
    return _source_side(statement, source_sentences or (source,)) or AGREE


_VALUE_CLAUSE_RE = re.compile(r"[,;.]|\band\b|\bbut\b|\bwhile\b", re.I)


def _side_values(text: str) -> set[tuple[str, str]]:
    """(side, value) for each clause naming one side and one value ("4/5 on the left",
    "the right is about 4 out of 5")."""
    out = set()
    for clause in _VALUE_CLAUSE_RE.split(text):
        sides, values = _sides(clause) - {"bilateral"}, quantities(clause)
        if len(sides) == 1 and len(values) == 1:
            out.add((next(iter(sides)), values[0].value))
    return out


def _swapped_values(statement: str, evidence: str) -> FactCheck | None:
    """A value the statement gives one side that the evidence gives the other side, while
    giving this side another ("4/5 on the left and 3/5 on the right" against "the right is
    about 4 out of 5 , the left is about 3 out of 5")."""
    said = _side_values(evidence)
    for side, value in sorted(_side_values(statement)):
        other = "right" if side == "left" else "left"
        if (side, value) in said or (other, value) not in said:
            continue
        if any(s == side for s, _ in said):
            return FactCheck(
                "conflict",
                f"laterality differs: {value} on the {side} vs {other}",
                said=(side,),
            )
    return None


@lru_cache(maxsize=256)
def _side_clauses(
    sentences: tuple[str, ...],
) -> tuple[tuple[frozenset[tuple[str, str]], frozenset[str]], ...]:
    """Each clause of ``sentences`` that names a side: its (side, part) pairs and stems
    (cached, so read-only)."""
    out = []
    for sentence in sentences:
        for clause in _CLAUSE_SPLIT_RE.split(sentence):
            parts = _side_parts(clause)
            if parts:
                out.append((parts, frozenset(_word_stems(clause))))
    return tuple(out)


def _source_side(statement: str, source_sentences: Sequence[str]) -> FactCheck | None:
    """When the source names both sides of a part, the side whose clauses say more of what
    the statement says of it (by more than one word) decides: "left foot pain and swelling"
    against "your right foot pain and swelling is from a fracture", "your left foot exam is
    normal"."""
    clauses = _side_clauses(tuple(source_sentences))
    said = {pair for parts, _ in clauses for pair in parts}
    for side, part in sorted(_side_parts(statement)):
        other = "right" if side == "left" else "left"
        if (other, part) not in said or (side, part) not in said:
            continue
        wanted = _word_stems(statement) - _SIDE_STEMS - {part}
        best: dict[str, int] = {}
        for parts, stems in clauses:
            for said_side, said_part in parts:
                if said_part == part:
                    best[said_side] = max(best.get(said_side, 0), len(wanted & stems))
        if best.get(other, 0) > best.get(side, 0) + 1:
            word = _word_of(statement, part)
            return FactCheck(
                "conflict", f"laterality differs: {side} vs {other} {word}", said=(side,)
            )
    return None


# --- drugs and conditions ----------------------------------------------------------------

_DRUG_SUFFIX_RE = re.compile(
    r"\b[a-z]{3,}(?:pril|sartan|olol|statin|formin|gliptin|gliflozin|dipine|prazole|cillin|"
    r"mycin|cycline|floxacin|oxetine|triptyline|azepam|azolam|tidine|parin|xaban|gatran|"
    r"semide|thiazide|profen|codone|morphone|lukast|terol|sonide|solone|thasone|glutide|"
    r"mab|tinib|ciclovir|conazole|dronate|setron|pramine|afil)\b"
)
_CONDITION_SUFFIX_RE = re.compile(
    r"\b[a-z]{3,}(?:itis|osis|emia|pathy|algia|plegia|paresis|penia|megaly|ectasia|oma)\b"
)
_NOT_CONDITIONS = frozenset(
    "diagnosis prognosis diploma aroma stoma soma coma hypnosis symptoma".split()
)


def _contains(haystack: str, phrase: str) -> bool:
    return re.search(rf"(?<![a-z]){re.escape(phrase)}(?![a-z])", haystack) is not None


def drug_mentions(text: str, *, dictionary: bool = True) -> list[str]:
    """Drug names in ``text`` (lexicon, drug dictionary unless ``dictionary`` is false, and
    drug-class suffixes), lower-cased, brands kept."""
    return list(_drug_mentions(text, dictionary))


@lru_cache(maxsize=8192)
def _drug_mentions(text: str, dictionary: bool = True) -> tuple[str, ...]:
    lex = load_lexicon()
    names = drug_names() if dictionary else {}
    low = text.lower()
    found = [w for w in dict.fromkeys(re.findall(r"[a-z]+", low)) if w in lex.drugs or w in names]
    found += [m for m in dict.fromkeys(_DRUG_SUFFIX_RE.findall(low)) if m not in found]
    return tuple(found)


def condition_mentions(text: str, *, dictionary: bool = True) -> list[str]:
    """Condition names in ``text`` (lexicon phrases, suffixes such as -itis, -osis, and the
    disease dictionary's names unless ``dictionary`` is false)."""
    return list(_condition_mentions(text, dictionary))


@lru_cache(maxsize=8192)
def _condition_mentions(text: str, dictionary: bool = True) -> tuple[str, ...]:
    lex = load_lexicon()
    low = " ".join(re.findall(r"[a-z0-9']+", text.lower()))
    found: list[str] = []
    for name in lex.conditions:
        if _contains(low, name) and not any(name in f for f in found):
            found.append(name)
    for m in _CONDITION_SUFFIX_RE.findall(low):
        if m not in _NOT_CONDITIONS and not any(m in f for f in found):
            found.append(m)
    if dictionary:
        # (hyphens kept: "non-small cell lung cancer" is not "small cell lung cancer")
        for name in sorted(conditions_in(text.lower()), key=len, reverse=True):
            # a name that holds one already found was checked with that one's synonyms
            if not any(name in f or f in name for f in found):
                found.append(name)
    return tuple(found)


def _fuzzy_in(term: str, text_low: str) -> bool:
    if _contains(text_low, term):
        return True
    words = re.findall(r"[a-z]+", text_low)
    if " " not in term:
        return len(term) >= 6 and any(
            abs(len(w) - len(term)) <= 2 and fuzz.ratio(w, term) >= 85 for w in words
        )
    return fuzz.partial_ratio(term, text_low) >= 92


def _drug_found(drug: str, text_low: str) -> bool:
    lex = load_lexicon()
    names = {drug, lex.drug_brands.get(drug, drug)}
    names |= {brand for brand, generic in lex.drug_brands.items() if generic in names}
    if any(_fuzzy_in(n, text_low) for n in names):
        return True
    # a brand and its generic name, or two brands of one drug ("norvasc" / "amlodipine")
    generics = drug_names().get(drug, frozenset()) | names
    return not generics.isdisjoint(generics_in(text_low))


# An enlarged organ is said in plain words: "your thyroid's a bit enlarged" (thyromegaly).
_ENLARGED_ORGANS = {
    "thyromegaly": "thyroid",
    "hepatomegaly": "liver",
    "splenomegaly": "spleen",
    "cardiomegaly": "heart",
}
_ENLARGED = r"(?:enlarged|large|larger|big|bigger|swollen)"


def _enlarged_said(organ: str, text_low: str) -> bool:
    near = (
        rf"\b{organ}\b(?:\W+\w+){{0,5}}?\W+{_ENLARGED}\b|\b{_ENLARGED}\W+(?:\w+\W+){{0,2}}{organ}\b"
    )
    return re.search(near, text_low) is not None


def _condition_headings(condition: str) -> frozenset[str]:
    """The MeSH headings of a condition, by its name and its lexicon synonyms."""
    return headings_of({condition, *load_lexicon().condition_synonyms.get(condition, ())})


def _condition_found(condition: str, text_low: str) -> bool:
    lex = load_lexicon()
    names = {condition, *lex.condition_synonyms.get(condition, ())}
    if condition in _ENLARGED_ORGANS and _enlarged_said(_ENLARGED_ORGANS[condition], text_low):
        return True
    if any(_fuzzy_in(n, text_low) for n in names):
        return True
    # another name of the same disease ("high blood pressure" / "hypertension", "blood clots"
    # / "thrombosis"), or a kind of it ("hay fever" says "allergic rhinitis")
    headings, said_headings = _condition_headings(condition), headings_in(text_low)
    if not headings.isdisjoint(said_headings) or narrower(said_headings, headings):
        return True
    # a dictionary name said in other words: "gastroesophageal reflux" where a visit says
    # "reflux", "lung inflammation" for "the inflammation in your lungs": its head word is
    # enough, unless that word names no disease of its own ("disease", "syndrome", ...)
    if condition in lex.conditions or condition not in condition_names():
        return False
    words = [w for w in tokens(condition) if content_word(w) and w not in _LATIN_QUALIFIERS]
    said = _source_stems((text_low,))
    if words and stem(words[-1]) not in _GENERIC_HEADS:
        return stem(words[-1]) in said or _fuzzy_in(words[-1], text_low)
    return bool(words) and all(stem(w) in said for w in words)


_GENERIC_HEADS = frozenset(
    stem(w)
    for w in "disease diseases syndrome disorder disorders condition infection failure "
    "deficiency injury cancer cancers tumor tumors".split()
)


# Latin qualifiers after the head: "diabetes mellitus" is said "diabetes", but "myasthenia
# gravis" is not said by "gravis" alone.
_LATIN_QUALIFIERS = frozenset(
    "mellitus insipidus gravis vulgaris planus simplex rigidus nigricans versicolor".split()
)


def _compare_drugs(statement: str, evidence: str, source: str) -> FactCheck:
    evidence_low, source_low = evidence.lower(), source.lower()
    for drug in drug_mentions(statement):
        if _drug_found(drug, evidence_low) or _drug_found(drug, source_low):
            continue
        rivals = [d for d in drug_mentions(evidence) if not _drug_found(d, statement.lower())]
        if rivals:
            # (a swap or an added drug: either way, what the reviewer checks is this one)
            return FactCheck(
                "conflict",
                f"{drug} is not in the source, which names {rivals[0]}",
                said=(drug,),
            )
        return FactCheck("missing", f"drug {drug} not mentioned in the source", said=(drug,))
    return AGREE


def _compare_conditions(statement: str, evidence: str, source: str) -> FactCheck:
    evidence_low, source_low = evidence.lower(), source.lower()
    for condition in condition_mentions(statement):
        if _condition_found(condition, evidence_low) or _condition_found(condition, source_low):
            continue
        # a broader name of the same disease is not another one: "heart disease" in the
        # visit does not say "coronary artery disease", nor name something else instead
        # (by their own names: a lexicon synonym may be broader, "arthritis" of
        # "osteoarthritis", which would make every arthritis a kind of it)
        own = headings_of([condition])
        rivals = [
            c
            for c in condition_mentions(evidence)
            if c not in statement.lower() and not narrower(own, headings_of([c]))
        ]
        if rivals:
            return FactCheck(
                "conflict",
                f"{condition} is not in the source, which names {rivals[0]}",
                said=(condition,),
            )
        return FactCheck(
            "missing", f"condition {condition} not mentioned in the source", said=(condition,)
        )
    return AGREE


# Drugs and conditions are two families because they are named differently: a drug is
# called by the same name (or its brand) in a visit and in its note, where a note names in
# medical terms the condition the visit speaks of in lay words ("CAD" for "heart disease").
FAMILIES = ("numbers", "drugs", "conditions", "laterality", "negation")
#: The families that compare names (a drug or condition the source does not name).
NAME_FAMILIES = frozenset({"drugs", "conditions"})


def known_families(families: Iterable[str]) -> frozenset[str]:
    """``families`` as a set, each one of :data:`FAMILIES` (ValueError naming the others)."""
    run = frozenset(families)
    if unknown := run - set(FAMILIES):
        raise ValueError(f"unknown fact-check families: {sorted(unknown)}; known: {FAMILIES}")
    return run


def compare_facts(
    statement: str,
    evidence_sentences: Sequence[str],
    source_sentences: Sequence[str] = (),
    *,
    focus: Sequence[str] | None = None,
    families: Iterable[str] = FAMILIES,
) -> FactCheck:
    """Check a statement's specifics against the evidence around its best match.

    Args:
        statement: the statement being verified.
        evidence_sentences: the matched source sentences with their neighbours, in order.
        source_sentences: all sentences of the source chunk (drug, condition and side names,
            and values next to the same topic, may sit elsewhere in it).
        focus: the matched sentences themselves (plus the reply to a question), read for
            negation; default: ``evidence_sentences``.
        families: which families of checks run (:data:`FAMILIES`).

    Returns:
        The first conflict found, else the first missing specific, else ``agree``.

    Raises:
        ValueError: a family not in :data:`FAMILIES`.
    """
    evidence = " ".join(evidence_sentences)
    source = " ".join(source_sentences) or evidence
    run = known_families(families)
    checks = [
        replace(check(), family=name)
        for name, check in (
            ("numbers", lambda: _compare_numbers(statement, evidence, source_sentences)),
            ("drugs", lambda: _compare_drugs(statement, evidence, source)),
            ("conditions", lambda: _compare_conditions(statement, evidence, source)),
            (
                "laterality",
                lambda: _compare_laterality(statement, evidence, source, source_sentences),
            ),
            (
                "negation",
                lambda: _compare_negation(
                    statement, evidence_sentences if focus is None else focus, source_sentences
                ),
            ),
        )
        if name in run
    ]
    for check in checks:
        if check.status == "conflict":
            return check
    for check in checks:
        if check.status == "missing":
            return check
    return AGREE
