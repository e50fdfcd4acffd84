"""The real MiniLM embedder: the fast encoder against SentenceTransformer.encode, bf16 against
fp32, parallel against serial, cache keys, threads, kernel shapes."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence

import numpy as np
import pytest

from core.backends.embedder import Embedder, bf16_packing, get_embedder, native_bf16
from core.config import reset_settings_cache

pytestmark = pytest.mark.model

SENTENCES = [
    "Assessment: type 2 diabetes, well controlled on metformin 500 mg twice daily.",
    "Hypertension treated with lisinopril 10 mg daily.",
    "He denies chest pain or shortness of breath.",
    "Exam shows swelling of the left knee.",
    "Blood pressure 132/84, pulse 72.",
    "[patient] my left knee is still swollen , it hurts when i climb stairs .",
    "[doctor] and you are taking the lisinopril ten milligrams every day ?",
    "[patient] yes , every morning .",
    "She has a history of hypothyroidism diagnosed 4 years ago.",
    "HbA1c was 7.2% at the last visit three months ago.",
    "Continue atorvastatin and recheck labs in 6 weeks.",
    "Follow up in clinic in 2 weeks or sooner if symptoms worsen.",
    "The patient reports right shoulder pain after a fall 3 days ago.",
    "No known drug allergies.",
    "Plan: MRI of the lumbar spine, physical therapy twice a week, ibuprofen as needed.",
    "[doctor] any fever , chills or night sweats ?",
    "[patient] no , nothing like that .",
    "Mother had breast cancer at 52; father has coronary artery disease.",
    "She quit smoking in 2019 and drinks alcohol socially.",
    "Omeprazole 20 mg daily for GERD, symptoms are controlled.",
    "ok",
    "Patient is a 58 year old male with congestive heart failure who presents today for "
    "follow-up of his chronic problems, reporting fatigue and lightheadedness for five weeks.",
]


class DictStore:
    """An in-memory EmbeddingStore that records which model keys were asked for."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str], np.ndarray] = {}
        self.asked: list[str] = []

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        self.asked.append(model)
        return {h: self.rows[(model, h)] for h in hashes if (model, h) in self.rows}

    def put_many(self, model: str, vectors: dict[str, np.ndarray]) -> None:
        for h, v in vectors.items():
            self.rows[(model, h)] = v


@pytest.fixture(scope="module")
def fp32() -> Embedder:
    return get_embedder(None, "fp32", 1)  # the float32 path, one batch at a time


@pytest.fixture(scope="module")
def bf16() -> Embedder:
    return get_embedder(None, "bf16", 2)


LONG = " ".join(f"word{k}" for k in range(400))  # past the model's 256-token truncation
ODD = "  Café:  BP\t132/84 mmHg ; pulse 72 bpm — no known drug allergies (NKDA).  "


@pytest.fixture(scope="module")
def st_fp32() -> Embedder:
    return Embedder(None, precision="fp32", workers=1, fast=False)  # SentenceTransformer.encode


@pytest.fixture(scope="module")
def st_bf16() -> Embedder:
    return Embedder(None, precision="bf16", workers=2, fast=False)


def test_the_fast_encoder_gives_the_vectors_of_sentence_transformers(
    fp32: Embedder, st_fp32: Embedder
) -> None:
    assert (fp32.encoder, st_fp32.encoder) == ("fast", "sentence-transformers")
    texts = [*SENTENCES, LONG, ODD, ""]
    a, b = fp32._encode_raw(texts), st_fp32._encode_raw(texts)
    assert a.shape == b.shape == (len(texts), 384)
    assert np.allclose(a, b, atol=2e-5)


