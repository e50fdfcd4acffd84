"""The shipped learned verifier, loaded from the package, on hand-written clinical cases."""

from __future__ import annotations

import json
import time

import pytest

from core.grounding import GroundingVerifier, SourceChunk
from core.grounding.splits import ACI_TEST, MTS_TEST, split_of
from tests.fhir_records import METFORMIN, bundle_text

pytestmark = pytest.mark.model

VISIT = (
    "Doctor: What brings you in today?\n"
    "Patient: My right knee has been swollen and sore for about two weeks, since I fell "
    "off a ladder.\n"
    "Doctor: Are you taking anything for it?\n"
    "Patient: Ibuprofen, four hundred milligrams, twice a day.\n"
    "Doctor: Any fever or chills?\n"
    "Patient: No, none.\n"
    "Doctor: Do you smoke?\n"
    "Patient: I quit about ten years ago.\n"
    "Doctor: On exam there is swelling of the right knee with mild tenderness. Let's get an "
    "X-ray of the right knee and see you back in two weeks.\n"
)


@pytest.fixture(scope="module")
def verifier() -> GroundingVerifier:
    from core.backends.embedder import get_embedder
    from core.grounding.learned import get_support_model

    return GroundingVerifier(embedder=get_embedder(), learned=get_support_model())


# Known misses of the shipped model, kept as strict expected failures so that they are seen
# (and a model that fixes them must say so here). The third version fixed two of the
# second's: "An X-ray ... was ordered" (said by the visit) is now grounded, and "He reports
# fever and chills" against "Any fever or chills?" "No, none." is now flagged. The
# combination of step functions (2026-11-29), which asks more of the model where the rules
# do not ground a statement, flags two more: a changed smoking history that adds a dose ("a
# pack a day") and an invented condition the visit never names. What is left: the changed
# smoking history said plainly ("a current smoker" for "I quit") and an invented duration,
# read as the visit's topic.
KNOWN_MISS = pytest.mark.xfail(strict=True, reason="known miss of the shipped model")


@pytest.mark.parametrize(
    "statement",
    [
        "The patient reports swelling of the right knee for two weeks after a fall.",
        "She takes ibuprofen 400 mg twice daily.",
        "He denies fever or chills.",
        "An X-ray of the right knee was ordered.",
    ],
)
def test_supported_statements_are_grounded(verifier: GroundingVerifier, statement: str) -> None:
    (result,) = verifier.verify_statements([statement], [SourceChunk("visit", VISIT, "transcript")])
    assert result.status == "grounded", (result.reason, result.signals)
    assert result.support is not None
    assert result.support >= verifier.combination["threshold"]  # type: ignore[index]


@pytest.mark.parametrize(
    ("statement", "word"),
    [
        ("An MRI of the right knee was ordered.", "MRI"),  # invented order
        ("She takes ibuprofen 800 mg twice daily.", "800"),  # wrong dose
        ("She takes naproxen 400 mg twice daily.", "naproxen"),  # another drug
        ("He reports fever and chills.", None),  # negation
        ("The patient reports swelling of the left knee for two weeks.", "left"),  # wrong side
        ("He currently smokes a pack a day.", None),  # changed social history, with a dose
        pytest.param("He is a current smoker.", None, marks=KNOWN_MISS),  # and without one
        ("She was referred to cardiology.", "cardiology"),  # invented referral
        pytest.param(  # invented duration
            "He has been taking ibuprofen for two years.", None, marks=KNOWN_MISS
        ),
        # an invented condition, where the visit names none to compare it with
        ("He has a history of gout in the right knee.", None),
    ],
)
def test_hallucinations_are_flagged(
    verifier: GroundingVerifier, statement: str, word: str | None
) -> None:
    (result,) = verifier.verify_statements([statement], [SourceChunk("visit", VISIT, "transcript")])
    assert result.status in ("unsupported", "contradicted"), result.signals
    if word is not None:  # the word a reviewer should check is marked
        marked = [statement[a:b] for a, b in result.unsupported_words]
        assert any(word in m for m in marked), marked


ASKED = (
    "Doctor: Do you get any tingling in your hands?\n"
    "Patient: Well, the headache gets worse when I look at screens.\n"
    "Doctor: And your mood, how has that been?\n"
    "Patient: Fine, thanks.\n"
)


@KNOWN_MISS
def test_a_question_never_answered_is_not_a_finding(verifier: GroundingVerifier) -> None:
    # a clinician's question the patient never answered, reported as a finding: the model
    # reads the question's words as the visit's (model card, "Questions reported as facts")
    (result,) = verifier.verify_statements(
        ["She reports tingling in her hands."], [SourceChunk("visit", ASKED, "transcript")]
    )
    assert result.status in ("unsupported", "contradicted"), result.signals


