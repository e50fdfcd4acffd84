"""Structured sources read as sentences: a record as JSON, FHIR resources, a table.

A sentence embedding of ``{"resourceType": "MedicationStatement", "medicationCodeableConcept":
{"coding": [{"system": "http://www.nlm.nih.gov/research/umls/rxnorm", ...`` is mostly keys,
codes and URLs, and a cross-encoder trained on prose reads it no better. So a source that
parses as JSON (one value, or one per line as FHIR's bulk export writes them) or as a table
(tab-separated, Markdown pipes, or comma-separated with the same number of cells on every
line) is read as one short sentence per record, in the words a note would use:

- a FHIR resource by the meaning of its type (AllergyIntolerance, Medication*, Observation,
  Condition, Procedure, Immunization, FamilyMemberHistory, ServiceRequest, Patient, ...): a
  refuted allergy or condition reads "No allergy to penicillin (refuted)", a statement of a
  drug not taken "Medication not taken: ...", a blood pressure "systolic 150 mmHg, diastolic 95
  mmHg"; FHIR's data types (CodeableConcept, Quantity, Range, Period, Reference, Dosage) read as
  their text; identifiers, codes' systems, URLs, meta and the XHTML narrative are left out;
- any other JSON by its keys: an object's plain fields make one sentence labelled by the key
  it sits under ("medications: metformin; dose 500 mg; frequency twice daily."), a list of
  plain values one sentence ("allergies: penicillin, latex."), nested records their own;
- a table row by its header ("potassium: value 5.9; unit mmol/L; flag high.").

Each sentence keeps the character span of the values it was read from, so that the evidence a
statement is grounded in is still located (and highlighted) in the source as stored.
:func:`reading` returns None for anything else (prose, a transcript): it is read as it is.
"""

from __future__ import annotations

import csv
import io
import json
import re
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["Reading", "reading"]

MAX_CHARS = 5_000_000  # a source larger than this is read as it is (nothing is parsed)
_DECODER = json.JSONDecoder()


@dataclass(frozen=True, slots=True)
class Reading:
    """A structured source as sentences: ``text`` (one sentence per line) and, for each
    sentence, its ``[start, end)`` in ``text`` and the ``[start, end)`` in the source of the
    values it was read from."""

    text: str
    sentences: tuple[tuple[int, int, int, int], ...]  # (read start, read end, raw start, raw end)
    kind: str  # "json", "fhir" or "table"

    def raw_span(self, start: int, end: int) -> tuple[int, int]:
        """The span of the source read as ``text[start:end]``: from the first value of the
        first sentence it overlaps to the last value of the last."""
        ends = [s[1] for s in self.sentences]
        k = min(bisect_left(ends, start + 1), len(self.sentences) - 1)
        first = last = k
        while last + 1 < len(self.sentences) and self.sentences[last + 1][0] < end:
            last += 1
        covered = self.sentences[first : last + 1]
        return min(s[2] for s in covered), max(s[3] for s in covered)


def reading(text: str) -> Reading | None:
    """``text`` read as sentences if it is a structured record (see the module), else None."""
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_CHARS:
        return None
    head = text.lstrip().lstrip("\ufeff").lstrip()[:1]  # a byte-order mark is no content
    if head in "{[":
        values = _json_values(text)
        if values is None:
            return None
        sentences = [s for value in values for s in _top(value)]
        kind = "fhir" if any(_resource_type(v) for v in _walk_records(values)) else "json"
    else:
        sentences = _table(text)
        kind = "table"
    return _assemble(sentences, kind) if sentences else None


# --------------------------------------------------------------------------- JSON with offsets


@dataclass(frozen=True, slots=True)
class _Leaf:
    value: Any
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class _Obj:
    items: tuple[tuple[str, _Node], ...]
    start: int
    end: int

    def get(self, key: str) -> _Node | None:
        return next((v for k, v in self.items if k == key), None)


@dataclass(frozen=True, slots=True)
class _Arr:
    items: tuple[_Node, ...]
    start: int
    end: int


