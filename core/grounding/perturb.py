"""Seeded hallucinations of a supported statement, for training and measuring the verifier.

A statement that its source supports is turned into one that the source does not support, in
the ways language models go wrong when they summarise a visit: a specific changed (a number,
a unit of time, a side, a drug, a diagnosis, a test, a specialty, a body site, an attribute
such as "mild" or "improved": the same topic, another fact), a negation flipped, a hedge
turned into a certainty, the patient's sex or a relative swapped, whose fact it is (the
patient's said of a relative) or what kind (a drug taken said to be an allergy, or the other
way round; what once was so said to be so now; a listed fact put under another label, as
"Medications: penicillin" of an allergy), a fact of one sentence carried into another
(a merge), or something added that was never said (an order, a test, a referral, a family
history, a duration, an age, a symptom, a social-history fact). Every inserted word is
checked against the source, so that what is generated is not said there after all.

Used by the training script (``benchmarks/train_verifier.py``) on training splits and by the
benchmarks on test splits, with the same code and a fixed seed; and by the verifier, which
reads a statement against its opposite (:func:`negated`).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# --- word tables -------------------------------------------------------------------------

_SIDES = {"left": "right", "right": "left", "bilateral": "left", "bilaterally": "on the left"}
_SEX = {
    "he": "she",
    "she": "he",
    "him": "her",
    "his": "her",
    "her": "his",
    "himself": "herself",
    "herself": "himself",
    "male": "female",
    "female": "male",
    "man": "woman",
    "woman": "man",
    "boy": "girl",
    "girl": "boy",
    "gentleman": "lady",
    "lady": "gentleman",
    "mr.": "ms.",
    "ms.": "mr.",
    "mrs.": "mr.",
}
_RELATIVES = (
    "mother",
    "father",
    "sister",
    "brother",
    "grandmother",
    "grandfather",
    "aunt",
    "uncle",
    "son",
    "daughter",
)
# Attributes a summary gets the wrong way round; each maps to its opposites.
_ATTRIBUTES = {
    "increased": ("decreased",),
    "decreased": ("increased",),
    "increase": ("decrease",),
    "decrease": ("increase",),
    "improved": ("worsened",),
    "improving": ("worsening",),
    "worsened": ("improved",),
    "worsening": ("improving",),
    "worse": ("better",),
    "better": ("worse",),
    "mild": ("severe", "moderate"),
    "moderate": ("mild", "severe"),
    "severe": ("mild",),
    "acute": ("chronic",),
    "chronic": ("acute",),
    "sharp": ("dull",),
    "dull": ("sharp",),
    "constant": ("intermittent",),
    "intermittent": ("constant",),
    "normal": ("abnormal", "elevated"),
    "abnormal": ("normal",),
    "elevated": ("low", "normal"),
    "high": ("low",),
    "low": ("high",),
    "positive": ("negative",),
    "negative": ("positive",),
    "stable": ("unstable", "worsening"),
    "upper": ("lower",),
    "lower": ("upper",),
    "anterior": ("posterior",),
    "posterior": ("anterior",),
    "started": ("stopped",),
    "stopped": ("started",),
    "continue": ("discontinue", "stop"),
    "discontinue": ("continue",),
    "before": ("after",),
    "after": ("before",),
    "morning": ("evening", "night"),
    "night": ("morning",),
    "evening": ("morning",),
    "daily": ("weekly", "twice a day"),
    "weekly": ("daily", "monthly"),
    "married": ("divorced", "widowed", "single"),
    "divorced": ("married",),
    "widowed": ("married",),
    "single": ("married",),
    "alone": ("with her family",),
    "retired": ("working full time",),
    "smoker": ("nonsmoker",),
    "nonsmoker": ("smoker",),
    "never": ("previously",),
    "occasionally": ("daily", "heavily"),
    "socially": ("daily", "heavily"),
    "first": ("second", "third"),
    "new": ("recurrent",),
    "recurrent": ("new",),
    "resolved": ("ongoing",),
    "ongoing": ("resolved",),
    "benign": ("malignant",),
    "walking": ("running", "lifting"),
    "sitting": ("standing",),
    "standing": ("sitting",),
    "cardiology": ("neurology",),
    "neurology": ("cardiology",),
}
_TIME_UNITS = {
    "day": ("week", "month"),
    "days": ("weeks", "months"),
    "week": ("month", "year"),
    "weeks": ("months", "years"),
    "month": ("year", "week"),
    "months": ("years", "weeks"),
    "year": ("month", "decade"),
    "years": ("months", "decades"),
    "hour": ("day",),
    "hours": ("days",),
    "minutes": ("hours",),
}
_NUMBER_WORDS = {
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
    "twelve": 12,
    "fifteen": 15,
    "twenty": 20,
    "thirty": 30,
}
DRUGS = (
    "metformin 500 mg twice daily",
    "lisinopril 10 mg daily",
    "atorvastatin 40 mg at night",
    "amlodipine 5 mg daily",
    "levothyroxine 50 mcg daily",
    "omeprazole 20 mg daily",
    "sertraline 50 mg daily",
    "gabapentin 300 mg three times a day",
    "prednisone 20 mg daily",
    "warfarin 5 mg daily",
    "apixaban 5 mg twice daily",
    "insulin glargine 20 units at night",
    "hydrochlorothiazide 25 mg daily",
    "metoprolol 25 mg twice daily",
    "albuterol as needed",
    "ibuprofen 600 mg as needed",
    "tramadol 50 mg as needed",
    "furosemide 40 mg daily",
    "montelukast 10 mg at night",
    "escitalopram 10 mg daily",
    "amoxicillin 500 mg three times a day",
    "azithromycin for five days",
    "cyclobenzaprine 10 mg at night",
    "losartan 50 mg daily",
    "clopidogrel 75 mg daily",
    "tamsulosin 0.4 mg daily",
    "fluticasone nasal spray",
    "oxycodone 5 mg as needed",
    "methotrexate 15 mg weekly",
    "allopurinol 100 mg daily",
)
CONDITIONS = (
    "type 2 diabetes",
    "hypertension",
    "hyperlipidemia",
    "asthma",
    "COPD",
    "atrial fibrillation",
    "congestive heart failure",
    "hypothyroidism",
    "depression",
    "anxiety",
    "osteoarthritis",
    "rheumatoid arthritis",
    "chronic kidney disease",
    "GERD",
    "migraines",
    "sleep apnea",
    "gout",
    "epilepsy",
    "breast cancer",
    "colon cancer",
    "coronary artery disease",
    "a prior stroke",
    "a myocardial infarction",
    "psoriasis",
    "glaucoma",
    "anemia",
    "osteoporosis",
    "pneumonia",
    "a urinary tract infection",
    "kidney stones",
)
SYMPTOMS = (
    "nausea",
    "vomiting",
    "dizziness",
    "fever",
    "chills",
    "chest pain",
    "shortness of breath",
    "night sweats",
    "weight loss",
    "palpitations",
    "blurred vision",
    "numbness in the hands",
    "diarrhea",
    "constipation",
    "headaches",
    "fatigue",
    "a cough",
    "a rash",
    "joint pain",
    "back pain",
    "swelling in the legs",
    "abdominal pain",
    "blood in the stool",
    "difficulty swallowing",
    "tingling in the feet",
)
BODY_PARTS = (
    "knee",
    "shoulder",
    "lumbar spine",
    "cervical spine",
    "hip",
    "ankle",
    "wrist",
    "abdomen",
    "chest",
    "head",
    "pelvis",
    "foot",
    "elbow",
)
TESTS = (
    "an MRI of the {part}",
    "a CT scan of the {part}",
    "an X-ray of the {part}",
    "an ultrasound of the {part}",
    "an echocardiogram",
    "a stress test",
    "a colonoscopy",
    "an EKG",
    "a complete blood count",
    "a lipid panel",
    "a hemoglobin A1c",
    "thyroid function tests",
    "a urinalysis",
    "a urine culture",
    "a sleep study",
    "a biopsy",
    "a chest X-ray",
    "a metabolic panel",
    "a pregnancy test",
    "allergy testing",
)
REFERRALS = (
    "cardiology",
    "neurology",
    "physical therapy",
    "dermatology",
    "orthopedics",
    "gastroenterology",
    "endocrinology",
    "psychiatry",
    "pulmonology",
    "a nutritionist",
    "urology",
    "rheumatology",
    "an allergist",
    "ENT",
    "a pain specialist",
)
# Named specifics a summary swaps for another of the same sort (an MRI where the visit
# ordered an X-ray, cardiology for orthopedics, the ankle for the knee): each tuple is one
# sort, and a name is only replaced by another of its tuple. Longer names come first where
# one contains another ("CT scan" before "CT").
_SWAPS: dict[str, tuple[tuple[str, ...], ...]] = {
    "test": (
        (
            "MRI",
            "CT scan",
            "X-ray",
            "ultrasound",
            "bone scan",
            "DEXA scan",
            "PET scan",
        ),
        (
            "echocardiogram",
            "EKG",
            "stress test",
            "Holter monitor",
            "pulmonary function tests",
            "sleep study",
            "nerve conduction study",
            "EEG",
        ),
        ("colonoscopy", "endoscopy", "cystoscopy", "bronchoscopy"),
        (
            "complete blood count",
            "lipid panel",
            "hemoglobin A1c",
            "metabolic panel",
            "thyroid panel",
            "urinalysis",
            "urine culture",
            "liver function tests",
            "vitamin D level",
            "PSA",
        ),
    ),
    "specialty": (
        (
            "cardiology",
            "neurology",
            "orthopedics",
            "dermatology",
            "gastroenterology",
            "endocrinology",
            "psychiatry",
            "pulmonology",
            "urology",
            "rheumatology",
            "nephrology",
            "oncology",
            "ophthalmology",
            "podiatry",
            "physical therapy",
            "occupational therapy",
        ),
        (
            "cardiologist",
            "neurologist",
            "orthopedic surgeon",
            "dermatologist",
            "gastroenterologist",
            "endocrinologist",
            "psychiatrist",
            "pulmonologist",
            "urologist",
            "rheumatologist",
            "nephrologist",
            "oncologist",
            "ophthalmologist",
            "podiatrist",
            "physical therapist",
        ),
    ),
    "site": (
        (
            "knee",
            "shoulder",
            "hip",
            "ankle",
            "wrist",
            "elbow",
            "foot",
            "thumb",
            "heel",
            "calf",
            "thigh",
            "forearm",
            "jaw",
            "toe",
        ),
        (
            "knees",
            "shoulders",
            "hips",
            "ankles",
            "wrists",
            "elbows",
            "feet",
            "thumbs",
            "heels",
            "toes",
        ),
    ),
}
# Social-history facts as a note writes them, and as the patient would say them.
SOCIAL_SAID = {
    "smokes a pack of cigarettes a day": "I smoke a pack of cigarettes a day",
    "drinks alcohol daily": "I drink alcohol every day",
    "uses marijuana": "I use marijuana",
    "works as a truck driver": "I work as a truck driver",
    "works as a teacher": "I work as a teacher",
    "works night shifts as a nurse": "I work night shifts as a nurse",
    "lives alone": "I live alone",
    "lives with her daughter": "I live with my daughter",
    "is divorced": "I'm divorced",
    "quit smoking ten years ago": "I quit smoking ten years ago",
    "exercises five days a week": "I exercise five days a week",
    "drinks four cups of coffee a day": "I drink four cups of coffee a day",
    "recently traveled abroad": "I recently traveled abroad",
    "has two children": "I have two children",
}
SOCIAL = tuple(SOCIAL_SAID)
_HEDGES = re.compile(
    r"\b(?:possibl[ey]|probabl[ey]|likely|suspected|questionable|presumed|presumptive|"
    r"may (?=have|be)|might (?=have|be)|could (?=have|be)|concern for|rule out|r/o|"
    r"consistent with|suggestive of|cannot exclude|differential includes)\s*",
    re.I,
)
_NEGATIONS = (
    (r"\bdenies(?: any)?\b", "reports"),
    (r"\bdenied(?: any)?\b", "reported"),
    (r"\bnegative for\b", "positive for"),
    (r"\bpositive for\b", "negative for"),
    (r"\bdoes not have\b", "has"),
    (r"\bdoes not\b", "does"),
    (r"\bdid not\b", "did"),
    (r"\bdoesn't\b", "does"),
    (r"\bdidn't\b", "did"),
    (r"\bis not\b", "is"),
    (r"\bwas not\b", "was"),
    (r"\bhas not\b", "has"),
    (r"\bhas never\b", "has"),
    (r"\bno (?:known )?", "a "),
    (r"\bwithout\b", "with"),
    (r"\bunremarkable\b", "abnormal"),
    (r"\breports\b", "denies"),
    (r"\breported\b", "denied"),
    (r"\bcomplains of\b", "denies"),
    (r"\bendorses\b", "denies"),
    (r"\bhas (?:a|an)\b", "has no"),
    (r"\bis taking\b", "is not taking"),
    (r"\bwas given\b", "was not given"),
    (r"\bwill\b", "will not"),
    (r"\bhas been\b", "has not been"),
    (r"\bis\b", "is not"),
    (r"\bwas\b", "was not"),
)
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z'.-]*")
_NUM_RE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.]*\d)")
_FAMILY_RE = re.compile(
    r"\b(?:his|her|the patient's|patient's)\s+(" + "|".join(_RELATIVES) + r")\b", re.I
)
_PERSON_RE = re.compile(r"\b(?:the patient|he|she)\b", re.I)

KINDS = (
    "number",
    "time_unit",
    "negation",
    "laterality",
    "attribute",
    "drug",
    "diagnosis",
    "test",
    "specialty",
    "site",
    "hedge",
    "sex",
    "relative",
    "family_to_patient",
    "merge",
    "add_order",
    "add_referral",
    "add_family_history",
    "add_duration",
    "add_age",
    "add_symptom",
    "add_social",
    "add_drug",
    "patient_to_relative",
    "drug_allergy",
    "past_current",
    "label_swap",
)


@dataclass(frozen=True, slots=True)
class Hallucination:
    """A statement the source does not support, made from one it does (``kind``: how).

    ``said`` is, for an addition, lines of a visit that would each say what was added, in
    different words (so that training can also show the same sentence where the visit does
    support it; training draws on all but the last, which measurement keeps for itself);
    empty for the other kinds."""

    kind: str
    text: str
    original: str
    said: tuple[str, ...] = ()


# A maker returns the new statement, or (for an addition) the statement and what a visit
# would say to support it, or None when the kind does not apply.
_Made = str | tuple[str, tuple[str, ...]] | None


def _absent(words: str, source_low: str) -> bool:
    """Whether no content word of ``words`` is said in the source (so adding it invents)."""
    content = [w for w in re.findall(r"[a-z0-9]+", words.lower()) if len(w) > 3]
    return bool(content) and all(w not in source_low for w in content)


def _sub_at(text: str, m: re.Match[str], new: str) -> str:
    old = m.group(0)
    if old[:1].isupper():
        new = new[:1].upper() + new[1:]
    return text[: m.start()] + new + text[m.end() :]


def _number(s: str, source: str, rng: random.Random, others: Sequence[str]) -> str | None:
    found = list(_NUM_RE.finditer(s))
    words = [
        m for m in re.finditer(r"\b(" + "|".join(_NUMBER_WORDS) + r")\b", s, re.I) if not found
    ]
    if found:
        m = rng.choice(found)
        value = float(m.group(1))
        options = [value * 2, value + 1, value + 5, value - 1, value * 3, value / 2]
        options = [v for v in options if v > 0 and v != value]
        rng.shuffle(options)
        for new in options:
            txt = str(int(new)) if new.is_integer() and "." not in m.group(1) else f"{new:.1f}"
            if not re.search(rf"(?<![\d.]){re.escape(txt)}(?![\d.])", source):
                return s[: m.start(1)] + txt + s[m.end(1) :]
        return None
    if words:
        m = rng.choice(words)
        value = _NUMBER_WORDS[m.group(1).lower()]
        names = [w for w, v in _NUMBER_WORDS.items() if v != value and w not in source.lower()]
        return _sub_at(s, m, rng.choice(names)) if names else None
    return None


def _swap_word(
    s: str, source: str, rng: random.Random, table: dict[str, tuple[str, ...]] | dict[str, str]
) -> str | None:
    low = source.lower()
    hits = [m for m in _WORD_RE.finditer(s) if m.group(0).lower() in table]
    rng.shuffle(hits)
    for m in hits:
        options = table[m.group(0).lower()]
        choices = [options] if isinstance(options, str) else list(options)
        choices = [c for c in choices if not re.search(rf"\b{re.escape(c)}\b", low)]
        if choices:
            return _sub_at(s, m, rng.choice(choices))
    return None


def _time_unit(s: str, source: str, rng: random.Random, others: Sequence[str]) -> str | None:
    if not re.search(r"\d|\b(?:a|an|one|two|three|few|several|couple)\b", s, re.I):
        return None
    return _swap_word(s, source, rng, _TIME_UNITS)


# Flips by a copula or an auxiliary ("is" -> "is not", "will" -> "will not"): they turn any
# statement round, where the others flip a word that says something is present or absent
_GENERIC_NEGATIONS = frozenset(
    {r"\bhas (?:a|an)\b", r"\bwill\b", r"\bhas been\b", r"\bis\b", r"\bwas\b"}
)


def negation_cue(statement: str, *, generic: bool = True) -> tuple[int, int, str] | None:
    """Where :func:`negated` turns the statement round: the span of the words it replaces
    and what it writes there ("She has no fever." -> (8, 10, "a")); None when no pattern
    of the negation table applies or the statement would not change. Without ``generic``,
    only a word that says something is present or absent is flipped ("denies", "no",
    "negative for", "is taking"), not a copula or an auxiliary ("is", "will")."""
    for pattern, repl in _NEGATIONS:
        if not generic and pattern in _GENERIC_NEGATIONS:
            continue
        m = re.search(pattern, statement, re.I)
        if m is None:
            continue
        old, end = m.group(0), m.end()
        if old[:1].isupper():
            repl = repl[:1].upper() + repl[1:]
        tail = old[len(old.rstrip()) :]
        if tail and repl.endswith(tail):  # "no " -> "a ": the words, not the space after
            end -= len(tail)
            repl = repl[: len(repl) - len(tail)]
        if statement[m.start() : end] == repl:
            return None
        return m.start(), end, repl
    return None


def negated(statement: str, *, generic: bool = True) -> str | None:
    """The statement said the other way round, by the first pattern of the negation table
    that applies ("denies chest pain" -> "reports chest pain", "no fever" -> "a fever",
    "will start" -> "will not start"); None when none applies (see :func:`negation_cue`).
    The generator's negation flip, and the verifier's contrast: does the evidence bear out
    a statement or its opposite?"""
    return turned_round(statement, negation_cue(statement, generic=generic))


def turned_round(statement: str, cue: tuple[int, int, str] | None) -> str | None:
    """The statement with its :func:`negation_cue` applied (None for no cue)."""
    if cue is None:
        return None
    start, end, repl = cue
    out = (statement[:start] + repl + statement[end:]).replace("  ", " ")
    return out if out != statement else None


def opposite_as_written(statement: str, cue: tuple[int, int, str] | None) -> str | None:
    """The statement turned round at ``cue`` as a reader would write it, to quote in a
    reason: a removed "no" leaves no article ("There is no swelling." -> "There is
    swelling.", "No known drug allergies." -> "Known drug allergies.") and an "any" that a
    removed negation leaves behind, next to it or one verb on, goes ("does not have any
    chest pain" -> "has chest pain", "is not taking any" -> "is taking"). What the model
    reads is :func:`turned_round`, the generator's own form."""
    if cue is None:
        return None
    start, end, repl = cue
    old = statement[start:end]
    if re.fullmatch(r"no(?: known)?", old.strip(), re.I):
        head = old.strip()[3:]
        repl = head[:1].upper() + head[1:] if old[:1].isupper() else head
    tail = statement[end:]
    if re.search(r"\bnot\b|n't\b|\bnever\b", old, re.I):
        tail = re.sub(r"^(\s+(?:[a-z]+\s+)?)any\s+", r"\1", tail, flags=re.I)
    out = re.sub(r"\s{2,}", " ", statement[:start] + repl + tail).strip()
    if out and statement[:1].isupper():
        out = out[:1].upper() + out[1:]
    return out if out != statement else None


def _negation(s: str, source: str, rng: random.Random, others: Sequence[str]) -> str | None:
    return negated(s)


def _laterality(s: str, source: str, rng: random.Random, others: Sequence[str]) -> str | None:
    hits = [m for m in _WORD_RE.finditer(s) if m.group(0).lower() in _SIDES]
    if not hits:
        return None
    m = rng.choice(hits)
    return _sub_at(s, m, _SIDES[m.group(0).lower()])


def _attribute(s: str, source: str, rng: random.Random, others: Sequence[str]) -> str | None:
    return _swap_word(s, source, rng, _ATTRIBUTES)


def _sex(s: str, source: str, rng: random.Random, others: Sequence[str]) -> str | None:
    if not any(m.group(0).lower() in _SEX for m in _WORD_RE.finditer(s)):
        return None

    def swap(m: re.Match[str]) -> str:
        new = _SEX.get(m.group(0).lower())
        if new is None:
            return m.group(0)
        return new[:1].upper() + new[1:] if m.group(0)[:1].isupper() else new

    return _WORD_RE.sub(swap, s)


def _relative(s: str, source: str, rng: random.Random, others: Sequence[str]) -> str | None:
    low = source.lower()
    hits = list(re.finditer(r"\b(" + "|".join(_RELATIVES) + r")\b", s, re.I))
    if not hits:
        return None
    m = rng.choice(hits)
    options = [r for r in _RELATIVES if r != m.group(1).lower() and r not in low]
    return _sub_at(s, m, rng.choice(options)) if options else None


def _family_to_patient(
    s: str, source: str, rng: random.Random, others: Sequence[str]
) -> str | None:
    m = _FAMILY_RE.search(s)
    if m is None:
        return None
    return _sub_at(s, m, "the patient")


def _pick_name(
    s: str, source: str, rng: random.Random, names: Sequence[str], pool: Sequence[str]
) -> str | None:
    low_s, low = s.lower(), source.lower()
    found = [n for n in names if re.search(rf"\b{re.escape(n)}\b", low_s)]
    if not found:
        return None
    target = rng.choice(found)
    choices = [p for p in pool if _absent(p.split(" ")[0], low) and p.lower() not in low_s]
    if not choices:
        return None
    new = rng.choice(choices).split(" ")[0] if pool is DRUGS else rng.choice(choices)
    return re.sub(rf"\b{re.escape(target)}\b", new, s, count=1, flags=re.I)


def _drug(s: str, source: str, rng: random.Random, others: Sequence[str]) -> str | None:
    from core.grounding.vocab import drug_names

    words = {w for w in re.findall(r"[a-z]+", s.lower()) if w in drug_names()}
    return _pick_name(s, source, rng, sorted(words), DRUGS)


def _diagnosis(s: str, source: str, rng: random.Random, others: Sequence[str]) -> str | None:
    from core.grounding.vocab import conditions_in

    names = sorted(conditions_in(s.lower()))
    names += [c.lower() for c in CONDITIONS if c.lower() in s.lower()]
    return _pick_name(s, source, rng, names, CONDITIONS)


def _swap_name(sort: str) -> Callable[[str, str, random.Random, Sequence[str]], str | None]:
    """A maker that replaces one named specific of ``sort`` (a test, a specialty, a body
    site) with another of the same group that neither the statement nor the source names."""

    def make(s: str, source: str, rng: random.Random, others: Sequence[str]) -> str | None:
        low_s, low = s.lower(), source.lower()

        def named(name: str, text: str) -> re.Match[str] | None:
            return re.search(rf"(?<![\w-]){re.escape(name.lower())}(?![\w-])", text)

        hits: list[tuple[int, int, tuple[str, ...]]] = []
        for group in _SWAPS[sort]:
            for name in group:
                m = named(name, low_s)
                if m and not any(a < m.end() and m.start() < b for a, b, _ in hits):
                    hits.append((m.start(), m.end(), group))
        if not hits:
            return None
        start, end, group = rng.choice(hits)
        choices = [n for n in group if not named(n, low) and not named(n, low_s)]
        if not choices:
            return None
        new = rng.choice(choices)
        if start == 0:
            new = new[:1].upper() + new[1:]
        head = s[:start]
        article = re.search(r"\b(an?) $", head, re.I)
        if article:  # "an MRI" -> "a CT scan", "a CT scan" -> "an X-ray"
            first = new.split()[0]
            vowel = first[:1].lower() in "aeiou" or (
                first.isupper() and first[:1] in "AEFHILMNORSX"
            )
            word = "an" if vowel else "a"
            if article.group(1)[:1].isupper():
                word = word.capitalize()
            head = head[: article.start(1)] + word + " "
        return head + new + s[end:]

    return make


def _hedge(s: str, source: str, rng: random.Random, others: Sequence[str]) -> str | None:
    m = _HEDGES.search(s)
    if m is None:
        return None
    out = s[: m.start()] + s[m.end() :]
    if m.start() == 0 and out:
        out = out[:1].upper() + out[1:]
    out = re.sub(r"\b(have|be) ", lambda g: "has " if g.group(1) == "have" else "is ", out, count=1)
    return out if out.strip() and out != s else None


def _merge(s: str, source: str, rng: random.Random, others: Sequence[str]) -> str | None:
    """A specific of another sentence of the same note carried into this one: a number, a
    side or a drug that the visit does mention, but not of this."""
    mine = list(_NUM_RE.finditer(s))
    pool = [m.group(1) for o in others for m in _NUM_RE.finditer(o)]
    pool = [v for v in pool if v not in {m.group(1) for m in mine}]
    if mine and pool:
        m = rng.choice(mine)
        return s[: m.start(1)] + rng.choice(pool) + s[m.end(1) :]
    from core.grounding.vocab import drug_names

    names = drug_names()
    mine_drugs = [w for w in re.findall(r"[a-z]+", s.lower()) if w in names]
    other_drugs = {w for o in others for w in re.findall(r"[a-z]+", o.lower()) if w in names}
    other_drugs -= set(mine_drugs)
    if mine_drugs and other_drugs:
        target = rng.choice(mine_drugs)
        new = rng.choice(sorted(other_drugs))
        return re.sub(rf"\b{re.escape(target)}\b", new, s, count=1, flags=re.I)
    return None


def _end(s: str) -> tuple[str, str]:
    """The statement without its final punctuation, and that punctuation."""
    m = re.search(r"[.!?;:]*\s*$", s)
    cut = m.start() if m else len(s)
    return s[:cut], s[cut:] or "."


def _append(s: str, clause: str) -> str:
    body, end = _end(s)
    return f"{body}{clause}{end}"


def _add_order(s: str, source: str, rng: random.Random, others: Sequence[str]) -> _Made:
    low = source.lower()
    tests = [t.format(part=rng.choice(BODY_PARTS)) for t in TESTS]
    tests = [t for t in tests if _absent(t, low)]
    if not tests:
        return None
    test = rng.choice(tests)
    form = rng.choice((", and {t} was ordered", "; {t} was ordered", ", and {t} was normal"))
    said = (
        (
            f"Doctor: {test[:1].upper()}{test[1:]} came back normal.",
            f"Doctor: Your results from {test} were normal.",
            f"Doctor: Good news, {test} showed nothing abnormal.",
        )
        if form.endswith("normal")
        else (
            f"Doctor: I'd like to get {test} done.",
            f"Doctor: We'll order {test} today.",
            f"Doctor: I'm going to send you for {test}.",
        )
    )
    return _append(s, form.format(t=test)), said


def _add_referral(s: str, source: str, rng: random.Random, others: Sequence[str]) -> _Made:
    refs = [r for r in REFERRALS if _absent(r, source.lower())]
    if not refs:
        return None
    form = rng.choice((", and the patient was referred to {r}", "; a referral to {r} was placed"))
    ref = rng.choice(refs)
    said = (
        f"Doctor: I'm going to refer you to {ref}.",
        f"Doctor: I'll put in a referral to {ref}.",
        f"Doctor: I think you should be seen by {ref}, I'll send the referral.",
    )
    return _append(s, form.format(r=ref)), said


def _add_family(s: str, source: str, rng: random.Random, others: Sequence[str]) -> _Made:
    low = source.lower()
    conds = [c for c in CONDITIONS if _absent(c, low)]
    if not conds:
        return None
    who = rng.choice([r for r in _RELATIVES if r not in low] or ["mother"])
    cond = rng.choice(conds)
    said = (
        f"Patient: My {who} had {cond}.",
        f"Patient: There's {cond} in my family, my {who} had it.",
        f"Doctor: Any family history? Patient: Yes, my {who} had {cond}.",
    )
    return _append(s, f", and there is a family history of {cond} in the {who}"), said


def _add_duration(s: str, source: str, rng: random.Random, others: Sequence[str]) -> _Made:
    if _NUM_RE.search(s) or re.search(r"\b(?:day|week|month|year)s?\b", s, re.I):
        return None
    unit = rng.choice(("days", "weeks", "months", "years"))
    n = rng.choice((2, 3, 4, 6, 8, 10))
    if re.search(rf"\b{n} {unit}\b", source, re.I):
        return None
    said = (
        f"Patient: It's been going on for about {n} {unit} now.",
        f"Patient: This started {n} {unit} ago.",
        f"Patient: I'd say {n} {unit}, more or less.",
    )
    return _append(s, rng.choice((f" for the past {n} {unit}", f" for {n} {unit}"))), said


def _add_age(s: str, source: str, rng: random.Random, others: Sequence[str]) -> _Made:
    m = _PERSON_RE.search(s)
    if m is None or re.search(r"\byears? old\b|-year-old", s, re.I):
        return None
    age = rng.randint(19, 88)
    if str(age) in source:
        return None
    who = "patient" if m.group(0).lower() == "the patient" else rng.choice(("man", "woman"))
    said = (
        f"Patient: I'm {age} years old.",
        f"Patient: I just turned {age}.",
        f"Doctor: And you're {age} now? Patient: That's right.",
    )
    return _sub_at(s, m, f"the {age}-year-old {who}"), said


def _add_symptom(s: str, source: str, rng: random.Random, others: Sequence[str]) -> _Made:
    low = source.lower()
    symptoms = [x for x in SYMPTOMS if _absent(x, low)]
    if not symptoms or not re.search(r"\b(?:reports?|complain|pain|ache|feel|notic)", s, re.I):
        return None
    forms = (f" and {rng.choice(symptoms)}", f", with {rng.choice(symptoms)}")
    clause = rng.choice(forms)
    symptom = clause.removeprefix(" and ").removeprefix(", with ")
    bare = re.sub(r"^an? ", "", symptom)
    said = (
        f"Patient: I've also had {symptom}.",
        f"Patient: And there's been some {bare} too.",
        f"Patient: I've been getting {bare} as well.",
    )
    return _append(s, clause), said


def _add_social(s: str, source: str, rng: random.Random, others: Sequence[str]) -> _Made:
    facts = [f for f in SOCIAL if _absent(f, source.lower())]
    if not facts or not _PERSON_RE.search(s):
        return None
    who = rng.choice(("the patient", "he" if " he " in s else "she"))
    fact = rng.choice(facts)
    first = SOCIAL_SAID[fact]
    said = (f"Patient: {first}.", f"Patient: Oh, and {first}.", f"Patient: Yes, {first}.")
    return _append(s, f", and {who} {fact}"), said


def _add_drug(s: str, source: str, rng: random.Random, others: Sequence[str]) -> _Made:
    drugs = [d for d in DRUGS if _absent(d.split(" ")[0], source.lower())]
    if not drugs:
        return None
    form = rng.choice((", and {d} was started", "; the patient also takes {d}"))
    drug = rng.choice(drugs)
    said = (
        (
            f"Doctor: Let's start you on {drug}.",
            f"Doctor: I'm going to prescribe {drug}.",
            f"Doctor: I'd like you to begin {drug}.",
        )
        if "started" in form
        else (
            f"Patient: I also take {drug}.",
            f"Patient: I'm on {drug} as well.",
            f"Patient: Oh, and I take {drug}.",
        )
    )
    return _append(s, form.format(d=drug)), said


# --- whose fact, and what kind of fact ---------------------------------------------------

_SUBJECT_RE = re.compile(r"^(\W*)(he|she|the patient|patient)\b(?!')", re.I)
# A subject that only reports what the patient says ("She reports ...") is left as it is.
_REPORTS_RE = re.compile(
    r"\s+(?:also\s+)?(?:reports?|states?|says?|notes?|denies|denied|endorses?|complains?|"
    r"describes?|admits?|mentions?|indicates?|was asked|is asked)\b",
    re.I,
)
_POSSESSIVE = {"he": "His", "she": "Her", "the patient": "The patient's", "patient": "Patient's"}
_ALLERGY_RE = re.compile(r"\ballerg(?:ic|y|ies)\b", re.I)
_REACTION_RE = re.compile(r"allerg|rash|hives|reaction|intoleran|swell|anaphyla", re.I)
# Past and present the wrong way round: (pattern, replacement) pairs, tried in turn.
_TENSES = (
    (r"\bformer (smoker|drinker|user)\b", r"current \1"),
    (r"\bex-smoker\b", "current smoker"),
    (r"\bcurrent (smoker|drinker|user)\b", r"former \1"),
    (r"\bused to be\b", "is still"),
    (r"\bused to (smoke|drink|work|live|run|take|use|play|exercise)\b", r"still \1s"),
    (r"\bquit\b", "started"),
    (r"\bno longer\b", "still"),
    (r"\bstill\b", "no longer"),
    (r"\b(?:formerly|previously)\b", "currently"),
    (r"\b(is|are) currently (\w+ing)\b", r"\1 no longer \2"),  # (not "is previously taking")
    (r"\bis currently\b", "was previously"),
    (r"\bare currently\b", "were previously"),
    (r"\bcurrently\b", "previously"),
    (r"\bin the past\b", "now"),
)


def _subject(s: str) -> tuple[re.Match[str] | None, str]:
    """The patient as the subject that opens ``s`` (or None) and how to name them."""
    m = _SUBJECT_RE.match(s)
    if m is None:
        return None, "The patient"
    word = m.group(2).lower()
    return m, {"he": "He", "she": "She"}.get(word, "The patient")


def _patient_to_relative(s: str, source: str, rng: random.Random, others: Sequence[str]) -> _Made:
    """The patient's fact said of a relative that the visit never names ("He has diabetes."
    -> "His father has diabetes.")."""
    m, _ = _subject(s)
    if m is None or _REPORTS_RE.match(s, m.end()):
        return None
    low = source.lower()
    options = [r for r in _RELATIVES if not re.search(rf"\b{r}s?\b", low)]
    if not options:
        return None
    who = rng.choice(options)
    owner = _POSSESSIVE[m.group(2).lower()]
    if not m.group(2)[:1].isupper():
        owner = owner[:1].lower() + owner[1:]
    rest = s[m.end() :]
    fact = _end(rest)[0]
    said = (
        f"Patient: My {who}{fact}.",
        f"Patient: Actually it's my {who} who{fact}, not me." if fact.startswith(" ") else "",
        f"Doctor: So your {who}{fact}? Patient: Yes, my {who}.",
    )
    return f"{m.group(1)}{owner} {who}{rest}", tuple(x for x in said if x)


def _lines_naming(source: str, words: Sequence[str]) -> list[str]:
    """The source's lines (or sentences) that name any of ``words`` (lower case)."""
    return [ln for ln in re.split(r"[\n.?!]", source) if any(w in ln.lower() for w in words)]


def _drug_allergy(s: str, source: str, rng: random.Random, others: Sequence[str]) -> _Made:
    """A drug the patient takes turned into one they are allergic to, or the other way
    round ("He takes amoxicillin." <-> "He is allergic to amoxicillin.")."""
    from core.grounding.vocab import drug_names

    names = drug_names()
    low_s = s.lower()
    drugs = [
        (m.start(), w)
        for m in re.finditer(r"[a-z]+", low_s)
        if (w := m.group(0)) in names or w == "penicillin"  # a class the dictionary lacks
    ]
    if not drugs:
        return None
    _, subject = _subject(s)
    allergy = _ALLERGY_RE.search(s)
    if allergy is not None:  # the first drug named after the allergy
        after = [d for at, d in drugs if at > allergy.start()]
        if not after:
            return None
        drug = after[0]
        taken = (
            f"{subject} takes {drug}.",
            (
                f"Patient: I take {drug} every day.",
                f"Patient: I'm on {drug}.",
                f"Patient: I've been taking {drug} for a while now.",
            ),
        )
        started = (
            f"{subject} was started on {drug}.",
            (
                f"Doctor: Let's start you on {drug}.",
                f"Doctor: I'll prescribe {drug}.",
                f"Doctor: I'm going to put you on {drug}.",
            ),
        )
        return rng.choice((taken, started))
    drug = rng.choice(drugs)[1]
    lines = _lines_naming(source, (drug,))
    if any(_REACTION_RE.search(ln) for ln in lines):
        return None  # the visit may say this drug does not agree with the patient
    form = rng.choice(("{w} is allergic to {d}.", "{w} has an allergy to {d}."))
    said = (
        f"Patient: I'm allergic to {drug}, it gives me hives.",
        f"Patient: I can't take {drug}, I had a reaction to it.",
        f"Doctor: Any allergies? Patient: Yes, to {drug}.",
    )
    return form.format(w=subject, d=drug), said


def _past_current(s: str, source: str, rng: random.Random, others: Sequence[str]) -> str | None:
    """What was once the case said to be the case now, or the other way round ("a former
    smoker" -> "a current smoker", "quit drinking" -> "started drinking")."""
    low = source.lower()
    for pattern, new in _TENSES:
        m = re.search(pattern, s, re.I)
        if m is None:
            continue
        out = m.expand(new)
        if re.search(rf"\b{re.escape(out.lower())}\b", low):
            continue
        if m.group(0)[:1].isupper():
            out = out[:1].upper() + out[1:]
        return s[: m.start()] + out + s[m.end() :]
    return None


# A listed fact under the label of another kind it is often mistaken for, and what a visit
# says to put it there ({f}: the fact).
_LABEL_SWAPS = {
    "Allergies": "Medications",
    "Medications": "Allergies",
    "Past medical history": "Family history",
    "Family history": "Past medical history",
}
_LABEL_SAID = {
    "Allergies": (
        "Patient: I'm allergic to {f}.",
        "Patient: {F} gives me a rash, I can't take it.",
        "Doctor: Any allergies? Patient: Yes, {f}.",
    ),
    "Medications": (
        "Patient: I take {f}.",
        "Doctor: What are you taking? Patient: Just {f}.",
        "Patient: I'm on {f} right now.",
    ),
    "Family history": (
        "Patient: My mother had {f}.",
        "Patient: {F} runs in my family, my father had it.",
        "Doctor: Anything in the family? Patient: My brother has {f}.",
    ),
    "Past medical history": (
        "Patient: I have {f}.",
        "Patient: I was diagnosed with {f} a few years ago.",
        "Doctor: Any medical problems? Patient: {F}.",
    ),
}
_KIND_WORDS_RE = re.compile(
    r"\b(?:allerg\w*|takes?|taking|took|on|prescribed|mother|father|brother|sister|family|"
    r"parents?|son|daughter|he|she|patient|history|denies|no|none|unknown|rash|hives|"
    r"reactions?|swelling|anaphylaxis|intoleran\w*)\b",
    re.I,
)
# a relative as a visit names one ("my mom", "my parents", "runs in the family")
_KIN_RE = re.compile(
    r"\b(?:" + "|".join(_RELATIVES) + r"|mom|dad|siblings?|parents?|family|grand\w+|cousins?)s?\b",
    re.I,
)
_LABEL_FACT_WORDS = 6  # a listed fact, not a sentence that says its own kind


def _label_swap(s: str, source: str, rng: random.Random, others: Sequence[str]) -> _Made:
    """A listed fact under the label of another kind ("Allergies: penicillin" ->
    "Medications: penicillin"; past medical <-> family history). Only a short fact that
    does not say its own kind, and only where the visit does not tie it to the new one (a
    drug to a reaction, a condition to a relative)."""
    from core.text import split_label

    label, fact = split_label(s)
    new = _LABEL_SWAPS.get(label or "")
    body = fact.strip().rstrip(".").strip()
    if new is None or not body or len(body.split()) > _LABEL_FACT_WORDS:
        return None
    if _KIND_WORDS_RE.search(body):
        return None
    # the visit's lines that name the fact: none may tie it to the new kind (a drug to a
    # reaction, a condition to a relative), nor name it without the old kind's tie (so
    # that the patient may have it too)
    tie = _REACTION_RE if new in ("Allergies", "Medications") else _KIN_RE
    words = re.findall(r"[a-z]{4,}", body.lower())
    lines = _lines_naming(source, words)
    ties = [bool(tie.search(ln)) for ln in lines]
    if any(ties) if new in ("Allergies", "Family history") else not all(ties):
        return None
    f = body[:1].lower() + body[1:] if not body[:2].isupper() else body
    said = tuple(line.format(f=f, F=f[:1].upper() + f[1:]) for line in _LABEL_SAID[new])
    return f"{new}: {fact}", said


_MAKERS: dict[str, Callable[[str, str, random.Random, Sequence[str]], _Made]] = {
    "number": _number,
    "time_unit": _time_unit,
    "negation": _negation,
    "laterality": _laterality,
    "attribute": _attribute,
    "drug": _drug,
    "diagnosis": _diagnosis,
    "test": _swap_name("test"),
    "specialty": _swap_name("specialty"),
    "site": _swap_name("site"),
    "hedge": _hedge,
    "sex": _sex,
    "relative": _relative,
    "family_to_patient": _family_to_patient,
    "merge": _merge,
    "add_order": _add_order,
    "add_referral": _add_referral,
    "add_family_history": _add_family,
    "add_duration": _add_duration,
    "add_age": _add_age,
    "add_symptom": _add_symptom,
    "add_social": _add_social,
    "add_drug": _add_drug,
    "patient_to_relative": _patient_to_relative,
    "drug_allergy": _drug_allergy,
    "past_current": _past_current,
    "label_swap": _label_swap,
}
assert tuple(_MAKERS) == KINDS


def hallucinate(
    statement: str,
    source: str,
    rng: random.Random,
    *,
    others: Sequence[str] = (),
    kinds: Sequence[str] = KINDS,
) -> list[Hallucination]:
    """Every hallucination of ``statement`` that the kinds can make (at most one per kind).

    Args:
        statement: a statement the ``source`` supports.
        source: the text it was checked against (inserted words must not occur in it).
        rng: the seeded generator that makes the choices.
        others: the other statements of the same note (what ``merge`` draws on).
        kinds: which kinds to try, in order.
    """
    out: list[Hallucination] = []
    for kind in kinds:
        made = _MAKERS[kind](statement, source, rng, others)
        new, said = made if isinstance(made, tuple) else (made, ())
        if new and new.strip() and new.strip().lower() != statement.strip().lower():
            out.append(Hallucination(kind, new, statement, said))
    return out