def test_the_model_reads_a_statement_against_its_opposite(verifier: GroundingVerifier) -> None:
    visit = [SourceChunk("visit", VISIT, "transcript")]
    wrong, right = verifier.verify_statements(
        ["He reports fever and chills.", "He denies fever or chills."], visit
    )
    # the visit ("Any fever or chills?" "No, none.") bears out the opposite of the first,
    # and the signal says by how many log-odds
    assert dict(wrong.signals)["opposite"] > 0 > dict(right.signals)["opposite"]
    assert wrong.status == "contradicted"
    assert "reports" in [wrong.statement[a:b] for a, b in wrong.unsupported_words]
    assert right.status == "grounded"


def test_a_markdown_summary_is_judged_on_its_statements_not_its_headings(
    verifier: GroundingVerifier,
) -> None:
    # an LLM's answer in Markdown: a heading read as a statement is supported by no source,
    # and its low support became the whole answer's support score
    summary = (
        "**Summary of Visit**\n\n"
        "**History of Present Illness:**\n"
        "- Swelling of the right knee for two weeks after a fall from a ladder.\n"
        "- Takes **ibuprofen** 400 mg twice daily.\n\n"
        "### Social History\n"
        "- Quit smoking about ten years ago.\n\n"
        "**Plan**\n"
        "1. *X-ray of the right knee.*\n"
    )
    result = verifier.verify(summary, [SourceChunk("visit", VISIT, "transcript")])
    assert [s.statement for s in result.statements] == [
        "Swelling of the right knee for two weeks after a fall from a ladder.",
        "Takes **ibuprofen** 400 mg twice daily.",
        "Social history: Quit smoking about ten years ago.",
        "X-ray of the right knee.",
    ]
    assert result.overall_grounded, [(s.statement, s.status) for s in result.statements]
    bold = result.statements[1]
    # the model read the statement without its bold marks, as the same words in plain text
    (plain,) = verifier.verify_statements(
        ["Takes ibuprofen 400 mg twice daily."], [SourceChunk("visit", VISIT, "transcript")]
    )
    assert bold.support == pytest.approx(plain.support)


def test_a_markdown_table_is_judged_row_by_row(verifier: GroundingVerifier) -> None:
    answer = (
        "| Drug | Dose | When |\n|---|---|---|\n| Ibuprofen | 800 mg | twice a day |\n\n"
        "| Finding | Side |\n|---|---|\n| Swollen knee | right |\n"
    )
    result = verifier.verify(answer, [SourceChunk("visit", VISIT, "transcript")])
    dose, side = result.statements
    assert (dose.statement, side.statement) == (
        "Ibuprofen | 800 mg | twice a day",
        "Swollen knee | right",
    )
    assert dose.status == "contradicted"  # the visit's dose is four hundred milligrams
    assert [dose.statement[a:b] for a, b in dose.unsupported_words] == ["800 mg"]
    assert side.status == "grounded"


def test_an_html_answer_is_judged_as_the_text_it_shows(verifier: GroundingVerifier) -> None:
    # an LLM front end's answer in HTML: read with its tags, it was one statement
    answer = (
        "<h3>History</h3><ul><li>Swelling of the <b>right</b> knee for two weeks.</li>"
        "<li>Takes ibuprofen 800 mg twice daily.</li></ul>"
    )
    result = verifier.verify(answer, [SourceChunk("visit", VISIT, "transcript")])
    knee, dose = result.statements
    assert (knee.statement, dose.statement) == (
        "Swelling of the right knee for two weeks.",
        "Takes ibuprofen 800 mg twice daily.",
    )
    assert answer[knee.start : knee.end].startswith("Swelling of the <b>right</b>")
    assert knee.status == "grounded"
    assert dose.status == "contradicted"  # the visit's dose is four hundred milligrams
    assert "800 mg" in [dose.statement[a:b] for a, b in dose.unsupported_words]


LISTS_VISIT = (
    "Doctor: Any allergies?\n"
    "Patient: Penicillin, it gives me hives.\n"
    "Doctor: And what do you take?\n"
    "Patient: Metformin for my diabetes, and amoxicillin for a sinus infection.\n"
    "Doctor: Anything in the family?\n"
    "Patient: My father had a stroke.\n"
)


@pytest.mark.parametrize(
    "statement",
    [
        "## Allergies\n- Penicillin",
        "## Medications\n- Metformin",
        "**Medications:** amoxicillin",
        "FAMILY HISTORY\n\nStroke.",
    ],
)
def test_a_fact_under_its_label_is_grounded(verifier: GroundingVerifier, statement: str) -> None:
    (result,) = verifier.verify(
        statement, [SourceChunk("visit", LISTS_VISIT, "transcript")]
    ).statements
    assert ":" in result.statement  # judged with its label
    assert result.status == "grounded", (result.statement, result.signals)


