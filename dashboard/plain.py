"""Plain words for the query report and the calibration page.

The people who read these pages are clinicians and analysts, not the engineers who wrote the
detectors: a method is shown in words (its stored value in a tooltip), a table header says
what its column holds, a check that could not run is a setup note kept apart from what was
found about the answer, and the risk level shown never sits below the answer's worst finding.

Pure: plain data in, plain data out; no Streamlit, no storage. The pages escape every value
that comes from a record (``highlight.md_text``) before showing it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.quality import RISK_LEVELS, RiskLevel
from core.severity import KIND_LABELS

# --------------------------------------------------------------------------- words

METHOD_WORDS: dict[str, str] = {
    "exact_match": "matched word for word",
    "fuzzy_match": "matched nearly word for word",
    "semantic_match": "matched by meaning",
    "inference": "judged by the verification model",
    "unsupported": "no matching passage found",
}
"""How each stored ``verification_method`` reads on the page."""


def method_words(method: str | None) -> str:
    """A verification method in words (an unknown one with its underscores as spaces)."""
    if not method:
        return "not recorded"
    return METHOD_WORDS.get(method, method.replace("_", " "))


def method_help(method: str | None) -> str:
    """The tooltip beside a method shown in words: its stored value."""
    return f"Stored as verification_method = {method or 'none'}."


SCORE_HELP: dict[str, str] = {
    "grounding": "Share of the answer's statements that the sources bear out (higher is better).",
    "consistency": "How well the answer agrees with earlier answers about the same patient "
    "(higher is better).",
    "confidence": "How far the sources and the way the answer was made can be trusted, "
    "combined (higher is better).",
    "risk": "How likely the answer holds something the sources do not say, combined from "
    "the checks above (higher is worse).",
    "quality": "Grounding, consistency, confidence and risk combined into one score "
    "(higher is better).",
}
"""One sentence per score on the report page."""

SELFCHECK_HELP = (
    "SelfCheck asks the model the same question several more times: a sentence the other "
    "answers do not repeat scores higher (higher is worse)."
)

CONFIDENCE_SENTENCE = (
    "Confidence says how far the answer's sources can be trusted: how well they match the "
    "question (retrieval), what kind of record they are (source: a visit note counts more "
    "than a message), how freely the answer was generated (extraction) and how well it agrees "
    "with earlier answers (consistency); the aggregate is their weighted mean, higher is better."
)

CLAIMS_HELP = (
    "Each claim the answer makes is checked against the evidence it relies on: is it "
    "supported (0.7 or more), does the answer depend on the evidence at all (0.3 or more), "
    "and how big is the gap between what the evidence says and what is claimed (more than "
    "2 bits is critical). From the SPEC-16 claim audit."
)

EVIDENCE_HELP = (
    "Every quote an extraction model gave as evidence is looked up in the transcript; a quote "
    "that is not there is rejected (spec 053)."
)

CLAIM_COLUMNS: dict[str, tuple[str, str]] = {
    "claim": ("Claim", "The claim as found in the answer."),
    "flagged": ("Flagged", "Whether the audit flags this claim."),
    "flag_reason": ("Why", "Why the claim is flagged."),
    "gap_type": ("Kind of gap", "What is wrong between the claim and its evidence."),
    "evidence_support": (
        "Support",
        "How well the evidence supports the claim, 0 to 1; 0.7 or more counts as supported.",
    ),
    "evidence_dependence": (
        "Relies on evidence",
        "How much the claim depends on the evidence, 0 to 1; below 0.3 it would be made "
        "without it.",
    ),
    "gap_bits": (
        "Gap (bits)",
        "How much more the claim says than the evidence, in bits; above 2 is critical.",
    ),
    "consistency": ("Consistency", "Agreement of the claim across the checks, 0 to 1."),
    "confidence_justified": (
        "Confidence justified",
        "Whether the answer's certainty is backed by the evidence.",
    ),
    "evidence_ids": ("Evidence cited", "The sources the claim cites."),
}
"""Claim-audit columns: stored key -> (header, tooltip), in the order shown."""

EVIDENCE_COLUMNS: dict[str, tuple[str, str]] = {
    "status": ("Result", "Whether the quote check ran and what it found."),
    "mode": ("Matching", "substring: the exact words; fuzzy: nearly the same words."),
    "extracted": ("Quotes given", "Quotes the extraction model returned."),
    "validated": ("Found", "Quotes found in the transcript."),
    "rejected": ("Not found", "Quotes not in the transcript."),
    "rejected_by_domain": ("Not found, by topic", "Rejected quotes per evidence key."),
    "failure_category": ("Failure", "Why the check failed, if it did."),
}
"""Evidence-quote columns: stored key -> (header, tooltip), in the order shown."""

_LABEL = re.compile(r"[a-z]+(_[a-z]+)+")

EMPTY = "—"
"""How a missing value is shown in a table."""


def _cell(value: Any) -> str:
    if value is None or value == "" or value == [] or value == {}:
        return EMPTY
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v}" for k, v in value.items())
    if isinstance(value, str) and _LABEL.fullmatch(value):
        return value.replace("_", " ")  # a stored label such as "phantom_citation"
    return str(value)


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


def plain_table(
    rows: Sequence[Mapping[str, Any]], columns: Mapping[str, tuple[str, str]]
) -> tuple[list[dict[str, str]], dict[str, str]]:
    """Rows with plain headers and cells, and each shown header's tooltip.

    Columns are those of ``columns`` (in its order) that hold a value in at least one row: a
    column of nothing but ``None`` is left out. A missing value in a column that is shown
    reads "—"; booleans read yes/no, numbers two decimals, lists comma-separated and one-word
    labels with spaces for underscores.
    """
    keep = [k for k in columns if any(not _empty(r.get(k)) for r in rows)]
    table = [{columns[k][0]: _cell(r.get(k)) for k in keep} for r in rows]
    return table, {columns[k][0]: columns[k][1] for k in keep}


# --------------------------------------------------------------------------- setup notes

_SETUP_PATTERNS = re.compile(
    r"\btier (unavailable|skipped|failed)\b"
    r"|\b(check|backend|model) (unavailable|not available|skipped|not configured)\b"
    r"|\b\d+ of \d+ (calls failed|replies were unparseable)\b"
    r"|\bno LLM configured\b"
    r"|\bLLM claim extraction\b"
    r"|\brule-based claims used\b"
    r"|\bGROUNDWATCH_[A-Z_]+",
    re.IGNORECASE,
)


def is_setup_notice(warning: str) -> bool:
    """Whether a stored warning is about how the checks ran (a tier unavailable, a backend's
    calls failing, a setting missing) rather than about the answer."""
    return bool(_SETUP_PATTERNS.search(warning))


@dataclass(frozen=True, slots=True)
class Notices:
    """A report's warnings split in two, and the checks that did not run.

    Attributes:
        findings: warnings about the answer (a low score, a contradiction, ...).
        setup: warnings about how the checks ran (a tier unavailable, calls failing).
        not_run: ``(check, status, reason)`` of every check whose status is not ``ok``.
    """

    findings: tuple[str, ...]
    setup: tuple[str, ...]
    not_run: tuple[tuple[str, str, str], ...]

    @property
    def label(self) -> str:
        """The title of the collapsed setup-notes box: how many checks did not run."""
        failed = sum(s == "failed" for _, s, _ in self.not_run)
        other = len(self.not_run) - failed
        parts = []
        if failed:
            parts.append(f"{failed} check{'s' if failed != 1 else ''} failed")
        if other:
            parts.append(f"{other} check{'s' if other != 1 else ''} did not run")
        if not parts:
            return "Setup notes: every check ran" + (
                f" ({len(self.setup)} note{'s' if len(self.setup) != 1 else ''})"
                if self.setup
                else ""
            )
        return "Setup notes: " + ", ".join(parts)


def split_notices(warnings: Iterable[str], checks: Mapping[str, Mapping[str, Any]]) -> Notices:
    """Sort a report's warnings into findings and setup notes, and list the checks not run.

    Args:
        warnings: the stored warnings, in their order.
        checks: ``{check: {"status": ..., "reason": ...}}`` as the data layer gives them.
    """
    findings: list[str] = []
    setup: list[str] = []
    for w in warnings:
        (setup if is_setup_notice(str(w)) else findings).append(str(w))
    not_run = tuple(
        (name, str(v.get("status")), str(v.get("reason") or ""))
        for name, v in checks.items()
        if v.get("status") != "ok"
    )
    return Notices(tuple(findings), tuple(setup), not_run)


# --------------------------------------------------------------------------- risk level

RISK_FLOOR: RiskLevel = "high"
"""The least risk level shown for an answer with a critical finding or a contradiction."""


def risk_words(level: str | None) -> str:
    """A stored risk level in words ("very_high" -> "very high"; none -> "not assessed")."""
    return level.replace("_", " ") if level else "not assessed"


@dataclass(frozen=True, slots=True)
class ShownRisk:
    """The risk level a report shows, and why it differs from the stored one.

    Attributes:
        level: the level shown (one of ``core.quality.RISK_LEVELS``), or None (not assessed,
            and nothing found that raises it).
        stored: the level stored with the answer (computed from the combined risk score).
        reason: why the shown level is higher than the stored one ("a critical finding:
            ..."), None when it is not.
    """

    level: str | None
    stored: str | None
    reason: str | None

    @property
    def raised(self) -> bool:
        return self.reason is not None


def _worst_finding(
    statements: Sequence[Mapping[str, Any]], contradictions: Sequence[Mapping[str, Any]]
) -> str | None:
    flagged = [s for s in statements if s.get("status") != "grounded"]
    for s in flagged:
        if s.get("severity") == "critical":
            kind = KIND_LABELS.get(s.get("kind") or "", s.get("kind") or "unclassified")
            return f"a critical finding: {kind} (statement #{int(s.get('index', 0)) + 1})"
    for c in contradictions:
        if c.get("severity") == "critical":
            return "a critical finding: contradicts an earlier answer"
    for s in flagged:
        if s.get("status") == "contradicted":
            return (
                f"a contradiction: statement #{int(s.get('index', 0)) + 1} contradicts its source"
            )
    if contradictions:
        return "a contradiction with an earlier answer about the same patient"
    return None


def shown_risk(
    stored: str | None,
    statements: Sequence[Mapping[str, Any]],
    contradictions: Sequence[Mapping[str, Any]] = (),
) -> ShownRisk:
    """The risk level to show for an answer: the stored level, raised to at least
    :data:`RISK_FLOOR` when a flagged statement is of critical severity, a statement
    contradicts its source, or the answer contradicts an earlier one.

    The stored scores are left as they are; only what the page says changes, and it says why.

    Args:
        stored: the stored ``risk_level`` (from the combined risk score), or None.
        statements: the statement checks (``status``, ``severity``, ``kind``, ``index``).
        contradictions: the answer's contradictions with earlier answers (``severity``).
    """
    reason = _worst_finding(statements, contradictions)
    if reason is None:
        return ShownRisk(stored, stored, None)
    rank: dict[str, int] = {level: i for i, level in enumerate(RISK_LEVELS)}
    if rank.get(stored or "", -1) >= rank[RISK_FLOOR]:
        return ShownRisk(stored, stored, None)
    return ShownRisk(RISK_FLOOR, stored, reason)


def risk_summary(conv: Mapping[str, Any]) -> str:
    """The risk level of a report in words, as the report page shows it (raised to its worst
    finding, saying why): "high (a critical finding: allergy (statement #2); the combined risk
    score alone gives medium)"."""
    risk = shown_risk(conv.get("risk_level"), conv["statements"], conv.get("contradictions", ()))
    if not risk.raised:
        return risk_words(risk.level)
    return (
        f"{risk_words(risk.level)} ({risk.reason}; the combined risk score alone gives "
        f"{risk_words(risk.stored)})"
    )


