"""Errors of the API: JSON ``{"error": code, "detail": ...}`` naming the field, never echoing
record text, and the ASGI middleware that logs each request (method, route template, status,
time; never a path or query string), counts it, limits the body and turns any unexpected
exception into a 500 with an incident code."""

from __future__ import annotations

import logging
import time
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from core.api.runtime import Metrics

log = logging.getLogger("core.api")


class ApiError(Exception):
    """An error answered as JSON: HTTP status, a short code and a detail naming the field."""

    def __init__(
        self,
        status: int,
        error: str,
        detail: Any,
        *,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(error)
        self.status = status
        self.error = error
        self.detail = detail
        self.headers = headers


def error_response(
    status: int, error: str, detail: Any, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse({"error": error, "detail": detail}, status_code=status, headers=headers)


async def api_error_handler(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return error_response(exc.status, exc.error, exc.detail, exc.headers)


_HTTP_CODES = {404: "not_found", 405: "method_not_allowed"}


async def http_error_handler(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = _HTTP_CODES.get(exc.status_code, "http_error")
    return error_response(exc.status_code, code, str(exc.detail), dict(exc.headers or {}))


def _field(loc: Any) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("query", "path", "header", "body"):
        return f"{parts[0]} parameter " + ".".join(parts[1:]) if len(parts) > 1 else parts[0]
    return ".".join(parts)


async def validation_error_handler(_request: Request, exc: Exception) -> JSONResponse:
    """422 naming each bad parameter and why, without the value that was sent."""
    assert isinstance(exc, RequestValidationError)
    detail = [
        {"field": _field(e.get("loc", ())), "message": str(e.get("msg", "invalid"))}
        for e in exc.errors()[:10]
    ]
    return error_response(422, "invalid_parameter", detail)


class BodyTooLarge(ApiError):
    def __init__(self, limit: int) -> None:
        super().__init__(
            413,
            "body_too_large",
            f"request body above the limit of {limit} bytes (GROUNDWATCH_API_MAX_BODY_BYTES)",
        )


class RequestMiddleware:
    """Outermost: times and counts each request by route template, logs one line per request
    without path or query string, caps the body at ``max_body`` bytes (413), and answers any
    exception that escapes the app with a 500 naming an incident code (its message and
    traceback are never logged: they can carry record text)."""

    def __init__(self, app: ASGIApp, *, metrics: Metrics, max_body: int) -> None:
        self.app = app
        self.metrics = metrics
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500
        response_started = False

        async def send_wrapper(message: Message) -> None:
            nonlocal status, response_started
            if message["type"] == "http.response.start":
                status = int(message["status"])
                response_started = True
            await send(message)

        try:
            length = _content_length(scope)
            if length is not None and length > self.max_body:
                await _send_json(scope, send_wrapper, BodyTooLarge(self.max_body))
            else:
                await self.app(scope, _limited(receive, self.max_body), send_wrapper)
        except Exception as exc:
            if isinstance(exc, ApiError) and not response_started:
                await _send_json(scope, send_wrapper, exc)
            else:
                from core.incidents import log_unhandled

                incident = log_unhandled(exc, surface="api")
                if not response_started:
                    await _send_json(
                        scope,
                        send_wrapper,
                        ApiError(
                            500,
                            "internal",
                            f"unexpected {type(exc).__name__} (incident {incident})",
                        ),
                    )
        finally:
            route = scope.get("route")
            template = getattr(route, "path", None) or "unmatched"
            method = str(scope.get("method", ""))
            elapsed = time.perf_counter() - started
            self.metrics.requests.labels(template, method, str(status)).inc()
            self.metrics.latency.labels(template).observe(elapsed)
            log.info("%s %s %d %.1f ms", method, template, status, elapsed * 1000)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _limited(receive: Receive, limit: int) -> Receive:
    seen = 0

    async def wrapped() -> Message:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                raise BodyTooLarge(limit)
        return message

    return wrapped


async def _send_json(scope: Scope, send: Send, exc: ApiError) -> None:
    response = error_response(exc.status, exc.error, exc.detail, exc.headers)
    await response(scope, _no_receive, send)


async def _no_receive() -> Message:
    return {"type": "http.disconnect"}
