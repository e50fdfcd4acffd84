"""Query report: one conversation with every check, and a downloadable report."""

from __future__ import annotations

from typing import Any

import streamlit as st

from core.severity import KIND_LABELS
from dashboard import auth, data, exports, figures, plain, url_state
from dashboard.highlight import (
    Highlight,
    badge,
    contradiction_badges,
    find_span,
    highlight_html,
    legend,
    md_text,
)
from dashboard.sidebar import current_filters, reviewer_name

user = auth.guard("report")
st.title("Query report")
f = current_filters()

if "report_conversation" not in st.session_state:
    st.session_state["report_conversation"] = st.query_params.get("id", "")

recent = data.recent(f, limit=200)


def _label(r: dict) -> str:
    risk = "–" if r["risk"] is None else f"{r['risk']:.2f}"
    flag = " · flagged" if r["flagged"] else ""
    return (
        f"{r['timestamp']:%Y-%m-%d %H:%M} · {r['external_id']} · {r['patient_id']} · "
        f"risk {risk}{flag}"
    )


def _open(conversation_id: str) -> None:
    st.session_state["report_conversation"] = conversation_id
    st.session_state["report_typed"] = ""
    st.session_state["report_pick"] = None


def _take_reviewer_name() -> None:
    """The name typed on the page becomes the session's reviewer name (the sidebar's field)."""
    st.session_state[auth.REVIEWER_KEY] = auth.clean_reviewer(
        st.session_state.get("report_reviewer")
    )


def _verdict_buttons(statement: dict[str, Any], reviewer: str) -> None:
    """Confirmed / false alarm / unsure for one flagged statement (stored as in the queue)."""
    sid = statement["id"]
    cols = st.columns(3)
    choice = None
    for col, (verdict, label) in zip(
        cols,
        (("confirmed", "Confirmed"), ("false_alarm", "False alarm"), ("unsure", "Unsure")),
        strict=True,
    ):
        if col.button(label, key=f"report_verdict_{sid}_{verdict}", disabled=not reviewer):
            choice = verdict
    if not reviewer:
        st.caption("Type your name above to give a verdict.")
    if choice is None:
        return
    try:
        review_id = data.save_verdict(
            user=user, statement_check_id=sid, reviewer=reviewer, verdict=choice, note=""
        )
    except (PermissionError, ValueError, LookupError) as exc:
        st.error(f"Verdict not stored: {exc}")
        return
    st.session_state["report_undo"] = {
        "review_id": review_id,
        "reviewer": reviewer,
        "conversation_id": conv["id"] if conv else None,
    }
    st.session_state["report_last"] = f"stored: {choice.replace('_', ' ')} (statement {sid})"
    st.rerun()


labels = {r["id"]: _label(r) for r in recent}
c1, c2 = st.columns([3, 2])
picked = c1.selectbox(
    "Answer (newest first, within the filters)",
    [None, *labels],
    format_func=lambda cid: "Choose an answer…" if cid is None else labels[cid],
    key="report_pick",
)
typed = c2.text_input("…or an answer id", key="report_typed")
if typed.strip():
    st.session_state["report_conversation"] = typed.strip()
elif picked:
    st.session_state["report_conversation"] = picked

cid = st.session_state.get("report_conversation") or ""
if not cid:
    # nothing chosen yet: open on the most recent flagged answer within the filters
    newest = next((r for r in recent if r["flagged"]), None)
    if newest is None:
        st.info("Choose an answer above, or open one from the review queue or the patients page.")
        st.stop()
    cid = newest["id"]
    st.caption("Showing the most recent flagged answer; choose another above.")
conv = data.conversation(cid)
if conv is None:
    st.error("No answer with this id.")
    st.stop()
url_state.write({"id": conv["id"]})  # the address opens this answer

seen = st.session_state.setdefault("report_audited", set())
if conv["id"] not in seen:
    data.audit(action="view", target_type="conversation", target_id=conv["id"], actor=auth.actor())
    seen.add(conv["id"])