# --------------------------------------------------------------------------- calibration

MIN_CALIBRATION_VERDICTS = 30
"""Fewer verdicts (confirmed or false alarm) than this and the calibration page warns that its
metrics can move a lot. With 30 verdicts a rate near one half is known to about +-0.09 (one
standard error) and ten reliability bins hold three verdicts each: a first look, not a
measurement."""

METRIC_HELP: dict[str, str] = {
    "reviewed": "Flagged statements with a verdict; 'unsure' verdicts are counted here but "
    "left out of the metrics.",
    "confirmed": "Flags a reviewer confirmed as a hallucination (counted as 1).",
    "false_alarm": "Flags a reviewer called a false alarm (counted as 0).",
    "ece": "Expected calibration error: how far, on average, a statement's risk is from the "
    "share of flags with that risk that reviewers confirmed (0 = the risk is that share).",
    "brier": "Brier score: the mean squared gap between each statement's risk and its "
    "verdict (1 confirmed, 0 false alarm); 0 is perfect, 0.25 is what a constant 0.5 scores.",
    "aurc": "Area under the risk-coverage curve: accept flags from the detector's most "
    "confident down and average the share of false alarms among those accepted; lower means "
    "its confidence puts real hallucinations first.",
    "bins": "How many equal risk ranges the reliability chart groups statements into.",
    "reliability": "Each point groups statements of similar risk: its height is the share "
    "reviewers confirmed; on the diagonal, the risk says exactly how often a flag is real.",
    "by_verdict": "The risk of confirmed hallucinations and of false alarms: the further "
    "apart the two, the better the risk tells them apart.",
    "statements": "Every checked statement within the filters, flagged or not.",
    "flag_rate": "Share of all checked statements whose risk is at or above the threshold.",
    "false_alarm_rate": "Among reviewed statements at or above the threshold, the share "
    "reviewers called a false alarm.",
}
"""One sentence per metric and chart of the calibration page."""


