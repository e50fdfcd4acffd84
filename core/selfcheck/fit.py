"""Fitting the combined detector: logistic regression with passage-grouped cross-validation.

Used by ``benchmarks/fit_selfcheck.py`` (writes the shipped weights) and by
``benchmarks/selfcheck_wikibio.py`` (scores every passage with a model fitted on the other
folds only). scikit-learn does the fitting; the result is a plain :class:`LogisticModel`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.selfcheck.weights import LogisticModel


def fit_logistic(
    rows: Sequence[dict[str, float]],
    labels: Sequence[bool],
    *,
    features: Sequence[str],
    C: float = 1.0,
) -> LogisticModel:
    """Standardise ``features`` and fit an L2 logistic regression (label True = hallucinated)."""
    from sklearn.linear_model import LogisticRegression

    X = np.array([[row[f] for f in features] for row in rows], dtype=np.float64)
    y = np.asarray(labels, dtype=bool)
    if len(set(y.tolist())) < 2:
        raise ValueError("labels: need both classes to fit")
    mean = np.nanmean(X, axis=0)
    X = np.where(np.isfinite(X), X, mean)
    scale = X.std(axis=0)
    scale[scale == 0] = 1.0
    clf = LogisticRegression(C=C, max_iter=5000)
    clf.fit((X - mean) / scale, y)
    return LogisticModel(
        features=tuple(features),
        mean=tuple(round(float(v), 8) for v in mean),
        scale=tuple(round(float(v), 8) for v in scale),
        coef=tuple(round(float(v), 8) for v in clf.coef_[0]),
        intercept=round(float(clf.intercept_[0]), 8),
    )


C_GRID: tuple[float, ...] = (0.02, 0.05, 0.1, 0.3)


def select_C(
    rows: Sequence[dict[str, float]],
    labels: Sequence[bool],
    groups: Sequence[int],
    *,
    features: Sequence[str],
    grid: Sequence[float] = C_GRID,
    n_splits: int = 4,
) -> float:
    """The regularisation strength with the best grouped-CV average precision on these rows."""
    from sklearn.metrics import average_precision_score

    y = np.asarray(labels, dtype=bool)
    best, best_c = -1.0, grid[0]
    for c in grid:
        oof = cross_validated_scores(
            rows, labels, groups, features=features, C=c, n_splits=n_splits
        )
        score = float(average_precision_score(y, oof))
        if score > best:
            best, best_c = score, c
    return best_c


def cross_validated_scores(
    rows: Sequence[dict[str, float]],
    labels: Sequence[bool],
    groups: Sequence[int],
    *,
    features: Sequence[str],
    C: float | None = None,
    n_splits: int = 5,
) -> np.ndarray:
    """Out-of-fold probabilities: each row is scored by a model fitted without its group.

    With ``C=None`` the regularisation is chosen inside each training fold (nested CV), so
    no choice ever sees the rows it is evaluated on.
    """
    from sklearn.model_selection import GroupKFold

    y = np.asarray(labels, dtype=bool)
    g = np.asarray(groups)
    out = np.zeros(len(rows), dtype=np.float64)
    splitter = GroupKFold(n_splits=n_splits)
    for train, test in splitter.split(np.zeros(len(rows)), y, g):
        train_rows = [rows[i] for i in train]
        c = C
        if c is None:
            c = select_C(train_rows, y[train], g[train], features=features)
        model = fit_logistic(train_rows, y[train], features=features, C=c)
        out[test] = [model.probability(rows[i]) for i in test]
    return out


def fit_calibration(scores: Sequence[float], labels: Sequence[bool]) -> tuple[float, float]:
    """(slope, intercept) of a one-feature logistic map from raw score to P(hallucinated)."""
    from sklearn.linear_model import LogisticRegression

    x = np.asarray(scores, dtype=np.float64).reshape(-1, 1)
    clf = LogisticRegression(C=1e4, max_iter=5000).fit(x, np.asarray(labels, dtype=bool))
    return round(float(clf.coef_[0][0]), 8), round(float(clf.intercept_[0]), 8)
