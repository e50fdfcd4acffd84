"""``groundwatch evidence``: schema-check evidence quotes and ground them in a transcript."""

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
    read_json,
    read_text,
)
from core.config import get_settings
from core.evidence import (
    PHQ8_KEYS,
    EvidenceGrounder,
    EvidenceMode,
    EvidenceSchemaError,
    NormalizedText,
    validate_evidence_schema,
)

HELP = """Ground evidence quotes in a transcript (specs 053 and 054).

TRANSCRIPT is a UTF-8 text file, or a .json file holding either {"text": "..."} or a list of
turns [{"speaker": "...", "text": "..."}] (also accepted as {"turns": [...]}). Turns are joined
one per line as "speaker: text" (just "text" without a speaker); offsets then index that
joined text, and each match also names its "turn" with offsets inside the turn's text.

EVIDENCE.json is an object {key: [quote, ...]}: the PHQ-8 keys with --keys phq8 (default;
unknown keys are reported as warnings), any keys with --keys any.

Output (--json): {"validated", "rejected", "matches": [{"key", "quote", "grounded", "method",
"score", "start", "end"}], "stats": {...}, "warnings", ...}; start/end are character offsets
[start, end) in the ORIGINAL transcript. Exit codes: 0 done; 1 missing file or bad option;
2 invalid input (schema violation, not JSON, invalid UTF-8, empty or too large); 3 all
quotes rejected with --fail-on-all-rejected.
"""


class _Transcript:
    """The transcript text to ground against, with the turn layout when it came as turns."""

    def __init__(self, text: str, turns: list[tuple[int, int]] | None = None) -> None:
        self.text = text
        self.turns = turns  # (start, end) of each turn's text inside ``text``

    def locate(self, start: int | None, end: int | None) -> dict[str, int | None]:
        if self.turns is None:
            return {}
        if start is not None and end is not None:
            for i, (a, b) in enumerate(self.turns):
                if a <= start and end <= b:
                    return {"turn": i, "turn_start": start - a, "turn_end": end - a}
        return {"turn": None, "turn_start": None, "turn_end": None}


def _turns_transcript(turns: list[Any], *, what: str) -> _Transcript:
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    pos = 0
    for i, turn in enumerate(turns):
        if not isinstance(turn, dict) or not isinstance(turn.get("text"), str):
            raise InputError(
                f"{what}: turn {i} must be an object with a string 'text'",
                code=EXIT_INVALID,
                error="invalid_transcript",
            )
        speaker = turn.get("speaker")
        if speaker is not None and not isinstance(speaker, str):
            raise InputError(
                f"{what}: turn {i}: 'speaker' must be a string",
                code=EXIT_INVALID,
                error="invalid_transcript",
            )
        prefix = f"{speaker}: " if speaker else ""
        if i:
            pos += 1  # the newline joining turns
        spans.append((pos + len(prefix), pos + len(prefix) + len(turn["text"])))
        parts.append(prefix + turn["text"])
        pos += len(parts[-1])
    return _Transcript("\n".join(parts), spans)


def _read_transcript(path: Path, *, max_bytes: int, max_chars: int) -> _Transcript:
    what = "transcript"
    if path.suffix.lower() == ".json":
        data = read_json(path, what=what, max_bytes=max_bytes)
        if isinstance(data, dict) and isinstance(data.get("text"), str):
            transcript = _Transcript(data["text"])
        elif isinstance(data, dict) and isinstance(data.get("turns"), list):
            transcript = _turns_transcript(data["turns"], what=what)
        elif isinstance(data, list):
            transcript = _turns_transcript(data, what=what)
        else:
            raise InputError(
                f'{what}: JSON must be {{"text": ...}} or a list of {{"speaker", "text"}} '
                f"turns, got {type(data).__name__}",
                code=EXIT_INVALID,
                error="invalid_transcript",
            )
    else:
        transcript = _Transcript(read_text(path, what=what, max_bytes=max_bytes))
    if not transcript.text.strip():
        raise InputError(f"{what}: transcript is empty", code=EXIT_INVALID, error="empty")
    if len(transcript.text) > max_chars:
        raise InputError(
            f"{what}: {len(transcript.text)} characters, above the limit of {max_chars} "
            "(GROUNDWATCH_MAX_TRANSCRIPT_CHARS)",
            code=EXIT_INVALID,
            error="too_large",
        )
    return transcript


