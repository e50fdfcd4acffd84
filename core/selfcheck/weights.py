"""The fitted parameters shipped with the package: combined-detector weights and calibrations.

``core/data/selfcheck_combined.json`` is written by ``benchmarks/fit_selfcheck.py``: a logistic
regression over standardised features (see :mod:`core.selfcheck.features`) fitted with
passage-grouped cross-validation, and one-feature logistic calibrations that map raw detector
scores to a risk in [0, 1].
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

WEIGHTS_PATH = Path(__file__).resolve().parent.parent / "data" / "selfcheck_combined.json"


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


@dataclass(frozen=True, slots=True)
class LogisticModel:
    """p = sigmoid(intercept + sum(coef * (x - mean) / scale))."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float

    def decision(self, row: dict[str, float]) -> float:
        """The linear score (log-odds)."""
        total = self.intercept
        for name, m, s, c in zip(self.features, self.mean, self.scale, self.coef, strict=True):
            value = row[name]
            if not math.isfinite(value):
                value = m
            total += c * (value - m) / (s or 1.0)
        return total

    def probability(self, row: dict[str, float]) -> float:
        """sigmoid of :meth:`decision`, in [0, 1]."""
        return _sigmoid(self.decision(row))

    def to_dict(self) -> dict[str, Any]:
        return {
            "features": list(self.features),
            "mean": list(self.mean),
            "scale": list(self.scale),
            "coef": list(self.coef),
            "intercept": self.intercept,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LogisticModel:
        features = tuple(str(f) for f in data["features"])
        model = cls(
            features=features,
            mean=tuple(float(v) for v in data["mean"]),
            scale=tuple(float(v) for v in data["scale"]),
            coef=tuple(float(v) for v in data["coef"]),
            intercept=float(data["intercept"]),
        )
        if not (len(model.mean) == len(model.scale) == len(model.coef) == len(features)):
            raise ValueError("weights file: features, mean, scale and coef differ in length")
        return model


def _identity(score: float) -> float:
    return min(1.0, max(0.0, score))


@dataclass(frozen=True, slots=True)
class SelfCheckWeights:
    """Parsed weights file: combined models by feature set, calibrations by method."""

    models: dict[str, LogisticModel]
    calibrations: dict[str, tuple[float, float]]
    meta: dict[str, Any]

    def model(self, name: str) -> LogisticModel:
        """A combined model (``with_embedding`` or ``no_embedding``)."""
        try:
            return self.models[name]
        except KeyError:
            raise KeyError(f"weights file has no combined model named {name!r}") from None

    def calibration(self, name: str) -> Callable[[float], float]:
        """Map a raw passage score of detector ``name`` to a risk in [0, 1].

        Detectors without a fitted calibration already score in [0, 1] and map to themselves.
        """
        if name not in self.calibrations:
            return _identity
        slope, intercept = self.calibrations[name]
        return lambda score: _sigmoid(slope * score + intercept)


def parse_weights(data: dict[str, Any]) -> SelfCheckWeights:
    """Validate and parse the JSON document of :data:`WEIGHTS_PATH`."""
    models = {str(k): LogisticModel.from_dict(v) for k, v in data.get("models", {}).items()}
    calibrations = {
        str(k): (float(v["slope"]), float(v["intercept"]))
        for k, v in data.get("calibration", {}).items()
    }
    return SelfCheckWeights(models=models, calibrations=calibrations, meta=data.get("meta", {}))


@lru_cache(maxsize=4)
def load_weights(path: str | None = None) -> SelfCheckWeights:
    """The shipped weights (or those at ``path``); empty when the file does not exist yet."""
    file = Path(path) if path else WEIGHTS_PATH
    if not file.exists():
        return SelfCheckWeights(models={}, calibrations={}, meta={})
    return parse_weights(json.loads(file.read_text(encoding="utf-8")))


def feature_matrix(rows: Sequence[dict[str, float]], features: Sequence[str]) -> list[list[float]]:
    """Rows of feature values in the order of ``features``."""
    return [[row[f] for f in features] for row in rows]
