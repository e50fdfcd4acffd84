"""Groundwatch core: detectors, pipeline and storage (everything but the UI)."""

__version__ = "0.1.0"
