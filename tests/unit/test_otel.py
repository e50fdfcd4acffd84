"""Spans to records (core.otel): which spans are answers, where the patient comes from, what
is rejected and why."""

from __future__ import annotations

from typing import Any

from core.otel import Rejected, Span, build_records, rejection_message

ATTR = "groundwatch.patient_id"


def span(
    span_id: str,
    attributes: dict[str, Any],
    *,
    trace_id: str = "t1",
    resource: dict[str, Any] | None = None,
    events: tuple[tuple[str, dict[str, Any]], ...] = (),
) -> Span:
    return Span(trace_id, span_id, 1_704_186_000_000_000_000, attributes, resource or {}, events)


def llm(**extra: Any) -> dict[str, Any]:
    return {
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "Any allergies?",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": "Penicillin.",
        **extra,
    }


def test_session_and_user_ids_are_a_patient_only_when_named() -> None:
    spans = [span("s1", llm(**{"session.id": "sess", "user.id": "u-7"}))]
    records, rejected = build_records(spans, patient_attribute=ATTR)
    assert records == []
    assert rejected == [Rejected("no_patient")]
    records, rejected = build_records(spans, patient_attribute="user.id")
    assert [r["patient_id"] for r in records] == ["u-7"]
    assert rejected == []


def test_the_patient_comes_from_the_span_its_resource_or_its_trace() -> None:
    own = span("a", llm(**{ATTR: "p-own"}), resource={ATTR: "p-res"})
    from_resource = span("b", llm(), trace_id="t2", resource={ATTR: "p-res"})
    root = span("r", {ATTR: "p-root", "openinference.span.kind": "CHAIN"}, trace_id="t3")
    from_trace = span("c", llm(), trace_id="t3")
    records, rejected = build_records(
        [own, from_resource, root, from_trace], patient_attribute=ATTR
    )
    assert {r["id"]: r["patient_id"] for r in records} == {
        "otel-t1-a": "p-own",
        "otel-t2-b": "p-res",
        "otel-t3-c": "p-root",
    }
    assert rejected == []
    two = [
        span("x", {ATTR: "p-1"}, trace_id="t4"),
        span("y", {ATTR: "p-2"}, trace_id="t4"),
        span("z", llm(), trace_id="t4"),
    ]
    assert build_records(two, patient_attribute=ATTR) == ([], [Rejected("ambiguous_patient")])


def test_retrieved_documents_of_the_trace_are_the_sources() -> None:
    docs = {
        "openinference.span.kind": "RETRIEVER",
        "retrieval.documents.0.document.id": "n1",
        "retrieval.documents.0.document.content": "Allergies: penicillin.",
        "retrieval.documents.0.document.score": 3.5,  # not a similarity in [0, 1]: left out
        "retrieval.documents.1.document.id": "n1",
        "retrieval.documents.1.document.content": "Another note under the same id.",
        "retrieval.documents.2.document.content": "A note without an id.",
    }
    spans = [
        span("r1", docs),
        span("r2", docs),  # the same documents again: once
        span("l", llm(**{ATTR: "p"})),
        span("other", llm(**{ATTR: "p"}), trace_id="elsewhere"),
    ]
    records, _ = build_records(spans, patient_attribute=ATTR)
    by_id = {r["id"]: r for r in records}
    assert by_id["otel-t1-l"]["sources"] == [
        {"id": "n1", "text": "Allergies: penicillin.", "type": "document"},
        {"id": "n1#2", "text": "Another note under the same id.", "type": "document"},
        {"id": "r1-2", "text": "A note without an id.", "type": "document"},
    ]
    assert by_id["otel-elsewhere-other"]["sources"] == []


def test_spans_that_are_not_answers_are_left_alone_and_empty_answers_rejected() -> None:
    spans = [
        span("http", {"http.method": "GET", ATTR: "p"}),
        span("emb", {"gen_ai.operation.name": "embeddings", "gen_ai.request.model": "e"}),
        span("tool", {"openinference.span.kind": "TOOL", "output.value": "x"}),
        span(  # a GenAI span recorded without message content
            "chat", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", ATTR: "p"}
        ),
        span(  # input.value holding the JSON of a whole request is not taken for the query
            "json",
            {
                "openinference.span.kind": "LLM",
                ATTR: "p",
                "input.value": '{"messages": []}',
                "input.mime_type": "application/json",
                "output.value": "Penicillin.",
            },
        ),
    ]
    records, rejected = build_records(spans, patient_attribute=ATTR)
    assert [(r["id"], r["query"], r["answer"]) for r in records] == [
        ("otel-t1-json", "", "Penicillin.")
    ]
    assert rejected == [Rejected("no_answer")]


def test_the_rejection_message_counts_reasons_without_text() -> None:
    message = rejection_message(
        [
            Rejected("no_patient"),
            Rejected("no_patient"),
            Rejected("invalid", "field patient_id: String should have at most 64 characters"),
            Rejected("conflict"),
        ],
        patient_attribute=ATTR,
    )
    assert message.startswith("4 LLM span(s) rejected: 2 without the groundwatch.patient_id")
    assert "1 not a valid record (field patient_id" in message
    assert "1 stored already with other content" in message
