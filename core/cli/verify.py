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
    read_sources,
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
            answer = read_text(
                answer_file,
                what="answer",
                max_bytes=settings.max_input_bytes,
                max_chars=settings.max_transcript_chars,
            )
            sources = read_sources(
                source,
                file_id="stem",
                max_bytes=settings.max_input_bytes,
                max_chars=settings.max_transcript_chars,
            )
        except InputError as exc:
            fail(str(exc), code=exc.code, as_json=as_json, error=exc.error)

        from core.backends import load_embedder, load_llm
        from core.epistemic import EpistemicVerifier, VerificationConfig
        from core.grounding import GroundingVerifier

        embedder, emb_status = load_embedder(settings)
        if embedder is None:
            fail(f"embedding model {emb_status}", code=EXIT_IO, as_json=as_json,
                 error="model_unavailable")  # fmt: skip
        llm = load_llm(settings)[0] if use_llm else None
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
