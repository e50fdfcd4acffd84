"""Calibration: the detector's risk against clinicians' verdicts."""

from __future__ import annotations

import numpy as np
import streamlit as st

from core.calibration import (
    aurc_loss,
    brier_score_loss,
    expected_calibration_error,
    reliability_curve,
)
from dashboard import auth, data, exports, figures, plain, url_state
from dashboard.downloads import csv_button
from dashboard.sidebar import current_filters

auth.guard("calibration")
st.title("Calibration")
st.caption(
    "How well the statement risk (higher is worse) predicts what reviewers decide: a "
    "confirmed hallucination counts as 1, a false alarm as 0; 'unsure' verdicts are left out."
)
f = current_filters()
rows = data.reviewed(f)
labelled = [r for r in rows if r["verdict"] in ("confirmed", "false_alarm")]
counts = {v: sum(r["verdict"] == v for r in rows) for v in ("confirmed", "false_alarm", "unsure")}
c = st.columns(6)
help_ = plain.METRIC_HELP
c[0].metric("Reviewed statements", len(rows), help=help_["reviewed"])
c[1].metric("Confirmed", counts["confirmed"], help=help_["confirmed"])
c[2].metric("False alarms", counts["false_alarm"], help=help_["false_alarm"])

# the view lives in the URL: the sidebar's filters, ``bins`` and ``threshold``
if (v := url_state.as_number(url_state.read("bins"), 3, 20, integer=True)) is not None:
    st.session_state["calibration_bins"] = int(v)
if (v := url_state.as_number(url_state.read("threshold"), 0.0, 1.0)) is not None:
    st.session_state["calibration_threshold"] = round(float(v) * 20) / 20  # the slider's step
n_bins = st.slider("Bins", 3, 20, 10, key="calibration_bins", help=help_["bins"])
if len(labelled) < 2:
    st.info("Calibration needs reviewed statements: give verdicts in the review queue.")
else:
    y = np.array([r["verdict"] == "confirmed" for r in labelled], dtype=float)
    p = np.array([min(1.0, max(0.0, float(r["risk"]))) for r in labelled])
    conf = np.array(
        [
            float(r["confidence"]) if r["confidence"] is not None else float(r["risk"])
            for r in labelled
        ]
    )
    c[3].metric(
        "ECE (lower is better)",
        f"{expected_calibration_error(y, p, n_bins=n_bins):.3f}",
        help=help_["ece"],
    )
    c[4].metric("Brier (lower is better)", f"{brier_score_loss(y, p):.3f}", help=help_["brier"])
    c[5].metric("AURC (lower is better)", f"{aurc_loss(y, conf):.3f}", help=help_["aurc"])
    few = plain.few_verdicts_warning(len(labelled))
    if few:
        st.warning(few)
    with st.expander("What these numbers mean", expanded=False):
        st.markdown("\n".join(f"- {help_[k]}" for k in ("ece", "brier", "aurc")))
    curve = reliability_curve(y, p, n_bins=n_bins)
    left, right = st.columns(2)
    left.vega_lite_chart(
        figures.reliability_figure(
            curve.mean_predicted, curve.fraction_positive, curve.counts, label="statement risk"
        ),
        key="calibration_reliability",
    )
    right.vega_lite_chart(
        figures.score_by_verdict_figure(rows, score="risk"), key="calibration_distribution"
    )
    left.caption(help_["reliability"])
    right.caption(help_["by_verdict"])
    with left:
        csv_button(
            "Reliability (CSV)",
            "calibration_reliability",
            exports.reliability_rows(curve.mean_predicted, curve.fraction_positive, curve.counts),
            exports.RELIABILITY_FIELDS,
        )
    with right:
        csv_button(
            "Risk by verdict (CSV)",
            "calibration_distribution",
            exports.verdict_histogram_rows(rows, score="risk"),
            exports.VERDICT_HISTOGRAM_FIELDS,
        )

