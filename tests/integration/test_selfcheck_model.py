"""SelfCheck with the real MiniLM model and a real (tiny, self-built) NLI cross-encoder."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.backends.embedder import get_embedder
from core.backends.nli import NLIModel
from core.selfcheck import (
    SelfCheckCombined,
    SelfCheckEmbedding,
    SelfCheckNLI,
    SemanticEntropy,
)

pytestmark = [pytest.mark.model, pytest.mark.slow]

ANSWER = [
    "The patient takes metformin 500 mg twice daily for type 2 diabetes.",
    "Her blood pressure was 128/82 at the last visit.",
    "She had a kidney transplant in Boston in 2015.",
]
SAMPLES = [
    "The patient takes metformin 500 mg twice a day for type 2 diabetes. "
    "Her blood pressure at the last visit was 128/82.",
    "She is on metformin 500 mg twice daily for her diabetes. Blood pressure was 128/82.",
    "Metformin 500 mg twice daily controls her type 2 diabetes. "
    "At her last visit her blood pressure measured 128/82. She has no surgical history.",
]


def test_embedding_flags_the_sentence_no_sample_says() -> None:
    result = SelfCheckEmbedding(encoder=get_embedder()).predict(ANSWER, SAMPLES)
    assert result.status.ran
    assert result.model == get_embedder().model_name  # "-bf16" with the bfloat16 transformer
    assert result.model.startswith("all-MiniLM-L6-v2")
    assert None not in result.scores
    scores = [float(s or 0.0) for s in result.scores]
    assert max(scores) == scores[2]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores[2] - max(scores[:2]) > 0.2


def test_combined_with_the_real_encoder() -> None:
    result = SelfCheckCombined(encoder=get_embedder()).predict(ANSWER, SAMPLES)
    assert result.status.ran
    assert result.variant in ("with_embedding", "no_embedding")
    scores = [float(s or 0.0) for s in result.scores]
    assert scores.index(max(scores)) == 2


def test_semantic_entropy_with_minilm_groups_paraphrases() -> None:
    answers = [
        "The dose is 500 mg twice daily.",
        "The dose is 500 mg twice a day.",
        "She takes 500 mg two times daily.",
        "The patient was never prescribed this drug.",
    ]
    result = SemanticEntropy(encoder=get_embedder(), similarity_threshold=0.8).predict(answers)
    assert result.clustering == "embedding"
    assert result.cluster_ids[0] == result.cluster_ids[1]
    assert result.cluster_ids[3] != result.cluster_ids[0]
    assert result.entropy is not None
    assert result.entropy > 0
    same = SemanticEntropy(encoder=get_embedder()).predict([answers[0]] * 3)
    assert same.entropy == pytest.approx(0.0)
    assert same.risk_level == "very_low"


@pytest.fixture(scope="module")
def tiny_nli(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A randomly initialised three-label BERT cross-encoder saved like a real NLI model."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    folder = tmp_path_factory.mktemp("tiny-nli")
    words = sorted(
        {w.strip(".,/").lower() for text in ANSWER + SAMPLES for w in text.split()} - {""}
    )
    vocab = folder / "vocab.txt"
    vocab.write_text(
        "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n", encoding="utf-8"
    )
    tokenizer = BertTokenizer(str(vocab))
    torch.manual_seed(0)
    config = BertConfig(  # type: ignore[call-arg]
        vocab_size=len(tokenizer.vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=128,
        num_labels=3,
        id2label={0: "contradiction", 1: "entailment", 2: "neutral"},
        label2id={"contradiction": 0, "entailment": 1, "neutral": 2},
    )
    BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_nli_detector_loads_and_scores_with_a_real_cross_encoder(tiny_nli: Path) -> None:
    model = NLIModel(str(tiny_nli))
    result = SelfCheckNLI(model=model).predict(ANSWER, SAMPLES)
    assert result.status.ran
    assert result.model == tiny_nli.name
    assert all(s is not None and 0.0 <= s <= 1.0 for s in result.scores)
    assert result.risk_score == pytest.approx(result.passage_score)
    entropy = SemanticEntropy(nli_model=model).predict([SAMPLES[0], SAMPLES[0], SAMPLES[1]])
    assert entropy.clustering == "nli"
    assert entropy.status.ran
