"""SelfCheck detectors on hand-written samples, with fakes for the model backends."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence

import numpy as np
import pytest

from core.backends.llm import ChatResponse, LLMResponseError, LLMUnavailableError
from core.backends.nli import NLIScores
from core.selfcheck import (
    SelfCheckCombined,
    SelfCheckEmbedding,
    SelfCheckLLMPrompt,
    SelfCheckNgram,
    SelfCheckNLI,
    SemanticEntropy,
    UnigramModel,
    discrete_entropy,
    parse_answer,
    split_sentences,
)
from core.selfcheck.features import sentence_features, specifics
from core.selfcheck.weights import LogisticModel, SelfCheckWeights, load_weights

ANSWER = [
    "Anna Berg was born in Oslo in 1950.",
    "She studied medicine at the University of Bergen.",
    "She won the Nobel Prize in Chemistry in 1999.",
]
SAMPLES = [
    "Anna Berg was born in Oslo in 1950. She studied medicine at the University of Bergen. "
    "She later worked as a surgeon.",
    "Anna Berg (born 1950 in Oslo) is a Norwegian doctor. She studied medicine in Bergen.",
    "Born in Oslo in 1950, Anna Berg studied medicine at the University of Bergen and "
    "became a surgeon.",
]
SECRET = "Zyxwv Patientname"


class BagEncoder:
    """Fake encoder: normalised bag-of-words vectors over a hashed vocabulary."""

    model_name = "bag-of-words"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        rows = np.zeros((len(texts), 64), dtype=np.float64)
        for i, text in enumerate(texts):
            for word in text.lower().replace(".", " ").replace(",", " ").split():
                rows[i, sum(map(ord, word)) % 64] += 1.0
            norm = np.linalg.norm(rows[i])
            rows[i] /= norm if norm else 1.0
        return rows


class WordNLI:
    """Fake NLI: a hypothesis whose words are mostly absent from the premise is contradicted."""

    name = "word-nli"

    def predict(self, pairs: Sequence[tuple[str, str]]) -> NLIScores:
        contra, entail = [], []
        for premise, hypothesis in pairs:
            words = set(hypothesis.lower().strip(".").split())
            share = len(words & set(premise.lower().replace(".", "").split())) / len(words)
            contra.append(1.0 - share)
            entail.append(share)
        c, e = np.array(contra), np.array(entail)
        return NLIScores(entailment=e, contradiction=c, neutral=np.zeros_like(c))


class BrokenNLI:
    name = "broken"

    def predict(self, pairs: Sequence[tuple[str, str]]) -> NLIScores:
        raise RuntimeError(f"exploded on {pairs[0][1]}")


class ScriptedClient:
    """Fake chat client: replies from a script, or raises a given error."""

    model = "scripted"

    def __init__(self, replies: Sequence[str] = (), error: Exception | None = None) -> None:
        self.replies = list(replies)
        self.error = error
        self.prompts: list[str] = []

    def chat(self, messages, *, temperature=0.0, max_tokens=256):
        self.prompts.append(messages[-1]["content"])
        if self.error is not None:
            raise self.error
        text = self.replies[(len(self.prompts) - 1) % len(self.replies)]
        return ChatResponse(text, self.model, 10, 1, 1.0)


# --- reference definitions on small cases computed by hand ---------------------------------


def test_unigram_model_matches_hand_computation() -> None:
    model = UnigramModel()
    model.add("a b a")
    model.add("a c")
    assert model.token_count == 5
    assert model.log_prob("a", k=0) == pytest.approx(math.log(3 / 5))
    assert model.log_prob("c", k=0) == pytest.approx(math.log(1 / 5))
    assert model.log_prob("zzz", k=0) == -math.inf  # <unk> has count 0
    # add-one smoothing: vocabulary = a, b, c and <unk>
    assert model.log_prob("a", k=1) == pytest.approx(math.log(4 / 9))
    assert model.log_prob("zzz", k=1) == pytest.approx(math.log(1 / 9))


def test_ngram_sentence_scores_are_mean_and_max_neg_log_prob() -> None:
    detector = SelfCheckNgram(aggregate="max")
    result = detector.predict(["a b"], ["a c a"])
    # model over "a b" + "a c a": a=3, b=1, c=1 of 5 tokens
    row = dict(result.sentences[0].details)
    assert row["mean"] == pytest.approx((-math.log(3 / 5) - math.log(1 / 5)) / 2, abs=1e-6)
    assert row["max"] == pytest.approx(-math.log(1 / 5), abs=1e-6)
    assert result.sentences[0].score == pytest.approx(row["max"])
    mean_result = SelfCheckNgram(aggregate="mean").predict(["a b"], ["a c a"])
    assert mean_result.sentences[0].score == pytest.approx(row["mean"])
    assert mean_result.variant == "mean"


def test_embedding_score_is_one_minus_mean_best_cosine() -> None:
    vectors = {
        "s": np.array([1.0, 0.0]),
        "x1": np.array([1.0, 0.0]),
        "x2": np.array([0.0, 1.0]),
        "y1": np.array([0.6, 0.8]),
    }

    class TableEncoder:
        def encode(self, texts: Sequence[str]) -> np.ndarray:
            return np.stack([vectors[t] for t in texts])

    # sample 1 has sentences x1, x2 (best cosine 1.0); sample 2 has y1 (cosine 0.6)
    result = SelfCheckEmbedding(encoder=TableEncoder()).predict(["s"], ["x1", "y1"])
    assert result.sentences[0].score == pytest.approx(1 - (1.0 + 0.6) / 2)


def test_discrete_entropy_by_hand() -> None:
    assert discrete_entropy([0, 0, 0]) == pytest.approx(0.0)
    assert discrete_entropy([0, 1]) == pytest.approx(math.log(2))
    assert discrete_entropy([0, 0, 1, 2]) == pytest.approx(
        -(0.5 * math.log(0.5) + 0.5 * math.log(0.25))
    )


# --- each detector flags the sentence the samples disagree with -----------------------------


@pytest.mark.parametrize(
    "detector",
    [
        SelfCheckNgram(),
        SelfCheckNgram(aggregate="mean"),
        SelfCheckEmbedding(encoder=BagEncoder()),
        SelfCheckNLI(model=WordNLI()),
        SelfCheckCombined(),
    ],
    ids=["ngram-max", "ngram-mean", "embedding", "nli", "combined"],
)
def test_detector_flags_the_disagreeing_sentence(detector: object) -> None:
    result = detector.predict(ANSWER, SAMPLES)  # type: ignore[attr-defined]
    assert result.status.ran
    scores = result.scores
    assert int(np.argmax(scores)) == 2
    assert result.sample_count == 3
    assert 0.0 <= result.risk_score <= 1.0
    assert result.risk_level in ("very_low", "low", "medium", "high", "very_high")
    assert result.passage_score == pytest.approx(sum(scores) / 3, abs=1e-5)


def test_llm_prompt_scores_yes_no_other() -> None:
    client = ScriptedClient(["Yes, it is.", "No.", "Maybe"])
    result = SelfCheckLLMPrompt(client=client).predict(["Paris is in France."], ["a", "b", "c"])
    assert result.status.ran
    assert result.sentences[0].score == pytest.approx((0.0 + 1.0 + 0.5) / 3)
    assert result.extra["unparsed_answers"] == 1
    assert "Is the sentence supported by the context above? Answer Yes or No." in client.prompts[0]
    assert "Sentence: Paris is in France." in client.prompts[0]


def test_llm_prompt_flags_sentence_the_judge_rejects() -> None:
    # the judge says No only when asked about the prize sentence
    class Judge(ScriptedClient):
        def chat(self, messages, *, temperature=0.0, max_tokens=256):
            self.prompts.append(messages[-1]["content"])
            sentence = messages[-1]["content"].split("Sentence: ")[1]
            return ChatResponse("No" if "Nobel" in sentence else "Yes", "j", 1, 1, 1.0)

    result = SelfCheckLLMPrompt(client=Judge()).predict(ANSWER, SAMPLES)
    assert result.scores == [0.0, 0.0, 1.0]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Yes", "yes"),
        (" yes.", "yes"),
        ("No, never", "no"),
        ("**No**", "no"),
        ("I think", "n/a"),
        ("", "n/a"),
    ],
)
def test_parse_answer(text: str, expected: str) -> None:
    assert parse_answer(text) == expected


# --- statuses: never a silent empty result ---------------------------------------------------


def test_llm_prompt_without_client_is_unavailable() -> None:
    result = SelfCheckLLMPrompt().predict(ANSWER, SAMPLES)
    assert result.status.status == "unavailable"
    assert result.risk_score is None
    assert result.scores == [None, None, None]


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (LLMUnavailableError("LLM server unavailable: timeout"), "unavailable"),
        (LLMUnavailableError("LLM server unavailable: connection error"), "unavailable"),
        (LLMResponseError("malformed reply from LLM server"), "failed"),
    ],
)
def test_llm_prompt_errors_give_status(error: Exception, status: str) -> None:
    result = SelfCheckLLMPrompt(client=ScriptedClient(error=error)).predict(ANSWER, SAMPLES)
    assert result.status.status == status
    assert "after 0 of 9 questions" in (result.status.reason or "")
    assert result.passage_score is None


def test_nli_without_model_is_unavailable_and_errors_fail() -> None:
    assert SelfCheckNLI().predict(ANSWER, SAMPLES).status.status == "unavailable"
    broken = SelfCheckNLI(model=BrokenNLI()).predict(ANSWER, SAMPLES)
    assert broken.status.status == "failed"
    assert "RuntimeError" in (broken.status.reason or "")


def test_combined_without_weights_is_unavailable() -> None:
    empty = SelfCheckWeights(models={}, calibrations={}, meta={})
    result = SelfCheckCombined(weights=empty).predict(ANSWER, SAMPLES)
    assert result.status.status == "unavailable"


def test_combined_uses_given_weights() -> None:
    model = LogisticModel(
        features=("spec_unsupported_mean",), mean=(0.0,), scale=(1.0,), coef=(2.0,), intercept=-1.0
    )
    weights = SelfCheckWeights(models={"no_embedding": model}, calibrations={}, meta={})
    result = SelfCheckCombined(weights=weights).predict(ANSWER, SAMPLES)
    rows = sentence_features(ANSWER, SAMPLES)
    expected = [1 / (1 + math.exp(-(2.0 * r["spec_unsupported_mean"] - 1.0))) for r in rows]
    assert result.scores == pytest.approx(expected, abs=1e-6)
    assert result.variant == "no_embedding"


def test_shipped_weights_load() -> None:
    weights = load_weights()
    assert "no_embedding" in weights.models
    assert "ngram_max" in weights.calibrations


@pytest.mark.parametrize(
    ("samples", "message"),
    [
        ([], "samples: need at least one item"),
        (["ok", 3], "samples[1]: expected a string, got int"),
        (["ok", "  "], "samples[1]: empty text"),
        ("just a string", "samples: expected a list of strings, got str"),
    ],
)
def test_bad_samples_raise_clear_errors(samples: object, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        SelfCheckNgram().predict(ANSWER, samples)  # type: ignore[arg-type]


def test_result_to_dict_has_contract_keys() -> None:
    data = SelfCheckNgram().predict(ANSWER, SAMPLES).to_dict()
    assert {"method", "sentences", "passage_score", "risk_score", "risk_level"} <= set(data)
    assert data["method"] == "ngram"
    assert {"index", "text", "score"} <= set(data["sentences"][0])


# --- semantic entropy -------------------------------------------------------------------------


def test_semantic_entropy_embedding_clusters_same_meaning() -> None:
    answers = [
        "the dose is 5 mg",
        "the dose is 5 mg",
        "the dose is 5 mg daily",
        "stop the drug now",
    ]
    result = SemanticEntropy(encoder=BagEncoder(), similarity_threshold=0.85).predict(answers)
    assert result.clustering == "embedding"
    assert result.cluster_ids == (0, 0, 0, 1)
    assert result.entropy == pytest.approx(-(0.75 * math.log(0.75) + 0.25 * math.log(0.25)))
    assert result.entropy is not None
    assert result.normalized_entropy == pytest.approx(result.entropy / math.log(4))


def test_semantic_entropy_prefers_nli_then_llm() -> None:
    answers = ["aspirin daily", "aspirin daily", "warfarin weekly"]
    nli = SemanticEntropy(nli_model=WordNLI(), client=ScriptedClient(["No"]), encoder=BagEncoder())
    result = nli.predict(answers)
    assert result.clustering == "nli"
    assert result.n_clusters == 2
    llm = SemanticEntropy(client=ScriptedClient(["Yes"]), encoder=BagEncoder()).predict(answers)
    assert llm.clustering == "llm"
    assert llm.n_clusters == 1
    assert llm.entropy == pytest.approx(0.0)


def test_semantic_entropy_statuses() -> None:
    assert SemanticEntropy(encoder=BagEncoder()).predict(["one"]).status.status == "skipped"
    assert SemanticEntropy().predict(["a", "b"]).status.status == "unavailable"
    down = SemanticEntropy(client=ScriptedClient(error=LLMUnavailableError("down")))
    assert down.predict(["a", "b"]).status.status == "unavailable"
    bad = SemanticEntropy(client=ScriptedClient(error=LLMResponseError("garbage")))
    assert bad.predict(["a", "b"]).status.status == "failed"


# --- helpers and privacy -----------------------------------------------------------------------


def test_specifics_finds_names_and_numbers() -> None:
    assert specifics("She moved to Paris in 1999 with Dr. Smith.") == [
        "paris",
        "1999",
        "dr",
        "smith",
    ]
    assert specifics("He was born.") == []


def test_split_sentences() -> None:
    assert split_sentences("Dr. Smith saw her. She was well! Was she? Yes.") == [
        "Dr. Smith saw her.",
        "She was well!",
        "Was she?",
        "Yes.",
    ]


def test_no_patient_text_in_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    answer = [f"{SECRET} takes warfarin.", f"{SECRET} is 80."]
    samples = [f"{SECRET} takes aspirin."]
    for detector in (
        SelfCheckNgram(),
        SelfCheckEmbedding(encoder=BagEncoder()),
        SelfCheckNLI(model=BrokenNLI()),
        SelfCheckLLMPrompt(client=ScriptedClient(error=LLMUnavailableError("down"))),
        SelfCheckLLMPrompt(client=ScriptedClient(error=LLMResponseError("bad"))),
        SelfCheckCombined(),
    ):
        result = detector.predict(answer, samples)
        assert SECRET not in (result.status.reason or "")
    SemanticEntropy(client=ScriptedClient(error=LLMUnavailableError("down"))).predict(samples * 2)
    assert SECRET.lower() not in caplog.text.lower()
    assert "warfarin" not in caplog.text


def test_ngram_max_ties_are_ranked_by_mean_surprisal() -> None:
    """Two sentences each holding one word the samples never use tie on the published
    max score; the one whose words are rarer on the whole (the samples disagree with more of
    it) is ranked first, and the reported scores stay the published ones."""
    from core.selfcheck import SelfCheckNgram

    sentences = [
        "He takes metformin every day.",  # one word the samples never use
        "She was born in Paris to a sailor.",  # every content word unsupported
    ]
    samples = [
        "He takes aspirin every day. She was born in London.",
        "He takes aspirin every day. She was born in Leeds.",
    ]
    result = SelfCheckNgram(aggregate="max").predict(sentences, samples)
    first, second = result.sentences
    assert first.score == second.score  # the published max score ties
    assert dict(second.details)["mean"] > dict(first.details)["mean"]
    assert (second.rank, first.rank) == (1, 2)
    assert result.sentences[0].to_dict()["rank"] == 2
