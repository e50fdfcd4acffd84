"""The storage functions under one name, as callers have imported them: keyword-only
functions over a session, each defined in the module of its job.

- :mod:`core.storage.writes`: a record's conversation and check rows stored in one transaction
  (idempotent on its external id), the daily rollups every write maintains, verdicts, audit
  events;
- :mod:`core.storage.queries`: the dashboard's reads (filters, trends and headline numbers from
  the rollups, per-model statistics, the review queue, verdicts, the audit trail);
- :mod:`core.storage.answers`: stored answers (one with its check rows, a patient's history,
  the export, the API's pages);
- :mod:`core.storage.purge`: retention's purge of patient text and of the caches;
- :mod:`core.storage.caches`: the embedding and LLM response caches behind the protocols of
  :mod:`core.backends.caches`;
- :mod:`core.storage.api_keys`: the HTTP API's keys.

New code may import the job's module directly; this module only re-exports.
"""

from __future__ import annotations

from core.storage.answers import (
    AnswerRows,
    AnswerSummary,
    ConversationDetail,
    PatientAnswer,
    answer_page,
    answers_by_ids,
    entity_timeline,
    get_conversation,
    iter_export,
    patient_answers,
    patient_contradictions,
    patient_exists,
    patient_history,
    recent_conversations,
)
from core.storage.api_keys import (
    api_key_by_hash,
    create_api_key,
    list_api_keys,
    revoke_api_key,
)
from core.storage.caches import (
    DbEmbeddingStore,
    DbLLMCache,
    llm_usage,
)
from core.storage.purge import (
    count_caches,
    purge_caches,
    purge_text_before,
)
from core.storage.queries import (
    UNCLASSIFIED,
    Filters,
    FlaggedStatement,
    Granularity,
    Kpis,
    ModelStats,
    ModelTrendPoint,
    QueueOrder,
    ReviewedStatement,
    ReviewState,
    TrendPoint,
    count_conversations,
    date_bounds,
    flagged_statements,
    kpis,
    list_audit_events,
    list_models,
    list_patients,
    list_reviews,
    model_stats,
    quality_trend,
    quality_trend_by_model,
    queue_facets,
    reviewed_statements,
    statement_risk_histogram,
)
from core.storage.writes import (
    VERDICTS,
    ConversationBundle,
    RecordExistsError,
    StoreOutcome,
    StoreStatus,
    Verdict,
    conversation_id_for,
    create_review,
    delete_review,
    ensure_patient,
    rebuild_model_rollup,
    record_audit,
    store_bundles,
    store_conversation,
    store_many,
    stored_conversations,
)

__all__ = [
    "answer_page",
    "AnswerRows",
    "answers_by_ids",
    "AnswerSummary",
    "api_key_by_hash",
    "conversation_id_for",
    "ConversationBundle",
    "ConversationDetail",
    "count_caches",
    "count_conversations",
    "create_api_key",
    "create_review",
    "date_bounds",
    "DbEmbeddingStore",
    "DbLLMCache",
    "delete_review",
    "ensure_patient",
    "entity_timeline",
    "Filters",
    "flagged_statements",
    "FlaggedStatement",
    "get_conversation",
    "Granularity",
    "iter_export",
    "Kpis",
    "kpis",
    "list_api_keys",
    "list_audit_events",
    "list_models",
    "list_patients",
    "list_reviews",
    "llm_usage",
    "model_stats",
    "ModelStats",
    "ModelTrendPoint",
    "patient_answers",
    "PatientAnswer",
    "patient_contradictions",
    "patient_exists",
    "patient_history",
    "purge_caches",
    "purge_text_before",
    "quality_trend",
    "quality_trend_by_model",
    "queue_facets",
    "QueueOrder",
    "rebuild_model_rollup",
    "recent_conversations",
    "record_audit",
    "RecordExistsError",
    "reviewed_statements",
    "ReviewedStatement",
    "ReviewState",
    "revoke_api_key",
    "statement_risk_histogram",
    "store_bundles",
    "store_conversation",
    "store_many",
    "stored_conversations",
    "StoreOutcome",
    "StoreStatus",
    "TrendPoint",
    "UNCLASSIFIED",
    "Verdict",
    "VERDICTS",
]