def few_verdicts_warning(n: int, *, minimum: int = MIN_CALIBRATION_VERDICTS) -> str | None:
    """The warning shown when only ``n`` verdicts stand behind the metrics, or None."""
    if n >= minimum:
        return None
    return (
        f"Only {n} verdict{'s' if n != 1 else ''} (confirmed or false alarm) stand behind these "
        f"numbers: with fewer than {minimum}, each new verdict can move them a lot. Read them "
        "as a first look, and give more verdicts in the review queue."
    )


@dataclass(frozen=True, slots=True)
class ThresholdChange:
    """What flagging statements at ``chosen`` instead of ``current`` would change.

    Attributes:
        current: the threshold in force (from the settings).
        chosen: the threshold explored.
        flagged_now: statements with risk at or above ``current``.
        flagged_then: statements with risk at or above ``chosen``.
        approximate: the counts come from histogram bins that a threshold does not fall on.
        confirmed_gone: confirmed hallucinations no longer flagged at ``chosen``.
        false_alarms_gone: false alarms no longer flagged at ``chosen``.
        confirmed_come: confirmed hallucinations flagged at ``chosen`` but not now.
        false_alarms_come: false alarms flagged at ``chosen`` but not now.
    """

    current: float
    chosen: float
    flagged_now: int
    flagged_then: int
    approximate: bool
    confirmed_gone: int = 0
    false_alarms_gone: int = 0
    confirmed_come: int = 0
    false_alarms_come: int = 0

    @property
    def delta(self) -> int:
        """Flags that would come (positive) or go (negative)."""
        return self.flagged_then - self.flagged_now


