"""Confidence intervals for the dashboard's shares and means, from counts and sums.

The dashboard aggregates in SQL (counts, sums, sums of squares); these functions turn such
aggregates into 95 % intervals without the rows: Wilson's score interval for a share (it stays
inside [0, 1] and behaves for small counts and shares near 0 or 1), and Student's t interval
for a mean. Pure functions, no storage, no Streamlit.
"""

from __future__ import annotations

import math

from scipy import stats


def wilson_interval(
    successes: int, n: int, *, confidence: float = 0.95
) -> tuple[float, float] | None:
    """Wilson score interval of a share ``successes / n``.

    Args:
        successes: how many of the ``n`` count (e.g. flagged answers); 0 <= successes <= n.
        n: how many there are.
        confidence: the interval's coverage, in (0, 1).

    Returns:
        ``(low, high)`` within [0, 1], or None when ``n`` is 0.

    Raises:
        ValueError: ``successes`` outside [0, n] or ``confidence`` outside (0, 1).
    """
    if not 0 < confidence < 1:
        raise ValueError("confidence must be in (0, 1)")
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError("successes must be in [0, n]")
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def mean_interval(
    n: int, total: float, total_squares: float, *, confidence: float = 0.95
) -> tuple[float, float] | None:
    """Student's t interval of a mean, from the count, the sum and the sum of squares.

    Args:
        n: number of values.
        total: their sum.
        total_squares: the sum of their squares.
        confidence: the interval's coverage, in (0, 1).

    Returns:
        ``(low, high)``, or None below two values (no spread to estimate). A spread of zero
        gives the mean itself at both ends.

    Raises:
        ValueError: ``confidence`` outside (0, 1).
    """
    if not 0 < confidence < 1:
        raise ValueError("confidence must be in (0, 1)")
    if n < 2:
        return None
    mean = total / n
    # sample variance; rounding can push a zero spread slightly below 0
    variance = max(0.0, (total_squares - n * mean * mean) / (n - 1))
    t = float(stats.t.ppf(0.5 + confidence / 2, df=n - 1))
    half = t * math.sqrt(variance / n)
    return mean - half, mean + half


__all__ = ["mean_interval", "wilson_interval"]