st.subheader(f"Answer {md_text(conv['external_id'])}")
st.caption(
    f"Patient {md_text(conv['patient_id'])} · {conv['timestamp']:%Y-%m-%d %H:%M} UTC · model "
    f"{md_text(conv['model'])}"
    + (f" · checked in {conv['execution_time_ms']} ms" if conv["execution_time_ms"] else "")
)
# the level shown is never below the worst finding; the stored scores stay as they are
risk = plain.shown_risk(conv["risk_level"], conv["statements"], conv["contradictions"])
st.markdown(
    f"Risk level: **{plain.risk_words(risk.level)}**"
    + (
        f" · {md_text(risk.reason)} (the combined risk score alone gives "
        f"{plain.risk_words(risk.stored)})"
        if risk.raised
        else ""
    ),
    help="From the combined risk score; shown as at least "
    f"'{plain.RISK_FLOOR}' when a flagged statement is of critical severity or the answer "
    "contradicts its sources or an earlier answer.",
)
cols = st.columns(5)
names = {
    "grounding": "Grounding",
    "consistency": "Consistency",
    "confidence": "Confidence",
    "risk": "Risk (higher is worse)",
    "quality": "Overall quality",
}
for col, (key, label) in zip(cols, names.items(), strict=True):
    v = conv["scores"][key]
    col.metric(label, "–" if v is None else f"{v:.2f}", help=plain.SCORE_HELP[key])
notices = plain.split_notices(conv["warnings"], conv["checks"])
for w in notices.findings:
    st.warning(md_text(w))
# how the checks ran is no finding about the answer: kept apart, collapsed
with st.expander(notices.label, expanded=False):
    if notices.setup:
        st.markdown("\n".join(f"- {md_text(w)}" for w in notices.setup))
    for name, status, reason in notices.not_run:
        st.caption(
            f"{md_text(name)}: {status}" + (f" ({md_text(reason)})" if reason else ""),
        )
    st.markdown("**Every check's status**")
    st.dataframe(
        [
            {"check": n, "status": v["status"], "reason": v["reason"] or ""}
            for n, v in conv["checks"].items()
        ],
        hide_index=True,
        key="report_checks",
    )

st.markdown("**Query**")
st.html(highlight_html(conv["query"], []))
st.markdown("**Answer, statements coloured by status**")
if conv["answer"] is None:
    st.warning("The answer text is not available (purged by the retention policy).")
else:
    st.html(
        highlight_html(
            conv["answer"], exports.statement_highlights(conv["answer"], conv["statements"])
        )
    )
    st.html(legend(["grounded", "unsupported", "contradicted"]))

st.markdown("**Evidence per statement**")
# verdicts on the flagged statements, with the review queue's permission check
may_judge = auth.can(user, "give_verdict")
flagged_here = [s for s in conv["statements"] if s["status"] != "grounded"]
if may_judge and flagged_here and auth.auth_mode() == "none" and not reviewer_name():
    st.text_input(
        "Your name, stored with every verdict",
        key="report_reviewer",
        max_chars=auth.MAX_REVIEWER_CHARS,
        on_change=_take_reviewer_name,
        placeholder="e.g. Dr. Rivera",
    )
reviewer = reviewer_name()
last_given: dict[str, Any] = st.session_state.get("report_undo") or {}
if last_given and last_given.get("conversation_id") == conv["id"]:
    if st.button("Undo the last verdict", key="report_undo_button"):
        try:
            data.undo_verdict(
                user=user, review_id=last_given["review_id"], reviewer=last_given["reviewer"]
            )
        except (PermissionError, LookupError) as exc:
            st.error(f"Verdict not taken back: {exc}")
        else:
            st.session_state["report_undo"] = None
            st.session_state["report_last"] = "taken back"
            st.rerun()
last = st.session_state.get("report_last")
if last:
    st.toast(f"Verdict {last}")
    st.session_state["report_last"] = None
sources = {s.get("id"): s.get("text") for s in conv["sources"]}
for s in conv["statements"]:
    title = f"#{s['index'] + 1} {s['status']} · {plain.method_words(s['method'])}"
    if s.get("severity"):
        title += f" · {s['severity']} · {KIND_LABELS.get(s.get('kind') or '', s.get('kind'))}"
    if s["confidence"] is not None:
        title += f" · confidence {s['confidence']:.2f}"
    if s.get("review"):
        title += f" · verdict: {s['review']['verdict']}"
    with st.expander(title, expanded=s["status"] != "grounded"):
        marks = exports.word_marks(s["text"], 0, len(s["text"]), s["status"], s.get("evidence"))
        st.html(badge(s["status"], s["status"]) + " " + highlight_html(s["text"], marks, box=False))
        st.caption(
            f"How it was checked: {plain.method_words(s['method'])}.",
            help=plain.method_help(s["method"]),
        )
        if s.get("reason"):
            st.caption(md_text(s["reason"]))
        if s["status"] != "grounded" and may_judge:
            _verdict_buttons(s, reviewer)
        src = sources.get(s["source_id"])
        if src is not None:
            span = (
                (s["evidence_start"], s["evidence_end"])
                if s["evidence_start"] is not None and s["evidence_end"] is not None
                else find_span(src, s.get("evidence"))
            )
            kind = "evidence" if s["status"] == "grounded" else "closest"
            st.caption(f"Source {md_text(s['source_id'])}")
            st.html(highlight_html(src, [Highlight(span[0], span[1], kind)] if span else []))
        elif s.get("evidence"):
            st.html(highlight_html(s["evidence"], []))
        else:
            st.caption("No evidence found in the sources.")

