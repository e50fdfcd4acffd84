"""Properties of normalisation and grounding, checked against their plain definitions."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from rapidfuzz import fuzz

from core.evidence import EvidenceGrounder, normalize_for_quote_match, normalize_with_offsets


def reference_normalize(text: str) -> str:
    """Spec 053's normalisation, step by step, repeated until it is stable."""
    while True:
        once = _reference_pass(text)
        if once == text:
            return once
        text = once


def _reference_pass(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    for smart, plain in {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'}.items():
        text = text.replace(smart, plain)
    text = text.replace("\u00a0", " ")
    text = "".join(ch for ch in text if ch not in "\u200b\u200c\u200d\ufeff")
    text = re.sub(r"<[^>]+>", " ", text)
    text = re.sub(r"\s+", " ", text).strip()
    return text.lower()


def naive_grounded(quote: str, transcript: str, threshold: float) -> bool:
    """The fuzzy-mode definition: partial_ratio of the normalised texts over 100."""
    score = fuzz.partial_ratio(reference_normalize(quote), reference_normalize(transcript))
    return score / 100 >= threshold


# Characters that exercise every normalisation rule: tags, whitespace of all kinds, smart
# quotes, zero-width characters, compatibility forms, combining marks, case changes that
# alter length (dotted I), plus plain letters so that matches actually happen.
TRICKY = (
    "abcde fgh  \t\n\r\x0b\x0c\u00a0\u2002\u3000<>/"
    "\u2018\u2019\u201c\u201d\u200b\u200c\u200d\ufeff"
    "\ufb01\u2460\uff21\uff41\u00bd\u2126\u212b"
    "e\u0301\u0301\u0327\u00e9\u1e9b\u0323"
    "\u0130\u0049\u00df\u1e9e\u0041\u00c5"
)
tricky_text = st.text(alphabet=st.sampled_from(TRICKY), max_size=60)
any_text = st.text(max_size=60)
small_alpha = st.text(alphabet=st.sampled_from("abc d"), max_size=80)
word = st.sampled_from(
    ["i", "can't", "sleep", "at", "night", "tired", "feel", "so", "eat", "<sigh>"]
)
sentence = st.lists(word, min_size=1, max_size=40).map(" ".join)

SLOW = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SLOW
@given(st.one_of(tricky_text, any_text))
@example("\u0130")
@example("a<b\n>c")
@example("\ufeff<x>\u200b ")
def test_normalisation_matches_the_definition(text: str) -> None:
    assert normalize_for_quote_match(text) == reference_normalize(text)
    assert normalize_with_offsets(text).text == reference_normalize(text)


@SLOW
@given(st.one_of(tricky_text, any_text))
def test_normalisation_is_idempotent(text: str) -> None:
    once = normalize_for_quote_match(text)
    assert normalize_for_quote_match(once) == once


@SLOW
@given(st.one_of(tricky_text, any_text))
def test_offset_map_is_monotone_and_inside_the_original(text: str) -> None:
    norm = normalize_with_offsets(text)
    assert len(norm.starts) == len(norm.ends) == len(norm.text)
    if norm.text:
        assert (norm.starts >= 0).all()
        assert (norm.ends <= len(text)).all()
        assert (norm.starts < norm.ends).all()
        assert (norm.starts[1:] >= norm.starts[:-1]).all()
        assert (norm.ends[1:] >= norm.ends[:-1]).all()


@SLOW
@given(st.one_of(tricky_text, sentence), st.data())
def test_every_substring_of_the_transcript_is_grounded(
    transcript: str, data: st.DataObject
) -> None:
    start = data.draw(st.integers(0, len(transcript)))
    end = data.draw(st.integers(start, len(transcript)))
    quote = transcript[start:end]
    # A cut can split what the whole text normalises together (a tag, a combining mark,
    # a whitespace run): what must hold is grounding of the quote as it normalises in place.
    assume(normalize_for_quote_match(quote) in normalize_for_quote_match(transcript))
    assume(normalize_for_quote_match(quote))
    result = EvidenceGrounder().check({"k": [quote]}, transcript)
    assert result.stats.validated_count == 1


@SLOW
@given(sentence, st.data())
def test_verbatim_word_spans_are_grounded(transcript: str, data: st.DataObject) -> None:
    words = transcript.split(" ")
    i = data.draw(st.integers(0, len(words) - 1))
    j = data.draw(st.integers(i + 1, len(words)))
    quote = " ".join(words[i:j])
    assume(normalize_for_quote_match(quote))
    assert EvidenceGrounder().check({"k": [quote]}, transcript).stats.validated_count == 1


# Greek capital sigma lower-cases by context (final sigma), so a span cut out of its word can
# normalise differently; it is left out of this one property.
@SLOW
@given(
    st.one_of(
        tricky_text,
        sentence,
        st.text(alphabet=st.characters(blacklist_characters="\u03a3"), max_size=60),
    ),
    st.data(),
)
def test_spans_point_at_text_whose_normalisation_contains_the_quote(
    transcript: str, data: st.DataObject
) -> None:
    norm = normalize_with_offsets(transcript)
    assume(norm.text.strip())
    a = data.draw(st.integers(0, len(norm.text) - 1))
    b = data.draw(st.integers(a + 1, len(norm.text)))
    quote = norm.text[a:b]
    assume(quote.strip() == quote)
    result = EvidenceGrounder().check({"k": [quote]}, norm)
    match = result.matches[0]
    assert match.grounded
    assert match.start is not None
    assert match.end is not None
    assert quote in normalize_for_quote_match(transcript[match.start : match.end])


THRESHOLDS = st.sampled_from([0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0]) | st.floats(0.5, 1.0)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(small_alpha, tricky_text, sentence),
    st.one_of(small_alpha, tricky_text, sentence),
    THRESHOLDS,
    st.booleans(),
)
@example("", "", 0.85, True)
@example("abc", "", 0.85, True)
@example("abcdxfghij", "zz abcdefghij zz", 0.9, False)
@example("abcdefghij abcdefghij", "abcdefghij", 0.5, True)
@example("a" * 70 + "b", "c" + "a" * 200, 0.98, False)
def test_fuzzy_decisions_equal_the_naive_definition(
    quote: str, transcript: str, threshold: float, locate: bool
) -> None:
    grounder = EvidenceGrounder(mode="fuzzy", threshold=threshold, locate_rejected=locate)
    result = grounder.check({"k": [quote]}, transcript)
    assert result.matches[0].grounded == naive_grounded(quote, transcript, threshold)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sentence, st.data())
