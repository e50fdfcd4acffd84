"""Clinical mentions in free text: medications, conditions, allergies, habits, vitals, labs.

Rule-based and offline: the clinical lexicon (:mod:`core.lexicon`: generic and brand drug
names, drug classes, conditions with their synonyms and abbreviations, procedures and common
allergens) is matched on word n-grams. Each mention's assertion (affirmed, negated,
historical, hypothetical, family) is read by the assertion engine that grounding and the
claim audit read too (:mod:`core.assertion`): negation by its token reading, with each name
read as one word, the other categories by its ConText triggers, which also give allergies
and, for medications, the action (started, stopped, increased, decreased, continued). Dose,
unit, frequency and route are read after a drug name; vitals and labs carry their value and
unit.

The consistency checker builds a patient's timeline from these mentions, so the rules favour
precision: a mention that cannot be read with confidence is left out rather than guessed.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any, Literal

from core.assertion import (
    ACTION_CATEGORIES,
    BREAKS,
    NEGATION_CUE,
    PHRASE_TOKEN_RE,
    Assertion,
    NegationReading,
    Trigger,
    context_trigger,
    mention_assertion,
    phrase_key,
    reaching,
    read_negation,
)
from core.grounding.facts import DOSE_UNITS, quantities
from core.lexicon import load_lexicon
from core.text import split_sentences

MentionKind = Literal[
    "medication", "condition", "allergy", "smoking", "alcohol", "vital", "lab", "procedure"
]
Action = Literal["started", "stopped", "increased", "decreased", "continued"]

ANY_ALLERGEN = "any"
"""Name of the allergy mention produced by "NKDA" / "no known allergies" (always negated)."""


@dataclass(frozen=True, slots=True)
class Mention:
    """One clinical mention with its offsets in the analysed text.

    ``start``/``end`` delimit the matched words, ``sentence_start``/``sentence_end`` the
    sentence holding them (``sentence`` is that sentence's text): a sentence of
    :func:`core.text.split_sentences`, with the label that opens its line ("Allergies:").
    ``name`` is normalised: lower-case generic drug name, canonical condition name,
    ``tobacco``/``alcohol``, or the vital/lab name.
    """

    kind: MentionKind
    name: str
    text: str
    start: int
    end: int
    sentence_start: int
    sentence_end: int
    sentence: str
    assertion: Assertion = "affirmed"
    action: Action | None = None
    dose: str | None = None
    unit: str | None = None
    frequency: str | None = None
    route: str | None = None
    value: str | None = None
    laterality: Literal["left", "right", "bilateral"] | None = None
    chronic: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------- lexicon


@dataclass(frozen=True, slots=True)
class _Term:
    kind: str
    name: str
    assertion: Assertion | None = None  # intrinsic ("former smoker" -> historical)


_MAX_NGRAM = 8


@lru_cache(maxsize=1)
def _drug_class_index() -> dict[str, frozenset[str]]:
    index: dict[str, set[str]] = {}
    for cls, members in load_lexicon().drug_classes.items():
        for member in members:
            index.setdefault(member, set()).add(cls)
    return {k: frozenset(v) for k, v in index.items()}


def drug_classes(name: str) -> frozenset[str]:
    """Drug classes of a generic name (``warfarin`` -> ``{"anticoagulant"}``); empty if none."""
    return _drug_class_index().get(name, frozenset())


def drug_class_names() -> frozenset[str]:
    """All drug class names of the lexicon."""
    return frozenset(load_lexicon().drug_classes)


def is_drug_class(name: str) -> bool:
    """Whether ``name`` is a drug class of the lexicon (``statin``, ``anticoagulant``...)."""
    return name in load_lexicon().drug_classes


def condition_group(name: str) -> str | None:
    """The broader condition a specific one belongs to (type 2 diabetes -> diabetes mellitus)."""
    entry = load_lexicon().conditions.get(name)
    return entry.group if entry else None


def is_chronic(name: str) -> bool:
    """Whether a condition is chronic or a lasting history (a later denial is a conflict)."""
    entry = load_lexicon().conditions.get(name)
    return bool(entry and entry.chronic)


_VITALS: dict[str, tuple[str, ...]] = {
    "blood pressure": ("blood pressure", "bp"),
    "heart rate": ("heart rate", "hr", "pulse", "pulse rate"),
    "temperature": ("temperature", "temp"),
    "respiratory rate": ("respiratory rate", "rr", "resp rate"),
    "oxygen saturation": (
        "oxygen saturation",
        "o2 sat",
        "o2 sats",
        "o2 saturation",
        "spo2",
        "sao2",
        "pulse ox",
        "sats",
    ),
    "weight": ("weight", "wt", "body weight"),
    "height": ("height",),
    "bmi": ("bmi", "body mass index"),
}
_LABS: dict[str, tuple[str, ...]] = {
    "hemoglobin a1c": ("hemoglobin a1c", "hba1c", "a1c", "hgb a1c", "glycated hemoglobin"),
    "glucose": ("glucose", "blood sugar", "blood glucose", "fasting glucose", "sugar"),
    "creatinine": ("creatinine", "serum creatinine", "cr"),
    "egfr": ("egfr", "gfr"),
    "potassium": ("potassium",),
    "sodium": ("sodium",),
    "hemoglobin": ("hemoglobin", "hgb", "hb"),
    "hematocrit": ("hematocrit", "hct"),
    "wbc": ("wbc", "white blood cell count", "white count", "white blood cells"),
    "platelets": ("platelets", "platelet count", "plt"),
    "ldl": ("ldl", "ldl cholesterol", "ldl-c"),
    "hdl": ("hdl", "hdl cholesterol"),
    "total cholesterol": ("total cholesterol", "cholesterol"),
    "triglycerides": ("triglycerides",),
    "tsh": ("tsh",),
    "inr": ("inr",),
    "bnp": ("bnp", "nt-probnp"),
    "troponin": ("troponin",),
    "alt": ("alt",),
    "ast": ("ast",),
    "psa": ("psa",),
    "bun": ("bun",),
    "albumin": ("albumin",),
    "magnesium": ("magnesium",),
    "calcium": ("calcium",),
}
_HABITS: dict[str, tuple[str, Assertion | None]] = {}
for _phrase in (
    "smoker",
    "smokes",
    "smoking",
    "smoke",
    "smoked",
    "tobacco",
    "tobacco use",
    "cigarettes",
    "cigarette",
    "cigars",
    "vapes",
    "vaping",
    "pack-year",
    "pack-years",
    "pack years",
    "pack year",
    "current smoker",
    "active smoker",
    "currently smokes",
):
    _HABITS[_phrase] = ("smoking", None)
for _phrase in (
    "former smoker",
    "ex-smoker",
    "ex smoker",
    "quit smoking",
    "quit tobacco",
    "stopped smoking",
    "previous smoker",
    "past smoker",
    "former tobacco use",
):
    _HABITS[_phrase] = ("smoking", "historical")
for _phrase in (
    "never smoker",
    "never smoked",
    "non-smoker",
    "nonsmoker",
    "non smoker",
    "lifelong nonsmoker",
    "does not smoke",
    "doesn't smoke",
    "never used tobacco",
):
    _HABITS[_phrase] = ("smoking", "negated")
for _phrase in (
    "alcohol",
    "etoh",
    "drinks alcohol",
    "drinks",
    "drinking",
    "beer",
    "beers",
    "wine",
    "liquor",
    "alcohol use",
):
    _HABITS[_phrase] = ("alcohol", None)
for _phrase in ("quit drinking", "stopped drinking", "former drinker", "sober", "in recovery"):
    _HABITS[_phrase] = ("alcohol", "historical")
for _phrase in (
    "does not drink",
    "doesn't drink",
    "nondrinker",
    "non-drinker",
    "teetotal",
    "abstains from alcohol",
    "never drinks",
    "no alcohol use",
):
    _HABITS[_phrase] = ("alcohol", "negated")
_HABIT_NAME = {"smoking": "tobacco", "alcohol": "alcohol"}

_NO_ALLERGY = (
    "nkda",
    "nka",
    "no known drug allergies",
    "no known allergies",
    "no drug allergies",
    "no allergies",
    "no known drug allergy",
    "nkfa",
)


@lru_cache(maxsize=1)
def _term_tables() -> tuple[dict[str, _Term], dict[str, _Term], frozenset[str]]:
    """(case-insensitive n-gram table, case-sensitive abbreviation table, allergen keys)."""
    lex = load_lexicon()
    table: dict[str, _Term] = {}
    abbr: dict[str, _Term] = {}

    def add(phrase: str, term: _Term) -> None:
        table.setdefault(phrase_key(phrase), term)

    for name, entry in lex.conditions.items():
        add(name, _Term("condition", name))
        for syn in entry.synonyms:
            add(syn, _Term("condition", name))
        for ab in entry.abbreviations:
            abbr[" ".join(PHRASE_TOKEN_RE.findall(ab))] = _Term("condition", name)
    for phrase, (kind, assertion) in _HABITS.items():
        table[phrase_key(phrase)] = _Term(kind, _HABIT_NAME[kind], assertion)
    for name, syns in _VITALS.items():
        for syn in syns:
            add(syn, _Term("vital", name))
    for name, syns in _LABS.items():
        for syn in syns:
            add(syn, _Term("lab", name))
    for generic, brands in lex.drugs.items():
        add(generic, _Term("medication", generic))
        for brand in brands:
            add(brand, _Term("medication", generic))
    for cls, syns in lex.drug_class_synonyms.items():
        add(cls, _Term("medication", cls))
        for syn in syns:
            add(syn, _Term("medication", cls))
    for name, syns in lex.procedures.items():
        add(name, _Term("procedure", name))
        for syn in syns:
            add(syn, _Term("procedure", name))
    allergen_keys = set()
    for name, syns in lex.allergens.items():
        for phrase in (name, *syns):
            key = phrase_key(phrase)
            allergen_keys.add(key)
            add(phrase, _Term("allergen", name))
    for phrase in _NO_ALLERGY:
        table[phrase_key(phrase)] = _Term("allergy", ANY_ALLERGEN, "negated")
    return table, abbr, frozenset(allergen_keys)


# ------------------------------------------------------------------------- actions

# An action verb after one of these reads backwards ("metformin was stopped"); after a plural
# one it may cover a list of drugs before it ("lisinopril and metformin were stopped").
_AUX = frozenset({"was", "were", "is", "are", "been", "being", "got", "has", "have", "had"})
_AUX_PLURAL = frozenset({"were", "are", "have"})


# --------------------------------------------------------------------------- sentences


def _reading_spans(text: str) -> list[tuple[int, int]]:
    """Where the extractor reads: the sentences of :func:`core.text.split_sentences`, with the
    two things that splitter leaves out because they are not statements to check, yet carry
    what a mention means.

    - A label that opens a line ("Allergies: penicillin.", "Blood pressure: 128/72",
      "Maternal grandfather: pancreatic cancer.") makes the words after it an allergy, a vital
      sign or a family history: a sentence that opens its line takes back the text before it
      on that line when that text ends with a colon.
    - A line the splitter takes for a header is read as a sentence of its own, for a
      condition listed alone in capitals ("HIV", "COPD") looks like one.
    """
    spans: list[tuple[int, int]] = []
    previous_end = 0
    for sentence in split_sentences(text):
        start = sentence.start
        line_start = max(text.rfind("\n", 0, start) + 1, previous_end)
        before = text[line_start:start]
        if before.rstrip().endswith(":") and any(c.isalpha() for c in before):
            start = line_start + next(i for i, c in enumerate(before) if c.isalnum())
        spans.extend(_left_out(text, previous_end, start))
        spans.append((start, sentence.end))
        previous_end = sentence.end
    spans.extend(_left_out(text, previous_end, len(text)))
    return spans


def _left_out(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The lines of ``text[start:end]`` (left out by the splitter) that hold a word."""
    out = []
    pos = start
    for line in text[start:end].splitlines(keepends=True):
        body = line.strip()
        if any(c.isalpha() for c in body):
            a = pos + len(line) - len(line.lstrip())
            out.append((a, a + len(body)))
        pos += len(line)
    return out


# --------------------------------------------------------------------------- attributes

# Doses are read by the fact checks' quantities reader (spoken numbers, "1,000 mg",
# "5/325 mg"); units keep the names stored mentions have always had.
_DOSE_UNITS = DOSE_UNITS | {"%"}
_UNIT_NAMES = {"units": "unit"}
_FREQ_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"q\.?\s?(\d+)\s?h(?:rs?|ours?)?\b|every\s+(\d+)\s+hours?", "q{n}h"),
    (r"\bb\.?i\.?d\.?(?!\w)|twice\s+(?:a\s+|per\s+)?da(?:y|ily)|two\s+times\s+(?:a\s+)?day", "bid"),
    (r"\bt\.?i\.?d\.?(?!\w)|three\s+times\s+(?:a\s+|per\s+)?da(?:y|ily)", "tid"),
    (r"\bq\.?i\.?d\.?(?!\w)|four\s+times\s+(?:a\s+|per\s+)?da(?:y|ily)", "qid"),
    (r"\bq\.?h\.?s\.?(?!\w)|at\s+bedtime|nightly|every\s+night", "qhs"),
    (r"\bq\.?o\.?d\.?(?!\w)|every\s+other\s+day", "qod"),
    (r"\bq\.?a\.?m\.?(?!\w)|every\s+morning|in\s+the\s+morning", "qam"),
    (r"\bq\.?d\.?(?!\w)|\bdaily\b|once\s+(?:a\s+|per\s+)?day|once\s+daily|every\s+day", "qd"),
    (r"\bweekly\b|once\s+(?:a\s+|per\s+)?week|every\s+week", "weekly"),
    (r"\bmonthly\b|once\s+(?:a\s+|per\s+)?month|every\s+month", "monthly"),
)
_FREQ_RES = tuple((re.compile(p, re.IGNORECASE), norm) for p, norm in _FREQ_PATTERNS)
_PRN_RE = re.compile(r"\bp\.?r\.?n\.?(?!\w)|as\s+needed", re.IGNORECASE)
_ROUTES: tuple[tuple[str, str], ...] = (
    (r"\bp\.?o\.?(?!\w)|by\s+mouth|orally|oral\b", "po"),
    (r"\bi\.?v\.?(?!\w)|intravenous(?:ly)?", "iv"),
    (r"\bi\.?m\.?(?!\w)|intramuscular(?:ly)?", "im"),
    (r"\bs\.?c\.?(?!\w)|\bsq\b|subcut\w*|subcutaneous(?:ly)?", "sc"),
    (r"\bs\.?l\.?(?!\w)|sublingual(?:ly)?", "sl"),
    (r"inhaled|inhaler|nebuli[sz]ed|via\s+nebuli[sz]er", "inhaled"),
    (r"topical(?:ly)?", "topical"),
    (r"transdermal|patch\b", "transdermal"),
    (r"\bp\.?r\.?(?!\w|n)|rectal(?:ly)?", "pr"),
    (r"intranasal|nasal\s+spray", "nasal"),
)
_ROUTE_RES = tuple((re.compile(p, re.IGNORECASE), norm) for p, norm in _ROUTES)
_VALUE_RE = re.compile(
    r"^[\s:=,-]*(?:(?:of|is|was|were|at|remains|remained|measured|reading|now|today|"
    r"level|value|checked)\s+)*[\s:=~]*(?:about\s+|approximately\s+|~\s*)?"
    r"(\d{2,3}\s*/\s*\d{2,3}|\d+(?:\.\d+)?)\s*"
    r"(mm\s?hg|bpm|beats\s+per\s+minute|breaths(?:\s*/\s*min|\s+per\s+minute)?|/min|"
    r"°\s?[fc]|degrees(?:\s+[fc]\w*)?|kg/m2|kg/m²|kg|lbs?|pounds|%|mg/dl|mmol/l|g/dl|"
    r"meq/l|ml/min(?:/1\.73\s?m2)?|ng/ml|ng/l|pg/ml|miu/l|u/l|k/ul|x?\s?10\^?9/l|cm|in\b|[fc]\b)?",
    re.IGNORECASE,
)
_HABIT_VALUE_RE = re.compile(
    r"(\d+(?:\.\d+)?)\s*(pack[- ]?years?|packs?\s+(?:per|a)\s+day|ppd|cigarettes\s+(?:per|a)\s+day|"
    r"drinks?\s+(?:per|a)\s+(?:day|week|night)|beers?\s+(?:per|a)\s+(?:day|week|night)|"
    r"glass(?:es)?\s+of\s+wine\s+(?:per|a)\s+(?:day|week|night))",
    re.IGNORECASE,
)
_LATERALITY_RE = re.compile(
    r"\b(left|right|bilateral|both|l|r)(?:[- ]sided)?\b(?![- ]?(?:handed|now|away))",
    re.IGNORECASE,
)
_LATERALITY_NORM = {
    "left": "left",
    "l": "left",
    "right": "right",
    "r": "right",
    "bilateral": "bilateral",
    "both": "bilateral",
}


