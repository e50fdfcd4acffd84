"""Clinical specifics that a similarity score cannot see: numbers and doses, vital signs,
negation, laterality, named drugs and conditions.

:func:`compare_facts` decides whether a statement's specifics are borne out by its evidence.
A close paraphrase that changes "500 mg" to "1000 mg", "denies" to "reports" or "left" to
"right" embeds almost exactly like the original; these checks are what keep it from being
accepted as grounded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

from rapidfuzz import fuzz

DATA_DIR = Path(__file__).resolve().parent.parent / "data"

FactStatus = Literal["agree", "missing", "conflict"]


@dataclass(frozen=True, slots=True)
class FactCheck:
    """Outcome of comparing a statement's specifics with its evidence.

    ``agree``: every specific is borne out. ``missing``: some specific is not in the evidence
    (the statement is then unsupported). ``conflict``: the evidence asserts a different value
    (the statement is then contradicted). ``reason`` names the specific that decided it.
    """

    status: FactStatus
    reason: str | None = None


AGREE = FactCheck("agree")


@dataclass(frozen=True, slots=True)
class Lexicon:
    """Drug and condition names with synonyms and brand names (core/data/grounding_lexicon.json)."""

    drugs: frozenset[str]
    conditions: tuple[str, ...]
    condition_synonyms: dict[str, tuple[str, ...]]
    drug_brands: dict[str, str]


@lru_cache(maxsize=1)
def load_lexicon() -> Lexicon:
    """The packaged lexicon (read once per process)."""
    raw = json.loads((DATA_DIR / "grounding_lexicon.json").read_text("utf-8"))
    conditions = tuple(sorted(raw["conditions"], key=len, reverse=True))
    synonyms: dict[str, list[str]] = {k: list(v) for k, v in raw["condition_synonyms"].items()}
    for name, others in list(synonyms.items()):  # symmetric: "high blood pressure" <-> ...
        for other in others:
            if other in conditions and name not in synonyms.setdefault(other, []):
                synonyms[other].append(name)
    return Lexicon(
        drugs=frozenset(raw["drugs"]),
        conditions=conditions,
        condition_synonyms={k: tuple(v) for k, v in synonyms.items()},
        drug_brands=dict(raw["drug_brands"]),
    )


# --- tokens ------------------------------------------------------------------------------

_TOKEN_RE = re.compile(r"\d+(?:[.,]\d+)*(?:/\d+(?:\.\d+)?)?%?|[a-z]+(?:'[a-z]+)?|[?,;:]", re.I)


def tokens(text: str) -> list[str]:
    """Lower-case word, number and clause-punctuation tokens ("n't" kept as "not")."""
    out: list[str] = []
    for tok in _TOKEN_RE.findall(text.replace("\u2019", "'")):
        low = tok.lower()
        if low.endswith("n't"):
            out.extend([low[:-3] or "not", "not"])
        elif low in {"can't", "cannot", "won't"}:
            out.extend(["can", "not"])
        else:
            out.append(low)
    return out


def stem(word: str) -> str:
    """A crude suffix stripper: enough to match "smokes"/"smoking", "reports"/"reported"."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


_STOPWORDS = frozenset(
    """
    a an the and or but of in on at to for with by from as is are was were be been being has
    have had do does did this that these those it its he she they his her their him them i
    you we my your our me us who which what when where how there here also very any some
    patient patients pt mr mrs ms dr today currently now then than so if about over up out
    will would can could should may might just well okay ok yes yeah um uh mm hmm like
    going go get got know think feel little bit really kind sort
    """.split()
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
    "tablet": "tablet",
    "tablets": "tablet",
    "pill": "tablet",
    "pills": "tablet",
    "puff": "puff",
    "puffs": "puff",
    "cigarettes": "cigarette",
    "packs": "pack",
    "pack": "pack",
}
_DOSE_UNITS = frozenset({"mg", "mcg", "g", "ml", "units", "tablet", "puff"})
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
    r"(?<![\w.])(?<![A-Za-z]-)(\d+(?:,\d{3})*(?:\.\d+)?(?:\s*/\s*\d+(?:\.\d+)?)?)(?:\s*-?\s*(%|[a-z]+))?",
    re.I,
)
_DATE_RE = re.compile(r"\b\d{1,2}[/-]\d{1,2}[/-]\d{2,4}\b|\b\d{1,2}/\d{4}\b")
_HALF_RE = re.compile(r"\b(?:a|one) half\b|\bhalf (?:a|an)\b", re.I)


