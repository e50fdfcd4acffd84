"""Upload: a transcript with evidence quotes and/or an answer, grounded live."""

from __future__ import annotations

import streamlit as st

from core.text import short_hash
from dashboard import auth, data, exports
from dashboard.highlight import Highlight, badge, highlight_html, legend
from dashboard.uploads import UploadError, read_answer, read_evidence, read_transcript

user = auth.guard("upload")
st.title("Upload")
st.caption(
    "Upload a transcript and the evidence quotes or the answer drawn from it: every quote and "
    "statement is checked against the transcript, and the matching spans are highlighted. "
    "Nothing is stored unless you save it."
)
cfg = data.settings()
limits = {"max_bytes": cfg.max_input_bytes}


def _load_example() -> None:
    """Fill the page with the worked example (a visit and a note with planted errors)."""
    from dashboard.example import NOTE, VISIT

    st.session_state["upload_transcript_text"] = VISIT
    st.session_state["upload_answer_text"] = NOTE


st.button(
    "Try the worked example",
    key="upload_example",
    on_click=_load_example,
    help="A short visit and a note written from it with five planted errors (no real patient).",
)
t_file = st.file_uploader(
    "Transcript (.txt or .json)", type=["txt", "json"], key="upload_transcript"
)
t_text = st.text_area("…or paste the transcript", key="upload_transcript_text", height=120)
c1, c2 = st.columns(2)
e_file = c1.file_uploader(
    "Evidence quotes (.json: {key: [quote, …]})", type=["json"], key="upload_evidence"
)
a_file = c2.file_uploader("Answer (.txt)", type=["txt", "json"], key="upload_answer")
a_text = c2.text_area("…or paste the answer", key="upload_answer_text", height=100)

with st.expander("Options"):
    o1, o2, o3 = st.columns(3)
    mode = o1.radio("Quote matching", ["substring", "fuzzy"], key="upload_mode", horizontal=True)
    threshold = o2.slider(
        "Fuzzy threshold",
        0.5,
        1.0,
        float(cfg.evidence_quote_fuzzy_threshold),
        0.01,
        key="upload_threshold",
        disabled=mode != "fuzzy",
    )
    semantic = o3.toggle(
        "Semantic tier (embedding model)",
        value=True,
        key="upload_semantic",
        help="Off: exact and fuzzy matching only (no model to load).",
    )

errors: list[str] = []
transcript = evidence = answer = None
if t_file is not None or t_text.strip():
    # a pasted transcript is read exactly as an uploaded .txt file (same checks and limits)
    name, raw = (
        (t_file.name, t_file.getvalue())
        if t_file is not None
        else (
            "pasted transcript",
            t_text.encode("utf-8", "surrogatepass"),
        )
    )
    try:
        transcript = read_transcript(name, raw, max_chars=cfg.max_transcript_chars, **limits)
    except UploadError as exc:
        errors.append(str(exc))
if e_file is not None:
    try:
        evidence = read_evidence(e_file.name, e_file.getvalue(), **limits)
    except UploadError as exc:
        errors.append(str(exc))
if a_file is not None:
    try:
        answer = read_answer(
            a_file.name, a_file.getvalue(), max_chars=cfg.max_transcript_chars, **limits
        )
    except UploadError as exc:
        errors.append(str(exc))
elif a_text.strip():
    answer = a_text
for message in errors:
    st.error(message)
if transcript is None:
    if not errors:
        st.info("Upload or paste a transcript to begin, or try the worked example.")
    st.stop()
if evidence is None and answer is None:
    st.info("Add evidence quotes or an answer to check against the transcript.")
    st.html(highlight_html(transcript, []))
    st.stop()

