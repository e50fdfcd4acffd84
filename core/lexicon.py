"""The clinical lexicon every detector reads (``core/data/lexicon.json``), loaded once.

One file, one entry per thing, so that grounding, consistency, the claim audit and severity
name a drug or a condition the same way:

- **drugs**: generic name -> other names (brands, synonyms): "apixaban" -> ["eliquis"];
  **drug_classes**: class -> member generics, with **drug_class_synonyms** ("blood thinner");
  **supplements**: what is taken like a drug but named like a nutrient ("potassium",
  "vitamin"), matched as a drug where a sentence is compared with its source, never
  extracted as a medication (it is as often a lab value or a diet).
- **conditions**: name -> its **synonyms** and **abbreviations** (the same condition in other
  words: "high blood pressure", "HTN"), **said_as** (words a visit uses when it talks about
  it that do not name it alone: "blood pressure", "sugars"; enough for grounding to find the
  condition discussed, never extracted as the condition), whether it is **chronic** (a later
  denial then conflicts), its **group** (type 2 diabetes -> diabetes mellitus), and
  **symptom** for complaints filed here for extraction ("chest pain") that grounding reads as
  findings, not diagnoses.
- **findings** and **exam_signs**: symptoms a clinician asks about, and signs that have no lay
  name, so that an examiner who found one names it ("rales").
- **allergens** and **procedures**: name -> other names.
- **shorthand** and **shorthand_cased**: clinical shorthand -> the words it stands for
  ("SOBOE" -> "short of breath on exertion", "h/o" -> "history of"), read in any case, or
  (``_cased``: "SOB", "MI", "BP") only as written, where the lower-case word is another.
  Some are read only where their other reading cannot be: **shorthand_after_dose** after a
  dose ("500mg BD": twice a day; a paper's "BD" is bipolar disorder), and
  **shorthand_before_count** (as written) before a whole number ("HR 96": heart rate; a
  paper's "HR 0.62" is a hazard ratio). Only what a note writes for itself and a visit says
  in words; nothing with a second common reading in the same place ("PE": physical exam or
  pulmonary embolism; "RA": room air).

Each reader derives its view here rather than keeping its own copy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from core.text import cached_for_short_texts

LEXICON_PATH = Path(__file__).parent / "data" / "lexicon.json"

# First words of a multi-word generic that are not the drug's name ("regular insulin").
_NOT_DRUG_WORDS = frozenset({"regular"})
# The shortest first word of a brand of several words that names the drug alone ("toprol" of
# "toprol xl", "humulin" of "humulin n").
_MIN_BRAND_WORD = 5
_WORD_RE = re.compile(r"[a-z]+")
# A condition's abbreviation this short is too often something else to be read alone
# ("MI", "RA", "PE"); it stays a synonym of its condition.
_MIN_ABBREVIATION_NAME = 3


@dataclass(frozen=True, slots=True)
class Condition:
    """A condition or complaint and the other ways it is named."""

    name: str
    synonyms: tuple[str, ...]
    abbreviations: tuple[str, ...]
    said_as: tuple[str, ...]
    chronic: bool
    group: str | None
    symptom: bool

    @property
    def names(self) -> tuple[str, ...]:
        """Its name, synonyms and (lower-case) abbreviations."""
        return (self.name, *self.synonyms, *(a.lower() for a in self.abbreviations))


@dataclass(frozen=True, slots=True)
class Lexicon:
    """The packaged lexicon (see the module docstring for each part)."""

    drugs: Mapping[str, tuple[str, ...]]
    drug_classes: Mapping[str, tuple[str, ...]]
    drug_class_synonyms: Mapping[str, tuple[str, ...]]
    supplements: tuple[str, ...]
    conditions: Mapping[str, Condition]
    findings: tuple[str, ...]
    exam_signs: tuple[str, ...]
    allergens: Mapping[str, tuple[str, ...]]
    procedures: Mapping[str, tuple[str, ...]]
    shorthand: Mapping[str, str]
    shorthand_cased: Mapping[str, str]
    shorthand_after_dose: Mapping[str, str]
    shorthand_before_count: Mapping[str, str]

    def brand_generics(self) -> dict[str, str]:
        """Every other name of a drug -> its generic name ("norvasc" -> "amlodipine")."""
        return {other: generic for generic, others in self.drugs.items() for other in others}

    def drug_words(self) -> frozenset[str]:
        """One-word names a sentence is read for: generics, other names, each part of a
        combination ("sacubitril/valsartan"), the drug word of a salt or form
        ("isosorbide mononitrate"), and the supplements."""
        words = set(self.supplements)
        for generic, others in self.drugs.items():
            for name in (generic, *others):
                for part in name.split("/"):
                    first = part.split(" ")[0]
                    if not _WORD_RE.fullmatch(first) or first in _NOT_DRUG_WORDS:
                        continue
                    # a short first word of another name is an everyday word or a title
                    # ("plan" of "plan b", "ms" of "ms contin", "pen" of "pen vk")
                    if name != generic and first != part and len(first) < _MIN_BRAND_WORD:
                        continue
                    words.add(first)
        return frozenset(words)

    def diagnosis_names(self) -> tuple[str, ...]:
        """Names a sentence is read for diagnoses (conditions, not complaints), longest
        first: names, synonyms and abbreviations of three letters or more."""
        names: set[str] = set()
        for c in self.conditions.values():
            if c.symptom:
                continue
            names.add(c.name)
            names.update(c.synonyms)
            names.update(a.lower() for a in c.abbreviations if len(a) >= _MIN_ABBREVIATION_NAME)
        return tuple(sorted(names, key=lambda n: (-len(n), n)))

    def diagnosis_synonyms(self) -> dict[str, tuple[str, ...]]:
        """For each diagnosis name, the other words that say the same condition is
        discussed: its entry's other names and what a visit says for it, and the same of
        the group it belongs to."""
        out: dict[str, tuple[str, ...]] = {}
        for c in self.conditions.values():
            if c.symptom:
                continue
            # a visit that talks of the group talks of its kind ("diabetes", "sugars" for
            # type 2 diabetes): the kind is not contradicted, only not spelled out
            parent = self.conditions.get(c.group) if c.group else None
            related = (*parent.names, *parent.said_as) if parent else ()
            group = (*c.names, *c.said_as, *related)
            for name in c.names:
                out[name] = tuple(dict.fromkeys(n for n in group if n != name))
        return out


def _names(raw: Mapping[str, list[str]]) -> dict[str, tuple[str, ...]]:
    return {k: tuple(v) for k, v in raw.items()}


@lru_cache(maxsize=1)
def load_lexicon() -> Lexicon:
    """The packaged lexicon (read once per process)."""
    raw = json.loads(LEXICON_PATH.read_text("utf-8"))
    conditions = {
        name: Condition(
            name=name,
            synonyms=tuple(e.get("synonyms", ())),
            abbreviations=tuple(e.get("abbreviations", ())),
            said_as=tuple(e.get("said_as", ())),
            chronic=bool(e["chronic"]),
            group=e.get("group"),
            symptom=bool(e.get("symptom", False)),
        )
        for name, e in raw["conditions"].items()
    }
    return Lexicon(
        drugs=_names(raw["drugs"]),
        drug_classes=_names(raw["drug_classes"]),
        drug_class_synonyms=_names(raw["drug_class_synonyms"]),
        supplements=tuple(raw["supplements"]),
        conditions=conditions,
        findings=tuple(raw["findings"]),
        exam_signs=tuple(raw["exam_signs"]),
        allergens=_names(raw["allergens"]),
        procedures=_names(raw["procedures"]),
        shorthand={k.lower(): v for k, v in raw["shorthand"].items()},
        shorthand_cased=dict(raw["shorthand_cased"]),
        shorthand_after_dose={k.lower(): v for k, v in raw["shorthand_after_dose"].items()},
        shorthand_before_count=dict(raw["shorthand_before_count"]),
    )


# A word of clinical shorthand as written: letters and digits, joined by "/", "&" or "+"
# ("h/o", "N+V", "A&E", "3/7"), and the care-of sign notes use for "complains of".
_SHORTHAND_TOKEN_RE = re.compile(
    r"℅|(?<![\w/&+.])[A-Za-z0-9]+(?:[/&+][A-Za-z0-9]+)*(?![\w/&+]|\.\d)"
)
# A duration in clinical shorthand: "3/7" is three days, "2/52" two weeks. Never a date's
# ("on 3/7", "3/7/2020"), and a count of days is below 7, of weeks below 52.
_DURATION_RE = re.compile(r"([1-9]\d?)/(7|52)")
_DURATION_UNITS = {"7": ("day", "days"), "52": ("week", "weeks")}
_DATE_BEFORE_RE = re.compile(r"\bon\s*$", re.I)
# What a dose ends in, for the shorthand read only after one ("500mg BD", "2 puffs od").
_DOSE_BEFORE_RE = re.compile(
    r"\d\s*(?:mg|mcg|micrograms?|g|ml|units?|iu|tablets?|tabs?|caps(?:ules)?|puffs?|drops?)\s*$",
    re.I,
)
# A whole number after the shorthand read only before one ("HR 96", "RR: 18", "HR of 110").
_COUNT_AFTER_RE = re.compile(r"\s*(?:[:=]\s*|of\s+|was\s+|is\s+)?\d{2,3}(?![\d.,]?\d)")


@dataclass(frozen=True, slots=True)
class _Shorthand:
    """The lexicon's shorthand tables as they are read (keys in the case they are matched)."""

    any_case: dict[str, str]  # lower case
    cased: dict[str, str]  # as written, the conditions' abbreviations too
    after_dose: dict[str, str]  # lower case
    before_count: dict[str, str]  # as written
    words: frozenset[str]  # every key in lower case

    def candidate(self, word: str) -> bool:
        """Whether ``word`` may be shorthand: a key of a table, or a word with a "/" (a
        duration). A text with none is passed over at the cost of one scan."""
        return word.lower() in self.words or "/" in word