_Node = _Leaf | _Obj | _Arr
T = TypeVar("T")
_WS = re.compile(r"[\s\ufeff]*")


class _NotJson(ValueError):
    pass


def _json_values(text: str) -> list[_Node] | None:
    """Every JSON value of ``text`` (one, or several separated by whitespace: JSON Lines),
    with offsets; None unless all of the text is JSON and at least one value is an object or
    a list."""
    out: list[_Node] = []
    i = _skip(text, 0)
    try:
        while i < len(text):
            node, i = _parse(text, i, 0)
            out.append(node)
            i = _skip(text, i)
    except (_NotJson, ValueError, RecursionError, IndexError):
        return None
    return out if any(not isinstance(n, _Leaf) for n in out) else None


def _skip(s: str, i: int) -> int:
    """The first position at or after ``i`` that is not whitespace."""
    return _WS.match(s, i).end()  # type: ignore[union-attr]


def _parse(s: str, i: int, depth: int) -> tuple[_Node, int]:
    """The JSON value at ``s[i]`` with its offsets, and where it ends."""
    if depth > 64:
        raise _NotJson("nested too deep")
    c = s[i]
    if c == "{":
        members, end = _items(s, i, "}", lambda j: _member(s, j, depth))
        return _Obj(tuple(members), i, end), end
    if c == "[":
        elements, end = _items(s, i, "]", lambda j: _parse(s, j, depth + 1))
        return _Arr(tuple(elements), i, end), end
    value, end = _DECODER.raw_decode(s, i)
    if isinstance(value, (dict, list)):  # raw_decode read a container we did not: not ours
        raise _NotJson("container")
    return _Leaf(value, i, end), end


def _member(s: str, i: int, depth: int) -> tuple[tuple[str, _Node], int]:
    """An object's ``"key": value`` at ``s[i]``."""
    if s[i] != '"':
        raise _NotJson("key")
    key, i = _DECODER.raw_decode(s, i)
    i = _skip(s, i)
    if s[i] != ":":
        raise _NotJson("colon")
    value, i = _parse(s, _skip(s, i + 1), depth + 1)
    return (key, value), i


def _items(s: str, i: int, close: str, item: Callable[[int], tuple[T, int]]) -> tuple[list[T], int]:
    """The comma-separated items of the object or array that opens at ``s[i]``, read by
    ``item``, and the position after its closing bracket."""
    out: list[T] = []
    i = _skip(s, i + 1)
    if s[i] == close:
        return out, i + 1
    while True:
        value, i = item(i)
        out.append(value)
        i = _skip(s, i)
        if s[i] == close:
            return out, i + 1
        if s[i] != ",":
            raise _NotJson("comma")
        i = _skip(s, i + 1)


# --------------------------------------------------------------------------- sentences

# A sentence as read, and the values it was read from (their offsets locate it).
_Sentence = tuple[str, list[_Leaf]]

# Keys of a FHIR resource that say nothing a statement could claim (ids, codes' systems,
# bookkeeping; the narrative repeats the resource in XHTML). Any other JSON keeps every key.
_FHIR_SKIP_KEYS = frozenset(
    """id meta identifier extension modifierExtension implicitRules language contained
    system url fullUrl version userSelected reference request response search link
    resourceType div narrative profile security tag lastUpdated versionId""".split()
)
# Keys whose value names the record: read first, without the key.
_NAME_KEYS = frozenset(
    """name display text title label term description drug medication medicine substance
    allergen test analyte condition diagnosis problem procedure""".split()
)
# Keys whose value says what it is ("81 mg", "twice daily", "mmol/L"): read without the key.
_VALUE_KEYS = frozenset(
    """value result dose dosage strength amount unit units uom frequency freq route sig
    directions instructions timing schedule flag interpretation""".split()
)
_URL = re.compile(r"^(?:https?|urn|ftp):", re.I)
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z][a-z])")


