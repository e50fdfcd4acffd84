"""Kind and clinical severity of a flagged statement, from a documented table.

A statement the grounding verifier did not ground (``unsupported`` or ``contradicted``) gets a
**kind**, what is wrong with it, and a **severity**, what it would cost a patient if a
clinician acted on it. Reviewers work the queue by severity first, then by the detector's
risk (how sure the detector is).

The kind is read from what the detectors already produced, never guessed from the page:

1. the learned decision's signals: a conflict of one family of fact checks
   (``conflict_numbers``, ``conflict_laterality``, ``conflict_negation``, ``conflict_drugs``,
   ``conflict_conditions``; ``conflict_names``, of both, in statements stored before the two
   were told apart);
2. the verifier's reason ("dose differs: ...", "negation differs: ...", "laterality ...",
   "X is not in the source, which names Y", "drug X not mentioned in the source", ...);
3. when neither names a family (a generic "the sources do not bear it out"), the fact checks of
   :func:`core.grounding.facts.compare_facts` run once more on the statement and the evidence the
   verifier stored: a specific the evidence contradicts, or a drug or condition it does not
   name, gives the kind;
4. otherwise the statement is ``invented``: nothing in the sources bears it out and no specific
   conflicts.

A negation is the kind only where the learned verifier found the statement's opposite the
better borne out (its ``opposite`` signal above 0), as the verifier contradicts on negation
only there; statements stored without that signal keep the fact checks' word.

A statement that names an allergy is of kind ``allergy`` whatever the family; an ``invented``
statement that a consistency finding ties to an earlier answer is of kind ``earlier_answer``.

The severity comes from :data:`SEVERITY_TABLE`: the kind and the most serious clinical subject
the statement names (read by :mod:`core.clinical`: a high-alert drug such as an anticoagulant,
insulin or an opioid; another drug; an allergy; a vital sign or lab value; a procedure; a
serious condition; another condition; social history; nothing clinical). A consistency finding
on the same statement raises it to that finding's own severity when higher. See
``docs/severity.md`` for the table in prose.

Pure: plain data in, a frozen result out; no storage, no settings, no Streamlit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, get_args

from core.clinical import drug_classes, extract_mentions
from core.lexicon import load_lexicon

Kind = Literal[
    "number", "negation", "side", "drug", "condition", "allergy", "invented", "earlier_answer"
]
KINDS: tuple[Kind, ...] = get_args(Kind)
Severity = Literal["critical", "high", "medium", "low"]
SEVERITIES: tuple[Severity, ...] = get_args(Severity)
UNCLASSIFIED = "unclassified"
"""How a statement stored before kinds existed (or whose text was purged) is shown."""

SEVERITY_RANK: dict[str, int] = {"critical": 4, "high": 3, "medium": 2, "low": 1}
"""Sort rank of each severity (higher = look first); unclassified ranks 0."""

KIND_LABELS: dict[str, str] = {
    "number": "dose / number",
    "negation": "negation",
    "side": "side (laterality)",
    "drug": "drug",
    "condition": "condition",
    "allergy": "allergy",
    "invented": "invented content",
    "earlier_answer": "contradicts an earlier answer",
    UNCLASSIFIED: "unclassified",
}

Subject = Literal[
    "allergy",
    "high_alert_drug",
    "drug",
    "vital",
    "procedure",
    "serious_condition",
    "condition",
    "social",
    "other",
]

# High-alert medications (after the ISMP list): an error with these is the likeliest to harm.
# Classes as the clinical lexicon (core/lexicon.py) names them; single drugs by generic name.
HIGH_ALERT_CLASSES: frozenset[str] = frozenset(
    {"anticoagulant", "insulin", "opioid", "benzodiazepine", "antiplatelet"}
)
HIGH_ALERT_DRUGS: frozenset[str] = frozenset(
    {
        "digoxin",
        "amiodarone",
        "methotrexate",
        "lithium",
        "potassium chloride",
        "tacrolimus",
        "cyclosporine",
        "phenytoin",
        "carbamazepine",
        "valproate",
        "glipizide",
        "glyburide",
        "glimepiride",
        "heparin",
        "enoxaparin",
        "warfarin",
        "nitroglycerin",
        "propofol",
        "midazolam",
        "magnesium sulfate",
    }
)
# Conditions whose false presence or absence changes urgent care.
SERIOUS_CONDITIONS: frozenset[str] = frozenset(
    {
        "myocardial infarction",
        "pulmonary embolism",
        "deep vein thrombosis",
        "stroke",
        "sepsis",
        "cancer",
        "breast cancer",
        "lung cancer",
        "colorectal cancer",
        "prostate cancer",
        "congestive heart failure",
        "atrial fibrillation",
        "acute kidney injury",
        "end-stage renal disease",
        "hyperkalemia",
        "hypoglycemia",
        "chest pain",
        "shortness of breath",
        "epilepsy",
        "hiv infection",
    }
)


@dataclass(frozen=True, slots=True)
class Rule:
    """One row of the severity table: a flag of ``kind`` about ``subject`` is ``severity``."""

    kind: Kind
    subject: Subject | Literal["any"]
    severity: Severity
    why: str


SEVERITY_TABLE: tuple[Rule, ...] = (
    # allergies: a denied allergy (or one said both ways) can be given again
    Rule("allergy", "any", "critical", "an allergy denied or said the other way round"),
    # doses and numbers
    Rule("number", "high_alert_drug", "critical", "a wrong dose of a high-alert drug"),
    Rule("number", "drug", "high", "a wrong dose or frequency of a drug"),
    Rule("number", "vital", "high", "a wrong vital sign or lab value"),
    Rule("number", "any", "medium", "a wrong number (duration, count, age, ...)"),
    # negation: something present said absent, or the reverse
    Rule("negation", "high_alert_drug", "critical", "a high-alert drug said taken or not taken"),
    Rule("negation", "drug", "high", "a drug said taken when it is not, or the reverse"),
    Rule("negation", "serious_condition", "high", "a serious condition or symptom denied"),
    Rule("negation", "condition", "high", "a condition or symptom said present or denied"),
    Rule("negation", "any", "medium", "something said present or absent the other way round"),
    # laterality
    Rule("side", "procedure", "high", "the wrong side of a procedure (wrong-site risk)"),
    Rule("side", "any", "medium", "the wrong side of a finding or symptom"),
    # drug names
    Rule("drug", "high_alert_drug", "critical", "a high-alert drug the sources do not name"),
    Rule("drug", "any", "high", "a drug the sources do not name"),
    # condition names
    Rule("condition", "serious_condition", "high", "a serious condition the sources do not name"),
    Rule("condition", "any", "medium", "a condition the sources do not name"),
    # contradiction with an earlier answer about the same patient
    Rule(
        "earlier_answer", "high_alert_drug", "critical", "a high-alert drug changed between answers"
    ),
    Rule("earlier_answer", "drug", "high", "a drug changed between answers"),
    Rule("earlier_answer", "any", "medium", "disagrees with an earlier answer"),
    # invented content: nothing in the sources bears it out, no specific conflicts
    Rule("invented", "high_alert_drug", "high", "an invented statement about a high-alert drug"),
    Rule("invented", "drug", "medium", "an invented statement about a drug"),
    Rule("invented", "vital", "medium", "an invented vital sign or lab value"),
    Rule("invented", "procedure", "medium", "an invented procedure"),
    Rule("invented", "serious_condition", "medium", "an invented serious condition"),
    Rule("invented", "condition", "medium", "an invented condition or symptom"),
    Rule("invented", "any", "low", "an invented detail (social history, background, wording)"),
)

# Which subject counts first when a statement names several (most serious first).
_SUBJECT_ORDER: tuple[Subject, ...] = (
    "allergy",
    "high_alert_drug",
    "drug",
    "vital",
    "procedure",
    "serious_condition",
    "condition",
    "social",
    "other",
)


@dataclass(frozen=True, slots=True)
class EarlierConflict:
    """A consistency finding of the same answer: the sentence of this answer that disagrees
    with an earlier answer, and the severity the consistency checker gave it."""

    sentence: str
    severity: str | None = None


@dataclass(frozen=True, slots=True)
class Classification:
    """Kind and severity of one flagged statement.

    ``subject`` is the clinical subject the severity was read for; ``basis`` says where the
    kind came from (``signals``, ``reason``, ``facts``, ``allergy``, ``earlier_answer`` or
    ``none``); ``why`` is the table row's explanation. None of them holds patient text.
    """

    kind: Kind
    severity: Severity
    subject: Subject
    basis: str
    why: str


def rule_for(kind: str, subject: str) -> Rule:
    """The table row for a kind and subject: the exact row, else the kind's ``any`` row."""
    for rule in SEVERITY_TABLE:
        if rule.kind == kind and rule.subject == subject:
            return rule
    # a more serious subject than the table lists for this kind falls back to its neighbours:
    # "high_alert_drug" -> "drug", "serious_condition" -> "condition"
    fallback = {"high_alert_drug": "drug", "serious_condition": "condition"}.get(subject)
    if fallback is not None:
        return rule_for(kind, fallback)
    for rule in SEVERITY_TABLE:
        if rule.kind == kind and rule.subject == "any":
            return rule
    raise KeyError(kind)


