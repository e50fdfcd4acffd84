"""OpenTelemetry ingestion (``POST /v1/traces``) against a real uvicorn server on SQLite and
PostgreSQL: spans made by the official SDK (TracerProvider) and sent by the official OTLP/HTTP
exporter, in the OpenInference and the OpenTelemetry GenAI conventions; the same exports in
the OTLP JSON mapping, gzip-compressed too; bad bodies refused with nothing stored;
re-sending stores nothing twice; the ingest scope; no patient text in any log line or
response.
"""

from __future__ import annotations

import base64
import gzip
import json
import logging
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
import pytest
from google.protobuf import json_format
from google.rpc.status_pb2 import Status
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import format_span_id, format_trace_id
from sqlalchemy import select
from sqlalchemy.engine import Engine

from core.config import load_settings
from core.storage import models as m
from core.storage.db import read_session
from tests.integration.api_server import Server, running_api

pytestmark = [pytest.mark.model, pytest.mark.timeout(600)]

SENTINEL = "Zebrafinch-Quokka-7731"  # patient text that must never reach a log or response
MAX_BODY = 200_000
MAX_BATCH = 2
PROTOBUF = {"Content-Type": "application/x-protobuf"}
JSON = {"Content-Type": "application/json"}
NOTE = "Metformin 500 mg twice daily. Lisinopril 10 mg daily."
ANSWER = "She takes metformin 500 mg twice daily. She had an MRI of the left knee."


@pytest.fixture
def api(engine: Engine, db_url: str) -> Iterator[Server]:
    """A real uvicorn server on a free port over the fresh, migrated database, ready."""
    settings = load_settings(
        database_url=db_url,
        learned_verifier=False,
        api_max_body_bytes=MAX_BODY,
        api_max_batch=MAX_BATCH,  # exports of more LLM spans are stored in several groups
    )
    keys = {"ingester": ["ingest"], "reader": ["read"], "admin": ["admin"]}
    with running_api(engine, settings, keys) as server:
        yield server


# --------------------------------------------------------------------------- spans


class Spans:
    """A TracerProvider of the official SDK whose finished spans are kept in memory."""

    def __init__(self, resource: dict[str, Any] | None = None) -> None:
        self.memory = InMemorySpanExporter()
        self.provider = TracerProvider(
            resource=Resource.create({"service.name": "clinic-app", **(resource or {})})
        )
        self.provider.add_span_processor(SimpleSpanProcessor(self.memory))
        self.tracer = self.provider.get_tracer("clinic-app")

    def finished(self) -> Sequence[ReadableSpan]:
        return self.memory.get_finished_spans()


def openinference_trace(spans: Spans, *, patient: str | None, query: str, answer: str) -> str:
    """A RAG request as OpenInference instruments it: a chain span (with the patient id),
    a retriever span and an LLM span. Returns the LLM span's record id."""
    chain_attrs: dict[str, Any] = {
        "openinference.span.kind": "CHAIN",
        "input.value": query,
        "session.id": "session-9",
        "user.id": "dr-who",
    }
    if patient is not None:
        chain_attrs["groundwatch.patient_id"] = patient
    with spans.tracer.start_as_current_span("rag", attributes=chain_attrs):
        with spans.tracer.start_as_current_span(
            "retrieve",
            attributes={
                "openinference.span.kind": "RETRIEVER",
                "input.value": query,
                "retrieval.documents.0.document.id": "note-1",
                "retrieval.documents.0.document.content": NOTE,
                "retrieval.documents.0.document.score": 0.82,
                "retrieval.documents.1.document.id": "note-2",
                "retrieval.documents.1.document.content": "Allergies: penicillin (rash).",
            },
        ):
            pass
        with spans.tracer.start_as_current_span(
            "ChatCompletion",
            attributes={
                "openinference.span.kind": "LLM",
                "llm.model_name": "clinic-llm-v2",
                "llm.input_messages.0.message.role": "system",
                "llm.input_messages.0.message.content": "Answer from the notes only.",
                "llm.input_messages.1.message.role": "user",
                "llm.input_messages.1.message.content": query,
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": answer,
                "input.value": json.dumps({"messages": [{"role": "user", "content": query}]}),
                "input.mime_type": "application/json",
            },
        ) as llm:
            ctx = llm.get_span_context()
        with spans.tracer.start_as_current_span("GET /notes", attributes={"http.method": "GET"}):
            pass
    return f"otel-{format_trace_id(ctx.trace_id)}-{format_span_id(ctx.span_id)}"


