"""Groundwatch dashboard (Streamlit)."""