def test_the_fast_bf16_encoder_stays_within_accuracy(
    bf16: Embedder, st_bf16: Embedder, st_fp32: Embedder
) -> None:
    """Against the bf16 vectors of SentenceTransformer.encode (cosine 0.9995, the accuracy
    bar) and against float32 as close as they are."""
    texts = [*SENTENCES, LONG, ODD]
    fast, plain, full = (
        bf16._encode_raw(texts),
        st_bf16._encode_raw(texts),
        st_fp32._encode_raw(texts),
    )
    assert bf16.encoder == "fast"
    assert (fast * plain).sum(axis=1).min() >= 0.9995
    assert (fast * full).sum(axis=1).min() >= min(0.9995, float((plain * full).sum(axis=1).min()))
    assert np.allclose(np.linalg.norm(fast, axis=1), 1.0, atol=1e-5)


def test_fast_tokens_are_those_of_the_model_tokenizer(bf16: Embedder) -> None:
    assert bf16._fast is not None
    texts = [*SENTENCES, LONG, ODD]
    expected = bf16._model.tokenizer(
        [t.strip() for t in texts], truncation=True, max_length=bf16._model.max_seq_length
    )["input_ids"]
    got = bf16._fast.tokenize(texts)
    assert got == [list(ids) for ids in expected]
    assert len(got[-2]) == bf16._model.max_seq_length == 256


def test_matrix_products_see_a_bounded_set_of_row_counts(bf16: Embedder) -> None:
    """oneDNN makes a kernel per new shape (milliseconds each): token rows are padded so that
    the matrix products only ever see the shapes the embedder made when it was loaded."""
    assert bf16._fast is not None
    made = set(range(32, 513, 32))
    for total in range(1, 3000):
        rows = bf16._fast.padded_rows(total)
        assert total <= rows < total + 32
        assert rows % 512 in made | {0}
    # per-shape kernels exist only where bfloat16 weights are packed for oneDNN
    assert bf16._fast.warm() == (len(made) if bf16_packing() else 0)


def test_unscripted_fast_encoder_gives_the_same_vectors(
    monkeypatch: pytest.MonkeyPatch, bf16: Embedder
) -> None:
    import torch

    def refuse(*_: object, **__: object) -> None:
        raise RuntimeError("no TorchScript")

    monkeypatch.setattr(torch.jit, "script", refuse)
    eager = Embedder(None, precision="bf16", workers=2)
    assert eager.encoder == "fast-eager"
    assert np.allclose(eager._encode_raw(SENTENCES), bf16._encode_raw(SENTENCES), atol=1e-6)


def test_a_model_the_fast_encoder_cannot_run_keeps_sentence_transformers(
    monkeypatch: pytest.MonkeyPatch, st_bf16: Embedder
) -> None:
    from core.backends import embedder as module

    def unsupported(*_: object, **__: object) -> None:
        raise ValueError("not a plain BERT encoder")

    monkeypatch.setattr(module, "_FastEncoder", unsupported)
    plain = Embedder(None, precision="bf16", workers=2)
    assert plain.encoder == "sentence-transformers"
    # the plain path still gets its packed layers, where this CPU can pack them
    assert (plain.packed_linears >= 36) if bf16_packing() else (plain.packed_linears == 0)
    assert np.allclose(plain._encode_raw(SENTENCES), st_bf16._encode_raw(SENTENCES), atol=1e-6)


def test_a_fast_encoder_with_other_vectors_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    from core.backends import embedder as module

    real = module._FastEncoder.encode

    def shuffled(self: object, rows: Sequence[Sequence[int]]) -> np.ndarray:
        return np.roll(real(self, rows), 1, axis=1)  # type: ignore[arg-type]

    monkeypatch.setattr(module._FastEncoder, "encode", shuffled)
    checked = Embedder(None, precision="fp32", workers=1)
    assert checked.encoder == "sentence-transformers"


def test_empty_lists_encode_to_no_rows(bf16: Embedder) -> None:
    assert bf16._encode_raw([]).shape == (0, 384)
    assert bf16.encode([]).shape == (0, 384)


