"""Groundwatch dashboard: the router (login, navigation and the shared sidebar)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import streamlit as st

from core.incidents import log_unhandled
from dashboard import auth, data
from dashboard.sidebar import render_sidebar

PAGES = Path(__file__).parent / "app_pages"


def _pages() -> dict[str, Any]:
    """Every page by its URL path (``/overview``, ``/review``, ...): each opens by that path,
    so a link to any page with its query string reproduces the view."""
    return {
        "overview": st.Page(
            PAGES / "overview.py",
            title="Overview",
            icon=":material/monitoring:",
            url_path="overview",
        ),
        "review": st.Page(
            PAGES / "review.py", title="Review queue", icon=":material/rule:", url_path="review"
        ),
        "report": st.Page(
            PAGES / "report.py",
            title="Query report",
            icon=":material/description:",
            url_path="report",
        ),
        "upload": st.Page(
            PAGES / "upload.py", title="Upload", icon=":material/upload_file:", url_path="upload"
        ),
        "calibration": st.Page(
            PAGES / "calibration.py",
            title="Calibration",
            icon=":material/tune:",
            url_path="calibration",
        ),
        "patients": st.Page(
            PAGES / "patients.py", title="Patients", icon=":material/person:", url_path="patients"
        ),
        "alerts": st.Page(
            PAGES / "alerts.py",
            title="Alerts",
            icon=":material/notifications_active:",
            url_path="alerts",
        ),
        "rescore": st.Page(
            PAGES / "rescore.py",
            title="Re-scoring",
            icon=":material/published_with_changes:",
            url_path="rescore",
        ),
        "admin": st.Page(
            PAGES / "admin.py",
            title="Admin",
            icon=":material/admin_panel_settings:",
            url_path="admin",
        ),
    }


def _home_page(target: Any) -> Any:
    """The root URL, hidden from the menu: it opens ``target`` (the first page the user may
    open) with the same query string. Streamlit serves its default page at ``/`` only, so the
    overview is not the default page: it keeps its own address, ``/overview``."""

    def home() -> None:
        st.switch_page(target, query_params=st.query_params.to_dict())

    return st.Page(home, title="Groundwatch", url_path="home", default=True, visibility="hidden")


def main() -> None:
    # Groundwatch's own log lines (counts, hashes, never record text) at the configured level
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for name in ("core", "dashboard", "groundwatch"):
        logging.getLogger(name).setLevel(data.settings().log_level)
    user = auth.require_login()
    if user is None:
        st.stop()  # only the login form is drawn
    allowed = [p for name, p in _pages().items() if auth.can_open(user, name)]
    navigation = st.navigation([_home_page(allowed[0]), *allowed])
    if navigation.url_path == "":
        navigation.run()  # the root URL: switches to the first page, nothing to draw
    render_sidebar()
    auth.render_user_box(user)
    navigation.run()


st.set_page_config(page_title="Groundwatch", page_icon=":material/fact_check:", layout="wide")
try:
    main()
except Exception as exc:  # never the message or traceback: they can quote record text
    code = log_unhandled(exc, surface="dashboard")
    st.error(
        f"Something went wrong ({type(exc).__name__}, incident {code}). Nothing was stored "
        "half-way; the server log has this incident code and where it happened."
    )
