"""Admin: the configured users (no password hashes) and the audit trail, with a CSV export."""

from __future__ import annotations

import streamlit as st

from core.auth import AuthConfigError
from dashboard import auth, data, exports

AUDIT_FIELDS = ("at", "actor", "action", "target_type", "target_id", "detail")
ACTIONS = ("view", "review", "export", "upload", "purge", "login", "login_failed", "logout")

user = auth.guard("admin")
st.title("Admin")

st.subheader("Users")
mode = auth.auth_mode()
if mode == "none":
    st.caption(
        "No login is configured: everyone on this machine acts as the local admin. Add users "
        "with `groundwatch users add NAME --role reviewer|analyst|admin` and set "
        "GROUNDWATCH_AUTH_FILE."
    )
else:
    try:
        users = auth.user_store().users()
    except AuthConfigError as exc:
        st.error(f"The users file cannot be read: {exc}")
        users = []
    st.dataframe(
        [{"user": u.username, "role": u.role, "email": u.email or ""} for u in users],
        hide_index=True,
        key="admin_users",
    )
    st.caption("Manage users with `groundwatch users add|remove`; passwords are bcrypt-hashed.")


actor = auth.actor()  # read now: the export runs on click, after this script


def _export_csv(action: str | None) -> str:
    rows = data.audit_events(action, 100_000)
    data.audit(actor=actor, action="export", target_type="audit_event", target_id=action or "all")
    return exports.rows_to_csv(rows, AUDIT_FIELDS)


st.subheader("Audit trail")
c1, c2 = st.columns([2, 1])
picked = c1.selectbox("Action", ["all", *ACTIONS], key="admin_action")
limit = int(c2.number_input("Rows", 10, 10_000, 500, step=100, key="admin_limit"))
chosen = None if picked in (None, "all") else str(picked)
events = data.audit_events(chosen, limit)
st.dataframe(events, hide_index=True, key="admin_events")
st.caption(f"{len(events):,} events, newest first.")
st.download_button(
    "Audit events (CSV)",
    data=lambda: _export_csv(chosen),
    file_name="audit_events.csv",
    mime="text/csv",
    key="admin_export",
    on_click="ignore",
)

st.subheader("Ingestion queue")
queue = data.queue_status()
if queue is None:
    st.caption(
        "This database is SQLite: answers are checked as they arrive. The queue and its "
        "workers (`groundwatch worker`) need PostgreSQL."
    )
else:
    for column, (state, count) in zip(
        st.columns(len(queue["depth"])), queue["depth"].items(), strict=True
    ):
        column.metric(state, f"{count:,}")
    dead = queue["dead"]
    if not dead:
        st.caption("No job in the dead-letter state.")
    else:
        st.dataframe(
            [
                {
                    "job": j["id"],
                    "record": j["record_id"],
                    "attempts": j["attempts"],
                    "error": (j["error"] or {}).get("class"),
                    "message": (j["error"] or {}).get("message"),
                    "sent by": j["submitted_by"],
                    "queued at": j["created_at"],
                }
                for j in dead
            ],
            hide_index=True,
            key="admin_dead_letter",
        )
        pick = st.selectbox("Dead-letter job", [j["id"] for j in dead], key="admin_dead_pick")
        if st.button("Retry this job", key="admin_dead_retry"):
            try:
                data.retry_job(user=user, actor=auth.actor(), job_id=int(pick))
            except (PermissionError, ValueError) as exc:
                st.error(str(exc))
            else:
                st.success(f"Job {pick} is queued again for one more try.")