# The shipped model was trained before statements kept their labels: it reads a label as the
# visit's topic, and grounds every one of these (known misses, kept in sight).
@KNOWN_MISS
@pytest.mark.parametrize(
    "statement",
    [
        "## Allergies\n- Amoxicillin",  # taken, not an allergy
        "## Medications\n- Penicillin",  # an allergy, not taken
        "Past medical history: stroke.",  # the father's
    ],
)
def test_a_fact_under_the_label_of_another_kind_is_flagged(
    verifier: GroundingVerifier, statement: str
) -> None:
    # with the label cut off, "Amoxicillin" was an exact match of the visit
    (result,) = verifier.verify(
        statement, [SourceChunk("visit", LISTS_VISIT, "transcript")]
    ).statements
    assert result.status in ("unsupported", "contradicted"), (result.statement, result.signals)


# A clinician's note in shorthand as the source, and an answer about it in plain words; and
# the other way round, a note in shorthand checked against its visit.
SHORTHAND_NOTE = (
    "45M c/o SOB 3/7, worse on exertion. PMHx: HTN, T2DM. DHx: metformin 500mg BD. NKDA. "
    "O/E: BP 150/90, HR 96. Plan: CXR."
)


@pytest.mark.parametrize(
    "statement",
    [
        "He has been short of breath for three days.",
        "He takes metformin 500 mg twice a day.",
        "His blood pressure was 150/90.",
        "A chest X-ray was ordered.",
    ],
)
def test_a_note_in_shorthand_bears_out_what_it_says(
    verifier: GroundingVerifier, statement: str
) -> None:
    result = verifier.verify_statement(statement, [SourceChunk("n", SHORTHAND_NOTE, "note")])
    assert result.status == "grounded", (result.support, result.signals)


@pytest.mark.parametrize(
    ("statement", "changed"),
    [
        ("He takes metformin 500 mg three times a day.", "three times"),
        ("His blood pressure was 160/90.", "160/90"),
    ],
)
def test_a_note_in_shorthand_contradicts_a_changed_specific(
    verifier: GroundingVerifier, statement: str, changed: str
) -> None:
    result = verifier.verify_statement(statement, [SourceChunk("n", SHORTHAND_NOTE, "note")])
    assert result.status == "contradicted", (result.support, result.signals)
    assert changed in [statement[a:b] for a, b in result.unsupported_words]


def test_shorthand_in_a_statement_is_read_as_the_visit_says_it(
    verifier: GroundingVerifier,
) -> None:
    visit = (
        "Doctor: How is your breathing?\n"
        "Patient: I get breathless walking up hills, for about two weeks now.\n"
        "Doctor: And when was your last period?\n"
        "Patient: About three days ago.\n"
    )
    for statement in ("SOBOE for 2/52.", "LMP 3/7 ago."):
        result = verifier.verify_statement(statement, [SourceChunk("v", visit, "transcript")])
        assert result.status == "grounded", (statement, result.support, result.signals)
        assert result.unsupported_words == ()


def test_learned_tier_reports_ok_and_support_score(verifier: GroundingVerifier) -> None:
    result = verifier.verify(
        "The right knee is swollen. An MRI was ordered.",
        [SourceChunk("visit", VISIT, "transcript")],
    )
    assert result.checks["learned"].status == "ok"
    assert result.checks["inference"].status == "ok"  # the learned verifier is that tier
    assert [s.status for s in result.statements][0] == "grounded"
    assert result.statements[1].status != "grounded"
    assert result.support_score == pytest.approx(
        min(s.support for s in result.statements if s.support is not None)
    )
    payload = result.to_dict()
    assert payload["statements"][1]["unsupported_words"][0]["text"] == "MRI"


def test_model_loads_within_its_budget() -> None:
    from core.grounding.learned import SupportModel

    started = time.perf_counter()
    model = SupportModel()
    elapsed = time.perf_counter() - started
    assert model.predict([("The knee is swollen.", "Patient: my knee is swollen.")])[0] > 0.5
    # not a speed target (benchmarks measure those): a load that takes a minute is a bug
    assert elapsed < 60


def test_bf16_linear_weights_score_as_autocast_does() -> None:
    """In bf16 the linear layers' weights are rounded once at load; the scores are those of
    float32 weights rounded by autocast on every call, to the bit."""
    import copy

    import torch

    from core.grounding.learned import SupportModel, model_inputs

    model = SupportModel(precision="bf16")
    pairs = [
        ("He denies chest pain.", "Doctor: any chest pain? Patient: no, none."),
        ("She takes metformin 500 mg twice daily.", "Patient: I take metformin 1000 mg."),
        ("An MRI of the left knee was ordered.", "Doctor: let's get an X-ray of the knee."),
    ]
    rounded = model.logits(pairs)
    pairs = [model_inputs(s, e) for s, e in pairs]
    reference = copy.deepcopy(model._model).float()
    assert all(p.dtype == torch.float32 for p in reference.parameters())
    batch = model._tokenizer(
        [s for s, _ in pairs],
        [e for _, e in pairs],
        truncation="longest_first",
        max_length=model.max_length,
        padding=True,
        return_tensors="pt",
    )
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
        expected = reference(**batch).logits.float().reshape(-1).numpy()
    assert rounded.tolist() == expected.tolist()
    assert any(p.dtype == torch.bfloat16 for p in model._model.parameters())


