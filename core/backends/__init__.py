"""Model and server backends: embeddings, NLI cross-encoder, OpenAI-compatible LLM.

The ``load_*`` functions build each backend from the settings and say why one is missing,
so every caller (pipeline, CLI, dashboard) reports an absent backend the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.checks import OK, CheckStatus, unavailable

if TYPE_CHECKING:
    from core.backends.caches import EmbeddingStore, ResponseCache
    from core.backends.embedder import Embedder
    from core.backends.llm import LLMClient
    from core.backends.nli import NLIModel
    from core.grounding.learned import SupportModel


def load_embedder(
    settings: Any, *, store: EmbeddingStore | None = None
) -> tuple[Embedder | None, CheckStatus]:
    """The shared MiniLM (or ``GROUNDWATCH_EMBEDDING_MODEL``) embedder, or why it is missing.

    Its precision and worker threads are ``GROUNDWATCH_EMBEDDING_PRECISION`` and
    ``_WORKERS`` (see :class:`~core.backends.embedder.Embedder`)."""
    from core.backends.embedder import EmbeddingUnavailableError, get_embedder

    try:
        embedder = get_embedder(
            settings.embedding_model, settings.embedding_precision, settings.embedding_workers
        )
    except EmbeddingUnavailableError as exc:
        return None, unavailable(str(exc))
    return (embedder.with_store(store) if store is not None else embedder), OK


def load_nli(settings: Any) -> tuple[NLIModel | None, CheckStatus]:
    """The ``GROUNDWATCH_NLI_MODEL`` cross-encoder, or why it is missing."""
    if not settings.nli_model:
        return None, unavailable("no NLI model configured (GROUNDWATCH_NLI_MODEL)")
    from core.backends.nli import NLIUnavailableError, get_nli_model

    try:
        return get_nli_model(settings.nli_model), OK
    except NLIUnavailableError as exc:
        return None, unavailable(str(exc))


def load_learned(settings: Any) -> tuple[SupportModel | None, CheckStatus]:
    """The learned verifier shipped in the package (or ``GROUNDWATCH_LEARNED_VERIFIER_PATH``),
    or why it is not used."""
    if not settings.learned_verifier:
        return None, unavailable("learned verifier turned off (GROUNDWATCH_LEARNED_VERIFIER)")
    from core.grounding.learned import VerifierUnavailableError, get_support_model

    path = settings.learned_verifier_path
    try:
        return get_support_model(None if path is None else str(path)), OK
    except VerifierUnavailableError as exc:
        return None, unavailable(str(exc))


def load_llm(
    settings: Any, *, cache: ResponseCache | None = None
) -> tuple[LLMClient | None, CheckStatus]:
    """A client of ``GROUNDWATCH_LLM_BASE_URL``, or why there is none."""
    if not settings.llm_base_url:
        return None, unavailable("no LLM configured (GROUNDWATCH_LLM_BASE_URL)")
    from core.backends.llm import client_from_settings

    return client_from_settings(settings, cache=cache), OK
