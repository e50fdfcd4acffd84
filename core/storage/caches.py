"""The database behind the backends' caches: embeddings by (model, content hash) and LLM
responses by request key (:mod:`core.backends.caches` declares both protocols), and the LLM
calls' token and latency accounting.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from core.backends.caches import ChatResponse
from core.storage.db import insert_for, read_session, write_session
from core.storage.models import EmbeddingCache, LLMCall


class DbEmbeddingStore:
    """Embeddings persisted by (model, content hash) so nothing is embedded twice."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        with read_session(self.engine) as session:
            for start in range(0, len(hashes), 500):
                chunk = list(hashes[start : start + 500])
                stmt = select(col(EmbeddingCache.content_hash), col(EmbeddingCache.vector)).where(
                    col(EmbeddingCache.model) == model,
                    col(EmbeddingCache.content_hash).in_(chunk),
                )
                for h, blob in session.execute(stmt):
                    out[h] = np.frombuffer(blob, dtype=np.float32).copy()
        return out

    def put_many(self, model: str, vectors: dict[str, np.ndarray]) -> None:
        if not vectors:
            return
        now = datetime.now(UTC)
        with write_session(self.engine) as session:
            rows = [
                {
                    "model": model,
                    "content_hash": h,
                    "dim": int(v.shape[0]),
                    "vector": np.asarray(v, dtype=np.float32).tobytes(),
                    "created_at": now,
                }
                for h, v in vectors.items()
            ]
            stmt = insert_for(session)(EmbeddingCache.__table__)  # type: ignore[attr-defined]
            session.execute(
                stmt.on_conflict_do_nothing(index_elements=["model", "content_hash"]), rows
            )


class DbLLMCache:
    """LLM responses and their accounting, keyed by (model, messages, parameters)."""

    def __init__(self, engine: Engine, *, purpose: str | None = None) -> None:
        self.engine = engine
        self.purpose = purpose

    def get(self, key: str) -> ChatResponse | None:
        with read_session(self.engine) as session:
            row = session.execute(
                select(LLMCall).where(col(LLMCall.cache_key) == key)
            ).scalar_one_or_none()
        if row is None or row.response_text is None:
            return None
        return ChatResponse(
            text=row.response_text,
            model=row.model,
            prompt_tokens=row.prompt_tokens,
            completion_tokens=row.completion_tokens,
            latency_ms=row.latency_ms,
            cached=True,
            finish_reason=row.finish_reason,
        )

    def put(self, key: str, response: ChatResponse) -> None:
        with write_session(self.engine) as session:
            stmt = insert_for(session)(LLMCall.__table__).values(  # type: ignore[attr-defined]
                cache_key=key,
                model=response.model,
                response_text=response.text,
                prompt_tokens=response.prompt_tokens,
                completion_tokens=response.completion_tokens,
                latency_ms=response.latency_ms,
                finish_reason=response.finish_reason,
                purpose=self.purpose,
                created_at=datetime.now(UTC),
            )
            session.execute(stmt.on_conflict_do_nothing(index_elements=["cache_key"]))


def llm_usage(*, session: Session, since: datetime | None = None) -> dict[str, float]:
    """Token and latency totals of LLM calls (cost tracking)."""
    conds = [col(LLMCall.created_at) >= since] if since else []
    row = session.execute(
        select(
            func.count(),
            func.coalesce(func.sum(LLMCall.prompt_tokens), 0),
            func.coalesce(func.sum(LLMCall.completion_tokens), 0),
            func.coalesce(func.sum(LLMCall.latency_ms), 0.0),
        ).where(*conds)
    ).one()
    return {
        "calls": int(row[0]),
        "prompt_tokens": int(row[1]),
        "completion_tokens": int(row[2]),
        "latency_ms": float(row[3]),
    }


__all__ = [
    "DbEmbeddingStore",
    "DbLLMCache",
    "llm_usage",
]
