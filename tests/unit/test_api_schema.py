"""The API's responses are typed in its OpenAPI document: each route names its public model
(:mod:`core.storage.public`) and each model names exactly the fields of the JSON contract,
so a field added to or dropped from a response fails here until the contract says so. And the
public models read stored rows as the API shows them: rounded scores and ``+00:00`` times in
JSON, the stored values in Python."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from core.api import create_app
from core.config import load_settings
from core.storage.answers import AnswerRows
from core.storage.db import get_engine
from core.storage.models import ConsistencyCheck, Conversation, StatementCheck
from core.storage.public import AnswerPublic, AnswerStored, StatementBase, TrendPointPublic
from core.storage.queries import TrendPoint

SCORES = {"grounding", "consistency", "confidence", "hallucination_risk", "overall_quality"}
SUMMARY = {"id", "conversation_id", "patient_id", "timestamp", "model", "flagged", "scores"}
ANSWER = SUMMARY | {
    "query",
    "answer",
    "risk",
    "statements",
    "contradictions",
    "warnings",
    "checks",
    "execution_time_ms",
}
STATEMENT = {
    "index",
    "text",
    "status",
    "method",
    "confidence",
    "start",
    "end",
    "source_id",
    "evidence",
    "evidence_start",
    "evidence_end",
    "unsupported_words",
    "kind",
    "severity",
}
CONTRADICTION = {
    "check_type",
    "severity",
    "entity",
    "current_statement",
    "previous_statement",
    "previous_conversation_id",
    "explanation",
}
QUEUE_ITEM = {
    "statement_check_id",
    "answer_id",
    "conversation_id",
    "patient_id",
    "model",
    "timestamp",
    "statement_index",
    "statement",
    "start",
    "end",
    "status",
    "kind",
    "severity",
    "method",
    "confidence",
    "risk",
    "reason",
    "source_id",
    "evidence",
    "evidence_start",
    "evidence_end",
    "verdict",
    "reviewer",
}
TREND_POINT = {
    "period",
    "answers",
    "flagged",
    "flagged_share",
    "grounding",
    "consistency",
    "confidence",
    "risk",
    "quality",
}


@pytest.fixture(scope="module")
def doc(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The app's OpenAPI document (no server, no model, no migration needed)."""
    url = f"sqlite:///{Path(tmp_path_factory.mktemp('schema')) / 'gw.db'}"
    app = create_app(settings=load_settings(database_url=url), engine=get_engine(url))
    return app.openapi()


def _resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if ref is None:
        return schema
    return doc["components"]["schemas"][ref.rsplit("/", 1)[1]]


def _response(doc: dict[str, Any], path: str, method: str, status: str) -> dict[str, Any]:
    content = doc["paths"][path][method]["responses"][status]["content"]
    return _resolve(doc, content["application/json"]["schema"])


def _fields(doc: dict[str, Any], schema: dict[str, Any]) -> set[str]:
    """The properties of an object schema; every one is in every response (required)."""
    schema = _resolve(doc, schema)
    assert schema["type"] == "object"
    assert set(schema["required"]) == set(schema["properties"]), schema["title"]
    return set(schema["properties"])


def _prop(doc: dict[str, Any], schema: dict[str, Any], name: str) -> dict[str, Any]:
    return _resolve(doc, _resolve(doc, schema)["properties"][name])


def _items(doc: dict[str, Any], schema: dict[str, Any], name: str) -> dict[str, Any]:
    array = _prop(doc, schema, name)
    assert array["type"] == "array"
    return _resolve(doc, array["items"])


def _types(prop: dict[str, Any]) -> set[str]:
    return {p["type"] for p in prop.get("anyOf", [prop])}


def test_a_stored_answer_is_typed_field_by_field(doc: dict[str, Any]) -> None:
    answer = _response(doc, "/v1/answers/{answer_id}", "get", "200")
    assert answer["title"] == "AnswerPublic"
    assert _fields(doc, answer) == ANSWER
    assert _fields(doc, _prop(doc, answer, "scores")) == SCORES
    assert _fields(doc, _prop(doc, answer, "risk")) == {"level", "score", "recommendation"}
    statement = _items(doc, answer, "statements")
    assert _fields(doc, statement) == STATEMENT
    assert _types(_prop(doc, statement, "index")) == {"integer"}
    assert _types(_prop(doc, statement, "confidence")) == {"number", "null"}
    assert _prop(doc, statement, "status")["enum"] == ["grounded", "unsupported", "contradicted"]
    assert _fields(doc, _items(doc, statement, "unsupported_words")) == {"text", "start", "end"}
    assert _fields(doc, _items(doc, answer, "contradictions")) == CONTRADICTION
    assert _prop(doc, answer, "timestamp") == {
        "type": "string",
        "format": "date-time",
        "title": "Timestamp",
    }
    assert _types(_prop(doc, answer, "warnings")) == {"array"}


