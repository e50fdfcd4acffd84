"""docker-compose.yml is valid (no Docker engine runs here: the file is checked, not run)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_compose_file_is_valid() -> None:
    binary = shutil.which("docker-compose")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("docker-compose is required in CI (installed by .ci/run)")
        pytest.skip("docker-compose binary not installed")
    done = subprocess.run(
        [binary, "-f", str(ROOT / "docker-compose.yml"), "config", "-q"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr


def test_compose_wires_app_to_postgres_with_healthcheck() -> None:
    spec = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    db, app = spec["services"]["db"], spec["services"]["app"]
    assert "healthcheck" in db
    assert "pgdata" in spec["volumes"]
    assert app["depends_on"]["db"]["condition"] == "service_healthy"
    assert app["environment"]["GROUNDWATCH_DATABASE_URL"].startswith("postgresql://")
    assert "8501:8501" in app["ports"]