@lru_cache(maxsize=1)
def _shorthand() -> _Shorthand:
    """The tables: the lexicon's shorthand, and the abbreviations of its conditions of three
    letters or more ("COPD", "HTN"), each written out as the condition's name."""
    lex = load_lexicon()
    cased = dict(lex.shorthand_cased)
    for c in lex.conditions.values():
        for ab in c.abbreviations:
            if len(ab) >= _MIN_ABBREVIATION_NAME:
                cased.setdefault(ab, c.name)
    tables = (lex.shorthand, cased, lex.shorthand_after_dose, lex.shorthand_before_count)
    return _Shorthand(
        dict(lex.shorthand),
        cased,
        dict(lex.shorthand_after_dose),
        dict(lex.shorthand_before_count),
        frozenset(k.lower() for table in tables for k in table),
    )


def _meaning(m: re.Match[str]) -> str | None:
    """What the shorthand token ``m`` stands for, or None."""
    word = m.group(0)
    duration = _DURATION_RE.fullmatch(word)
    if duration is not None:
        count, per = duration.groups()
        if int(count) >= int(per) or _DATE_BEFORE_RE.search(m.string, 0, m.start()):
            return None
        one, many = _DURATION_UNITS[per]
        return f"1 {one}" if count == "1" else f"{count} {many}"
    tables = _shorthand()
    found = tables.cased.get(word) or tables.any_case.get(word.lower())
    if found is not None:
        return found
    if word.lower() in tables.after_dose and _DOSE_BEFORE_RE.search(m.string, 0, m.start()):
        return tables.after_dose[word.lower()]
    if word in tables.before_count and _COUNT_AFTER_RE.match(m.string, m.end()):
        return tables.before_count[word]
    return None


