"""Embedder settings and precision choice (no model is loaded here)."""

from __future__ import annotations

import pytest

from core.backends import embedder
from core.config import SettingsError, get_settings, load_settings


def test_precision_and_workers_default_to_auto_and_one_per_core() -> None:
    s = load_settings()
    assert s.embedding_precision == "auto"
    assert s.embedding_workers == 0


def test_precision_and_workers_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROUNDWATCH_EMBEDDING_PRECISION", "fp32")
    monkeypatch.setenv("GROUNDWATCH_EMBEDDING_WORKERS", "1")
    s = get_settings()
    assert (s.embedding_precision, s.embedding_workers) == ("fp32", 1)


@pytest.mark.parametrize(
    ("var", "value", "expected"),
    [
        ("GROUNDWATCH_EMBEDDING_PRECISION", "int8", "'auto', 'bf16' or 'fp32'"),
        ("GROUNDWATCH_EMBEDDING_WORKERS", "-1", "greater than or equal to 0"),
    ],
)
def test_invalid_embedding_settings_name_the_variable(
    monkeypatch: pytest.MonkeyPatch, var: str, value: str, expected: str
) -> None:
    monkeypatch.setenv(var, value)
    with pytest.raises(SettingsError) as info:
        load_settings()
    assert var in str(info.value)
    assert expected in str(info.value)


@pytest.mark.parametrize(("amx", "chosen"), [(True, "bf16"), (False, "fp32")])
def test_auto_picks_bf16_only_on_a_cpu_with_amx(
    monkeypatch: pytest.MonkeyPatch, amx: bool, chosen: str
) -> None:
    monkeypatch.setattr(embedder, "native_bf16", lambda: amx)
    assert embedder.resolve_precision("auto") == chosen
    # an explicit choice is kept whatever the CPU
    assert embedder.resolve_precision("fp32") == "fp32"
    assert embedder.resolve_precision("bf16") == "bf16"


def test_unknown_precision_is_refused() -> None:
    with pytest.raises(ValueError, match="auto, bf16, fp32"):
        embedder.resolve_precision("fp16")
