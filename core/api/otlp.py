"""OpenTelemetry ingestion: ``POST /v1/traces`` takes an OTLP/HTTP trace export and checks
the answers in it.

The body is an ``ExportTraceServiceRequest`` of the official ``opentelemetry-proto``
definitions, in protobuf (``application/x-protobuf``) or in the OTLP JSON mapping
(``application/json``, read by ``google.protobuf.json_format``), optionally gzip-compressed
(``Content-Encoding: gzip``). The answer is an ``ExportTraceServiceResponse`` in the request's
encoding; errors in the body are a ``google.rpc.Status`` in that encoding, as OTLP asks.

Each LLM span with a patient becomes an import record (:mod:`core.otel` maps the OpenInference
and OpenTelemetry GenAI conventions; the patient only from the attribute named by
``GROUNDWATCH_OTLP_PATIENT_ATTRIBUTE``, default ``groundwatch.patient_id``), checked and stored
by the same function as ``POST /v1/answers``; its id ``otel-<trace id>-<span id>`` makes
sending an export again store nothing twice. An LLM span without a patient, without an
answer, that makes an invalid record or whose id is stored with other content is rejected:
counted in ``partial_success.rejected_spans`` with the reasons in its message (counts and
field names, no text), nothing of it stored. Other spans are accepted and carry nothing to
check. Retriever spans are grouped with the LLM spans of their trace within one export.
"""

from __future__ import annotations

import base64
import re
import zlib
from collections.abc import Callable, Sequence
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from starlette.concurrency import run_in_threadpool

from core.api.errors import ApiError
from core.api.keys import Caller
from core.api.runtime import Runtime
from core.otel import Rejected, build_records, rejection_message, spans_of
from core.records import ConversationRecord, parse_record
from core.storage.public import AnswerStored
from core.text import JSONInputError, loads_input

PROTOBUF = "application/x-protobuf"
JSON = "application/json"

Ingest = Callable[[Runtime, Sequence[ConversationRecord], Caller], list[AnswerStored]]

# google.rpc.Code of each status this route answers with (OTLP clients only log it)
_RPC_CODES = {400: 3, 409: 6, 413: 8, 415: 3, 422: 3, 503: 14}


def otlp_router(runtime: Runtime, *, caller: Any, ingest: Ingest) -> APIRouter:
    """``POST /v1/traces``; ``caller`` is the dependency resolving the ``ingest`` key and
    ``ingest`` the function that checks and stores records for ``POST /v1/answers``."""
    router = APIRouter(prefix="/v1")
    settings = runtime.settings

    @router.post(
        "/traces",
        summary="Check the answers of an OpenTelemetry trace export (OTLP/HTTP)",
        tags=["opentelemetry"],
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {
                    PROTOBUF: {"schema": {"type": "string", "format": "binary"}},
                    JSON: {"schema": {"type": "object"}},
                },
            }
        },
        responses={
            200: {"description": "ExportTraceServiceResponse (rejected spans counted)."},
            400: {"description": "Not an ExportTraceServiceRequest (google.rpc.Status)."},
            401: {"description": "No API key, or an unknown or revoked one."},
            403: {"description": "The key lacks the ingest scope."},
            413: {"description": "Body, or body once decompressed, above the limit."},
            415: {"description": "Content-Type or Content-Encoding not supported."},
        },
    )
    async def post_traces(request: Request, who: Caller = caller) -> Response:
        """An OTLP/HTTP trace export: each LLM span with a patient becomes a checked, stored
        answer (id ``otel-<trace id>-<span id>``); the others are counted as rejected in
        ``partial_success`` with the reason. Re-sending an export changes nothing."""
        encoding = _media_type(request.headers.get("content-type"))
        compression = (request.headers.get("content-encoding") or "identity").strip().lower()
        if compression not in ("gzip", "identity"):
            raise ApiError(
                415, "unsupported_encoding", "Content-Encoding must be gzip or absent (identity)"
            )
        body = await request.body()

        def work() -> Response:
            try:
                data = _gunzip(body, settings.api_max_body_bytes) if compression == "gzip" else body
                export = _parse(data, encoding)
                spans = list(spans_of(export))
                built, rejected = build_records(
                    spans, patient_attribute=settings.otlp_patient_attribute
                )
                valid = _validate(built, rejected, settings.max_transcript_chars)
                _store(runtime, ingest, who, valid, rejected)
            except ApiError as exc:
                return _status(exc, encoding)
            return _response(rejected, encoding, settings.otlp_patient_attribute)

        return await run_in_threadpool(work)

    return router


# ----------------------------------------------------------------------------- decoding


def _media_type(value: str | None) -> str:
    kind = (value or "").split(";", 1)[0].strip().lower()
    if kind not in (PROTOBUF, JSON):
        raise ApiError(
            415,
            "unsupported_media_type",
            f"Content-Type must be {PROTOBUF} or {JSON} (an OTLP/HTTP trace export)",
        )
    return kind


def _gunzip(body: bytes, limit: int) -> bytes:
    """The gzip body inflated, refused once it grows past ``limit`` bytes."""
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        data = inflater.decompress(body, limit + 1)
    except zlib.error:
        raise ApiError(400, "invalid_gzip", "body: not valid gzip data") from None
    if len(data) > limit or inflater.unconsumed_tail:
        raise ApiError(
            413,
            "body_too_large",
            f"body: above the limit of {limit} bytes once decompressed "
            "(GROUNDWATCH_API_MAX_BODY_BYTES)",
        )
    if not inflater.eof:
        raise ApiError(400, "invalid_gzip", "body: gzip data ends early")
    return data