def _words_to_number(phrase: str) -> int | None:
    words = [w for w in re.split(r"[\s-]+", phrase.lower()) if w and w != "and"]
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


def _digits(text: str) -> str:
    """Spell-out numbers replaced by digits ("forty five" -> "45"), so both forms compare."""
    text = _HALF_RE.sub("0.5", text)

    def repl(m: re.Match[str]) -> str:
        value = _words_to_number(m.group(0))
        return str(value) if value is not None else m.group(0)

    return _WORD_RUN_RE.sub(repl, text)


@dataclass(frozen=True, slots=True)
class Quantity:
    """A number in a text with its normalised unit (``None`` when it has none)."""

    value: str
    unit: str | None
    display: str

    @property
    def kind(self) -> str:
        if self.unit in _DOSE_UNITS:
            return "dose"
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


def quantities(text: str) -> list[Quantity]:
    """Numbers with units, spelled-out numbers included ("twenty milligrams" -> 20 mg)."""
    converted = _DATE_RE.sub(" ", _digits(text))
    found: list[Quantity] = []
    for m in _NUMBER_RE.finditer(converted):
        raw_unit = (m.group(2) or "").lower()
        unit = _UNITS.get(raw_unit)
        if unit is None and raw_unit.endswith("s"):
            unit = _UNITS.get(raw_unit[:-1])
        value = _canonical(m.group(1))
        if unit is None and "/" in value:
            unit = "mmhg"
        display = f"{m.group(1)} {unit}" if unit and unit != "%" else m.group(1) + (unit or "")
        found.append(Quantity(value=value, unit=unit, display=display.strip()))
    return found


_COMMON = frozenset(
    "daily once twice times week weeks month months year years today since about time "
    "pain take takes taking continue will were been also than".split()
)


def _content_stems(text: str) -> set[str]:
    return {
        stem(t)
        for t in tokens(text)
        if t.isalpha() and len(t) > 4 and t not in _STOPWORDS and t not in _COMMON
    }


def _same(a: Quantity, b: Quantity) -> bool:
    """Same value, and same unit when both have one."""
    return a.value == b.value and (a.unit is None or b.unit is None or a.unit == b.unit)


def _related_sentences(statement: str, sentences: Sequence[str]) -> str:
    """Source sentences sharing at least two content words with the statement."""
    wanted = _content_stems(statement)
    return " ".join(s for s in sentences if len(wanted & _content_stems(s)) >= 2)


def _compare_numbers(statement: str, evidence: str, source_sentences: Sequence[str]) -> FactCheck:
    wanted = quantities(statement)
    if not wanted:
        return AGREE
    have = quantities(evidence)
    if source_sentences and not all(any(_same(q, h) for h in have) for q in wanted):
        # a value may be said elsewhere in the source, next to the same topic
        have = have + quantities(_related_sentences(statement, source_sentences))
    # "132/84" in a statement is borne out by "132 over 84" in speech.
    spoken = re.findall(r"(\d+)\s+over\s+(\d+)", _digits(evidence))
    values = {h.value for h in have} | {_canonical(f"{a}/{b}") for a, b in spoken}
    for q in wanted:
        if any(_same(q, h) for h in have) or ("/" in q.value and q.value in values):
            continue
        if "/" in q.value and all(part in values for part in q.value.split("/")):
            continue
        rivals = [h for h in have if h.unit is not None and h.unit == q.unit and h.value != q.value]
        if rivals:
            return FactCheck("conflict", f"{q.kind} differs: {q.display} vs {rivals[0].display}")
        return FactCheck("missing", f"{q.kind} {q.display} not found in the evidence")
    return AGREE
    have = quantities(evidence)
    missing = [q for q in wanted if q.value not in {h.value for h in have}]
    if missing and source_sentences:
        # a value may be said elsewhere in the source, next to the same topic
        have = have + quantities(_related_sentences(statement, source_sentences))
    have_values = {q.value for q in have}
    # "132/84" in a statement is borne out by "132 over 84" in speech.
    spoken = {
        _canonical(f"{a}/{b}") for a, b in re.findall(r"(\d+)\s+over\s+(\d+)", _digits(evidence))
    }
    have_values |= spoken
    for q in wanted:
        if q.value in have_values:
            continue
        if "/" in q.value and all(part in have_values for part in q.value.split("/")):
            continue
        rivals = [h for h in have if h.unit is not None and h.unit == q.unit and h.value != q.value]
        if rivals:
            return FactCheck("conflict", f"{q.kind} differs: {q.display} vs {rivals[0].display}")
        return FactCheck("missing", f"{q.kind} {q.display} not found in the evidence")
    return AGREE