def _words(key: str) -> str:
    """A key as words: "clinicalStatus" -> "clinical status", "blood_pressure" -> "blood
    pressure"; a key with capitals inside a word ("HbA1c", "eGFR") is kept as it is."""
    if re.fullmatch(r"[a-z]+(?:[A-Z][a-z]+)+", key):
        key = _CAMEL.sub(" ", key).lower()
    return re.sub(r"[_\-]+", " ", key).strip()


def _scalar(leaf: _Leaf) -> str | None:
    v = leaf.value
    if v is None:
        return None
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:g}" if abs(v) < 1e15 else str(v)
    text = str(v).strip()
    if not text or _URL.match(text):
        return None
    return re.sub(r"\s+", " ", text)


def _text(node: _Node | None) -> tuple[str, list[_Leaf]] | None:
    """A value as short text if it reads as one (a plain value, a FHIR data type, a list of
    such), else None (a record). The leaves it was read from ride along."""
    if node is None:
        return None
    if isinstance(node, _Leaf):
        text = _scalar(node)
        return (text, [node]) if text else None
    if isinstance(node, _Arr):
        parts = [_text(n) for n in node.items]
        if not parts or any(p is None for p in parts):
            return None
        kept = [p for p in parts if p]
        return ", ".join(t for t, _ in kept), [leaf for _, ls in kept for leaf in ls]
    return _datatype(node)


def _field(obj: _Obj, *keys: str) -> tuple[str, list[_Leaf]] | None:
    """The text of the first of ``keys`` present in ``obj`` (FHIR's value[x] style:
    a key ending in ``*`` matches any key that starts with it)."""
    for key in keys:
        if key.endswith("*"):
            for k, v in obj.items:
                if k.startswith(key[:-1]) and (t := _text(v)):
                    return t
        elif (t := _text(obj.get(key))) is not None:
            return t
    return None


def _join(
    parts: Sequence[tuple[str, list[_Leaf]] | None], sep: str = " "
) -> tuple[str, list[_Leaf]] | None:
    kept = [p for p in parts if p and p[0]]
    if not kept:
        return None
    return sep.join(t for t, _ in kept), [leaf for _, ls in kept for leaf in ls]


def _datatype(obj: _Obj) -> tuple[str, list[_Leaf]] | None:
    """FHIR data types as text: CodeableConcept (its text, else a coding's display, else its
    code), Coding, Quantity, Range, Ratio, Period, Reference, Annotation, Dosage, HumanName;
    None for any other record (it is read as a sentence of its own)."""
    keys = {k for k, _ in obj.items}
    if "coding" in keys or keys <= {"system", "code", "display", "version", "userSelected"}:
        if t := _field(obj, "text"):
            return t
        codings = obj.get("coding")
        for c in codings.items if isinstance(codings, _Arr) else [obj]:
            if isinstance(c, _Obj) and (t := _field(c, "display", "code")):
                return t
        return None
    if "value" in keys and keys <= {"value", "unit", "code", "system", "comparator"}:
        return _join([_field(obj, "comparator"), _field(obj, "value"), _field(obj, "unit", "code")])
    if keys and keys <= {"low", "high"}:
        return _join([_field(obj, "low"), _field(obj, "high")], " to ")
    if keys and keys <= {"numerator", "denominator"}:
        return _join([_field(obj, "numerator"), _field(obj, "denominator")], " per ")
    if keys and keys <= {"start", "end"}:
        return _join([_field(obj, "start"), _field(obj, "end")], " to ")
    if "reference" in keys or (keys and keys <= {"display", "type", "identifier"}):
        return _field(obj, "display")
    if "doseAndRate" in keys or "timing" in keys or ("text" in keys and "route" in keys):
        return _dosage(obj)
    if "family" in keys or "given" in keys:
        return _field(obj, "text") or _join(
            [_field(obj, "prefix"), _field(obj, "given"), _field(obj, "family")]
        )
    if keys and keys <= {"text", "authorString", "authorReference", "time"}:
        return _field(obj, "text")
    return None  # a record: read as a sentence of its own


