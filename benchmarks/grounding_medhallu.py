"""Answer grounding on MedHallu (PubMedQA): is an answer hallucinated with respect to its knowledge?

Protocol (DATA.md): every item gives a ground-truth and a hallucinated answer to the same
question over the same knowledge; both are scored. Rows whose index % 10 is 0-6 are the
development split (features combined and the decision threshold chosen there), 7-9 the test
split (reported). Reported: precision, recall, F1 of the hallucinated class, AUROC, F1 per
difficulty, and the F1 of flagging every answer (2/3, as the classes are balanced), which a
detector must beat for its F1 to mean anything; AUROC is the measure that does not depend on
the threshold.

The hallucination score (higher = more likely hallucinated) combines, with a logistic
regression fitted on dev only: the verifier's grounding score and mean best cosine of the
statements, the share of the answer's content words absent from the knowledge and the
question (invented specifics), and how close the answer is to the question (word cover and
cosine). Two fits are reported: all of these, and the verifier's features alone. The question
features carry most of the signal, and in the direction opposite to grounding: the
hallucinated answers restate the question more closely than the abstracts' own conclusions do,
which says how the data set's answers were written rather than whether they are grounded. The
verifier-only row is what the grounding verifier itself achieves here.

    python benchmarks/grounding_medhallu.py --data ../shared/data [--dev-items 300] [--full]
"""

from __future__ import annotations

import json
import random
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import base_parser, inference_backends, prf, print_json, print_table, require_data

_STOP = frozenset(
    """a an the and or but of in on at to for with by from as is are was were be been being has
    have had do does did this that these those it its their there than then which who whom
    what when where how not no can could may might will would should also more most less such
    our we study studies results result patients patient use used using between both among
    after before during into over under only other some any all each very however these""".split()
)


def content_words(text: str) -> set[str]:
    return {
        w[:-1] if w.endswith("s") and len(w) > 4 else w
        for w in re.findall(r"[a-z0-9]+", text.lower())
        if w not in _STOP and len(w) > 2
    }


def load(data: Path) -> list[dict[str, Any]]:
    path = require_data(data, "medhallu", "medhallu_pqa_labeled.jsonl")
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def features(verifier: Any, embedder: Any, item: dict[str, Any], answer: str) -> list[float]:
    from core.grounding import SourceChunk

    knowledge = [SourceChunk(f"k{i}", text, "document") for i, text in enumerate(item["Knowledge"])]
    result = verifier.verify(answer, knowledge)
    sims = [s.similarity for s in result.statements if s.similarity is not None]
    mean_sim = float(np.mean(sims)) if sims else 1.0
    words = content_words(answer)
    known = content_words(" ".join(item["Knowledge"])) | content_words(item["Question"])
    novelty = len(words - known) / len(words) if words else 0.0
    question = content_words(item["Question"])
    q_cover = len(question & words) / len(question) if question else 0.0
    vec = embedder.encode([answer, item["Question"]])
    q_cos = float(vec[0] @ vec[1])
    return [result.grounding_score, mean_sim, novelty, q_cover, q_cos]


FEATURES = ("grounding_score", "mean_best_cosine", "novel_word_share", "question_cover", "q_cos")
# what the verifier and the knowledge say of the answer, without the question features
VERIFIER_FEATURES = ("grounding_score", "mean_best_cosine", "novel_word_share")
LEVELS = ("easy", "medium", "hard")