def test_sent_answers_and_lists_reuse_the_same_shapes(doc: dict[str, Any]) -> None:
    for status in ("200", "201"):
        stored = _response(doc, "/v1/answers", "post", status)
        assert _fields(doc, stored) == ANSWER | {"store_status"}
        assert _prop(doc, stored, "store_status")["enum"] == ["imported", "updated", "unchanged"]
    batch = _response(doc, "/v1/answers/batch", "post", "200")
    assert _fields(doc, batch) == {"counts", "results"}
    assert _fields(doc, _prop(doc, batch, "counts")) == {"imported", "updated", "unchanged"}
    assert _items(doc, batch, "results")["title"] == "AnswerStored"
    page = _response(doc, "/v1/answers", "get", "200")
    assert _fields(doc, page) == {"items", "next_cursor"}
    summary = _items(doc, page, "items")
    assert _fields(doc, summary) == SUMMARY | {
        "risk_level",
        "flagged_statements",
        "total_statements",
    }
    assert _fields(doc, _prop(doc, summary, "scores")) == SCORES


def test_the_reading_routes_are_typed(doc: dict[str, Any]) -> None:
    queue = _response(doc, "/v1/review-queue", "get", "200")
    assert _fields(doc, queue) == {"total", "offset", "items"}
    assert _fields(doc, _items(doc, queue, "items")) == QUEUE_ITEM
    trends = _response(doc, "/v1/trends", "get", "200")
    assert _fields(doc, trends) == {"by", "points"}
    assert _fields(doc, _items(doc, trends, "points")) == TREND_POINT
    assert _prop(doc, _items(doc, trends, "points"), "period")["format"] == "date"
    review = _response(doc, "/v1/reviews", "post", "201")
    assert _fields(doc, review) == {
        "review_id",
        "statement_check_id",
        "conversation_id",
        "verdict",
        "reviewer",
        "created_at",
    }
    similar = _response(doc, "/v1/patients/{patient_id}/similar", "get", "200")
    assert _fields(doc, similar) == {"patient_id", "model", "compared", "items"}
    item = _items(doc, similar, "items")
    assert set(item["properties"]) == {"id", "conversation_id", "timestamp", "score", "query"}
    assert "query" not in item["required"]  # only with the read scope


def _rows() -> AnswerRows:
    conv = Conversation(
        id="c1",
        external_id="ext-1",
        patient_id="p-1",
        query="Q?",
        answer="She takes metformin. She had an MRI.",
        query_timestamp=datetime(2026, 1, 5, 9, 0, tzinfo=UTC),
        model_used="m",
        grounding_score=0.123456789,
        hallucination_risk=0.5,
        risk_level="high",
        is_flagged=True,
        warnings=None,
        check_status={"grounding": {"status": "ok", "reason": None}},
        content_hash="h",
    )
    statement = StatementCheck(
        conversation_id="c1",
        statement="She had an MRI.",
        statement_index=1,
        is_grounded=False,
        status="unsupported",
        verification_method="unsupported",
        grounding_confidence=0.987654321,
        source_chunk_id="s-1",
        supporting_evidence="Metformin daily.",
    )
    found = ConsistencyCheck(
        patient_id="p-1",
        current_conversation_id="c1",
        check_type="entity_consistency",
        is_consistent=False,
        inconsistency_description="dose differs",
    )
    return AnswerRows(conv, [statement], [found])


def test_the_public_models_read_rows_as_the_api_shows_them() -> None:
    answer = AnswerPublic.model_validate(_rows())
    shown = answer.model_dump(mode="json")
    assert set(shown) == ANSWER
    assert shown["id"] == "ext-1"
    assert shown["conversation_id"] == "c1"
    assert shown["timestamp"] == "2026-01-05T09:00:00+00:00"
    assert shown["scores"] == {
        "grounding": 0.1235,
        "consistency": None,
        "confidence": None,
        "hallucination_risk": 0.5,
        "overall_quality": None,
    }
    assert shown["risk"]["level"] == "high"
    assert shown["risk"]["score"] == 0.5
    assert shown["risk"]["recommendation"].startswith("Do not rely")
    (statement,) = shown["statements"]
    assert statement["index"] == 1
    assert statement["text"] == "She had an MRI."
    assert statement["method"] == "unsupported"
    assert statement["confidence"] == 0.9877
    assert statement["source_id"] == "s-1"
    assert statement["evidence"] == "Metformin daily."
    assert statement["unsupported_words"] == []
    assert shown["contradictions"][0]["explanation"] == "dose differs"
    assert shown["warnings"] == []
    assert shown["checks"] == {"grounding": {"status": "ok", "reason": None}}
    # in Python (the dashboard): the stored values
    python = answer.model_dump()
    assert python["timestamp"] == datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    assert python["scores"]["grounding"] == 0.123456789
    # a model reads its own JSON back
    assert AnswerPublic.model_validate(shown).model_dump(mode="json") == shown
    stored = AnswerStored.of(answer, "imported").model_dump(mode="json")
    assert stored == {**shown, "store_status": "imported"}
    base = StatementBase.model_validate(_rows().statements[0]).model_dump()
    assert set(base) == STATEMENT - {"unsupported_words"}


def test_a_trend_point_shows_answers_and_a_rounded_share() -> None:
    point = TrendPoint(3, 1, 0.5, None, None, 0.123456, 0.9, period=date(2026, 1, 5))
    shown = TrendPointPublic.model_validate(point).model_dump(mode="json")
    assert set(shown) == TREND_POINT
    assert shown["period"] == "2026-01-05"
    assert shown["answers"] == 3
    assert shown["flagged_share"] == 0.3333
    assert shown["risk"] == 0.1235
