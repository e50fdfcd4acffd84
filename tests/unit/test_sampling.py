"""The check sample rate: which records are checked during a gradual rollout."""

from __future__ import annotations

from core.pipeline import in_sample


def test_the_same_id_always_gets_the_same_decision() -> None:
    ids = [f"rec-{i}" for i in range(2000)]
    first = [in_sample(i, 0.3) for i in ids]
    assert first == [in_sample(i, 0.3) for i in ids]


def test_the_rate_is_the_share_checked_and_a_higher_rate_keeps_the_lower_ones() -> None:
    ids = [f"rec-{i}" for i in range(20_000)]
    for rate in (0.1, 0.5):
        share = sum(in_sample(i, rate) for i in ids) / len(ids)
        assert abs(share - rate) < 0.02, (rate, share)
    # 10 % -> 50 %: every record checked at 10 % is still checked at 50 %
    assert all(in_sample(i, 0.5) for i in ids if in_sample(i, 0.1))


def test_zero_and_one_are_none_and_all() -> None:
    assert not any(in_sample(f"r{i}", 0.0) for i in range(100))
    assert all(in_sample(f"r{i}", 1.0) for i in range(100))