def _dosage(obj: _Obj) -> tuple[str, list[_Leaf]] | None:
    """A FHIR Dosage: its text, else dose, route and timing ("500 mg oral twice daily")."""
    if t := _field(obj, "text"):
        return t
    dose = None
    rates = obj.get("doseAndRate")
    for rate in rates.items if isinstance(rates, _Arr) else []:
        if isinstance(rate, _Obj) and (dose := _field(rate, "doseQuantity", "doseRange")):
            break
    timing = obj.get("timing")
    when = None
    if isinstance(timing, _Obj):
        when = _field(timing, "code")
        repeat = timing.get("repeat")
        if when is None and isinstance(repeat, _Obj):
            when = _how_often(repeat)
    as_needed = obj.get("asNeededBoolean")
    prn = ("as needed", [as_needed]) if isinstance(as_needed, _Leaf) and as_needed.value else None
    return _join([dose, _field(obj, "route"), when, prn])


_UNITS = {
    "s": "second",
    "min": "minute",
    "h": "hour",
    "d": "day",
    "wk": "week",
    "mo": "month",
    "a": "year",
}
_TIMES = {1: "once", 2: "twice", 3: "three times", 4: "four times"}
_EVERY = {"day": "daily", "week": "weekly", "month": "monthly", "hour": "hourly", "year": "yearly"}


def _how_often(repeat: _Obj) -> tuple[str, list[_Leaf]] | None:
    """A FHIR Timing.repeat as words: frequency 2, period 1, periodUnit d -> "twice daily";
    period 8 h -> "every 8 hours"."""
    freq, period, unit = repeat.get("frequency"), repeat.get("period"), repeat.get("periodUnit")
    if not all(isinstance(x, _Leaf) for x in (period, unit)):
        return None
    leaves = [x for x in (freq, period, unit) if isinstance(x, _Leaf)]
    n = freq.value if isinstance(freq, _Leaf) else 1
    word = _UNITS.get(str(unit.value), str(unit.value))  # type: ignore[union-attr]
    p = period.value  # type: ignore[union-attr]
    if p == 1:
        every = _EVERY.get(word, f"a {word}")
    else:
        every = f"every {p:g} {word}s" if isinstance(p, (int, float)) else f"every {p} {word}s"
    times = _TIMES.get(n, f"{n} times") if isinstance(n, int) else f"{n} times"
    return (every if n == 1 and p != 1 else f"{times} {every}"), leaves


def _resource_type(node: _Node) -> str | None:
    if isinstance(node, _Obj):
        rt = node.get("resourceType")
        if isinstance(rt, _Leaf) and isinstance(rt.value, str):
            return rt.value
    return None


def _walk_records(values: Sequence[_Node]) -> Iterator[_Node]:
    for v in values:
        yield v
        if isinstance(v, _Arr):
            yield from v.items
        elif isinstance(v, _Obj):
            for _, child in v.items:
                if isinstance(child, _Arr):
                    for item in child.items:
                        yield item
                        if isinstance(item, _Obj) and (r := item.get("resource")) is not None:
                            yield r


def _top(node: _Node) -> list[_Sentence]:
    return list(_records(node, ""))


