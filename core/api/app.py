"""The FastAPI application: ``create_app(settings, engine)``.

Routes are versioned under ``/v1``; ``/openapi.json`` and ``/docs`` describe them; ``/metrics``
serves Prometheus. Bodies are decoded by the same boundary as ``groundwatch import``
(:func:`core.inputs.decode_utf8` / :func:`core.inputs.parse_json`, then
:func:`core.records.parse_record`), checked and stored by one
:class:`~core.pipeline.QualityPipeline` loaded once per app, and read back through
:mod:`core.storage.repo`. Errors are ``{"error": code, "detail": ...}`` and never echo record
text; the log carries method, route template, status and time only.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, Query, Request, Security
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from core.api.errors import (
    ApiError,
    RequestMiddleware,
    api_error_handler,
    http_error_handler,
    log,
    validation_error_handler,
)
from core.api.jobs import jobs_router, queue_answer, require_queue
from core.api.keys import Caller, Scope, parse_scopes, token_hash
from core.api.limits import retry_after
from core.api.otlp import otlp_router
from core.api.read_routes import read_router
from core.api.runtime import Runtime
from core.api.views import CursorError, answer_view, decode_cursor, encode_cursor
from core.config import Settings, get_settings
from core.inputs import InputError, decode_utf8, parse_json
from core.records import EARLIEST, LATEST, ConversationRecord, parse_record
from core.storage import repo, search
from core.storage.db import DatabaseError, get_engine, read_session, write_session
from core.storage.public import (
    AnswerPage,
    AnswerPublic,
    AnswerStored,
    AnswerSummaryPublic,
    BatchStored,
    StoreCounts,
)

API_VERSION = "1"
MAX_PAGE = 200

_UNAUTHORIZED = {"WWW-Authenticate": "Bearer"}


def create_app(settings: Settings | None = None, engine: Engine | None = None) -> FastAPI:
    """The API on ``engine`` (default: the configured database) with ``settings`` (default:
    the environment). The pipeline loads in the background at start-up: ``/v1/health``
    answers at once, ``/v1/ready`` once the database is migrated and the models are loaded."""
    settings = settings or get_settings()
    engine = engine or get_engine(settings.database_url)
    runtime = Runtime(settings=settings, engine=engine)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        # uvicorn's access log prints paths and query strings, which can carry patient ids
        # or text: off however the app is served (RequestMiddleware logs the route template)
        logging.getLogger("uvicorn.access").disabled = True
        runtime.start_loading()
        yield
        runtime.close()

    app = FastAPI(
        title="Groundwatch API",
        version=API_VERSION,
        summary="Check LLM answers about patients as they are produced, store and read them.",
        lifespan=lifespan,
        docs_url=None,  # served below from packaged assets, not a CDN
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    app.state.runtime = runtime
    app.add_exception_handler(ApiError, api_error_handler)
    app.add_exception_handler(StarletteHTTPException, http_error_handler)
    app.add_exception_handler(RequestValidationError, validation_error_handler)
    app.add_middleware(
        RequestMiddleware, metrics=runtime.metrics, max_body=settings.api_max_body_bytes
    )
    app.include_router(_router(runtime))
    app.include_router(jobs_router(runtime, _auth))
    app.include_router(read_router(runtime, auth=_auth))
    app.include_router(
        otlp_router(runtime, caller=Depends(_auth(runtime, "ingest")), ingest=_ingest)
    )

    _docs(app)

    @app.get("/metrics", include_in_schema=False)
    def metrics() -> Response:
        return Response(generate_latest(runtime.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    app.openapi = lambda: _openapi(app, settings)  # type: ignore[method-assign]
    return app


# ----------------------------------------------------------------------------- auth

_bearer = HTTPBearer(
    auto_error=False, description="An API key from `groundwatch keys create` (Bearer token)."
)


def _auth(runtime: Runtime, scope: Scope | tuple[Scope, ...]) -> Callable[..., Caller]:
    wanted = (scope,) if isinstance(scope, str) else scope

    def caller(
        credentials: HTTPAuthorizationCredentials | None = Security(_bearer),
    ) -> Caller:
        if credentials is None or not credentials.credentials:
            raise ApiError(
                401,
                "unauthorized",
                "an API key is required (header Authorization: Bearer <token>)",
                headers=_UNAUTHORIZED,
            )
        with read_session(runtime.engine) as session:
            key = repo.api_key_by_hash(
                session=session, token_hash=token_hash(credentials.credentials)
            )
        if key is None or key.revoked_at is not None:
            raise ApiError(401, "unauthorized", "unknown or revoked API key", headers=_UNAUTHORIZED)
        found = Caller(int(key.id or 0), key.name, parse_scopes(key.scopes))
        wait = runtime.limiter.take(found.key_id)
        if wait > 0:
            raise ApiError(
                429,
                "rate_limited",
                f"this API key made more than {runtime.settings.api_rate_limit} requests in a "
                f"minute (GROUNDWATCH_API_RATE_LIMIT); retry in {retry_after(wait)} s",
                headers={"Retry-After": retry_after(wait)},
            )
        if not any(found.allows(s) for s in wanted):
            named = " or ".join(repr(s) for s in wanted)
            raise ApiError(403, "forbidden", f"this API key lacks the {named} scope")
        return found

    return caller


# ----------------------------------------------------------------------------- bodies


def _decode(body: bytes) -> Any:
    """The request body as JSON, by the import's rules (UTF-8, no NUL, no duplicate keys, no
    NaN, bounded digits and nesting); errors name the place, never the text."""
    if not body.strip():
        raise ApiError(400, "empty_body", "the request body is empty")
    try:
        return parse_json(decode_utf8(body, what="body"), what="body")
    except InputError as exc:
        raise ApiError(400, exc.error, str(exc)) from None


def _record(obj: Any, settings: Settings, *, where: str = "") -> ConversationRecord:
    try:
        return parse_record(obj, max_text_chars=settings.max_transcript_chars)
    except ValueError as exc:
        raise ApiError(422, "invalid_record", f"{where}{exc}") from None


def _records(obj: Any, settings: Settings) -> list[ConversationRecord]:
    if not isinstance(obj, dict) or not isinstance(obj.get("records"), list):
        raise ApiError(
            422, "invalid_batch", "field records: expected an object with a list of records"
        )
    items = obj["records"]
    if not items:
        raise ApiError(422, "invalid_batch", "field records: the list is empty")
    if len(items) > settings.api_max_batch:
        raise ApiError(
            413,
            "batch_too_large",
            f"field records: {len(items)} records, above the limit of {settings.api_max_batch} "
            "(GROUNDWATCH_API_MAX_BATCH)",
        )
    records: list[ConversationRecord] = []
    errors: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(items):
        try:
            record = parse_record(item, max_text_chars=settings.max_transcript_chars)
        except ValueError as exc:
            errors.append({"index": index, "error": str(exc)})
            continue
        if record.id in seen:
            errors.append(
                {
                    "index": index,
                    "error": f"field id: duplicate of the record at index {seen[record.id]}",
                }
            )
            continue
        seen[record.id] = index
        records.append(record)
    if errors:
        raise ApiError(422, "invalid_records", errors[:100])
    return records


# ----------------------------------------------------------------------------- answers


def _ingest(
    runtime: Runtime, records: Sequence[ConversationRecord], caller: Caller
) -> list[AnswerStored]:
    """Check and store the records in one transaction; their views, in the given order."""
    replace = "admin" in caller.scopes
    if not replace:
        _refuse_edits(runtime, records)
    pipeline = runtime.pipeline()
    if pipeline is None:
        raise ApiError(503, "not_ready", runtime.missing())
    try:
        reports = pipeline.process_many(records, replace=replace)
    except repo.RecordExistsError:
        raise ApiError(
            409,
            "conflict",
            "a record id is stored already with other content; only an admin key may replace "
            "it; nothing was stored",
        ) from None
    except (DatabaseError, SQLAlchemyError) as exc:
        log.error("storing failed: %s", type(exc).__name__)
        raise ApiError(
            503, "database", f"database error ({type(exc).__name__}); nothing was stored"
        ) from None
    metrics = runtime.metrics
    for report in reports:
        metrics.answers.labels(report.store_status).inc()
        if report.store_status != "unchanged":
            if report.is_flagged:
                metrics.flagged.inc()
            for name, check in report.checks.items():
                metrics.checks.labels(name, check.status).inc()
    with read_session(runtime.engine) as session:
        rows = repo.answers_by_ids(
            session=session, conversation_ids=[r.conversation_id for r in reports]
        )
    out = []
    for report in reports:
        words = None
        if report.grounding is not None:
            words = {st.index: st.unsupported_words for st in report.grounding.statements}
        view = answer_view(rows[report.conversation_id], words=words)
        out.append(AnswerStored.of(view, report.store_status))
    with write_session(runtime.engine) as session:
        repo.record_audit(
            session=session,
            actor=caller.name,
            action="api_ingest",
            target_type="conversation",
            target_id=reports[0].conversation_id if len(reports) == 1 else None,
            detail={
                "records": len(reports),
                **{s: sum(r.store_status == s for r in reports) for s in _STATUSES},
            },
        )
    return out


_STATUSES = ("imported", "updated", "unchanged")


def _refuse_edits(runtime: Runtime, records: Sequence[ConversationRecord]) -> None:
    """409 before any check runs when a record id is stored with other content (only an admin
    key may replace it)."""
    ids = {repo.conversation_id_for(r.id): i for i, r in enumerate(records)}
    with read_session(runtime.engine) as session:
        stored = repo.stored_conversations(session=session, conversation_ids=list(ids))
    for conv_id, conv in stored.items():
        index = ids[conv_id]
        if conv.content_hash != records[index].fingerprint():
            where = f" (index {index})" if len(records) > 1 else ""
            raise ApiError(
                409,
                "conflict",
                f"field id{where}: the record id is stored already with other content; only an "
                "admin key may replace it; nothing was stored",
            )


def _when(value: str | None, name: str) -> datetime | None:
    if value is None:
        return None
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        raise ApiError(
            422, "invalid_parameter", f"query parameter {name}: not an ISO 8601 date or time"
        ) from None
    at = at if at.tzinfo else at.replace(tzinfo=UTC)
    try:
        at = at.astimezone(UTC)
    except OverflowError:
        at = EARLIEST.replace(year=1)
    if not EARLIEST <= at < LATEST:
        raise ApiError(
            422,
            "invalid_parameter",
            f"query parameter {name}: must lie between {EARLIEST.year} and {LATEST.year} (UTC)",
        )
    return at


def _router(runtime: Runtime) -> APIRouter:
    router = APIRouter(prefix="/v1")
    settings = runtime.settings
    ingest = Depends(_auth(runtime, "ingest"))
    read = Depends(_auth(runtime, "read"))

    @router.post(
        "/answers",
        status_code=201,
        summary="Check and store one answer",
        tags=["answers"],
        openapi_extra={"requestBody": _body_schema("ConversationRecord")},
        response_model=AnswerStored,
        responses={
            200: {
                "model": AnswerStored,
                "description": "Stored already (unchanged) or replaced (updated).",
            },
            201: {"description": "Checked and stored (imported)."},
            202: {"description": "mode=async: stored with its job; GET /v1/jobs/{id} follows it."},
            400: {"description": "Not a JSON object (syntax, encoding, NUL byte)."},
            401: {"description": "No API key, or an unknown or revoked one."},
            403: {"description": "The key lacks the ingest scope."},
            409: {"description": "The id is stored with other content (admin keys replace)."},
            413: {"description": "Body above GROUNDWATCH_API_MAX_BODY_BYTES."},
            422: {"description": "The record is invalid (the detail names the field)."},
        },
    )
    async def post_answer(
        request: Request,
        caller: Caller = ingest,
        mode: str = Query(
            "sync",
            pattern="^(sync|async)$",
            description="async (PostgreSQL only): queue the answer for the workers, 202.",
        ),
    ) -> JSONResponse:
        """One record in the import format: the enabled checks run, the result is stored and
        the quality report returned. Idempotent on the record id, as ``groundwatch import``.
        With ``mode=async`` the record and its job are stored in one transaction and the
        answer is 202 with the job id; a ``groundwatch worker`` checks it."""
        body = await request.body()

        def work() -> JSONResponse:
            record = _record(_decode(body), settings)
            if mode == "async":
                require_queue(runtime)
                if "admin" not in caller.scopes:
                    _refuse_edits(runtime, [record])
                return queue_answer(runtime, record, caller)
            (view,) = _ingest(runtime, [record], caller)
            code = 201 if view.store_status == "imported" else 200
            return JSONResponse(view.model_dump(mode="json"), status_code=code)

        return await run_in_threadpool(work)

    @router.post(
        "/answers/batch",
        summary="Check and store many answers in one transaction",
        tags=["answers"],
        openapi_extra={"requestBody": _batch_schema(settings.api_max_batch)},
        response_model=BatchStored,
        responses={
            413: {"description": "Body or number of records above the limits."},
            422: {"description": "Invalid records, each named by index and field; none stored."},
        },
    )
    async def post_batch(request: Request, caller: Caller = ingest) -> JSONResponse:
        """Up to ``GROUNDWATCH_API_MAX_BATCH`` records: all are validated first, then all land
        in one transaction or none does."""
        body = await request.body()

        def work() -> JSONResponse:
            records = _records(_decode(body), settings)
            views = _ingest(runtime, records, caller)
            counts = StoreCounts(**{s: sum(v.store_status == s for v in views) for s in _STATUSES})
            out = BatchStored(counts=counts, results=views)
            return JSONResponse(out.model_dump(mode="json"))

        return await run_in_threadpool(work)

    @router.get(
        "/answers/{answer_id}",
        summary="One stored answer with its report",
        tags=["answers"],
        responses={404: {"description": "No answer with this id."}},
    )
    def get_answer(answer_id: str, caller: Caller = read) -> AnswerPublic:
        """The stored answer with this record id (the ``id`` it was sent with). The read is
        audited with the key's name."""
        conv_id = repo.conversation_id_for(answer_id)
        with read_session(runtime.engine) as session:
            rows = repo.answers_by_ids(session=session, conversation_ids=[conv_id])
        if conv_id not in rows:
            raise ApiError(404, "not_found", "no answer with this id")
        with write_session(runtime.engine) as session:
            repo.record_audit(
                session=session,
                actor=caller.name,
                action="view",
                target_type="conversation",
                target_id=conv_id,
                detail={"via": "api"},
            )
        return answer_view(rows[conv_id])

    @router.get("/answers", summary="List stored answers, newest first", tags=["answers"])
    def list_answers(
        patient_id: str | None = Query(None, max_length=64),
        model: str | None = Query(None, max_length=200),
        since: str | None = Query(None, max_length=64, description="ISO 8601, inclusive."),
        until: str | None = Query(None, max_length=64, description="ISO 8601, exclusive."),
        flagged: bool | None = Query(None),
        q: str | None = Query(
            None,
            min_length=1,
            max_length=search.MAX_QUERY_CHARS,
            description='Full-text search of query and answer: words, "phrases", or, -word.',
        ),
        limit: int = Query(50, ge=1, le=MAX_PAGE),
        cursor: str | None = Query(
            None, max_length=300, description="next_cursor of the previous page."
        ),
        caller: Caller = read,
    ) -> AnswerPage:
        """Answers matching the filters, newest first, paged by an opaque cursor (keyset on
        time and id: no answer is skipped or repeated across pages). The read is audited."""
        after = None
        if cursor is not None:
            try:
                after = decode_cursor(cursor)
            except CursorError as exc:
                raise ApiError(422, "invalid_parameter", f"query parameter cursor: {exc}") from None
        with read_session(runtime.engine) as session:
            try:
                where = [] if q is None else [search.text_condition(session=session, q=q)]
            except search.SearchQueryError as exc:
                raise ApiError(422, "invalid_parameter", f"query parameter q: {exc}") from None
            page = repo.answer_page(
                session=session,
                where=where,
                patient_id=patient_id,
                model=model,
                since=_when(since, "since"),
                until=_when(until, "until"),
                flagged=flagged,
                after=after,
                limit=limit + 1,
            )
        more = len(page) > limit
        page = page[:limit]
        with write_session(runtime.engine) as session:
            repo.record_audit(
                session=session,
                actor=caller.name,
                action="list",
                target_type="conversation",
                detail={"via": "api", "answers": len(page), "search": q is not None},
            )
        last = page[-1].conversation if page else None
        return AnswerPage(
            items=[AnswerSummaryPublic.model_validate(s) for s in page],
            next_cursor=encode_cursor(last.query_timestamp, last.id)
            if (more and last is not None)
            else None,
        )

    @router.get("/health", summary="Liveness", tags=["service"])
    def health() -> dict[str, str]:
        """The process answers (no database or model is consulted)."""
        return {"status": "ok"}

    @router.get(
        "/ready",
        summary="Readiness",
        tags=["service"],
        responses={503: {"description": "Not ready; the detail names what is missing."}},
    )
    def ready() -> JSONResponse:
        """Ready when the database is reachable and migrated to the newest revision and the
        models are loaded; otherwise 503 naming what is missing."""
        missing = runtime.missing()
        if missing:
            return JSONResponse({"error": "not_ready", "detail": missing}, status_code=503)
        return JSONResponse({"status": "ready", "schema_revision": runtime.head})

    return router