def shorthand_used(texts: Iterable[str]) -> frozenset[str]:
    """The shorthand these texts use themselves (lower case): a statement keeps what its
    source writes the same way."""
    tables = _shorthand()
    return frozenset(
        m.group(0).lower()
        for t in texts
        for m in _SHORTHAND_TOKEN_RE.finditer(t)
        if tables.candidate(m.group(0)) and _meaning(m) is not None
    )


@cached_for_short_texts(maxsize=16384)
def written_out(text: str, keep: frozenset[str] = frozenset()) -> str:
    """``text`` with its clinical shorthand written out as the words it stands for
    ("Palpitations with SOBOE, 3/7" -> "Palpitations with short of breath on exertion, 3
    days"), but for the shorthand in ``keep`` (lower case: what the other side writes too)."""
    if not any(map(_shorthand().candidate, _SHORTHAND_TOKEN_RE.findall(text))):
        return text

    def word(m: re.Match[str]) -> str:
        if m.group(0).lower() in keep:
            return m.group(0)
        return _meaning(m) or m.group(0)

    return _SHORTHAND_TOKEN_RE.sub(word, text)


def shorthand_meaning(word: str) -> str | None:
    """What one word of shorthand stands for ("SOBAR" -> "short of breath at rest", "3/7"
    -> "3 days"), or None."""
    m = _SHORTHAND_TOKEN_RE.fullmatch(word)
    return None if m is None else _meaning(m)