def higher(a: str | None, b: str | None) -> str | None:
    """The more severe of two severities (None ranks lowest)."""
    return a if SEVERITY_RANK.get(a or "", 0) >= SEVERITY_RANK.get(b or "", 0) else b


# --------------------------------------------------------------------------- subjects


@lru_cache(maxsize=1)
def _brand_generics() -> dict[str, str]:
    return {k.lower(): v.lower() for k, v in load_lexicon().brand_generics().items()}


def _is_high_alert(generic: str) -> bool:
    name = generic.lower()
    if name in HIGH_ALERT_DRUGS or drug_classes(name) & HIGH_ALERT_CLASSES:
        return True
    return any(part in HIGH_ALERT_DRUGS for part in name.split("/"))


def subjects(statement: str) -> frozenset[Subject]:
    """The clinical subjects a statement names (see :data:`SEVERITY_TABLE`)."""
    found: set[Subject] = set()
    for m in extract_mentions(statement):
        if m.kind == "allergy":
            found.add("allergy")
        elif m.kind == "medication":
            found.add("high_alert_drug" if _is_high_alert(m.name) else "drug")
        elif m.kind in ("vital", "lab"):
            found.add("vital")
        elif m.kind == "procedure":
            found.add("procedure")
        elif m.kind == "condition":
            found.add("serious_condition" if m.name in SERIOUS_CONDITIONS else "condition")
        elif m.kind in ("smoking", "alcohol"):
            found.add("social")
    # drugs of the larger grounding dictionary (7,000 names) the clinical lexicon lacks
    if not found & {"drug", "high_alert_drug"}:
        from core.grounding.facts import drug_mentions

        brands = _brand_generics()
        for name in drug_mentions(statement):
            generic = brands.get(name.lower(), name.lower())
            found.add("high_alert_drug" if _is_high_alert(generic) else "drug")
    if re.search(r"\ballerg", statement, re.I):
        found.add("allergy")
    return frozenset(found)


