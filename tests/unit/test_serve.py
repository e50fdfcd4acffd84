"""The dashboard's server process imports the pages' libraries before Streamlit starts."""

from __future__ import annotations

import subprocess
import sys

from dashboard.serve import PRELOAD


def test_preload_imports_every_listed_module_and_nothing_touches_a_database() -> None:
    code = (
        "import sys\n"
        "from dashboard.serve import PRELOAD, preload\n"
        "preload()\n"
        "print(sorted(set(PRELOAD) - set(sys.modules)))\n"
        "print('sqlalchemy.engine.base' in sys.modules, "
        "any(t.name != 'MainThread' for t in __import__('threading').enumerate()))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    out = done.stdout.splitlines()
    assert out[0] == "[]"  # every module of PRELOAD is loaded
    assert "No runtime found" not in done.stderr  # the caches' import-time notices held back
    # SQLAlchemy is imported (the storage layer), but no engine, pool or thread is started
    assert out[1].split()[1] == "False"


def test_serve_module_hands_its_arguments_to_streamlit() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "dashboard.serve", "run", "--help"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0
    assert "--server.port" in done.stdout  # Streamlit's own `run` options
    assert "dashboard.data" in PRELOAD
