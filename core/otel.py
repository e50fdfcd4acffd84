"""OpenTelemetry spans to import records, by the OpenInference and OpenTelemetry GenAI
conventions.

- OpenInference (Phoenix): ``openinference.span.kind`` ``LLM`` spans with
  ``llm.input_messages.N.message.role|content``, ``llm.output_messages...``, ``input.value``,
  ``output.value``, ``llm.model_name``; ``RETRIEVER`` spans with
  ``retrieval.documents.N.document.id|content|score``;
- OpenTelemetry GenAI: spans with ``gen_ai.operation.name`` ``chat``, ``text_completion`` or
  ``generate_content`` (or, without an operation, ``gen_ai.request.model``), their messages
  from ``gen_ai.input.messages`` / ``gen_ai.output.messages``, the indexed
  ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*``, the older ``gen_ai.prompt`` /
  ``gen_ai.completion`` or the span events (``gen_ai.user.message``, ``gen_ai.choice``,
  ``gen_ai.content.prompt``, ...); the model from ``gen_ai.request.model``.

Each LLM span becomes one record: the query is its last user message, the answer its first
output message, the sources the retrieved documents of every retriever span of the same trace
(and of the LLM span itself), the time its end. The record id is
``otel-<trace id hex>-<span id hex>``: the same span always makes the same record.

The patient comes only from the attribute the caller names (``groundwatch.patient_id`` by
default): on the LLM span, else on its resource, else on any span of its trace when the trace
carries a single value. ``session.id`` and ``user.id`` are never taken for a patient unless
they are the attribute named. An LLM span without a patient or without an answer is
rejected, with the reason; other spans (HTTP, chains, tools, embeddings) carry nothing to
check.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

RECORD_PREFIX = "otel-"
_LLM_OPERATIONS = {"chat", "text_completion", "generate_content"}


# ----------------------------------------------------------------------------- spans


@dataclass(frozen=True, slots=True)
class Span:
    """One span of an export, its attribute values decoded to plain Python."""

    trace_id: str
    span_id: str
    end_ns: int
    attributes: dict[str, Any]
    resource: dict[str, Any]
    events: tuple[tuple[str, dict[str, Any]], ...]


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    if kind is None or kind == "string_value_strindex":
        return None
    return getattr(value, kind)


def _attributes(pairs: Iterable[KeyValue]) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in pairs}


def spans_of(export: ExportTraceServiceRequest) -> Iterable[Span]:
    for resource_spans in export.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield Span(
                    trace_id=span.trace_id.hex(),
                    span_id=span.span_id.hex(),
                    end_ns=span.end_time_unix_nano,
                    attributes=_attributes(span.attributes),
                    resource=resource,
                    events=tuple((e.name, _attributes(e.attributes)) for e in span.events),
                )


# ----------------------------------------------------------------------------- mapping


@dataclass(frozen=True, slots=True)
class Rejected:
    """Why one LLM span was not stored: a reason code and the field or count, never text."""

    reason: str
    detail: str = ""


def _kind(span: Span) -> str:
    """``llm``, ``retriever`` or ``other``."""
    attrs = span.attributes
    kind = attrs.get("openinference.span.kind")
    if isinstance(kind, str) and kind:
        return {"LLM": "llm", "RETRIEVER": "retriever"}.get(kind.upper(), "other")
    operation = attrs.get("gen_ai.operation.name")
    if isinstance(operation, str) and operation:
        return "llm" if operation in _LLM_OPERATIONS else "other"
    if "gen_ai.request.model" in attrs or "llm.model_name" in attrs:
        return "llm"
    if any(key.startswith("retrieval.documents.") for key in attrs):
        return "retriever"
    return "other"


def _indexed(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``prefix.N.rest`` attributes as one dict of ``rest`` per N, in index order."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if not key.startswith(prefix + "."):
            continue
        index, _, rest = key[len(prefix) + 1 :].partition(".")
        if index.isdigit() and rest:
            found.setdefault(int(index), {})[rest] = value
    return [found[i] for i in sorted(found)]


def _text(value: Any) -> str | None:
    """Text of a message's content: a string, or the text parts of a list of parts."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [_part_text(p) for p in value]
        texts = [p for p in parts if p]
        return "\n".join(texts) if texts else None
    return None


def _part_text(part: Any) -> str | None:
    if isinstance(part, str):
        return part
    if isinstance(part, dict) and part.get("type", "text") == "text":
        for key in ("content", "text"):
            if isinstance(part.get(key), str):
                return str(part[key])
    return None