# ----------------------------------------------------------------------------- OpenAPI


DOCS_ASSETS = "/docs/assets"


def _docs(app: FastAPI) -> None:
    """Interactive docs at ``/docs`` (Swagger UI), its scripts and styles served from the
    ``swagger-ui-bundle-v2`` package: the page works offline, nothing comes from a CDN."""
    import swagger_ui_bundle
    from fastapi.openapi.docs import get_swagger_ui_html
    from fastapi.staticfiles import StaticFiles

    app.mount(
        DOCS_ASSETS,
        StaticFiles(directory=str(swagger_ui_bundle.swagger_ui_path)),
        name="docs-assets",
    )

    @app.get("/docs", include_in_schema=False)
    def docs() -> Response:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title=f"{app.title} - docs",
            swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{DOCS_ASSETS}/favicon-32x32.png",
        )


def _body_schema(name: str) -> dict[str, Any]:
    return {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}},
    }


def _batch_schema(limit: int) -> dict[str, Any]:
    return {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": ["records"],
                    "properties": {
                        "records": {
                            "type": "array",
                            "minItems": 1,
                            "maxItems": limit,
                            "items": {"$ref": "#/components/schemas/ConversationRecord"},
                        }
                    },
                }
            }
        },
    }


def _openapi(app: FastAPI, settings: Settings) -> dict[str, Any]:
    """The OpenAPI document, with the import record's JSON Schema as the request body (the
    routes decode bodies themselves, by the import's stricter rules)."""
    if app.openapi_schema:
        return app.openapi_schema
    doc = get_openapi(
        title=app.title,
        version=app.version,
        summary=app.summary,
        description=(
            "Authenticate with `Authorization: Bearer <token>` (`groundwatch keys create`). "
            f"Bodies up to {settings.api_max_body_bytes} bytes; batches up to "
            f"{settings.api_max_batch} records. Errors are "
            '`{"error": code, "detail": ...}`.'
        ),
        routes=app.routes,
    )
    record = ConversationRecord.model_json_schema(ref_template="#/components/schemas/{model}")
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    schemas.update(record.pop("$defs", {}))
    schemas["ConversationRecord"] = record
    app.openapi_schema = doc
    return doc
