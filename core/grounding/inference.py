"""Inference tier: an NLI cross-encoder or an LLM judge decides what similarity cannot."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from core.backends.llm import LLMClient
    from core.backends.nli import NLIModel

Verdict = Literal["entailed", "contradicted", "neutral", "unparseable"]


@dataclass(frozen=True, slots=True)
class Judgement:
    """Verdict of one judge on (evidence, statement), with its probability or confidence."""

    verdict: Verdict
    confidence: float
    evidence_index: int


def nli_judge(
    model: NLIModel, statement: str, evidence: list[str], *, threshold: float = 0.5
) -> Judgement:
    """Best NLI verdict over several evidence windows (premise = evidence).

    Entailment wins when any window entails the statement with probability >= threshold;
    otherwise a contradiction >= threshold; otherwise neutral.
    """
    scores = model.predict([(premise, statement) for premise in evidence])
    ent = [float(x) for x in scores.entailment]
    con = [float(x) for x in scores.contradiction]
    best_e = max(range(len(ent)), key=ent.__getitem__)
    if ent[best_e] >= threshold:
        return Judgement("entailed", ent[best_e], best_e)
    best_c = max(range(len(con)), key=con.__getitem__)
    if con[best_c] >= threshold:
        return Judgement("contradicted", con[best_c], best_c)
    return Judgement("neutral", 1.0 - max(ent[best_e], con[best_c]), best_e)


_JUDGE_SYSTEM = (
    "You check clinical statements against source text. Reply with exactly one word: "
    "SUPPORTED if the source states or clearly implies the statement, CONTRADICTED if the "
    "source states something incompatible (a different dose, side, value, or the opposite), "
    "or UNSUPPORTED if the source does not say."
)
_VERDICT_RE = re.compile(r"\b(SUPPORTED|CONTRADICTED|UNSUPPORTED|NOT SUPPORTED)\b", re.I)


def llm_judge(client: LLMClient, statement: str, evidence: list[str]) -> Judgement:
    """Ask an OpenAI-compatible model whether the evidence supports the statement.

    Raises:
        LLMError: the server is unavailable or its reply is malformed.
    """
    numbered = "\n".join(f"[{i + 1}] {text}" for i, text in enumerate(evidence))
    messages = [
        {"role": "system", "content": _JUDGE_SYSTEM},
        {"role": "user", "content": f"Source:\n{numbered}\n\nStatement: {statement}\n\nVerdict:"},
    ]
    reply = client.chat(messages, temperature=0.0, max_tokens=8, seed=0)
    match = _VERDICT_RE.search(reply.text)
    if match is None:
        return Judgement("unparseable", 0.0, 0)
    word = match.group(1).upper()
    if word == "SUPPORTED":
        return Judgement("entailed", 0.7, 0)
    if word == "CONTRADICTED":
        return Judgement("contradicted", 0.7, 0)
    return Judgement("neutral", 0.6, 0)