def test_weights_ship_as_half_precision_safetensors_under_50_mb() -> None:
    from core.grounding.learned import MODEL_DIR, WEIGHTS, shipped_settings

    path = MODEL_DIR / WEIGHTS
    assert path.stat().st_size < 50_000_000
    with path.open("rb") as fh:  # safetensors: an 8-byte header length, then JSON
        header_len = int.from_bytes(fh.read(8), "little")
        header = fh.read(header_len).decode("utf-8")
    assert '"dtype":"F16"' in header.replace(" ", "")
    settings = shipped_settings()
    assert settings["combination"]["threshold"] > 0
    assert (MODEL_DIR / "MODEL_CARD.md").is_file()


def test_shipped_manifest_names_no_test_file() -> None:
    from core.grounding.learned import shipped_settings

    training = shipped_settings()["training"]
    assert training["train_pairs_by_corpus"], "the manifest lists the training corpora"
    files = [f for names in training["clinical_files"].values() for f in names]
    assert files
    for name in (*ACI_TEST, *MTS_TEST):
        assert not any(name in f for f in files), name
    for f in files:  # each file named is one the rule lets train
        name = f.split("/")[1].split(" ")[0]
        if name.endswith(".csv"):
            dataset = "aci" if f.startswith("aci_bench") else "mts"
            assert split_of(dataset, name, "1") == "train"


RECORD = bundle_text(
    {
        "resourceType": "AllergyIntolerance",
        "clinicalStatus": {"coding": [{"code": "active"}]},
        "verificationStatus": {"coding": [{"code": "confirmed"}]},
        "code": {"coding": [{"system": "http://snomed.info/sct", "display": "Penicillin"}]},
        "reaction": [{"manifestation": [{"text": "hives"}]}],
    },
    METFORMIN,
    {
        "resourceType": "Observation",
        "code": {
            "coding": [
                {"system": "http://loinc.org", "code": "4548-4", "display": "Hemoglobin A1c"}
            ]
        },
        "valueQuantity": {"value": 7.8, "unit": "%"},
    },
    {
        "resourceType": "Condition",
        "clinicalStatus": {"coding": [{"code": "active"}]},
        "code": {"text": "type 2 diabetes mellitus"},
    },
)


@pytest.mark.parametrize(
    ("statement", "grounded"),
    [
        ("She is allergic to penicillin, which gives her hives.", True),
        ("She takes metformin 500 mg twice daily.", True),
        ("Her HbA1c is 7.8%.", True),
        ("She has type 2 diabetes.", True),
        ("She takes metformin 1000 mg twice daily.", False),  # wrong dose
        ("She is on warfarin 5 mg daily.", False),  # a drug the record does not list
        ("Her HbA1c is 6.1%.", False),  # wrong value
        ("She was referred to cardiology.", False),  # invented referral
    ],
)
def test_a_fhir_record_is_read_as_sentences(
    verifier: GroundingVerifier, statement: str, grounded: bool
) -> None:
    source = [SourceChunk("record", RECORD, "document")]
    (result,) = verifier.verify_statements([statement], source)
    assert result.is_grounded is grounded, (result.status, result.reason, result.signals)
    # the evidence is the sentence read, located in the record as stored
    assert result.evidence_start is not None
    located = json.loads(RECORD[result.evidence_start : result.evidence_end])
    assert "resourceType" in located
    assert "http" not in (result.supporting_evidence or "")


def test_structured_reading_can_be_turned_off_and_a_batch_reads_alike(
    verifier: GroundingVerifier,
) -> None:
    answer = "She takes metformin 500 mg twice daily. Her HbA1c is 6.1%."
    source = [SourceChunk("record", RECORD, "document")]
    one = verifier.verify(answer, source)
    (batch,) = verifier.verify_batch([(answer, source)])
    assert [s.status for s in batch.statements] == [s.status for s in one.statements]
    assert [s.evidence_start for s in batch.statements] == [
        s.evidence_start for s in one.statements
    ]
    raw = GroundingVerifier(
        embedder=verifier.embedder, learned=verifier.learned, structured=False
    ).verify(answer, source)
    assert any("{" in (s.supporting_evidence or "") for s in raw.statements)
    assert not any("{" in (s.supporting_evidence or "") for s in one.statements)
