"""Evidence quotes: strict schema validation (spec 054) and transcript grounding (spec 053).

An LLM extracts "verbatim" quotes from a transcript as evidence, e.g. for the eight PHQ-8
domains. :func:`validate_evidence_schema` refuses malformed JSON loudly instead of coercing it
to empty lists; :class:`EvidenceGrounder` keeps only the quotes that really occur in the
transcript after a conservative normalisation, and says where (character offsets into the
ORIGINAL transcript), so that a page can highlight them.

Grounding rule (substring mode, the default): a quote is grounded iff ``normalize(quote)`` is a
non-empty substring of ``normalize(transcript)``. Fuzzy mode (opt-in) grounds a quote iff
``fuzz.partial_ratio(normalize(quote), normalize(transcript)) / 100 >= threshold``, exactly;
it normalises the transcript once, tries the exact substring first and only then runs the
alignment, which is what makes it fast.

Nothing here logs or raises with quote or transcript text: counts, lengths and 12-character
SHA-256 prefixes only.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from rapidfuzz import fuzz

from core.checks import OK, CheckStatus, skipped
from core.text import short_hash

__all__ = [
    "FAILURE_CATEGORY",
    "PHQ8_KEYS",
    "EvidenceFailureEvent",
    "EvidenceGrounder",
    "EvidenceGroundingError",
    "EvidenceGroundingResult",
    "EvidenceGroundingStats",
    "EvidenceMode",
    "EvidenceSchemaError",
    "NormalizedText",
    "QuoteMatch",
    "ValidatedEvidence",
    "naive_fuzzy_score",
    "normalize_for_quote_match",
    "normalize_with_offsets",
    "validate_evidence_grounding",
    "validate_evidence_schema",
]

logger = logging.getLogger(__name__)

EvidenceMode = Literal["substring", "fuzzy"]
MatchMethod = Literal["substring", "fuzzy"]

PHQ8_KEYS: tuple[str, ...] = (
    "PHQ8_NoInterest",
    "PHQ8_Depressed",
    "PHQ8_Sleep",
    "PHQ8_Tired",
    "PHQ8_Appetite",
    "PHQ8_Failure",
    "PHQ8_Concentrating",
    "PHQ8_Moving",
)
FAILURE_CATEGORY = "EVIDENCE_HALLUCINATION"
ROOT_KEY = "__root__"

_SAFE_KEY_RE = re.compile(r"[A-Za-z0-9_.\-]{1,64}")


def _log_key(key: str) -> str:
    """A key as it may appear in a log: schema-like keys as is, anything else hashed."""
    return key if _SAFE_KEY_RE.fullmatch(key) else f"key#{short_hash(key)}"


# --------------------------------------------------------------------------------------------
# Spec 054: strict evidence schema
# --------------------------------------------------------------------------------------------


class EvidenceSchemaError(ValueError):
    """Evidence JSON does not match ``{key: [str, ...]}``; ``violations`` maps key -> reason.

    Reasons name types, element indexes and lengths, never the offending text; a key that
    is not schema-like (free text, which may hold anything) is named by a hash of it.
    """

    def __init__(self, message: str, violations: dict[str, str]) -> None:
        super().__init__(message)
        self.violations = {
            k if k == "__root__" or k.startswith("<key #") else _log_key(k): v
            for k, v in violations.items()
        }


@dataclass(frozen=True, slots=True)
class ValidatedEvidence:
    """Evidence that passed the schema: every expected key present, values stripped lists.

    ``warnings`` lists what was noticed but not fatal (unknown keys with a fixed key set);
    ``dropped_blank`` / ``dropped_duplicates`` count quotes removed by the normalisation.
    Indexing (``validated["PHQ8_Sleep"]``) reads ``evidence``.
    """

    evidence: dict[str, list[str]]
    warnings: tuple[str, ...] = ()
    unknown_keys: tuple[str, ...] = ()
    dropped_blank: int = 0
    dropped_duplicates: int = 0

    def __getitem__(self, key: str) -> list[str]:
        return self.evidence[key]

    def __contains__(self, key: object) -> bool:
        return key in self.evidence

    def keys(self) -> list[str]:
        return list(self.evidence)

    @property
    def quote_count(self) -> int:
        return sum(len(v) for v in self.evidence.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "evidence": {k: list(v) for k, v in self.evidence.items()},
            "warnings": list(self.warnings),
            "unknown_keys": list(self.unknown_keys),
            "dropped_blank": self.dropped_blank,
            "dropped_duplicates": self.dropped_duplicates,
        }


def _type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _check_quote_list(value: object) -> str | None:
    """The violation of one value (None if it is a list of strings)."""
    if not isinstance(value, list):
        size = f" (length {len(value)})" if isinstance(value, str | dict) else ""
        return f"Expected list, got {_type_name(value)}{size}"
    for i, item in enumerate(value):
        if not isinstance(item, str):
            return f"Expected list[str] but element {i} was {_type_name(item)}"
    return None


def validate_evidence_schema(
    obj: object, *, keys: Sequence[str] | None = PHQ8_KEYS, log: bool = True
) -> ValidatedEvidence:
    """Validate parsed evidence JSON against ``{key: [str, ...]}`` (spec 054).

    Missing or null keys become empty lists; strings are stripped, blank ones dropped and
    duplicates removed keeping the first occurrence. A non-list value or a non-string element
    (bool and null included) is a violation; all violations are collected before raising.

    Args:
        obj: The parsed JSON (any Python object).
        keys: The expected key set (default: the PHQ-8 domains). With a fixed set, unknown keys
            are reported in ``warnings`` (never dropped in silence). ``None``: any string keys.
        log: Emit a privacy-safe log line on violations (counts, keys, no text).

    Returns:
        The validated evidence with its warnings.

    Raises:
        EvidenceSchemaError: ``violations`` maps each bad key (``__root__`` for a non-object
            top level) to a reason.
    """
    if not isinstance(obj, dict):
        reason = f"Expected object, got {_type_name(obj)}"
        if log:
            logger.error("evidence_schema_invalid root_type=%s", _type_name(obj))
        raise EvidenceSchemaError(
            f"Expected JSON object at top level, got {_type_name(obj)}", {ROOT_KEY: reason}
        )

    violations: dict[str, str] = {}
    if keys is None:
        expected: Sequence[str] = [k for k in obj if isinstance(k, str)]
        unknown: tuple[str, ...] = ()
    else:
        expected = keys
        known = keys if isinstance(keys, frozenset) else frozenset(keys)
        unknown = tuple(k for k in obj if isinstance(k, str) and k not in known)
    if len(expected) + len(unknown) != len(obj):
        for i, key in enumerate(obj):
            if not isinstance(key, str):
                violations[f"<key #{i}>"] = f"Expected string key, got {_type_name(key)}"

    evidence: dict[str, list[str]] = {}
    blank = duplicates = 0
    for key in expected:
        value = obj.get(key)
        if value is None:
            evidence[key] = []
            continue
        if type(value) is not list:
            violations[key] = _check_quote_list(value) or "Expected list"
            continue
        kept: list[str] = []
        seen: set[str] = set()
        for item in value:
            if type(item) is not str:
                violations[key] = _check_quote_list(value) or "Expected list[str]"
                break
            quote = item.strip()
            if not quote:
                blank += 1
            elif quote in seen:
                duplicates += 1
            else:
                seen.add(quote)
                kept.append(quote)
        else:
            evidence[key] = kept

    if violations:
        if log:
            logger.error(
                "evidence_schema_invalid violation_count=%d keys=%s",
                len(violations),
                ",".join(_log_key(k) for k in violations),
            )
        raise EvidenceSchemaError(
            f"Evidence schema violations in {len(violations)} field(s)", violations
        )

    warnings: list[str] = []
    if unknown:
        dropped = sum(len(obj[k]) if isinstance(obj[k], list) else 1 for k in unknown)
        warnings.append(
            f"{len(unknown)} unknown key(s) not validated ({dropped} value(s) ignored): "
            + ", ".join(_log_key(k) for k in unknown)
        )
        if log:
            logger.warning("evidence_schema_unknown_keys count=%d values=%d", len(unknown), dropped)
    return ValidatedEvidence(
        evidence=evidence,
        warnings=tuple(warnings),
        unknown_keys=unknown,
        dropped_blank=blank,
        dropped_duplicates=duplicates,
    )


# --------------------------------------------------------------------------------------------
# Spec 053: normalisation, with a map back to the original text
# --------------------------------------------------------------------------------------------

_SMART_QUOTES: tuple[tuple[str, str], ...] = (
    ("\u2018", "'"),
    ("\u2019", "'"),
    ("\u201c", '"'),
    ("\u201d", '"'),
    ("\u00a0", " "),
)
_ZERO_WIDTH = ("\u200b", "\u200c", "\u200d", "\ufeff")
_ZERO_WIDTH_RE = re.compile("[\u200b\u200c\u200d\ufeff]")
_TAG_RE = re.compile(r"<[^>]+>")
# A run of non-ASCII characters with the ASCII character before it (which a combining mark
# may compose with). Cutting before any other ASCII character is NFKC-safe.
_NON_ASCII_RE = re.compile(r"[\x00-\x7f]?[^\x00-\x7f]+")

IntArray = npt.NDArray[np.int64]


def _replace_quotes(text: str) -> str:
    for src, dst in _SMART_QUOTES:
        if src in text:
            text = text.replace(src, dst)
    return text


def normalize_for_quote_match(text: str) -> str:
    """Normalise text for conservative quote matching (spec 053).

    NFKC; smart quotes to ASCII and NBSP to a space; zero-width characters removed;
    ``<tags>`` such as ``<laughter>`` replaced by a space; whitespace runs collapsed to one
    space and the ends stripped; lower case. Deterministic, no semantic matching.

    The steps are repeated until nothing changes (only ever needed for non-ASCII text, where
    removing a zero-width character or a tag can leave a letter next to a combining mark),
    so that normalising twice gives the same text as normalising once.
    """
    out = _normalize_pass(text)
    for _ in range(_MAX_PASSES):
        if out.isascii():
            break
        again = _normalize_pass(out)
        if again == out:
            break
        out = again
    return out


_MAX_PASSES = 8


def _nfkc(text: str) -> str:
    if text.isascii():
        return text
    # NBSP becomes a space under NFKC and composes with nothing: replacing it first lets the
    # common case (already-normalised text) skip the full NFKC pass.
    text = text.replace("\u00a0", " ")
    return text if unicodedata.is_normalized("NFKC", text) else unicodedata.normalize("NFKC", text)


def _has_zero_width(text: str) -> bool:
    return not text.isascii() and any(ch in text for ch in _ZERO_WIDTH)


def _normalize_pass(text: str) -> str:
    out = _replace_quotes(_nfkc(text))
    if _has_zero_width(out):
        out = _ZERO_WIDTH_RE.sub("", out)
    if "<" in out:
        out = _TAG_RE.sub(" ", out)
    # str.split() splits on the same whitespace as the regex class \s: runs collapse to one
    # space and the ends are stripped, much faster than a regex substitution.
    return " ".join(out.split()).lower()


@dataclass(frozen=True, slots=True, eq=False)
class NormalizedText:
    """A normalised transcript and, per normalised character, its ``[start, end)`` source.

    ``text == normalize_for_quote_match(original)``; ``starts[j]`` / ``ends[j]`` give the
    original characters that normalised character ``j`` came from (a whole tag or
    whitespace run maps to the one space that replaced it).
    """

    original: str
    text: str
    starts: IntArray = field(repr=False)
    ends: IntArray = field(repr=False)
    original_hash: str = ""

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """Map a non-empty ``[start, end)`` of the normalised text to the original text."""
        if not 0 <= start < end <= len(self.text):
            raise ValueError(f"span [{start}, {end}) outside the normalised text")
        return int(self.starts[start]), int(self.ends[end - 1])

    def trimmed_span(self, start: int, end: int) -> tuple[int | None, int | None]:
        """Like :meth:`original_span` after dropping spaces at the window's ends."""
        text = self.text
        while start < end and text[start] == " ":
            start += 1
        while end > start and text[end - 1] == " ":
            end -= 1
        if start >= end:
            return None, None
        return self.original_span(start, end)