def _llm_id(span: Any) -> str:
    ctx = span.get_span_context()
    return f"otel-{format_trace_id(ctx.trace_id)}-{format_span_id(ctx.span_id)}"


def genai_traces(spans: Spans) -> dict[str, tuple[str, str, str]]:
    """Three GenAI-style LLM spans, one per way the conventions carry messages; the patient
    id sits on the resource. Returns record id -> (query, answer, model)."""
    made: dict[str, tuple[str, str, str]] = {}
    t = spans.tracer
    with t.start_as_current_span(
        "chat gpt-clinic",
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-clinic",
            "gen_ai.request.temperature": 0.2,
            "gen_ai.input.messages": json.dumps(
                [
                    {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
                    {"role": "user", "parts": [{"type": "text", "content": "Any allergies?"}]},
                ]
            ),
            "gen_ai.output.messages": json.dumps(
                [
                    {
                        "role": "assistant",
                        "parts": [{"type": "text", "content": "She is allergic to penicillin."}],
                        "finish_reason": "stop",
                    }
                ]
            ),
        },
    ) as span:
        made[_llm_id(span)] = ("Any allergies?", "She is allergic to penicillin.", "gpt-clinic")
    with t.start_as_current_span(
        "openai.chat",
        attributes={
            "gen_ai.system": "openai",
            "gen_ai.request.model": "gpt-older",
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "What does she take for blood pressure?",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": "Lisinopril 10 mg daily.",
        },
    ) as span:
        made[_llm_id(span)] = (
            "What does she take for blood pressure?",
            "Lisinopril 10 mg daily.",
            "gpt-older",
        )
    with t.start_as_current_span(
        "chat", attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-events"}
    ) as span:
        span.add_event("gen_ai.system.message", {"content": "Be brief."})
        span.add_event("gen_ai.user.message", {"content": "Is she diabetic?"})
        span.add_event(
            "gen_ai.choice",
            {"index": 0, "message": json.dumps({"role": "assistant", "content": "Yes, type 2."})},
        )
        made[_llm_id(span)] = ("Is she diabetic?", "Yes, type 2.", "gpt-events")
    with t.start_as_current_span(
        "embeddings",
        attributes={"gen_ai.operation.name": "embeddings", "gen_ai.request.model": "e"},
    ):
        pass
    return made


def export_of(spans: Sequence[ReadableSpan]) -> ExportTraceServiceRequest:
    """The ExportTraceServiceRequest the official exporter sends for these spans."""
    return encode_spans(spans)


def otlp_json(export: ExportTraceServiceRequest) -> bytes:
    """The export in the OTLP JSON mapping: the protobuf JSON mapping with trace and span ids
    as hex, not base64."""
    obj = json_format.MessageToDict(export, use_integers_for_enums=True)
    for resource in obj.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(obj).encode()


def exporter(api: Server, key: str = "ingester", **kwargs: Any) -> OTLPSpanExporter:
    return OTLPSpanExporter(
        endpoint=f"{api.base_url}/v1/traces",
        headers={"Authorization": f"Bearer {api.keys[key]}"},
        timeout=120,
        **kwargs,
    )


def answer(api: Server, record_id: str) -> dict[str, Any]:
    with api.client("reader") as c:
        r = c.get(f"/v1/answers/{record_id}")
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def sources(api: Server, record_id: str) -> list[dict[str, Any]]:
    """The sources stored with a record (the API's report does not repeat them)."""
    with read_session(api.engine) as s:
        found = s.execute(
            select(m.Conversation.sources).where(m.Conversation.external_id == record_id)
        ).scalar_one()
    return list(found)


def partial(r: httpx.Response) -> ExportTraceServiceResponse:
    assert r.status_code == 200, r.text
    out = ExportTraceServiceResponse()
    if r.headers["content-type"].startswith("application/x-protobuf"):
        out.ParseFromString(r.content)
    else:
        json_format.Parse(r.text, out)
    return out


