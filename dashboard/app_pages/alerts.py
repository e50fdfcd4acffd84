"""Alerts: what the alert rules found, open first; acknowledge, resolve, open the answers
behind each, and see every webhook delivery attempt."""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard import auth, data, plain, url_state
from dashboard.highlight import md_text

PAGE_SIZE = 50
SHOWN_ANSWERS = 5
VIEWS = {"active": ("open", "acknowledged"), "all": ("open", "acknowledged", "resolved")}
VIEW_LABELS = {"active": "Open and acknowledged", "all": "All, resolved too"}
STATE_ICONS = {"open": ":red[●]", "acknowledged": ":orange[●]", "resolved": ":green[●]"}

user = auth.guard("alerts")
may_act = auth.can(user, "give_verdict")
st.title("Alerts")
st.caption(
    "What the alert rules found in the stored answers, newest first with the open ones on "
    "top. An alert stays one alert while its condition keeps firing: acknowledge it when "
    "someone is on it, resolve it when it is dealt with (it opens again if the condition "
    "fires after that). See docs/alerts.md for the rules."
)

counts = data.alert_counts()
c = st.columns(3)
c[0].metric("Open", counts["open"])
c[1].metric("Acknowledged", counts["acknowledged"])
c[2].metric("Resolved", counts["resolved"])

# the view lives in the URL: ``show`` (active or all) and ``alert`` (one alert, e.g. from a
# webhook's link)
if (v := url_state.as_choice(url_state.read("show"), VIEWS)) is not None:
    st.session_state["alerts_show"] = v
show = st.radio(
    "Show",
    list(VIEWS),
    format_func=VIEW_LABELS.__getitem__,
    horizontal=True,
    key="alerts_show",
)
picked = url_state.as_number(st.query_params.get("alert"), 1, 2**62, integer=True)
url_state.write({"show": show if show != "active" else None})

notice = st.session_state.pop("alerts_last", None)
if notice:
    st.success(notice)


def _change(alert_id: int, state: str) -> None:
    try:
        data.change_alert(user=user, actor=auth.actor(), alert_id=alert_id, state=state)
    except (PermissionError, ValueError) as exc:
        st.error(f"Not changed: {exc}")
        return
    st.session_state["alerts_last"] = f"Alert {alert_id} {state} by {auth.actor()}."
    st.rerun()


def _when(at: Any) -> str:
    return f"{at:%Y-%m-%d %H:%M} UTC" if at is not None else "–"


def _show(item: dict[str, Any]) -> None:
    aid = item["id"]
    state = item["state"]
    with st.container(border=True):
        head = (
            f"{STATE_ICONS.get(state, '')} **{plain.ALERT_STATES.get(state, state)}** · "
            f"{plain.ALERT_KINDS.get(item['kind'], item['kind'])} · rule "
            f"{md_text(item['rule'])} · alert {aid}"
        )
        st.markdown(head)
        st.markdown(md_text(plain.alert_sentence(item)))
        n = item["occurrences"]
        times = (
            f"First {_when(item['first_at'])}, last {_when(item['last_at'])}, fired "
            f"{n:,} {'time' if n == 1 else 'times'}."
        )
        if item["acknowledged_by"]:
            times += (
                f" Acknowledged by {md_text(item['acknowledged_by'])} "
                f"{_when(item['acknowledged_at'])}."
            )
        if item["resolved_by"]:
            times += f" Resolved by {md_text(item['resolved_by'])} {_when(item['resolved_at'])}."
        st.caption(times)
        buttons = st.columns([1, 1, 4])
        if state == "open" and buttons[0].button(
            "Acknowledge", key=f"alerts_ack_{aid}", disabled=not may_act
        ):
            _change(aid, "acknowledged")
        if state in ("open", "acknowledged") and buttons[1].button(
            "Resolve", key=f"alerts_resolve_{aid}", disabled=not may_act
        ):
            _change(aid, "resolved")
        ids = item["conversation_ids"]
        if ids:
            answers = data.alert_answers(tuple(ids))
            newest = sorted(
                ids,
                key=lambda cid: (
                    cid in answers,
                    answers[cid]["timestamp"] if cid in answers else "",
                ),
                reverse=True,
            )
            st.markdown(f"**The answers behind it** ({len(ids)}, newest first)")
            for cid in newest[:SHOWN_ANSWERS]:
                a = answers.get(cid)
                label = (
                    f"{md_text(a['external_id'])} · {a['timestamp']:%Y-%m-%d %H:%M} · "
                    f"{md_text(a['model'])}"
                    if a
                    else f"answer {cid[:12]} (no longer stored)"
                )
                st.page_link(
                    "app_pages/report.py",
                    label=label,
                    icon=":material/description:",
                    query_params={"id": cid},
                    disabled=a is None,
                )
            if len(newest) > SHOWN_ANSWERS:
                with st.expander(f"{len(newest) - SHOWN_ANSWERS} more"):
                    for cid in newest[SHOWN_ANSWERS:]:
                        a = answers.get(cid)
                        st.page_link(
                            "app_pages/report.py",
                            label=md_text(a["external_id"]) if a else cid[:12],
                            query_params={"id": cid},
                            disabled=a is None,
                        )
        if item["patient_id"]:
            st.page_link(
                "app_pages/patients.py",
                label=f"Open patient {md_text(item['patient_id'])}",
                icon=":material/person:",
                query_params={"patient": item["patient_id"]},
            )
        with st.expander("Webhook deliveries"):
            rows = data.alert_deliveries(aid)
            if rows:
                st.dataframe(rows, hide_index=True, key=f"alerts_deliveries_{aid}")
                st.caption(
                    "Each attempt: the HTTP status or the error's class; 'retry' waits and "
                    "tries again, 'failed' gave up, 'dropped' never left (the queue was full)."
                )
            else:
                st.caption("No delivery: the rule names no webhook, or none is configured.")


items = data.alerts(VIEWS[show], limit=PAGE_SIZE)
if picked is not None:
    one = data.alert(int(picked))
    if one is None:
        st.warning(f"There is no alert {int(picked)}.")
    else:
        st.subheader(f"Alert {one['id']}")
        _show(one)
        items = [i for i in items if i["id"] != one["id"]]
        st.subheader("Other alerts")
if not items:
    st.info(
        "No alerts here. Alerts come from the rules of GROUNDWATCH_ALERTS_FILE, evaluated "
        "on every stored answer and by `groundwatch alerts check`."
    )
for item in items:
    _show(item)
if len(items) >= PAGE_SIZE:
    st.caption(f"Showing the first {PAGE_SIZE}; resolve alerts to see older ones.")