def _records(node: _Node, label: str, fhir: bool = False) -> Iterator[_Sentence]:
    """The sentences of a JSON value found under the key ``label`` (``fhir``: inside a FHIR
    resource)."""
    if isinstance(node, _Leaf):
        if (text := _scalar(node)) is not None:
            yield (f"{label}: {text}." if label else f"{text}."), [node]
        return
    if isinstance(node, _Arr):
        as_text = _text(node)
        if as_text is not None and all(isinstance(n, _Leaf) for n in node.items):
            if label:
                yield f"{label}: {as_text[0]}.", as_text[1]
            else:
                for n in node.items:
                    yield from _records(n, label, fhir)
            return
        for n in node.items:
            yield from _records(n, label, fhir)
        return
    rtype = _resource_type(node)
    if rtype == "Bundle":
        entries = node.get("entry")
        for entry in entries.items if isinstance(entries, _Arr) else []:
            if isinstance(entry, _Obj) and (resource := entry.get("resource")) is not None:
                yield from _records(resource, "", True)
        return
    if rtype is not None:
        reader = _FHIR.get(rtype)
        said = reader(node) if reader else None
        if said is not None:
            yield said[0], [*said[1], _whole(node)]
            return
        # "EpisodeOfCare" -> "episode of care"
        label = _CAMEL.sub(" ", rtype).lower() if rtype[:1].isupper() else _words(rtype)
        fhir = True
    fields = [
        (key, value, _text(value))
        for key, value in node.items
        if not (fhir and key in _FHIR_SKIP_KEYS) and not (key == "text" and fhir)
    ]
    nested = [(k, v) for k, v, t in fields if t is None and isinstance(v, (_Obj, _Arr))]
    plain = [(k, t) for k, _, t in fields if t is not None]
    named = any(_words(k).lower() in _NAME_KEYS for k, _ in plain)
    if not label and rtype is None and (nested or not named):
        # the top of a document that holds records or names nothing: each plain field is a
        # fact of its own, read in the document's order with the records
        for key, value, t in fields:
            if t is not None:
                fact = t[0] if _words(key).lower() in _NAME_KEYS else f"{_words(key)}: {t[0]}"
                yield f"{fact}.", t[1]
            elif isinstance(value, (_Obj, _Arr)):
                yield from _records(value, _words(key), fhir)
        return
    if plain:
        body = _record_body([(k, t) for k, (t, _) in plain])
        leaves = [x for _, (_, ls) in plain for x in ls]
        yield (f"{label}: {body}." if label else f"{body}."), [*leaves, _whole(node)]
    for key, value in nested:
        yield from _records(value, _words(key), fhir)


def _record_body(fields: Sequence[tuple[str, str]], name_first: bool = False) -> str:
    """A record's fields as a note would list them: what names it, then its values without
    their keys ("aspirin 81 mg daily"), then the rest as "key value" ("status active").
    Keys such as "dose", "unit" or "frequency" say nothing their values do not, and a drug
    read apart from its dose ("aspirin; dose 81 mg") is no longer one mention of the drug."""
    head: list[str] = []
    values: list[str] = []
    rest: list[str] = []
    for k, (key, text) in enumerate(fields):
        word = _words(key).lower()
        if (name_first and k == 0) or word in _NAME_KEYS:
            head.append(text)
        elif word in _VALUE_KEYS:
            values.append(text)
        else:
            rest.append(f"{_words(key)} {text}")
    first = " ".join([*head, *values])
    return "; ".join([first, *rest] if first else rest)


def _whole(node: _Obj | _Arr) -> _Leaf:
    """A stand-in value spanning all of ``node``: a record is located as a whole."""
    return _Leaf(None, node.start, node.end)


# --------------------------------------------------------------------------- FHIR resources


def _code(node: _Obj, *keys: str) -> str | None:
    """The code of a FHIR status CodeableConcept (or plain code) under the first key present."""
    for key in keys:
        v = node.get(key)
        if isinstance(v, _Leaf) and isinstance(v.value, str):
            return v.value.lower()
        if isinstance(v, _Obj):
            codings = v.get("coding")
            for c in codings.items if isinstance(codings, _Arr) else []:
                if isinstance(c, _Obj) and isinstance(code := c.get("code"), _Leaf):
                    return str(code.value).lower()
            if t := _field(v, "text"):
                return t[0].lower()
    return None


def _sentence(
    head: str, parts: Sequence[tuple[str, list[_Leaf]] | None], named: Sequence[_Leaf] = ()
) -> _Sentence | None:
    """``head`` then the parts that have text, joined by semicolons; ``named`` are the values
    the head was read from (their offsets count for the sentence's span)."""
    kept = [p for p in parts if p and p[0]]
    if not kept:
        return None
    return f"{head}{'; '.join(t for t, _ in kept)}.", [*named, *(x for _, ls in kept for x in ls)]


