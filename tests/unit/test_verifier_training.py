"""The learned verifier's training rules: the split rule, the hallucination generator, and
the lexical support that shows which words a statement adds."""

from __future__ import annotations

import json
import random
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core.grounding.perturb import KINDS, hallucinate, negated, negation_cue
from core.grounding.splits import ACI_TEST, MTS_TEST, MTS_TRAIN, split_of
from core.grounding.support import evidence_keys, novelty, unsupported_words

# the benchmark scripts that build, train and fit the model, imported where a test needs one
sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))


@pytest.mark.parametrize("name", ACI_TEST)
def test_aci_test_files_are_test(name: str) -> None:
    assert split_of("aci", name) == "test"


def test_aci_train_and_dev() -> None:
    assert split_of("aci", "train.csv") == "train"
    assert split_of("aci", "valid.csv") == "dev"
    assert split_of("aci", "something_else.csv") == "test"  # unknown files never train


@pytest.mark.parametrize("name", MTS_TEST)
@pytest.mark.parametrize("row", ["0", "1", "7", "TR=EN-FR-EN 3"])
def test_mts_test_sets_are_test_whatever_the_row(name: str, row: str) -> None:
    assert split_of("mts", name, row) == "test"


def test_mts_dev_encounters_are_dev_in_every_copy() -> None:
    for name in MTS_TRAIN:
        assert split_of("mts", name, "20") == "dev"
        assert split_of("mts", name, "21") == "train"
    # a back-translated copy names the encounter it paraphrases: the same split
    assert split_of("mts", MTS_TRAIN[1], "TR=EN-FR-EN 40") == "dev"
    assert split_of("mts", MTS_TRAIN[3], "TR=EN-ES-EN 41") == "train"
    assert split_of("mts", MTS_TRAIN[0], "no number") == "test"


def test_medhallu_rows_follow_the_benchmark_split() -> None:
    splits = [split_of("medhallu", "medhallu_pqa_labeled.jsonl", i) for i in range(20)]
    assert splits[:10] == ["train"] * 5 + ["dev"] * 2 + ["test"] * 3
    assert splits[10:] == splits[:10]


def test_primock_days_1_to_3_train_day_4_is_dev_day_5_is_test() -> None:
    assert split_of("primock", "day1_consultation15.json") == "train"
    assert split_of("primock", "day3_consultation01_doctor.TextGrid") == "train"
    assert split_of("primock", "day4_consultation07.json") == "dev"
    assert split_of("primock", "day5_consultation01.json") == "test"
    assert split_of("primock", "day5_consultation12_patient.TextGrid") == "test"
    assert split_of("primock", "notes.json") == "test"  # an unknown file never trains


SOURCE = (
    "Doctor: How is the knee? Patient: The left knee still hurts when I climb stairs. "
    "Doctor: Are you taking the ibuprofen? Patient: Yes, 400 mg twice a day. "
    "Doctor: Any fever? Patient: No."
)


def test_every_kind_can_be_made_and_none_is_the_statement() -> None:
    rng = random.Random(0)
    statements = [
        "The patient reports left knee pain for 2 weeks.",
        "She takes ibuprofen 400 mg twice daily and denies fever.",
        "Her mother has possible rheumatoid arthritis.",
        "He is a married male with mild hypertension.",
        "Medications: ibuprofen 400 mg.",
    ]
    made = {h.kind for s in statements for h in hallucinate(s, SOURCE, rng, others=statements)}
    assert len(made) >= len(KINDS) - 4, sorted(set(KINDS) - made)
    for s in statements:
        for h in hallucinate(s, SOURCE, rng, others=statements):
            assert h.text.lower() != s.lower()
            assert h.original == s


def test_same_seed_same_hallucinations() -> None:
    s = "The patient reports left knee pain for 2 weeks."
    first = hallucinate(s, SOURCE, random.Random(5))
    again = hallucinate(s, SOURCE, random.Random(5))
    assert first == again


def test_additions_never_use_words_the_source_says() -> None:
    rng = random.Random(1)
    for _ in range(30):
        for h in hallucinate("The knee hurts.", SOURCE, rng, kinds=("add_order", "add_drug")):
            added = h.text[len("The knee hurts") :].lower()
            assert "ibuprofen" not in added


def test_laterality_and_negation() -> None:
    rng = random.Random(0)
    (side,) = hallucinate("Left knee pain.", SOURCE, rng, kinds=("laterality",))
    assert side.text == "Right knee pain."
    (neg,) = hallucinate("She denies fever.", SOURCE, rng, kinds=("negation",))
    assert neg.text == "She reports fever."


@pytest.mark.parametrize(
    ("statement", "opposite"),
    [
        ("She denies fever.", "She reports fever."),
        ("Denies any weight loss.", "Reports weight loss."),
        ("She has no fever.", "She has a fever."),
        ("He does not smoke.", "He does smoke."),
        ("We will start lisinopril.", "We will not start lisinopril."),
        ("Chest X-ray was unremarkable.", "Chest X-ray was abnormal."),
        ("Left knee pain.", None),  # nothing to say the other way round
    ],
)
def test_a_statement_said_the_other_way_round(statement: str, opposite: str | None) -> None:
    assert negated(statement) == opposite
    if opposite is not None:  # the generator's flip is the same table
        (neg,) = hallucinate(statement, SOURCE, random.Random(0), kinds=("negation",))
        assert neg.text == opposite


def test_the_negation_cue_is_where_the_statement_is_turned_round() -> None:
    assert negation_cue("She has no fever.") == (8, 10, "a")
    assert negation_cue("Denies any weight loss.") == (0, 10, "Reports")
    assert negation_cue("He is taking aspirin.", generic=False) == (3, 12, "is not taking")
    assert negation_cue("Left knee pain.") is None


@pytest.mark.parametrize(
    ("statement", "quoted"),
    [
        ("There is no swelling.", "There is swelling."),
        ("No known drug allergies.", "Known drug allergies."),
        ("He reports no nausea or vomiting.", "He reports nausea or vomiting."),
        ("He does not have any chest pain.", "He has chest pain."),
        ("She is not taking any medications.", "She is taking medications."),
        ("He has not had any falls.", "He has had falls."),
        ("She denies any fever.", "She reports fever."),
        ("She reports any pain at all.", "She denies any pain at all."),  # no negation removed
        ("Left knee pain.", None),
    ],
)
def test_the_opposite_quoted_in_a_reason_reads_as_written(
    statement: str, quoted: str | None
) -> None:
    from core.grounding.perturb import opposite_as_written, turned_round

    cue = negation_cue(statement, generic=False)
    assert opposite_as_written(statement, cue) == quoted
    if quoted is not None:  # the model still reads the generator's form
        assert turned_round(statement, cue) == negated(statement, generic=False)