def main_subject(found: Iterable[str], *, prefer: Sequence[Subject] = ()) -> Subject:
    """The subject the severity is read for: one of ``prefer`` when named, else the most
    serious one named, else ``other``."""
    names = set(found)
    for s in prefer:
        if s in names:
            return s
    for s in _SUBJECT_ORDER:
        if s in names:
            return s
    return "other"


# --------------------------------------------------------------------------- kinds

_FAMILY_KIND = {
    "numbers": "number",
    "laterality": "side",
    "negation": "negation",
    "drugs": "drug",
    "conditions": "condition",
}
_NUMBER_RE = re.compile(r"\b(dose|number|vital sign|score|range|value)s? differ", re.I)
_VITAL_RE = re.compile(r"\bvital sign", re.I)
_DOSE_RE = re.compile(r"\bdose", re.I)
_NEGATION_RE = re.compile(r"\bnegation\b|\bdenie[sd]\b|\bnegates\b|\bsay the opposite\b", re.I)
_SIDE_RE = re.compile(r"\blaterality\b|\bside\b", re.I)
_NAME_RE = re.compile(r"\bis not in the (?:source|note)|\bnot mentioned in the source", re.I)
_DRUG_REASON_RE = re.compile(r"^\s*drug\b", re.I)
_CONDITION_REASON_RE = re.compile(r"^\s*condition\b", re.I)
_GENERIC_RE = re.compile(r"do not bear it out|no source text", re.I)


def _signal_family(signals: Iterable[tuple[str, float]]) -> str | None:
    for name, value in signals:
        if name.startswith("conflict_") and value >= 0.5:
            return name.removeprefix("conflict_")
    return None


def _negation_disputed(signals: Sequence[tuple[str, float]]) -> bool:
    """Whether the learned verifier's ``opposite`` signal does not uphold a negation read by
    hand (:func:`core.grounding.verifier.negation_upheld`, the verifier's own rule).
    Statements stored without that signal keep the fact checks' word."""
    from core.grounding.verifier import negation_upheld

    opposite = dict(signals).get("opposite")
    return opposite is not None and not negation_upheld(opposite)


