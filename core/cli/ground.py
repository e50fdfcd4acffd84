"""``groundwatch ground``: check every statement of an answer against its sources."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import typer

from core.backends import load_embedder, load_learned, load_llm, load_nli
from core.cli.common import (
    EXIT_INVALID,
    EXIT_IO,
    InputError,
    emit,
    fail,
    parse_sources,
    read_sources,
    read_text,
)
from core.config import get_settings
from core.grounding import GroundingResult, GroundingVerifier, SourceChunk
from core.text import JSONInputError, loads_input, unstorable_text

log = logging.getLogger(__name__)

HELP = """Ground an answer's statements in source texts (phase 9 answer grounding).

ANSWER is a UTF-8 text file or - for stdin. Each --source is a text file (its name is its id)
or a .json file holding a list of {"id", "text"} (optionally "type": note|document|message|
transcript and "similarity") or a FHIR resource or Bundle, read as sentences (so is any
source text that is JSON, JSON Lines or a table). With --batch
CASES.jsonl, each line is {"id", "answer", "sources": [{"id", "text"}]} and one result per
line is written, with its id; the model is loaded once.

Output (--json): {"grounding_score", "overall_grounded", "statements": [{"index", "text",
"status", "verification_method", "confidence", "source_id", "evidence", "start", "end", ...}],
"unsupported_statements", "warnings", "checks": {tier: status}}. Exit codes: 0 done; 1
missing file or bad option; 2 invalid input (not JSON, bad field, invalid UTF-8, empty).
"""


def _build_verifier(*, threshold: float | None) -> GroundingVerifier:
    """The verifier with every backend the settings configure (each load reported)."""
    settings = get_settings()
    embedder, emb_status = load_embedder(settings)
    nli, nli_status = load_nli(settings)
    llm, _ = load_llm(settings)
    learned, learned_status = load_learned(settings)
    for name, status in (
        ("embedding model", emb_status),
        ("learned verifier", learned_status),
        ("NLI model", nli_status),
    ):
        if not status.ran:  # also stated in the result's checks, not hidden
            log.info("%s: %s", name, status)
    return GroundingVerifier(
        embedder=embedder,
        nli=nli,
        llm=llm,
        learned=learned,
        grounding_threshold=(
            settings.grounding_score_threshold if threshold is None else threshold
        ),
    )


def _human(result: GroundingResult) -> str:
    lines = [
        f"grounding score {result.grounding_score:.2f} "
        f"({'grounded' if result.overall_grounded else 'NOT grounded'}), "
        f"{len(result.statements)} statements"
    ]
    for s in result.statements:
        where = f" [{s.source_chunk_id}]" if s.source_chunk_id else ""
        why = f" - {s.reason}" if s.reason else ""
        lines.append(
            f"  {s.index:>3} {s.status:<12} {s.verification_method:<14} "
            f"{s.confidence:.2f}{where}: {s.statement}{why}"
        )
    for w in result.warnings:
        lines.append(f"warning: {w}")
    lines.append("checks: " + ", ".join(f"{k}={v}" for k, v in result.checks.items()))
    return "\n".join(lines)


def _run_batch(path: Path, verifier: GroundingVerifier, *, max_bytes: int, as_json: bool) -> None:
    text = read_text(path, what=f"batch {path}", max_bytes=max_bytes)
    cases: list[tuple[str, str, list[SourceChunk]]] = []
    errors: list[dict[str, Any]] = []
    seen: set[str] = set()
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = loads_input(line)
        except JSONInputError as exc:
            errors.append({"line": lineno, "error": f"not valid JSON ({exc})"})
            continue
        if not isinstance(row, dict):
            errors.append({"line": lineno, "error": "must be a JSON object"})
            continue
        broken = unstorable_text(row)
        if broken:
            errors.append({"line": lineno, "error": f"{broken[0]}: {broken[1]}"})
            continue
        case_id = row.get("id")
        if not isinstance(case_id, str | int) or isinstance(case_id, bool) or str(case_id) == "":
            errors.append({"line": lineno, "error": "id: required, a string or integer"})
            continue
        if str(case_id) in seen:
            errors.append({"line": lineno, "error": "id: duplicate"})
            continue
        answer = row.get("answer")
        if not isinstance(answer, str) or not answer.strip():
            errors.append({"line": lineno, "error": "answer: required, a non-empty string"})
            continue
        try:
            sources = parse_sources(row.get("sources"), where="sources")
        except InputError as exc:
            errors.append({"line": lineno, "error": str(exc)})
            continue
        seen.add(str(case_id))
        cases.append((str(case_id), answer, sources))
    if errors:
        fail(
            f"batch {path}: {len(errors)} invalid line(s); nothing was processed",
            code=EXIT_INVALID,
            as_json=as_json,
            error="invalid_batch",
            rejected=errors,
        )
    for case_id, answer, sources in cases:
        try:
            result = verifier.verify(answer, sources)
        except ValueError as exc:
            out: dict[str, Any] = {"id": case_id, "error": "invalid_input", "message": str(exc)}
        else:
            out = {"id": case_id, **result.to_dict()}
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
        sys.stdout.flush()


def register(app: typer.Typer) -> None:
    """Add the ``ground`` command to the CLI."""

    @app.command("ground", help=HELP)
    def ground(
        answer: Path | None = typer.Argument(None, help="answer text file, or - for stdin"),
        source: list[Path] | None = typer.Option(
            None, "--source", "-s", help="source text file or JSON list of {id, text}"
        ),
        batch: Path | None = typer.Option(
            None, "--batch", help="JSONL file of {id, answer, sources} cases"
        ),
        threshold: float | None = typer.Option(
            None, "--threshold", min=0.0, max=1.0, help="grounding score threshold"
        ),
        as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
    ) -> None:
        max_bytes = get_settings().max_input_bytes
        try:
            if batch is not None:
                if answer is not None or source:
                    fail(
                        "--batch takes no ANSWER or --source",
                        code=EXIT_IO,
                        as_json=as_json,
                        error="usage",
                    )
                verifier = _build_verifier(threshold=threshold)
                _run_batch(batch, verifier, max_bytes=max_bytes, as_json=as_json)
                return
            if answer is None:
                fail(
                    "ANSWER is required (a file or -)", code=EXIT_IO, as_json=as_json, error="usage"
                )
            if not source:
                fail(
                    "at least one --source is required",
                    code=EXIT_IO,
                    as_json=as_json,
                    error="usage",
                )
            answer_text = read_text(
                answer,
                what="answer",
                max_bytes=max_bytes,
                max_chars=get_settings().max_transcript_chars,
            )
            chunks = read_sources(
                list(source), max_bytes=max_bytes, max_chars=get_settings().max_transcript_chars
            )
            verifier = _build_verifier(threshold=threshold)
            try:
                result = verifier.verify(answer_text, chunks)
            except ValueError as exc:
                fail(str(exc), code=EXIT_INVALID, as_json=as_json, error="invalid_input")
        except InputError as exc:
            fail(str(exc), code=exc.code, as_json=as_json, error=exc.error)
        emit(result.to_dict(), as_json=as_json, human=_human(result))
