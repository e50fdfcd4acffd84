"""Embedder settings, precision choice and the grounding index's window vectors (no model is
loaded here)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
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


@pytest.mark.parametrize(
    ("amx", "avx512_bf16", "native"),
    [(True, False, True), (False, True, True), (True, True, True), (False, False, False)],
)
def test_native_bf16_means_amx_or_avx512_bf16(
    monkeypatch: pytest.MonkeyPatch, amx: bool, avx512_bf16: bool, native: bool
) -> None:
    import torch

    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: avx512_bf16, raising=False)
    assert embedder.native_bf16() is native


@pytest.mark.parametrize(("native", "chosen"), [(True, "bf16"), (False, "fp32")])
def test_auto_picks_bf16_only_on_a_cpu_with_native_bf16(
    monkeypatch: pytest.MonkeyPatch, native: bool, chosen: str
) -> None:
    monkeypatch.setattr(embedder, "native_bf16", lambda: native)
    assert embedder.resolve_precision("auto") == chosen
    # an explicit choice is kept whatever the CPU
    assert embedder.resolve_precision("fp32") == "fp32"
    assert embedder.resolve_precision("bf16") == "bf16"


def test_unknown_precision_is_refused() -> None:
    with pytest.raises(ValueError, match="auto, bf16, fp32"):
        embedder.resolve_precision("fp16")


class _HashEmbedder:
    """Deterministic pseudo-random unit vectors per text (no model)."""

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in texts:
            seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
            v = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
            rows.append(v / np.linalg.norm(v) if text != "Zero." else np.zeros(384, np.float32))
        return np.stack(rows) if rows else np.zeros((0, 384), np.float32)


@pytest.mark.parametrize("window", [1, 2, 3, 4])
def test_window_vectors_are_exactly_the_per_window_sums(window: int) -> None:
    """The grounding index's window vectors (computed for all windows at once) are, bit for
    bit, each window's normalised sum of its sentence vectors, as computed one by one."""
    from core.grounding import SourceChunk
    from core.grounding.verifier import _SourceIndex

    chunks = [
        SourceChunk("a", "Metformin 500 mg. Zero. He denies chest pain. BP 132/84. Follow up."),
        SourceChunk("b", "Left knee swelling noted on exam."),
        SourceChunk("c", "[doctor] any fever ? [patient] no . [doctor] ok . Zero."),
    ]
    index = _SourceIndex(chunks, window)
    statements = ["He has no chest pain.", "Zero."]
    extra = index.embed(_HashEmbedder(), statements)  # type: ignore[arg-type]
    assert np.array_equal(extra, _HashEmbedder().encode(statements))
    flat = _HashEmbedder().encode(index.sentence_texts())
    offsets = np.cumsum([0, *(len(s) for s in index.sentences)])
    assert index.vectors is not None
    assert index.vectors.shape == (len(index.units), 384)
    for k, unit in enumerate(index.units):
        base = offsets[unit.chunk]
        v = flat[base + unit.first : base + unit.last + 1].sum(axis=0)
        norm = float(np.linalg.norm(v))
        assert np.array_equal(index.vectors[k], v / norm if norm else v)