def _reason_family(reason: str | None) -> str | None:
    if not reason or _GENERIC_RE.search(reason):
        return None
    if _NEGATION_RE.search(reason):
        return "negation"
    if _SIDE_RE.search(reason):
        return "laterality"
    if _NAME_RE.search(reason):
        return "names"
    if _NUMBER_RE.search(reason):
        return "numbers"
    return None


def _facts_family(statement: str, evidence: str | None) -> str | None:
    if not evidence or not statement:
        return None
    from core.grounding.facts import NAME_FAMILIES, compare_facts

    check = compare_facts(statement, [evidence])
    # a conflicting specific names the kind; a missing one only when it is a drug or condition
    # name (a number or side the evidence lacks is what invented content is made of)
    if check.status == "conflict" or (check.status == "missing" and check.family in NAME_FAMILIES):
        return check.family
    return None


def _name_kind(statement: str, reason: str | None, evidence: str | None) -> Kind:
    """Drug or condition, for a flag of a name (by its reason, or stored before drugs and
    conditions were two families): what the reason or the statement names."""
    if reason and _DRUG_REASON_RE.search(reason):
        return "drug"
    if reason and _CONDITION_REASON_RE.search(reason):
        return "condition"
    found = subjects(statement)
    if found & {"drug", "high_alert_drug"}:
        evidence_found = subjects(evidence) if evidence else frozenset()
        if not (found & {"serious_condition", "condition"}) or not (
            evidence_found & {"drug", "high_alert_drug"}
        ):
            return "drug"
    return "condition"


def _same_sentence(statement: str, sentence: str) -> bool:
    a = " ".join(re.findall(r"\w+", statement.lower()))
    b = " ".join(re.findall(r"\w+", sentence.lower()))
    return bool(a and b) and (a in b or b in a)


def classify(
    *,
    status: str,
    statement: str | None,
    reason: str | None = None,
    evidence: str | None = None,
    signals: Iterable[tuple[str, float]] = (),
    earlier: Sequence[EarlierConflict] = (),
) -> Classification | None:
    """Kind and severity of one statement; None for a grounded statement or one without text.

    Args:
        status: the verifier's status (``grounded``, ``unsupported``, ``contradicted``).
        statement: the statement's text (None when it was never stored or was purged).
        reason: the verifier's reason.
        evidence: the closest evidence the verifier found (``supporting_evidence``).
        signals: the learned decision's signals (``StatementGrounding.signals``).
        earlier: the answer's consistency findings against earlier answers.
    """
    if status == "grounded" or not statement:
        return None
    named = tuple(signals)
    basis = "signals"
    family = _signal_family(named)
    if family is None:
        basis, family = "reason", _reason_family(reason)
    if family is None:
        basis, family = "facts", _facts_family(statement, evidence)
    if family == "negation" and _negation_disputed(named):
        basis, family = "none", None
    kind: Kind
    if family == "names":
        kind = _name_kind(statement, reason, evidence)
    elif family in _FAMILY_KIND:
        kind = _FAMILY_KIND[family]  # type: ignore[assignment]
    else:
        basis, kind = "none", "invented"
    found = subjects(statement)
    if "allergy" in found:
        basis, kind = "allergy", "allergy"
    matched = [e for e in earlier if _same_sentence(statement, e.sentence)]
    if kind == "invented" and matched:
        basis, kind = "earlier_answer", "earlier_answer"
    prefer: tuple[Subject, ...] = ()
    if kind == "number" and reason:
        if _VITAL_RE.search(reason):
            prefer = ("vital",)
        elif _DOSE_RE.search(reason):
            prefer = ("high_alert_drug", "drug")
    elif kind == "side":
        prefer = ("procedure",)
    subject = main_subject(found, prefer=prefer)
    rule = rule_for(kind, subject)
    severity: str = rule.severity
    for e in matched:
        if e.severity in SEVERITY_RANK:
            severity = higher(severity, e.severity) or severity
    return Classification(kind, severity, subject, basis, rule.why)  # type: ignore[arg-type]


def severity_rank(severity: str | None) -> int:
    """Sort rank of a stored severity (4 critical ... 1 low, 0 unclassified)."""
    return SEVERITY_RANK.get(severity or "", 0)


def kind_label(kind: str | None) -> str:
    """How a stored kind is shown ("unclassified" for none)."""
    return KIND_LABELS.get(kind or UNCLASSIFIED, kind or UNCLASSIFIED)
