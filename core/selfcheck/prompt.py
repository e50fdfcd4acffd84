"""SelfCheck by asking an LLM whether each sample supports each sentence."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from core.backends.llm import ChatResponse, LLMError, Message
from core.checks import CheckStatus, failed, unavailable
from core.selfcheck._common import SelfCheckResult, build_result, not_run, validate_texts
from core.text import short_hash

log = logging.getLogger(__name__)

PROMPT_TEMPLATE = (
    "Context: {context}\n\nSentence: {sentence}\n\n"
    "Is the sentence supported by the context above? Answer Yes or No.\n\nAnswer: "
)
ANSWER_SCORES = {"yes": 0.0, "no": 1.0, "n/a": 0.5}


class ChatClient(Protocol):
    """Anything like :class:`core.backends.llm.LLMClient`."""

    model: str

    def chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        max_tokens: int = 256,
    ) -> ChatResponse: ...


def parse_answer(text: str) -> str:
    """``yes``, ``no`` or ``n/a``: the reply's first word, as in the SelfCheckGPT reference."""
    cleaned = text.lower().strip().lstrip("*\"' ")
    if cleaned.startswith("yes"):
        return "yes"
    if cleaned.startswith("no"):
        return "no"
    return "n/a"


class SelfCheckLLMPrompt:
    """The paper's prompt: "Is the sentence supported by the context above? Answer Yes or No".

    Each sample is the context once per sentence; Yes scores 0, No 1, anything else 0.5.
    Sentence score = mean over samples, range [0, 1], higher = more likely hallucinated.
    Risk = the passage score. An unreachable server or a timeout gives status
    ``unavailable``; a malformed reply gives ``failed``. Either way no partial scores are
    returned.

    Args:
        client: an OpenAI-compatible chat client, or ``None`` (status ``unavailable``).
        max_tokens: tokens generated per question (a Yes/No needs very few).
        temperature: sampling temperature of the judge (0: deterministic).
    """

    method = "llm"

    def __init__(
        self, *, client: ChatClient | None = None, max_tokens: int = 4, temperature: float = 0.0
    ) -> None:
        self.client = client
        self.max_tokens = max_tokens
        self.temperature = temperature

    def ask(self, sentence: str, context: str) -> str:
        """One question to the LLM; returns ``yes``, ``no`` or ``n/a``.

        Raises:
            LLMError: from the client (server down, timeout, malformed reply).
        """
        assert self.client is not None
        prompt = PROMPT_TEMPLATE.format(context=context.replace("\n", " "), sentence=sentence)
        reply = self.client.chat(
            [{"role": "user", "content": prompt}],
            temperature=self.temperature,
            max_tokens=self.max_tokens,
        )
        return parse_answer(reply.text)

    def predict(self, sentences: Sequence[str], samples: Sequence[str]) -> SelfCheckResult:
        """Score each sentence by asking the LLM about each sample (higher = worse).

        Raises:
            ValueError: empty or non-string sentences or samples.
        """
        sentences = validate_texts(sentences, name="sentences")
        samples = validate_texts(samples, name="samples")
        model = getattr(self.client, "model", None)
        if self.client is None:
            return not_run(
                "llm",
                sentences,
                status=unavailable("no LLM configured (GROUNDWATCH_LLM_BASE_URL)"),
                sample_count=len(samples),
            )
        answers: list[list[str]] = []
        done = 0
        try:
            for sentence in sentences:
                row = []
                for sample in samples:
                    row.append(self.ask(sentence, sample))
                    done += 1
                answers.append(row)
        except LLMError as exc:
            log.warning(
                "selfcheck llm stopped after %d of %d questions answer=%s: %s",
                done,
                len(sentences) * len(samples),
                short_hash(" ".join(sentences)),
                exc,
            )
            reason = f"{exc} (after {done} of {len(sentences) * len(samples)} questions)"
            status: CheckStatus = (
                unavailable(reason) if exc.status == "unavailable" else failed(reason)
            )
            return not_run("llm", sentences, status=status, sample_count=len(samples), model=model)
        scores = [sum(ANSWER_SCORES[a] for a in row) / len(row) for row in answers]
        unparsed = sum(a == "n/a" for row in answers for a in row)
        details = [{a: float(row.count(a)) for a in ("yes", "no", "n/a")} for row in answers]
        return build_result(
            "llm",
            sentences,
            scores,
            risk_score=sum(scores) / len(scores),
            sample_count=len(samples),
            details=details,
            model=model,
            extra={"unparsed_answers": unparsed},
        )