def test_fuzzy_decisions_equal_the_definition_near_the_threshold(
    transcript: str, data: st.DataObject
) -> None:
    """Adversarial: perturb a real span a little, then set the threshold at its exact score."""
    norm = reference_normalize(transcript)
    assume(len(norm) > 4)
    a = data.draw(st.integers(0, len(norm) - 2))
    b = data.draw(st.integers(a + 1, min(len(norm), a + 90)))
    chars = list(norm[a:b])
    for _ in range(data.draw(st.integers(0, 4))):
        pos = data.draw(st.integers(0, len(chars)))
        op = data.draw(st.sampled_from(["ins", "del", "sub"]))
        if op == "ins" or not chars:
            chars.insert(pos, data.draw(st.sampled_from("xyz ,.")))
        elif op == "del" and pos < len(chars):
            del chars[pos]
        elif pos < len(chars):
            chars[pos] = data.draw(st.sampled_from("xyz ,."))
    quote = "".join(chars)
    exact = fuzz.partial_ratio(reference_normalize(quote), norm) / 100
    nudge = data.draw(st.sampled_from([0.0, 1e-12, -1e-12, 0.005, -0.005]))
    threshold = min(1.0, max(0.01, exact + nudge))
    grounder = EvidenceGrounder(
        mode="fuzzy", threshold=threshold, locate_rejected=data.draw(st.booleans())
    )
    match = grounder.check({"k": [quote]}, transcript).matches[0]
    assert match.grounded == naive_grounded(quote, transcript, threshold)
    if match.grounded:
        assert match.score == exact


@settings(max_examples=300, deadline=None)
@given(st.one_of(small_alpha, sentence), st.one_of(small_alpha, sentence))
def test_reported_fuzzy_score_is_the_partial_ratio(quote: str, transcript: str) -> None:
    match = EvidenceGrounder(mode="fuzzy").check({"k": [quote]}, transcript).matches[0]
    expected = fuzz.partial_ratio(reference_normalize(quote), reference_normalize(transcript))
    assert match.score == expected / 100
