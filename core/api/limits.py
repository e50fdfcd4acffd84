"""The per-key rate limit of the API: a token bucket per API key, in this process.

Each key may make ``GROUNDWATCH_API_RATE_LIMIT`` requests a minute: its bucket holds that
many tokens, refills at that rate, and a request takes one. An empty bucket answers 429 with
``Retry-After`` (whole seconds until a token is back). The buckets live in the process: with
several API processes behind one address each counts on its own, so the limit there is per
key and process.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable


class RateLimiter:
    """Token buckets keyed by API key id.

    Args:
        per_minute: requests a key may make per minute (also the burst it may make at once);
            0 turns the limit off.
        clock: seconds from a monotonic clock (tests pass their own).
    """

    def __init__(self, per_minute: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        if per_minute < 0:
            raise ValueError("per_minute must be 0 (off) or more")
        self.per_minute = per_minute
        self._clock = clock
        self._buckets: dict[int, tuple[float, float]] = {}  # key id -> (tokens, at)
        self._lock = threading.Lock()

    def take(self, key_id: int) -> float:
        """Take one request's token for ``key_id``: 0 when the request may go on, else the
        seconds until it may (nothing is taken then)."""
        if self.per_minute == 0:
            return 0.0
        rate = self.per_minute / 60.0
        with self._lock:
            now = self._clock()
            tokens, at = self._buckets.get(key_id, (float(self.per_minute), now))
            tokens = min(float(self.per_minute), tokens + (now - at) * rate)
            if tokens >= 1.0:
                self._buckets[key_id] = (tokens - 1.0, now)
                return 0.0
            self._buckets[key_id] = (tokens, now)
            return (1.0 - tokens) / rate


def retry_after(wait_s: float) -> str:
    """The ``Retry-After`` header value for a wait: whole seconds, at least 1."""
    return str(max(1, math.ceil(wait_s)))


__all__ = ["RateLimiter", "retry_after"]