def test_the_contrast_flips_only_words_that_say_present_or_absent() -> None:
    from core.grounding.perturb import _GENERIC_NEGATIONS, _NEGATIONS

    assert _GENERIC_NEGATIONS <= {pattern for pattern, _ in _NEGATIONS}
    assert negated("We will start lisinopril.", generic=False) is None
    assert negated("The MRI was unremarkable.", generic=False) == "The MRI was abnormal."
    assert negated("He is taking aspirin.", generic=False) == "He is not taking aspirin."
    assert negated("She denies fever.", generic=False) == "She reports fever."


def test_a_named_specific_is_swapped_for_one_of_its_sort_that_no_one_said() -> None:
    source = "Doctor: Let's get an X-ray of the right knee and send you to orthopedics."
    for seed in range(20):
        rng = random.Random(seed)
        for h in hallucinate(
            "An X-ray of the right knee was ordered and she was referred to orthopedics.",
            source,
            rng,
            kinds=("test", "specialty", "site"),
        ):
            said = set(re.findall(r"[\w-]+", source.lower()))
            words = set(re.findall(r"[\w-]+", h.text.lower()))
            changed = words - set(re.findall(r"[\w-]+", h.original.lower())) - {"a", "an"}
            assert changed, h
            assert not changed & said, h
            if h.kind == "test":  # an imaging test for an imaging test, with its article
                assert re.match(
                    r"An? (MRI|CT scan|ultrasound|bone scan|DEXA scan|PET scan)", h.text
                )
                assert not re.search(
                    r"\ba [aeiouAEIOU]|\ban [b-df-hj-np-tv-zB-DGJKPQTVWYZ]", h.text
                )


def test_unsupported_words_are_what_the_source_never_says() -> None:
    statement = "She reports left knee pain, and an MRI of the knee was ordered."
    words = [statement[w.start : w.end] for w in unsupported_words(statement, [SOURCE])]
    assert words == ["pain", "MRI", "ordered"]


def test_spoken_numbers_bear_out_digits() -> None:
    source = "Patient: I'm seventy six years old and take four hundred milligrams."
    assert unsupported_words("A 76-year-old who takes 400 mg.", [source]) == [] or all(
        w.text == "mg" for w in unsupported_words("A 76-year-old who takes 400 mg.", [source])
    )
    assert novelty("A 76-year-old woman.", [source]) == pytest.approx(1 / 4)


def test_novelty_is_zero_for_a_repeat_and_one_for_an_invention() -> None:
    assert novelty("The left knee still hurts.", [SOURCE]) == 0.0
    assert novelty("Colonoscopy scheduled tomorrow.", [SOURCE]) == 1.0


def _verifier_data():  # type: ignore[no-untyped-def]
    import verifier_data

    return verifier_data


def test_every_addition_says_how_a_visit_would_support_it() -> None:
    rng = random.Random(3)
    made = hallucinate(
        "He reports knee pain.", SOURCE, rng, kinds=[k for k in KINDS if k.startswith("add_")]
    )
    assert made
    for h in made:
        assert len(h.said) >= 2, h.kind  # wordings to train on, and one kept for measuring
        assert all(line.startswith(("Doctor:", "Patient:")) for line in h.said)
    (order,) = hallucinate("The knee hurts.", SOURCE, random.Random(0), kinds=("add_order",))
    added = order.text[len("The knee hurts") :].lower()
    words = [w for w in re.findall(r"[a-z]{4,}", added) if w not in {"ordered", "normal"}]
    assert words
    assert all(w in line.lower() for w in words for line in order.said)


def test_counterfactual_evidence_makes_the_evidence_say_it() -> None:
    vd = _verifier_data()
    evidence = "Doctor: How is the knee?\nPatient: The left knee still hurts."
    (add,) = hallucinate("The knee hurts.", SOURCE, random.Random(0), kinds=("add_referral",))
    said = vd.counterfactual_evidence(add, evidence, random.Random(0))
    assert said is not None
    (inserted,) = set(said.splitlines()) - set(evidence.splitlines())
    assert inserted in add.said[:-1]
    held_out = vd.counterfactual_evidence(add, evidence, random.Random(0), held_out=True)
    assert held_out is not None
    assert add.said[-1] in held_out
    # a changed specific is changed in the evidence too, where the evidence says it
    (side,) = hallucinate("Left knee pain.", SOURCE, random.Random(0), kinds=("laterality",))
    assert vd.counterfactual_evidence(side, evidence, random.Random(0)) == evidence.replace(
        "left", "Right"
    )
    (neg,) = hallucinate("She denies fever.", SOURCE, random.Random(0), kinds=("negation",))
    assert vd.counterfactual_evidence(neg, evidence, random.Random(0)) is None


@pytest.mark.parametrize(
    ("statement", "evidence", "turned"),
    [
        (  # the answer to the question that asks it
            "She has a history of asthma.",
            "[doctor] do you have asthma ? [patient] yes , since i was a kid .",
            "[doctor] do you have asthma ? [patient] no , since i was a kid .",
        ),
        (
            "She denies fever or chills.",
            "Doctor: Any fever or chills? Patient: No. Doctor: Good.",
            "Doctor: Any fever or chills? Patient: Yes. Doctor: Good.",
        ),
        (  # the word that says it, where it governs the statement's words
            "There is no chest pain.",
            "Patient: There is no chest pain today. Doctor: Okay.",
            "Patient: There is a chest pain today. Doctor: Okay.",
        ),
        ("He reports knee pain.", "Patient: My knee hurts. Doctor: Okay.", None),  # no cue
        (  # "no, none": one word turned round would leave the answer torn
            "She denies fever.",
            "Doctor: Any fever? Patient: No, none.",
            None,
        ),
        (  # the rest of the evidence says it too: it might still support it
            "She denies fever or chills.",
            "Doctor: Any fever or chills? Patient: No. She denies fever or chills.",
            None,
        ),
    ],
)
def test_evidence_turned_round_says_the_opposite(
    statement: str, evidence: str, turned: str | None
) -> None:
    assert _verifier_data().negated_evidence(statement, evidence) == turned


