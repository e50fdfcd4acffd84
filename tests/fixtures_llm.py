"""Pytest plugin: a real local LLM server (xllamacpp + SmolLM2-135M) for integration tests.

Register with ``pytest_plugins = ["tests.fixtures_llm"]``. The server starts once per session
in a child process on 127.0.0.1 and a free port, and is stopped at the end.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from core.backends.local_llm import LocalLLMServer


@pytest.fixture(scope="session")
def local_llm_server() -> Iterator[LocalLLMServer]:
    """The running :class:`LocalLLMServer` (for tests that inspect or stop it)."""
    server = LocalLLMServer(startup_timeout_s=120.0, n_ctx=2048)
    server.start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="session")
def local_llm(local_llm_server: LocalLLMServer) -> str:
    """Base URL of the real local LLM server, ending in ``/v1``."""
    return local_llm_server.base_url
