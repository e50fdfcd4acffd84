"""Groundwatch dashboard: the router (navigation and the shared sidebar)."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from dashboard.sidebar import render_sidebar

PAGES = Path(__file__).parent / "app_pages"

st.set_page_config(page_title="Groundwatch", page_icon=":material/fact_check:", layout="wide")
navigation = st.navigation(
    [
        st.Page(
            PAGES / "overview.py",
            title="Overview",
            icon=":material/monitoring:",
            url_path="overview",
            default=True,
        ),
        st.Page(
            PAGES / "review.py", title="Review queue", icon=":material/rule:", url_path="review"
        ),
        st.Page(
            PAGES / "report.py",
            title="Query report",
            icon=":material/description:",
            url_path="report",
        ),
        st.Page(
            PAGES / "upload.py", title="Upload", icon=":material/upload_file:", url_path="upload"
        ),
        st.Page(
            PAGES / "calibration.py",
            title="Calibration",
            icon=":material/tune:",
            url_path="calibration",
        ),
        st.Page(
            PAGES / "patients.py", title="Patients", icon=":material/person:", url_path="patients"
        ),
    ]
)
render_sidebar()
navigation.run()