st.subheader("Threshold explorer")
bins = 20
hist = data.risk_histogram(f, bins=bins)
total = sum(hist)
grid = [i / bins for i in range(bins + 1)]
flag_rate = [sum(hist[i:]) / total if total else 0.0 for i in range(bins + 1)]
false_alarm = []
for t in grid:
    above = [r for r in labelled if r["risk"] >= t - 1e-9]
    fa = sum(r["verdict"] == "false_alarm" for r in above)
    false_alarm.append(fa / len(above) if above else 0.0)
applied, history = data.review_threshold()
lowest = data.LOWEST_REVIEW_THRESHOLD
in_force = applied if applied is not None else lowest
in_force_text = (
    f"The threshold in force is {in_force:.2f}, applied by {history[0]['actor']}."
    if applied is not None and history
    else f"No threshold is applied: every statement the verifier does not ground is flagged "
    f"(risk {lowest:.2f} and above)."
)
current = st.slider(
    "Flag statements with risk at or above",
    0.0,
    1.0,
    in_force,
    0.05,
    help=in_force_text,
    key="calibration_threshold",
)
i = min(bins, int(round(current * bins)))
t1, t2, t3 = st.columns(3)
t1.metric("Statements checked", f"{total:,}", help=help_["statements"])
t2.metric("Flag rate", f"{flag_rate[i]:.1%}", help=help_["flag_rate"])
t3.metric(
    "False-alarm rate among reviewed flags",
    f"{false_alarm[i]:.1%}",
    help=help_["false_alarm_rate"],
)
# what flagging at the chosen threshold instead of the one in force would change
change = plain.threshold_change(hist, labelled, current=in_force, chosen=current)
st.info(plain.describe_threshold_change(change))
st.caption(
    f"{in_force_text} Moving the slider is a what-if; an admin can apply the chosen threshold "
    "below, and it flags answers and fills the review queue from then on."
)
st.vega_lite_chart(
    figures.threshold_figure(grid, flag_rate, false_alarm, current=current),
    key="calibration_thresholds",
)
csv_button(
    "Threshold explorer (CSV)",
    "calibration_thresholds",
    exports.threshold_rows(grid, flag_rate, false_alarm),
    exports.THRESHOLD_FIELDS,
)

st.subheader("Apply a threshold")
if not auth.can(auth.current_user(), "apply_threshold"):
    st.caption("Only an admin applies a threshold. " + in_force_text)
else:
    st.caption(
        "From then on a statement below the threshold flags neither its answer nor the review "
        "queue; stored results are not changed, and going back to the default restores every "
        "flag. The change is recorded with your name and reason, and audited."
    )
    reason = st.text_input(
        "Reason (required)",
        key="calibration_threshold_reason",
        max_chars=500,
        placeholder="e.g. 40 verdicts: below 0.55 nine in ten flags were false alarms",
    )
    a1, a2 = st.columns(2)
    too_low = current < lowest - 1e-9
    if too_low:
        st.warning(
            f"Thresholds below {lowest:.2f} would flag statements the verifier grounded; the "
            f"lowest threshold that can be applied is {lowest:.2f}."
        )
    if a1.button(
        f"Apply {current:.2f}",
        key="calibration_apply",
        type="primary",
        disabled=too_low or not reason.strip() or abs(current - in_force) < 1e-9,
    ):
        data.apply_review_threshold(current, reason, user=auth.current_user(), actor=auth.actor())
        st.toast(f"Review threshold {current:.2f} applied.")
        st.rerun()
    if applied is not None and a2.button(
        "Back to the default", key="calibration_default", disabled=not reason.strip()
    ):
        data.apply_review_threshold(None, reason, user=auth.current_user(), actor=auth.actor())
        st.toast("Back to the default: every statement that is not grounded is flagged.")
        st.rerun()
if history:
    st.dataframe(
        [
            {
                "when": h["changed_at"],
                "threshold": "default" if h["value"] is None else f"{h['value']:.2f}",
                "before": "default" if h["previous"] is None else f"{h['previous']:.2f}",
                "by": h["actor"],
                "reason": h["reason"] or "",
            }
            for h in history
        ],
        hide_index=True,
        key="calibration_threshold_history",
    )
url_state.write({"bins": str(n_bins), "threshold": f"{current:.2f}"})
