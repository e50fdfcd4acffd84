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

Each reader derives its view here rather than keeping its own copy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

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
    )
