"""The HTTP API (FastAPI): thin routes over the record validation, the pipeline and the
repository, served by ``groundwatch api``. Nothing below it imports it."""

from __future__ import annotations

from core.api.app import create_app

__all__ = ["create_app"]