def _at_or_above(hist: Sequence[int], t: float) -> tuple[int, bool]:
    bins = len(hist)
    x = t * bins
    i = min(bins, max(0, int(round(x))))
    return sum(hist[i:]), abs(x - round(x)) > 1e-6


def threshold_change(
    hist: Sequence[int],
    reviewed: Iterable[Mapping[str, Any]],
    *,
    current: float,
    chosen: float,
) -> ThresholdChange:
    """Count the flags that flagging at ``chosen`` instead of ``current`` adds or removes.

    Args:
        hist: statements per equal risk bin over [0, 1] (``repo.statement_risk_histogram``).
        reviewed: reviewed statements with ``risk`` and ``verdict``.
        current: the threshold in force.
        chosen: the threshold explored.
    """
    now, a1 = _at_or_above(hist, current)
    then, a2 = _at_or_above(hist, chosen)
    counts = {"confirmed_gone": 0, "false_alarms_gone": 0}
    counts |= {"confirmed_come": 0, "false_alarms_come": 0}
    for r in reviewed:
        if r.get("risk") is None or r.get("verdict") not in ("confirmed", "false_alarm"):
            continue
        risk = float(r["risk"])
        was, will = risk >= current - 1e-9, risk >= chosen - 1e-9
        if was == will:
            continue
        who = "confirmed" if r["verdict"] == "confirmed" else "false_alarms"
        counts[f"{who}_{'gone' if was else 'come'}"] += 1
    return ThresholdChange(current, chosen, now, then, a1 or a2, **counts)


