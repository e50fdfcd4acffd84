"""Cross-query consistency: does a new answer about a patient contradict what earlier answers said?

Earlier answers are not re-read: each stored answer leaves :class:`TimelineEntry` rows (one per
clinical mention, see :mod:`core.clinical`), and :class:`PatientTimeline` folds them into the
latest state of every entity (medication active or stopped, allergy present, chronic diagnosis,
smoking status...). :class:`ConsistencyChecker` compares the new answer's mentions with that
state.

Contradictions (phase 9 seed): a drug stopped and not restarted listed as current (temporal);
an allergy later denied or dropped from an allergy list; a chronic diagnosis later denied
(semantic); a drug listed as current later denied; a dose changed without an explicit action
and a medication list that silently loses a drug (entity). Not contradictions: vitals and labs
changing over time, a drug restarted, a dose changed with an explicit increase/decrease,
another patient's answers.

``consistency_score`` (higher is better): the product over contradictions of
``1 - weight(severity)`` with weights low 0.1, medium 0.25, high 0.5, critical 0.75; 1.0 when
there is none. A single medium contradiction already falls below the default 0.8 threshold,
and a long answer cannot dilute a critical one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from core.checks import OK, CheckStatus, failed, skipped, unavailable
from core.clinical import (
    ANY_ALLERGEN,
    Mention,
    condition_group,
    drug_class_names,
    drug_classes,
    extract_mentions,
    is_chronic,
    is_drug_class,
)
from core.text import short_hash

if TYPE_CHECKING:
    from core.backends.llm import LLMClient
    from core.backends.nli import NLIModel

log = logging.getLogger(__name__)

CheckType = Literal["entity_consistency", "temporal_consistency", "semantic_consistency"]
Severity = Literal["low", "medium", "high", "critical"]
EntityStatus = Literal[
    "active",
    "stopped",
    "negated",
    "historical",
    "present",
    "current",
    "former",
    "never",
    "done",
    "measured",
]

SEVERITY_WEIGHTS: dict[Severity, float] = {
    "low": 0.1,
    "medium": 0.25,
    "high": 0.5,
    "critical": 0.75,
}
_RULE_KINDS = frozenset({"medication", "condition", "allergy", "smoking", "alcohol", "procedure"})
_ACTIVE_ACTIONS = frozenset({None, "continued", "increased", "decreased", "started"})


@dataclass(frozen=True, slots=True)
class TimelineEntry:
    """One clinical mention of one stored answer: the row the ``entity_mention`` table keeps."""

    patient_id: str
    conversation_id: str
    timestamp: datetime
    kind: str
    name: str
    assertion: str
    action: str | None
    value: str | None
    unit: str | None
    dose: str | None
    frequency: str | None
    statement: str
    statement_start: int
    statement_end: int

    @classmethod
    def from_mention(
        cls, mention: Mention, *, patient_id: str, conversation_id: str, timestamp: datetime
    ) -> TimelineEntry:
        return cls(
            patient_id=patient_id,
            conversation_id=conversation_id,
            timestamp=timestamp,
            kind=mention.kind,
            name=mention.name,
            assertion=mention.assertion,
            action=mention.action,
            value=mention.value,
            unit=mention.unit,
            dose=mention.dose,
            frequency=mention.frequency,
            statement=mention.sentence,
            statement_start=mention.sentence_start,
            statement_end=mention.sentence_end,
        )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["timestamp"] = self.timestamp.isoformat()
        return data


def timeline_entries(
    answer: str | Sequence[Mention],
    *,
    patient_id: str,
    conversation_id: str,
    timestamp: datetime,
) -> list[TimelineEntry]:
    """The timeline rows an answer leaves (vitals and labs included, for trends)."""
    mentions = extract_mentions(answer) if isinstance(answer, str) else answer
    return [
        TimelineEntry.from_mention(
            m, patient_id=patient_id, conversation_id=conversation_id, timestamp=timestamp
        )
        for m in mentions
        if m.assertion not in ("hypothetical", "family")
    ]


@dataclass(frozen=True, slots=True)
class EntityState:
    """Latest known state of one entity for one patient, and where it was said."""

    kind: str
    name: str
    status: EntityStatus
    since: datetime
    conversation_id: str
    statement: str
    dose: str | None = None
    unit: str | None = None
    frequency: str | None = None
    value: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["since"] = self.since.isoformat()
        return data


@dataclass(frozen=True, slots=True)
class _ListSnapshot:
    conversation_id: str
    timestamp: datetime
    items: dict[str, TimelineEntry]


@dataclass(frozen=True, slots=True)
class PatientTimeline:
    """Per-patient entity states folded from earlier answers' timeline rows (oldest first).

    ``affirmed`` keeps the latest affirmation of each condition, allergy, habit or procedure
    even after a later denial, so that a denial can be traced to what it contradicts.
    """

    patient_id: str
    states: dict[tuple[str, str], EntityState]
    affirmed: dict[tuple[str, str], EntityState]
    medication_list: _ListSnapshot | None
    allergy_list: _ListSnapshot | None
    n_entries: int
    n_conversations: int

    @classmethod
    def build(
        cls,
        entries: Iterable[TimelineEntry],
        *,
        patient_id: str,
        before: datetime | None = None,
        exclude_conversation: str | None = None,
        min_list_size: int = 3,
    ) -> PatientTimeline:
        """Fold ``entries`` of ``patient_id`` (others are ignored) earlier than ``before``."""
        rows = [
            e
            for e in entries
            if e.patient_id == patient_id
            and (before is None or e.timestamp < before)
            and e.conversation_id != exclude_conversation
        ]
        if any(rows[i].timestamp > rows[i + 1].timestamp for i in range(len(rows) - 1)):
            rows.sort(key=lambda e: e.timestamp)
        last: dict[tuple[str, str], tuple[TimelineEntry, EntityStatus]] = {}
        last_affirmed: dict[tuple[str, str], tuple[TimelineEntry, EntityStatus]] = {}
        conv_order: dict[str, datetime] = {}
        status_cache: dict[tuple[str, str, str | None], EntityStatus | None] = {}
        meds: dict[str, dict[str, TimelineEntry]] = {}
        allergies: dict[str, dict[str, TimelineEntry]] = {}
        classes = _DRUG_CLASSES
        for e in rows:
            conv_order.setdefault(e.conversation_id, e.timestamp)
            sig = (e.kind, e.assertion, e.action)
            if sig not in status_cache:
                status_cache[sig] = _status(e)
            status = status_cache[sig]
            if status is None:
                continue
            key = (e.kind, e.name)
            last[key] = (e, status)
            if status in _AFFIRMED_STATUSES:
                last_affirmed[key] = (e, status)
                if status == "active" and e.name not in classes:
                    meds.setdefault(e.conversation_id, {})[e.name] = e
                elif status == "present" and e.kind == "allergy":
                    allergies.setdefault(e.conversation_id, {})[e.name] = e
        states = {k: _state(e, st) for k, (e, st) in last.items()}
        affirmed = {k: _state(e, st) for k, (e, st) in last_affirmed.items()}
        med_list = _latest_list(meds, conv_order, min_list_size)
        allergy_list = _latest_list(allergies, conv_order, 1)
        return cls(patient_id, states, affirmed, med_list, allergy_list, len(rows), len(conv_order))


_AFFIRMED_STATUSES = frozenset({"active", "present", "current", "former", "done"})
_DRUG_CLASSES = drug_class_names()


def _state(e: TimelineEntry, status: EntityStatus) -> EntityState:
    return EntityState(
        e.kind,
        e.name,
        status,
        e.timestamp,
        e.conversation_id,
        e.statement,
        e.dose,
        e.unit,
        e.frequency,
        e.value,
    )


def _latest_list(
    by_conv: dict[str, dict[str, TimelineEntry]], conv_order: dict[str, datetime], min_size: int
) -> _ListSnapshot | None:
    """The most recent conversation listing at least ``min_size`` entities."""
    best: tuple[datetime, str] | None = None
    for conv, items in by_conv.items():
        if len(items) >= min_size and (best is None or conv_order[conv] >= best[0]):
            best = (conv_order[conv], conv)
    if best is None:
        return None
    return _ListSnapshot(best[1], best[0], by_conv[best[1]])


def _status(e: TimelineEntry) -> EntityStatus | None:
    if e.kind == "medication":
        if e.action == "stopped":
            return "stopped"
        if e.assertion == "negated":
            return "negated"
        if e.assertion == "historical":
            return "historical"
        return "active"
    if e.kind in ("condition", "allergy"):
        return "negated" if e.assertion == "negated" else "present"
    if e.kind in ("smoking", "alcohol"):
        return {"negated": "never", "historical": "former"}.get(e.assertion, "current")  # type: ignore[return-value]
    if e.kind == "procedure":
        return "negated" if e.assertion == "negated" else "done"
    if e.kind in ("vital", "lab"):
        return "measured"
    return None


@dataclass(frozen=True, slots=True)
class Contradiction:
    """A statement of the new answer that conflicts with an earlier answer (phase 9 seed)."""

    current_statement: str
    previous_statement: str
    previous_conversation_id: str
    check_type: CheckType
    severity: Severity
    explanation: str
    entity: str
    previous_timestamp: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["previous_timestamp"] = (
            self.previous_timestamp.isoformat() if self.previous_timestamp else None
        )
        return data


@dataclass(frozen=True, slots=True)
class ConsistencyResult:
    """Outcome of one consistency check; ``consistency_score`` is higher-is-better."""

    is_consistent: bool
    consistency_score: float
    contradictions: tuple[Contradiction, ...]
    warnings: tuple[str, ...]
    status: CheckStatus
    checks: dict[str, CheckStatus] = field(default_factory=dict)
    n_checked: int = 0
    n_previous_conversations: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "is_consistent": self.is_consistent,
            "consistency_score": self.consistency_score,
            "contradictions": [c.to_dict() for c in self.contradictions],
            "warnings": list(self.warnings),
            "status": self.status.to_dict(),
            "checks": {k: v.to_dict() for k, v in self.checks.items()},
            "n_checked": self.n_checked,
            "n_previous_conversations": self.n_previous_conversations,
        }


def consistency_score(contradictions: Sequence[Contradiction]) -> float:
    """Product of ``1 - SEVERITY_WEIGHTS[severity]`` over contradictions (higher is better)."""
    score = 1.0
    for c in contradictions:
        score *= 1.0 - SEVERITY_WEIGHTS[c.severity]
    return round(score, 6)


def _fmt_dose(dose: str | None, unit: str | None) -> str:
    return f"{dose} {unit}" if dose and unit else (dose or "?")


_LLM_SYSTEM = (
    "You compare two statements about the same patient written at different times. Normal "
    "changes over time (new prescriptions, stopped drugs, changing vital signs or labs) are "
    "not contradictions. Reply with one word: CONTRADICTION if both cannot be true, otherwise "
    "CONSISTENT."
)


class ConsistencyChecker:
    """Checks a new answer against a patient's timeline with rules, plus an optional NLI/LLM tier.

    Args:
        nli: cross-encoder used on (earlier statement, new statement) pairs about the same
            entity that the rules found consistent; a pair whose contradiction probability
            reaches ``nli_threshold`` becomes a medium ``semantic_consistency`` contradiction.
        llm: used the same way when no NLI model is given (one short call per pair).
        semantic: ``auto`` uses whichever backend is given; ``off`` skips the tier.
        min_list_size: active drugs an answer must list to be compared as a medication list.
        max_semantic_pairs: cap on pairs sent to the NLI/LLM tier per check.
    """

    def __init__(
        self,
        *,
        nli: NLIModel | None = None,
        llm: LLMClient | None = None,
        semantic: Literal["auto", "nli", "llm", "off"] = "auto",
        nli_threshold: float = 0.9,
        min_list_size: int = 3,
        max_semantic_pairs: int = 16,
    ) -> None:
        if not 0.0 < nli_threshold <= 1.0:
            raise ValueError(f"nli_threshold must be in (0, 1], got {nli_threshold}")
        if min_list_size < 1:
            raise ValueError(f"min_list_size must be >= 1, got {min_list_size}")
        self.nli = nli
        self.llm = llm
        self.semantic = semantic
        self.nli_threshold = nli_threshold
        self.min_list_size = min_list_size
        self.max_semantic_pairs = max_semantic_pairs

    def check(
        self,
        current: str | Sequence[Mention],
        timeline: PatientTimeline | Sequence[TimelineEntry],
        *,
        at: datetime | None = None,
        patient_id: str | None = None,
        conversation_id: str | None = None,
    ) -> ConsistencyResult:
        """Compare the new answer (text or its mentions) with the patient's earlier answers.

        Args:
            current: the new answer, or mentions already extracted from it.
            timeline: a built :class:`PatientTimeline`, or raw rows (built here; rows of
                other patients are ignored when ``patient_id`` is given).
            at: time of the new answer; only rows strictly earlier count.
            patient_id: required with raw rows that hold several patients.
            conversation_id: the new answer's id; its own rows are never compared with it.

        Raises:
            ValueError: raw rows of several patients and no ``patient_id``.
        """
        if not isinstance(timeline, PatientTimeline):
            timeline = self._build(timeline, at, patient_id, conversation_id)
        mentions = extract_mentions(current) if isinstance(current, str) else list(current)
        mentions = [m for m in mentions if m.assertion not in ("hypothetical", "family")]
        checks: dict[str, CheckStatus] = {}
        if timeline.n_entries == 0:
            checks["rules"] = skipped("no earlier answers for this patient")
            checks["semantic"] = skipped("no earlier answers for this patient")
            return ConsistencyResult(True, 1.0, (), (), checks["rules"], checks, 0, 0)
        contradictions, warnings, n_checked, pairs = self._rules(mentions, timeline)
        checks["rules"] = OK
        checks["semantic"] = self._semantic(pairs, contradictions)
        log.debug(
            "consistency: %d mentions vs %d rows of patient %s -> %d contradictions",
            len(mentions),
            timeline.n_entries,
            short_hash(timeline.patient_id),
            len(contradictions),
        )
        broken = [name for name, c in checks.items() if c.status == "failed"]
        return ConsistencyResult(
            is_consistent=not contradictions,
            consistency_score=consistency_score(contradictions),
            contradictions=tuple(contradictions),
            warnings=tuple(warnings),
            # a tier that failed fails the check: its score stands on the rest only
            status=failed(f"{broken[0]} tier: {checks[broken[0]].reason}") if broken else OK,
            checks=checks,
            n_checked=n_checked,
            n_previous_conversations=timeline.n_conversations,
        )

    def _build(
        self,
        rows: Sequence[TimelineEntry],
        at: datetime | None,
        patient_id: str | None,
        conversation_id: str | None,
    ) -> PatientTimeline:
        if patient_id is None:
            patients = {e.patient_id for e in rows}
            if len(patients) > 1:
                raise ValueError(
                    f"timeline holds rows of {len(patients)} patients; pass patient_id"
                )
            patient_id = next(iter(patients)) if patients else ""
        return PatientTimeline.build(
            rows,
            patient_id=patient_id,
            before=at,
            exclude_conversation=conversation_id,
            min_list_size=self.min_list_size,
        )

    # ------------------------------------------------------------------ rules

    def _rules(
        self, mentions: list[Mention], tl: PatientTimeline
    ) -> tuple[list[Contradiction], list[str], int, list[tuple[str, str, EntityState]]]:
        out: list[Contradiction] = []
        warnings: list[str] = []
        pairs: list[tuple[str, str, EntityState]] = []
        n_checked = 0
        flagged: set[tuple[str, str]] = set()

        def add(
            m: Mention,
            prev: EntityState,
            check_type: CheckType,
            severity: Severity,
            explanation: str,
        ) -> None:
            flagged.add((m.kind, m.name))
            out.append(
                Contradiction(
                    m.sentence,
                    prev.statement,
                    prev.conversation_id,
                    check_type,
                    severity,
                    explanation,
                    f"{prev.kind}:{prev.name}",
                    prev.since,
                )
            )

        restarted = {m.name for m in mentions if m.kind == "medication" and m.action == "started"}
        stopped_now = {m.name for m in mentions if m.kind == "medication" and m.action == "stopped"}
        seen: set[tuple[str, str, str]] = set()
        for m in mentions:
            if m.kind not in _RULE_KINDS:
                continue
            sig = (m.kind, m.name, m.assertion + str(m.action) + str(m.dose))
            if sig in seen:
                continue
            seen.add(sig)
            key = (m.kind, m.name)
            prev = tl.states.get(key)
            if prev is not None:
                n_checked += 1
            if m.kind == "medication":
                n_checked += self._medication(m, prev, tl, restarted, stopped_now, add)
            elif m.kind == "condition":
                self._condition(m, tl, add, warnings)
            elif m.kind == "allergy":
                n_checked += self._allergy(m, tl, add)
            elif m.kind in ("smoking", "alcohol") and prev is not None:
                was = tl.affirmed.get(key)
                if m.assertion == "negated" and was is not None:
                    add(
                        m,
                        was,
                        "semantic_consistency",
                        "medium",
                        f"{m.kind}: earlier answer says {was.status}, this one says never",
                    )
                elif m.assertion == "historical" and prev.status == "never":
                    add(
                        m,
                        prev,
                        "semantic_consistency",
                        "low",
                        f"{m.kind}: earlier answer says never, this one says former",
                    )
                elif m.assertion == "affirmed" and prev.status == "former":
                    warnings.append(f"{m.kind}: former use earlier, current use now (relapse?)")
            elif m.kind == "procedure" and m.assertion == "negated":
                was = tl.affirmed.get(key)
                if was is not None:
                    add(
                        m,
                        was,
                        "semantic_consistency",
                        "medium",
                        f"procedure {m.name} recorded earlier is now denied",
                    )
            if prev is not None and key not in flagged and prev.status != "measured":
                pairs.append((m.sentence, m.name, prev))
        n_checked += self._lists(mentions, tl, add, out)
        return out, warnings, n_checked, pairs

    def _medication(
        self,
        m: Mention,
        prev: EntityState | None,
        tl: PatientTimeline,
        restarted: set[str],
        stopped_now: set[str],
        add: Any,
    ) -> int:
        current = m.assertion == "affirmed" and m.action in _ACTIVE_ACTIONS
        if m.assertion == "negated" and m.action is None:
            targets = [prev] if prev is not None and prev.status == "active" else []
            if is_drug_class(m.name):
                targets += [
                    s
                    for (k, n), s in tl.states.items()
                    if k == "medication" and s.status == "active" and m.name in drug_classes(n)
                ]
            for target in targets:
                add(
                    m,
                    target,
                    "semantic_consistency",
                    "high",
                    f"{target.name} was listed as current and no stop was recorded, "
                    f"but this answer says the patient is not on {m.name}",
                )
            return max(0, len(targets) - (prev is not None))
        if prev is None or not current or m.name in restarted and m.action != "started":
            return 0
        if m.action == "started":
            return 0
        if prev.status == "stopped" and m.name not in stopped_now:
            add(
                m,
                prev,
                "temporal_consistency",
                "high",
                f"{m.name} was stopped on {prev.since.date().isoformat()} and is listed as "
                "current without a restart",
            )
        elif prev.status == "active" and m.action in (None, "continued"):
            if m.dose and prev.dose and m.unit == prev.unit and _num(m.dose) != _num(prev.dose):
                add(
                    m,
                    prev,
                    "entity_consistency",
                    "medium",
                    f"{m.name} dose differs: {_fmt_dose(m.dose, m.unit)} vs "
                    f"{_fmt_dose(prev.dose, prev.unit)} earlier, with no dose change recorded",
                )
            elif m.frequency and prev.frequency and m.frequency != prev.frequency:
                add(
                    m,
                    prev,
                    "entity_consistency",
                    "low",
                    f"{m.name} frequency differs: {m.frequency} vs {prev.frequency} earlier",
                )
        return 0

    def _condition(self, m: Mention, tl: PatientTimeline, add: Any, warnings: list[str]) -> None:
        if m.assertion == "negated":
            for (kind, name), was in tl.affirmed.items():
                if kind != "condition" or was.status != "present":
                    continue
                if (name == m.name or condition_group(name) == m.name) and is_chronic(name):
                    if tl.states[(kind, name)].status == "negated" and name != m.name:
                        continue
                    add(
                        m,
                        was,
                        "semantic_consistency",
                        "high",
                        f"chronic diagnosis {name} recorded earlier is denied here",
                    )
            return
        prev = tl.states.get(("condition", m.name))
        if prev is not None and prev.status == "negated":
            if m.assertion == "historical":
                add(
                    m,
                    prev,
                    "semantic_consistency",
                    "low",
                    f"earlier answer denied any history of {m.name}; this one reports it",
                )
            else:
                warnings.append(f"{m.name}: denied earlier, reported now (new diagnosis?)")

    def _allergy(self, m: Mention, tl: PatientTimeline, add: Any) -> int:
        if m.assertion != "negated":
            return 0
        targets = [
            s
            for (k, n), s in tl.affirmed.items()
            if k == "allergy"
            and (m.name == ANY_ALLERGEN or n == m.name)
            and n != ANY_ALLERGEN
            and tl.states[(k, n)].status == "present"
        ]
        for was in targets:
            add(
                m,
                was,
                "temporal_consistency",
                "critical",
                f"allergy to {was.name} recorded earlier is denied here",
            )
        return len(targets)

    def _lists(
        self, mentions: list[Mention], tl: PatientTimeline, add: Any, out: list[Contradiction]
    ) -> int:
        n = 0
        named = {m.name for m in mentions if m.kind in ("medication", "allergy")}
        meds = {
            m.name: m
            for m in mentions
            if m.kind == "medication"
            and m.assertion == "affirmed"
            and m.action in _ACTIVE_ACTIONS
            and not is_drug_class(m.name)
        }
        snap = tl.medication_list
        if snap is not None and len(meds) >= self.min_list_size:
            anchor = next(iter(meds.values()))
            for name, entry in snap.items.items():
                n += 1
                state = tl.states.get(("medication", name))
                if name in named or state is None or state.status != "active":
                    continue
                prev = EntityState(
                    "medication",
                    name,
                    "active",
                    entry.timestamp,
                    entry.conversation_id,
                    entry.statement,
                )
                add(
                    anchor,
                    prev,
                    "entity_consistency",
                    "medium",
                    f"{name} is on the earlier medication list, has no recorded stop, and is "
                    "missing from this list",
                )
        allergies = [m for m in mentions if m.kind == "allergy" and m.assertion == "affirmed"]
        allergy_snap = tl.allergy_list
        denied = {c.entity for c in out}
        if allergy_snap is not None and allergies:
            for name, entry in allergy_snap.items.items():
                n += 1
                state = tl.states.get(("allergy", name))
                if name in named or state is None or state.status != "present":
                    continue
                if f"allergy:{name}" in denied:
                    continue
                prev = EntityState(
                    "allergy",
                    name,
                    "present",
                    entry.timestamp,
                    entry.conversation_id,
                    entry.statement,
                )
                add(
                    allergies[0],
                    prev,
                    "entity_consistency",
                    "medium",
                    f"allergy to {name} recorded earlier is missing from this allergy list",
                )
        return n

    # ------------------------------------------------------------------ semantic tier

    def _semantic(
        self, pairs: list[tuple[str, str, EntityState]], out: list[Contradiction]
    ) -> CheckStatus:
        use: Literal["nli", "llm"] | None = None
        if self.semantic == "off":
            return skipped("semantic tier turned off")
        if self.semantic in ("auto", "nli") and self.nli is not None:
            use = "nli"
        elif self.semantic in ("auto", "llm") and self.llm is not None:
            use = "llm"
        if use is None:
            wanted = (
                "NLI model"
                if self.semantic == "nli"
                else ("LLM" if self.semantic == "llm" else "NLI model or LLM")
            )
            return unavailable(f"no {wanted} given")
        unique: dict[tuple[str, str], EntityState] = {}
        for current, _name, prev in pairs:
            unique.setdefault((prev.statement, current), prev)
        items = list(unique.items())[: self.max_semantic_pairs]
        if not items:
            return OK
        try:
            verdicts = self._nli_verdicts(items) if use == "nli" else self._llm_verdicts(items)
        except Exception as exc:  # noqa: BLE001 - reported as the tier's status
            log.warning("consistency semantic tier (%s) failed: %s", use, type(exc).__name__)
            return failed(f"{use} tier raised {type(exc).__name__}")
        for ((prev_text, current), prev), (hit, prob) in zip(items, verdicts, strict=True):
            if hit:
                out.append(
                    Contradiction(
                        current,
                        prev_text,
                        prev.conversation_id,
                        "semantic_consistency",
                        "medium",
                        f"{use} judges the statements about {prev.name} contradictory"
                        + (f" (p={prob:.2f})" if prob is not None else ""),
                        f"{prev.kind}:{prev.name}",
                        prev.since,
                    )
                )
        return OK

    def _nli_verdicts(
        self, items: list[tuple[tuple[str, str], EntityState]]
    ) -> list[tuple[bool, float | None]]:
        assert self.nli is not None
        scores = self.nli.predict([pair for pair, _ in items])
        probs = [float(p) for p in scores.contradiction]
        return [(p >= self.nli_threshold, p) for p in probs]

    def _llm_verdicts(
        self, items: list[tuple[tuple[str, str], EntityState]]
    ) -> list[tuple[bool, float | None]]:
        assert self.llm is not None
        verdicts: list[tuple[bool, float | None]] = []
        for (prev_text, current), _ in items:
            reply = self.llm.chat(
                [
                    {"role": "system", "content": _LLM_SYSTEM},
                    {"role": "user", "content": f"Earlier: {prev_text}\nNow: {current}"},
                ],
                temperature=0.0,
                max_tokens=4,
            )
            verdicts.append(("CONTRADICT" in reply.text.upper(), None))
        return verdicts


def _num(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text