def _parse(data: bytes, encoding: str) -> ExportTraceServiceRequest:
    if not data.strip():
        raise ApiError(400, "empty_body", "the request body is empty")
    export = ExportTraceServiceRequest()
    if encoding == PROTOBUF:
        try:
            export.ParseFromString(data)
        except DecodeError:
            raise ApiError(
                400, "invalid_protobuf", "body: not a protobuf ExportTraceServiceRequest"
            ) from None
        export.DiscardUnknownFields()
        if not export.resource_spans:
            raise ApiError(
                400, "invalid_protobuf", "body: no resource_spans in the ExportTraceServiceRequest"
            )
        return export
    try:
        obj = loads_input(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise ApiError(400, "invalid_utf8", f"body: invalid UTF-8 at byte {exc.start}") from None
    except JSONInputError as exc:
        raise ApiError(400, "invalid_json", f"body: not valid JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise ApiError(400, "invalid_otlp_json", "body: expected a JSON object")
    _hex_ids_to_base64(obj)
    try:
        json_format.ParseDict(obj, export, ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        path = ".".join(re.findall(r"Failed to parse (\w+) field", str(exc)))
        where = f" (field {path})" if path else ""
        raise ApiError(
            400, "invalid_otlp_json", f"body: not an ExportTraceServiceRequest{where}"
        ) from None
    if not export.resource_spans:
        raise ApiError(400, "invalid_otlp_json", "body: no resourceSpans in the export")
    return export


_ID_FIELDS = ("traceId", "trace_id", "spanId", "span_id", "parentSpanId", "parent_span_id")


def _hex_ids_to_base64(obj: dict[str, Any]) -> None:
    """OTLP JSON writes trace and span ids as hex, where the protobuf JSON mapping expects
    base64: rewrite them in place so ``json_format`` reads the official message."""

    def fix(item: Any, where: str) -> None:
        if not isinstance(item, dict):
            return
        for key in _ID_FIELDS:
            value = item.get(key)
            if isinstance(value, str):
                try:
                    item[key] = base64.b64encode(bytes.fromhex(value)).decode("ascii")
                except ValueError:
                    raise ApiError(
                        400, "invalid_otlp_json", f"body: {where}.{key}: not a hex id"
                    ) from None

    for r, resource in enumerate(_items(obj, "resourceSpans", "resource_spans")):
        for s, scope in enumerate(_items(resource, "scopeSpans", "scope_spans")):
            for n, span in enumerate(_items(scope, "spans")):
                where = f"resourceSpans[{r}].scopeSpans[{s}].spans[{n}]"
                fix(span, where)
                for k, link in enumerate(_items(span, "links")):
                    fix(link, f"{where}.links[{k}]")


def _items(obj: Any, *keys: str) -> list[Any]:
    if not isinstance(obj, dict):
        return []
    for key in keys:
        value = obj.get(key)
        if isinstance(value, list):
            return value
    return []


# ----------------------------------------------------------------------------- storing


def _validate(
    built: list[dict[str, Any]], rejected: list[Rejected], max_chars: int
) -> list[ConversationRecord]:
    valid = []
    for obj in built:
        try:
            valid.append(parse_record(obj, max_text_chars=max_chars))
        except ValueError as exc:
            rejected.append(Rejected("invalid", str(exc)))
    return valid


def _store(
    runtime: Runtime,
    ingest: Ingest,
    caller: Caller,
    records: list[ConversationRecord],
    rejected: list[Rejected],
) -> None:
    """The records in time order, up to ``GROUNDWATCH_API_MAX_BATCH`` per transaction; when
    one of a group is stored already with other content, the group's records one by one, so
    that the others still land and the conflicting ones are counted."""
    ordered = sorted(records, key=lambda r: r.when)
    size = runtime.settings.api_max_batch
    for start in range(0, len(ordered), size):
        group = ordered[start : start + size]
        try:
            ingest(runtime, group, caller)
            continue
        except ApiError as exc:
            if exc.status != 409:
                raise
        if len(group) == 1:
            rejected.append(Rejected("conflict"))
            continue
        for record in group:
            try:
                ingest(runtime, [record], caller)
            except ApiError as exc:
                if exc.status != 409:
                    raise
                rejected.append(Rejected("conflict"))


# ----------------------------------------------------------------------------- answers


def _response(rejected: Sequence[Rejected], encoding: str, patient_attribute: str) -> Response:
    """The ExportTraceServiceResponse in the request's encoding; ``partial_success`` only
    when spans were rejected, as OTLP asks."""
    answer = ExportTraceServiceResponse()
    if rejected:
        answer.partial_success.rejected_spans = len(rejected)
        answer.partial_success.error_message = rejection_message(
            rejected, patient_attribute=patient_attribute
        )
    if encoding == PROTOBUF:
        return Response(answer.SerializeToString(), media_type=PROTOBUF)
    return Response(json_format.MessageToJson(answer, indent=None), media_type=JSON)


def _status(exc: ApiError, encoding: str) -> Response:
    """An error as the ``google.rpc.Status`` OTLP asks for, in the request's encoding."""
    status = Status(code=_RPC_CODES.get(exc.status, 2), message=f"{exc.error}: {exc.detail}")
    if encoding == PROTOBUF:
        body = status.SerializeToString()
    else:
        body = json_format.MessageToJson(status, indent=None).encode()
    return Response(body, status_code=exc.status, media_type=encoding, headers=exc.headers)
