"""NLI cross-encoder backend (optional): entailment / contradiction / neutral probabilities.

No NLI model ships on PyPI, so this tier is available only when ``GROUNDWATCH_NLI_MODEL``
names a local model; callers report ``unavailable`` otherwise.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

log = logging.getLogger(__name__)


class NLIUnavailableError(RuntimeError):
    """No NLI model is configured, or it could not be loaded."""


@dataclass(frozen=True, slots=True)
class NLIScores:
    """Probabilities per pair; each row of the three arrays sums to 1."""

    entailment: np.ndarray
    contradiction: np.ndarray
    neutral: np.ndarray


def _label_index(id2label: dict[int, str]) -> dict[str, int]:
    index: dict[str, int] = {}
    for i, label in id2label.items():
        name = str(label).lower()
        for key in ("entailment", "contradiction", "neutral"):
            if name.startswith(key[:6]):
                index[key] = int(i)
    return index


class NLIModel:
    """A sentence-transformers ``CrossEncoder`` with three NLI labels.

    Args:
        model: local path (or cached name) of a cross-encoder whose config's ``id2label``
            names entailment, contradiction and neutral; when labels are generic
            (``LABEL_0``...), the common order contradiction/entailment/neutral is assumed.
    """

    def __init__(self, model: str, *, batch_size: int = 32) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from sentence_transformers import CrossEncoder
        except ImportError as exc:  # pragma: no cover
            raise NLIUnavailableError("sentence-transformers is not installed") from exc
        try:
            self._model: Any = CrossEncoder(model, device="cpu")
        except Exception as exc:
            raise NLIUnavailableError(
                f"NLI model could not be loaded ({type(exc).__name__})"
            ) from exc
        config = getattr(self._model, "config", None) or self._model.model.config
        id2label = {int(k): v for k, v in (config.id2label or {}).items()}
        index = _label_index(id2label)
        if len(index) != 3:
            if len(id2label) != 3:
                raise NLIUnavailableError("NLI model must have exactly three labels")
            index = {"contradiction": 0, "entailment": 1, "neutral": 2}
        self._index = index
        self.batch_size = batch_size
        self.name = os.path.basename(os.path.normpath(model))

    def predict(self, pairs: Sequence[tuple[str, str]]) -> NLIScores:
        """Probabilities that each premise (first) entails/contradicts each hypothesis."""
        if not pairs:
            empty = np.zeros(0, dtype=np.float32)
            return NLIScores(empty, empty, empty)
        logits = np.asarray(
            self._model.predict(
                [list(p) for p in pairs],
                batch_size=self.batch_size,
                show_progress_bar=False,
                apply_softmax=False,
                convert_to_numpy=True,
            ),
            dtype=np.float64,
        )
        if logits.ndim == 1:
            logits = logits[None, :]
        logits = logits - logits.max(axis=1, keepdims=True)
        probs = np.exp(logits)
        probs /= probs.sum(axis=1, keepdims=True)
        return NLIScores(
            entailment=probs[:, self._index["entailment"]].astype(np.float32),
            contradiction=probs[:, self._index["contradiction"]].astype(np.float32),
            neutral=probs[:, self._index["neutral"]].astype(np.float32),
        )


@lru_cache(maxsize=2)
def get_nli_model(model: str) -> NLIModel:
    """One shared :class:`NLIModel` per model per process."""
    return NLIModel(model)