def test_bf16_vectors_stay_close_to_fp32(fp32: Embedder, bf16: Embedder) -> None:
    assert fp32.model_name == "all-MiniLM-L6-v2"
    assert bf16.model_name == "all-MiniLM-L6-v2-bf16"
    a, b = fp32._encode_raw(SENTENCES), bf16._encode_raw(SENTENCES)
    assert a.dtype == b.dtype == np.float32
    assert np.allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    same = (a * b).sum(axis=1)
    assert same.min() >= 0.999
    assert np.abs(a @ a.T - b @ b.T).max() <= 0.01
    # still a different computation: the cache key must differ (see the next test)
    assert not np.array_equal(a, b)


def test_bf16_and_fp32_vectors_are_never_mixed_in_the_store(fp32: Embedder, bf16: Embedder) -> None:
    text = f"Visit {uuid.uuid4().hex}: metformin 500 mg twice daily."
    store = DictStore()
    first = fp32.with_store(store).encode([text])[0]
    assert store.asked == ["all-MiniLM-L6-v2"]
    view = bf16.with_store(store)
    before = view.encoded_count
    second = view.encode([text])[0]
    # the float32 vector of the same text was there, but under another key: encoded again
    assert store.asked == ["all-MiniLM-L6-v2", "all-MiniLM-L6-v2-bf16"]
    assert view.encoded_count == before + 1
    assert {model for model, _ in store.rows} == {"all-MiniLM-L6-v2", "all-MiniLM-L6-v2-bf16"}
    assert float(first @ second) >= 0.999


def test_parallel_encoding_matches_one_batch_at_a_time(fp32: Embedder) -> None:
    parallel = get_embedder(None, "fp32", 2)
    assert parallel.workers == 2
    rng = np.random.default_rng(0)
    texts = [SENTENCES[i] for i in rng.permutation(len(SENTENCES))]
    texts += [f"{s} ({k})" for k, s in enumerate(SENTENCES)]  # 44 texts, several parts
    serial = fp32._encode_raw(texts)
    split = parallel._encode_raw(texts)
    assert split.shape == (len(texts), parallel.dimension)
    # row k is still the vector of texts[k] (the parts were put back in order)
    assert np.allclose(split, serial, atol=1e-5)


def test_workers_run_single_threaded_kernels_and_restore_the_setting(
    monkeypatch: pytest.MonkeyPatch, bf16: Embedder
) -> None:
    import threading

    import torch

    assert bf16._fast is not None
    seen: list[tuple[int, str]] = []
    real = bf16._fast.encode
    # each part waits for the other to start: two workers side by side pass, one worker
    # taking both parts in turn (however the scheduler orders them) breaks the barrier
    both_running = threading.Barrier(2, timeout=60)

    def recording(rows: Sequence[Sequence[int]]) -> np.ndarray:
        seen.append((torch.get_num_threads(), threading.current_thread().name))
        both_running.wait()
        return real(rows)

    monkeypatch.setattr(bf16._fast, "encode", recording)
    before = torch.get_num_threads()
    bf16._encode_raw([f"{s} [{uuid.uuid4().hex[:6]}]" for s in SENTENCES])
    assert len(seen) == 2  # one forward pass per worker
    assert {threads for threads, _ in seen} == {1}
    assert len({name for _, name in seen}) == 2  # side by side on the two workers
    assert all(name.startswith("embedder") for _, name in seen)
    assert torch.get_num_threads() == before


def test_sentence_transformers_workers_run_single_threaded_kernels(st_bf16: Embedder) -> None:
    import torch

    seen: list[int] = []
    first = st_bf16._model[0]
    handle = first.register_forward_hook(lambda *_: seen.append(torch.get_num_threads()))
    before = torch.get_num_threads()
    try:
        st_bf16._encode_raw([f"{s} [{uuid.uuid4().hex[:6]}]" for s in SENTENCES])
    finally:
        handle.remove()
    assert len(seen) >= 2  # at least one forward pass per worker
    assert set(seen) == {1}
    assert torch.get_num_threads() == before


