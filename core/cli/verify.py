"""``groundwatch verify``: the SPEC-16 hallucination report of one answer."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from core.cli.common import (
    EXIT_INVALID,
    EXIT_IO,
    EXIT_OK,
    EXIT_STRICT,
    InputError,
    emit,
    fail,
    read_text,
)

HELP = """Verify the claims of an answer against its sources (SPEC-16).

ANSWER is a UTF-8 text file, or - for stdin. Each --source is a text file (its id is the file
stem) or a .json file holding a list of {"id": "...", "text": "..."}. Citations in the answer
such as [1], [note-3], [S2, S3], (source: note-3) or "per note-3" are matched to the source
ids; a bare number [n] is the n-th source when no source id is a number.

The LLM checks (claim extraction, direct evidence check, evidence scrubbing) run when
GROUNDWATCH_LLM_BASE_URL is set (--no-llm turns them off); scrubbing also needs --question.

Output (--json): the HallucinationReport: {"response_id", "total_claims", "verified_claims",
"flagged_claims", "overall_confidence", "max_gap_bits", "has_critical_gaps", "should_retry",
"retry_guidance", "claims": [...], "gaps": [...], "checks": {check: {"status", "reason"}},
"usage", ...}. Exit codes: 0 done; 1 missing file or bad option; 2 invalid input (not JSON,
bad source list, invalid UTF-8, empty or too large); 3 critical gaps with --fail-on-critical.
"""

_MODES = ("full", "sample", "critical_only")


def _load_sources(paths: list[Path], *, max_bytes: int, max_chars: int) -> list[Any]:
    import json

    from core.grounding import SourceChunk

    sources: list[SourceChunk] = []
    seen: dict[str, str] = {}
    for path in paths:
        what = f"source {path}"
        text = read_text(path, what=what, max_bytes=max_bytes)
        items: list[tuple[str, str, str, Any]] = []
        if path.suffix.lower() == ".json":
            try:
                data = json.loads(text)
            except RecursionError:
                raise InputError(
                    f"{what}: JSON nested too deeply", code=EXIT_INVALID, error="invalid_json"
                ) from None
            except json.JSONDecodeError as exc:
                raise InputError(
                    f"{what}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})",
                    code=EXIT_INVALID,
                    error="invalid_json",
                ) from None
            if not isinstance(data, list) or not data:
                raise InputError(
                    f'{what}: must be a non-empty JSON list of {{"id", "text"}} objects',
                    code=EXIT_INVALID,
                    error="invalid_sources",
                )
            for i, item in enumerate(data):
                where = f"{what}: item {i}"
                if not isinstance(item, dict):
                    raise InputError(
                        f"{where}: must be an object", code=EXIT_INVALID, error="invalid_sources"
                    )
                sid, body = item.get("id"), item.get("text")
                if isinstance(sid, int) and not isinstance(sid, bool):
                    sid = str(sid)
                if not isinstance(sid, str) or not sid.strip():
                    raise InputError(
                        f"{where}: field 'id' must be a non-empty string",
                        code=EXIT_INVALID,
                        error="invalid_sources",
                    )
                if not isinstance(body, str) or not body.strip():
                    raise InputError(
                        f"{where}: field 'text' must be a non-empty string",
                        code=EXIT_INVALID,
                        error="invalid_sources",
                    )
                items.append((sid, body, where, item.get("type", "note")))
        else:
            items.append((path.stem, text, what, "note"))
        for sid, body, where, kind in items:
            if len(body) > max_chars:
                raise InputError(
                    f"{where}: text has {len(body)} characters, above the limit of {max_chars} "
                    "(GROUNDWATCH_MAX_TRANSCRIPT_CHARS)",
                    code=EXIT_INVALID,
                    error="too_large",
                )
            if sid in seen:
                raise InputError(
                    f"{where}: duplicate source id {sid!r} (also in {seen[sid]})",
                    code=EXIT_INVALID,
                    error="invalid_sources",
                )
            seen[sid] = where
            try:
                sources.append(SourceChunk(id=sid, text=body, type=kind))
            except ValueError:
                raise InputError(
                    f"{where}: field 'type' must be note, document, message or transcript",
                    code=EXIT_INVALID,
                    error="invalid_sources",
                ) from None
    return sources


def _human(report: dict[str, Any]) -> str:
    if report["skipped"]:
        return f"verification skipped: {report['skip_reason']}"
    lines = [
        f"claims: {report['total_claims']}  verified: {report['verified_claims']}  "
        f"flagged: {report['flagged_claims']}  overall confidence: "
        f"{report['overall_confidence'] if report['overall_confidence'] is not None else '-'}"
        f"  critical gaps: {'yes' if report['has_critical_gaps'] else 'no'}"
    ]
    for claim in report["claims"]:
        mark = claim["flag_reason"] or "ok"
        lines.append(f"  {claim['claim_id']:>4} [{mark}] {claim['claim_text']}")
        if claim["reason"]:
            lines.append(f"       {claim['reason']}")
    for name, check in report["checks"].items():
        reason = f" ({check['reason']})" if check["reason"] else ""
        lines.append(f"check {name}: {check['status']}{reason}")
    for warning in report["warnings"]:
        lines.append(f"warning: {warning}")
    if report["retry_guidance"]:
        lines.append(f"guidance: {report['retry_guidance']}")
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    """Add the ``verify`` command to ``app``."""

    @app.command("verify", help=HELP)
    def verify(
        answer_file: Path = typer.Argument(..., metavar="ANSWER", help="Answer file, or -."),
        source: list[Path] = typer.Option(
            ..., "--source", "-s", help="Source file (.txt or .json list); repeatable."
        ),
        question: str | None = typer.Option(
            None, "--question", "-q", help="The question answered (enables scrubbing)."
        ),
        mode: str = typer.Option("sample", "--mode", help="full, sample or critical_only."),
        response_id: str | None = typer.Option(None, "--response-id", help="Id for the report."),
        use_llm: bool = typer.Option(
            True, "--llm/--no-llm", help="Use the configured LLM (GROUNDWATCH_LLM_BASE_URL)."
        ),
        on_failure: str = typer.Option("flag", "--on-failure", help="flag or retry."),
        fail_on_critical: bool = typer.Option(
            False, "--fail-on-critical", help="Exit 3 when the report has critical gaps."
        ),
        as_json: bool = typer.Option(False, "--json", help="Machine output on stdout."),
    ) -> None:
        from core.config import get_settings

        if mode not in _MODES:
            fail(f"--mode must be one of {', '.join(_MODES)}", code=EXIT_IO, as_json=as_json,
                 error="usage")  # fmt: skip
        if on_failure not in ("flag", "retry"):
            fail("--on-failure must be 'flag' or 'retry'", code=EXIT_IO, as_json=as_json,
                 error="usage")  # fmt: skip
        settings = get_settings()
        try:
            answer = read_text(answer_file, what="answer", max_bytes=settings.max_input_bytes)
            sources = _load_sources(
                source,
                max_bytes=settings.max_input_bytes,
                max_chars=settings.max_transcript_chars,
            )
        except InputError as exc:
            fail(str(exc), code=exc.code, as_json=as_json, error=exc.error)

        from core.backends.embedder import EmbeddingUnavailableError, get_embedder
        from core.backends.llm import LLMUnavailableError, client_from_settings
        from core.epistemic import EpistemicVerifier, VerificationConfig
        from core.grounding import GroundingVerifier

        try:
            embedder = get_embedder(settings.embedding_model)
        except EmbeddingUnavailableError as exc:
            fail(f"embedding model unavailable: {exc}", code=EXIT_IO, as_json=as_json,
                 error="model_unavailable")  # fmt: skip
        llm = None
        if use_llm and settings.llm_base_url:
            try:
                llm = client_from_settings(settings)
            except LLMUnavailableError:
                llm = None
        config = VerificationConfig(
            mode=mode,  # type: ignore[arg-type]
            on_failure=on_failure,  # type: ignore[arg-type]
            support_threshold=settings.grounding_score_threshold,
            verification_model=settings.llm_model,
        )
        verifier = EpistemicVerifier(
            grounding=GroundingVerifier(embedder=embedder),
            embedder=embedder,
            llm=llm,
            config=config,
        )
        try:
            report = verifier.verify(answer, sources, question=question, response_id=response_id)
        except ValueError as exc:
            fail(str(exc), code=EXIT_INVALID, as_json=as_json, error="invalid_input")
        finally:
            if llm is not None:
                llm.close()
        out = report.to_dict()
        emit(out, as_json=as_json, human=_human(out))
        sys.stdout.flush()
        if fail_on_critical and report.has_critical_gaps:
            raise typer.Exit(EXIT_STRICT)
        raise typer.Exit(EXIT_OK)
