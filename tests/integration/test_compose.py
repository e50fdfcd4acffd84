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


def test_compose_wires_the_services_to_postgres_after_the_migration() -> None:
    spec = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = spec["services"]
    assert set(services) == {"postgres", "migrate", "api", "dashboard", "worker"}
    assert "healthcheck" in services["postgres"]
    assert "pgdata" in spec["volumes"]
    migrate = services["migrate"]
    assert migrate["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert migrate["command"] == ["groundwatch", "init-db"]
    for name in ("api", "dashboard", "worker"):
        service = services[name]
        assert service["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
        assert service["environment"]["GROUNDWATCH_DATABASE_URL"].startswith("postgresql://")
    assert "8501:8501" in services["dashboard"]["ports"]
    assert "8000:8000" in services["api"]["ports"]
    worker = services["worker"]
    # --scale worker=N needs a service without a fixed name or host port
    assert worker["command"] == ["groundwatch", "worker"]
    assert "container_name" not in worker
    assert "ports" not in worker