def test_the_setting_chooses_the_shared_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROUNDWATCH_EMBEDDING_PRECISION", "fp32")
    monkeypatch.setenv("GROUNDWATCH_EMBEDDING_WORKERS", "1")
    reset_settings_cache()
    chosen = get_embedder()
    assert chosen is get_embedder(None, "fp32", 1)
    assert (chosen.model_name, chosen.precision, chosen.workers) == ("all-MiniLM-L6-v2", "fp32", 1)
    monkeypatch.setenv("GROUNDWATCH_EMBEDDING_PRECISION", "auto")
    reset_settings_cache()
    auto = get_embedder()
    assert auto.precision == ("bf16" if native_bf16() else "fp32")


def test_logs_carry_no_text(caplog: pytest.LogCaptureFixture, bf16: Embedder) -> None:
    caplog.set_level(logging.DEBUG)
    sentinel = f"zebra{uuid.uuid4().hex}"
    Embedder(None, precision="bf16", workers=2).encode([f"{sentinel} {s}" for s in SENTENCES])
    assert caplog.records  # the load is logged ...
    for record in caplog.records:
        assert sentinel not in record.getMessage()  # ... without any text


def test_bf16_linear_layers_are_packed_once_with_the_same_vectors(
    monkeypatch: pytest.MonkeyPatch, bf16: Embedder, st_bf16: Embedder
) -> None:
    import torch

    from core.backends import embedder as module

    if not bf16_packing():
        # an AVX2 CPU (or a PyTorch without these oneDNN ops): nothing is packed, the plain
        # bfloat16 layers stay, and the vectors are those of the plain model
        assert bf16.packed_linears == st_bf16.packed_linears == 0
        assert any(isinstance(m, torch.nn.Linear) for m in st_bf16._model[0].modules())
        a, b = bf16._encode_raw(SENTENCES), st_bf16._encode_raw(SENTENCES)
        assert (a * b).sum(axis=1).min() >= 0.9995
        return
    assert bf16.packed_linears == 24  # fast encoder: 6 layers x (qkv, out, up, down)
    assert st_bf16.packed_linears >= 36  # 6 layers x (q, k, v, out, up, down)
    linears = [m for m in st_bf16._model[0].modules() if isinstance(m, torch.nn.Linear)]
    assert linears == []

    original = module._pack_linears

    def broken(target: object) -> int:
        original(target)
        raise RuntimeError("unsupported")

    monkeypatch.setattr(module, "_pack_linears", broken)
    # packing fails half-way: rolled back
    plain = Embedder(None, precision="bf16", workers=1, fast=False)
    assert plain.packed_linears == 0
    assert any(isinstance(m, torch.nn.Linear) for m in plain._model[0].modules())
    a, b = st_bf16._encode_raw(SENTENCES), plain._encode_raw(SENTENCES)
    assert (a * b).sum(axis=1).min() >= 0.9999  # the same up to bfloat16 rounding
    assert (bf16._encode_raw(SENTENCES) * b).sum(axis=1).min() >= 0.9995


def test_concurrent_callers_share_one_embedder(bf16: Embedder) -> None:
    """Dashboard sessions and the pipeline may encode at once: the shared tokenizer is
    serialised, so no call fails and every caller gets the vectors of its own texts."""
    import threading

    expected = dict(zip(SENTENCES, bf16._encode_raw(SENTENCES), strict=True))
    errors: list[BaseException] = []

    def caller(k: int) -> None:
        try:
            for r in range(4):
                texts = [SENTENCES[(i * (k + 1) + r) % len(SENTENCES)] for i in range(32)]
                got = bf16._encode_raw(texts)
                want = np.stack([expected[t] for t in texts])
                assert (got * want).sum(axis=1).min() >= 0.9999
        except BaseException as exc:  # noqa: BLE001 - collected and re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=caller, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
