"""Answer grounding with the real backends: MiniLM, an NLI cross-encoder, the local LLM."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.grounding import GroundingVerifier, SourceChunk

NOTE = (
    "Assessment: Type 2 diabetes, well controlled on metformin 500 mg twice daily. "
    "Hypertension treated with lisinopril 10 mg daily. He denies chest pain or shortness "
    "of breath. Exam shows swelling of the left knee. Blood pressure 132/84."
)
DIALOGUE = (
    "[doctor] how is the knee ?\n"
    "[patient] my left knee is still swollen , it hurts when i climb stairs .\n"
    "[doctor] any chest pain ?\n"
    "[patient] no .\n"
    "[doctor] and you are taking the lisinopril ten milligrams every day ?\n"
    "[patient] yes , every morning .\n"
)


@pytest.fixture(scope="module")
def embedder():  # type: ignore[no-untyped-def]
    from core.backends.embedder import get_embedder

    return get_embedder()


@pytest.fixture(scope="module")
def verifier(embedder) -> GroundingVerifier:  # type: ignore[no-untyped-def]
    return GroundingVerifier(embedder=embedder)


@pytest.mark.model
@pytest.mark.parametrize(
    ("statement", "status"),
    [
        ("His diabetes is well controlled with metformin.", "grounded"),
        ("The left knee is swollen.", "grounded"),
        ("He takes metformin 1000 mg twice daily.", "contradicted"),
        ("Blood pressure was 150/95.", "contradicted"),
        ("He reports chest pain.", "contradicted"),
        ("Exam shows swelling of the right knee.", "contradicted"),
        ("Hypertension treated with losartan 10 mg daily.", "contradicted"),
        ("He has a history of atrial fibrillation.", "unsupported"),
        ("The patient was started on warfarin.", "unsupported"),
    ],
)
def test_clinical_traps_with_minilm(
    verifier: GroundingVerifier, statement: str, status: str
) -> None:
    result = verifier.verify(statement, [SourceChunk("note", NOTE)])
    assert [s.status for s in result.statements] == [status]
    assert result.checks["semantic"].status in ("ok", "skipped")


@pytest.mark.model
def test_short_statements_far_from_their_sentence_with_minilm(verifier: GroundingVerifier) -> None:
    # MiniLM puts these below the 0.5 cosine of a note; the sentence that names their terms
    # decides them
    note = "Metformin 500 mg b.i.d., lisinopril 10 mg daily. PMH: type 2 diabetes (HbA1c 6.8%)."
    result = verifier.verify(
        "She takes metformin and lisinopril. She has no history of diabetes.",
        [SourceChunk("note", note)],
    )
    got = [(s.statement, s.status) for s in result.statements]
    assert got == [
        ("She takes metformin", "grounded"),
        ("She takes lisinopril", "grounded"),
        ("She has no history of diabetes.", "contradicted"),
    ]
    assert all(s.similarity is not None and s.similarity < 0.5 for s in result.statements[1:])


@pytest.mark.model
def test_note_sentences_against_a_dialogue(verifier: GroundingVerifier) -> None:
    src = [SourceChunk("visit", DIALOGUE, "transcript")]
    result = verifier.verify(
        "Left knee swelling with pain on stairs. He denies chest pain. "
        "He takes lisinopril 10 mg daily. He takes lisinopril 20 mg daily. "
        "He reports chest pain.",
        src,
    )
    assert [s.status for s in result.statements] == [
        "grounded",
        "grounded",
        "grounded",
        "contradicted",
        "contradicted",
    ]
    grounded = result.statements[2]
    assert grounded.evidence_start is not None
    assert grounded.evidence_end is not None
    assert DIALOGUE[grounded.evidence_start : grounded.evidence_end] == grounded.supporting_evidence
    assert "lisinopril" in (grounded.supporting_evidence or "")


@pytest.mark.model
def test_batch_equals_single(verifier: GroundingVerifier) -> None:
    cases = [
        ("The left knee is swollen. He takes warfarin.", [SourceChunk("n", NOTE)]),
        ("He denies chest pain.", [SourceChunk("d", DIALOGUE, "transcript")]),
    ]
    assert [r.to_dict() for r in verifier.verify_batch(cases)] == [
        verifier.verify(a, s).to_dict() for a, s in cases
    ]


def _tiny_cross_encoder(path: Path, *, favour: str) -> str:
    """A randomly initialised 1-layer BERT NLI cross-encoder whose bias favours one label."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    words = "the a he she knee left right pain chest denies takes mri was normal swelling".split()
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    path.mkdir(parents=True, exist_ok=True)
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    labels = {0: "contradiction", 1: "entailment", 2: "neutral"}
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=128,
        num_labels=3,
        id2label=labels,
        label2id={v: k for k, v in labels.items()},
    )
    torch.manual_seed(0)
    model = BertForSequenceClassification(config)
    with torch.no_grad():
        model.classifier.weight.zero_()
        bias = torch.full((3,), -5.0)
        bias[{v: k for k, v in labels.items()}[favour]] = 5.0
        model.classifier.bias.copy_(bias)
    model.save_pretrained(path)
    BertTokenizer(str(path / "vocab.txt")).save_pretrained(path)
    return str(path)


