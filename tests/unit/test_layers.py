"""The layer contracts of ``make lint`` cover every module of ``core``: a new module cannot
escape them by not being listed."""

from __future__ import annotations

import pkgutil
import tomllib
from pathlib import Path

import core

ROOT = Path(__file__).resolve().parents[2]


def contracts() -> dict[str, dict[str, object]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    return {c["name"]: c for c in config["tool"]["importlinter"]["contracts"]}


def test_every_core_module_but_the_command_line_is_kept_from_the_front_doors() -> None:
    (contract,) = [c for name, c in contracts().items() if name.startswith("core (but")]
    listed = set(contract["source_modules"])  # type: ignore[arg-type]
    modules = {f"core.{m.name}" for m in pkgutil.iter_modules(core.__path__)}
    assert modules - listed == {"core.cli"}, "list the new module in pyproject.toml"
    assert listed <= modules, "a listed module no longer exists"
    assert {"core.cli", "dashboard", "streamlit", "typer"} <= set(
        contract["forbidden_modules"]  # type: ignore[arg-type]
    )


def test_every_core_module_but_the_api_and_the_command_line_is_kept_from_the_api() -> None:
    (contract,) = [c for name, c in contracts().items() if name.startswith("no core module")]
    listed = set(contract["source_modules"])  # type: ignore[arg-type]
    modules = {f"core.{m.name}" for m in pkgutil.iter_modules(core.__path__)}
    assert modules - listed == {"core.api", "core.cli"}, "list the new module in pyproject.toml"
    assert {"core.api", "fastapi"} <= set(contract["forbidden_modules"])  # type: ignore[arg-type]


def test_detectors_are_kept_from_storage_and_the_pipeline() -> None:
    (contract,) = [c for name, c in contracts().items() if name.startswith("detectors")]
    assert {"core.storage", "core.pipeline"} <= set(contract["forbidden_modules"])  # type: ignore[arg-type]
    for module in contract["source_modules"]:  # type: ignore[union-attr]
        assert (ROOT / Path(*str(module).split("."))).with_suffix(".py").exists() or (
            ROOT / Path(*str(module).split("."))
        ).is_dir(), module