def _nfkc_with_offsets(text: str) -> tuple[str, IntArray, IntArray]:
    pieces: list[str] = []
    starts: list[IntArray] = []
    ends: list[IntArray] = []
    pos = 0
    for match in _NON_ASCII_RE.finditer(text):
        a, b = match.span()
        if a > pos:
            pieces.append(text[pos:a])
            starts.append(np.arange(pos, a, dtype=np.int64))
            ends.append(np.arange(pos + 1, a + 1, dtype=np.int64))
        segment = match.group()
        out = unicodedata.normalize("NFKC", segment)
        per_char = [unicodedata.normalize("NFKC", ch) for ch in segment]
        if "".join(per_char) == out:
            lengths = np.fromiter((len(p) for p in per_char), dtype=np.int64, count=len(segment))
            origin = np.arange(a, b, dtype=np.int64)
            starts.append(np.repeat(origin, lengths))
            ends.append(np.repeat(origin + 1, lengths))
        else:  # composition inside the segment: map it as one unit
            starts.append(np.full(len(out), a, dtype=np.int64))
            ends.append(np.full(len(out), b, dtype=np.int64))
        pieces.append(out)
        pos = b
    if pos < len(text):
        pieces.append(text[pos:])
        starts.append(np.arange(pos, len(text), dtype=np.int64))
        ends.append(np.arange(pos + 1, len(text) + 1, dtype=np.int64))
    out_text = "".join(pieces)
    if out_text != unicodedata.normalize("NFKC", text):  # pragma: no cover - safety net
        logger.debug("nfkc_segmentation_fallback length=%d", len(text))
        whole = unicodedata.normalize("NFKC", text)
        size = len(whole)
        return whole, np.zeros(size, dtype=np.int64), np.full(size, len(text), dtype=np.int64)
    if not starts:
        empty = np.zeros(0, dtype=np.int64)
        return out_text, empty, empty
    return out_text, np.concatenate(starts), np.concatenate(ends)


