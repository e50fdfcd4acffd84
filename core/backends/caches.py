"""What the backends ask of a persistent cache: the protocols the embedder and the LLM client
type against, and the chat response a response cache holds.

Storage implements both (:mod:`core.storage.caches`) and imports nothing else of the backends;
a file or an in-memory store does as well (benchmarks, tests). Nothing heavy is imported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np


class EmbeddingStore(Protocol):
    """Persistent cache of embeddings keyed by (model, content hash)."""

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]: ...

    def put_many(self, model: str, vectors: dict[str, np.ndarray]) -> None: ...


@dataclass(frozen=True, slots=True)
class ChatResponse:
    """One chat completion with its accounting."""

    text: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    cached: bool = False
    finish_reason: str | None = None


class ResponseCache(Protocol):
    """Stores chat responses by key (the database implements it, see storage.caches)."""

    def get(self, key: str) -> ChatResponse | None: ...

    def put(self, key: str, response: ChatResponse) -> None: ...


__all__ = ["ChatResponse", "EmbeddingStore", "ResponseCache"]