def _human(result_dict: dict[str, Any]) -> str:
    stats = result_dict["stats"]
    lines = [
        f"evidence: {stats['validated_count']}/{stats['extracted_count']} quote(s) grounded "
        f"({result_dict['mode']} mode), {stats['rejected_count']} rejected",
    ]
    for m in result_dict["matches"]:
        span = f"[{m['start']}, {m['end']})" if m["start"] is not None else "no span"
        verdict = f"grounded ({m['method']})" if m["grounded"] else "REJECTED (closest)"
        lines.append(f"  {m['key']}[{m['index']}]: {verdict} score={m['score']:.3f} {span}")
    lines.extend(f"warning: {w}" for w in result_dict["warnings"])
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    """Add the ``evidence`` command to ``app``."""

    @app.command("evidence", help=HELP)
    def evidence(
        transcript: Path = typer.Argument(..., help="Transcript: .txt, or .json (see above)."),
        evidence_file: Path = typer.Argument(..., metavar="EVIDENCE.json"),
        mode: str | None = typer.Option(
            None, "--mode", help="substring (default) or fuzzy; default from settings."
        ),
        threshold: float | None = typer.Option(
            None, "--threshold", help="Fuzzy threshold in [0.5, 1.0] (default 0.85)."
        ),
        keys: str = typer.Option("phq8", "--keys", help="phq8 (the eight PHQ-8 keys) or any."),
        fail_on_all_rejected: bool | None = typer.Option(
            None,
            "--fail-on-all-rejected/--no-fail-on-all-rejected",
            help="Exit 3 when quotes were given but none was grounded.",
        ),
        as_json: bool = typer.Option(False, "--json", help="Machine output on stdout."),
    ) -> None:
        settings = get_settings()
        chosen_mode = mode or settings.evidence_quote_validation_mode
        if chosen_mode not in ("substring", "fuzzy"):
            fail(
                "--mode must be 'substring' or 'fuzzy'",
                code=EXIT_IO,
                as_json=as_json,
                error="usage",
            )
        if keys not in ("phq8", "any"):
            fail("--keys must be 'phq8' or 'any'", code=EXIT_IO, as_json=as_json, error="usage")
        cut = settings.evidence_quote_fuzzy_threshold if threshold is None else threshold
        if not 0.5 <= cut <= 1.0:
            fail(
                "--threshold must be between 0.5 and 1.0",
                code=EXIT_IO,
                as_json=as_json,
                error="usage",
            )
        strict = (
            settings.evidence_quote_fail_on_all_rejected
            if fail_on_all_rejected is None
            else fail_on_all_rejected
        )
        try:
            source = _read_transcript(
                transcript,
                max_bytes=settings.max_input_bytes,
                max_chars=settings.max_transcript_chars,
            )
            raw = read_json(evidence_file, what="evidence", max_bytes=settings.max_input_bytes)
        except InputError as exc:
            fail(str(exc), code=exc.code, as_json=as_json, error=exc.error)
        try:
            checked = validate_evidence_schema(raw, keys=PHQ8_KEYS if keys == "phq8" else None)
        except EvidenceSchemaError as exc:
            fail(
                f"evidence: {exc}",
                code=EXIT_INVALID,
                as_json=as_json,
                error="evidence_schema",
                violations=exc.violations,
            )
        evidence_mode: EvidenceMode = "fuzzy" if chosen_mode == "fuzzy" else "substring"
        grounder = EvidenceGrounder(
            mode=evidence_mode,
            threshold=cut,
            log_rejections=settings.evidence_quote_log_rejections,
        )
        norm: NormalizedText = grounder.prepare(source.text)
        result = grounder.check(checked, norm)
        out = result.to_dict()
        for match in out["matches"]:
            match.update(source.locate(match["start"], match["end"]))
        if strict and result.all_rejected:
            message = (
                f"none of the {result.stats.extracted_count} evidence quote(s) could be "
                "grounded in the transcript"
            )
            out.update({"error": "evidence_hallucination", "message": message})
            emit(out, as_json=as_json, human=_human(out))
            if not as_json:
                typer.echo(f"error: {message}", err=True)
            raise typer.Exit(EXIT_STRICT)
        emit(out, as_json=as_json, human=_human(out))
        sys.stdout.flush()
        raise typer.Exit(EXIT_OK)