def _substitute(
    text: str, starts: IntArray, ends: IntArray, pattern: re.Pattern[str], repl: str
) -> tuple[str, IntArray, IntArray]:
    """Apply ``pattern.sub(repl, text)`` (``repl`` is "" or one character), keeping the map."""
    spans = [m.span() for m in pattern.finditer(text)]
    if not spans:
        return text, starts, ends
    a = np.fromiter((s for s, _ in spans), dtype=np.int64, count=len(spans))
    b = np.fromiter((e for _, e in spans), dtype=np.int64, count=len(spans))
    diff = np.zeros(len(text) + 1, dtype=np.int64)
    if repl:
        ends = ends.copy()
        ends[a] = ends[b - 1]  # the replacement character covers the whole match
        np.add.at(diff, a + 1, 1)
    else:
        np.add.at(diff, a, 1)
    np.add.at(diff, b, -1)
    keep = np.cumsum(diff[:-1]) == 0
    return pattern.sub(repl, text), starts[keep], ends[keep]


def _whitespace_codes() -> IntArray:
    # Every whitespace character lies below U+3001; str.isspace() agrees with regex \s.
    return np.array([c for c in range(0x3001) if chr(c).isspace()], dtype=np.int64)


_WHITESPACE_CODES = _whitespace_codes()


