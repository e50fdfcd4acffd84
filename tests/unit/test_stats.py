"""Confidence intervals from counts and sums (core.stats)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from core.stats import mean_interval, wilson_interval


def test_wilson_matches_the_published_formula_and_stays_in_bounds() -> None:
    low, high = wilson_interval(8, 10)  # type: ignore[misc]
    # Wilson score interval for 8/10 at 95 %: 0.490 to 0.943
    assert low == pytest.approx(0.4902, abs=1e-4)
    assert high == pytest.approx(0.9433, abs=1e-4)
    assert wilson_interval(0, 5)[0] == 0.0  # type: ignore[index]
    assert wilson_interval(5, 5)[1] == 1.0  # type: ignore[index]
    assert wilson_interval(0, 0) is None


def test_wilson_narrows_with_more_answers() -> None:
    small = wilson_interval(3, 10)
    large = wilson_interval(300, 1000)
    assert small is not None
    assert large is not None
    assert large[1] - large[0] < small[1] - small[0]


def test_wilson_refuses_impossible_counts() -> None:
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(6, 5)
    with pytest.raises(ValueError, match="confidence"):
        wilson_interval(1, 5, confidence=1.0)


def test_mean_interval_from_sums_equals_the_t_interval_of_the_values() -> None:
    values = np.array([0.91, 0.95, 0.88, 0.97, 0.93, 0.90])
    low, high = mean_interval(len(values), values.sum(), (values**2).sum())  # type: ignore[misc]
    ref = stats.t.interval(0.95, len(values) - 1, loc=values.mean(), scale=stats.sem(values))
    assert (low, high) == pytest.approx(ref)


def test_mean_interval_needs_two_values_and_handles_no_spread() -> None:
    assert mean_interval(1, 0.9, 0.81) is None
    assert mean_interval(0, 0.0, 0.0) is None
    low, high = mean_interval(4, 4 * 0.75, 4 * 0.75**2)  # type: ignore[misc]
    assert low == pytest.approx(0.75)
    assert high == pytest.approx(0.75)
