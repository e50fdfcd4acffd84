"""Citation markers in an answer and the sources they resolve to.

Recognised forms: ``[1]``, ``[2, 3]``, ``[1-3]``, ``[note-3]``, ``[S2; S3]``,
``[source: note-3]``, ``(source: note-3)``, ``(sources: a, b)``, ``(see note-3)``,
``(note-3)`` and prose such as ``per note-3`` or ``according to note-3``.

Resolution of a label, in order: a source whose id equals the label (case-insensitive); a
bare number ``n`` (or ``S<n>``, ``source <n>``, ``ref <n>``) is the n-th source, 1-based,
when no source id is itself such a number; anything else is a phantom citation
(``source_id`` ``None``). A bare bracketed word without a digit (``[sic]``) is a citation
only when it names an existing source.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from core.epistemic.types import Citation

_ID = r"[A-Za-z0-9][\w.:/#-]{0,39}"
_LIST = rf"{_ID}(?:\s*[,;]\s*(?:and\s+)?{_ID})*"
_PREFIX = r"(?:sources?|refs?|references?|cf\.?|see|citing|from)\s*:?\s*"
_BRACKET = re.compile(rf"\[\s*(?:{_PREFIX})?(?P<body>{_LIST}|\d+\s*[-–]\s*\d+)\s*\]", re.I)
_PAREN = re.compile(
    rf"\(\s*(?P<prefix>{_PREFIX}|per\s+)?(?P<body>{_LIST}|\d+\s*[-–]\s*\d+)\s*\)", re.I
)
_PROSE = re.compile(
    rf"\b(?:per|according\s+to|as\s+(?:documented|stated|noted|recorded)\s+in|see|cited\s+in)"
    rf"\s+(?:the\s+)?(?P<body>{_ID})",
    re.I,
)
_NUMBERED = re.compile(r"^(?:s|src|source|ref|doc|document)?[\s_-]?(\d{1,3})$", re.I)
_IDLIKE = re.compile(r"^[A-Za-z]+[\w.-]*?[-_]?\d+[A-Za-z0-9-]*$")
_RANGE = re.compile(r"^(\d+)\s*[-–]\s*(\d+)$")
_ID_PREFIXES = ("note", "doc", "source", "src", "s", "msg", "ref", "transcript", "lab", "report")


class CitationResolver:
    """Finds citation markers and resolves them against the ids of the sources."""

    def __init__(self, source_ids: Sequence[str]) -> None:
        self.source_ids = tuple(source_ids)
        self._by_lower = {sid.lower(): sid for sid in self.source_ids}
        self._numeric_ids = any(_NUMBERED.match(sid) for sid in self.source_ids)

    def resolve(self, label: str) -> str | None:
        """Source id a label refers to, ``None`` when no such source exists."""
        key = label.strip().lower()
        if key in self._by_lower:
            return self._by_lower[key]
        match = _NUMBERED.match(key)
        if match and not self._numeric_ids:
            n = int(match.group(1))
            if 1 <= n <= len(self.source_ids):
                return self.source_ids[n - 1]
        return None

    def _is_citation_label(self, label: str, *, strict: bool) -> bool:
        key = label.lower()
        if key in self._by_lower:
            return True
        if key.isdigit():
            return not strict
        if not _IDLIKE.match(label):
            return False
        if strict:
            prefix = re.match(r"[A-Za-z]+", label)
            return bool(prefix) and prefix.group(0).lower() in _ID_PREFIXES  # type: ignore[union-attr]
        return True

    def _labels(self, body: str, *, strict: bool) -> list[str] | None:
        body = body.strip()
        ranged = _RANGE.match(body)
        if ranged:
            lo, hi = int(ranged.group(1)), int(ranged.group(2))
            if lo <= hi and hi - lo <= 20:
                return [str(n) for n in range(lo, hi + 1)]
            return None
        parts = [re.sub(r"^and\s+", "", p.strip(), flags=re.I) for p in re.split(r"[,;]", body)]
        parts = [p for p in parts if p]
        if not parts or not all(self._is_citation_label(p, strict=strict) for p in parts):
            return None
        return parts

    def find(self, text: str) -> list[Citation]:
        """All citation markers of ``text``, in order, with offsets into ``text``."""
        found: list[Citation] = []
        taken: list[tuple[int, int]] = []

        def add(match: re.Match[str], labels: list[str]) -> None:
            start, end = match.span()
            if any(s < end and start < e for s, e in taken):
                return
            taken.append((start, end))
            for label in labels:
                found.append(
                    Citation(
                        marker=match.group(0),
                        label=label,
                        start=start,
                        end=end,
                        source_id=self.resolve(label),
                    )
                )

        for match in _BRACKET.finditer(text):
            labels = self._labels(match.group("body"), strict=False)
            if labels:
                add(match, labels)
        for match in _PAREN.finditer(text):
            # A bare parenthesised token must look like a source id: "(note-3)", not "(x2)".
            strict = not match.group("prefix")
            labels = self._labels(match.group("body"), strict=strict)
            if labels and not (strict and all(lab.isdigit() for lab in labels)):
                add(match, labels)
        for match in _PROSE.finditer(text):
            label = match.group("body").rstrip(".:")
            if label.lower() in self._by_lower or (
                _IDLIKE.match(label) and not label.isdigit() and re.search(r"\d", label)
            ):
                add(match, [label])
        found.sort(key=lambda c: (c.start, c.end))
        return found


def strip_citations(text: str, citations: Sequence[Citation], *, offset: int = 0) -> str:
    """``text`` without the citation markers (offsets relative to ``offset``), tidied."""
    spans = sorted({(c.start - offset, c.end - offset) for c in citations})
    out: list[str] = []
    pos = 0
    for start, end in spans:
        if start < pos or start < 0 or end > len(text):
            continue
        out.append(text[pos:start])
        pos = end
    out.append(text[pos:])
    cleaned = "".join(out)
    cleaned = re.sub(r"\s+([.,;:!?])", r"\1", cleaned)
    cleaned = re.sub(
        r"\b(?:per|according to|see|as (?:documented|stated|noted|recorded) in)"
        r"\s*(?:the\s*)?([.,;:!?]|$)",
        r"\1",
        cleaned,
        flags=re.I,
    )
    return re.sub(r"\s{2,}", " ", cleaned).strip(" ,;")