def _collapse_whitespace(
    text: str, starts: IntArray, ends: IntArray
) -> tuple[str, IntArray, IntArray]:
    """Collapse whitespace runs to one space and strip the ends, keeping the map."""
    # a lone surrogate (from a JSON "\\ud800" escape) passes through, it is no error here
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    ws = np.isin(codes, _WHITESPACE_CODES)
    if not ws.any():
        return text, starts, ends
    prev = np.concatenate(([False], ws[:-1]))
    nxt = np.concatenate((ws[1:], [False]))
    first = np.flatnonzero(ws & ~prev)  # each run is kept as its first character...
    last = np.flatnonzero(ws & ~nxt)
    ends = ends.copy()
    ends[first] = ends[last]  # ...which covers the whole run
    keep = ~(ws & prev)
    if ws[0]:
        keep[0] = False
    if ws[-1]:
        keep[first[-1]] = False
    new_codes = np.where(ws, np.uint32(32), codes)[keep]
    out = new_codes.astype("<u4").tobytes().decode("utf-32-le", "surrogatepass")
    return out, starts[keep], ends[keep]


def normalize_with_offsets(text: str) -> NormalizedText:
    """Normalise like :func:`normalize_for_quote_match` and keep a map to the original.

    Linear in the length of ``text``; ASCII text skips the NFKC segmentation.
    """
    work, starts, ends = _pass_with_offsets(text)
    for _ in range(_MAX_PASSES):
        if work.isascii() or _normalize_pass(work) == work:
            break
        work, inner_starts, inner_ends = _pass_with_offsets(work)
        starts, ends = starts[inner_starts], ends[inner_ends - 1]
    return NormalizedText(
        original=text, text=work, starts=starts, ends=ends, original_hash=short_hash(text)
    )