def _n(count: int, one: str, many: str) -> str:
    return f"{count:,} {one if count == 1 else many}"


def describe_threshold_change(c: ThresholdChange) -> str:
    """One or two sentences: how many flags would go or come, and which reviewed ones."""
    about = "about " if c.approximate else ""
    if abs(c.chosen - c.current) < 1e-9:
        return (
            f"This is the threshold in force ({c.current:.2f}): {about}"
            f"{_n(c.flagged_now, 'statement is', 'statements are')} at or above it."
        )
    verb = "Raising" if c.chosen > c.current else "Lowering"
    head = f"{verb} the threshold from {c.current:.2f} to {c.chosen:.2f} would "
    if c.delta < 0:
        head += (
            f"take {about}{_n(-c.delta, 'flag', 'flags')} away "
            f"({c.flagged_then:,} left of {c.flagged_now:,})."
        )
    elif c.delta > 0:
        head += (
            f"add {about}{_n(c.delta, 'flag', 'flags')} "
            f"({c.flagged_then:,} instead of {c.flagged_now:,})."
        )
    else:
        head += f"change no flag ({_n(c.flagged_now, 'flag', 'flags')} either way)."
    parts = []
    if c.false_alarms_gone or c.confirmed_gone:
        parts.append(
            f"{_n(c.false_alarms_gone, 'false alarm', 'false alarms')} would go, and "
            f"{_n(c.confirmed_gone, 'confirmed hallucination', 'confirmed hallucinations')} "
            "would no longer be flagged"
        )
    if c.confirmed_come or c.false_alarms_come:
        parts.append(
            f"{_n(c.confirmed_come, 'confirmed hallucination', 'confirmed hallucinations')} "
            f"and {_n(c.false_alarms_come, 'false alarm', 'false alarms')} would be flagged "
            "that are not now"
        )
    if not parts:
        return head + " No reviewed statement would change."
    return head + " Among reviewed statements: " + "; ".join(parts) + "."


# --------------------------------------------------------------------------- alerts

ALERT_KINDS: dict[str, str] = {
    "flagged_share": "Many flagged answers",
    "contradiction": "Contradiction",
    "score_below": "Low score",
    "calibration_drift": "Calibration drift",
}
ALERT_STATES: dict[str, str] = {
    "open": "Open",
    "acknowledged": "Acknowledged",
    "resolved": "Resolved",
}


def _duration(seconds: int) -> str:
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            return _n(seconds // size, unit, unit + "s")
    return _n(seconds, "second", "seconds")


def alert_sentence(alert: Mapping[str, Any]) -> str:
    """What an alert says, in one plain sentence (ids, counts and scores; no record text)."""
    kind = alert.get("kind")
    counts = alert.get("counts") or {}
    value, threshold = alert.get("value"), alert.get("threshold")
    if kind == "flagged_share":
        return (
            f"{counts.get('flagged', 0):,} of {counts.get('answers', 0):,} answers from "
            f"{alert.get('model')} in {_duration(int(counts.get('window_s', 0)))} were flagged "
            f"({(value or 0):.0%}), more than the {(threshold or 0):.0%} the rule allows."
        )
    if kind == "contradiction":
        what = []
        if counts.get("contradicted_statements"):
            what.append("its sources")
        if counts.get("contradicted_earlier"):
            what.append("the patient's earlier answers")
        return (
            f"An answer about patient {alert.get('patient_id')} contradicts "
            f"{' and '.join(what) or 'its sources'}."
        )
    if kind == "score_below":
        score = next((k.removesuffix("_score") for k in counts), "a")
        about = (
            f"patient {alert.get('patient_id')}"
            if alert.get("patient_id")
            else f"model {alert.get('model')}"
        )
        return (
            f"An answer ({about}) scored {(value or 0):.2f} for {score}, below the "
            f"{(threshold or 0):.2f} the rule asks (higher is better)."
        )
    if kind == "calibration_drift":
        return (
            f"Over the last {counts.get('verdicts', 0):,} verdicts the risk score's calibration "
            f"error is {(value or 0):.3f}, above {(threshold or 0):.3f}: the risk no longer "
            "matches what reviewers decide."
        )
    return f"Rule {alert.get('rule')} fired."