# --- negation ----------------------------------------------------------------------------

_NEG_CUES = frozenset(
    """
    no not denies denied deny denying without never none negative neither nor quit stopped
    stop discontinued off free absent absence ruled nothing non nope nah
    """.split()
)
_SCOPE_END = frozenset(", ; : but however although though except other than".split())
_YES_WORDS = frozenset("yes yeah yep yup mm uh-huh correct sure definitely".split())
_NO_WORDS = frozenset("no nope nah never none".split())


def _polarity(toks: list[str]) -> dict[str, bool]:
    """Content stems of one sentence -> True when asserted, False when in a negation's scope."""
    status: dict[str, bool] = {}
    scope = 0
    for tok in toks:
        if tok in _NEG_CUES:
            scope = 6
            continue
        if tok in _SCOPE_END or tok == "?":
            scope = 0
            continue
        if tok.isalpha() and tok not in _STOPWORDS and len(tok) > 2:
            key = stem(tok)
            negated = scope > 0
            # an assertion anywhere wins: "no fever now, but fever last week" is asserted
            status[key] = status.get(key, False) or not negated
        scope = max(0, scope - 1)
    return status


def _evidence_polarity(sentences: Sequence[str]) -> dict[str, set[bool]]:
    """Polarity of evidence terms, reading a question answered "no" as a negation."""
    out: dict[str, set[bool]] = {}
    for i, sentence in enumerate(sentences):
        toks = tokens(sentence)
        pol = _polarity(toks)
        if sentence.rstrip().endswith("?") or _is_question(toks):
            # a question asserts nothing; its answer decides
            reply = tokens(sentences[i + 1])[:4] if i + 1 < len(sentences) else []
            if reply and (reply[0] in _NO_WORDS or _NEG_CUES & set(reply)):
                pol = dict.fromkeys(pol, False)
            elif reply and reply[0] in _YES_WORDS:
                pol = dict.fromkeys(pol, True)
            else:
                continue
        for key, asserted in pol.items():
            out.setdefault(key, set()).add(asserted)
    return out


_QUESTION_STARTS = frozenset(
    "have do did are is any does were was can could how what when where why which".split()
)
_FILLERS = frozenset({"and", "so", "okay", "um", "uh", "alright", "now", "then"})


def _is_question(toks: list[str]) -> bool:
    """A question even without "?" (transcripts often drop punctuation)."""
    words = [t for t in toks if t.isalpha() and t not in _FILLERS]
    return (
        len(words) > 1
        and words[0] in _QUESTION_STARTS
        and words[1] in {"you", "there", "your", "it", "he", "she", "they", "any"}
    )


def _compare_negation(statement: str, evidence_sentences: Sequence[str]) -> FactCheck:
    stmt = _polarity(tokens(statement))
    stmt_negated = any(t in _NEG_CUES for t in tokens(statement))
    evid = _evidence_polarity(evidence_sentences)
    agree = disagree = 0
    for key, asserted in stmt.items():
        seen = evid.get(key)
        if not seen or len(seen) > 1:  # absent, or said both ways: undecided
            continue
        if asserted in seen:
            agree += 1
        else:
            disagree += 1
    if disagree:
        if stmt_negated:
            return FactCheck(
                "conflict", "negation differs: the statement negates, the evidence asserts"
            )
        return FactCheck(
            "conflict", "negation differs: the statement asserts, the evidence negates"
        )
    return AGREE


# --- laterality --------------------------------------------------------------------------

_NOT_SIDE_AFTER = frozenset({"now", "away", "thing", "there", "here", "?", ","})
_NOT_SIDE_BEFORE = frozenset({"all", "that's", "thats", "alright", "is", "you're", "okay"})
_SIDES = {"left": "left", "right": "right", "bilateral": "bilateral", "bilaterally": "bilateral"}


def _sides(text: str) -> set[str]:
    toks = tokens(text)
    sides = {_SIDES[t] for t in toks if t in _SIDES}
    if "both" in toks and {"sides", "legs", "arms", "knees", "eyes", "ears", "feet"} & set(toks):
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


_SIDE_SKIP = frozenset("upper lower side sided sides and or the of".split())


def _side_parts(text: str) -> set[tuple[str, str]]:
    """(side, body part) pairs: "left shoulder" -> ("left", "shoulder")."""
    toks = tokens(text)
    pairs = set()
    for i, t in enumerate(toks):
        if t in ("left", "right"):
            for nxt in toks[i + 1 : i + 4]:
                if nxt.isalpha() and nxt not in _SIDE_SKIP:
                    pairs.add((t, stem(nxt)))
                    break
    return pairs