def _pass_with_offsets(text: str) -> tuple[str, IntArray, IntArray]:
    work = text.replace("\u00a0", " ") if not text.isascii() else text  # one for one
    if work.isascii() or unicodedata.is_normalized("NFKC", work):
        starts = np.arange(len(work), dtype=np.int64)
        ends = starts + 1
    else:
        work, starts, ends = _nfkc_with_offsets(work)
    if not work.isascii():
        work = _replace_quotes(work)  # one character for one: the map is unchanged
        if _has_zero_width(work):
            work, starts, ends = _substitute(work, starts, ends, _ZERO_WIDTH_RE, "")
    work, starts, ends = _substitute(work, starts, ends, _TAG_RE, " ")
    work, starts, ends = _collapse_whitespace(work, starts, ends)
    lowered = work.lower()
    if len(lowered) != len(work):  # a few characters lower-case to two (e.g. dotted I)
        sizes = np.fromiter((len(ch.lower()) for ch in work), dtype=np.int64, count=len(work))
        starts, ends = np.repeat(starts, sizes), np.repeat(ends, sizes)
    return lowered, starts, ends


# --------------------------------------------------------------------------------------------
# Spec 053: grounding
# --------------------------------------------------------------------------------------------


def naive_fuzzy_score(quote: str, transcript: str) -> float:
    """The definition of fuzzy grounding, evaluated naively: ``partial_ratio / 100``.

    Higher is better; a quote is grounded in fuzzy mode iff this is ``>= threshold``.
    Kept as the reference the fast path is tested and benchmarked against.
    """
    return (
        fuzz.partial_ratio(normalize_for_quote_match(quote), normalize_for_quote_match(transcript))
        / 100.0
    )


@dataclass(frozen=True, slots=True)
class QuoteMatch:
    """Where one quote stands against the transcript.

    Grounded quotes carry the ``method`` that accepted them and the matching span
    ``[start, end)`` in the ORIGINAL transcript. Rejected quotes carry ``method=None`` and
    the closest span with its similarity (``None`` when there is none or locating is off).
    ``score`` is in [0, 1], higher is better (1.0 for an exact normalised substring).
    """

    key: str
    index: int
    quote: str
    grounded: bool
    method: MatchMethod | None
    score: float
    start: int | None
    end: int | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "index": self.index,
            "quote": self.quote,
            "grounded": self.grounded,
            "method": self.method,
            "score": round(self.score, 6),
            "start": self.start,
            "end": self.end,
        }


@dataclass(frozen=True, slots=True)
class EvidenceGroundingStats:
    """Counts only (no text): what was extracted, kept and rejected, per domain."""

    extracted_count: int
    validated_count: int
    rejected_count: int
    rejected_by_domain: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {
            "extracted_count": self.extracted_count,
            "validated_count": self.validated_count,
            "rejected_count": self.rejected_count,
            "rejected_by_domain": dict(self.rejected_by_domain),
        }


@dataclass(frozen=True, slots=True)
class EvidenceFailureEvent:
    """Privacy-safe record that evidence was produced but none of it could be grounded."""

    category: str
    severity: Literal["error"]
    message: str
    stage: str
    extracted_count: int
    validation_mode: EvidenceMode
    transcript_hash: str
    transcript_length: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "category": self.category,
            "severity": self.severity,
            "message": self.message,
            "stage": self.stage,
            "extracted_count": self.extracted_count,
            "validation_mode": self.validation_mode,
            "transcript_hash": self.transcript_hash,
            "transcript_length": self.transcript_length,
        }


