"""SelfCheck: multi-sample hallucination detectors and semantic entropy (phase 9).

Each detector takes an answer's sentences and N sampled answers to the same prompt and scores
each sentence, higher = more likely hallucinated (each class documents its range):

- :class:`SelfCheckNgram`: unigram language model over answer + samples (-log p, mean/max);
- :class:`SelfCheckEmbedding`: MiniLM, 1 - mean over samples of the best cosine;
- :class:`SelfCheckNLI`: mean contradiction probability (needs an NLI model);
- :class:`SelfCheckLearned`: mean probability that a sample does not bear the sentence out,
  by the learned verifier shipped in the package;
- :class:`SelfCheckLLMPrompt`: "Is the sentence supported by the context above?" via an LLM;
- :class:`SelfCheckCombined`: fitted logistic combination of offline signals;
- :class:`SemanticEntropy`: discrete semantic entropy over whole sampled answers.

All return frozen results with a :class:`core.checks.CheckStatus`; a detector that could not
run says why instead of returning empty scores.
"""

from __future__ import annotations

from core.selfcheck._common import (
    Method,
    SelfCheckResult,
    SentenceScore,
    split_sentences,
    tokenize,
    validate_texts,
)
from core.selfcheck.combined import SelfCheckCombined
from core.selfcheck.embedding import SelfCheckEmbedding
from core.selfcheck.entropy import SemanticEntropy, SemanticEntropyResult, discrete_entropy
from core.selfcheck.learned import SelfCheckLearned
from core.selfcheck.ngram import SelfCheckNgram, UnigramModel
from core.selfcheck.nli import SelfCheckNLI
from core.selfcheck.prompt import PROMPT_TEMPLATE, SelfCheckLLMPrompt, parse_answer

__all__ = [
    "PROMPT_TEMPLATE",
    "Method",
    "SelfCheckCombined",
    "SelfCheckEmbedding",
    "SelfCheckLLMPrompt",
    "SelfCheckLearned",
    "SelfCheckNLI",
    "SelfCheckNgram",
    "SelfCheckResult",
    "SemanticEntropy",
    "SemanticEntropyResult",
    "SentenceScore",
    "UnigramModel",
    "discrete_entropy",
    "parse_answer",
    "split_sentences",
    "tokenize",
    "validate_texts",
]
