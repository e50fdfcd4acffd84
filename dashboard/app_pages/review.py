"""Review queue: flagged statements riskiest first, each next to its source, with verdicts."""

from __future__ import annotations

import streamlit as st

from dashboard import auth, data, exports
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

user = auth.guard("review")
st.title("Review queue")
f = current_filters()

c1, c2, c3 = st.columns([2, 2, 1])
statuses = c1.multiselect(
    "Status",
    ["contradicted", "unsupported"],
    default=["contradicted", "unsupported"],
    key="review_statuses",
)
state = (
    c2.segmented_control(
        "Show", ["unreviewed", "reviewed", "all"], default="unreviewed", key="review_state"
    )
    or "unreviewed"
)
if "review_index" not in st.session_state:
    st.session_state["review_index"] = 0
if not statuses:
    st.info("Pick at least one status.")
    st.stop()

idx = int(st.session_state["review_index"])
rows, total = data.flagged(f, statuses=tuple(statuses), review_state=state, offset=idx, limit=1)
if total and idx >= total:
    idx = st.session_state["review_index"] = total - 1
    rows, total = data.flagged(f, statuses=tuple(statuses), review_state=state, offset=idx, limit=1)
c3.metric("In queue", f"{total:,}")

actor = auth.actor()  # read now: the export callables run on click, after this script


def _exported(what: str, csv_text: str) -> str:
    """Audit an export when the user downloads it (runs on click, outside the script)."""
    data.audit(actor=actor, action="export", target_type=what, target_id="csv")
    return csv_text


with st.expander("Export as CSV"):
    st.download_button(
        "Queue (CSV)",
        data=lambda: _exported(
            "review_queue",
            exports.rows_to_csv(
                data.queue_rows(f, statuses=tuple(statuses), review_state=state),
                exports.QUEUE_FIELDS,
            ),
        ),
        file_name="review_queue.csv",
        mime="text/csv",
        key="review_export_queue",
        on_click="ignore",
    )
    st.download_button(
        "Verdicts (CSV)",
        data=lambda: _exported(
            "verdicts", exports.rows_to_csv(data.reviews_export(), exports.VERDICT_FIELDS)
        ),
        file_name="verdicts.csv",
        mime="text/csv",
        key="review_export_verdicts",
        on_click="ignore",
    )

if not rows:
    st.success("Nothing left to review for these filters.")
    st.stop()

item = rows[0]
audited = st.session_state.setdefault("review_audited", set())
if item["statement_check_id"] not in audited:
    data.audit(
        action="view",
        target_type="statement_check",
        target_id=str(item["statement_check_id"]),
    )
    audited.add(item["statement_check_id"])
nav1, nav2, nav3 = st.columns([1, 1, 4])
if nav1.button("Previous", key="review_prev", disabled=idx == 0):
    st.session_state["review_index"] = max(0, idx - 1)
    st.rerun()
if nav2.button("Next", key="review_next", disabled=idx + 1 >= total):
    st.session_state["review_index"] = idx + 1
    st.rerun()
nav3.caption(f"Item {idx + 1} of {total:,} · riskiest first")

conv = data.conversation(item["conversation_id"])
st.subheader(f"Statement {item['statement_index'] + 1} of answer {md_text(item['external_id'])}")
st.html(
    " ".join(
        [
            badge(item["status"], item["status"]),
            badge(f"method: {item['method']}", "closest"),
            badge(
                "confidence: "
                + ("–" if item["confidence"] is None else f"{item['confidence']:.2f}"),
                "closest",
            ),
            badge(f"risk: {item['risk']:.2f}", item["status"]),
            badge(
                f"patient {item['patient_id']} · {item['model']} · {item['timestamp']:%Y-%m-%d}",
                "focus",
            ),
        ]
    )
)
if item.get("reason"):
    st.caption(f"Why: {md_text(item['reason'])}")
if item.get("verdict"):
    st.caption(f"Latest verdict: {item['verdict']} by {md_text(item['reviewer'])}")

answer = conv["answer"] if conv else None
left, right = st.columns(2)
with left:
    st.markdown("**The statement inside its answer**")
    if answer is None:
        st.warning("The answer text is not available (purged by the retention policy).")
    else:
        spans = []
        if item["start"] is not None and item["end"] is not None:
            spans = exports.word_marks(
                answer, item["start"], item["end"], item["status"], item.get("evidence")
            )
        st.html(highlight_html(answer, spans))
        if any(h.kind == "focus" for h in spans):
            st.caption("Outlined: words the evidence does not bear out.")
with right:
    st.markdown(f"**Source {md_text(item['source_chunk_id'] or '(none)')}**")
    sources = {s.get("id"): s.get("text") for s in (conv or {}).get("sources", [])}
    source = sources.get(item["source_chunk_id"])
    if source is None:
        st.info("No source passage matched this statement.")
        if item.get("evidence"):
            st.html(highlight_html(item["evidence"], []))
    else:
        span = (
            (item["evidence_start"], item["evidence_end"])
            if item["evidence_start"] is not None and item["evidence_end"] is not None
            else find_span(source, item.get("evidence"))
        )
        kind = "contradicted" if item["status"] == "contradicted" else "closest"
        marks = [Highlight(span[0], span[1], kind, "closest evidence")] if span else []
        st.html(highlight_html(source, marks))
        st.html(legend([kind]))

contradictions = (conv or {}).get("contradictions", [])
if contradictions:
    st.markdown("**Contradictions with earlier answers**")
    for c in contradictions:
        prev = c.get("previous") or {}
        with st.container(border=True):
            st.html(contradiction_badges(c))
            if c.get("explanation"):
                st.caption(c["explanation"])
            if c.get("previous_statement"):
                st.html(highlight_html(c["previous_statement"], []))
            if prev:
                st.caption(
                    f"Earlier answer {md_text(prev['external_id'])} on {prev['timestamp']:%Y-%m-%d}"
                )

st.divider()
reviewer = reviewer_name()
if not reviewer:
    st.warning("Type your name in the sidebar (Reviewer name) to give a verdict.")
note = st.text_area("Note (optional)", key=f"review_note_{item['statement_check_id']}")
b1, b2, b3 = st.columns(3)
choice = None
if b1.button(
    "Confirmed hallucination", key="review_confirmed", type="primary", disabled=not reviewer
):
    choice = "confirmed"
if b2.button("False alarm", key="review_false_alarm", disabled=not reviewer):
    choice = "false_alarm"
if b3.button("Unsure", key="review_unsure", disabled=not reviewer):
    choice = "unsure"
if choice is not None:
    try:
        data.save_verdict(
            user=user,
            statement_check_id=item["statement_check_id"],
            reviewer=reviewer,
            verdict=choice,
            note=note or "",
        )
    except (PermissionError, ValueError, LookupError) as exc:
        st.error(f"Verdict not stored: {exc}")
    else:
        st.session_state["review_last"] = (item["statement_check_id"], choice)
        if state != "unreviewed":
            st.session_state["review_index"] = idx + 1
        st.rerun()

last = st.session_state.get("review_last")
if last:
    st.toast(f"Verdict stored: {last[1].replace('_', ' ')} (statement {last[0]})")
    st.session_state["review_last"] = None