@pytest.mark.parametrize(
    ("statement", "evidence", "both"),
    [
        (  # the answer to the question turned round, and the statement's denial
            "She denies fever or chills.",
            "Doctor: Any fever or chills? Patient: No. Doctor: Good.",
            (
                "She reports fever or chills.",
                "Doctor: Any fever or chills? Patient: Yes. Doctor: Good.",
            ),
        ),
        (
            "There is no chest pain.",
            "Patient: There is no chest pain today. Doctor: Okay.",
            ("There is a chest pain.", "Patient: There is a chest pain today. Doctor: Okay."),
        ),
        (  # the statement turns its smoking, the evidence could only turn its asthma
            "She has asthma and denies smoking.",
            "[doctor] do you have asthma ? [patient] yes , since i was a kid .",
            None,
        ),
        ("She has asthma.", "[doctor] do you have asthma ? [patient] yes .", None),  # a copula
    ],
)
def test_statement_and_evidence_turned_round_together_still_agree(
    statement: str, evidence: str, both: tuple[str, str] | None
) -> None:
    assert _verifier_data().negated_statement_and_evidence(statement, evidence) == both


def test_changed_specifics_come_in_pairs_that_differ_in_the_specific_alone() -> None:
    vd = _verifier_data()
    dialogue = (
        "Doctor: What do you take? Patient: Metformin 500 mg twice a day.\n"
        "Doctor: Where does it hurt? Patient: My left knee, for 3 weeks."
    )
    statements = [
        "She takes metformin 500 mg twice daily.",
        "She reports left knee pain for 3 weeks.",
        "She is otherwise well.",
    ]
    enc = vd.Encounter("mts", "f.csv", "7", "train", dialogue, " ".join(statements), "")
    kept = [(s, dialogue) for s in statements[:2]]
    counts: Counter[str] = Counter()
    rows = vd.specific_rows(enc, statements, kept, 1.0, counts)
    assert rows
    assert all(r.kind.removesuffix("_said").rsplit("_", 1)[0] in vd.SPECIFIC_KINDS for r in rows)
    negatives = [r for r in rows if r.label == 0]
    assert len(negatives) == 2  # one changed specific of each positive
    assert any(r.label == 1 for r in rows)  # and its counterpart, where the evidence names it
    for neg in negatives:
        assert neg.statement not in statements
        assert neg.kind.endswith(("_note", "_visit"))
        if neg.kind.endswith("_note"):  # the note's passage says the original sentence
            assert any(s in neg.evidence for s in statements[:2])
        said = [r for r in rows if r.label == 1 and r.statement == neg.statement]
        for pos in said:  # the same sentence against the evidence changed to say it
            assert pos.kind == neg.kind + "_said"
            assert pos.evidence != neg.evidence
            assert len(pos.evidence.split()) == len(neg.evidence.split())
    # the same encounter gives the same rows (its own seed), and none at a share of 0
    assert vd.specific_rows(enc, statements, kept, 1.0, Counter()) == rows
    assert vd.specific_rows(enc, statements, kept, 0.0, Counter()) == []
    assert vd.note_passage(statements, 0) == " ".join(statements[:2])
    assert vd.note_passage(statements, 1) == " ".join(statements)


def test_the_tie_share_scales_only_the_kinds_that_tie_a_said_fact_wrongly() -> None:
    vd = _verifier_data()
    assert vd.Recipe().kind_weights() == vd.KIND_WEIGHTS  # the default draws as weighted
    third = vd.Recipe(tie_share=1 / 3).kind_weights()
    for kind, weight in vd.KIND_WEIGHTS.items():
        expected = weight / 3 if kind in vd.TIE_KINDS else weight
        assert third[kind] == pytest.approx(expected), kind
    assert set(vd.TIE_KINDS) <= set(KINDS)  # each one a kind the generator makes
    # with none of them, a fact that could be put under another label never is
    dialogue = "Doctor: Any allergies? Patient: Penicillin gives me a rash."
    made = hallucinate("Allergies: penicillin.", dialogue, random.Random(1))
    assert "label_swap" in {h.kind for h in made}
    none = vd.Recipe(tie_share=0.0).kind_weights()
    picks = {h.kind for n in range(50) for h in vd._choose(made, random.Random(n), 1, none)}
    assert picks
    assert "label_swap" not in picks


def test_counterfactual_lines_follow_the_transcript_style() -> None:
    vd = _verifier_data()
    line = "Doctor: Any family history? Patient: Yes, my mother had COPD."
    assert vd._spoken(line, "[doctor] how are you ?") == (
        "[doctor] any family history ?\n[patient] yes , my mother had copd ."
    )
    assert vd._spoken(line, "Doctor: How are you?") == line


def test_a_reference_sentence_is_a_positive_only_when_its_evidence_says_enough_of_it() -> None:
    said_enough = _verifier_data().said_enough
    assert said_enough(0.4, 0.1)  # the evidence says more than half its words
    assert said_enough(0.7, 0.6)  # a quarter more, and much the same meaning
    assert not said_enough(0.7, 0.3)
    assert not said_enough(0.8, 0.9)  # most of it is never said, however alike it reads


def test_a_vetoing_family_caps_support_whatever_the_model_says() -> None:
    from core.grounding.verifier import combine

    params = {
        "features": ["model", "conflict_numbers"],
        "coef": [1.0, -0.1],
        "intercept": 0.0,
        "threshold": 0.3,
        "vetoes": {"numbers": 0.18},
    }
    sure = {"model": 0.99, "conflict_numbers": 0.0}
    support, grounded = combine(sure, params)
    assert support > 0.9
    assert grounded
    support, grounded = combine({**sure, "conflict_numbers": 1.0}, params)
    assert support == pytest.approx(0.18)
    assert not grounded
    # without vetoes the weak coefficient leaves the model's word standing
    support, grounded = combine({**sure, "conflict_numbers": 1.0}, {**params, "vetoes": {}})
    assert support > 0.9
    assert grounded


def test_a_step_function_per_signal_reads_each_value_in_its_interval() -> None:
    from core.grounding.verifier import combine

    params = {
        "features": ["model", "conflict_numbers"],
        "shapes": {
            "model": {"thresholds": [-2.0, 1.0], "values": [-3.0, 0.0, 2.0]},
            "conflict_numbers": {"thresholds": [0.5], "values": [0.0, -1.0]},
        },
        "intercept": 0.5,
        "threshold": 0.5,
    }

    from core.grounding.verifier import MODEL_TIE_SLOPE

    def z(model_logodds: float, conflict: float) -> float:
        p = 1 / (1 + np.exp(-model_logodds))
        support, _ = combine({"model": p, "conflict_numbers": conflict}, params)
        # the steps, without the slope that keeps the model's order within a step
        return float(np.log(support / (1 - support))) - MODEL_TIE_SLOPE * model_logodds

    assert z(-5.0, 0.0) == pytest.approx(-2.5)  # below the first threshold
    assert z(-2.0, 0.0) == pytest.approx(-2.5, abs=1e-4)  # a threshold belongs to the left
    assert z(0.0, 0.0) == pytest.approx(0.5)
    assert z(3.0, 0.0) == pytest.approx(2.5)
    assert z(3.0, 1.0) == pytest.approx(1.5)
    # a signal the verifier gives but the combination does not read changes nothing
    support, _ = combine({"model": 0.5, "conflict_numbers": 0.0, "missing": 1.0}, params)
    assert support == pytest.approx(1 / (1 + np.exp(-0.5)))


