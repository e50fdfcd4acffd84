"""``groundwatch selfcheck``: score an answer's sentences against sampled answers."""

from __future__ import annotations

import logging
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer

from core.cli.common import EXIT_INVALID, EXIT_IO, InputError, emit, fail, read_json, read_text
from core.text import short_hash

log = logging.getLogger(__name__)


class MethodChoice(StrEnum):
    ngram = "ngram"
    embedding = "embedding"
    nli = "nli"
    learned = "learned"
    llm = "llm"
    combined = "combined"


def _validate_samples(data: Any) -> list[str]:
    if not isinstance(data, list):
        raise InputError(
            f"SAMPLES: expected a JSON list of strings, got {type(data).__name__}",
            code=EXIT_INVALID,
            error="invalid_samples",
        )
    if not data:
        raise InputError(
            "SAMPLES: the list is empty; give at least one sample",
            code=EXIT_INVALID,
            error="invalid_samples",
        )
    for i, item in enumerate(data):
        if not isinstance(item, str):
            raise InputError(
                f"SAMPLES[{i}]: expected a string, got {type(item).__name__}",
                code=EXIT_INVALID,
                error="invalid_samples",
            )
        if not item.strip():
            raise InputError(
                f"SAMPLES[{i}]: empty text", code=EXIT_INVALID, error="invalid_samples"
            )
    return list(data)


def _generate(
    settings: Any, n: int, prompt: str, max_tokens: int, as_json: bool
) -> tuple[list[str], str]:
    from core.backends.llm import LLMError, client_from_settings, temperature_schedule

    try:
        client = client_from_settings(settings)
    except LLMError as exc:
        fail(str(exc), code=EXIT_IO, as_json=as_json, error="llm_unavailable")
    temps = temperature_schedule(n, step=settings.hallucination_detection_temp_range)
    try:
        with client:
            responses = client.sample(
                [{"role": "user", "content": prompt}], n, temperatures=temps, max_tokens=max_tokens
            )
    except LLMError as exc:
        fail(str(exc), code=EXIT_IO, as_json=as_json, error=f"llm_{exc.status}")
    samples = [r.text for r in responses]
    empty = [i for i, s in enumerate(samples) if not s.strip()]
    if empty:
        fail(
            f"the LLM returned {len(empty)} empty sample(s) of {n}",
            code=EXIT_IO,
            as_json=as_json,
            error="llm_failed",
        )
    return samples, client.model


def _detector(method: MethodChoice, settings: Any) -> Any:
    from core import selfcheck as sc

    if method is MethodChoice.ngram:
        return sc.SelfCheckNgram()
    if method is MethodChoice.combined:
        from core.selfcheck.weights import load_weights

        if "with_embedding" not in load_weights().models:
            return sc.SelfCheckCombined()  # no embedding model fitted: skip loading MiniLM
    if method in (MethodChoice.embedding, MethodChoice.combined):
        from core.backends.embedder import EmbeddingUnavailableError, get_embedder

        try:
            encoder = get_embedder(settings.embedding_model)
        except EmbeddingUnavailableError:
            encoder = None
        if method is MethodChoice.embedding:
            return sc.SelfCheckEmbedding(encoder=encoder) if encoder else sc.SelfCheckEmbedding()
        return sc.SelfCheckCombined(encoder=encoder)
    if method is MethodChoice.learned:
        from core.backends import load_embedder, load_learned

        return sc.SelfCheckLearned(
            model=load_learned(settings)[0], embedder=load_embedder(settings)[0]
        )
    if method is MethodChoice.nli:
        from core.backends.nli import NLIUnavailableError, get_nli_model

        model = None
        if settings.nli_model:
            try:
                model = get_nli_model(settings.nli_model)
            except NLIUnavailableError:
                model = None
        return sc.SelfCheckNLI(model=model)
    from core.backends.llm import LLMError, client_from_settings

    try:
        client = client_from_settings(settings)
    except LLMError:
        client = None
    return sc.SelfCheckLLMPrompt(client=client)


def _human(result: Any) -> str:
    lines = [
        f"method: {result.method}  samples: {result.sample_count}",
        f"risk: {result.risk_score:.3f} ({result.risk_level})  passage score: "
        f"{result.passage_score:.3f}",
        "sentence scores (higher = more likely hallucinated; rank 1 = check first):",
    ]
    for s in result.sentences:
        rank = f"#{s.rank}" if s.rank is not None else "  "
        lines.append(f"  [{s.index}] {s.score:8.3f} {rank:>4}  {s.text}")
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    """Attach the ``selfcheck`` command."""

    @app.command("selfcheck")
    def selfcheck(
        answer: Path = typer.Argument(..., help="The answer: a text file, or - for stdin."),
        samples: Path | None = typer.Option(
            None, "--samples", help="JSON list of sampled answers to the same prompt."
        ),
        generate: int | None = typer.Option(
            None, "--generate", min=1, max=50, help="Sample N answers from the configured LLM."
        ),
        prompt: str | None = typer.Option(None, "--prompt", help="The prompt for --generate."),
        max_tokens: int = typer.Option(
            256, "--max-tokens", min=1, max=4096, help="Longest generated sample, in tokens."
        ),
        method: MethodChoice = typer.Option(MethodChoice.combined, "--method"),
        json_out: bool = typer.Option(False, "--json", help="Machine output on stdout."),
    ) -> None:
        """Score each sentence of ANSWER by how far sampled answers back it (higher = worse)."""
        from core.config import get_settings
        from core.selfcheck import split_sentences

        settings = get_settings()
        if (samples is None) == (generate is None):
            fail(
                "give either --samples SAMPLES.json or --generate N --prompt TEXT",
                code=EXIT_IO,
                as_json=json_out,
                error="usage",
            )
        if generate is not None and not (prompt and prompt.strip()):
            fail("--generate needs --prompt TEXT", code=EXIT_IO, as_json=json_out, error="usage")
        try:
            text = read_text(
                answer,
                what="ANSWER",
                max_bytes=settings.max_input_bytes,
                max_chars=settings.max_transcript_chars,
            )
            sample_texts: list[str] = []
            if samples is not None:
                sample_texts = _validate_samples(
                    read_json(samples, what="SAMPLES", max_bytes=settings.max_input_bytes)
                )
        except InputError as exc:
            fail(str(exc), code=exc.code, as_json=json_out, error=exc.error)
        sentences = split_sentences(text)
        if not sentences:
            fail("ANSWER: no sentence found", code=EXIT_INVALID, as_json=json_out, error="empty")
        if generate is not None:
            assert prompt is not None
            sample_texts, _ = _generate(settings, generate, prompt, max_tokens, json_out)
        log.info(
            "selfcheck method=%s answer=%s sentences=%d samples=%d",
            method.value,
            short_hash(text),
            len(sentences),
            len(sample_texts),
        )
        detector = _detector(method, settings)
        result = detector.predict(sentences, sample_texts)
        if not result.status.ran:
            fail(
                f"selfcheck {method.value} did not run: {result.status}",
                code=EXIT_IO,
                as_json=json_out,
                error=f"selfcheck_{result.status.status}",
                method=method.value,
                status=result.status.status,
                reason=result.status.reason,
            )
        emit(result.to_dict(), as_json=json_out, human=_human(result))