left, right = st.columns(2)
with left:
    sc = conv["selfcheck"][0] if conv["selfcheck"] else None
    if sc is None or sc["status"] != "ok":
        st.markdown("**SelfCheck**")
        st.caption(
            "SelfCheck did not run for this answer"
            + (f": {sc['status']} ({sc['reason']})" if sc else " (no samples).")
        )
    else:
        st.vega_lite_chart(figures.selfcheck_figure(sc["sentences"]), key="report_selfcheck")
        st.caption(
            f"{md_text(sc['method'])} over {sc['samples']} samples · passage score "
            f"{sc['passage_score'] if sc['passage_score'] is not None else '–'}",
            help=plain.SELFCHECK_HELP,
        )
with right:
    conf = conv["confidence"][0] if conv["confidence"] else None
    if conf is None:
        st.markdown("**Confidence breakdown**")
        st.caption("No confidence breakdown stored.")
    else:
        st.vega_lite_chart(
            figures.confidence_figure(
                {
                    k: conf[k]
                    for k in ("retrieval", "source", "extraction", "consistency", "aggregate")
                }
            ),
            key="report_confidence",
        )
        if conf.get("explanation"):
            st.caption(md_text(conf["explanation"]))
    st.caption(plain.CONFIDENCE_SENTENCE)

st.markdown("**Contradictions with earlier answers**")
if not conv["contradictions"]:
    st.caption("None found.")
for i, c in enumerate(conv["contradictions"]):
    with st.container(border=True):
        st.html(contradiction_badges(c))
        if c.get("explanation"):
            st.caption(md_text(c["explanation"]))
        if c.get("current_statement"):
            st.html(highlight_html(c["current_statement"], []))
        prev = c.get("previous")
        if prev:
            st.button(
                f"Open the earlier answer {md_text(prev['external_id'])} "
                f"({prev['timestamp']:%Y-%m-%d})",
                key=f"report_prev_{i}",
                on_click=_open,
                args=(c["previous_conversation_id"],),
            )


def _plain_table(rows: list[dict[str, Any]], columns: dict[str, tuple[str, str]], key: str) -> None:
    """A table with plain headers (a tooltip each); columns holding nothing are left out."""
    table, tips = plain.plain_table(rows, columns)
    st.dataframe(
        table,
        hide_index=True,
        key=key,
        column_config={h: st.column_config.Column(h, help=tip) for h, tip in tips.items()},
    )


if conv["evidence"]:
    st.markdown("**Evidence quotes found in the transcript**", help=plain.EVIDENCE_HELP)
    _plain_table(conv["evidence"], plain.EVIDENCE_COLUMNS, "report_evidence")
st.markdown("**Claims checked against their evidence**", help=plain.CLAIMS_HELP)
if conv["claims"]:
    _plain_table(conv["claims"], plain.CLAIM_COLUMNS, "report_claims")
else:
    st.caption("No claim was checked for this answer.")

actor = auth.actor()  # read now: the lambdas below run on click, after this script
shown = dict(conv)


def _exported(fmt: str, text: str) -> str:
    """Audit a report download when the user clicks (runs outside the script)."""
    data.audit(actor=actor, action="export", target_type="conversation", target_id=shown["id"])
    return text


d1, d2 = st.columns(2)
d1.download_button(
    "Download report (HTML)",
    data=lambda: _exported("html", exports.report_html(shown)),
    file_name=f"report-{conv['external_id']}.html",
    mime="text/html",
    key="report_download_html",
    on_click="ignore",
)
d2.download_button(
    "Download report (Markdown)",
    data=lambda: _exported("markdown", exports.report_markdown(shown)),
    file_name=f"report-{conv['external_id']}.md",
    mime="text/markdown",
    key="report_download_md",
    on_click="ignore",
)
