"""Confidence: the phase 9 aggregate, calibration metrics, calibrators and success metrics.

Confidence components (phase 9 seed), each in [0, 1], higher is better:

* retrieval: the source chunk's similarity to the query;
* source: the artifact-type weight, note 1.0, document 0.9, transcript 0.8, message 0.7
  (a transcript is a verbatim record but spoken and unreviewed, so it sits between a
  document and a message);
* extraction: the generation temperature's inverse, ``1 - 0.5 * temperature`` clipped to
  [0, 1] (temperature 0 -> 1.0, 0.3 -> 0.85);
* consistency: the cross-query consistency score.

The aggregate is their weighted mean, 0.3 / 0.25 / 0.25 / 0.2 by default; a missing component
is left out and the remaining weights renormalised.

Metrics follow scikit-learn: data first, options keyword-only; ``_error`` and ``_loss`` are
lower-is-better, ``_score`` higher-is-better. ``y_prob`` is the predicted probability of the
positive class (label 1). All are vectorised and take about 0.1-0.3 s per million predictions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

SourceType = Literal["note", "document", "message", "transcript"]
UncertaintyLevel = Literal["very_low", "low", "medium", "high", "very_high"]
Recommendation = Literal["High confidence", "Verify source", "Consult provider"]
BinStrategy = Literal["uniform", "quantile"]

DEFAULT_SOURCE_WEIGHTS: dict[str, float] = {
    "note": 1.0,
    "document": 0.9,
    "transcript": 0.8,
    "message": 0.7,
}


# --------------------------------------------------------------------------- confidence


@dataclass(frozen=True, slots=True)
class ConfidenceWeights:
    """Weights of the four components (normalised to sum 1 when used)."""

    retrieval: float = 0.3
    source: float = 0.25
    extraction: float = 0.25
    consistency: float = 0.2

    def __post_init__(self) -> None:
        values = (self.retrieval, self.source, self.extraction, self.consistency)
        if any(v < 0 for v in values) or sum(values) <= 0:
            raise ValueError("confidence weights must be >= 0 and not all zero")


@dataclass(frozen=True, slots=True)
class ConfidenceScore:
    """Confidence of one extraction or statement; every field higher-is-better.

    A component is ``None`` when its input was not available; ``aggregate_confidence`` is
    then the weighted mean of the others.
    """

    retrieval_confidence: float | None
    source_confidence: float | None
    extraction_confidence: float | None
    consistency_confidence: float | None
    aggregate_confidence: float
    uncertainty_level: UncertaintyLevel
    uncertainty_explanation: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class AggregateConfidence:
    """Answer-level confidence (higher is better) with its per-extraction breakdown."""

    overall_confidence: float
    confidence_breakdown: tuple[ConfidenceScore, ...]
    uncertainty_level: UncertaintyLevel
    recommendation: Recommendation
    explanation: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "overall_confidence": self.overall_confidence,
            "confidence_breakdown": [s.to_dict() for s in self.confidence_breakdown],
            "uncertainty_level": self.uncertainty_level,
            "recommendation": self.recommendation,
            "explanation": self.explanation,
        }


def _check_unit(name: str, value: float | None) -> float | None:
    if value is None:
        return None
    v = float(value)
    if not np.isfinite(v) or v < 0.0 or v > 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    return v


class ConfidenceScorer:
    """Phase 9 confidence: four components, a weighted aggregate, uncertainty and advice.

    Args:
        weights: component weights (seed default 0.3 / 0.25 / 0.25 / 0.2).
        source_weights: artifact type -> source confidence.
        temperature_slope: extraction confidence = ``1 - slope * temperature``.
        confidence_threshold: below it the advice is "Consult provider" (settings default 0.6).
        high_confidence: at or above it the advice is "High confidence".
        aggregate: how per-extraction scores combine into the answer's (``mean`` or ``min``).
    """

    def __init__(
        self,
        *,
        weights: ConfidenceWeights | None = None,
        source_weights: dict[str, float] | None = None,
        temperature_slope: float = 0.5,
        confidence_threshold: float = 0.6,
        high_confidence: float = 0.8,
        aggregate: Literal["mean", "min"] = "mean",
    ) -> None:
        if not 0.0 <= confidence_threshold <= high_confidence <= 1.0:
            raise ValueError("need 0 <= confidence_threshold <= high_confidence <= 1")
        self.weights = weights or ConfidenceWeights()
        self.source_weights = dict(
            DEFAULT_SOURCE_WEIGHTS if source_weights is None else source_weights
        )
        for key, w in self.source_weights.items():
            _check_unit(f"source weight {key!r}", w)
        self.temperature_slope = temperature_slope
        self.confidence_threshold = confidence_threshold
        self.high_confidence = high_confidence
        self.aggregate_method = aggregate

    def extraction_confidence(self, temperature: float) -> float:
        """Temperature inverse: 0 -> 1.0, 0.3 -> 0.85 (higher is better)."""
        if temperature < 0 or not np.isfinite(temperature):
            raise ValueError(f"temperature must be >= 0, got {temperature!r}")
        return float(np.clip(1.0 - self.temperature_slope * temperature, 0.0, 1.0))

    def uncertainty(self, confidence: float) -> UncertaintyLevel:
        """Uncertainty level of a confidence: >= 0.9 very_low, >= 0.8 low, >= 0.6 medium,
        >= 0.4 high, else very_high."""
        for bound, level in ((0.9, "very_low"), (0.8, "low"), (0.6, "medium"), (0.4, "high")):
            if confidence >= bound:
                return level  # type: ignore[return-value]
        return "very_high"

    def recommendation(self, confidence: float) -> Recommendation:
        if confidence >= self.high_confidence:
            return "High confidence"
        if confidence >= self.confidence_threshold:
            return "Verify source"
        return "Consult provider"

    def score(
        self,
        *,
        similarity: float | None = None,
        source_type: str | None = None,
        temperature: float | None = None,
        consistency: float | None = None,
    ) -> ConfidenceScore:
        """Confidence of one extraction from its inputs; missing inputs are left out.

        Raises:
            ValueError: an input out of range, an unknown source type, or no input at all.
        """
        retrieval = _check_unit("similarity", similarity)
        source: float | None = None
        if source_type is not None:
            if source_type not in self.source_weights:
                raise ValueError(
                    f"source_type must be one of {sorted(self.source_weights)}, got {source_type!r}"
                )
            source = self.source_weights[source_type]
        extraction = None if temperature is None else self.extraction_confidence(temperature)
        consist = _check_unit("consistency", consistency)
        w = self.weights
        parts = [
            (retrieval, w.retrieval, "retrieval"),
            (source, w.source, "source"),
            (extraction, w.extraction, "extraction"),
            (consist, w.consistency, "consistency"),
        ]
        present = [(v, wt, n) for v, wt, n in parts if v is not None and wt > 0]
        if not present:
            raise ValueError(
                "no confidence component given (similarity, source_type, temperature, consistency)"
            )
        total = sum(wt for _, wt, _ in present)
        agg = round(sum(v * wt for v, wt, _ in present) / total, 6)
        weakest = min(present, key=lambda t: t[0])
        missing = [n for v, _, n in parts if v is None]
        explanation = f"weakest component: {weakest[2]} ({weakest[0]:.2f})"
        if missing:
            explanation += "; not available: " + ", ".join(missing)
        return ConfidenceScore(
            retrieval, source, extraction, consist, agg, self.uncertainty(agg), explanation
        )

    def aggregate(self, scores: Sequence[ConfidenceScore]) -> AggregateConfidence:
        """Answer-level confidence from per-extraction scores.

        Raises:
            ValueError: ``scores`` is empty (there is nothing to be confident about).
        """
        if not scores:
            raise ValueError("cannot aggregate an empty list of confidence scores")
        values = np.array([s.aggregate_confidence for s in scores])
        overall = float(values.min() if self.aggregate_method == "min" else values.mean())
        overall = round(overall, 6)
        low = int((values < self.confidence_threshold).sum())
        explanation = (
            f"{len(scores)} extraction(s), lowest {values.min():.2f}; "
            f"{low} below {self.confidence_threshold:.2f}"
        )
        return AggregateConfidence(
            overall,
            tuple(scores),
            self.uncertainty(overall),
            self.recommendation(overall),
            explanation,
        )


# --------------------------------------------------------------------------- validation


def _binary(
    y_true: ArrayLike, y_prob: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    y = np.asarray(y_true)
    p = np.asarray(y_prob, dtype=np.float64)
    if y.ndim != 1 or p.ndim != 1:
        raise ValueError("y_true and y_prob must be 1-D")
    if y.shape != p.shape:
        raise ValueError(f"y_true and y_prob differ in length: {y.shape[0]} vs {p.shape[0]}")
    if y.size == 0:
        raise ValueError("y_true and y_prob are empty")
    if y.dtype == bool:
        y = y.astype(np.float64)
    y = y.astype(np.float64)
    if not np.all((y == 0) | (y == 1)):
        raise ValueError("y_true must hold binary labels 0/1")
    if not np.all(np.isfinite(p)) or p.min() < 0 or p.max() > 1:
        raise ValueError("y_prob must hold probabilities in [0, 1]")
    return y, p


def _bin_ids(p: NDArray[np.float64], n_bins: int, strategy: BinStrategy) -> NDArray[np.intp]:
    if n_bins < 1:
        raise ValueError(f"n_bins must be >= 1, got {n_bins}")
    if strategy == "uniform":
        edges = np.linspace(0.0, 1.0, n_bins + 1)
    elif strategy == "quantile":
        edges = np.percentile(p, np.linspace(0, 100, n_bins + 1))
    else:
        raise ValueError(f"strategy must be 'uniform' or 'quantile', got {strategy!r}")
    # same rule as sklearn.calibration.calibration_curve: bins are (lo, hi], the first [0, hi]
    return np.searchsorted(edges[1:-1], p)


def _bin_stats(
    y_true: ArrayLike, y_prob: ArrayLike, n_bins: int, strategy: BinStrategy
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    y, p = _binary(y_true, y_prob)
    ids = _bin_ids(p, n_bins, strategy)
    counts = np.bincount(ids, minlength=n_bins).astype(np.float64)
    sum_p = np.bincount(ids, weights=p, minlength=n_bins).astype(np.float64)
    sum_y = np.bincount(ids, weights=y, minlength=n_bins).astype(np.float64)
    return counts, sum_p, sum_y


def expected_calibration_error(
    y_true: ArrayLike, y_prob: ArrayLike, *, n_bins: int = 10, strategy: BinStrategy = "uniform"
) -> float:
    """ECE: bin-size-weighted mean of |mean predicted - observed frequency| (lower is better).

    ``uniform`` bins have equal width on [0, 1]; ``quantile`` bins hold equal numbers of
    predictions (equal mass). Bin edges follow ``sklearn.calibration.calibration_curve``.
    """
    counts, sum_p, sum_y = _bin_stats(y_true, y_prob, n_bins, strategy)
    return float(np.abs(sum_p - sum_y).sum() / counts.sum())


def maximum_calibration_error(
    y_true: ArrayLike, y_prob: ArrayLike, *, n_bins: int = 10, strategy: BinStrategy = "uniform"
) -> float:
    """MCE: the largest |mean predicted - observed frequency| over non-empty bins (lower is
    better)."""
    counts, sum_p, sum_y = _bin_stats(y_true, y_prob, n_bins, strategy)
    nz = counts > 0
    return float(np.max(np.abs(sum_p[nz] - sum_y[nz]) / counts[nz]))


def brier_score_loss(y_true: ArrayLike, y_prob: ArrayLike) -> float:
    """Mean squared difference between probability and label (lower is better; sklearn's)."""
    y, p = _binary(y_true, y_prob)
    return float(np.mean((p - y) ** 2))


def _tie_groups(sorted_values: NDArray[np.float64]) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """Start and end (exclusive) index of each run of equal values in a sorted array."""
    n = sorted_values.size
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
    ends = np.r_[starts[1:], n]
    return starts, ends


def _auroc_sorted(
    y_sorted: NDArray[np.float64], starts: NDArray[np.intp], ends: NDArray[np.intp]
) -> float:
    """Mann-Whitney AUROC from labels sorted by ascending score (ties get mean ranks)."""
    n_pos = y_sorted.sum()
    n_neg = y_sorted.size - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError("AUROC is undefined: y_true holds a single class")
    if starts.size == y_sorted.size:  # no ties: ranks are 1..n
        rank_sum = float(np.dot(y_sorted, np.arange(1, y_sorted.size + 1, dtype=np.float64)))
    else:
        cum = np.r_[0.0, np.cumsum(y_sorted)]
        pos_in_group = cum[ends] - cum[starts]
        mean_rank = (starts + ends + 1) / 2.0  # 1-based ranks starts+1 .. ends
        rank_sum = float((pos_in_group * mean_rank).sum())
    return (rank_sum - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)


def roc_auc_score(y_true: ArrayLike, y_score: ArrayLike) -> float:
    """Area under the ROC curve (higher is better); equals scikit-learn's, ties included.

    ``y_score`` may be any real score (not only a probability).

    Raises:
        ValueError: only one class is present (AUROC is undefined).
    """
    y, s = _labels_scores(y_true, y_score)
    order = np.argsort(s)
    starts, ends = _tie_groups(s[order])
    return _auroc_sorted(y[order], starts, ends)


def _labels_scores(
    y_true: ArrayLike, y_score: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    y = np.asarray(y_true).astype(np.float64)
    s = np.asarray(y_score, dtype=np.float64)
    if y.ndim != 1 or s.shape != y.shape:
        raise ValueError("labels and scores must be 1-D arrays of equal length")
    if y.size == 0:
        raise ValueError("labels and scores are empty")
    if not np.all((y == 0) | (y == 1)):
        raise ValueError("labels must be binary 0/1")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores must be finite")
    return y, s


def _expected_errors_sorted(
    err_desc: NDArray[np.float64], starts: NDArray[np.intp], ends: NDArray[np.intp]
) -> NDArray[np.float64]:
    n = err_desc.size
    if starts.size == n:  # no ties
        no_ties: NDArray[np.float64] = np.cumsum(err_desc)
        return no_ties
    cum = np.r_[0.0, np.cumsum(err_desc)]
    sizes = ends - starts
    rate = np.repeat((cum[ends] - cum[starts]) / sizes, sizes)
    before = np.repeat(cum[starts], sizes)
    within = np.arange(1, n + 1) - np.repeat(starts, sizes)
    result: NDArray[np.float64] = before + within * rate
    return result


def _expected_errors(y_correct: ArrayLike, confidence: ArrayLike) -> NDArray[np.float64]:
    """Expected number of errors among the k most confident, k = 1..N.

    Within a run of tied confidences every ordering is equally likely, so the expected errors
    grow linearly at the run's error rate.
    """
    correct, conf = _labels_scores(y_correct, confidence)
    order = np.argsort(-conf)
    starts, ends = _tie_groups(conf[order])
    return _expected_errors_sorted(1.0 - correct[order], starts, ends)


def risk_coverage_curve(
    y_correct: ArrayLike, confidence: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Coverage k/N, selective risk (errors/k) and generalized risk (errors/N), k = 1..N.

    Predictions are accepted from the most confident down; ``y_correct`` is 1 for a correct
    prediction. Ties are averaged over their orderings.
    """
    errors = _expected_errors(y_correct, confidence)
    n = errors.size
    k = np.arange(1, n + 1, dtype=np.float64)
    return k / n, errors / k, errors / n


def aurc_loss(y_correct: ArrayLike, confidence: ArrayLike) -> float:
    """Area under the risk-coverage curve, AURC = mean selective risk over k (lower is better)."""
    _, risk, _ = risk_coverage_curve(y_correct, confidence)
    return float(risk.mean())


def augrc_loss(y_correct: ArrayLike, confidence: ArrayLike) -> float:
    """Area under the generalized risk-coverage curve, AUGRC (Traub et al. 2024): the mean
    over k of errors-among-accepted / N, i.e. the chance of a silent failure (lower is
    better)."""
    _, _, grisk = risk_coverage_curve(y_correct, confidence)
    return float(grisk.mean())


@dataclass(frozen=True, slots=True)
class ReliabilityCurve:
    """Reliability-diagram data for non-empty bins (ordered by predicted probability)."""

    mean_predicted: tuple[float, ...]
    fraction_positive: tuple[float, ...]
    counts: tuple[int, ...]
    bin_edges: tuple[float, ...]
    strategy: BinStrategy

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def reliability_curve(
    y_true: ArrayLike, y_prob: ArrayLike, *, n_bins: int = 10, strategy: BinStrategy = "uniform"
) -> ReliabilityCurve:
    """Per-bin mean prediction and observed frequency (same bins as the ECE)."""
    counts, sum_p, sum_y = _bin_stats(y_true, y_prob, n_bins, strategy)
    _, p = _binary(y_true, y_prob)
    edges = (
        np.linspace(0.0, 1.0, n_bins + 1)
        if strategy == "uniform"
        else np.percentile(p, np.linspace(0, 100, n_bins + 1))
    )
    nz = counts > 0
    return ReliabilityCurve(
        tuple((sum_p[nz] / counts[nz]).tolist()),
        tuple((sum_y[nz] / counts[nz]).tolist()),
        tuple(int(c) for c in counts[nz]),
        tuple(float(e) for e in edges),
        strategy,
    )


@dataclass(frozen=True, slots=True)
class CalibrationReport:
    """All calibration metrics of one set of predictions (see the single-metric functions)."""

    n: int
    positive_rate: float
    expected_calibration_error: float
    expected_calibration_error_quantile: float
    maximum_calibration_error: float
    brier_score_loss: float
    roc_auc_score: float | None
    aurc_loss: float
    augrc_loss: float
    reliability: ReliabilityCurve

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def calibration_report(
    y_true: ArrayLike, y_prob: ArrayLike, *, n_bins: int = 10
) -> CalibrationReport:
    """Every metric in one pass: one sort, one binning (about 0.3 s per million predictions).

    ``y_prob`` is read as the confidence that ``y_true`` is 1, so AURC/AUGRC treat label 1 as
    "correct" (pass verdicts, not hallucination labels, for a risk-coverage reading).
    ``roc_auc_score`` is ``None`` when only one class is present.
    """
    y, p = _binary(y_true, y_prob)
    ids = _bin_ids(p, n_bins, "uniform")
    counts = np.bincount(ids, minlength=n_bins).astype(np.float64)
    sum_p = np.bincount(ids, weights=p, minlength=n_bins)
    sum_y = np.bincount(ids, weights=y, minlength=n_bins)
    nz = counts > 0
    gap = np.abs(sum_p - sum_y)
    qids = _bin_ids(p, n_bins, "quantile")
    q_gap = np.abs(
        np.bincount(qids, weights=p, minlength=n_bins)
        - np.bincount(qids, weights=y, minlength=n_bins)
    )
    order = np.argsort(p)
    p_sorted, y_sorted = p[order], y[order]
    starts, ends = _tie_groups(p_sorted)
    try:
        auroc: float | None = _auroc_sorted(y_sorted, starts, ends)
    except ValueError:
        auroc = None
    # descending confidence = the ascending order reversed (tie runs reversed too)
    n = p.size
    d_starts, d_ends = (n - ends)[::-1], (n - starts)[::-1]
    errors = _expected_errors_sorted((1.0 - y_sorted)[::-1], d_starts, d_ends)
    k = np.arange(1, n + 1, dtype=np.float64)
    curve = ReliabilityCurve(
        tuple((sum_p[nz] / counts[nz]).tolist()),
        tuple((sum_y[nz] / counts[nz]).tolist()),
        tuple(int(c) for c in counts[nz]),
        tuple(np.linspace(0.0, 1.0, n_bins + 1).tolist()),
        "uniform",
    )
    return CalibrationReport(
        n=int(n),
        positive_rate=float(y.mean()),
        expected_calibration_error=float(gap.sum() / n),
        expected_calibration_error_quantile=float(q_gap.sum() / n),
        maximum_calibration_error=float(np.max(gap[nz] / counts[nz])),
        brier_score_loss=float(np.mean((p - y) ** 2)),
        roc_auc_score=auroc,
        aurc_loss=float((errors / k).mean()),
        augrc_loss=float(errors.mean() / n),
        reliability=curve,
    )


# --------------------------------------------------------------------------- calibrators


class PlattCalibrator:
    """Sigmoid recalibration ``p = 1 / (1 + exp(a * s + b))`` fitted by logistic regression.

    Fit it on (raw score, verdict) pairs, e.g. clinicians' review verdicts (1 = correct).
    """

    def __init__(self) -> None:
        self.a: float | None = None
        self.b: float | None = None

    def fit(self, scores: ArrayLike, labels: ArrayLike) -> PlattCalibrator:
        from sklearn.linear_model import LogisticRegression

        y, s = _labels_scores(labels, scores)
        if np.unique(y).size < 2:
            raise ValueError("calibration needs both labels (0 and 1) among the fit data")
        model = LogisticRegression(C=1e6, max_iter=1000).fit(s.reshape(-1, 1), y)
        self.a = -float(model.coef_[0, 0])
        self.b = -float(model.intercept_[0])
        return self

    def predict(self, scores: ArrayLike) -> NDArray[np.float64]:
        """Calibrated probabilities of label 1."""
        if self.a is None or self.b is None:
            raise RuntimeError("PlattCalibrator.predict called before fit")
        s = np.asarray(scores, dtype=np.float64)
        out: NDArray[np.float64] = 1.0 / (1.0 + np.exp(self.a * s + self.b))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"method": "platt", "a": self.a, "b": self.b}


class IsotonicCalibrator:
    """Monotone (non-decreasing) recalibration, via scikit-learn's IsotonicRegression."""

    def __init__(self) -> None:
        self._model: Any = None

    def fit(self, scores: ArrayLike, labels: ArrayLike) -> IsotonicCalibrator:
        from sklearn.isotonic import IsotonicRegression

        y, s = _labels_scores(labels, scores)
        self._model = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(s, y)
        return self

    def predict(self, scores: ArrayLike) -> NDArray[np.float64]:
        if self._model is None:
            raise RuntimeError("IsotonicCalibrator.predict called before fit")
        out: NDArray[np.float64] = np.asarray(
            self._model.predict(np.asarray(scores, dtype=np.float64)), dtype=np.float64
        )
        return out

    def to_dict(self) -> dict[str, Any]:
        if self._model is None:
            return {"method": "isotonic", "x": None, "y": None}
        return {
            "method": "isotonic",
            "x": self._model.X_thresholds_.tolist(),
            "y": self._model.y_thresholds_.tolist(),
        }


def fit_calibrator(
    scores: ArrayLike, labels: ArrayLike, *, method: Literal["platt", "isotonic"] = "platt"
) -> PlattCalibrator | IsotonicCalibrator:
    """A fitted calibrator of the chosen kind."""
    if method == "platt":
        return PlattCalibrator().fit(scores, labels)
    if method == "isotonic":
        return IsotonicCalibrator().fit(scores, labels)
    raise ValueError(f"method must be 'platt' or 'isotonic', got {method!r}")


# --------------------------------------------------------------------------- success metrics


@dataclass(frozen=True, slots=True)
class SuccessTargets:
    """Phase 9 success targets."""

    grounding: float = 0.85
    consistency: float = 0.90
    calibration_correlation: float = 0.80
    flagged_rate: float = 0.05
    false_positive_rate: float = 0.10


@dataclass(frozen=True, slots=True)
class MetricCheck:
    """One success metric: value, target, direction, and whether it passed.

    ``passed`` is ``None`` (and ``status`` ``skipped``) when there was no data for it.
    """

    name: str
    value: float | None
    target: float
    direction: Literal[">", "<"]
    passed: bool | None
    n: int
    status: Literal["ok", "skipped"]
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class SuccessReport:
    """The phase 9 success metrics; ``all_passed`` ignores skipped metrics."""

    metrics: tuple[MetricCheck, ...]
    all_passed: bool
    extra: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "metrics": [asdict(m) for m in self.metrics],
            "all_passed": self.all_passed,
            "extra": dict(self.extra),
        }

    def __getitem__(self, name: str) -> MetricCheck:
        for m in self.metrics:
            if m.name == name:
                return m
        raise KeyError(name)


def _metric(
    name: str, value: float | None, target: float, direction: Literal[">", "<"], n: int, reason: str
) -> MetricCheck:
    if value is None or not np.isfinite(value):
        return MetricCheck(name, None, target, direction, None, n, "skipped", reason)
    passed = value > target if direction == ">" else value < target
    return MetricCheck(name, float(value), target, direction, bool(passed), n, "ok")


def confidence_accuracy_correlation(
    y_correct: ArrayLike,
    confidence: ArrayLike,
    *,
    method: Literal["binned", "pearson"] = "binned",
    n_bins: int = 10,
) -> float:
    """Correlation between confidence and accuracy (higher is better).

    ``binned``: count-weighted Pearson correlation between each confidence bin's mean
    confidence and its accuracy (what a reliability diagram shows); ``pearson``: the per-item
    (point-biserial) correlation. NaN when undefined (a constant input, fewer than two bins).
    """
    y, p = _binary(y_correct, confidence)
    if method == "pearson":
        if y.std() == 0 or p.std() == 0:
            return float("nan")
        return float(np.corrcoef(p, y)[0, 1])
    counts, sum_p, sum_y = _bin_stats(y, p, n_bins, "uniform")
    nz = counts > 0
    if nz.sum() < 2:
        return float("nan")
    w = counts[nz] / counts[nz].sum()
    x, z = sum_p[nz] / counts[nz], sum_y[nz] / counts[nz]
    xm, zm = (w * x).sum(), (w * z).sum()
    cov = (w * (x - xm) * (z - zm)).sum()
    vx, vz = (w * (x - xm) ** 2).sum(), (w * (z - zm) ** 2).sum()
    if vx == 0 or vz == 0:
        return float("nan")
    return float(cov / np.sqrt(vx * vz))


def success_metrics(
    *,
    grounding_scores: ArrayLike | None = None,
    consistency_scores: ArrayLike | None = None,
    confidence: ArrayLike | None = None,
    correct: ArrayLike | None = None,
    flagged: ArrayLike | None = None,
    reviewed_flags_false_alarm: ArrayLike | None = None,
    consistency_threshold: float = 0.8,
    correlation: Literal["binned", "pearson"] = "binned",
    targets: SuccessTargets | None = None,
) -> SuccessReport:
    """The phase 9 success metrics from plain arrays, each with pass/fail.

    Args:
        grounding_scores: per-answer grounding scores; metric = mean, target > 0.85.
        consistency_scores: per-answer consistency scores; metric = share of answers at or
            above ``consistency_threshold``, target > 0.90.
        confidence, correct: per-item confidence and 0/1 correctness (e.g. review verdicts);
            metric = :func:`confidence_accuracy_correlation`, target > 0.80.
        flagged: per-answer booleans, flagged as high hallucination risk; target rate < 0.05.
        reviewed_flags_false_alarm: per reviewed flag, True when the reviewer called it a
            false alarm; metric = false-positive rate, target < 0.10.
    """
    t = targets or SuccessTargets()
    metrics: list[MetricCheck] = []
    extra: dict[str, float] = {}

    def arr(x: ArrayLike | None) -> NDArray[np.float64] | None:
        return None if x is None else np.asarray(x, dtype=np.float64).ravel()

    g = arr(grounding_scores)
    metrics.append(
        _metric(
            "grounding_score",
            float(g.mean()) if g is not None and g.size else None,
            t.grounding,
            ">",
            0 if g is None else g.size,
            "no grounding scores",
        )
    )
    c = arr(consistency_scores)
    share = float((c >= consistency_threshold).mean()) if c is not None and c.size else None
    metrics.append(
        _metric(
            "consistency_score",
            share,
            t.consistency,
            ">",
            0 if c is None else c.size,
            "no consistency scores",
        )
    )
    corr: float | None = None
    n_corr = 0
    if confidence is not None and correct is not None:
        conf_a, corr_a = arr(confidence), arr(correct)
        assert conf_a is not None
        assert corr_a is not None
        n_corr = conf_a.size
        if n_corr:
            corr = confidence_accuracy_correlation(corr_a, conf_a, method=correlation)
            extra["expected_calibration_error"] = expected_calibration_error(corr_a, conf_a)
    metrics.append(
        _metric(
            "confidence_calibration",
            corr,
            t.calibration_correlation,
            ">",
            n_corr,
            "no (confidence, correctness) pairs or correlation undefined",
        )
    )
    f = arr(flagged)
    metrics.append(
        _metric(
            "flagged_rate",
            float(f.mean()) if f is not None and f.size else None,
            t.flagged_rate,
            "<",
            0 if f is None else f.size,
            "no flags",
        )
    )
    r = arr(reviewed_flags_false_alarm)
    metrics.append(
        _metric(
            "false_positive_rate",
            float(r.mean()) if r is not None and r.size else None,
            t.false_positive_rate,
            "<",
            0 if r is None else r.size,
            "no reviewed flags",
        )
    )
    ran = [m for m in metrics if m.passed is not None]
    return SuccessReport(tuple(metrics), bool(ran) and all(m.passed for m in ran), extra)