@pytest.mark.model
def test_nli_tier_loads_a_cross_encoder_and_decides(
    tmp_path: Path,
    embedder,  # type: ignore[no-untyped-def]
) -> None:
    from core.backends.nli import NLIModel

    src = [SourceChunk("note", NOTE)]
    unrelated = "The MRI was normal."
    entailing = NLIModel(_tiny_cross_encoder(tmp_path / "ent", favour="entailment"))
    result = GroundingVerifier(embedder=embedder, nli=entailing).verify(unrelated, src)
    assert result.checks["nli"].status == "ok"
    assert result.checks["inference"].status == "ok"
    assert (result.statements[0].status, result.statements[0].verification_method) == (
        "grounded",
        "inference",
    )
    # the judge may not override a clinical conflict: the dose still differs
    dose = GroundingVerifier(embedder=embedder, nli=entailing).verify(
        "He takes metformin 1000 mg twice daily.", src
    )
    assert dose.statements[0].status == "contradicted"

    contradicting = NLIModel(_tiny_cross_encoder(tmp_path / "con", favour="contradiction"))
    result = GroundingVerifier(embedder=embedder, nli=contradicting).verify(unrelated, src)
    assert (result.statements[0].status, result.statements[0].verification_method) == (
        "contradicted",
        "inference",
    )


@pytest.mark.llm
def test_llm_judge_against_the_local_server(local_llm: str) -> None:
    from core.backends.llm import LLMClient

    with LLMClient(local_llm, timeout_s=120.0, max_retries=1) as client:
        verifier = GroundingVerifier(llm=client)
        result = verifier.verify(
            "The MRI of the brain was unremarkable. He denies chest pain.",
            [SourceChunk("note", NOTE)],
        )
        assert client.usage.calls >= 1
    # exact tier decides the second statement; the judge is asked about the first
    assert result.statements[1].status == "grounded"
    assert result.checks["llm_judge"].status == "ok"
    assert result.checks["inference"].status == "ok"
    assert result.statements[0].status in ("grounded", "unsupported", "contradicted")
    assert result.statements[0].verification_method in ("inference", "unsupported")


def test_unreachable_llm_judge_is_reported() -> None:
    from core.backends.llm import LLMClient

    with LLMClient("http://127.0.0.1:9", timeout_s=1.0, max_retries=0) as client:
        result = GroundingVerifier(llm=client).verify(
            "The MRI of the brain was unremarkable.", [SourceChunk("note", NOTE)]
        )
    assert result.checks["llm_judge"].status == "unavailable"
    assert result.statements[0].status == "unsupported"
