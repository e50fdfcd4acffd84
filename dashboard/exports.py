"""Pure builders of downloadable files: CSV tables and the per-query report (HTML, Markdown).

All record text in the HTML report is escaped (see :mod:`dashboard.highlight`).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any

from core.text import csv_cell
from dashboard.highlight import Highlight, escape_text, highlight_html

QUEUE_FIELDS = (
    "statement_check_id",
    "conversation_id",
    "external_id",
    "patient_id",
    "model",
    "timestamp",
    "statement_index",
    "statement",
    "status",
    "method",
    "confidence",
    "risk",
    "reason",
    "source_chunk_id",
    "evidence",
    "verdict",
    "reviewer",
)
VERDICT_FIELDS = (
    "review_id",
    "statement_check_id",
    "conversation_id",
    "reviewer",
    "verdict",
    "note",
    "created_at",
)


def _cell(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, float):
        return round(value, 4)
    return "" if value is None else csv_cell(value)


def rows_to_csv(rows: Sequence[Mapping[str, Any]], fields: Sequence[str]) -> str:
    """A CSV document of ``rows`` with the given columns (extra keys ignored)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(fields), extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(row.get(k)) for k in fields})
    return buf.getvalue()


def statement_highlights(
    answer: str | None, statements: Sequence[Mapping[str, Any]]
) -> list[Highlight]:
    """Highlights of each statement located in the answer, coloured by status; where the
    verifier marked the words the evidence does not bear out (and the statement is the
    answer's own text there), those words are outlined on their own."""
    out: list[Highlight] = []
    for s in statements:
        if s.get("start") is None or s.get("end") is None or not answer:
            continue
        start, end = int(s["start"]), int(s["end"])
        status = s.get("status") or "unsupported"
        conf = s.get("confidence")
        method = s.get("method") or s.get("verification_method") or ""
        title = f"#{int(s.get('index', 0)) + 1} {status} · {method}"
        if conf is not None:
            title += f" · confidence {float(conf):.2f}"
        marked = s.get("unsupported_words") or []
        words = None
        if marked and answer[start:end] == s.get("text"):
            words = [(int(w["start"]), int(w["end"])) for w in marked]
        out.extend(word_marks(answer, start, end, status, None, words=words or [], title=title))
    return out


def word_marks(
    text: str,
    start: int,
    end: int,
    status: str,
    evidence: str | None,
    *,
    words: Sequence[tuple[int, int]] | None = None,
    title: str | None = None,
) -> list[Highlight]:
    """Highlights tiling ``text[start:end]`` (a statement inside its answer): the words the
    evidence does not bear out marked on their own, so a reviewer sees at once what to
    check; the rest of the statement in its status colour. ``words`` are those words'
    offsets in the statement when the verifier gave them; otherwise they are found against
    ``evidence``. A grounded statement, or one with neither, is one highlight."""
    from core.grounding.support import unsupported_words

    kind = status if status in ("grounded", "unsupported", "contradicted") else "unsupported"
    title = title or status
    if not 0 <= start < end <= len(text):
        return []
    if words is None:
        found = unsupported_words(text[start:end], [evidence]) if evidence else []
        words = [(w.start, w.end) for w in found]
    if status == "grounded" or not words:
        return [Highlight(start, end, kind, title)]
    out: list[Highlight] = []
    at = start
    for w_start, w_end in words:
        a, b = start + w_start, start + w_end
        if a < at or b > end:
            continue
        if a > at:
            out.append(Highlight(at, a, kind, title))
        out.append(Highlight(a, b, "focus", "not in the evidence"))
        at = b
    if at < end:
        out.append(Highlight(at, end, kind, title))
    return out


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def report_markdown(conv: Mapping[str, Any]) -> str:
    """The query report as Markdown (record text kept verbatim inside code spans/quotes)."""
    lines = [
        f"# Query report {conv['external_id']}",
        "",
        f"- Patient: {conv['patient_id']}",
        f"- Time: {_cell(conv['timestamp'])}",
        f"- Model: {conv['model']}",
        f"- Risk level: {_fmt(conv.get('risk_level'))}",
        "",
        "## Scores",
        "",
        "| score | value | direction |",
        "|---|---|---|",
    ]
    directions = {"risk": "higher is worse"}
    for name, value in conv["scores"].items():
        lines.append(f"| {name} | {_fmt(value)} | {directions.get(name, 'higher is better')} |")
    lines += ["", "## Query", "", "> " + (conv.get("query") or "(text purged)"), ""]
    lines += ["## Answer", "", "> " + (conv.get("answer") or "(text purged)").replace("\n", "\n> ")]
    lines += [
        "",
        "## Statements",
        "",
        "| # | status | method | confidence | statement | evidence |",
        "|---|---|---|---|---|---|",
    ]
    for s in conv["statements"]:
        text = (s.get("text") or "").replace("|", "\\|").replace("\n", " ")
        ev = (s.get("evidence") or "").replace("|", "\\|").replace("\n", " ")
        lines.append(
            f"| {int(s['index']) + 1} | {s['status']} | {s['method']} | "
            f"{_fmt(s.get('confidence'))} | {text} | {ev} |"
        )
    if conv["contradictions"]:
        lines += ["", "## Contradictions with earlier answers", ""]
        for c in conv["contradictions"]:
            prev = (c.get("previous") or {}).get("external_id") or c.get("previous_conversation_id")
            lines.append(
                f"- {c.get('severity') or ''} {c['check_type']} ({c.get('entity') or ''}): "
                f"{c.get('explanation') or ''} — earlier answer: {prev or '–'}"
            )
    lines += ["", "## Checks", "", "| check | status | reason |", "|---|---|---|"]
    for name, chk in conv["checks"].items():
        lines.append(f"| {name} | {chk.get('status')} | {chk.get('reason') or ''} |")
    if conv["claims"]:
        lines += [
            "",
            "## Claim audit (SPEC-16)",
            "",
            "| claim | support | dependence | flagged | reason |",
            "|---|---|---|---|---|",
        ]
        for c in conv["claims"]:
            lines.append(
                f"| {(c.get('claim') or '').replace('|', '/')} | {_fmt(c.get('evidence_support'))}"
                f" | {_fmt(c.get('evidence_dependence'))} | {c.get('flagged')} |"
                f" {c.get('flag_reason') or ''} |"
            )
    if conv["warnings"]:
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in conv["warnings"]]
    return "\n".join(lines) + "\n"