# --------------------------------------------------------------------------- tests


def test_openinference_spans_from_the_sdk_exporter_are_checked_and_stored_once(
    api: Server, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    spans = Spans()
    stored_id = openinference_trace(
        spans, patient="p-1", query="What is she taking for diabetes?", answer=ANSWER
    )
    openinference_trace(  # session.id and user.id but no patient attribute: rejected
        spans, patient=None, query=f"Does {SENTINEL} take insulin?", answer=f"{SENTINEL} does."
    )
    finished = spans.finished()
    assert exporter(api).export(finished) == SpanExportResult.SUCCESS
    assert api.count() == 1

    got = answer(api, stored_id)
    assert got["patient_id"] == "p-1"
    assert got["query"] == "What is she taking for diabetes?"
    assert got["answer"] == ANSWER
    assert got["model"] == "clinic-llm-v2"
    assert [s["id"] for s in sources(api, stored_id)] == ["note-1", "note-2"]
    assert sources(api, stored_id)[0] == {
        "id": "note-1",
        "text": NOTE,
        "type": "document",
        "similarity": 0.82,
    }
    first, second = got["statements"]
    assert first["status"] == "grounded"
    assert first["source_id"] == "note-1"
    assert second["status"] == "unsupported"
    assert got["flagged"] is True

    # the same export again, as raw protobuf: the response counts the rejected span and why
    body = export_of(finished).SerializeToString()
    with api.client("ingester") as c:
        r = c.post("/v1/traces", content=body, headers=PROTOBUF)
    assert r.headers["content-type"] == "application/x-protobuf"
    result = partial(r)
    assert result.partial_success.rejected_spans == 1
    message = result.partial_success.error_message
    assert "1 without the groundwatch.patient_id attribute" in message
    assert SENTINEL not in message
    assert api.count() == 1
    assert answer(api, stored_id)["statements"] == got["statements"]

    logged = "\n".join(
        f"{rec.name} {rec.getMessage()}"
        for rec in caplog.records
        if not rec.name.startswith(("httpx", "httpcore", "urllib3"))
    )
    assert "POST /v1/traces 200" in logged
    assert SENTINEL not in logged


def test_an_application_traced_as_the_readme_shows_is_checked(api: Server) -> None:
    """The README's set-up: a BatchSpanProcessor with the OTLP/HTTP exporter (API key header,
    gzip), the patient id on the application's own root span only, and OpenInference spans
    beneath it: flushed, checked and stored under the root span's patient."""
    provider = TracerProvider()
    provider.add_span_processor(
        BatchSpanProcessor(
            OTLPSpanExporter(
                endpoint=f"{api.base_url}/v1/traces",
                headers={"Authorization": f"Bearer {api.keys['ingester']}"},
                compression=Compression.Gzip,
            )
        )
    )
    tracer = provider.get_tracer("clinic-app")
    with tracer.start_as_current_span("answer", attributes={"groundwatch.patient_id": "p-7"}):
        with tracer.start_as_current_span(
            "llm",
            attributes={
                "openinference.span.kind": "LLM",
                "llm.model_name": "clinic-llm-v3",
                "input.value": "Any allergies?",
                "output.value": "She is allergic to penicillin.",
            },
        ) as llm:
            record_id = _llm_id(llm)
    assert provider.force_flush(timeout_millis=120_000)
    provider.shutdown()
    got = answer(api, record_id)
    assert (got["patient_id"], got["query"], got["answer"], got["model"]) == (
        "p-7",
        "Any allergies?",
        "She is allergic to penicillin.",
        "clinic-llm-v3",
    )
    assert api.count() == 1


def test_genai_spans_are_read_from_attributes_and_events_gzip(api: Server) -> None:
    spans = Spans(resource={"groundwatch.patient_id": "p-2"})
    made = genai_traces(spans)
    assert exporter(api, compression=Compression.Gzip).export(spans.finished()) == (
        SpanExportResult.SUCCESS
    )
    assert api.count() == 3
    for record_id, (query, text, model) in made.items():
        got = answer(api, record_id)
        assert (got["patient_id"], got["query"], got["answer"], got["model"]) == (
            "p-2",
            query,
            text,
            model,
        ), record_id
        assert sources(api, record_id) == []
        assert got["checks"]["grounding"]["status"] in {"ok", "skipped"}


def test_json_exports_and_gzip_and_conflicts(api: Server) -> None:
    spans = Spans(resource={"groundwatch.patient_id": "p-3"})
    made = genai_traces(spans)
    export = export_of(spans.finished())
    body = otlp_json(export)
    with api.client("ingester") as c:
        r = c.post("/v1/traces", content=body, headers=JSON)
        assert r.headers["content-type"] == "application/json"
        assert r.json() == {}  # everything accepted: no partialSuccess
        assert api.count() == 3
        for record_id in made:
            assert answer(api, record_id)["patient_id"] == "p-3"

        zipped = c.post(
            "/v1/traces", content=gzip.compress(body), headers=JSON | {"Content-Encoding": "gzip"}
        )
        assert zipped.json() == {}
        protobuf = c.post(
            "/v1/traces",
            content=gzip.compress(export.SerializeToString()),
            headers=PROTOBUF | {"Content-Encoding": "gzip"},
        )
        assert partial(protobuf).partial_success.rejected_spans == 0
        assert api.count() == 3

        # a hand-written OTLP JSON export (hex ids, attributes as the spec spells them)
        trace_id, span_id = "5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174"
        written = _hand_written(trace_id, span_id, answer="She takes warfarin 5 mg daily.")
        r = c.post("/v1/traces", content=json.dumps(written), headers=JSON)
        assert r.json() == {}
        got = answer(api, f"otel-{trace_id}-{span_id}")
        assert got["answer"] == "She takes warfarin 5 mg daily."
        assert got["timestamp"].startswith("2024-01-02T")
        assert api.count() == 4

        # the same span with another answer: refused (only an admin key replaces), the rest lands
        edited = _hand_written(trace_id, span_id, answer=f"{SENTINEL} takes nothing.")
        second = _hand_written(trace_id, "aaaabbbbccccdddd", answer="She takes aspirin.")
        spans_of = edited["resourceSpans"][0]["scopeSpans"][0]["spans"]
        spans_of += second["resourceSpans"][0]["scopeSpans"][0]["spans"]
        r = c.post("/v1/traces", content=json.dumps(edited), headers=JSON)
        body_out = r.json()
        assert body_out["partialSuccess"]["rejectedSpans"] in (1, "1")
        assert "stored already with other content" in body_out["partialSuccess"]["errorMessage"]
        assert SENTINEL not in r.text
        assert api.count() == 5
        assert answer(api, f"otel-{trace_id}-{span_id}")["answer"] == got["answer"]
    with api.client("admin") as admin:
        r = admin.post("/v1/traces", content=json.dumps(edited), headers=JSON)
        assert r.json() == {}
    assert answer(api, f"otel-{trace_id}-{span_id}")["answer"] == f"{SENTINEL} takes nothing."
    assert api.count() == 5


def _hand_written(trace_id: str, span_id: str, *, answer: str) -> dict[str, Any]:
    def attr(key: str, value: str) -> dict[str, Any]:
        return {"key": key, "value": {"stringValue": value}}

    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [attr("service.name", "ehr-assistant")]},
                "scopeSpans": [
                    {
                        "scope": {"name": "openinference"},
                        "spans": [
                            {
                                "traceId": trace_id,
                                "spanId": span_id,
                                "parentSpanId": "",
                                "name": "llm",
                                "kind": 1,
                                "startTimeUnixNano": "1704186000000000000",
                                "endTimeUnixNano": "1704186001000000000",
                                "attributes": [
                                    attr("openinference.span.kind", "LLM"),
                                    attr("groundwatch.patient_id", "p-4"),
                                    attr("llm.model_name", "clinic-llm-v2"),
                                    attr("input.value", "What anticoagulant does she take?"),
                                    attr("output.value", answer),
                                    {"key": "llm.token_count.total", "value": {"intValue": "42"}},
                                ],
                            }
                        ],
                    }
                ],
            }
        ]
    }