def _labelled(label: str, value: tuple[str, list[_Leaf]] | None) -> tuple[str, list[_Leaf]] | None:
    return (f"{label} {value[0]}", value[1]) if value else None


def _allergy(r: _Obj) -> _Sentence | None:
    what = _field(r, "code")
    if what is None:
        return None
    verification = _code(r, "verificationStatus")
    clinical = _code(r, "clinicalStatus")
    kind = _code(r, "type")
    reactions: list[tuple[str, list[_Leaf]] | None] = []
    rs = r.get("reaction")
    for rx in rs.items if isinstance(rs, _Arr) else []:
        if isinstance(rx, _Obj):
            reactions.append(
                _join(
                    [_field(rx, "manifestation"), _labelled("severity", _field(rx, "severity"))],
                    ", ",
                )
            )
    if verification == "refuted":
        head = "is not intolerant of " if kind == "intolerance" else "is not allergic to "
        return _sentence(f"The patient {head}", [(f"{what[0]} (refuted)", what[1])])
    head = "Intolerance to " if kind == "intolerance" else "Allergy to "
    return _sentence(
        head,
        [
            what,
            _labelled("criticality", _field(r, "criticality")),
            _labelled("reaction", _join(reactions, ", ")),
            (f"status {clinical}", []) if clinical else None,
            ("unconfirmed", []) if verification == "unconfirmed" else None,
            _labelled("recorded", _field(r, "recordedDate", "onset*")),
        ],
    )


def _medication(r: _Obj) -> _Sentence | None:
    med = _field(r, "medicationCodeableConcept", "medicationReference", "medication")
    if med is None:
        return None
    status = _code(r, "status")
    doses: list[tuple[str, list[_Leaf]] | None] = []
    for key in ("dosage", "dosageInstruction"):
        d = r.get(key)
        for item in d.items if isinstance(d, _Arr) else [d] if isinstance(d, _Obj) else []:
            if isinstance(item, _Obj):
                doses.append(_dosage(item))
    head = {
        "not-taken": "Medication not taken: ",
        "stopped": "Medication stopped: ",
        "cancelled": "Medication cancelled: ",
        "completed": "Medication completed: ",
        "on-hold": "Medication on hold: ",
        "entered-in-error": "Medication entered in error: ",
    }.get(status or "", "Medication: ")
    return _sentence(
        head,
        [
            _join([med, _join(doses, ", ")], ", "),
            _labelled("for", _field(r, "reasonCode", "reason")),
            _labelled("since", _field(r, "effective*", "authoredOn")),
            (f"status {status}", []) if status and head == "Medication: " else None,
        ],
    )


def _observation(r: _Obj) -> _Sentence | None:
    what = _field(r, "code")
    if what is None:
        return None
    value = _field(r, "value*")
    comps: list[tuple[str, list[_Leaf]] | None] = []
    cs = r.get("component")
    pressure: dict[str, tuple[_Obj, tuple[str, list[_Leaf]]]] = {}
    for c in cs.items if isinstance(cs, _Arr) else []:
        if isinstance(c, _Obj):
            name, amount = _field(c, "code"), _field(c, "value*")
            comps.append(_join([name, amount]))
            for side in ("systolic", "diastolic"):
                if name and amount and side in name[0].lower():
                    pressure[side] = (c, amount)
    if len(pressure) == 2:  # a blood pressure as a note writes it: "150/95 mmHg"
        (sys_c, _), (dia_c, _) = pressure["systolic"], pressure["diastolic"]
        sys_v, dia_v = _quantity(sys_c), _quantity(dia_c)
        if sys_v and dia_v:
            comps = [(f"{sys_v[0]}/{dia_v[0]} {dia_v[1]}".strip(), sys_v[2] + dia_v[2])]
    ranges = r.get("referenceRange")
    normal = None
    for rr in ranges.items if isinstance(ranges, _Arr) else []:
        if isinstance(rr, _Obj):
            low, high = _field(rr, "low"), _field(rr, "high")
            normal = _field(rr, "text") or (
                _join([low, high], " to ")
                if low and high
                else _labelled("up to", high) or _labelled("at least", low)
            )
            break
    return _sentence(
        f"{what[0]}: ",
        [
            _join([value, _join(comps, ", ")], ", "),
            _field(r, "interpretation"),
            _labelled("normal range", normal),
            _field(r, "effective*", "issued"),
            _field(r, "note"),
        ],
        what[1],
    )