def _structured(value: Any) -> Any:
    """An attribute holding JSON text decoded (``gen_ai.input.messages`` and kin are JSON
    strings on most exporters, structured values on some); other values as they are."""
    if isinstance(value, str) and value.lstrip()[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _message_list(value: Any) -> list[tuple[str, str]]:
    """(role, text) of each message in a list of ``{"role", "content" | "parts"}``."""
    value = _structured(value)
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        return []
    out = []
    for item in value:
        if not isinstance(item, dict):
            continue
        inner = item.get("message")
        message: dict[str, Any] = inner if isinstance(inner, dict) else item
        text = _text(message.get("content"))
        if text is None:
            text = _text(message.get("parts"))
        if text is not None:
            out.append((str(message.get("role") or ""), text))
    return out


def _indexed_messages(attrs: dict[str, Any], prefix: str, inner: str) -> list[tuple[str, str]]:
    out = []
    for item in _indexed(attrs, prefix):
        text = item.get(f"{inner}content")
        if not isinstance(text, str):
            parts = _indexed(item, f"{inner}contents")
            text = _text([p.get("message_content.text") for p in parts])
        if isinstance(text, str):
            out.append((str(item.get(f"{inner}role") or ""), text))
    return out


def _event_messages(span: Span) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Input and output messages from GenAI span events."""
    inputs: list[tuple[str, str]] = []
    outputs: list[tuple[str, str]] = []
    for name, attrs in span.events:
        if "gen_ai.input.messages" in attrs or "gen_ai.output.messages" in attrs:
            inputs += _message_list(attrs.get("gen_ai.input.messages"))
            outputs += _message_list(attrs.get("gen_ai.output.messages"))
        elif name == "gen_ai.content.prompt":
            inputs += _loose_messages(attrs.get("gen_ai.prompt"), "user")
        elif name == "gen_ai.content.completion":
            outputs += _loose_messages(attrs.get("gen_ai.completion"), "assistant")
        elif name.startswith("gen_ai.") and name.endswith(".message"):
            role = name[len("gen_ai.") : -len(".message")]
            content = attrs.get("content", attrs.get("gen_ai.event.content"))
            inputs += _loose_messages(content, role)
        elif name == "gen_ai.choice":
            body = _structured(attrs.get("message", attrs.get("gen_ai.event.content")))
            if isinstance(body, dict) and isinstance(body.get("message"), dict):
                body = body["message"]
            outputs += _loose_messages(body if body is not None else attrs.get("content"), "")
    return inputs, outputs


def _loose_messages(value: Any, role: str) -> list[tuple[str, str]]:
    """Messages from a value that is either plain text or JSON of messages."""
    decoded = _structured(value)
    if isinstance(decoded, (list, dict)):
        found = _message_list(decoded)
        if isinstance(decoded, dict) and not found and isinstance(decoded.get("content"), str):
            found = [(role, decoded["content"])]
        return [(r or role, t) for r, t in found]
    return [(role, decoded)] if isinstance(decoded, str) else []


def _conversation(span: Span) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The LLM span's input and output messages, by the first convention that has them."""
    attrs = span.attributes
    candidates = [
        (
            _indexed_messages(attrs, "llm.input_messages", "message."),
            _indexed_messages(attrs, "llm.output_messages", "message."),
        ),
        (
            _message_list(attrs.get("gen_ai.input.messages")),
            _message_list(attrs.get("gen_ai.output.messages")),
        ),
        (
            _indexed_messages(attrs, "gen_ai.prompt", ""),
            _indexed_messages(attrs, "gen_ai.completion", ""),
        ),
        (
            _loose_messages(attrs.get("gen_ai.prompt"), "user"),
            _loose_messages(attrs.get("gen_ai.completion"), "assistant"),
        ),
        _event_messages(span),
    ]
    inputs: list[tuple[str, str]] = next((i for i, _ in candidates if i), [])
    outputs: list[tuple[str, str]] = next((o for _, o in candidates if o), [])
    if not inputs and _plain(attrs, "input"):
        inputs = [("user", str(attrs["input.value"]))]
    if not outputs and _plain(attrs, "output"):
        outputs = [("assistant", str(attrs["output.value"]))]
    return inputs, outputs


def _plain(attrs: dict[str, Any], name: str) -> bool:
    """``input.value`` / ``output.value`` holds text (not the JSON of a whole request)."""
    mime = str(attrs.get(f"{name}.mime_type") or "text/plain").lower()
    return isinstance(attrs.get(f"{name}.value"), str) and "json" not in mime


def _documents(span: Span) -> list[dict[str, Any]]:
    docs = []
    for i, doc in enumerate(_indexed(span.attributes, "retrieval.documents")):
        text = doc.get("document.content")
        if not isinstance(text, str) or not text.strip():
            continue
        ident = doc.get("document.id")
        source: dict[str, Any] = {
            "id": str(ident)
            if isinstance(ident, (str, int)) and str(ident)
            else f"{span.span_id}-{i}",
            "text": text,
            "type": "document",
        }
        score = doc.get("document.score")
        if isinstance(score, (int, float)) and not isinstance(score, bool) and 0 <= score <= 1:
            source["similarity"] = float(score)
        docs.append(source)
    return docs


def _patient(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _model(attrs: dict[str, Any]) -> str:
    for key in ("llm.model_name", "gen_ai.request.model", "gen_ai.response.model"):
        value = attrs.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()[:200]
    return "unknown"


def build_records(
    spans: Sequence[Span], *, patient_attribute: str
) -> tuple[list[dict[str, Any]], list[Rejected]]:
    """Import records (as JSON objects, not yet validated) from the LLM spans, grouped with
    the retriever spans of their trace; and why each other LLM span was rejected."""
    traces: dict[str, list[Span]] = {}
    for span in spans:
        traces.setdefault(span.trace_id, []).append(span)
    records: list[dict[str, Any]] = []
    rejected: list[Rejected] = []
    for trace_id, members in traces.items():
        kinds = [(span, _kind(span)) for span in members]
        sources: list[dict[str, Any]] = []
        for span, kind in kinds:
            if kind == "retriever":
                sources += _documents(span)
        sources = _unique_ids(sources)
        in_trace = {
            p for s in members if (p := _patient(s.attributes.get(patient_attribute))) is not None
        }
        for span, kind in kinds:
            if kind != "llm":
                continue
            patient = _patient(span.attributes.get(patient_attribute))
            if patient is None:
                patient = _patient(span.resource.get(patient_attribute))
            if patient is None and len(in_trace) > 1:
                rejected.append(Rejected("ambiguous_patient"))
                continue
            if patient is None and in_trace:
                patient = next(iter(in_trace))
            if patient is None:
                rejected.append(Rejected("no_patient"))
                continue
            inputs, outputs = _conversation(span)
            answers = [text for role, text in outputs if role in ("", "assistant", "model")]
            if not answers or not answers[0].strip():
                rejected.append(Rejected("no_answer"))
                continue
            asked = [text for role, text in inputs if role in ("", "user", "human")]
            record: dict[str, Any] = {
                "id": f"{RECORD_PREFIX}{trace_id}-{span.span_id}",
                "patient_id": patient,
                "query": asked[-1] if asked else "",
                "answer": answers[0],
                "sources": sources + _unique_ids(_documents(span), taken=sources),
                "model": _model(span.attributes),
            }
            if span.end_ns:
                record["timestamp"] = datetime.fromtimestamp(span.end_ns / 1e9, UTC).isoformat()
            temperature = span.attributes.get("gen_ai.request.temperature")
            if isinstance(temperature, (int, float)) and 0 <= temperature <= 2:
                record["temperature"] = float(temperature)
            records.append(record)
    return records, rejected


def _unique_ids(
    sources: list[dict[str, Any]], taken: Sequence[dict[str, Any]] = ()
) -> list[dict[str, Any]]:
    """Each document once (the same text retrieved twice adds nothing to check against),
    with unique ids: another document under a used id gets a ``#n`` suffix."""
    ids = {s["id"] for s in taken}
    texts = {s["text"] for s in taken}
    out = []
    for source in sources:
        if source["text"] in texts:
            continue
        ident, n = source["id"], 1
        while ident in ids:
            n += 1
            ident = f"{source['id']}#{n}"
        ids.add(ident)
        texts.add(source["text"])
        out.append({**source, "id": ident})
    return out


_REASONS = {
    "no_patient": "without the {attr} attribute (on the span, its resource or its trace)",
    "ambiguous_patient": "without {attr} of their own in a trace carrying several",
    "no_answer": "without output message text (is message content capture on?)",
    "invalid": "not a valid record",
    "conflict": "stored already with other content (only an admin key may replace them)",
}


def rejection_message(rejected: Sequence[Rejected], *, patient_attribute: str) -> str:
    """One line: how many LLM spans were rejected and why (counts and field names only)."""
    counts = Counter(r.reason for r in rejected)
    parts = []
    for reason, text in _REASONS.items():
        if counts[reason]:
            part = f"{counts[reason]} {text.format(attr=patient_attribute)}"
            if reason == "invalid":
                first = next(r.detail for r in rejected if r.reason == "invalid")
                part += f" ({first})"
            parts.append(part)
    return f"{len(rejected)} LLM span(s) rejected: " + "; ".join(parts)
