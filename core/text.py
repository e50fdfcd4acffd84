"""Text utilities shared by the detectors: hashing, normalisation, sentence/statement splitting.

Hashes make logs privacy-safe (log ``short_hash(text)``, never the text). Splitting keeps
character offsets into the original text so that every statement and every piece of evidence
can be highlighted where it came from.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, wraps
from typing import Any, TypeVar


def short_hash(text: str, length: int = 12) -> str:
    """First ``length`` hex digits of the SHA-256 of ``text`` (safe to log, unlike the text)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:length]


def content_hash(text: str) -> str:
    """Full SHA-256 hex digest, used as a cache key for embeddings and LLM responses."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


_SURROGATE_RE = re.compile("[\ud800-\udfff]")
# Control characters no clinical text holds, and PostgreSQL cannot store NUL at all: rejected at
# the input boundary on both engines alike (tab, line feed, carriage return, vertical tab and
# form feed are whitespace and stay).
_CONTROL_RE = re.compile("[\x00-\x08\x0e-\x1f\x7f]")

SURROGATE_ERROR = "contains an unpaired surrogate escape (such as \\ud800): not valid Unicode text"
CONTROL_ERROR = "contains a NUL or control character (such as \\u0000): not storable text"


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> object:
    """A value as a CSV cell that a spreadsheet shows and never runs: text starting with
    ``=``, ``+``, ``-``, ``@``, tab or carriage return gets a leading apostrophe (the OWASP
    rule against formula injection); numbers and other values pass unchanged."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


class JSONInputError(ValueError):
    """Input that is not acceptable JSON; the message says where and why, never the text."""


def _no_duplicate_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in pairs:
        if key in out:
            raise JSONInputError(f"duplicate key {short_hash(key)} (sha256 prefix) in one object")
        out[key] = value
    return out


def _no_constant(name: str) -> object:
    raise JSONInputError(f"{name} is not a JSON number")


