"""A real API server for the integration tests: uvicorn on a free port, in a thread, over a
real database, with API keys created in it."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import uvicorn
from sqlalchemy.engine import Engine

from core.api import create_app
from core.api.keys import new_token, token_hash
from core.config import Settings
from core.storage import repo
from core.storage.db import read_session, write_session


@dataclass
class Server:
    """A running API: its address, its database and the tokens of its keys by name."""

    base_url: str
    engine: Engine
    keys: dict[str, str]  # name -> token
    server: uvicorn.Server

    def client(self, key: str | None = "ingest-read") -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.keys[key]}"} if key else {}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=120)

    def count(self) -> int:
        with read_session(self.engine) as s:
            return repo.count_conversations(session=s)


def add_key(engine: Engine, name: str, scopes: Sequence[str]) -> str:
    """Create an API key in the database; returns its token."""
    token = new_token()
    with write_session(engine) as s:
        repo.create_api_key(session=s, name=name, scopes=list(scopes), token_hash=token_hash(token))
    return token


def serve(app: Any) -> tuple[uvicorn.Server, threading.Thread, str]:
    """Start ``app`` on a free port of 127.0.0.1 (lifespan on); returns once it listens."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.05)
    return server, thread, f"http://127.0.0.1:{port}"


@contextmanager
def running_api(
    engine: Engine, settings: Settings, keys: Mapping[str, Sequence[str]]
) -> Iterator[Server]:
    """The API over ``engine`` with a key per name (name -> scopes), ready (its models
    loaded); stopped on exit."""
    tokens = {name: add_key(engine, name, scopes) for name, scopes in keys.items()}
    server, thread, url = serve(create_app(settings=settings, engine=engine))
    try:
        with httpx.Client(base_url=url, timeout=120) as c:  # slow while the models load
            deadline = time.monotonic() + 300
            while c.get("/v1/ready").status_code != 200:
                assert time.monotonic() < deadline, c.get("/v1/ready").text
                time.sleep(0.2)
        yield Server(url, engine, tokens, server)
    finally:
        server.should_exit = True
        thread.join(timeout=30)