def test_bad_bodies_are_refused_clearly_and_store_nothing(api: Server) -> None:
    spans = Spans(resource={"groundwatch.patient_id": "p-5"})
    genai_traces(spans)
    good = export_of(spans.finished()).SerializeToString()
    secret_json = json.dumps(
        {
            "resourceSpans": [
                {"scopeSpans": [{"spans": [{"name": {SENTINEL: 1}, "traceId": "ab" * 16}]}]}
            ]
        }
    ).encode()
    cases: list[tuple[str, bytes, dict[str, str], int, str]] = [
        ("garbage bytes", b"\xff\x00garbage" + SENTINEL.encode(), PROTOBUF, 400, "not a protobuf"),
        ("empty protobuf", b"", PROTOBUF, 400, "empty"),
        ("empty JSON", b"  ", JSON, 400, "empty"),
        ("truncated protobuf", good[: len(good) // 2], PROTOBUF, 400, "not a protobuf"),
        ("malformed JSON", b'{"resourceSpans": [', JSON, 400, "not valid JSON"),
        ("JSON array", b"[1, 2]", JSON, 400, "expected a JSON object"),
        ("JSON of another shape", b'{"spans": []}', JSON, 400, "no resourceSpans"),
        ("wrong field type", secret_json, JSON, 400, "field resourceSpans.scopeSpans.spans.name"),
        (
            "trace id not hex",
            json.dumps(_hand_written(SENTINEL, "eee19b7ec3c1b174", answer="x")).encode(),
            JSON,
            400,
            "spans[0].traceId: not a hex id",
        ),
        ("invalid UTF-8", b'{"resourceSpans": "\xff"}', JSON, 400, "invalid UTF-8"),
        ("bad gzip", b"\x1f\x8b not gzip", PROTOBUF | {"Content-Encoding": "gzip"}, 400, "gzip"),
        (
            "gzip bomb",
            gzip.compress(b"\x00" * (MAX_BODY * 5)),
            PROTOBUF | {"Content-Encoding": "gzip"},
            413,
            "once decompressed",
        ),
    ]
    with api.client("ingester") as c:
        for name, body, headers, status, says in cases:
            r = c.post("/v1/traces", content=body, headers=headers)
            assert r.status_code == status, (name, r.status_code, r.text[:300])
            kind = headers["Content-Type"]
            assert r.headers["content-type"] == kind, name
            found = Status()
            if kind == PROTOBUF["Content-Type"]:
                found.ParseFromString(r.content)
            else:
                json_format.Parse(r.text, found)
            assert says in found.message, (name, found.message)
            assert SENTINEL not in r.text, name
        for name, headers, says in (
            ("text/plain", {"Content-Type": "text/plain"}, "Content-Type must be"),
            ("no content type", {}, "Content-Type must be"),
            ("brotli", PROTOBUF | {"Content-Encoding": "br"}, "Content-Encoding must be"),
        ):
            r = c.post("/v1/traces", content=good, headers=headers)
            assert r.status_code == 415, (name, r.text)
            assert r.json()["error"].startswith("unsupported"), name
            assert says in r.json()["detail"], name
        huge = c.post("/v1/traces", content=b"\x00" * (MAX_BODY + 1), headers=PROTOBUF)
        assert huge.status_code == 413
    assert api.count() == 0


def test_traces_need_the_ingest_scope(api: Server) -> None:
    spans = Spans(resource={"groundwatch.patient_id": "p-6"})
    genai_traces(spans)
    body = export_of(spans.finished()).SerializeToString()
    with httpx.Client(base_url=api.base_url) as anon:
        r = anon.post("/v1/traces", content=body, headers=PROTOBUF)
        assert r.status_code == 401
        assert r.json()["error"] == "unauthorized"
    with api.client("reader") as reader:
        r = reader.post("/v1/traces", content=body, headers=PROTOBUF)
        assert r.status_code == 403
        assert r.json() == {"error": "forbidden", "detail": "this API key lacks the 'ingest' scope"}
    assert exporter(api, key="reader").export(spans.finished()) == SpanExportResult.FAILURE
    assert api.count() == 0
    with api.client("reader") as reader:
        doc = reader.get("/openapi.json").json()
    content = doc["paths"]["/v1/traces"]["post"]["requestBody"]["content"]
    assert set(content) == {"application/x-protobuf", "application/json"}