def _first(patterns: tuple[tuple[re.Pattern[str], str], ...], text: str) -> str | None:
    best: tuple[int, str] | None = None
    for pattern, norm in patterns:
        m = pattern.search(text)
        if m and (best is None or m.start() < best[0]):
            n = next((g for g in m.groups() if g), None) if m.groups() else None
            best = (m.start(), norm.replace("{n}", n or ""))
    return best[1] if best else None


# --------------------------------------------------------------------------- extractor


@dataclass(frozen=True, slots=True)
class _Hit:
    term: _Term
    tok_start: int
    tok_end: int
    start: int
    end: int


class ClinicalExtractor:
    """Finds clinical mentions with assertion and action; lexicon tables are built once."""

    def __init__(self) -> None:
        self._terms, self._abbr, self._allergen_keys = _term_tables()

    def extract(self, text: str) -> list[Mention]:
        """All mentions in ``text``, in order of appearance."""
        mentions: list[Mention] = []
        for s_start, s_end in _reading_spans(text):
            mentions.extend(self._sentence(text, s_start, s_end))
        return mentions

    def _sentence(self, text: str, s_start: int, s_end: int) -> list[Mention]:
        sentence = text[s_start:s_end]
        toks = [
            (m.group(0), s_start + m.start(), s_start + m.end())
            for m in PHRASE_TOKEN_RE.finditer(sentence)
        ]
        lower = [t[0].lower() for t in toks]
        hits: list[_Hit] = []
        triggers: list[Trigger] = []
        i = 0
        n = len(toks)
        while i < n:
            matched = False
            for size in range(min(_MAX_NGRAM, n - i), 0, -1):
                key = " ".join(lower[i : i + size])
                exact = " ".join(t[0] for t in toks[i : i + size])
                term = self._terms.get(key) or self._abbr.get(exact)
                trig = context_trigger(key)
                if term is not None:
                    hits.append(_Hit(term, i, i + size, toks[i][1], toks[i + size - 1][2]))
                    i += size
                    matched = True
                    break
                if trig is not None:
                    cat, direction = trig
                    aux = lower[i - 1] if i > 0 and cat in ACTION_CATEGORIES else ""
                    triggers.append(
                        Trigger(
                            cat,
                            direction != "backward",
                            direction != "forward",
                            i,
                            i + size,
                            aux in _AUX,
                            aux in _AUX_PLURAL,
                        )
                    )
                    i += size
                    matched = True
                    break
            if not matched:
                i += 1
        if not hits:
            return []
        negation = read_negation(sentence, [(h.start - s_start, h.end - s_start) for h in hits])
        # an action right after a negation cue is none: "is not taking metformin"
        cues = [(s_start + a, s_start + b) for a, b in negation.cues]
        triggers = [
            t
            for t in triggers
            if t.category not in ACTION_CATEGORIES
            or t.start == 0
            or not any(a <= toks[t.start - 1][1] < b for a, b in cues)
        ]
        for a, _ in negation.cues:
            # the cues of the token reading end the other categories' scopes
            at = next((k for k, t in enumerate(toks) if t[1] >= s_start + a), n)
            triggers.append(Trigger(NEGATION_CUE, True, False, at, at + 1))
        return self._resolve(text, sentence, s_start, s_end, hits, triggers, negation)

    def _resolve(
        self,
        text: str,
        sentence: str,
        s_start: int,
        s_end: int,
        hits: list[_Hit],
        triggers: list[Trigger],
        negation: NegationReading,
    ) -> list[Mention]:
        out: list[Mention] = []
        for idx, hit in enumerate(hits):
            term = hit.term
            assertion = term.assertion or mention_assertion(
                hit.tok_start,
                hit.tok_end,
                triggers,
                negated=negation.negated(hit.start - s_start, hit.end - s_start),
            )
            kind = term.kind
            in_allergy = _reaching(hit, triggers, {"allergy"}) is not None
            if kind == "allergen" and not in_allergy:
                continue
            if kind in ("medication", "allergen") and in_allergy:
                kind = "allergy"
            next_start = hits[idx + 1].start if idx + 1 < len(hits) else s_end
            tail = text[hit.end : min(next_start, s_end, hit.end + 80)]
            tail = re.split(r";|\bbut\b|\bhowever\b", tail, maxsplit=1)[0]
            fields: dict[str, Any] = {}
            if kind == "medication":
                nolonger = _reaching(hit, triggers, {"no_longer"})
                action = self._action(hit, hits, triggers)
                if nolonger is not None:
                    action, assertion = "stopped", "affirmed"
                elif action == "stopped" and assertion == "negated":
                    assertion = "affirmed"
                fields["action"] = action
                dose = next(
                    (q for q in quantities(tail, ordinals=False) if q.unit in _DOSE_UNITS), None
                )
                if dose is not None and dose.unit is not None:
                    fields["dose"] = dose.value
                    fields["unit"] = _UNIT_NAMES.get(dose.unit, dose.unit)
                freq = _first(_FREQ_RES, tail)
                prn = _PRN_RE.search(tail)
                if prn:
                    freq = f"{freq} prn" if freq else "prn"
                fields["frequency"] = freq
                fields["route"] = _first(_ROUTE_RES, tail)
            elif kind in ("vital", "lab"):
                m = _VALUE_RE.match(tail)
                if not m:
                    continue
                fields["value"] = re.sub(r"\s+", "", m.group(1))
                if m.group(2):
                    fields["unit"] = re.sub(r"\s+", " ", m.group(2).lower())
            elif kind in ("smoking", "alcohol"):
                m = _HABIT_VALUE_RE.search(sentence)
                if m:
                    fields["value"] = f"{m.group(1)} {m.group(2).lower()}"
                if (
                    kind == "smoking"
                    and assertion == "affirmed"
                    and (_reaching(hit, triggers, {"stopped"}) is not None)
                ):
                    assertion = "historical"
            elif kind in ("condition", "procedure"):
                if kind == "condition" and _reaching(hit, triggers, {"no_longer"}):
                    assertion = "negated"
                before = text[max(s_start, hit.start - 24) : hit.start]
                lat = list(_LATERALITY_RE.finditer(before))
                after = _LATERALITY_RE.match(text[hit.end : hit.end + 20].lstrip(" ,("))
                chosen = lat[-1] if lat else after
                if chosen and (
                    chosen.group(1).lower() not in ("l", "r") or chosen.group(1).isupper()
                ):
                    fields["laterality"] = _LATERALITY_NORM[chosen.group(1).lower()]
                if kind == "condition":
                    fields["chronic"] = is_chronic(term.name)
            if kind == "allergy" and assertion == "historical":
                assertion = "affirmed"  # "history of penicillin allergy" is a current allergy
            out.append(
                Mention(
                    kind=kind,  # type: ignore[arg-type]
                    name=term.name,
                    text=text[hit.start : hit.end],
                    start=hit.start,
                    end=hit.end,
                    sentence_start=s_start,
                    sentence_end=s_end,
                    sentence=sentence,
                    assertion=assertion,
                    **fields,
                )
            )
        return _dedupe_habits(out)

    @staticmethod
    def _action(hit: _Hit, hits: list[_Hit], triggers: list[Trigger]) -> Action | None:
        """The action verb governing a drug: the nearest one before it ("stopped metformin"),
        else one after it ("metformin was stopped"; "metformin and aspirin were stopped";
        "aspirin continued." at the end of the clause)."""
        actions = [t for t in triggers if t.category in ACTION_CATEGORIES]
        breaks = [t for t in triggers if t.category in BREAKS]

        def clear(lo: int, hi: int) -> bool:
            return not any(lo <= b.start < hi for b in breaks)

        def hits_between(lo: int, hi: int) -> bool:
            return any(lo <= h.tok_start < hi for h in hits if h is not hit)

        preceding = [t for t in actions if t.end <= hit.tok_start and not t.post]
        if preceding and clear(preceding[-1].end, hit.tok_start):
            return preceding[-1].category  # type: ignore[return-value]
        following = [t for t in actions if t.start >= hit.tok_end]
        if not following or not clear(hit.tok_end, following[0].start):
            return None
        trig = following[0]
        crosses = hits_between(hit.tok_end, trig.start)
        if trig.post and (trig.plural or not crosses):
            return trig.category  # type: ignore[return-value]
        last_in_clause = not hits_between(trig.end, 10**9)
        if not trig.post and not crosses and last_in_clause:
            return trig.category  # type: ignore[return-value]
        return None


def _reaching(hit: _Hit, triggers: list[Trigger], categories: set[str]) -> Trigger | None:
    return reaching(hit.tok_start, hit.tok_end, triggers, categories)


def _dedupe_habits(mentions: list[Mention]) -> list[Mention]:
    """One smoking and one alcohol mention per sentence ("former smoker, 20 pack-years")."""
    best: dict[str, Mention] = {}
    for m in mentions:
        if m.kind in ("smoking", "alcohol"):
            kept = best.get(m.kind)
            if kept is None or (kept.assertion == "affirmed" and m.assertion != "affirmed"):
                best[m.kind] = m
    return [m for m in mentions if m.kind not in ("smoking", "alcohol") or best[m.kind] is m]


@lru_cache(maxsize=1)
def default_extractor() -> ClinicalExtractor:
    """The process-wide extractor (the lexicon is parsed once)."""
    return ClinicalExtractor()


def extract_mentions(text: str) -> list[Mention]:
    """Clinical mentions in ``text`` (see :class:`ClinicalExtractor`)."""
    return default_extractor().extract(text)
