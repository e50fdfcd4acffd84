"""Client for any OpenAI-compatible chat server (Ollama, vLLM, llama.cpp, OpenAI).

Timeouts, bounded retries, token and latency accounting per call, and an optional response
cache keyed by (model, messages, parameters). Failures raise typed errors so that a check can
store ``unavailable`` (server down, timeout) or ``failed`` (malformed reply) with the reason;
error messages never include prompt or reply text.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import httpx

from core.backends.caches import ChatResponse, ResponseCache
from core.text import content_hash

log = logging.getLogger(__name__)

Message = dict[str, str]


class LLMError(RuntimeError):
    """Base class of LLM backend errors; ``status`` is the check status to store."""

    status = "failed"


class LLMUnavailableError(LLMError):
    """No server configured, server unreachable, or timed out after all retries."""

    status = "unavailable"


class LLMResponseError(LLMError):
    """The server answered, but not with a usable chat completion."""

    status = "failed"


@dataclass(slots=True)
class Usage:
    """Running totals of the calls made by one client."""

    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    errors: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, response: ChatResponse) -> None:
        with self._lock:
            self.calls += 1
            if response.cached:
                self.cached_calls += 1
                return
            self.prompt_tokens += response.prompt_tokens
            self.completion_tokens += response.completion_tokens
            self.latency_ms += response.latency_ms


def cache_key(model: str, messages: Sequence[Message], params: dict[str, object]) -> str:
    """Stable key of one request: SHA-256 of model, messages and sampling parameters."""
    payload = json.dumps(
        {"model": model, "messages": list(messages), "params": params},
        sort_keys=True,
        ensure_ascii=False,
    )
    return content_hash(payload)


def temperature_schedule(n: int, *, step: float, start: float = 0.0) -> list[float]:
    """Temperatures for ``n`` samples: start, start+step, ... (seed: 0.0, 0.1, 0.2)."""
    return [round(start + i * step, 4) for i in range(n)]


class LLMClient:
    """Synchronous OpenAI-compatible chat client.

    Args:
        base_url: server root including ``/v1`` (a missing ``/v1`` is added).
        model: model name sent with each request.
        api_key: bearer token, if the server needs one.
        timeout_s: per-request timeout.
        max_retries: extra attempts after a connection error, timeout or 5xx.
        cache: optional response cache.
    """

    def __init__(
        self,
        base_url: str,
        *,
        model: str = "local",
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        cache: ResponseCache | None = None,
    ) -> None:
        base = base_url.rstrip("/")
        if not base.endswith("/v1"):
            base += "/v1"
        self.base_url = base
        self.model = model
        self.max_retries = max_retries
        self.cache = cache
        self.usage = Usage()
        headers = {"Content-Type": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._http = httpx.Client(timeout=httpx.Timeout(timeout_s), headers=headers)

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._http.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def health(self) -> bool:
        """True when the server answers its model list."""
        try:
            resp = self._http.get(self.base_url + "/models", timeout=5.0)
        except httpx.HTTPError:
            return False
        return resp.status_code == 200

    def chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        max_tokens: int = 256,
        seed: int | None = None,
        stop: Sequence[str] | None = None,
        use_cache: bool = True,
    ) -> ChatResponse:
        """One chat completion.

        Raises:
            LLMUnavailableError: unreachable server or timeout after all retries.
            LLMResponseError: a 4xx answer or a reply without a message.
        """
        params: dict[str, object] = {"temperature": temperature, "max_tokens": max_tokens}
        if seed is not None:
            params["seed"] = seed
        if stop:
            params["stop"] = list(stop)
        key = cache_key(self.model, messages, params)
        if use_cache and self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                cached = ChatResponse(
                    text=hit.text,
                    model=hit.model,
                    prompt_tokens=hit.prompt_tokens,
                    completion_tokens=hit.completion_tokens,
                    latency_ms=0.0,
                    cached=True,
                    finish_reason=hit.finish_reason,
                )
                self.usage.add(cached)
                return cached
        body = {"model": self.model, "messages": list(messages), **params}
        response = self._post_with_retries(body)
        self.usage.add(response)
        if use_cache and self.cache is not None:
            self.cache.put(key, response)
        return response

    def _post_with_retries(self, body: dict[str, object]) -> ChatResponse:
        last: str = "no attempt"
        for attempt in range(self.max_retries + 1):
            started = time.perf_counter()
            try:
                resp = self._http.post(self.base_url + "/chat/completions", json=body)
            except httpx.TimeoutException:
                last = "timeout"
            except httpx.HTTPError as exc:
                last = f"connection error ({type(exc).__name__})"
            else:
                latency = (time.perf_counter() - started) * 1000
                if resp.status_code >= 500:
                    last = f"server error HTTP {resp.status_code}"
                elif resp.status_code >= 400:
                    self.usage.errors += 1
                    raise LLMResponseError(
                        f"LLM server refused the request: HTTP {resp.status_code}"
                    )
                else:
                    return self._parse(resp, latency)
            self.usage.errors += 1
            if attempt < self.max_retries:
                time.sleep(min(2.0, 0.25 * 2**attempt))
        log.warning("llm call failed after %d attempts: %s", self.max_retries + 1, last)
        raise LLMUnavailableError(f"LLM server unavailable: {last}")

    def _parse(self, resp: httpx.Response, latency_ms: float) -> ChatResponse:
        try:
            data = resp.json()
            choice = data["choices"][0]
            text = choice["message"]["content"]
            if not isinstance(text, str):
                raise TypeError("content is not a string")
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            self.usage.errors += 1
            raise LLMResponseError(
                f"malformed reply from LLM server ({type(exc).__name__}, {len(resp.content)} bytes)"
            ) from None
        usage = data.get("usage") or {}
        return ChatResponse(
            text=text,
            model=str(data.get("model") or self.model),
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            latency_ms=latency_ms,
            finish_reason=choice.get("finish_reason"),
        )

    def sample(
        self,
        messages: Sequence[Message],
        n: int,
        *,
        temperatures: Sequence[float] | None = None,
        max_tokens: int = 256,
    ) -> list[ChatResponse]:
        """``n`` completions of the same prompt over a temperature schedule.

        Each sample gets its own seed so that cached responses stay distinct per sample.
        """
        temps = list(temperatures) if temperatures is not None else [1.0] * n
        if len(temps) < n:
            temps += [temps[-1] if temps else 1.0] * (n - len(temps))
        return [
            self.chat(messages, temperature=temps[i], max_tokens=max_tokens, seed=1000 + i)
            for i in range(n)
        ]


def client_from_settings(settings: object, *, cache: ResponseCache | None = None) -> LLMClient:
    """Build a client from :class:`core.config.Settings`.

    Raises:
        LLMUnavailableError: when no ``GROUNDWATCH_LLM_BASE_URL`` is configured.
    """
    base_url = getattr(settings, "llm_base_url", None)
    if not base_url:
        raise LLMUnavailableError("no LLM configured (GROUNDWATCH_LLM_BASE_URL is unset)")
    return LLMClient(
        base_url,
        model=getattr(settings, "llm_model", "local"),
        api_key=getattr(settings, "llm_api_key", None),
        timeout_s=float(getattr(settings, "llm_timeout_s", 60.0)),
        max_retries=int(getattr(settings, "llm_max_retries", 2)),
        cache=cache,
    )