def _quantity(component: _Obj) -> tuple[str, str, list[_Leaf]] | None:
    """A component's valueQuantity as (number, unit, leaves)."""
    q = component.get("valueQuantity")
    if not isinstance(q, _Obj) or not isinstance(v := q.get("value"), _Leaf):
        return None
    number = _scalar(v)
    unit = _field(q, "unit", "code")
    return (number or "", unit[0] if unit else "", [v, *(unit[1] if unit else [])])


def _condition(r: _Obj) -> _Sentence | None:
    what = _field(r, "code")
    if what is None:
        return None
    verification = _code(r, "verificationStatus")
    clinical = _code(r, "clinicalStatus")
    if verification == "refuted":
        return _sentence("The patient does not have ", [(f"{what[0]} (refuted)", what[1])])
    return _sentence(
        "Condition: ",
        [
            what,
            _field(r, "severity"),
            (clinical, []) if clinical else None,
            ("unconfirmed", [])
            if verification in ("unconfirmed", "provisional", "differential")
            else None,
            _labelled("since", _field(r, "onset*")),
            _labelled("resolved", _field(r, "abatement*")),
            _field(r, "note"),
        ],
    )


def _procedure(r: _Obj, head: str) -> _Sentence | None:
    what = _field(r, "code", "vaccineCode")
    if what is None:
        return None
    status = _code(r, "status")
    return _sentence(
        head,
        [
            what,
            (status, []) if status else None,
            _labelled("intent", _field(r, "intent")),
            _labelled("on", _field(r, "performed*", "occurrence*", "authoredOn")),
            _labelled("for", _field(r, "reasonCode", "reason")),
            _field(r, "note"),
        ],
    )


def _family(r: _Obj) -> _Sentence | None:
    who = _field(r, "relationship")
    conditions: list[tuple[str, list[_Leaf]] | None] = []
    cs = r.get("condition")
    for c in cs.items if isinstance(cs, _Arr) else []:
        if isinstance(c, _Obj):
            conditions.append(_join([_field(c, "code"), _labelled("at", _field(c, "onset*"))]))
    what = _join(conditions, ", ")
    if who is None or what is None:
        return None
    return _sentence("Family history: ", [(f"{who[0]} has {what[0]}", who[1] + what[1])])


def _patient(r: _Obj) -> _Sentence | None:
    return _sentence(
        "Patient: ",
        [
            _field(r, "name"),
            _field(r, "gender"),
            _labelled("born", _field(r, "birthDate")),
            _labelled("deceased", _field(r, "deceased*")),
        ],
    )


def _report(r: _Obj) -> _Sentence | None:
    what = _field(r, "code")
    if what is None:
        return None
    return _sentence(
        f"{what[0]}: ",
        [_field(r, "conclusion"), _field(r, "conclusionCode"), _field(r, "effective*")],
        what[1],
    )


_FHIR = {
    "AllergyIntolerance": _allergy,
    "MedicationStatement": _medication,
    "MedicationRequest": _medication,
    "MedicationAdministration": _medication,
    "MedicationDispense": _medication,
    "Observation": _observation,
    "Condition": _condition,
    "Procedure": lambda r: _procedure(r, "Procedure: "),
    "ServiceRequest": lambda r: _procedure(r, "Order: "),
    "Immunization": lambda r: _procedure(r, "Immunization: "),
    "FamilyMemberHistory": _family,
    "Patient": _patient,
    "DiagnosticReport": _report,
}


