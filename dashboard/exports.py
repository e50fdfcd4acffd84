"""Pure builders of downloadable files: CSV tables and the per-query report (HTML, Markdown).

All record text in the HTML report is escaped (see :mod:`dashboard.highlight`).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any
from urllib.parse import quote

from core.text import csv_cell
from dashboard.highlight import Highlight, escape_text, highlight_html
from dashboard.plain import risk_summary

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
    "severity",
    "kind",
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
    answer's own text there, after its label if it says one), those words are outlined on
    their own."""
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
        text, own = str(s.get("text") or ""), answer[start:end]
        if marked and own and text.endswith(own):
            # a statement may say its label first ("Allergies: penicillin"): its words
            # are marked where they are in the answer
            lead = len(text) - len(own)
            words = [
                (int(w["start"]) - lead, int(w["end"]) - lead)
                for w in marked
                if int(w["start"]) >= lead
            ]
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
        f"- Risk level: {risk_summary(conv)}",
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
        f"<p>Risk level: <strong>{e(risk_summary(conv))}</strong></p>"
        f"<h2>Scores</h2><table>{scores}</table>"
        f"<h2>Query</h2><p>{e(conv.get('query'))}</p>"
        f"<h2>Answer</h2>{answer}"
        "<h2>Statements</h2><table><tr><th>#</th><th>status</th><th>method</th>"
        f"<th>confidence</th><th>statement</th><th>evidence</th></tr>{rows}</table>"
        f"<h2>Contradictions</h2><ul>{contradictions or '<li>none</li>'}</ul>"
        f"<h2>Checks</h2><table>{checks}</table>"
        "</body></html>"
    )


#: Columns of the CSV of a score trend chart (one row per model and period, as drawn).
TREND_FIELDS = (
    "period",
    "model",
    "answers",
    "few_answers",
    "grounding",
    "consistency",
    "confidence",
    "risk",
)
#: Columns of the CSV of the volume chart.
VOLUME_FIELDS = ("period", "model", "answers", "flagged", "flagged_share", "few_answers")
#: Columns of the CSV of the per-model table.
MODEL_SUMMARY_FIELDS = (
    "model",
    "answers",
    "answers_change",
    "flagged_share",
    "flagged_share_low",
    "flagged_share_high",
    "flagged_share_change",
    "grounding",
    "grounding_low",
    "grounding_high",
    "grounding_change",
    "consistency",
    "consistency_low",
    "consistency_high",
    "consistency_change",
)


def chart_rows(
    rows: Sequence[Mapping[str, Any]], *, min_answers: int, all_models: str
) -> list[dict[str, Any]]:
    """The rows a trend chart draws, as its CSV holds them: the model's label (``all_models``
    for the merged line), ``answers`` behind each point and whether they are few (below
    ``min_answers``), ordered by model and period like the chart's lines."""
    out = []
    for r in rows:
        n = int(r.get("conversations") or 0)
        out.append(
            {
                **r,
                "model": all_models if r.get("model") is None else r["model"],
                "answers": n,
                "few_answers": n < min_answers,
            }
        )
    return sorted(out, key=lambda r: (str(r["model"]), r["period"]))


def model_summary_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The per-model table flattened for its CSV (each interval as ``_low``/``_high``)."""
    out = []
    for r in rows:
        flat: dict[str, Any] = {
            "model": r["model"],
            "answers": r.get("conversations"),
            "answers_change": r.get("conversations_change"),
        }
        for name in ("flagged_share", "grounding", "consistency"):
            ci = r.get(f"{name}_ci")
            flat[name] = r.get(name)
            flat[f"{name}_low"], flat[f"{name}_high"] = ci if ci else (None, None)
            flat[f"{name}_change"] = r.get(f"{name}_change")
        out.append(flat)
    return out


def _interval(value: float | None, ci: Any, fmt: str) -> str:
    if value is None:
        return "–"
    text = format(value, fmt)
    return f"{text} [{format(ci[0], fmt)}, {format(ci[1], fmt)}]" if ci else text


def _change(value: float | None, fmt: str) -> str:
    """A signed change; one that rounds to zero reads "+0" whatever the sign of what is left
    of two sums' rounding ("-0.00" would read as a fall)."""
    if value is None:
        return "–"
    out = format(value, "+" + fmt)
    zero = format(type(value)(0), "+" + fmt)
    return zero if out.lstrip("+-") == zero.lstrip("+-") else out