def test_within_one_step_support_keeps_the_models_order() -> None:
    """Statements the step function puts in one step keep the model's order (so an
    answer's least support, and AUROC, still tell them apart), and still on the side of the
    threshold the step puts them: the slope is far smaller than a step."""
    from core.grounding.verifier import combine

    params = {
        "features": ["model"],
        "shapes": {"model": {"thresholds": [-2.0, 1.0], "values": [-3.0, 0.0, 2.0]}},
        "intercept": 0.3,
        "threshold": 0.5,
    }
    probs = [0.15, 0.2, 0.3, 0.45, 0.5, 0.6, 0.7]  # log-odds -1.7 to 0.85: the middle step
    results = [combine({"model": p}, params) for p in probs]
    supports = [s for s, _ in results]
    assert supports == sorted(supports)
    assert len({round(s, 4) for s in supports}) == len(probs)  # apart as the JSON shows them
    step = 1 / (1 + np.exp(-0.3))
    assert all(abs(s - step) < 0.01 for s in supports)
    assert all(grounded for _, grounded in results)  # the step's side of the threshold
    # a step below and a step above: as fitted
    assert combine({"model": 0.05}, params) == (
        pytest.approx(1 / (1 + np.exp(2.7)), abs=0.01),
        False,
    )
    assert combine({"model": 0.9}, params) == (
        pytest.approx(1 / (1 + np.exp(-2.3)), abs=0.01),
        True,
    )


def test_a_combination_combine_would_misread_is_refused_by_name() -> None:
    from core.grounding.verifier import check_combination

    good = {"model": {"thresholds": [-1.0, 1.0], "values": [-2.0, 0.0, 2.0]}}
    check_combination({"shapes": good, "intercept": 0.0})  # accepted
    check_combination({"features": ["model", "missing"], "coef": [1.0, -0.3]})
    short = {"model": {"thresholds": [-1.0, 1.0], "values": [-2.0, 2.0]}}
    with pytest.raises(ValueError, match=r"shapes\.model: 2 values for 2 thresholds"):
        check_combination({"shapes": short})
    unordered = {"model": {"thresholds": [1.0, -1.0], "values": [0.0, 1.0, 2.0]}}
    with pytest.raises(ValueError, match="thresholds not increasing"):
        check_combination({"shapes": unordered})
    with pytest.raises(ValueError, match="unknown signal 'novelty'"):
        check_combination({"shapes": {"novelty": good["model"]}})
    with pytest.raises(ValueError, match="one 'coef' per feature"):
        check_combination({"features": ["model", "missing"], "coef": [1.0]})


def test_boosted_stumps_bend_where_the_data_bends_and_keep_each_signals_sign() -> None:
    from fit_verifier import monotone_stumps

    rng = np.random.default_rng(0)
    n = 4000
    model = rng.uniform(-6, 6, n)
    conflict = (rng.random(n) < 0.2).astype(float)
    # support rises with the model's log-odds only past 0 (a bend no straight line has), a
    # conflict lowers it, and a third signal is noise that may only lower it
    noise = rng.random(n)
    z = np.where(model > 0, 2.0, -2.0) - 2.0 * conflict
    y = (rng.random(n) < 1 / (1 + np.exp(-z))).astype(float)
    x = np.column_stack([model, conflict, noise])
    shapes, intercept = monotone_stumps(x, y, np.ones(n), [1, -1, -1])

    def value(j: int, v: float) -> float:
        thresholds, values = shapes.get(j, ([], [0.0]))
        return values[int(np.searchsorted(thresholds, v, side="left"))]

    for j, sign in ((0, 1), (1, -1), (2, -1)):  # monotone in the sign's direction
        thresholds, values = shapes.get(j, ([], [0.0]))
        assert len(values) == len(thresholds) + 1
        steps = np.diff(values)
        assert (steps * sign >= -1e-9).all(), (j, values)
    # the bend is at 0: flat on each side, a jump of about 4 log-odds across it
    assert value(0, 0.5) - value(0, -0.5) > 3.0
    assert abs(value(0, 5.5) - value(0, 0.5)) < 0.6
    assert abs(value(0, -0.5) - value(0, -5.5)) < 0.6
    assert -2.6 < value(1, 1.0) - value(1, 0.0) < -1.4
    assert abs(value(2, 0.9) - value(2, 0.1)) < 0.3
    assert np.isfinite(intercept)


def test_only_a_family_that_rarely_fires_on_real_sentences_vetoes() -> None:
    from fit_verifier import vetoes

    def row(label: int, group: str = "aci", **signals: float) -> dict[str, object]:
        return {"group": group, "label": label, "kind": "k", "weight": 1.0, "signals": signals}

    real = [row(0) for _ in range(198)] + [row(0, conflict_numbers=1.0)]
    real += [row(0, conflict_negation=1.0) for _ in range(10)]
    made = [row(1, conflict_numbers=1.0) for _ in range(9)]
    made += [row(1, conflict_negation=1.0) for _ in range(30)]
    found = vetoes(real + made, ["numbers", "negation", "conditions"])
    # numbers: 1 of 209 real sentences (< 1 %), 1 real among its 10 conflicts
    assert found == {"numbers": 0.1}
    # each source counts the same: a check that never fires on the 209 sentences of one
    # source but on 3 of the 100 of another fires on 1.5 % of real sentences on average (3 of
    # 309 pooled, under 1 %: the largest source would let it veto) and does not veto; on 1 of
    # 100 it does, its conflict leaving the share of real sentences among its hits
    made += [row(1, conflict_conditions=1.0) for _ in range(18)]
    other = [row(0, "mts") for _ in range(97)] + [row(0, "mts", conflict_conditions=1.0)] * 3
    assert vetoes(real + other + made, ["numbers", "conditions"]) == {"numbers": 0.1}
    other = [row(0, "mts") for _ in range(99)] + [row(0, "mts", conflict_conditions=1.0)]
    found = vetoes(real + other + made, ["numbers", "conditions"])
    assert found == {"numbers": 0.1, "conditions": round(1 / 19, 4)}