def fit_and_predict(
    x_dev: np.ndarray, y_dev: np.ndarray, x_test: np.ndarray
) -> tuple[np.ndarray, list[int], float, float]:
    """A logistic regression fitted on dev, and the decision threshold that maximises the
    hallucinated class's F1 on dev: the test scores, test predictions, threshold, dev F1."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(x_dev)
    model = LogisticRegression(max_iter=1000).fit(scaler.transform(x_dev), y_dev)
    dev_score = model.predict_proba(scaler.transform(x_dev))[:, 1]
    best_t, best_f = 0.5, -1.0
    for t in np.linspace(0.05, 0.95, 91):
        f = prf(list(y_dev), [int(s >= t) for s in dev_score])[2]
        if f > best_f:
            best_t, best_f = float(t), f
    test_score = model.predict_proba(scaler.transform(x_test))[:, 1]
    return test_score, [int(v >= best_t) for v in test_score], best_t, best_f


def build(
    verifier: Any, embedder: Any, rows: list[tuple[int, dict[str, Any]]]
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    x, y, difficulty = [], [], []
    for _, item in rows:
        for answer, label in ((item["Ground Truth"], 0), (item["Hallucinated Answer"], 1)):
            x.append(features(verifier, embedder, item, answer))
            y.append(label)
            difficulty.append(item["Difficulty Level"])
    return np.asarray(x), np.asarray(y), difficulty


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--dev-items", type=int, default=300, help="dev items sampled for fitting")
    parser.add_argument(
        "--test-items", type=int, default=0, help="test items sampled (0: the whole test split)"
    )
    parser.add_argument("--full", action="store_true", help="fit on the whole dev split")
    args = parser.parse_args()

    from sklearn.metrics import roc_auc_score

    from core.backends.embedder import get_embedder
    from core.grounding import GroundingVerifier

    items = load(args.data)
    dev = [(i, it) for i, it in enumerate(items) if i % 10 <= 6]
    test = [(i, it) for i, it in enumerate(items) if i % 10 >= 7]
    if not args.full and len(dev) > args.dev_items:
        dev = random.Random(args.seed).sample(dev, args.dev_items)
    if args.test_items and len(test) > args.test_items:
        test = sorted(random.Random(args.seed + 1).sample(test, args.test_items))
    embedder = get_embedder()
    nli, llm, tiers = inference_backends()
    verifier = GroundingVerifier(embedder=embedder, nli=nli, llm=llm, split="sentences")
    started = time.perf_counter()
    x_dev, y_dev, _ = build(verifier, embedder, dev)
    x_test, y_test, difficulty = build(verifier, embedder, test)
    elapsed = time.perf_counter() - started

    rows, fits = [], []
    for label, columns in (
        ("all features", list(range(len(FEATURES)))),
        ("verifier features only", [FEATURES.index(name) for name in VERIFIER_FEATURES]),
    ):
        test_score, pred, best_t, best_f = fit_and_predict(
            x_dev[:, columns], y_dev, x_test[:, columns]
        )
        fits.append(f"{label}: threshold {best_t:.2f} (dev F1 {best_f:.3f})")
        subsets = [("test (all)", list(range(len(y_test))))]
        if label == "all features":
            subsets += [(lvl, [i for i, d in enumerate(difficulty) if d == lvl]) for lvl in LEVELS]
        for name, idx in subsets:
            yt = [int(y_test[i]) for i in idx]
            p, r, f = prf(yt, [pred[i] for i in idx])
            # a small --test-items sample may leave a difficulty empty
            scores = [test_score[i] for i in idx]
            auc = float(roc_auc_score(yt, scores)) if len(set(yt)) > 1 else float("nan")
            rows.append(
                {
                    "features": label,
                    "subset": name,
                    "n answers": len(idx),
                    "precision": p,
                    "recall": r,
                    "f1": f,
                    "auroc": auc,
                }
            )
    # every item pairs one hallucinated with one faithful answer, so flagging every answer
    # already scores F1 2/3: the row that the others must beat for their F1 to mean anything
    p, r, f = prf(list(y_test), [1] * len(y_test))
    rows.append(
        {
            "features": "none (all flagged)",
            "subset": "test (all)",
            "n answers": len(y_test),
            "precision": p,
            "recall": r,
            "f1": f,
            "auroc": 0.5,
        }
    )
    single = []
    for k, name in enumerate(FEATURES):
        auc = float(roc_auc_score(y_test, -x_test[:, k]))
        single.append({"feature (alone, test)": name, "auroc (low value = flagged)": auc})
    sample = "full dev" if args.full else f"{len(dev)} dev items sampled, seed {args.seed}"
    print(
        f"MedHallu answer grounding: fitted on {sample}; test split = {len(test)} items; "
        f"{elapsed:.0f} s; " + "; ".join(fits)
    )
    print(tiers)
    print_table(rows, ["features", "subset", "n answers", "precision", "recall", "f1", "auroc"])
    print_table(single, ["feature (alone, test)", "auroc (low value = flagged)"])
    if args.json:
        print_json({"results": rows, "features": single})


if __name__ == "__main__":
    main()
