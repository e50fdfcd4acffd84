"""Confidence aggregation, calibration metrics (vs scikit-learn and plain numpy), calibrators."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss as sk_brier
from sklearn.metrics import roc_auc_score as sk_auc

from core.calibration import (
    ConfidenceScorer,
    ConfidenceWeights,
    IsotonicCalibrator,
    PlattCalibrator,
    augrc_loss,
    aurc_loss,
    brier_score_loss,
    calibration_report,
    confidence_accuracy_correlation,
    expected_calibration_error,
    fit_calibrator,
    maximum_calibration_error,
    reliability_curve,
    risk_coverage_curve,
    roc_auc_score,
    success_metrics,
)


@pytest.fixture
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    p = rng.random(5000) ** 1.5
    y = (rng.random(5000) < np.clip(p * 1.2, 0, 1)).astype(int)
    return y, p


def naive_ece(y: np.ndarray, p: np.ndarray, edges: np.ndarray, *, mce: bool = False) -> float:
    """Loop over bins (lo, hi], the first closed at 0: an independent computation."""
    gaps, weights = [], []
    for i in range(len(edges) - 1):
        lo, hi = edges[i], edges[i + 1]
        mask = (p <= hi) & (p > lo) if i > 0 else (p <= hi) & (p >= lo)
        if i == len(edges) - 2:
            mask = (p > lo) & (p <= 1.0) if i > 0 else np.ones_like(p, bool)
        if mask.any():
            gaps.append(abs(p[mask].mean() - y[mask].mean()))
            weights.append(mask.mean())
    return max(gaps) if mce else float(np.dot(gaps, weights))


def test_ece_matches_independent_loop(data: tuple[np.ndarray, np.ndarray]) -> None:
    y, p = data
    edges = np.linspace(0, 1, 11)
    assert expected_calibration_error(y, p) == pytest.approx(naive_ece(y, p, edges), abs=1e-12)
    assert maximum_calibration_error(y, p) == pytest.approx(
        naive_ece(y, p, edges, mce=True), abs=1e-12
    )
    q_edges = np.percentile(p, np.linspace(0, 100, 11))
    assert expected_calibration_error(y, p, strategy="quantile") == pytest.approx(
        naive_ece(y, p, q_edges), abs=1e-12
    )


def test_ece_matches_sklearn_calibration_curve(data: tuple[np.ndarray, np.ndarray]) -> None:
    y, p = data
    for strategy in ("uniform", "quantile"):
        prob_true, prob_pred = calibration_curve(y, p, n_bins=10, strategy=strategy)
        curve = reliability_curve(y, p, n_bins=10, strategy=strategy)
        np.testing.assert_allclose(curve.fraction_positive, prob_true)
        np.testing.assert_allclose(curve.mean_predicted, prob_pred)
        counts = np.asarray(curve.counts)
        ece = float(np.sum(counts / counts.sum() * np.abs(prob_true - prob_pred)))
        assert expected_calibration_error(y, p, strategy=strategy) == pytest.approx(ece)


def test_perfectly_calibrated_bins_have_zero_ece() -> None:
    p = np.repeat([0.25, 0.75], 4)
    y = np.array([1, 0, 0, 0, 1, 1, 1, 0])
    assert expected_calibration_error(y, p) == pytest.approx(0.0)
    assert maximum_calibration_error(y, p) == pytest.approx(0.0)


def test_brier_and_auroc_match_sklearn(data: tuple[np.ndarray, np.ndarray]) -> None:
    y, p = data
    assert brier_score_loss(y, p) == pytest.approx(sk_brier(y, p))
    assert roc_auc_score(y, p) == pytest.approx(sk_auc(y, p))
    rounded = np.round(p, 1)  # many ties
    assert roc_auc_score(y, rounded) == pytest.approx(sk_auc(y, rounded))


def test_auroc_single_class_is_an_error() -> None:
    with pytest.raises(ValueError, match="single class"):
        roc_auc_score([1, 1, 1], [0.2, 0.5, 0.9])


def naive_rc(correct: np.ndarray, conf: np.ndarray) -> tuple[float, float]:
    order = np.argsort(-conf, kind="stable")
    err = 1 - correct[order]
    n = len(err)
    aurc = np.mean([err[:k].sum() / k for k in range(1, n + 1)])
    augrc = np.mean([err[:k].sum() / n for k in range(1, n + 1)])
    return float(aurc), float(augrc)


def test_aurc_augrc_match_loop_without_ties() -> None:
    rng = np.random.default_rng(3)
    conf = rng.random(400)
    correct = (rng.random(400) < conf).astype(int)
    aurc, augrc = naive_rc(correct, conf)
    assert aurc_loss(correct, conf) == pytest.approx(aurc)
    assert augrc_loss(correct, conf) == pytest.approx(augrc)


def test_aurc_ties_average_over_orderings() -> None:
    conf = np.array([0.9, 0.5, 0.5, 0.1])
    correct = np.array([1, 1, 0, 0])
    a1, g1 = naive_rc(correct, conf)
    a2, g2 = naive_rc(np.array([1, 0, 1, 0]), conf)
    assert aurc_loss(correct, conf) == pytest.approx((a1 + a2) / 2)
    assert augrc_loss(correct, conf) == pytest.approx((g1 + g2) / 2)


def test_risk_coverage_edges() -> None:
    cov, risk, grisk = risk_coverage_curve([1, 1, 0, 0], [0.9, 0.8, 0.2, 0.1])
    np.testing.assert_allclose(cov, [0.25, 0.5, 0.75, 1.0])
    np.testing.assert_allclose(risk, [0, 0, 1 / 3, 0.5])
    np.testing.assert_allclose(grisk, [0, 0, 0.25, 0.5])
    # a perfect ranking beats a reversed one
    assert aurc_loss([1, 1, 0, 0], [0.9, 0.8, 0.2, 0.1]) < aurc_loss(
        [1, 1, 0, 0], [0.1, 0.2, 0.8, 0.9]
    )


def test_calibration_report_agrees_with_single_metrics(data: tuple[np.ndarray, np.ndarray]) -> None:
    y, p = data
    r = calibration_report(y, p)
    assert r.expected_calibration_error == pytest.approx(expected_calibration_error(y, p))
    assert r.expected_calibration_error_quantile == pytest.approx(
        expected_calibration_error(y, p, strategy="quantile")
    )
    assert r.maximum_calibration_error == pytest.approx(maximum_calibration_error(y, p))
    assert r.brier_score_loss == pytest.approx(sk_brier(y, p))
    assert r.roc_auc_score == pytest.approx(sk_auc(y, p))
    rounded = np.round(p, 2)
    r2 = calibration_report(y, rounded)
    assert r2.aurc_loss == pytest.approx(aurc_loss(y, rounded))
    assert r2.augrc_loss == pytest.approx(augrc_loss(y, rounded))
    assert calibration_report([1, 1], [0.2, 0.4]).roc_auc_score is None


@pytest.mark.parametrize(
    ("y", "p", "match"),
    [
        ([0, 1], [0.2], "differ in length"),
        ([0, 2], [0.2, 0.3], "binary"),
        ([0, 1], [0.2, 1.3], r"\[0, 1\]"),
        ([0, 1], [0.2, float("nan")], r"\[0, 1\]"),
        ([], [], "empty"),
    ],
)
def test_bad_input_is_named(y: list[float], p: list[float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        expected_calibration_error(y, p)


def test_bad_strategy_and_bins() -> None:
    with pytest.raises(ValueError, match="strategy"):
        expected_calibration_error([0, 1], [0.1, 0.9], strategy="equal")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_bins"):
        expected_calibration_error([0, 1], [0.1, 0.9], n_bins=0)


def test_platt_and_isotonic_improve_calibration() -> None:
    rng = np.random.default_rng(11)
    true_p = rng.random(4000)
    y = (rng.random(4000) < true_p).astype(int)
    raw = true_p**3  # systematically under-confident scores
    before = expected_calibration_error(y, raw)
    for method in ("platt", "isotonic"):
        cal = fit_calibrator(raw[:2000], y[:2000], method=method)
        after = expected_calibration_error(y[2000:], cal.predict(raw[2000:]))
        assert after < before / 2, (method, before, after)
        assert cal.to_dict()["method"] == method
    platt = PlattCalibrator().fit(raw, y)
    assert platt.a is not None
    assert platt.a < 0
    iso = IsotonicCalibrator().fit(raw, y)
    out = iso.predict(np.sort(raw))
    assert np.all(np.diff(out) >= -1e-12)


def test_calibrators_reject_bad_fit_data() -> None:
    with pytest.raises(ValueError, match="both labels"):
        PlattCalibrator().fit([0.1, 0.2], [1, 1])
    with pytest.raises(RuntimeError, match="before fit"):
        PlattCalibrator().predict([0.5])
    with pytest.raises(ValueError, match="method"):
        fit_calibrator([0.1, 0.9], [0, 1], method="beta")  # type: ignore[arg-type]


def test_confidence_components_follow_the_seed() -> None:
    scorer = ConfidenceScorer()
    assert scorer.extraction_confidence(0.0) == pytest.approx(1.0)
    assert scorer.extraction_confidence(0.3) == pytest.approx(0.85)
    s = scorer.score(similarity=0.8, source_type="message", temperature=0.0, consistency=0.9)
    assert s.source_confidence == pytest.approx(0.7)
    expected = 0.3 * 0.8 + 0.25 * 0.7 + 0.25 * 1.0 + 0.2 * 0.9
    assert s.aggregate_confidence == pytest.approx(expected)
    assert s.uncertainty_level == "low"
    assert scorer.score(source_type="note").source_confidence == 1.0
    assert scorer.score(source_type="document").source_confidence == 0.9
    assert scorer.score(source_type="transcript").source_confidence == 0.8


def test_missing_component_renormalises() -> None:
    s = ConfidenceScorer().score(source_type="note", temperature=0.0)
    assert s.aggregate_confidence == pytest.approx(1.0)
    assert s.retrieval_confidence is None
    assert "retrieval" in s.uncertainty_explanation


def test_custom_weights() -> None:
    scorer = ConfidenceScorer(weights=ConfidenceWeights(1.0, 0.0, 0.0, 0.0))
    s = scorer.score(similarity=0.42, source_type="message", temperature=1.0, consistency=0.1)
    assert s.aggregate_confidence == pytest.approx(0.42)
    with pytest.raises(ValueError, match="weights"):
        ConfidenceWeights(0, 0, 0, 0)


@pytest.mark.parametrize(
    ("value", "level", "advice"),
    [
        (0.95, "very_low", "High confidence"),
        (0.85, "low", "High confidence"),
        (0.7, "medium", "Verify source"),
        (0.5, "high", "Consult provider"),
        (0.2, "very_high", "Consult provider"),
    ],
)
def test_uncertainty_levels_and_recommendations(value: float, level: str, advice: str) -> None:
    scorer = ConfidenceScorer()
    agg = scorer.aggregate([scorer.score(similarity=value)])
    assert agg.uncertainty_level == level
    assert agg.recommendation == advice
    assert agg.overall_confidence == pytest.approx(value)


def test_aggregate_mean_and_min() -> None:
    scores = [ConfidenceScorer().score(similarity=v) for v in (0.9, 0.5)]
    assert ConfidenceScorer().aggregate(scores).overall_confidence == pytest.approx(0.7)
    assert ConfidenceScorer(aggregate="min").aggregate(scores).overall_confidence == 0.5
    with pytest.raises(ValueError, match="empty"):
        ConfidenceScorer().aggregate([])


def test_confidence_input_errors() -> None:
    scorer = ConfidenceScorer()
    with pytest.raises(ValueError, match="similarity"):
        scorer.score(similarity=1.5)
    with pytest.raises(ValueError, match="source_type"):
        scorer.score(source_type="email")
    with pytest.raises(ValueError, match="temperature"):
        scorer.score(temperature=-1)
    with pytest.raises(ValueError, match="no confidence component"):
        scorer.score()


def test_success_metrics_pass_and_fail() -> None:
    rng = np.random.default_rng(5)
    conf = rng.random(2000)
    correct = (rng.random(2000) < conf).astype(int)
    report = success_metrics(
        grounding_scores=[0.9, 0.95, 0.88],
        consistency_scores=[1.0] * 19 + [0.5],
        confidence=conf,
        correct=correct,
        flagged=[0] * 99 + [1],
        reviewed_flags_false_alarm=[0, 0, 0, 1],
    )
    assert report["grounding_score"].passed is True
    assert report["consistency_score"].value == pytest.approx(0.95)
    assert report["confidence_calibration"].passed is True
    assert report["flagged_rate"].value == pytest.approx(0.01)
    assert report["false_positive_rate"].value == pytest.approx(0.25)
    assert report["false_positive_rate"].passed is False
    assert report.all_passed is False
    assert "expected_calibration_error" in report.extra
    assert report.to_dict()["metrics"][0]["name"] == "grounding_score"


def test_success_metrics_skip_missing_data() -> None:
    report = success_metrics(grounding_scores=[0.9])
    assert report["grounding_score"].passed is True
    assert report["flagged_rate"].status == "skipped"
    assert report["flagged_rate"].passed is None
    assert report.all_passed is True
    assert success_metrics().all_passed is False


def test_correlation_methods() -> None:
    conf = np.linspace(0.01, 0.99, 1000)
    correct = (np.arange(1000) % 100 < conf * 100).astype(int)
    assert confidence_accuracy_correlation(correct, conf) > 0.99
    pearson = confidence_accuracy_correlation(correct, conf, method="pearson")
    assert pearson == pytest.approx(np.corrcoef(conf, correct)[0, 1])
    assert np.isnan(confidence_accuracy_correlation([1, 1], [0.5, 0.5]))


def test_no_logging_of_values(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        calibration_report([0, 1, 1], [0.2, 0.7, 0.9])
        ConfidenceScorer().score(similarity=0.5)
    assert caplog.text == ""
