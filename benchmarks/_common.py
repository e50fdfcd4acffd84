"""Shared helpers of the benchmark scripts: data location, metrics, plain tables."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def default_data_dir() -> Path | None:
    """``../shared/data`` relative to the project root, when it exists."""
    candidate = ROOT.parent / "shared" / "data"
    return candidate if candidate.is_dir() else None


def base_parser(description: str, *, data: bool = True) -> argparse.ArgumentParser:
    """An argument parser with ``--data DIR`` (when the benchmark reads data) and ``--json``."""
    parser = argparse.ArgumentParser(description=description)
    if data:
        parser.add_argument(
            "--data",
            type=Path,
            default=default_data_dir(),
            help="benchmark data folder (default: ../shared/data from the project root)",
        )
    parser.add_argument("--json", action="store_true", help="print the results as JSON too")
    parser.add_argument("--seed", type=int, default=13, help="random seed (subsampling)")
    return parser


def require_data(path: Path | None, *parts: str) -> Path:
    """The data file ``path/parts``; exits with a clear message when it is missing."""
    if path is None:
        raise SystemExit("error: no --data DIR given and ../shared/data does not exist")
    target = path.joinpath(*parts)
    if not target.exists():
        raise SystemExit(f"error: benchmark data not found: {target}")
    return target


def prf(y_true: Sequence[int], y_pred: Sequence[int]) -> tuple[float, float, float]:
    """Precision, recall and F1 of the positive class (higher is better)."""
    tp = sum(1 for t, p in zip(y_true, y_pred, strict=True) if t and p)
    fp = sum(1 for t, p in zip(y_true, y_pred, strict=True) if not t and p)
    fn = sum(1 for t, p in zip(y_true, y_pred, strict=True) if t and not p)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def auroc(y_true: Sequence[int], risk: Sequence[float]) -> float:
    """AUROC of ``risk`` for the positive class; NaN when only one class is present."""
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y_true, risk)) if len(set(y_true)) > 1 else float("nan")


def fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def print_table(rows: Sequence[dict[str, Any]], columns: Sequence[str], title: str = "") -> None:
    """Print rows as a plain fixed-width table."""
    if title:
        print(title)
    cells = [[fmt(row.get(c, "")) for c in columns] for row in rows]
    widths = [
        max(len(c), *(len(r[i]) for r in cells)) if cells else len(c) for i, c in enumerate(columns)
    ]
    line = "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))
    print(line)
    print("  ".join("-" * w for w in widths))
    for r in cells:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)))
    print()


def print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, default=str))


def inference_backends() -> tuple[Any, Any, str]:
    """The NLI cross-encoder and LLM judge that the settings configure
    (``GROUNDWATCH_NLI_MODEL``, ``GROUNDWATCH_LLM_BASE_URL``), each ``None`` when absent, and a
    line saying which inference tiers a grounding benchmark therefore measures."""
    from core.backends import load_llm, load_nli
    from core.config import get_settings

    settings = get_settings()
    nli, nli_status = load_nli(settings)
    llm, llm_status = load_llm(settings)
    return nli, llm, f"inference tiers: nli {nli_status}; llm judge {llm_status}"


def support_model() -> Any:
    """The learned verifier the product would load: the shipped one, or the folder named by
    ``GROUNDWATCH_LEARNED_VERIFIER_PATH`` (so two models can be measured with the same code)."""
    from core.config import get_settings
    from core.grounding.learned import get_support_model

    path = get_settings().learned_verifier_path
    return get_support_model(None if path is None else str(path))