def test_general_corpora_weigh_as_told_and_neither_veto_nor_set_the_threshold() -> None:
    from fit_verifier import fit, vetoes, weigh_general

    def row(label: int, group: str, model: float, **signals: float) -> dict[str, object]:
        kind = "reference" if label == 0 and not group.startswith("general/") else "k"
        return {
            "group": group,
            "label": label,
            "kind": kind,
            "weight": 1.0,
            "status": "unsupported",
            "signals": {"model": model, **signals},
        }

    rng = random.Random(3)
    clinical = [row(0, "aci", rng.uniform(0.3, 0.99)) for _ in range(149)]
    clinical += [row(0, "aci", 0.9, conflict_numbers=1.0)]
    clinical += [row(1, "aci", rng.uniform(0.01, 0.7)) for _ in range(141)]
    clinical += [row(1, "aci", 0.5, conflict_numbers=1.0) for _ in range(9)]
    general = [row(0, "general/a", 0.9, conflict_numbers=1.0) for _ in range(10)]
    general += [row(1, "general/a", 0.1) for _ in range(30)]
    general += [row(0, "general/b", 0.9) for _ in range(60)]
    weigh_general(clinical + general, 0.5)
    by_group = Counter()
    for r in general:
        by_group[r["group"]] += r["weight"]
    # 0.5 x the 300 clinical rows' weight, shared equally by the two corpora
    assert by_group["general/a"] == pytest.approx(75.0)
    assert by_group["general/b"] == pytest.approx(75.0)
    assert all(r["weight"] == 1.0 for r in clinical)
    # a check firing on the general corpora's supported claims does not stop it vetoing
    # (1 of the 150 real clinical sentences, 1 real among its 10 conflicts)
    assert vetoes(clinical + general, ["numbers"]) == {"numbers": 0.1}
    # the threshold answers for the clinical rows alone: its F1 is theirs, not the corpora's
    from core.grounding.verifier import combine

    params, _, f1 = fit(clinical + general, [], max_false_alarms=0.1, signals=["model"])
    flagged = [not combine(r["signals"], params)[1] for r in clinical]
    tp = sum(f and r["label"] for f, r in zip(flagged, clinical, strict=True))
    fp = sum(f and not r["label"] for f, r in zip(flagged, clinical, strict=True))
    fn = sum(not f and r["label"] for f, r in zip(flagged, clinical, strict=True))
    assert f1 == pytest.approx(2 * tp / (2 * tp + fp + fn))
    assert fp / 150 <= 0.1


def test_the_threshold_meets_the_ceiling_between_the_printed_steps() -> None:
    from fit_verifier import sweep

    # 20 hallucinations at support 0.43, 100 real sentences: 9 at 0.435, the rest at 0.8;
    # on a grid of 0.025, 0.425 flags nothing and 0.45 the 9 real ones too (9 % > 5 %)
    support = np.array([0.43] * 20 + [0.435] * 9 + [0.8] * 91)
    hallucinated = np.array([1] * 20 + [0] * 100)
    real = hallucinated == 0
    f1, threshold, table = sweep(support, hallucinated, np.ones(120), real, 0.05)
    assert threshold == 0.435  # all 20 flagged, none of the real ones
    assert f1 == pytest.approx(1.0)
    assert [row["threshold"] for row in table][:3] == [0.05, 0.075, 0.1]  # printed: every 0.025
    # above the ceiling nothing is chosen, however good its F1
    f1, threshold, _ = sweep(support, hallucinated, np.ones(120), real, 0.0)
    assert threshold == 0.435
    f1, threshold, _ = sweep(
        np.array([0.43] * 20 + [0.43] * 9 + [0.8] * 91), hallucinated, np.ones(120), real, 0.05
    )
    assert (f1, threshold) == (0.0, 0.5)  # nothing meets the ceiling and flags one


VISIT = (
    "Doctor: Do you have diabetes? Patient: Yes, I take metformin twice a day. "
    "Doctor: Any allergies? Patient: Penicillin gives me a rash. "
    "I took amoxicillin last month. I used to smoke but I stopped ten years ago."
)


def test_whose_fact_it_is_moves_to_a_relative_the_visit_never_names() -> None:
    (h,) = hallucinate("He has diabetes.", VISIT, random.Random(0), kinds=("patient_to_relative",))
    m = re.fullmatch(r"His (\w+) has diabetes\.", h.text)
    assert m is not None
    assert m.group(1) not in VISIT.lower()
    assert any(f"my {m.group(1)} has diabetes" in line.lower() for line in h.said)
    # what the patient only reports stays the patient's
    assert not hallucinate(
        "She reports chest pain.", VISIT, random.Random(0), kinds=("patient_to_relative",)
    )


def test_a_drug_taken_becomes_an_allergy_and_an_allergy_a_drug_taken() -> None:
    rng = random.Random(0)
    (allergy,) = hallucinate("He takes metformin daily.", VISIT, rng, kinds=("drug_allergy",))
    assert re.fullmatch(r"He (is allergic to|has an allergy to) metformin\.", allergy.text)
    assert all("metformin" in line.lower() for line in allergy.said)
    (taken,) = hallucinate("She is allergic to penicillin.", VISIT, rng, kinds=("drug_allergy",))
    assert taken.text in ("She takes penicillin.", "She was started on penicillin.")
    # a drug the visit says gives a reaction is never made an allergy: it may be one
    assert not hallucinate("He took penicillin as a child.", VISIT, rng, kinds=("drug_allergy",))


def test_a_listed_fact_is_put_under_the_label_of_another_kind() -> None:
    rng = random.Random(0)
    swap = {
        s: hallucinate(s, VISIT + " My mother had asthma.", rng, kinds=("label_swap",))
        for s in (
            "Medications: metformin twice a day.",
            "Allergies: Penicillin.",
            "Family history: asthma.",
            "Past medical history: diabetes.",
        )
    }
    assert [h.text for (h,) in swap.values()] == [
        "Allergies: metformin twice a day.",
        "Medications: Penicillin.",
        "Past medical history: asthma.",
        "Family history: diabetes.",
    ]
    (allergy,) = swap["Medications: metformin twice a day."]
    assert all("metformin" in line.lower() for line in allergy.said)
    for statement in (
        "Medications: amoxicillin.",  # the visit may tie it to a reaction: never an allergy
        "Allergies: Penicillin.",  # no tie to a rash: it may be taken too
        "Allergies: Sulfa (hives).",  # says its own kind
        "Past medical history: He has diabetes and takes metformin.",  # says its own kind
        "Social history: smokes.",  # a kind without a likely confusion
        "Penicillin.",  # no label
    ):
        visit = VISIT.replace("gives me a rash", "is fine") + " Amoxicillin gave me hives."
        made = hallucinate(statement, visit, rng, kinds=("label_swap",))
        assert not made, statement


