"""Review queue: flagged statements most severe first, then riskiest, each next to its source,
with verdict buttons (and keyboard shortcuts) beside the statement and an undo."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st

from core.severity import KIND_LABELS, KINDS, SEVERITIES, UNCLASSIFIED
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


def _undo_button(where: st.delta_generator.DeltaGenerator) -> None:
    """Undo: take back the last verdict given in this session and open its item again."""
    last: dict[str, Any] = st.session_state.get("review_undo") or {}
    if not where.button(
        "Undo",
        key="review_undo_button",
        disabled=not last,
        shortcut="Z",
        help="Take back your last verdict in this session (Z)",
        width="stretch",
    ):
        return
    try:
        data.undo_verdict(user=user, review_id=last["review_id"], reviewer=last["reviewer"])
    except (PermissionError, LookupError) as exc:
        where.error(f"Verdict not taken back: {exc}")
        return
    st.session_state["review_undo"] = None
    st.session_state["review_index"] = last["index"]
    st.session_state["review_last"] = (last["statement_check_id"], "undone")
    st.rerun()


SEVERITY_STYLES = {"critical": "contradicted", "high": "contradicted", "medium": "unsupported"}


def _take_reviewer_name() -> None:
    """The name typed on the page becomes the session's reviewer name (the sidebar's field)."""
    st.session_state[auth.REVIEWER_KEY] = auth.clean_reviewer(
        st.session_state.get("review_reviewer")
    )


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

# patient ids only for the roles that read record text (the sidebar's rule)
sees_patients = auth.can(user, "view_text")
kinds = tuple(st.session_state.get("review_kinds") or ())
severities = tuple(st.session_state.get("review_severities") or ())
page_models = tuple(
    m for m in st.session_state.get("review_models") or () if not f.models or m in f.models
)
page_patients = tuple(
    p
    for p in (st.session_state.get("review_patients") or () if sees_patients else ())
    if not f.patients or p in f.patients
)
# the page's model and patient filters narrow the sidebar's; each option's count is what
# choosing it would leave under every other filter (so the model counts ignore the model
# chosen here, and keep to the sidebar's models)
qf = data.FilterState(f.start, f.end, page_models or f.models, page_patients or f.patients)

# a change of any filter starts the queue again at its first (most severe) item
signature = (f.key(), tuple(statuses), state, kinds, severities, page_models, page_patients)
if st.session_state.get("review_signature") != signature:
    if "review_signature" in st.session_state:
        st.session_state["review_index"] = 0
    st.session_state["review_signature"] = signature

idx = int(st.session_state["review_index"])
query = {
    "statuses": tuple(statuses),
    "review_state": state,
    "kinds": kinds,
    "severities": severities,
    "order": "severity",
}
# the filters' counts and the item shown scan the same statements: read both at once
facets, (rows, total) = data.in_parallel(
    lambda: data.queue_facets(
        qf,
        statuses=tuple(statuses),
        review_state=state,
        kinds=kinds,
        severities=severities,
        patients=sees_patients,
    ),
    lambda: data.flagged(qf, offset=idx, limit=1, **query),  # type: ignore[arg-type]
)


def _facet(
    col: st.delta_generator.DeltaGenerator,
    label: str,
    key: str,
    order: Sequence[str],
    counts: Mapping[str, int],
    names: Mapping[str, str] | None = None,
) -> None:
    """A filter whose options say how many items each leaves (chosen ones stay listed)."""
    chosen = list(st.session_state.get(key) or ())
    known = [o for o in order if counts.get(o) or o in chosen]
    extra = sorted(o for o in {*counts, *chosen} if o not in order)
    col.multiselect(
        label,
        [*known, *extra],
        format_func=lambda o: f"{(names or {}).get(o, o)} ({counts.get(o, 0):,})",
        key=key,
        placeholder="All",
    )


k1, k2, k3, k4 = st.columns(4)
_facet(k1, "Severity", "review_severities", [*SEVERITIES, UNCLASSIFIED], facets["severity"])
_facet(k2, "Kind", "review_kinds", [*KINDS, UNCLASSIFIED], facets["kind"], KIND_LABELS)
# only the models and patients the sidebar keeps
models_left = {m: n for m, n in facets["model"].items() if not f.models or m in f.models}
_facet(k3, "Model", "review_models", sorted(models_left), models_left)
if sees_patients:
    patients_left = {
        p: n for p, n in facets.get("patient", {}).items() if not f.patients or p in f.patients
    }
    _facet(k4, "Patient", "review_patients", sorted(patients_left), patients_left)

if total and idx >= total:
    idx = st.session_state["review_index"] = total - 1
    rows, total = data.flagged(qf, offset=idx, limit=1, **query)  # type: ignore[arg-type]
c3.metric("In queue", f"{total:,}")
bar, _history = data.review_threshold()
if bar is not None:
    st.caption(
        f"A review threshold of {bar:.2f} is applied (Calibration page): statements below it "
        "are not in the queue."
    )

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
                data.queue_rows(
                    qf,
                    statuses=tuple(statuses),
                    review_state=state,
                    kinds=kinds,
                    severities=severities,
                    order="severity",
                ),
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

last = st.session_state.get("review_last")
if last:
    what = "taken back" if last[1] == "undone" else f"stored: {last[1].replace('_', ' ')}"
    st.toast(f"Verdict {what} (statement {last[0]})")
    st.session_state["review_last"] = None

if not rows:
    st.success("Nothing left to review for these filters.")
    _undo_button(st.container())
    st.stop()

item = rows[0]
audited = st.session_state.setdefault("review_audited", set())
if item["statement_check_id"] not in audited:
    data.audit(
        action="view",
        target_type="statement_check",
        target_id=str(item["statement_check_id"]),
        actor=auth.actor(),
    )
    audited.add(item["statement_check_id"])
nav1, nav2, nav3 = st.columns([1, 1, 4])
if nav1.button("Previous", key="review_prev", disabled=idx == 0, shortcut="K"):
    st.session_state["review_index"] = max(0, idx - 1)
    st.rerun()
if nav2.button("Next", key="review_next", disabled=idx + 1 >= total, shortcut="J"):
    st.session_state["review_index"] = idx + 1
    st.rerun()
nav3.caption(f"Item {idx + 1} of {total:,} · most severe first, then riskiest")

conv = data.conversation(item["conversation_id"])
st.subheader(f"Statement {item['statement_index'] + 1} of answer {md_text(item['external_id'])}")
severity = item.get("severity") or UNCLASSIFIED
st.html(
    " ".join(
        [
            badge(f"severity: {severity}", SEVERITY_STYLES.get(severity, "")),
            badge(KIND_LABELS.get(item.get("kind") or UNCLASSIFIED, "?"), "focus"),
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

# where to go from here: the whole answer, the patient's timeline (roles that see patient ids)
links = st.columns([1, 1, 3])
links[0].page_link(
    "app_pages/report.py",
    label="Open the answer's report",
    icon=":material/description:",
    query_params={"id": item["conversation_id"]},
)
if sees_patients:
    links[1].page_link(
        "app_pages/patients.py",
        label="Open the patient",
        icon=":material/person:",
        query_params={"patient": item["patient_id"]},
    )

# the statement and the verdict buttons first: in reach before the long answer and source
answer = conv["answer"] if conv else None
said, verdicts = st.columns([3, 2])
with said:
    text = item.get("statement")
    if text:
        marks = exports.word_marks(text, 0, len(text), item["status"], item.get("evidence"))
        st.html(highlight_html(text, marks))
    else:
        st.caption("The statement's text is not available (purged by the retention policy).")
    if item.get("reason"):
        st.caption(f"Why: {md_text(item['reason'])}")
    if item.get("verdict"):
        st.caption(f"Latest verdict: {item['verdict']} by {md_text(item['reviewer'])}")
with verdicts:
    if auth.auth_mode() == "none" and not reviewer_name():
        st.text_input(
            "Your name, stored with every verdict",
            key="review_reviewer",
            max_chars=auth.MAX_REVIEWER_CHARS,
            on_change=_take_reviewer_name,
            placeholder="e.g. Dr. Rivera",
        )
    reviewer = reviewer_name()
    if reviewer:
        st.caption(f"Reviewing as {md_text(reviewer)}")
    note = st.text_area(
        "Note (optional)", key=f"review_note_{item['statement_check_id']}", height=68
    )
    # two buttons a row: four in one row cut their labels short beside the statement
    b1, b2 = st.columns(2)
    b3, b4 = st.columns(2)
    choice = None
    if b1.button(
        "Confirmed",
        key="review_confirmed",
        type="primary",
        disabled=not reviewer,
        shortcut="H",
        help="Confirmed hallucination (H)",
        width="stretch",
    ):
        choice = "confirmed"
    if b2.button(
        "False alarm",
        key="review_false_alarm",
        disabled=not reviewer,
        shortcut="F",
        width="stretch",
    ):
        choice = "false_alarm"
    if b3.button(
        "Unsure", key="review_unsure", disabled=not reviewer, shortcut="U", width="stretch"
    ):
        choice = "unsure"
    _undo_button(b4)
    if not reviewer:
        st.caption("Type your name above to give a verdict.")
    st.caption("Keys: H confirmed · F false alarm · U unsure · Z undo · J next · K previous")
if choice is not None:
    try:
        review_id = data.save_verdict(
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
        st.session_state["review_undo"] = {
            "review_id": review_id,
            "reviewer": reviewer,
            "statement_check_id": item["statement_check_id"],
            "index": idx,
        }
        if state != "unreviewed":
            st.session_state["review_index"] = idx + 1
        st.rerun()

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
            if c.get("previous_conversation_id"):
                st.page_link(
                    "app_pages/report.py",
                    label="Open the earlier answer",
                    icon=":material/history:",
                    query_params={"id": c["previous_conversation_id"]},
                )