def loads_input(text: str) -> object:
    """Decode JSON from outside (files, uploads, import lines) with the same rules everywhere:
    syntax errors name line and column; duplicate keys in one object, ``NaN``/``Infinity``,
    integers of more than 4,300 digits and nesting deeper than the interpreter allows are
    refused. Raises :class:`JSONInputError`; the message never holds the input's text."""
    try:
        return json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constant)
    except JSONInputError:
        raise
    except RecursionError:
        raise JSONInputError("nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise JSONInputError(f"{exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    except ValueError:  # the interpreter's limit on integer digits
        raise JSONInputError("a number has more digits than allowed (4,300)") from None


def unstorable_text(value: object) -> tuple[str, str] | None:
    """Where in a decoded JSON value a string (or a key) cannot be stored as text: an unpaired
    UTF-16 surrogate (a JSON ``"\\ud800"`` escape decodes to one, yet no Unicode text may hold
    it) or a NUL or control character (``"\\u0000"``). Returns ``(path, reason)``, the path
    such as ``sources[0].text``, else None. Iterative, so any depth the JSON decoder accepted
    is walked; the first problem in document order is named."""
    stack: list[tuple[object, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            reason = _text_problem(item)
            if reason:
                return path or "value", reason
        elif isinstance(item, dict):
            for key in item:
                reason = _text_problem(key) if isinstance(key, str) else None
                if reason:
                    return (f"{path} (a key)" if path else "a key"), reason
            stack.extend(
                (child, f"{path}.{key}" if path else str(key))
                for key, child in reversed(item.items())
            )
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{i}]") for i, child in reversed(list(enumerate(item))))
    return None


def _text_problem(text: str) -> str | None:
    if _SURROGATE_RE.search(text):
        return SURROGATE_ERROR
    if _CONTROL_RE.search(text):
        return CONTROL_ERROR
    return None


def unpaired_surrogate(value: object) -> str | None:
    """The path of the first string of ``value`` that holds an unpaired surrogate, else None."""
    found = unstorable_text(value)
    return found[0] if found and found[1] == SURROGATE_ERROR else None


@dataclass(frozen=True, slots=True)
class Span:
    """A piece of a text with its ``[start, end)`` character offsets in the original.

    ``text`` equals ``original[start:end]``, except for a coordinated claim split off a list
    ("takes metformin and lisinopril"), whose text repeats the shared head ("takes
    lisinopril") while ``start``/``end`` cover the item's own words, and for a statement
    under a label that names a kind of fact, whose text says the label first ("Allergies:
    penicillin") while ``start``/``end`` cover its own words.
    """

    text: str
    start: int
    end: int


# --- normalisation -----------------------------------------------------------------------

_TRANSLATE = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2013": "-",
        "\u2014": "-",
        "\u2212": "-",
        "\u00a0": " ",
        "\u2022": " ",
    }
)


def normalize_with_map(text: str) -> tuple[str, list[int]]:
    """Lower-cased text with punctuation dropped and spaces collapsed, plus an offset map.

    Punctuation inside numbers ("6.8", "132/84", "1,000") and "%" are kept so that values
    survive. ``mapping[i]`` is the offset in ``text`` of the i-th normalised character, so a
    match found in the normalised text maps back to a span of the original.
    """
    out: list[str] = []
    mapping: list[int] = []
    n = len(text)
    for i, raw in enumerate(text):
        if raw.isascii():
            ch = raw.lower()
        else:
            ch = unicodedata.normalize("NFKC", raw.translate(_TRANSLATE)).lower()
        if not ch:
            continue
        c = ch[0]
        if c.isalnum() or c == "%":
            out.append(c)
            mapping.append(i)
            continue
        if c in "./,:" and 0 < i < n - 1 and text[i - 1].isdigit() and text[i + 1].isdigit():
            if c != ",":  # "1,000" -> "1000"
                out.append(c)
                mapping.append(i)
            continue
        if c == "'" and 0 < i < n - 1 and text[i - 1].isalpha() and text[i + 1].isalpha():
            out.append(c)
            mapping.append(i)
            continue
        if out and out[-1] != " ":
            out.append(" ")
            mapping.append(i)
    while out and out[-1] == " ":
        out.pop()
        mapping.pop()
    return "".join(out), mapping


def normalize(text: str) -> str:
    """Normalised form used for exact matching (see :func:`normalize_with_map`)."""
    return normalize_with_map(text)[0]


# --- sentences ---------------------------------------------------------------------------

_ABBREVIATIONS = frozenset(
    """
    dr mr mrs ms prof sr jr st vs etc approx appt apt dept est no nos fig al inc ltd co
    pt pts hx dx tx rx fx sx bx cx q qd qod bid tid qid qhs qam qpm prn po pr sl iv im sc
    subq mg mcg ml cc e g i ie eg cf ca resp temp max min avg wt ht yr yrs mo mos wk wks hr
    hrs sec tab tabs cap caps inj gtt sol susp oz lb lbs ft
    """.split()
)
# Units abbreviations such as "mg" end sentences too often to be blocked unconditionally:
# they only block a split when the next word starts in lower case.
_SOFT_ABBREVIATIONS = frozenset(
    "mg mcg ml cc hr hrs min max yr yrs wk wks mo mos lb lbs oz".split()
)

# list markers: Markdown's (- * +), numbers and letters, and the bullets word processors and
# LLMs write (• ◦ ▪ ▫ ■ □ ● ○ ‣ ⁃ · ∙ – — ► ➢ ➤ ✓ ✔)
_BULLET_RE = re.compile(
    r"^[ \t]*(?:[-*+>\u2022\u25e6\u25aa\u25ab\u25a0\u25a1\u25cf\u25cb\u2023\u2043\u00b7\u2219"
    r"\u2013\u2014\u25ba\u27a2\u27a4\u2713\u2714]+|\(?\d{1,3}[.)]|\(?[a-zA-Z][.)])[ \t]+"
)
# a section label before its text ("Plan: rest"), also as Markdown writes it in bold
# ("**Plan:** rest", "**Plan**: rest")
_HEADER_RE = re.compile(
    r"[ \t]*(?:\*\*|__)?([A-Z][A-Za-z /&()-]{1,40})(?:\*\*|__)?:(?:\*\*|__)?(?:[ \t]+|$)"
)
# a Markdown heading ("## Social history"): a title, never a statement
_HEADING_RE = re.compile(r"[ \t]{0,3}#{1,6}(?:[ \t]|$)")
# a line all in bold or italics (a Markdown title: "**Summary of visit**")
_EMPHASIZED_RE = re.compile(r"[ \t]*(\*{1,3}|_{1,3})(?=\S)((?:(?!\1).)+?)(?<=\S)\1[ \t]*")
# a speaker's tag before a turn of a dialogue: "[doctor]", "Patient:", and the parties of a
# visit with more than two ("Guest_family:", "Guest_family_2:", "Doctor_2:", "Physician:")
SPEAKER_RE = re.compile(
    r"^[ \t]*(?:\[[a-z_ ]{2,20}\]|(?:doctor|patient|dr|pt|nurse|physician|clinician|guest)"
    r"(?:_[a-z0-9]+)*\d*\s*:)[ \t]*",
    re.I,
)
_BOUNDARY_RE = re.compile(r"[.!?]+[\"')\]]*(?=\s)|[;]|\s\.\s")


# (an emphasised run is read up to 300 characters: unbounded, text full of unclosed marks
# would take quadratic time)
_INLINE_EMPHASIS_RE = re.compile(
    r"(?<![\w*])(\*{1,3}|_{1,3})(?=[^\s*_])(.{1,300}?)(?<=[^\s*_])\1(?![\w*])"
)


def strip_emphasis(text: str) -> str:
    """``text`` without Markdown's bold and italic marks ("takes **metformin**" -> "takes
    metformin"); an underscore inside a word ("snake_case") and a blank to fill ("_____")
    stay."""
    if "*" not in text and "_" not in text:
        return text
    return _INLINE_EMPHASIS_RE.sub(r"\2", _INLINE_EMPHASIS_RE.sub(r"\2", text))  # nested: twice


_CELL_BREAK_RE = re.compile(r"[ \t]*\|[ \t]*")


def as_prose(text: str) -> str:
    """Markdown read as prose, for a model trained on prose: no bold or italic marks
    (:func:`strip_emphasis`), and a table row's cells as a list ("Metformin | 500 mg" ->
    "Metformin, 500 mg")."""
    text = strip_emphasis(text)
    return _CELL_BREAK_RE.sub(", ", text) if "|" in text else text


def _is_header_line(line: str, *, listed: bool = False) -> bool:
    """Whether a line is a title, not a statement; ``listed``: it follows a list marker
    (a list item in bold, "- **Hypertension**", names something)."""
    if _HEADING_RE.match(line):
        return True
    emphasized = _EMPHASIZED_RE.fullmatch(line)
    if emphasized and (listed or len(emphasized.group(1)) < 2):
        return False  # a list item in bold, or a line in italics: a statement
    if emphasized:  # a title in bold: short, without a number, and not a sentence
        title = emphasized.group(2).strip().rstrip(":").strip()
        return (
            len(title.split()) <= 8
            and not title.endswith((".", "!", "?"))
            and not any(c.isdigit() for c in title)
        )
    stripped = line.strip().rstrip(":").strip()
    if not stripped or len(stripped) > 60 or stripped.endswith((".", "!", "?")):
        return False
    if any(c.isdigit() for c in stripped):
        return False
    if line.strip().endswith(":") and len(stripped.split()) <= 6:
        return True
    letters = [c for c in stripped if c.isalpha()]
    return bool(letters) and all(c.isupper() for c in letters) and len(stripped.split()) <= 6


def _prev_word(text: str, end: int) -> str:
    j = end
    while j > 0 and (text[j - 1].isalnum() or text[j - 1] == "."):
        j -= 1
    return text[j:end].strip(".").lower()


def _split_segment(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Split ``text[start:end]`` (one paragraph or list item) into sentence ranges."""
    pieces: list[tuple[int, int]] = []
    cursor = start
    segment = text[start:end]
    for m in _BOUNDARY_RE.finditer(segment):
        cut = start + m.end()
        punct = m.group().strip()
        # a stop set off by a space ("no . let me ...", as speech transcripts write it)
        # ends a sentence: it is never an abbreviation's
        spaced_stop = m.group().startswith(" .")
        if spaced_stop:
            cut = start + m.start() + 2
        elif punct.startswith("."):
            word = _prev_word(text, start + m.start())
            nxt = text[cut:end].lstrip()
            next_lower = bool(nxt) and (nxt[0].islower() or nxt[0].isdigit())
            if "." in word or (len(word) == 1 and word.isalpha()):
                if next_lower or (len(word) == 1 and nxt[:1].isupper()):
                    continue
            if word in _ABBREVIATIONS and (word not in _SOFT_ABBREVIATIONS or next_lower):
                continue
        pieces.append((cursor, cut))
        cursor = cut
    pieces.append((cursor, end))
    out = []
    for a, b in pieces:
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        wrapped = _EMPHASIZED_RE.fullmatch(text, a, b)  # a sentence all in bold: without it
        if wrapped:
            a, b = wrapped.start(2), wrapped.end(2)
        if b > a and any(c.isalnum() for c in text[a:b]):
            out.append((a, b))
    return out


# A line that ends with one of these words (or a comma, a hyphen, an open bracket) goes on
# into the next line; so does any line as long as a wrapped paragraph's.
_CONTINUES_RE = re.compile(
    r"(?:[,(/&+-]|\b(?:a|an|the|and|or|but|of|to|in|on|at|for|with|by|from|as|than|into|"
    r"per|is|are|was|were|be|has|have|had|not|no|x)\b)\s*$",
    re.I,
)
_WRAP_WIDTH = 64


def _line_ends_unit(line: str, next_line: str) -> bool:
    """Whether a line break ends a statement in a note written one fact per line
    ("No ear discharge or ear pain\nYou feel nauseous"): a short line that does not run
    on, followed by a line that starts as a sentence does (a capital or a digit)."""
    body, nxt = line.strip(), next_line.lstrip().lstrip("*_")  # past bold or italic marks
    return (
        bool(nxt)
        and (nxt[0].isupper() or nxt[0].isdigit())
        and len(body) < _WRAP_WIDTH
        and not _CONTINUES_RE.search(body)
    )


# a Markdown table: its rows between pipes, the line of dashes under its column names
_TABLE_ROW_RE = re.compile(r"[ \t]*\|(.*\|)[ \t]*")
_TABLE_RULE_RE = re.compile(r"[ \t]*\|?(?:[ \t]*:?-{3,}:?[ \t]*\|)+(?:[ \t]*:?-{3,}:?[ \t]*)?")


def _table_row(line_start: int, body: str) -> tuple[int, int] | None:
    """The range inside a Markdown table row's outer pipes ("| Metformin | 500 mg |"), or
    None for a line that is not one (its sentences are trimmed as any others)."""
    row = _TABLE_ROW_RE.fullmatch(body)
    return None if row is None else (line_start + row.start(1), line_start + row.end(1) - 1)


# Labels that say what kind of fact follows, and so are part of what it says: "Allergies:
# amoxicillin" says something else than "Medications: amoxicillin". Each is read in one
# spelling (abbreviations and variants written out), the form a statement carries it in.
_FACT_LABELS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), label)
    for pattern, label in (
        (
            r"(?:(?:known|drug|medication|medicine) )?(?:allerg(?:y|ies)|intolerances?|"
            r"adverse (?:drug )?reactions?)(?: ?(?:/|and|&) ?(?:intolerances?|(?:adverse )?"
            r"reactions?|sensitivities))?",
            "Allergies",
        ),
        (
            r"(?:(?:current|home|active|outpatient|regular|discharge|present) )?(?:medications?|"
            r"meds|medicines|drugs|prescriptions|medication list)(?: ?(?:/|and|&) ?"
            r"(?:supplements|doses|dosages))?|(?:drug|medication) history|dh|dhx",
            "Medications",
        ),
        (r"family (?:medical )?history|fhx?|fam(?:ily)? hx", "Family history"),
        (r"social history|shx?|soc(?:ial)? hx", "Social history"),
        (
            r"(?:(?:past|previous|prior) )?medical history|pmhx?|past history|(?:chronic |past )?"
            r"(?:medical )?(?:conditions|problems)|problem list",
            "Past medical history",
        ),
        (
            r"(?:(?:past|previous|prior) )?(?:surgical history|surgeries|operations)|pshx?",
            "Past surgical history",
        ),
    )
)
_TITLE_MARKS_RE = re.compile(r"^[\s#*_]*(?:\d{1,2}[.)][\s*_]*)?|[\s*_:]+$")


# Sections of a note whose labels say nothing of the kind of fact (a line "Plan: rest" after
# a list of allergies starts another section; "Mother: melanoma." in a family history does not)
_SECTION_RE = re.compile(
    r"(?:chief complaint|cc|hpi|history of (?:the )?present illness|(?:physical )?exam(?:ination)?|"
    r"review of systems|ros|vitals?(?: signs)?|labs?|results|imaging|(?:assessment|impression)"
    r"(?: (?:and|&) plan)?|a/?p|plan|diagnos[ie]s|follow[ -]?up|summary|recommendations?|"
    r"disposition|instructions|procedures?|orders|notes?|subjective|objective)"
)


def _title_words(title: str) -> str:
    """A label or title in lower case, without Markdown marks, a number or whose it is."""
    words = " ".join(_TITLE_MARKS_RE.sub("", title).lower().split())
    return re.sub(r"^(?:the )?(?:patient'?s?|pt'?s?) ", "", words)


def fact_label(title: str) -> str | None:
    """The kind of fact a section label or title names, in one spelling ("PMH", "Past
    Medical History:", "## Home medications" -> "Past medical history", "Medications"),
    or None for a label that does not change what its text says ("Plan", "HPI")."""
    words = _title_words(title)
    for pattern, label in _FACT_LABELS:
        if pattern.fullmatch(words):
            return label
    return None


_LABELLED_RE = re.compile(
    "(" + "|".join(re.escape(label) for _, label in _FACT_LABELS) + r"): (?=\S)"
)


def split_label(statement: str) -> tuple[str | None, str]:
    """A statement's kind-of-fact label (as :func:`split_statements` writes it) and the
    rest: "Allergies: penicillin" -> ("Allergies", "penicillin"); (None, statement) without."""
    m = _LABELLED_RE.match(statement)
    return (m.group(1), statement[m.end() :]) if m else (None, statement)


def _segments(text: str) -> list[tuple[int, int, str | None]]:
    """Paragraph-level ranges: lines are joined unless a blank line, bullet, number,
    header or speaker tag starts a new unit, or the line before is a whole short line of
    its own (:func:`_line_ends_unit`). Leading markers and headers are excluded. A Markdown
    table's rows are a unit each, its column names and rule are not read.

    Each range comes with the kind of fact its label names (:func:`fact_label`): its own
    ("Allergies: penicillin"), or that of the title it comes under ("## Allergies", a line
    "ALLERGIES" or "**Allergies:**"), up to the next title; a title over a list reaches no
    further than the list: prose after it, past a blank line, is not the list's."""
    segments: list[tuple[int, int, str | None]] = []
    current: list[int] | None = None
    pos = 0
    previous = ""
    scope: str | None = None  # the kind of fact the last title named
    scope_lists: bool | None = None  # whether the units under it so far are all list items
    blank = False  # a blank line since the last unit started
    label: str | None = None  # that of the unit being read
    lines = text.splitlines(keepends=True)
    rules = {  # a table's rule: read only where a line has both of its marks
        i
        for i, line in enumerate(lines)
        if "|" in line and "---" in line and _TABLE_RULE_RE.fullmatch(line.rstrip("\r\n"))
    }
    for i, line in enumerate(lines):
        line_start, body = pos, line.rstrip("\r\n")
        pos += len(line)
        ends_previous = bool(current) and _line_ends_unit(previous, body)
        previous = body
        row = _table_row(line_start, body) if "|" in body else None
        if not body.strip() or i in rules or (row is not None and i + 1 in rules):
            if current:  # a blank line ends a unit; a table's rule and column names are skipped
                segments.append((current[0], current[1], label))
            current = None
            blank = blank or not body.strip()
            continue
        if row is not None:
            if current:
                segments.append((current[0], current[1], label))
            current = None
            segments.append((*row, scope))
            continue
        content_start = line_start
        new_unit = False
        own: str | None = None
        marker = _BULLET_RE.match(body) or SPEAKER_RE.match(body)
        if marker:
            content_start += marker.end()
            new_unit = True
        header = _HEADER_RE.match(text, content_start, line_start + len(body))
        if header and len(header.group(1).split()) > 4:
            header = None
        if header is not None:
            own = fact_label(header.group(1))
            if (
                own is None
                and scope is not None
                and not _SECTION_RE.fullmatch(_title_words(header.group(1)))
            ):
                # a line of a titled section ("Mother: melanoma." under "Family history",
                # "- Penicillin: rash" under "Allergies"): its name is what it says
                header = None
        if header is not None:
            content_start = header.end()
            new_unit = True
            scope = None  # a section's label ends the last title's reach
        elif _is_header_line(
            text[content_start : line_start + len(body)], listed=marker is not None
        ):
            if current:
                segments.append((current[0], current[1], label))
            current = None
            scope, scope_lists = fact_label(text[content_start : line_start + len(body)]), None
            continue
        line_end = line_start + len(body)
        if content_start >= line_end or not text[content_start:line_end].strip():
            if current:
                segments.append((current[0], current[1], label))
            current = None
            if header:  # a label alone on its line ("Allergies:") titles what follows
                scope, scope_lists = own, None
            continue
        if new_unit or ends_previous or current is None:
            if current:
                segments.append((current[0], current[1], label))
            current = [content_start, line_end]
            listed = _BULLET_RE.match(body) is not None
            if header is None and scope is not None:
                if blank and scope_lists and not listed:
                    scope = None  # prose after a titled list, past a blank line
                else:
                    scope_lists = listed and scope_lists is not False
            blank = False
            label = own if header is not None else scope
        else:
            current[1] = line_end
    if current:
        segments.append((current[0], current[1], label))
    return segments


# An HTML tag of the kinds an LLM or an editor writes text with. A block ends a line; a
# heading starts one as Markdown's "#" would; an inline tag is read as a space.
_HTML_TAG_RE = re.compile(
    r"<(/?)(p|br|li|ul|ol|div|tr|td|th|h[1-6]|table|thead|tbody|section|blockquote|hr|"
    r"b|strong|i|em|u|span|mark|small|a)\b[^<>]{0,300}>",
    re.I,
)
_HTML_ROW_RE = re.compile(r"<tr\b[^<>]{0,300}>.{0,5000}?</tr\s*>", re.I | re.S)
_SPACES_RE = re.compile(r"[ \t]*\n[ \t\n]*| {2,}")
_HTML_INLINE = frozenset({"b", "strong", "i", "em", "u", "span", "mark", "small", "a"})


def unmarked_html(text: str) -> str:
    """``text`` with its HTML tags blanked out, every offset where it was: a block tag
    ("<p>", "<li>", "</td>", "<br>") becomes a line break, a heading's opening tag a Markdown
    heading mark, an inline one ("<b>", "<em>") spaces. Text without tags comes back as is."""
    if "<" not in text or not _HTML_TAG_RE.search(text):
        return text

    def blank(m: re.Match[str]) -> str:
        n, name, closing = len(m.group(0)), m.group(2).lower(), bool(m.group(1))
        if name in _HTML_INLINE:
            return " " * n
        if name[0] == "h" and name[1:].isdigit() and not closing:
            return "\n#" + " " * (n - 2)
        if name in ("td", "th"):  # a row's cells as a Markdown row: "| Metformin | 500 mg |"
            return " " * n if closing else "|" + " " * (n - 1)
        if name == "tr" and closing:
            return "|\n" + " " * (n - 2)
        return "\n" + " " * (n - 1)

    def column_names(m: re.Match[str]) -> str:  # a row of header cells only: not read
        row = m.group(0)
        if "<th" in row.lower() and "<td" not in row.lower():
            return "\n" + re.sub(r"[^\n]", " ", row[1:])
        return row

    return _HTML_TAG_RE.sub(blank, _HTML_ROW_RE.sub(column_names, text))


def split_sentences(text: str) -> list[Span]:
    """Clinical-aware sentence splitting with offsets.

    Survives abbreviations ("b.i.d.", "Dr.", "approx."), decimals ("6.8%"), blood pressures
    ("132/84"), bullets and numbered lists, section headers ("Assessment:") and speaker tags
    ("[doctor]"), and Markdown as LLMs write it: headings ("## Plan"), titles and labels in
    bold ("**Summary of visit**", "**Plan:** rest"), tables (a row is a sentence; the column
    names and the rule under them are not), and HTML (a paragraph, list item, table cell or
    line break ends a line, a heading is a title, an inline tag is read as a space: the
    sentence's text has no tags, its offsets index the original). Header-only lines are not
    sentences; a header followed by text on the same line is left out of the sentence, and
    so are the bold marks around a whole sentence (inline ones stay; the learned verifier
    reads them away).
    """
    read = unmarked_html(text)
    spans: list[Span] = []
    for a, b, _ in _sentence_ranges(read):
        sentence = read[a:b] if read is text else _SPACES_RE.sub(" ", read[a:b])
        spans.append(Span(sentence, a, b))
    return spans


def _sentence_ranges(read: str) -> list[tuple[int, int, str | None]]:
    """Each sentence's range in ``read`` (text without HTML tags), with the kind of fact
    its label names (:func:`fact_label`)."""
    return [
        (a, b, label)
        for seg_start, seg_end, label in _segments(read)
        for a, b in _split_segment(read, seg_start, seg_end)
    ]


# --- statements --------------------------------------------------------------------------

_LIST_TRIGGERS = (
    r"(?:is |was |are |remains? )?(?:currently )?(?:takes|taking|took|on|started on|started|"
    r"starting|prescribed|continues?(?: on)?|continuing|receives|receiving|uses|using|"
    r"denies|denied|reports|reported|endorses|endorsed|complains of|has|had|have|"
    r"history of|diagnosed with|positive for|negative for|notable for|significant for|"
    r"allergic to|with)"
)
_TRIGGER_RE = re.compile(r"\b" + _LIST_TRIGGERS + r"\s+", re.I)
_CLAUSE_RE = re.compile(
    r"(?:,\s*|\s+)(?:and|but|while|whereas)\s+(?=(?:he|she|they|the patient|patient|it|his|her|"
    r"there)\b)",
    re.I,
)
_ITEM_SEP_RE = re.compile(r"\s*,\s*(?:and\s+)?|\s+and\s+", re.I)
_NO_SPLIT_WORDS = re.compile(
    r"\b(?:between|both|either|neither|of|or|nor|risks?|benefits?|combination|together|"
    r"which|that|who|whom|after|before|because|if|when|than)\b",
    re.I,
)


def _trim(text: str, a: int, b: int) -> tuple[int, int]:
    while a < b and (text[a].isspace() or text[a] in ",;"):
        a += 1
    while b > a and (text[b - 1].isspace() or text[b - 1] in ",;"):
        b -= 1
    return a, b


def _split_clauses(text: str, a: int, b: int) -> list[tuple[int, int]]:
    cuts = [(a, a)]
    for m in _CLAUSE_RE.finditer(text, a, b):
        cuts.append((m.start(), m.end()))
    ranges = []
    for i, (_, start) in enumerate(cuts):
        stop = cuts[i + 1][0] if i + 1 < len(cuts) else b
        s, e = _trim(text, start, stop)
        if e > s:
            ranges.append((s, e))
    return ranges


def _split_list(text: str, a: int, b: int) -> list[Span]:
    """Split "X takes A, B and C." into one statement per item when it is safe."""
    whole = Span(text[a:b], a, b)
    end = b
    while end > a and text[end - 1] in ".!?":
        end -= 1
    trig = None
    for m in _TRIGGER_RE.finditer(text, a, end):
        trig = m
        break
    if trig is None:
        return [whole]
    region_start = trig.end()
    region = text[region_start:end]
    if " and " not in f" {region} " and "," not in region:
        return [whole]
    if _NO_SPLIT_WORDS.search(region) or _TRIGGER_RE.search(region):
        return [whole]
    items: list[tuple[int, int]] = []
    cursor = region_start
    for sep in _ITEM_SEP_RE.finditer(text, region_start, end):
        items.append(_trim(text, cursor, sep.start()))
        cursor = sep.end()
    items.append(_trim(text, cursor, end))
    items = [(s, e) for s, e in items if e > s]
    if len(items) < 2 or len(items) > 10:
        return [whole]
    for s, e in items:
        words = text[s:e].split()
        if len(words) > 6 or all(re.fullmatch(r"[\d.,/%-]+", w) for w in words):
            return [whole]
    head = text[a:region_start]
    spans = []
    for i, (s, e) in enumerate(items):
        if i == 0:
            spans.append(Span(text[a:e], a, e))
        else:
            spans.append(Span(head + text[s:e], s, e))
    return spans


def split_statements(text: str) -> list[Span]:
    """Atomic statements: sentences, then clauses ("..., and she ..."), then list items.

    Splits coordinated claims only where the parts stand alone ("takes metformin and
    lisinopril" -> "takes metformin" + "takes lisinopril"); ranges ("between 5 and 10"),
    alternatives ("or") and relative clauses are left whole.

    A statement under a label or title that names a kind of fact (:func:`fact_label`:
    allergies, medications, family, social, past medical or surgical history) says it
    first, in one spelling, for it is part of what the statement says ("Allergies:
    amoxicillin" is wrong of a visit where amoxicillin is taken): "- Penicillin" under "##
    Allergies" -> "Allergies: Penicillin", its offsets those of "Penicillin".
    """
    read = unmarked_html(text)
    statements: list[Span] = []
    for a, b, label in _sentence_ranges(read):
        for ca, cb in _split_clauses(read, a, b):
            for span in _split_list(read, ca, cb):
                said = span.text if read is text else _SPACES_RE.sub(" ", span.text)
                if label is not None:
                    said = f"{label}: {said}"
                statements.append(Span(said, span.start, span.end) if said != span.text else span)
    return statements


# --- words -------------------------------------------------------------------------------

# Words that name no fact on their own: pronouns, auxiliaries, articles, the words of a reply
# ("yes", "no", "sure", "of course") and of greeting and thanks. A statement of these alone
# ("Yes.", "It is.", "Thank you!") says nothing the sources could bear out.
_REPLY_WORDS = frozenset(
    """
    a an the i you we he she it they me us him her them my your our his its their this that
    these those there here is are was were be been am do does did has have had will would can
    could should may might shall must not no yes yeah yep yup nope ok okay sure alright
    indeed exactly certainly absolutely true of course oh ah um uh mm hmm lol haha hi hello
    hey thanks thank welcome please sorry bye goodbye too so also just and or but kind sort
    know think guess wow cool nice awesome interesting neat
    """.split()
)

# a question that reports what someone knows or heard asks about a claim it makes ("Did you
# know that the dunk was banned?"): that claim is to be borne out like any other
_CLAIM_IN_QUESTION_RE = re.compile(
    r"\b(?:know|knew|known|heard|hear|aware|reali[sz]e|realized|realised|true|right)\b", re.I
)
# what is left of "can't", "won't", "ain't" without "n't" (the rest are reply words as they are)
_NEGATED_REPLY_WORDS = _REPLY_WORDS | {"ca", "wo", "ai"}
_REPLY_TOKEN_RE = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?|\d", re.UNICODE)


def _replies_only(text: str) -> bool:
    words = _REPLY_TOKEN_RE.findall(text.lower().replace("\u2019", "'"))
    return all(
        w in _REPLY_WORDS
        or w.split("'")[0] in _REPLY_WORDS
        or (w.endswith("n't") and w[:-3] in _NEGATED_REPLY_WORDS)
        for w in words
    )


def asserts_nothing(statement: str) -> bool:
    """Whether a statement says nothing that sources could bear out: a bare reply or greeting
    ("Yes.", "It is.", "Thank you!"), or a question that makes no claim, however it opens
    ("Hi, have you seen it?"). What a question takes for granted ("What makes it worse?") is
    not read as a claim: on dialogue systems' real responses, reading it so ranked them worse.
    "Did you know that ...?" asks about a claim it makes, and a statement before the question
    ("Canada is in North America, do you live there?") is one. A statement under a label
    ("Allergies: none") always says something."""
    text = statement.strip()
    if not text or split_label(text)[0] is not None:
        return False
    if not text.endswith("?"):
        return _replies_only(text)
    if _CLAIM_IN_QUESTION_RE.search(text):
        return False
    *before, _ = re.split(r"[,;:]", text)
    return all(_replies_only(part) for part in before)


_WORD_TOKEN_RE = re.compile(r"\d+(?:[.,]\d+)*(?:/\d+(?:\.\d+)?)?%?|[a-z]+(?:'[a-z]+)?|[?,;:]", re.I)


# Words that say nothing of what a sentence is about (for content words and their overlap).
STOPWORDS = frozenset(
    """
    a an the and or but of in on at to for with by from as is are was were be been being has
    have had do does did this that these those it its he she they his her their him them i
    you we my your our me us who which what when where how there here also very any some
    patient patients pt mr mrs ms dr today currently now then than so if about over up out
    will would can could should may might just well okay ok yes yeah um uh mm hmm like
    going go get got know think feel little bit really kind sort
    """.split()
)


#: Texts up to this many characters are cached by :func:`cached_for_short_texts`; longer ones
#: (whole transcripts, prefixes of them) are computed each time, so that a cache of thousands
#: of entries stays a few megabytes.
SHORT_TEXT = 2_000

_R = TypeVar("_R")


def cached_for_short_texts(
    maxsize: int,
) -> Callable[[Callable[..., _R]], Callable[..., _R]]:
    """An LRU cache of a pure function of a text (and hashable options) that keeps only the
    results for texts of at most :data:`SHORT_TEXT` characters: the sentences and passages
    that the fact checks read again for each statement of an answer."""

    def wrap(func: Callable[..., _R]) -> Callable[..., _R]:
        cached = lru_cache(maxsize=maxsize)(func)

        @wraps(func)
        def call(text: str, *args: Any, **kwargs: Any) -> _R:
            if len(text) <= SHORT_TEXT:
                return cached(text, *args, **kwargs)
            return func(text, *args, **kwargs)

        call.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
        return call

    return wrap


def token_spans(text: str) -> list[tuple[str, int, int]]:
    """Lower-case word, number and clause-punctuation tokens with their ``[start, end)``
    offsets in ``text`` ("n't" kept as "not": "don't" -> "do", "not"; "can't" -> "can",
    "not", both spanning the whole word)."""
    return list(_token_spans(text))


@cached_for_short_texts(maxsize=32768)
def _token_spans(text: str) -> tuple[tuple[str, int, int], ...]:
    # the fact checks read the same evidence sentences once for each statement
    out: list[tuple[str, int, int]] = []
    for m in _WORD_TOKEN_RE.finditer(text.replace("\u2019", "'")):
        low, a, b = m.group(0).lower(), m.start(), m.end()
        if low == "n't":  # spoken text spaces it off: "do n't"
            out.append(("not", a, b))
        elif low.endswith("n't"):
            out.extend([(low[:-3], a, b - 3), ("not", b - 3, b)])
        elif low in {"can't", "cannot", "won't"}:
            out.extend([("can", a, b), ("not", a, b)])
        else:
            out.append((low, a, b))
    return tuple(out)


def tokens(text: str) -> list[str]:
    """The tokens of :func:`token_spans` without their offsets."""
    return [tok for tok, _, _ in _token_spans(text)]


def stem(word: str) -> str:
    """A crude, consistent suffix stripper: "fracture"/"fractures", "runs"/"running",
    "reports"/"reported"/"reporting" and "denies"/"denied" each meet on one stem."""
    w = word
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ing", "ed"):
        if len(w) > len(suffix) + 2 and w.endswith(suffix):
            w = w[: -len(suffix)]
            if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "lsz":  # "running" -> "run"
                w = w[:-1]
            break
    if w.endswith("ied"):
        w = w[:-3] + "y"
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    if len(w) > 3 and w.endswith("y"):
        w = w[:-1] + "i"
    return w