def test_a_share_of_sections_that_name_a_kind_of_fact_is_read_under_a_label() -> None:
    vd = _verifier_data()
    notes = [vd.labelled_note("ALLERGY", "Penicillin.", f"file/{k}") for k in range(400)]
    labelled = [n for n in notes if n != "Penicillin."]
    assert 0.5 < len(labelled) / len(notes) < 0.7
    assert {vd.note_statements(n)[0] for n in labelled} == {"Allergies: Penicillin."}
    assert notes == [vd.labelled_note("ALLERGY", "Penicillin.", f"file/{k}") for k in range(400)]
    assert vd.labelled_note("GENHX", "He has a cough.", "file/1") == "He has a cough."
    # a fact under a label is judged from one word; without one, from three
    assert vd.note_statements("Penicillin.") == []
    assert vd.long_enough("Allergies: penicillin.")
    assert not vd.long_enough("Penicillin rash.")


@pytest.mark.parametrize(
    ("statement", "turned"),
    [
        ("He is a former smoker.", "He is a current smoker."),
        ("He used to smoke a pack a day.", "He still smokes a pack a day."),
        ("She quit drinking last year.", "She started drinking last year."),
        ("She is no longer working.", "She is still working."),
        ("Currently he walks with a cane.", "Previously he walks with a cane."),
        ("He is currently taking metformin.", "He is no longer taking metformin."),
        ("She is currently unemployed.", "She was previously unemployed."),
    ],
)
def test_what_once_was_so_is_said_to_be_so_now_and_back(statement: str, turned: str) -> None:
    (h,) = hallucinate(statement, VISIT, random.Random(0), kinds=("past_current",))
    assert h.text == turned


def test_training_batches_are_banded_by_length_and_hold_every_pair_once() -> None:
    import train_verifier

    rng = random.Random(2)
    lengths = [rng.randint(20, 900) for _ in range(5_000)]
    batches = train_verifier.length_bands(lengths, 32, seed=13)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert sum(len(b) < 32 for b in batches) == 1  # only the last of all is short
    assert batches == train_verifier.length_bands(lengths, 32, seed=13)
    assert batches != train_verifier.length_bands(lengths, 32, seed=14)
    # a batch is padded to its longest pair: banded, far less than drawn at random
    padded = np.mean([max(lengths[i] for i in b) for b in batches])
    shuffled = list(range(len(lengths)))
    random.Random(13).shuffle(shuffled)
    at_random = np.mean(
        [max(lengths[i] for i in shuffled[a : a + 32]) for a in range(0, 5_000, 32)]
    )
    assert padded < 0.75 * at_random
    # and the batches come in no order of length
    firsts = [lengths[b[0]] for b in batches]
    assert firsts != sorted(firsts)
    assert firsts != sorted(firsts, reverse=True)


def test_the_manifest_counts_pairs_by_corpus_label_and_kind() -> None:
    import train_verifier

    rows: list[dict[str, object]] = [
        {"corpus": "mts", "label": 1, "kind": "reference"},
        {"corpus": "mts", "label": 0, "kind": "negation"},
        {"corpus": "aci", "label": 0, "kind": "negation"},
        {"corpus": "aci", "label": 1, "kind": "negation_said"},
    ]
    corpora, labels, kinds = train_verifier.pair_counts(rows)
    assert corpora == {"aci": 2, "mts": 2}
    assert labels == {"aci:0": 1, "aci:1": 1, "mts:0": 1, "mts:1": 1}
    assert kinds == {"negation": 2, "negation_said": 1, "reference": 1}
    assert list(kinds) == sorted(kinds)


def test_models_are_averaged_weight_by_weight_and_mismatches_are_named() -> None:
    import torch
    import train_verifier

    ones = {"a.weight": torch.ones(2, 3), "b.bias": torch.zeros(4)}
    other = {"a.weight": torch.full((2, 3), 3.0, dtype=torch.float16), "b.bias": torch.ones(4)}
    half = train_verifier.averaged([ones, other])
    assert torch.equal(half["a.weight"], torch.full((2, 3), 2.0))
    assert torch.equal(half["b.bias"], torch.full((4,), 0.5))
    assert half["a.weight"].dtype == torch.float32  # averaged in full precision
    third = train_verifier.averaged([ones, other, {k: 2 * v for k, v in ones.items()}])
    assert torch.allclose(third["a.weight"], torch.full((2, 3), 2.0))
    assert torch.allclose(third["b.bias"], torch.full((4,), 1 / 3))
    assert torch.equal(train_verifier.averaged([ones])["a.weight"], ones["a.weight"])
    # position ids are not weights and may be missing from an exported model
    assert "x.position_ids" not in train_verifier.averaged(
        [{**ones, "x.position_ids": torch.arange(3)}, other]
    )
    with pytest.raises(ValueError, match="c.weight"):
        train_verifier.averaged([{**ones, "c.weight": torch.ones(1)}, other])
    with pytest.raises(ValueError, match="b.bias"):
        train_verifier.averaged([ones, {**other, "b.bias": torch.ones(5)}])
    with pytest.raises(ValueError, match="no models"):
        train_verifier.averaged([])


def test_a_second_stage_trains_on_its_kinds_with_a_seeded_mix_of_the_rest() -> None:
    import train_verifier

    rows: list[dict[str, object]] = [{"kind": "reference", "n": i} for i in range(100)]
    rows += [{"kind": "answer_withdrawn", "n": i} for i in range(5)]
    rows += [{"kind": "answer_given", "n": i} for i in range(5)]
    kinds = ("answer_withdrawn", "answer_given")
    chosen = train_verifier.focused(rows, kinds, 3.0, seed=13)
    assert Counter(str(r["kind"]) for r in chosen) == {
        "answer_withdrawn": 5,
        "answer_given": 5,
        "reference": 30,
    }
    assert len({id(r) for r in chosen}) == len(chosen)  # no pair twice
    assert chosen == train_verifier.focused(rows, kinds, 3.0, seed=13)
    assert chosen != train_verifier.focused(rows, kinds, 3.0, seed=14)
    # more than there are: all of them
    assert len(train_verifier.focused(rows, kinds, 50.0, seed=13)) == len(rows)
    with pytest.raises(ValueError, match="no training pairs of kinds"):
        train_verifier.focused(rows, ("swapped_side",), 1.0, seed=13)