@dataclass(frozen=True, slots=True)
class EvidenceGroundingResult:
    """Outcome of grounding a set of evidence quotes in one transcript.

    ``validated`` keeps only grounded quotes (every key present, possibly empty);
    ``rejected`` holds the others; ``matches`` has one entry per quote in input order.
    ``failure_event`` is set when quotes were extracted but none was grounded.
    """

    validated: dict[str, list[str]]
    rejected: dict[str, list[str]]
    matches: tuple[QuoteMatch, ...]
    stats: EvidenceGroundingStats
    warnings: tuple[str, ...]
    failure_event: EvidenceFailureEvent | None
    status: CheckStatus
    mode: EvidenceMode
    threshold: float
    transcript_hash: str
    transcript_length: int

    @property
    def all_rejected(self) -> bool:
        return self.stats.extracted_count > 0 and self.stats.validated_count == 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe plain data, in the shape of the ``groundwatch evidence`` output."""
        return {
            "validated": {k: list(v) for k, v in self.validated.items()},
            "rejected": {k: list(v) for k, v in self.rejected.items()},
            "matches": [m.to_dict() for m in self.matches],
            "stats": self.stats.to_dict(),
            "warnings": list(self.warnings),
            "failure_event": self.failure_event.to_dict() if self.failure_event else None,
            "status": self.status.to_dict(),
            "mode": self.mode,
            "threshold": self.threshold,
            "transcript": {"hash": self.transcript_hash, "length": self.transcript_length},
        }

    def to_storage_dict(self) -> dict[str, Any]:
        """The ``evidence_validation`` row: counts, mode, status and hash only, never text."""
        return {
            "transcript_hash": self.transcript_hash,
            "transcript_len": self.transcript_length,
            "mode": self.mode,
            "status": self.status.status,
            "extracted_count": self.stats.extracted_count,
            "validated_count": self.stats.validated_count,
            "rejected_count": self.stats.rejected_count,
            "rejected_by_domain": dict(self.stats.rejected_by_domain),
            "failure_category": self.failure_event.category if self.failure_event else None,
        }


class EvidenceGroundingError(ValueError):
    """Strict mode: evidence was produced but none of it could be grounded.

    ``result`` still carries the counts and the failure event, so they can be stored.
    """

    def __init__(self, message: str, *, result: EvidenceGroundingResult) -> None:
        super().__init__(message)
        self.result = result


_ALL_REJECTED_MESSAGE = (
    "Evidence quotes were produced but none could be grounded in the transcript."
)


def _coerce_evidence(
    evidence: Mapping[str, Sequence[str]] | ValidatedEvidence,
) -> dict[str, list[str]]:
    """Type-check evidence handed to the grounder (no stripping: quotes are taken as given)."""
    if isinstance(evidence, ValidatedEvidence):
        return evidence.evidence
    if not isinstance(evidence, Mapping):
        raise EvidenceSchemaError(
            f"Expected a mapping of key -> quotes, got {_type_name(evidence)}",
            {ROOT_KEY: f"Expected object, got {_type_name(evidence)}"},
        )
    violations: dict[str, str] = {}
    out: dict[str, list[str]] = {}
    for i, (key, quotes) in enumerate(evidence.items()):
        if not isinstance(key, str):
            violations[f"<key #{i}>"] = f"Expected string key, got {_type_name(key)}"
            continue
        value: object = list(quotes) if isinstance(quotes, tuple) else quotes
        problem = _check_quote_list(value)
        if problem is not None:
            violations[key] = problem
        else:
            out[key] = list(quotes)
    if violations:
        raise EvidenceSchemaError(
            f"Evidence schema violations in {len(violations)} field(s)", violations
        )
    return out


class EvidenceGrounder:
    """Grounds evidence quotes in a transcript (spec 053) and locates them.

    Args:
        mode: ``"substring"`` (default, conservative: the normalised quote must occur) or
            ``"fuzzy"`` (opt-in: ``partial_ratio / 100 >= threshold``; may accept paraphrases).
        threshold: Fuzzy threshold in (0, 1]; 0.9 allows minor whitespace/punctuation drift,
            below 0.8 is too permissive. Ignored in substring mode.
        fail_on_all_rejected: Raise :class:`EvidenceGroundingError` when quotes were produced
            but none was grounded (the failure event is recorded either way).
        log_rejections: Log each rejection and a summary (counts and hashes, never text).
        locate_rejected: Find the closest span of each rejected quote (one alignment over the
            transcript per rejected quote); off, rejected quotes carry no span.
    """

    def __init__(
        self,
        *,
        mode: EvidenceMode = "substring",
        threshold: float = 0.85,
        fail_on_all_rejected: bool = False,
        log_rejections: bool = True,
        locate_rejected: bool = True,
    ) -> None:
        if mode not in ("substring", "fuzzy"):
            raise ValueError(f"mode must be 'substring' or 'fuzzy', got {mode!r}")
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}")
        self.mode: EvidenceMode = mode
        self.threshold = float(threshold)
        self.fail_on_all_rejected = fail_on_all_rejected
        self.log_rejections = log_rejections
        self.locate_rejected = locate_rejected
        # Lowered a hair so that rounding in the cutoff can never drop a window that the
        # exact test ``score / 100 >= threshold`` accepts; the exact test is applied after.
        self._cutoff = max(0.0, self.threshold * 100.0 - 1e-6)

    @staticmethod
    def prepare(transcript: str) -> NormalizedText:
        """Normalise a transcript once (with its offset map), to reuse across calls."""
        if not isinstance(transcript, str):
            raise TypeError(f"transcript must be str, got {_type_name(transcript)}")
        return normalize_with_offsets(transcript)

    def _closest(
        self, quote_norm: str, norm: NormalizedText
    ) -> tuple[float, int | None, int | None]:
        align = fuzz.partial_ratio_alignment(quote_norm, norm.text)
        if align is None or align.score <= 0.0:
            return 0.0, None, None
        start, end = norm.trimmed_span(align.dest_start, align.dest_end)
        return align.score / 100.0, start, end

    def _match(self, key: str, index: int, quote: str, norm: NormalizedText) -> QuoteMatch:
        quote_norm = normalize_for_quote_match(quote)
        text = norm.text
        pos = text.find(quote_norm) if quote_norm else -1
        if pos >= 0:
            start, end = norm.original_span(pos, pos + len(quote_norm))
            return QuoteMatch(key, index, quote, True, "substring", 1.0, start, end)
        if self.mode == "fuzzy":
            if not quote_norm or not text:
                # partial_ratio of an empty string: 100 if both are empty, else 0.
                score = 1.0 if not quote_norm and not text else 0.0
                grounded = score >= self.threshold
                return QuoteMatch(
                    key,
                    index,
                    quote,
                    grounded,
                    "fuzzy" if grounded else None,
                    score,
                    0 if grounded else None,
                    0 if grounded else None,
                )
            if self.locate_rejected:
                align = fuzz.partial_ratio_alignment(quote_norm, text)
            else:
                align = fuzz.partial_ratio_alignment(quote_norm, text, score_cutoff=self._cutoff)
            if align is not None:
                score = align.score / 100.0
                span: tuple[int | None, int | None] = (None, None)
                if score > 0.0:
                    span = norm.trimmed_span(align.dest_start, align.dest_end)
                if score >= self.threshold:
                    return QuoteMatch(key, index, quote, True, "fuzzy", score, *span)
                return QuoteMatch(key, index, quote, False, None, score, *span)
            return QuoteMatch(key, index, quote, False, None, 0.0, None, None)
        if self.locate_rejected and quote_norm and text:
            closest, near_start, near_end = self._closest(quote_norm, norm)
            return QuoteMatch(key, index, quote, False, None, closest, near_start, near_end)
        return QuoteMatch(key, index, quote, False, None, 0.0, None, None)

    def check(
        self,
        evidence: Mapping[str, Sequence[str]] | ValidatedEvidence,
        transcript: str | NormalizedText,
    ) -> EvidenceGroundingResult:
        """Ground every quote of ``evidence`` in ``transcript``.

        Args:
            evidence: ``{key: [quote, ...]}``, ideally from :func:`validate_evidence_schema`.
            transcript: The source text, or :meth:`prepare`'s result to reuse normalisation.

        Returns:
            The grounded and rejected quotes, one :class:`QuoteMatch` per quote, counts,
            warnings, status and (when none was grounded) the failure event.

        Raises:
            EvidenceSchemaError: ``evidence`` is not a mapping of string keys to string lists.
            EvidenceGroundingError: ``fail_on_all_rejected`` and no quote was grounded.
        """
        quotes_by_key = _coerce_evidence(evidence)
        norm = transcript if isinstance(transcript, NormalizedText) else self.prepare(transcript)
        t_hash = norm.original_hash or short_hash(norm.original)
        t_len = len(norm.original)
        warnings: list[str] = (
            list(evidence.warnings) if isinstance(evidence, ValidatedEvidence) else []
        )
        if not norm.text:
            warnings.append("transcript is empty after normalisation")
        logger.debug(
            "evidence_grounding_start keys=%d quotes=%d transcript_hash=%s transcript_len=%d "
            "mode=%s",
            len(quotes_by_key),
            sum(len(q) for q in quotes_by_key.values()),
            t_hash,
            t_len,
            self.mode,
        )

        validated: dict[str, list[str]] = {}
        rejected: dict[str, list[str]] = {}
        rejected_by_domain: dict[str, int] = {}
        matches: list[QuoteMatch] = []
        for key, quotes in quotes_by_key.items():
            validated[key], rejected[key], rejected_by_domain[key] = [], [], 0
            for index, quote in enumerate(quotes):
                match = self._match(key, index, quote, norm)
                matches.append(match)
                if match.grounded:
                    validated[key].append(quote)
                    continue
                rejected[key].append(quote)
                rejected_by_domain[key] += 1
                if self.log_rejections:
                    logger.warning(
                        "evidence_quote_rejected domain=%s quote_hash=%s quote_len=%d "
                        "transcript_hash=%s transcript_len=%d mode=%s",
                        _log_key(key),
                        short_hash(quote),
                        len(quote),
                        t_hash,
                        t_len,
                        self.mode,
                    )

        extracted = len(matches)
        kept = sum(m.grounded for m in matches)
        stats = EvidenceGroundingStats(extracted, kept, extracted - kept, rejected_by_domain)
        if stats.rejected_count and self.log_rejections:
            logger.info(
                "evidence_grounding_complete extracted_count=%d validated_count=%d "
                "rejected_count=%d rejected_by_domain=%s transcript_hash=%s",
                extracted,
                kept,
                stats.rejected_count,
                ",".join(f"{_log_key(k)}:{v}" for k, v in rejected_by_domain.items() if v),
                t_hash,
            )
        event = None
        if extracted and not kept:
            event = EvidenceFailureEvent(
                category=FAILURE_CATEGORY,
                severity="error",
                message=_ALL_REJECTED_MESSAGE,
                stage="evidence_grounding",
                extracted_count=extracted,
                validation_mode=self.mode,
                transcript_hash=t_hash,
                transcript_length=t_len,
            )
            logger.error(
                "evidence_hallucination extracted_count=%d mode=%s transcript_hash=%s",
                extracted,
                self.mode,
                t_hash,
            )
        result = EvidenceGroundingResult(
            validated=validated,
            rejected=rejected,
            matches=tuple(matches),
            stats=stats,
            warnings=tuple(warnings),
            failure_event=event,
            status=OK if extracted else skipped("no evidence quotes to ground"),
            mode=self.mode,
            threshold=self.threshold,
            transcript_hash=t_hash,
            transcript_length=t_len,
        )
        if event is not None and self.fail_on_all_rejected:
            raise EvidenceGroundingError(_ALL_REJECTED_MESSAGE, result=result)
        return result


def validate_evidence_grounding(
    evidence: Mapping[str, Sequence[str]] | ValidatedEvidence,
    transcript_text: str | NormalizedText,
    *,
    mode: EvidenceMode = "substring",
    fuzzy_threshold: float = 0.85,
    log_rejections: bool = True,
    fail_on_all_rejected: bool = False,
    locate_rejected: bool = True,
) -> EvidenceGroundingResult:
    """One-call convenience around :class:`EvidenceGrounder` (same options, same result)."""
    grounder = EvidenceGrounder(
        mode=mode,
        threshold=fuzzy_threshold,
        fail_on_all_rejected=fail_on_all_rejected,
        log_rejections=log_rejections,
        locate_rejected=locate_rejected,
    )
    return grounder.check(evidence, transcript_text)