def model_summary_display(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The per-model table as shown: each value with its 95 % interval in brackets and its
    change against the previous period (signed; shares in percentage points)."""
    return [
        {
            "model": r["model"],
            "answers": "–" if r.get("conversations") is None else f"{r['conversations']:,d}",
            "answers vs before": _change(r.get("conversations_change"), ",d"),
            "share flagged [95 % CI]": _interval(
                r.get("flagged_share"), r.get("flagged_share_ci"), ".0%"
            ),
            "share flagged vs before": "–"
            if r.get("flagged_share_change") is None
            else f"{_change(100 * r['flagged_share_change'], '.0f')} pts",
            "grounding [95 % CI]": _interval(r.get("grounding"), r.get("grounding_ci"), ".2f"),
            "grounding vs before": _change(r.get("grounding_change"), ".2f"),
            "consistency [95 % CI]": _interval(
                r.get("consistency"), r.get("consistency_ci"), ".2f"
            ),
            "consistency vs before": _change(r.get("consistency_change"), ".2f"),
        }
        for r in rows
    ]


def drill_rows(rows: Sequence[Mapping[str, Any]], *, report_links: bool) -> list[dict[str, Any]]:
    """The answers behind a chart point as listed: time, record id, model, scores, flagged,
    and (for the roles that may open it) the address of each answer's report."""
    out = []
    for r in rows:
        row: dict[str, Any] = {
            "time": r["timestamp"],
            "answer": r["external_id"],
            "model": r["model"],
            "grounding": r.get("grounding"),
            "consistency": r.get("consistency"),
            "confidence": r.get("confidence"),
            "risk": r.get("risk"),
            "flagged": r.get("flagged"),
        }
        if report_links:
            row["report"] = f"/report?id={quote(str(r['id']), safe='')}"
        out.append(row)
    return out


#: Columns of the CSV of the reliability diagram (one row per bin, as drawn).
RELIABILITY_FIELDS = ("mean_predicted_risk", "share_confirmed", "statements")
#: Columns of the CSV of the threshold explorer (one row per threshold on its grid).
THRESHOLD_FIELDS = ("risk_threshold", "flag_rate", "false_alarm_rate")
#: Columns of the CSV of the score-by-verdict histogram (one row per verdict and bin).
VERDICT_HISTOGRAM_FIELDS = ("verdict", "bin_start", "bin_end", "statements")


def reliability_rows(
    mean_predicted: Sequence[float], fraction_positive: Sequence[float], counts: Sequence[int]
) -> list[dict[str, Any]]:
    """The points of the reliability diagram."""
    return [
        {"mean_predicted_risk": float(p), "share_confirmed": float(f), "statements": int(n)}
        for p, f, n in zip(mean_predicted, fraction_positive, counts, strict=True)
    ]


def threshold_rows(
    grid: Sequence[float], flag_rate: Sequence[float], false_alarm_rate: Sequence[float]
) -> list[dict[str, Any]]:
    """The two curves of the threshold explorer."""
    return [
        {"risk_threshold": float(t), "flag_rate": float(a), "false_alarm_rate": float(b)}
        for t, a, b in zip(grid, flag_rate, false_alarm_rate, strict=True)
    ]


def verdict_histogram_rows(
    rows: Sequence[Mapping[str, Any]], *, score: str = "risk", size: float = 0.05
) -> list[dict[str, Any]]:
    """The bars of the score-by-verdict histogram: statements per verdict and bin of width
    ``size`` starting at 0 (a score on a bin's edge counts in the bin it starts); empty bins
    are left out, as the chart draws nothing there."""
    counts: dict[tuple[str, int], int] = {}
    for r in rows:
        value = r.get(score)
        if value is None or r.get("verdict") is None:
            continue
        key = (str(r["verdict"]), int(math.floor(float(value) / size + 1e-9)))
        counts[key] = counts.get(key, 0) + 1
    order = {"confirmed": 0, "false_alarm": 1, "unsure": 2}
    keys = sorted(counts, key=lambda k: (order.get(k[0], 9), k))
    return [
        {
            "verdict": verdict,
            "bin_start": round(i * size, 6),
            "bin_end": round((i + 1) * size, 6),
            "statements": counts[(verdict, i)],
        }
        for verdict, i in keys
    ]


#: Columns of the patient page's answers (its table, and the CSV of its chart).
PATIENT_ANSWER_FIELDS = (
    "time",
    "answer",
    "model",
    "grounding",
    "consistency",
    "risk",
    "flagged",
    "contradictions",
)


def patient_answer_rows(answers: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One patient's answers as the page lists them and its chart draws them, oldest first."""
    return [
        {
            "time": a["timestamp"],
            "answer": a["external_id"],
            "model": a["model"],
            "grounding": a["grounding"],
            "consistency": a["consistency"],
            "risk": a["risk"],
            "flagged": a["flagged"],
            "contradictions": a["contradictions"],
        }
        for a in answers
    ]


__all__ = [
    "PATIENT_ANSWER_FIELDS",
    "MODEL_SUMMARY_FIELDS",
    "QUEUE_FIELDS",
    "RELIABILITY_FIELDS",
    "THRESHOLD_FIELDS",
    "TREND_FIELDS",
    "VERDICT_FIELDS",
    "VERDICT_HISTOGRAM_FIELDS",
    "VOLUME_FIELDS",
    "chart_rows",
    "drill_rows",
    "model_summary_display",
    "model_summary_rows",
    "patient_answer_rows",
    "reliability_rows",
    "report_html",
    "report_markdown",
    "rows_to_csv",
    "statement_highlights",
    "threshold_rows",
    "verdict_histogram_rows",
]