def _compare_laterality(statement: str, evidence: str, source: str) -> FactCheck:
    wanted = _sides(statement)
    if not wanted:
        return AGREE
    source_pairs = _side_parts(source)
    for side, part in sorted(_side_parts(statement)):
        other = "right" if side == "left" else "left"
        if (side, part) not in source_pairs and (other, part) in source_pairs:
            return FactCheck("conflict", f"laterality differs: {side} vs {other} {part}")
    near = _sides(evidence)
    for side in sorted(wanted):
        if side in near:
            continue
        if side == "bilateral" and {"left", "right"} <= near:
            continue
        others = near - {side}
        if others:
            return FactCheck("conflict", f"laterality differs: {side} vs {sorted(others)[0]}")
        if side not in _sides(source):
            return FactCheck("missing", f"laterality {side} not found in the source")
    return AGREE


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


def drug_mentions(text: str) -> list[str]:
    """Drug names in ``text`` (lexicon and drug-class suffixes), lower-cased, brands kept."""
    lex = load_lexicon()
    low = text.lower()
    found = [w for w in dict.fromkeys(re.findall(r"[a-z]+", low)) if w in lex.drugs]
    found += [m for m in dict.fromkeys(_DRUG_SUFFIX_RE.findall(low)) if m not in found]
    return found


def condition_mentions(text: str) -> list[str]:
    """Condition names in ``text`` (lexicon phrases and suffixes such as -itis, -osis)."""
    lex = load_lexicon()
    low = " ".join(re.findall(r"[a-z0-9']+", text.lower()))
    found: list[str] = []
    for name in lex.conditions:
        if _contains(low, name) and not any(name in f for f in found):
            found.append(name)
    for m in _CONDITION_SUFFIX_RE.findall(low):
        if m not in _NOT_CONDITIONS and not any(m in f for f in found):
            found.append(m)
    return found


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
    return any(_fuzzy_in(n, text_low) for n in names)


def _condition_found(condition: str, text_low: str) -> bool:
    lex = load_lexicon()
    names = {condition, *lex.condition_synonyms.get(condition, ())}
    return any(_fuzzy_in(n, text_low) for n in names)


def _compare_names(statement: str, evidence: str, source: str) -> FactCheck:
    evidence_low, source_low = evidence.lower(), source.lower()
    for drug in drug_mentions(statement):
        if _drug_found(drug, evidence_low) or _drug_found(drug, source_low):
            continue
        rivals = [d for d in drug_mentions(evidence) if not _drug_found(d, statement.lower())]
        if rivals:
            return FactCheck("conflict", f"named drug differs: {drug} vs {rivals[0]}")
        return FactCheck("missing", f"drug {drug} not mentioned in the source")
    for condition in condition_mentions(statement):
        if _condition_found(condition, evidence_low) or _condition_found(condition, source_low):
            continue
        rivals = [c for c in condition_mentions(evidence) if c not in statement.lower()]
        if rivals:
            return FactCheck("conflict", f"named condition differs: {condition} vs {rivals[0]}")
        return FactCheck("missing", f"condition {condition} not mentioned in the source")
    return AGREE


def compare_facts(
    statement: str,
    evidence_sentences: Sequence[str],
    source_sentences: Sequence[str] = (),
    *,
    focus: Sequence[str] | None = None,
) -> FactCheck:
    """Check a statement's specifics against the evidence around its best match.

    Args:
        statement: the statement being verified.
        evidence_sentences: the matched source sentences with their neighbours, in order.
        source_sentences: all sentences of the source chunk (drug, condition and side names,
            and values next to the same topic, may sit elsewhere in it).
        focus: the matched sentences themselves (plus the reply to a question), read for
            negation; default: ``evidence_sentences``.

    Returns:
        The first conflict found, else the first missing specific, else ``agree``.
    """
    evidence = " ".join(evidence_sentences)
    source = " ".join(source_sentences) or evidence
    checks = (
        _compare_numbers(statement, evidence, source_sentences),
        _compare_names(statement, evidence, source),
        _compare_laterality(statement, evidence, source),
        _compare_negation(statement, evidence_sentences if focus is None else focus),
    )
    for check in checks:
        if check.status == "conflict":
            return check
    for check in checks:
        if check.status == "missing":
            return check
    return AGREE