def test_a_second_stage_starts_from_the_exported_weights(tmp_path: Path) -> None:
    import torch
    import train_verifier
    from safetensors.torch import save_file
    from transformers import BertConfig, BertForSequenceClassification

    from core.grounding.learned import SETTINGS, WEIGHTS, WORD_EMBEDDINGS, embedding_checksum

    config = BertConfig(
        vocab_size=30,
        hidden_size=8,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=16,
        num_labels=1,
    )
    torch.manual_seed(1)
    exported = BertForSequenceClassification(config)
    state = {
        k: v.to(torch.float16)
        for k, v in exported.state_dict().items()
        if k != WORD_EMBEDDINGS and not k.endswith("position_ids")
    }
    save_file(state, str(tmp_path / WEIGHTS))
    torch.manual_seed(2)
    model = BertForSequenceClassification(config)
    words = model.state_dict()[WORD_EMBEDDINGS].clone()
    (tmp_path / SETTINGS).write_text(json.dumps({"embedding_checksum": embedding_checksum(words)}))
    train_verifier.load_exported(model, tmp_path)
    loaded = model.state_dict()
    assert torch.equal(loaded["classifier.weight"], state["classifier.weight"].float())
    assert torch.equal(loaded[WORD_EMBEDDINGS], words)  # the model's own, as exported without
    save_file({k: v for k, v in state.items() if k != "classifier.bias"}, str(tmp_path / WEIGHTS))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(ValueError, match="1 weights missing"):
        train_verifier.load_exported(model, tmp_path)
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())  # untouched
    save_file(state, str(tmp_path / WEIGHTS))
    (tmp_path / SETTINGS).write_text(json.dumps({"embedding_checksum": "0" * 16}))
    with pytest.raises(ValueError, match="other word embeddings"):
        train_verifier.load_exported(model, tmp_path)
    (tmp_path / SETTINGS).write_text(json.dumps({"embedding_checksum": embedding_checksum(words)}))
    train_verifier.load_exported(model, tmp_path)


ASKED = (
    "Doctor: What brings you in today?\n"
    "Patient: My right knee has been swollen for two weeks.\n"
    "Doctor: Do you have any allergies to medications?\n"
    "Patient: No.\n"
    "Doctor: Any tingling in your feet?\n"
    "Patient: Yes, twice a day.\n"
    "Doctor: Do you smoke? I see you quit smoking years ago.\n"
    "Patient: Yeah.\n"
    "Doctor: Is the knee still swollen?\n"
    "Patient: Yes.\n"
)


def test_an_answer_the_statement_rests_on_is_withdrawn_and_nothing_else_changes() -> None:
    from verifier_data import NON_ANSWERS, withdrawn_answer

    changed = withdrawn_answer("No known drug allergies.", ASKED, random.Random(1))
    assert changed is not None
    before, after = ASKED.split("\n"), changed.split("\n")
    assert [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b] == [3]
    assert after[3].removeprefix("Patient: ") in NON_ANSWERS
    again = withdrawn_answer("No known drug allergies.", ASKED, random.Random(1))
    assert again == changed  # seeded


@pytest.mark.parametrize(
    "statement",
    [
        "Right knee swollen for two weeks.",  # asked, but the patient says it too
        "Tingling in the feet twice a day.",  # the answer says more than yes or no
        "He quit smoking years ago.",  # the doctor's turn asserts it besides asking
        "No known heart disease.",  # no question asks it
    ],
)
def test_no_answer_is_withdrawn_where_the_statement_does_not_rest_on_one(statement: str) -> None:
    from verifier_data import withdrawn_answer

    assert withdrawn_answer(statement, ASKED, random.Random(1)) is None


def test_a_question_of_the_patient_or_a_dialogue_without_turns_gives_nothing() -> None:
    from verifier_data import withdrawn_answer

    asked_by_patient = "Patient: Do I need an X-ray of the knee?\nDoctor: Yes.\n"
    assert (
        withdrawn_answer("An X-ray of the knee was ordered.", asked_by_patient, random.Random(0))
        is None
    )
    ascii_transcript = "[doctor] any allergies to medications ? [patient] no ."
    assert withdrawn_answer("No known drug allergies.", ascii_transcript, random.Random(0)) is None


@pytest.mark.parametrize(
    ("transcript", "reply"),
    [
        # ACI-Bench's transcripts: the reply written as they write theirs
        ("[doctor] any allergies to medications ?\n[patient] no .\n", "[patient] "),
        # a relative answers; another clinician asks
        ("Doctor_2: Any allergies to medications?\nGuest_family: No.\n", "Guest_family: "),
    ],
)
def test_an_answer_is_withdrawn_whoever_asks_and_answers_and_however_turns_are_tagged(
    transcript: str, reply: str
) -> None:
    from verifier_data import NON_ANSWERS, withdrawn_answer

    changed = withdrawn_answer("No known drug allergies.", transcript, random.Random(0))
    assert changed is not None
    line = changed.split("\n")[1]
    assert line.startswith(reply)
    said = line.removeprefix(reply)
    styled = {
        r.lower().replace(",", " ,").replace(".", " .").replace("?", " ?") for r in NON_ANSWERS
    }
    assert said in (styled if reply.startswith("[") else set(NON_ANSWERS))


def test_versions_of_a_withdrawn_answer_each_have_another_reply() -> None:
    from verifier_data import withdrawn_answer, withdrawn_answers

    three = withdrawn_answers("No known drug allergies.", ASKED, random.Random(1), copies=3)
    assert len(three) == len(set(three)) == 3
    assert all(
        [i for i, (a, b) in enumerate(zip(ASKED.split("\n"), t.split("\n"), strict=True)) if a != b]
        == [3]
        for t in three
    )
    one = withdrawn_answers("No known drug allergies.", ASKED, random.Random(1))
    assert one == [withdrawn_answer("No known drug allergies.", ASKED, random.Random(1))]
    assert three[0] == one[0]  # the first version is drawn as one alone would be


