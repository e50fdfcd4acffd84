"""SelfCheck on WikiBio GPT-3 (SelfCheckGPT paper, Table 2 protocol), 119 passages, 20 samples.

Prints NonFact / NonFact* / Factual AUC-PR and passage-level Pearson / Spearman (percent) for
the chosen method(s), next to the published rows (238 passages) and the rows computed from the
third-party reference scores on the same 119 passages, with passages/s per method.

    python benchmarks/selfcheck_wikibio.py --method all
    python benchmarks/selfcheck_wikibio.py --method combined+learned
    python benchmarks/selfcheck_wikibio.py --method combined --json
    python benchmarks/selfcheck_wikibio.py --method llm --limit 3 --samples 3 --local-llm

The combined detector is scored with passage-grouped 5-fold cross-validation: every passage is
scored by a model fitted on the other folds only. Timing excludes model loading.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.selfcheck import (  # noqa: E402
    SelfCheckEmbedding,
    SelfCheckLearned,
    SelfCheckLLMPrompt,
    SelfCheckNgram,
)
from core.selfcheck.features import FEATURES, NO_EMBEDDING_FEATURES, sentence_features  # noqa: E402
from core.selfcheck.fit import cross_validated_scores  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data"
LABELS = {"accurate": 0.0, "minor_inaccurate": 0.5, "major_inaccurate": 1.0}
SUBDIR = "wikibio_gpt3"
SAMPLES_FILE = "wikibio_gpt3_119_with_samples.json"
REFERENCE_FILE = "reference_scores_119.json"
OFFLINE = ("ngram", "ngram-mean", "embedding", "combined-noemb", "combined")
METHODS = (*OFFLINE, "learned", "combined+learned", "nli", "llm", "all")

# SelfCheckGPT paper, Table 2 (238 passages, N = 20 samples): NonFact, NonFact*, Factual,
# Pearson, Spearman (None where not reproduced here).
PUBLISHED: tuple[tuple[str, tuple[float | None, ...]], ...] = (
    ("published: random", (72.96, 29.72, 27.04, None, None)),
    ("published: BERTScore", (81.96, 45.96, 44.23, None, None)),
    ("published: Unigram(max)", (85.63, 41.04, 58.47, 64.71, None)),
    ("published: NLI", (92.50, 45.17, 66.08, 74.14, None)),
    ("published: prompt gpt-3.5", (93.42, 53.19, 67.09, 78.32, None)),
)


@dataclass(frozen=True, slots=True)
class Passage:
    sentences: list[str]
    labels: list[float]
    samples: list[str]


class FileEmbeddingStore:
    """Embeddings cached in one ``.npz`` file (an :class:`EmbeddingStore` for benchmark reruns).

    Saved every ``every`` new vectors and on :meth:`save`, so an interrupted run keeps its work.
    """

    def __init__(self, path: Path, *, every: int = 2000) -> None:
        self.path = path
        self.every = every
        self.vectors: dict[str, np.ndarray] = {}
        self._unsaved = 0
        if path.exists():
            with np.load(path) as data:
                self.vectors = {k: data[k] for k in data.files}

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        return {h: self.vectors[h] for h in hashes if h in self.vectors}

    def put_many(self, model: str, vectors: dict[str, np.ndarray]) -> None:
        self.vectors.update(vectors)
        self._unsaved += len(vectors)
        if self._unsaved >= self.every:
            self.save()

    def save(self) -> None:
        if not self._unsaved:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.stem + ".tmp.npz")
        np.savez(str(tmp), **self.vectors)  # type: ignore[arg-type]
        os.replace(tmp, self.path)
        self._unsaved = 0


def load_passages(data_dir: Path) -> list[Passage]:
    """The 119 passages with their 20 GPT-3 samples."""
    path = data_dir / SUBDIR / SAMPLES_FILE
    if not path.exists():
        raise SystemExit(f"error: {path} not found (see --data)")
    items = json.loads(path.read_text(encoding="utf-8"))
    return [
        Passage(
            sentences=list(item["gpt3_sentences"]),
            labels=[LABELS[a] for a in item["annotation"]],
            samples=list(item["gpt3_text_samples"]),
        )
        for item in items
    ]


def auc_pr(positive: np.ndarray, scores: np.ndarray) -> float:
    """Area under the precision-recall curve, ``auc(recall, precision)``, in percent."""
    from sklearn.metrics import auc, precision_recall_curve

    precision, recall, _ = precision_recall_curve(positive, scores)
    return 100.0 * float(auc(recall, precision))


def selfcheck_metrics(
    scores: np.ndarray, labels: np.ndarray, passage_ids: np.ndarray
) -> dict[str, float]:
    """NonFact, NonFact*, Factual AUC-PR and passage Pearson/Spearman, all in percent."""
    from scipy.stats import pearsonr, spearmanr

    ids = np.unique(passage_ids)
    mean_label = {i: labels[passage_ids == i].mean() for i in ids}
    keep = np.array([mean_label[i] < 1.0 for i in passage_ids])
    passage_scores = np.array([scores[passage_ids == i].mean() for i in ids])
    passage_labels = np.array([mean_label[i] for i in ids])
    return {
        "nonfact": auc_pr(labels > 0, scores),
        "nonfact_star": auc_pr(labels[keep] == 1.0, scores[keep]),
        "factual": auc_pr(labels == 0, -scores),
        "pearson": 100.0 * float(pearsonr(passage_scores, passage_labels)[0]),
        "spearman": 100.0 * float(spearmanr(passage_scores, passage_labels)[0]),
    }


def flat(passages: list[Passage]) -> tuple[np.ndarray, np.ndarray]:
    labels = np.array([lab for p in passages for lab in p.labels])
    ids = np.array([i for i, p in enumerate(passages) for _ in p.sentences])
    return labels, ids


def reference_rows(data_dir: Path, n: int) -> list[tuple[str, dict[str, float]]]:
    path = data_dir / SUBDIR / REFERENCE_FILE
    if not path.exists():
        return []
    items = json.loads(path.read_text(encoding="utf-8"))[:n]
    labels = np.array([LABELS[a] for it in items for a in it["annotation"]])
    ids = np.array([i for i, it in enumerate(items) for _ in it["annotation"]])
    rows = []
    for key, name in (("nli", "NLI deberta"), ("bert", "BERTScore"), ("prompt", "prompt gpt-3.5")):
        scores = np.array([s for it in items for s in it["scores"][key]], dtype=np.float64)
        rows.append((f"reference {n} passages: {name}", selfcheck_metrics(scores, labels, ids)))
    return rows


class Clock:
    """Wall-clock and CPU time of this process since creation."""

    def __init__(self) -> None:
        self.wall = time.perf_counter()
        self.cpu = time.process_time()

    def rates(self, n: int) -> tuple[float, float]:
        """(passages per wall second, passages per CPU second of this process)."""
        wall = time.perf_counter() - self.wall
        cpu = time.process_time() - self.cpu
        return n / max(wall, 1e-9), n / max(cpu, 1e-9)


def run_method(
    method: str, passages: list[Passage], *, encoder: object | None, client: object | None
) -> tuple[np.ndarray, tuple[float, float]]:
    """Sentence scores of one method over all passages, and passages per wall / CPU second."""
    clock = Clock()
    if method in ("ngram", "ngram-mean"):
        detector = SelfCheckNgram(aggregate="max" if method == "ngram" else "mean")
        scores = [s for p in passages for s in detector.predict(p.sentences, p.samples).scores]
    elif method == "embedding":
        emb = SelfCheckEmbedding(encoder=encoder)  # type: ignore[arg-type]
        scores = [s for p in passages for s in emb.predict(p.sentences, p.samples).scores]
    elif method == "learned":
        scores = [
            s for p in passages for s in _learned(encoder).predict(p.sentences, p.samples).scores
        ]
    elif method in ("combined", "combined-noemb", "combined+learned"):
        use = encoder if method != "combined-noemb" else None
        rows: list[dict[str, float]] = []
        groups: list[int] = []
        labels: list[bool] = []
        for i, p in enumerate(passages):
            feats = sentence_features(p.sentences, p.samples, encoder=use)  # type: ignore[arg-type]
            if method == "combined+learned":
                learned = _learned(encoder).predict(p.sentences, p.samples).scores
                feats = [
                    {**f, "learned": float(x or 0.0)} for f, x in zip(feats, learned, strict=True)
                ]
            rows.extend(feats)
            groups.extend([i] * len(feats))
            labels.extend(lab > 0 for lab in p.labels)
        names = {
            "combined": FEATURES,
            "combined-noemb": NO_EMBEDDING_FEATURES,
            "combined+learned": (*FEATURES, "learned"),
        }[method]
        rates = clock.rates(len(passages))
        oof = cross_validated_scores(rows, labels, groups, features=names)
        return oof, rates
    elif method == "llm":
        judge = SelfCheckLLMPrompt(client=client)  # type: ignore[arg-type]
        scores = []
        for p in passages:
            result = judge.predict(p.sentences, p.samples)
            if not result.status.ran:
                raise SystemExit(f"error: llm method did not run: {result.status}")
            scores.extend(result.scores)
    else:
        raise SystemExit(f"error: unknown method {method}")
    return np.array(scores, dtype=np.float64), clock.rates(len(passages))


_LEARNED: list[object] = []


def _learned(encoder: object | None) -> SelfCheckLearned:
    """The learned-verifier SelfCheck detector, loaded once."""
    if not _LEARNED:
        from _common import support_model

        _LEARNED.append(SelfCheckLearned(model=support_model(), embedder=encoder))
    return _LEARNED[0]  # type: ignore[return-value]


def fmt(value: float | None) -> str:
    return f"{value:8.2f}" if value is not None else "       -"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="benchmark data folder")
    parser.add_argument("--method", choices=METHODS, default="all")
    parser.add_argument("--limit", type=int, default=None, help="first N passages only")
    parser.add_argument("--samples", type=int, default=20, help="samples per passage (max 20)")
    parser.add_argument("--local-llm", action="store_true", help="llm: start the local server")
    parser.add_argument(
        "--embed-cache", type=Path, default=None, help="npz file caching MiniLM vectors (reruns)"
    )
    parser.add_argument("--json", action="store_true", help="machine output")
    args = parser.parse_args(argv)

    passages = load_passages(args.data)
    limit = args.limit or (3 if args.method == "llm" else None)
    if limit:
        passages = passages[:limit]
    passages = [Passage(p.sentences, p.labels, p.samples[: args.samples]) for p in passages]
    labels, ids = flat(passages)
    methods = [*OFFLINE, "learned", "combined+learned"] if args.method == "all" else [args.method]

    encoder = None
    if any(m in ("embedding", "combined", "learned", "combined+learned") for m in methods):
        from core.backends.embedder import get_embedder

        encoder = get_embedder()
        if args.embed_cache is not None:
            store = FileEmbeddingStore(args.embed_cache)
            encoder = encoder.with_store(store)
    client = None
    server = None
    if "llm" in methods:
        from core.backends.llm import LLMClient

        if args.local_llm:
            from core.backends.local_llm import LocalLLMServer

            server = LocalLLMServer(startup_timeout_s=120).start()
            base_url = server.base_url
        else:
            base_url = os.environ.get("GROUNDWATCH_LLM_BASE_URL", "")
            if not base_url:
                raise SystemExit("error: set GROUNDWATCH_LLM_BASE_URL or pass --local-llm")
        client = LLMClient(base_url, model=os.environ.get("GROUNDWATCH_LLM_MODEL", "local"))
    if "nli" in methods:
        model_path = os.environ.get("GROUNDWATCH_NLI_MODEL")
        if not model_path:
            raise SystemExit("error: nli needs GROUNDWATCH_NLI_MODEL (no NLI model ships on PyPI)")

    results = []
    try:
        for method in methods:
            if method == "nli":
                from core.backends.nli import get_nli_model
                from core.selfcheck import SelfCheckNLI

                det = SelfCheckNLI(model=get_nli_model(os.environ["GROUNDWATCH_NLI_MODEL"]))
                clock = Clock()
                sc = [s for p in passages for s in det.predict(p.sentences, p.samples).scores]
                scores, rate = np.array(sc, dtype=np.float64), clock.rates(len(passages))
            else:
                scores, rate = run_method(method, passages, encoder=encoder, client=client)
            results.append((method, selfcheck_metrics(scores, labels, ids), rate))
    finally:
        if server is not None:
            server.close()
        if encoder is not None and encoder.store is not None:
            encoder.store.save()  # type: ignore[attr-defined]

    if args.json:
        out = [
            {"method": m, **{k: round(v, 2) if np.isfinite(v) else None for k, v in r.items()}}
            for m, r, _ in results
        ]
        print(json.dumps(out[0] if len(out) == 1 else out))
        return 0

    n_sent = len(labels)
    print(
        f"SelfCheck on WikiBio GPT-3: {len(passages)} passages, {n_sent} sentences, "
        f"{args.samples} samples each (AUC-PR and correlations in percent)"
    )
    header = (
        f"{'method':42s} {'NonFact':>8s} {'NonFact*':>8s} {'Factual':>8s} "
        f"{'Pearson':>8s} {'Spearman':>8s} {'pass/s':>8s} {'cpu p/s':>8s}"
    )
    print(header)
    print("-" * len(header))
    print("(pass/s: passages per wall-clock second; cpu p/s: per CPU second of this process)")
    for name, vals in PUBLISHED:
        print(f"{name:42s} " + " ".join(fmt(v) for v in vals) + " " + fmt(None) + " " + fmt(None))
    for name, r in reference_rows(args.data, len(passages)):
        vals = (r["nonfact"], r["nonfact_star"], r["factual"], r["pearson"], r["spearman"])
        print(f"{name:42s} " + " ".join(fmt(v) for v in vals) + " " + fmt(None) + " " + fmt(None))
    for method, r, rate in results:
        label = f"groundwatch: {method}" + (" (5-fold CV)" if method.startswith("combined") else "")
        vals = (r["nonfact"], r["nonfact_star"], r["factual"], r["pearson"], r["spearman"])
        print(f"{label:42s} " + " ".join(fmt(v) for v in vals) + f" {rate[0]:8.2f} {rate[1]:8.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