marks: list[Highlight] = []
if evidence is not None:
    res = data.ground_evidence(transcript, evidence, mode or "substring", float(threshold))
    stats = res["stats"]
    st.subheader("Evidence quotes")
    m1, m2, m3 = st.columns(3)
    m1.metric("Quotes", stats["extracted_count"])
    m2.metric("Grounded", stats["validated_count"])
    m3.metric("Rejected", stats["rejected_count"])
    if res["failure_event"]:
        st.error("Evidence quotes were produced but none could be grounded in the transcript.")
    for w in res["warnings"]:
        st.warning(w)
    rows = []
    for mt in res["matches"]:
        start, end = mt["start"], mt["end"]
        closest = transcript[start:end] if start is not None and end is not None else None
        if start is not None and end is not None:
            kind = "evidence" if mt["grounded"] else "rejected"
            title = f"{mt['key']} · {'grounded' if mt['grounded'] else 'rejected, closest'}"
            marks.append(Highlight(start, end, kind, title))
        rows.append(
            {
                "key": mt["key"],
                "quote": mt["quote"],
                "grounded": mt["grounded"],
                "method": mt["method"] or "",
                "score": round(mt["score"], 3),
                "closest span": "" if mt["grounded"] else (closest or ""),
            }
        )
    st.dataframe(rows, hide_index=True, key="upload_quotes")
    rejected = [r for r in rows if not r["grounded"]]
    for r in rejected:
        with st.container(border=True):
            st.html(badge("rejected", "rejected") + " " + highlight_html(r["quote"], [], box=False))
            if r["closest span"]:
                st.html(
                    badge(f"closest span · score {r['score']:.2f}", "closest")
                    + " "
                    + highlight_html(r["closest span"], [], box=False)
                )

grounding = None
if answer is not None:
    try:
        grounding = data.ground_answer(answer, transcript, bool(semantic))
    except ValueError as exc:
        st.error(f"Answer: {exc}")
if grounding is not None:
    st.subheader("Answer grounding")
    g1, g2 = st.columns(2)
    g1.metric("Grounding score (higher is better)", f"{grounding['grounding_score']:.2f}")
    g2.metric("Overall grounded", "yes" if grounding["overall_grounded"] else "no")
    st.html(highlight_html(answer, exports.statement_highlights(answer, grounding["statements"])))
    st.html(legend(["grounded", "unsupported", "contradicted"]))
    for s in grounding["statements"]:
        if s["source_id"] == "transcript" and s["evidence_start"] is not None:
            kind = "evidence" if s["status"] == "grounded" else "closest"
            marks.append(
                Highlight(
                    s["evidence_start"],
                    s["evidence_end"],
                    kind,
                    f"statement #{s['index'] + 1} · {s['status']}",
                )
            )
    st.dataframe(
        [
            {
                "#": s["index"] + 1,
                "statement": s["text"],
                "status": s["status"],
                "method": s["verification_method"],
                "confidence": s["confidence"],
                "not in the evidence": ", ".join(w["text"] for w in s["unsupported_words"]),
            }
            for s in grounding["statements"]
        ],
        hide_index=True,
        key="upload_statements",
    )
    tiers = ", ".join(f"{k}: {v}" for k, v in grounding["checks"].items())
    st.caption(f"Tiers: {tiers}")
    for w in grounding["warnings"]:
        st.warning(w)

st.subheader("Transcript")
st.html(legend(["evidence", "rejected", "closest"]))
st.html(highlight_html(transcript, marks))

if answer is not None and grounding is not None and not auth.can(user, "store_record"):
    st.info(f"Your role ({user.role}) can analyse an upload here but not store it.")
elif answer is not None and grounding is not None:
    with st.expander("Save as a conversation"):
        with st.form("upload_save_form"):
            f1, f2 = st.columns(2)
            patient_id = f1.text_input("Patient id", key="upload_patient")
            record_id = f2.text_input(
                "Record id", value=f"upload-{short_hash(transcript + answer)}", key="upload_id"
            )
            model = f1.text_input("Model", value="unknown", key="upload_model")
            query = f2.text_input("Query", key="upload_query")
            submitted = st.form_submit_button("Save and run every check")
        if submitted:
            if not patient_id.strip() or not query.strip():
                st.error("Patient id and query are required to save.")
            else:
                try:
                    saved = data.save_upload(
                        record_id=record_id.strip(),
                        patient_id=patient_id.strip(),
                        model=model.strip(),
                        query=query,
                        answer=answer,
                        transcript=transcript,
                        evidence=evidence,
                        user=user,
                        actor=auth.actor(),
                    )
                except (PermissionError, ValueError) as exc:
                    st.error(f"Not saved: {exc}")
                else:
                    flag = "flagged" if saved["is_flagged"] else "not flagged"
                    st.success(
                        f"Saved as conversation {saved['conversation_id']} "
                        f"({saved['store_status']}; {flag})."
                    )
                    st.session_state["report_conversation"] = saved["conversation_id"]
