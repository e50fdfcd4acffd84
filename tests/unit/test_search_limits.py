"""Pure parts of search, the API's rate limit and the login lock: the search syntax and its
FTS5 form, the token bucket on a test clock, the growth of the lock."""

from __future__ import annotations

from typing import get_args

import pytest

from core.api.limits import RateLimiter, retry_after
from core.api.read_routes import QueueKind, QueueSeverity
from core.severity import KINDS, SEVERITIES, UNCLASSIFIED
from core.storage.logins import LOCK_BASE_S, MAX_LOCK_S, lock_seconds
from core.storage.search import SearchQueryError, SearchTerms, fts5_query, parse_search


def test_search_syntax_is_read_as_websearch_reads_it() -> None:
    assert parse_search("metformin dose") == SearchTerms((("metformin",), ("dose",)), ())
    assert parse_search('"twice  daily" metformin') == SearchTerms(
        (("twice daily",), ("metformin",)), ()
    )
    assert parse_search("metformin or insulin dose") == SearchTerms(
        (("metformin", "insulin"), ("dose",)), ()
    )
    assert parse_search('knee -left -"right side"') == SearchTerms(
        (("knee",),), ("left", "right side")
    )
    assert parse_search("OR knee") == SearchTerms((("OR",), ("knee",)), ())  # nothing to join
    assert parse_search('knee "unterminated phrase') == SearchTerms(
        (("knee",), ("unterminated phrase",)), ()
    )


def test_every_search_term_is_an_fts5_string_never_syntax() -> None:
    # whatever was typed, each term is a quoted string (its quotes doubled): FTS5 operators,
    # column filters and prefix stars are searched as words
    q = fts5_query(parse_search('NEAR(a b) col:x "say ""hi""" or * -^y'))
    assert q == '(("NEAR(a") AND ("b)") AND ("col:x") AND ("say") AND ("hi")) NOT ("^y")'
    assert fts5_query(parse_search('a"b')) == '("a""b")'
    assert fts5_query(parse_search("a -b -c")) == '(("a")) NOT ("b" OR "c")'
    assert fts5_query(parse_search("a or b c")) == '("a" OR "b") AND ("c")'


@pytest.mark.parametrize("q", ["-metformin", "- -", "?!", '""'])
def test_a_search_with_nothing_to_find_is_refused(q: str) -> None:
    with pytest.raises(SearchQueryError, match="at least one word"):
        parse_search(q)


def test_a_search_too_long_or_with_too_many_terms_is_refused() -> None:
    with pytest.raises(SearchQueryError, match="characters"):
        parse_search("a" * 501)
    with pytest.raises(SearchQueryError, match="words or phrases"):
        parse_search(" ".join(f"w{i}" for i in range(33)))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_token_bucket_allows_a_minutes_worth_then_refills_per_key() -> None:
    clock = Clock()
    limiter = RateLimiter(6, clock=clock)  # one token every 10 s
    assert [limiter.take(1) for _ in range(6)] == [0.0] * 6
    assert limiter.take(1) == pytest.approx(10.0)
    assert limiter.take(2) == 0.0  # another key has its own bucket
    clock.now += 4.0
    assert limiter.take(1) == pytest.approx(6.0)  # a refused request takes nothing
    clock.now += 6.0
    assert limiter.take(1) == 0.0
    assert limiter.take(1) == pytest.approx(10.0)
    clock.now += 3600.0  # a long pause refills to the burst, not beyond
    assert [limiter.take(1) for _ in range(7)][-1] > 0


def test_a_limit_of_zero_is_off_and_retry_after_is_whole_seconds() -> None:
    limiter = RateLimiter(0)
    assert all(limiter.take(1) == 0.0 for _ in range(1000))
    with pytest.raises(ValueError, match="per_minute"):
        RateLimiter(-1)
    assert retry_after(0.01) == "1"
    assert retry_after(6.2) == "7"


def test_each_lock_in_a_row_doubles_up_to_an_hour() -> None:
    assert [lock_seconds(n) for n in range(8)] == [60, 120, 240, 480, 960, 1920, 3600, 3600]
    assert lock_seconds(0) == LOCK_BASE_S
    assert lock_seconds(100) == MAX_LOCK_S


def test_the_review_queue_filters_name_every_kind_and_severity() -> None:
    assert set(get_args(QueueKind)) == {*KINDS, UNCLASSIFIED}
    assert set(get_args(QueueSeverity)) == {*SEVERITIES, UNCLASSIFIED}