def report_html(conv: Mapping[str, Any]) -> str:
    """The query report as a standalone HTML page; every piece of record text escaped."""
    e = escape_text
    rows = "".join(
        f"<tr><td>{int(s['index']) + 1}</td><td>{e(s['status'])}</td><td>{e(s['method'])}</td>"
        f"<td>{e(_fmt(s.get('confidence')))}</td><td>{e(s.get('text'))}</td>"
        f"<td>{e(s.get('evidence'))}</td></tr>"
        for s in conv["statements"]
    )
    checks = "".join(
        f"<tr><td>{e(n)}</td><td>{e(str(c.get('status')))}</td><td>{e(c.get('reason'))}</td></tr>"
        for n, c in conv["checks"].items()
    )
    scores = "".join(
        f"<tr><td>{e(n)}</td><td>{e(_fmt(v))}</td></tr>" for n, v in conv["scores"].items()
    )
    contradictions = "".join(
        f"<li>{e(c.get('severity'))} {e(c['check_type'])} ({e(c.get('entity'))}): "
        f"{e(c.get('explanation'))}</li>"
        for c in conv["contradictions"]
    )
    answer = highlight_html(
        conv.get("answer"), statement_highlights(conv.get("answer"), conv["statements"])
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>Query report {e(conv['external_id'])}</title>"
        "<style>body{font-family:sans-serif;max-width:60rem;margin:2rem auto;color:#222}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px}</style>"
        "</head><body>"
        f"<h1>Query report {e(conv['external_id'])}</h1>"
        f"<p>Patient {e(conv['patient_id'])} · {e(_cell(conv['timestamp']))} · "
        f"model {e(conv['model'])}</p>"
        f"<h2>Scores</h2><table>{scores}</table>"
        f"<h2>Query</h2><p>{e(conv.get('query'))}</p>"
        f"<h2>Answer</h2>{answer}"
        "<h2>Statements</h2><table><tr><th>#</th><th>status</th><th>method</th>"
        f"<th>confidence</th><th>statement</th><th>evidence</th></tr>{rows}</table>"
        f"<h2>Contradictions</h2><ul>{contradictions or '<li>none</li>'}</ul>"
        f"<h2>Checks</h2><table>{checks}</table>"
        "</body></html>"
    )


__all__ = [
    "QUEUE_FIELDS",
    "VERDICT_FIELDS",
    "report_html",
    "report_markdown",
    "rows_to_csv",
    "statement_highlights",
]
