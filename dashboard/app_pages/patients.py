"""Patients: one patient's answers over time and the entity timeline with contradictions."""

from __future__ import annotations

import streamlit as st

from dashboard import auth, data, exports, figures, url_state
from dashboard.downloads import csv_button
from dashboard.highlight import badge, highlight_html, md_text
from dashboard.sidebar import current_filters

auth.guard("patients")
st.title("Patients")
f = current_filters()
choices = list(f.patients) or data.patients()
if not choices:
    st.info("No patients stored yet.")
    st.stop()
# the view lives in the URL: the sidebar's filters and ``patient``
if (v := url_state.as_choice(url_state.read("patient"), choices)) is not None:
    st.session_state["patients_pick"] = v
pid = st.selectbox("Patient", choices, key="patients_pick")
url_state.write({"patient": pid})
if pid is None:
    st.stop()
info = data.patient(pid, f)
answers, contradictions = info["answers"], info["contradictions"]

c = st.columns(4)
c[0].metric("Answers in range", len(answers))
c[1].metric("Flagged", sum(a["flagged"] for a in answers))
c[2].metric("Contradictions", len(contradictions))
c[3].metric("Entities", len({(m["kind"], m["name"]) for m in info["mentions"]}))

scores_chart = figures.patient_answers_figure(answers, thresholds=data.thresholds())
picked = None
if answers:  # a click on a point selects its answer (an empty chart has no point to select)
    event = st.vega_lite_chart(scores_chart, key="patients_scores", on_select="rerun")
    picked = figures.selected_point(event.selection, fields=figures.ANSWER_FIELDS)
else:
    st.vega_lite_chart(scores_chart, key="patients_scores")
left, right = st.columns([1, 3])
with left:
    csv_button(
        "Answers (CSV)",
        "patients_answers",
        exports.patient_answer_rows(answers),
        exports.PATIENT_ANSWER_FIELDS,
    )
if picked and picked[1]:  # (record id, conversation id)
    with right:
        if st.button(f"Open the report of answer {md_text(picked[0])}", key="patients_open_point"):
            st.session_state["report_conversation"] = picked[1]
            st.switch_page("app_pages/report.py", query_params={"id": picked[1]})
st.vega_lite_chart(figures.entity_timeline_figure(info["mentions"]), key="patients_entities")

st.subheader("Contradictions")
if not contradictions:
    st.caption("None found in this range.")
by_id = {a["id"]: a for a in answers}
for i, x in enumerate(contradictions):
    with st.container(border=True):
        st.html(
            badge(f"{x['severity'] or ''} {x['check_type']}", "contradicted")
            + " "
            + badge(x["entity"] or "", "focus")
        )
        if x["explanation"]:
            st.caption(x["explanation"])
        if x["current_statement"]:
            st.html(highlight_html(x["current_statement"], []))
        cur = by_id.get(x["conversation_id"])
        if cur and st.button(
            f"Open answer {md_text(cur['external_id'])}", key=f"patients_open_{i}"
        ):
            st.session_state["report_conversation"] = x["conversation_id"]
            st.switch_page("app_pages/report.py")

st.subheader("Answers")
st.dataframe(
    exports.patient_answer_rows(list(reversed(answers))),
    hide_index=True,
    key="patients_answers",
)
