"""The learned verifier: a cross-encoder that reads (statement, evidence) and says how likely
the evidence supports all of the statement.

It is all-MiniLM-L6-v2 fine-tuned as a cross-encoder on public claim/evidence data and on
clinical notes against their visits, with hallucinations generated from them as negatives
(``benchmarks/train_verifier.py``; the model card, ``core/data/verifier/MODEL_CARD.md``, says
on which data, how, and how well). The word embeddings stayed frozen during training, so the
package ships everything but them (``model.safetensors``, float16) and takes them from the
installed MiniLM package at load, after checking that they are the ones it was trained on.

Long sources are read much as published verifiers read them (AlignScore, MiniCheck): cut into
passages of about :data:`PASSAGE_WORDS` words; the :data:`EVIDENCE_PASSAGES` passages most like
the statement (by meaning and by the words they share) are joined into the evidence it is
read against, so that a statement drawing on two places of a visit can be borne out.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np

log = logging.getLogger(__name__)

MODEL_DIR = Path(__file__).resolve().parent.parent / "data" / "verifier"
WEIGHTS = "model.safetensors"
SETTINGS = "verifier.json"
PASSAGE_WORDS = 45  # a passage: consecutive source sentences of at most about this many words
EVIDENCE_PASSAGES = 2  # the best passages a statement is read against, joined
WORD_EMBEDDINGS = "bert.embeddings.word_embeddings.weight"


def model_inputs(statement: str, evidence: str) -> tuple[str, str]:
    """What the model reads: both texts with spelled-out numbers as digits ("forty five
    milligrams" -> "45 milligrams", "a week ago" -> "1 week ago"), so that a note's "45 mg"
    and a visit's spoken dose compare as the same token, and Markdown as prose (an LLM's
    "takes **metformin**" without its marks, a table row "Metformin | 500 mg" as "Metformin,
    500 mg"), which training never shows it. Training reads pairs the same way."""
    from core.grounding.facts import digits
    from core.text import as_prose

    return digits(as_prose(statement), ordinals=False), digits(as_prose(evidence))


class VerifierUnavailableError(RuntimeError):
    """The learned verifier could not be loaded (missing files, a different base model)."""


def embedding_checksum(tensor: Any) -> str:
    """Short SHA-256 of a float32 tensor's bytes: which word embeddings a model was made with."""
    data = tensor.detach().to("cpu").float().contiguous().numpy().tobytes()
    return hashlib.sha256(data).hexdigest()[:16]


def shipped_settings(model_dir: Path = MODEL_DIR) -> dict[str, Any]:
    """The shipped model's settings: maximum length, embedding checksum, calibration and
    the fitted combination (see the model card)."""
    path = model_dir / SETTINGS
    if not path.is_file():
        raise VerifierUnavailableError(f"no learned verifier settings at {path.name}")
    return dict(json.loads(path.read_text("utf-8")))


class SupportModel:
    """The cross-encoder: probability that the evidence supports the statement.

    Args:
        model_dir: folder with ``model.safetensors`` and ``verifier.json`` (default: shipped).
        precision: ``bf16`` runs the transformer in bfloat16 autocast (on a CPU with
            AVX512-BF16 or AMX about twice as fast), ``fp32`` in float32, ``auto`` picks
            ``bf16`` where the CPU has it (the embedder's rule).
        batch_size: pairs per forward pass.

    Raises:
        VerifierUnavailableError: files missing, or the installed MiniLM is not the one the
            model was trained on.
    """

    def __init__(
        self,
        model_dir: Path | str | None = None,
        *,
        precision: Literal["auto", "bf16", "fp32"] = "auto",
        batch_size: int = 32,
    ) -> None:
        started = time.perf_counter()
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        folder = Path(model_dir) if model_dir is not None else MODEL_DIR
        self.model_dir = folder
        self.settings = shipped_settings(folder)
        weights = folder / WEIGHTS
        if not weights.is_file():
            raise VerifierUnavailableError(f"no learned verifier weights at {weights.name}")
        try:
            import torch
            from safetensors.torch import load_file
            from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

            from core.backends.embedder import default_model_path, resolve_precision
        except ImportError as exc:  # pragma: no cover - dependencies of the package
            raise VerifierUnavailableError(f"missing dependency ({exc.name})") from exc
        base = Path(default_model_path())
        config = BertConfig.from_pretrained(base, num_labels=1)
        model = BertForSequenceClassification(config)
        state = load_file(weights)
        base_state = load_file(base / "model.safetensors")
        words = base_state["embeddings.word_embeddings.weight"]
        if embedding_checksum(words) != self.settings["embedding_checksum"]:
            raise VerifierUnavailableError(
                "the installed all-MiniLM-L6-v2 word embeddings are not those the learned "
                "verifier was trained with"
            )
        state = {k: v.float() for k, v in state.items()}
        state[WORD_EMBEDDINGS] = words
        missing, unexpected = model.load_state_dict(state, strict=False)
        missing = [k for k in missing if not k.endswith("position_ids")]
        if missing or unexpected:
            raise VerifierUnavailableError(
                f"learned verifier weights do not fit the model ({len(missing)} missing, "
                f"{len(unexpected)} unexpected)"
            )
        model.eval()
        self._torch = torch
        self._model = model
        self._tokenizer = AutoTokenizer.from_pretrained(base)
        self.max_length = int(self.settings.get("max_length", 160))
        self.batch_size = batch_size
        self.precision = resolve_precision(precision)
        if self.precision == "bf16":
            # autocast would round every linear layer's weights to bfloat16 on each call;
            # rounded once here, the scores are the same to the bit and a call is ~10 % faster
            for module in model.modules():
                if isinstance(module, torch.nn.Linear):
                    module.to(torch.bfloat16)
        self.version = str(self.settings.get("version", "unknown"))
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, float] = OrderedDict()
        log.info(
            "learned verifier loaded version=%s precision=%s in %.0f ms",
            self.version,
            self.precision,
            (time.perf_counter() - started) * 1000,
        )

    def logits(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Raw scores (log-odds of support) of (statement, evidence) pairs; a pair scored
        before in this process is not scored again."""
        if not pairs:
            return np.zeros(0, dtype=np.float32)
        torch = self._torch
        pairs = [model_inputs(s, e) for s, e in pairs]
        keys = [_pair_key(s, e) for s, e in pairs]
        out = np.zeros(len(pairs), dtype=np.float32)
        with self._lock:
            todo = []
            for i, key in enumerate(keys):
                cached = self._cache.get(key)
                if cached is None:
                    todo.append(i)
                else:
                    out[i] = cached
            first: dict[str, int] = {}
            for i in todo:  # a pair asked for twice is scored once
                first.setdefault(keys[i], i)
            unique = sorted(first.values(), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
            on = self.precision == "bf16"
            with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=on):
                for b in range(0, len(unique), self.batch_size):
                    rows = unique[b : b + self.batch_size]
                    batch = self._tokenizer(
                        [pairs[i][0] for i in rows],
                        [pairs[i][1] for i in rows],
                        truncation="longest_first",
                        max_length=self.max_length,
                        padding=True,
                        return_tensors="pt",
                    )
                    out[rows] = self._model(**batch).logits.float().reshape(-1).numpy()
            for i in todo:
                out[i] = out[first[keys[i]]]
                self._cache[keys[i]] = float(out[i])
                self._cache.move_to_end(keys[i])
            while len(self._cache) > _CACHE_PAIRS:
                self._cache.popitem(last=False)
        return out

    def predict(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Probability that each evidence supports its statement (uncalibrated sigmoid)."""
        return 1.0 / (1.0 + np.exp(-self.logits(pairs).astype(np.float64)))


_CACHE_PAIRS = 50_000  # scores kept per process (a few MB)


def _pair_key(statement: str, evidence: str) -> str:
    digest = hashlib.sha256(statement.encode("utf-8", "surrogatepass"))
    digest.update(b"\x00")
    digest.update(evidence.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


@lru_cache(maxsize=2)
def get_support_model(model_dir: str | None = None) -> SupportModel:
    """One shared :class:`SupportModel` per folder per process (loaded on first use)."""
    return SupportModel(model_dir)