def test_the_benchmark_withdraws_answers_in_words_no_training_pair_uses() -> None:
    from grounding_mts import answer_cases
    from verifier_data import HELD_OUT_NON_ANSWERS, NON_ANSWERS

    trained = frozenset().union(*(evidence_keys(r) for r in NON_ANSWERS))
    for reply in HELD_OUT_NON_ANSWERS:
        assert evidence_keys(reply), reply
        assert not evidence_keys(reply) & trained, reply
    cases = answer_cases([("No known drug allergies.", ASKED)] * 8, seed=1)
    assert len(cases) == 8
    replies = set()
    for statement, dialogue, without in cases:
        assert (statement, dialogue) == ("No known drug allergies.", ASKED)
        (line,) = set(without.split("\n")) - set(ASKED.split("\n"))
        replies.add(line.removeprefix("Patient: "))
    assert replies <= set(HELD_OUT_NON_ANSWERS)
    assert len(replies) > 1


def _asked_rows(recipe: Any, replies: Any = None) -> list[Any]:
    """The pairs ``recipe`` makes of a visit (:data:`ASKED`) whose note rests "No known drug
    allergies." on a bare "No.", read by a verifier whose embedder gives every text one
    vector (each statement means what its evidence does)."""
    from types import SimpleNamespace

    import verifier_data as vd

    from core.grounding import GroundingVerifier

    class SameDirection:
        def encode(self, texts: list[str]) -> np.ndarray:
            return np.full((len(texts), 4), 0.5)

    verifier = SimpleNamespace(
        evidence_texts=GroundingVerifier(embedder=None).evidence_texts, embedder=SameDirection()
    )
    note = "No known drug allergies. The right knee has been swollen for two weeks."
    enc = vd.Encounter("mts", "train.csv", "7", "train", ASKED, note, "")
    return vd.encounter_rows(enc, verifier, random.Random(5), [], Counter(), recipe, replies)


def test_the_recipe_adds_withdrawn_answers_as_negatives_and_moves_nothing_else() -> None:
    import verifier_data as vd

    rows = _asked_rows

    plain, withdrawn = rows(vd.Recipe()), rows(vd.Recipe(withdrawn_share=1.0))
    added = [r for r in withdrawn if r not in plain]
    assert [r for r in withdrawn if r in plain] == plain
    assert [(r.statement, r.label, r.kind) for r in added] == [
        ("No known drug allergies.", 0, "answer_withdrawn")
    ]
    (positive,) = [r for r in plain if r.statement == added[0].statement and r.label == 1]
    assert "Patient: No." in positive.evidence
    assert "Patient: No." not in added[0].evidence
    # a share above 1: that many versions of each, every other pair as it was
    twice = rows(vd.Recipe(withdrawn_share=2.0))
    assert [r for r in twice if r in plain] == plain
    more = [r for r in twice if r not in plain]
    assert len(more) == len({r.evidence for r in more}) == 2
    assert {(r.statement, r.label, r.kind) for r in more} == {
        ("No known drug allergies.", 0, "answer_withdrawn")
    }


def test_replies_are_harvested_from_transcripts_by_what_they_answer() -> None:
    import verifier_data as vd

    dialogue = (
        "Doctor: Any allergies to medications?\n"
        "Patient: What do you mean by that?\n"
        "Doctor: Any chest pain?\n"
        "Patient: Uh , no .\n"
        "Doctor: Do you smoke?\n"
        "Patient: Yes, I do.\n"
        "Doctor: Any fevers?\n"
        "Patient: I don't know of any.\n"  # answers no, in words of its own
        "Doctor: Any family history of cancer?\n"
        "Patient: I don't know.\n"
        "Doctor: Are you eating?\n"
        "Patient: Pardon me?\n"  # a word of a held-out reply
        "Doctor: Any cough?\n"
        "Patient: Sorry, what was that?\n"  # three words in a row of one
        "Doctor: How is the pain?\n"
        "Patient: What, like cancer?\n"  # a topic of its own
        "Doctor: Is it worse?\n"
        "Patient: Yes, she did.\n"  # of someone else
        "Doctor: Any nausea?\n"
        "Patient: No, just me.\n"  # more than a no
        "Doctor: Do you drink?\n"
        "Patient: Maybe?\n"  # a hedge that leans
        "Patient: What do you mean?\n"  # no question before it
        "Doctor: Good to hear.\n"
        "Patient: Hello?\n"  # after a turn that asks nothing
    )
    enc = vd.Encounter("mts", "train.csv", "1", "train", dialogue, "", "")
    replies = vd.harvest_replies([enc, enc], held_out=vd.HELD_OUT_NON_ANSWERS)
    assert replies == vd.Replies(
        nothing=("I don't know.", "What do you mean by that?"),
        yes=("Yes, I do.",),
        no=("Uh, no.",),
    )
    assert vd.reply_polarity("No, not that I know of.") == "no"
    assert vd.reply_polarity("Yep. Uh, no.") is None
    assert vd.reply_polarity("Okay.") is None


def test_harvested_replies_withdraw_answers_and_say_them_in_other_words() -> None:
    import verifier_data as vd

    own = vd.Replies(
        nothing=("What do you mean by that?", "I can't remember."),
        yes=("Yeah, I do.", "Yep."),
        no=("Nope.", "Uh, no.", "No, I don't.", "No."),
    )

    def rows(recipe: vd.Recipe) -> list[vd.Row]:
        return _asked_rows(recipe, own)

    plain = rows(vd.Recipe())
    # replies at hand change nothing until the recipe says to use them
    assert rows(vd.Recipe(withdrawn_share=3.0)) == _asked_rows(vd.Recipe(withdrawn_share=3.0))
    harvested = rows(vd.Recipe(withdrawn_share=3.0, harvested=True))
    assert [r for r in harvested if r in plain] == plain
    added = [r for r in harvested if r not in plain]
    assert {(r.statement, r.label, r.kind) for r in added} == {
        ("No known drug allergies.", 0, "answer_withdrawn"),
        ("No known drug allergies.", 1, "answer_given"),
    }
    (positive,) = [r for r in plain if r.statement == added[0].statement and r.label == 1]
    before = positive.evidence.split("\n")
    assert "Patient: No." in before
    replies: dict[int, list[str]] = {0: [], 1: []}
    for r in added:  # each differs from the answered positive in the reply alone
        after = r.evidence.split("\n")
        (line,) = [b for a, b in zip(before, after, strict=True) if a != b]
        replies[r.label].append(line.removeprefix("Patient: "))
    withdrawn, given = replies[0], replies[1]
    assert len(withdrawn) == len(set(withdrawn)) == 3
    assert set(withdrawn) <= set(vd.NON_ANSWERS + own.nothing)
    # the answer was "No.": said again by other patients' noes, never its own words again
    assert len(given) == len(set(given)) == 3
    assert set(given) <= {"Nope.", "Uh, no.", "No, I don't."}