# --------------------------------------------------------------------------- tables

# A column's name: up to four words, no sentence punctuation ("test", "dose (mg)", "Ref. range").
_HEADER = re.compile(r"[^\s.?!:;,][^?!:;,]{0,38}(?<![.?!])(?<!\s)", re.S)
_PIPE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")


def _table(text: str) -> list[_Sentence]:
    """The rows of a table as sentences: tab-separated, Markdown pipes, or comma-separated
    (then at least three cells and three lines); every line has the same number of cells, at
    least two, and the first line names the columns (short names without sentence
    punctuation). [] for anything else: a transcript is not a table."""
    lines = [(m.start(), m.group(0)) for m in re.finditer(r"[^\r\n]+", text) if m.group(0).strip()]
    if len(lines) < 2:
        return []
    rows: list[list[tuple[str, int, int]]]
    if all("\t" in line for _, line in lines):
        rows = [_cells(line, at, "\t") for at, line in lines]
    elif all(line.strip().startswith("|") and line.strip().endswith("|") for _, line in lines):
        rows = [
            _cells(line, at, "|", trim_pipes=True)
            for at, line in lines
            if not _PIPE_RULE.match(line)
        ]
    elif len(lines) >= 3 and all(line.count(",") >= 2 for _, line in lines):
        rows = []
        for at, line in lines:
            try:
                parsed = next(csv.reader(io.StringIO(line)))
            except (csv.Error, StopIteration):
                return []
            rows.append(_csv_cells(line, at, parsed))
    else:
        return []
    width = len(rows[0]) if rows else 0
    if width < 2 or len(rows) < 2 or any(len(r) != width for r in rows):
        return []
    header = [cell for cell, _, _ in rows[0]]
    if any(not _HEADER.fullmatch(h) for h in header):
        return []  # prose with commas or tabs, not a header
    out: list[_Sentence] = []
    for row in rows[1:]:
        parts = [(c, a, b) for (c, a, b) in row if c]
        if not parts:
            continue
        cells = [(header[k], c, a, b) for k, (c, a, b) in enumerate(row) if c]
        first_is_name = bool(row[0][0])
        body = _record_body([(h, c) for h, c, _, _ in cells], name_first=first_is_name)
        out.append((f"{body}.", [_Leaf(c, a, b) for _, c, a, b in cells]))
    return out


def _cells(line: str, at: int, sep: str, trim_pipes: bool = False) -> list[tuple[str, int, int]]:
    out = []
    pos = 0
    pieces = line.split(sep)
    if trim_pipes:
        lead = line.index("|")
        pos = lead + 1
        pieces = line[lead + 1 : line.rindex("|")].split("|")
    for piece in pieces:
        stripped = piece.strip()
        a = pos + (piece.find(stripped) if stripped else 0)
        out.append((re.sub(r"\s+", " ", stripped), at + a, at + a + len(stripped)))
        pos += len(piece) + 1
    return out


def _csv_cells(line: str, at: int, parsed: list[str]) -> list[tuple[str, int, int]]:
    out, pos = [], 0
    for cell in parsed:
        stripped = cell.strip()
        k = line.find(stripped, pos) if stripped else pos
        k = pos if k < 0 else k
        out.append((stripped, at + k, at + k + len(stripped)))
        pos = k + len(stripped)
    return out


# --------------------------------------------------------------------------- assembly


def _assemble(sentences: Sequence[_Sentence], kind: str) -> Reading | None:
    parts: list[str] = []
    spans: list[tuple[int, int, int, int]] = []
    at = 0
    for text, leaves in sentences:
        if not leaves:
            continue
        text = text[:1].upper() + text[1:]
        spans.append((at, at + len(text), min(x.start for x in leaves), max(x.end for x in leaves)))
        parts.append(text)
        at += len(text) + 1
    return Reading("\n".join(parts), tuple(spans), kind) if parts else None
