"""Escaped-HTML highlighting of record text (answers, sources, transcripts).

Every character of record text goes through :func:`html.escape` before it reaches the page;
the only markup is the ``<mark>``/``<span>`` wrappers built here, with styles from a fixed
palette. An answer containing ``<script>`` therefore shows as text. Pure functions, no
Streamlit: the pages pass the result to ``st.html``.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal[
    "grounded", "unsupported", "contradicted", "evidence", "closest", "rejected", "focus"
]

#: Fixed styles per highlight kind (never built from record text).
STYLES: dict[str, str] = {
    "grounded": "background:#d7efe0;border-bottom:2px solid #2e8b57;",
    "unsupported": "background:#fdebc8;border-bottom:2px solid #c98a00;",
    "contradicted": "background:#f8d3d3;border-bottom:2px solid #b03030;",
    "evidence": "background:#d7efe0;border-bottom:2px solid #2e8b57;",
    "closest": "background:#e4e4f7;border-bottom:2px dashed #5a5aa8;",
    "rejected": "background:#f8d3d3;border-bottom:2px dashed #b03030;",
    "focus": "background:#fdebc8;outline:2px solid #c98a00;",
}

STATUS_LABELS: dict[str, str] = {
    "grounded": "grounded",
    "unsupported": "unsupported",
    "contradicted": "contradicted",
}

_BOX = (
    "white-space:pre-wrap;line-height:1.6;padding:0.6rem 0.8rem;border:1px solid #d9dde3;"
    "border-radius:6px;background:#fbfbfc;font-size:0.95rem;"
)


@dataclass(frozen=True, slots=True)
class Highlight:
    """A span ``[start, end)`` of the text to mark, with its kind and a tooltip."""

    start: int
    end: int
    kind: Kind | str
    title: str = ""


def escape_text(text: str | None) -> str:
    """Record text as safe HTML (``&``, ``<``, ``>``, quotes escaped); None -> empty."""
    return html.escape(text or "", quote=True)


def _clean(spans: Sequence[Highlight], length: int) -> list[Highlight]:
    """Valid spans clipped to the text, sorted, overlaps trimmed (the earlier span wins)."""
    out: list[Highlight] = []
    last_end = 0
    for h in sorted(spans, key=lambda s: (s.start, -s.end)):
        start, end = max(0, min(h.start, length)), max(0, min(h.end, length))
        start = max(start, last_end)
        if end <= start:
            continue
        kind = h.kind if h.kind in STYLES else "focus"  # class names never come from data
        out.append(Highlight(start, end, kind, h.title))
        last_end = end
    return out


def highlight_html(text: str | None, spans: Sequence[Highlight], *, box: bool = True) -> str:
    """The text as escaped HTML with each span wrapped in a styled ``<mark>``.

    Offsets are character offsets into ``text``; spans outside it are clipped, overlapping
    ones trimmed. Titles are escaped too.
    """
    raw = text or ""
    parts: list[str] = []
    pos = 0
    for h in _clean(spans, len(raw)):
        parts.append(escape_text(raw[pos : h.start]))
        title = f' title="{escape_text(h.title)}"' if h.title else ""
        parts.append(
            f'<mark class="gw-{h.kind}" style="{STYLES[h.kind]}"{title}>'
            f"{escape_text(raw[h.start : h.end])}</mark>"
        )
        pos = h.end
    parts.append(escape_text(raw[pos:]))
    body = "".join(parts)
    return f'<div class="gw-text" style="{_BOX}">{body}</div>' if box else body


def find_span(text: str | None, fragment: str | None) -> tuple[int, int] | None:
    """Where ``fragment`` occurs in ``text`` (exact, then case-insensitive), or None."""
    if not text or not fragment:
        return None
    pos = text.find(fragment)
    if pos < 0:
        pos = text.lower().find(fragment.lower())
    if pos < 0:
        return None
    return pos, pos + len(fragment)


def badge(label: str, kind: str) -> str:
    """A small coloured label (escaped) for a status or verdict."""
    style = STYLES.get(kind, "background:#eceff3;")
    return (
        f'<span class="gw-badge" style="{style}padding:0.05rem 0.4rem;border-radius:4px;'
        f'font-size:0.85rem;">{escape_text(label)}</span>'
    )


def contradiction_badges(contradiction: Mapping[str, Any]) -> str:
    """A contradiction's severity and check type, and the entity it concerns, as badges."""
    kind = f"{contradiction.get('severity') or ''} {contradiction['check_type']}"
    return badge(kind, "contradicted") + " " + badge(contradiction.get("entity") or "", "focus")


def legend(kinds: Sequence[str]) -> str:
    """A one-line legend of highlight kinds."""
    return " ".join(badge(k, k) for k in kinds)


# What Streamlit Markdown interprets inside a line: emphasis, code, links and images,
# HTML, headings, tables, strikethrough, maths, emoji and colour directives.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]{}()<>#!|~:$])")
_AUTOLINK = re.compile(r"(?i)(?:\\:/|www\.)")


def md_text(value: object) -> str:
    """A record field (id, source id, model name, reason) as literal text inside Streamlit
    Markdown (titles, captions, button labels): every character Markdown interprets inside a
    line is backslash-escaped, so ``**x**``, links, images (which the browser would fetch) and
    ``:red[...]`` directives are shown, never interpreted. Newlines become spaces."""
    text = " ".join(str(value if value is not None else "").split())
    text = _MARKDOWN_SPECIAL.sub(r"\\\1", text)
    # GFM turns a bare "http://..." or "www." into a link whatever is escaped: an invisible
    # word joiner keeps the text as it reads and makes it no address
    return _AUTOLINK.sub(lambda m: m.group(0)[:-1] + "\u2060" + m.group(0)[-1], text)


def escaped_block(text: str | None) -> str:
    """Record text in a box, escaped, without highlights."""
    return highlight_html(text, ())


__all__ = [
    "STYLES",
    "Highlight",
    "badge",
    "escape_text",
    "escaped_block",
    "find_span",
    "highlight_html",
    "legend",
    "md_text",
]
