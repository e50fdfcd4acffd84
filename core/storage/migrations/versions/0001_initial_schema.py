"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-21 23:18:41.075167
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import core.storage.types

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "audit_event",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("at", core.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("action", sa.String(length=40), nullable=False),
        sa.Column("target_type", sa.String(length=40), nullable=True),
        sa.Column("target_id", sa.String(length=200), nullable=True),
        sa.Column(
            "detail",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("audit_event", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_audit_event_action"), ["action"], unique=False)
        batch_op.create_index(batch_op.f("ix_audit_event_at"), ["at"], unique=False)

    op.create_table(
        "embedding_cache",
        sa.Column("model", sa.String(length=100), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("dim", sa.Integer(), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", core.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("model", "content_hash"),
    )
    op.create_table(
        "llm_call",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("cache_key", sa.String(length=64), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("response_text", sa.Text(), nullable=True),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("latency_ms", sa.Float(), nullable=False),
        sa.Column("finish_reason", sa.String(length=30), nullable=True),
        sa.Column("purpose", sa.String(length=40), nullable=True),
        sa.Column("created_at", core.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("cache_key"),
    )
    op.create_table(
        "patient",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("created_at", core.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "quality_daily",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("day", core.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("model_used", sa.String(length=200), nullable=False),
        sa.Column("patient_id", sa.String(length=64), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("n_flagged", sa.Integer(), nullable=False),
        sa.Column("n_grounding", sa.Integer(), nullable=False),
        sa.Column("sum_grounding", sa.Float(), nullable=False),
        sa.Column("n_consistency", sa.Integer(), nullable=False),
        sa.Column("sum_consistency", sa.Float(), nullable=False),
        sa.Column("n_confidence", sa.Integer(), nullable=False),
        sa.Column("sum_confidence", sa.Float(), nullable=False),
        sa.Column("n_risk", sa.Integer(), nullable=False),
        sa.Column("sum_risk", sa.Float(), nullable=False),
        sa.Column("n_quality", sa.Integer(), nullable=False),
        sa.Column("sum_quality", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("day", "model_used", "patient_id", name="uq_quality_daily"),
    )
    with op.batch_alter_table("quality_daily", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_quality_daily_day"), ["day"], unique=False)

    op.create_table(
        "quality_daily_model",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("day", core.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("model_used", sa.String(length=200), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("n_flagged", sa.Integer(), nullable=False),
        sa.Column("n_grounding", sa.Integer(), nullable=False),
        sa.Column("sum_grounding", sa.Float(), nullable=False),
        sa.Column("n_consistency", sa.Integer(), nullable=False),
        sa.Column("sum_consistency", sa.Float(), nullable=False),
        sa.Column("n_confidence", sa.Integer(), nullable=False),
        sa.Column("sum_confidence", sa.Float(), nullable=False),
        sa.Column("n_risk", sa.Integer(), nullable=False),
        sa.Column("sum_risk", sa.Float(), nullable=False),
        sa.Column("n_quality", sa.Integer(), nullable=False),
        sa.Column("sum_quality", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("day", "model_used", name="uq_quality_daily_model"),
    )
    with op.batch_alter_table("quality_daily_model", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_quality_daily_model_day"), ["day"], unique=False)

    op.create_table(
        "conversation",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("external_id", sa.String(length=200), nullable=False),
        sa.Column("patient_id", sa.String(length=64), nullable=False),
        sa.Column("query", sa.Text(), nullable=True),
        sa.Column("query_intent", sa.String(length=100), nullable=True),
        sa.Column("query_timestamp", core.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("answer", sa.Text(), nullable=True),
        sa.Column("detailed_summary", sa.Text(), nullable=True),
        sa.Column("model_used", sa.String(length=200), nullable=False),
        sa.Column(
            "extractions",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column(
            "sources",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column(
            "samples",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column(
            "evidence",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("grounding_score", sa.Float(), nullable=True),
        sa.Column("consistency_score", sa.Float(), nullable=True),
        sa.Column("confidence_score", sa.Float(), nullable=True),
        sa.Column("hallucination_risk", sa.Float(), nullable=True),
        sa.Column("overall_quality", sa.Float(), nullable=True),
        sa.Column("risk_level", sa.String(length=20), nullable=True),
        sa.Column("is_flagged", sa.Boolean(), nullable=False),
        sa.Column("flagged_statements", sa.Integer(), nullable=False),
        sa.Column("total_statements", sa.Integer(), nullable=False),
        sa.Column("execution_time_ms", sa.Integer(), nullable=True),
        sa.Column(
            "feature_flags",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column(
            "check_status",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column(
            "warnings",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("text_purged_at", core.storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_at", core.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", core.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "confidence_score IS NULL OR (confidence_score >= 0 AND confidence_score <= 1)",
            name="ck_conversation_confidence_score_unit",
        ),
        sa.CheckConstraint(
            "consistency_score IS NULL OR (consistency_score >= 0 AND consistency_score <= 1)",
            name="ck_conversation_consistency_score_unit",
        ),
        sa.CheckConstraint(
            "grounding_score IS NULL OR (grounding_score >= 0 AND grounding_score <= 1)",
            name="ck_conversation_grounding_score_unit",
        ),
        sa.CheckConstraint(
            "hallucination_risk IS NULL OR (hallucination_risk >= 0 AND hallucination_risk <= 1)",
            name="ck_conversation_hallucination_risk_unit",
        ),
        sa.CheckConstraint(
            "overall_quality IS NULL OR (overall_quality >= 0 AND overall_quality <= 1)",
            name="ck_conversation_overall_quality_unit",
        ),
        sa.ForeignKeyConstraint(["patient_id"], ["patient.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("external_id"),
    )
    with op.batch_alter_table("conversation", schema=None) as batch_op:
        batch_op.create_index(
            "idx_conversation_model_time", ["model_used", "query_timestamp"], unique=False
        )
        batch_op.create_index(
            "idx_conversation_patient_time", ["patient_id", "query_timestamp"], unique=False
        )
        batch_op.create_index(
            "idx_conversation_quality", ["grounding_score", "consistency_score"], unique=False
        )
        batch_op.create_index("idx_conversation_timestamp", ["query_timestamp"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_conversation_is_flagged"), ["is_flagged"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_conversation_patient_id"), ["patient_id"], unique=False
        )

    op.create_table(
        "claim_audit",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("claim_id", sa.String(length=64), nullable=False),
        sa.Column("claim_text", sa.Text(), nullable=True),
        sa.Column(
            "evidence_ids",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("evidence_support", sa.Float(), nullable=True),
        sa.Column("evidence_dependence", sa.Float(), nullable=True),
        sa.Column("consistency_score", sa.Float(), nullable=True),
        sa.Column("confidence_justified", sa.Boolean(), nullable=True),
        sa.Column("evidence_gap_bits", sa.Float(), nullable=True),
        sa.Column("is_flagged", sa.Boolean(), nullable=False),
        sa.Column("flag_reason", sa.String(length=40), nullable=True),
        sa.Column("gap_type", sa.String(length=40), nullable=True),
        sa.Column("created_at", core.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "consistency_score IS NULL OR (consistency_score >= 0 AND consistency_score <= 1)",
            name="ck_claim_audit_consistency_score_unit",
        ),
        sa.CheckConstraint(
            "evidence_dependence IS NULL OR (evidence_dependence >= 0 AND evidence_dependence <= 1)",
            name="ck_claim_audit_evidence_dependence_unit",
        ),
        sa.CheckConstraint(
            "evidence_support IS NULL OR (evidence_support >= 0 AND evidence_support <= 1)",
            name="ck_claim_audit_evidence_support_unit",
        ),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversation.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("claim_audit", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_claim_audit_conversation_id"), ["conversation_id"], unique=False
        )

    op.create_table(
        "confidence_metric",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("extraction_index", sa.Integer(), nullable=False),
        sa.Column("retrieval_confidence", sa.Float(), nullable=True),
        sa.Column("source_confidence", sa.Float(), nullable=True),
        sa.Column("extraction_confidence", sa.Float(), nullable=True),
        sa.Column("consistency_confidence", sa.Float(), nullable=True),
        sa.Column("aggregate_confidence", sa.Float(), nullable=False),
        sa.Column("uncertainty_level", sa.String(length=20), nullable=True),
        sa.Column("uncertainty_explanation", sa.Text(), nullable=True),
        sa.Column("calculated_at", core.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "aggregate_confidence IS NULL OR (aggregate_confidence >= 0 AND aggregate_confidence <= 1)",
            name="ck_confidence_metric_aggregate_confidence_unit",
        ),
        sa.CheckConstraint(
            "consistency_confidence IS NULL OR (consistency_confidence >= 0 AND consistency_confidence <= 1)",
            name="ck_confidence_metric_consistency_confidence_unit",
        ),
        sa.CheckConstraint(
            "extraction_confidence IS NULL OR (extraction_confidence >= 0 AND extraction_confidence <= 1)",
            name="ck_confidence_metric_extraction_confidence_unit",
        ),
        sa.CheckConstraint(
            "retrieval_confidence IS NULL OR (retrieval_confidence >= 0 AND retrieval_confidence <= 1)",
            name="ck_confidence_metric_retrieval_confidence_unit",
        ),
        sa.CheckConstraint(
            "source_confidence IS NULL OR (source_confidence >= 0 AND source_confidence <= 1)",
            name="ck_confidence_metric_source_confidence_unit",
        ),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversation.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("confidence_metric", schema=None) as batch_op:
        batch_op.create_index(
            "idx_confidence_low",
            ["aggregate_confidence"],
            unique=False,
            sqlite_where=sa.text("aggregate_confidence < 0.7"),
            postgresql_where=sa.text("aggregate_confidence < 0.7"),
        )
        batch_op.create_index(
            batch_op.f("ix_confidence_metric_conversation_id"), ["conversation_id"], unique=False
        )

    op.create_table(
        "consistency_check",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("patient_id", sa.String(length=64), nullable=False),
        sa.Column("current_conversation_id", sa.String(length=64), nullable=False),
        sa.Column("previous_conversation_id", sa.String(length=64), nullable=True),
        sa.Column("check_type", sa.String(length=40), nullable=False),
        sa.Column("is_consistent", sa.Boolean(), nullable=False),
        sa.Column("inconsistency_description", sa.Text(), nullable=True),
        sa.Column("current_statement", sa.Text(), nullable=True),
        sa.Column("previous_statement", sa.Text(), nullable=True),
        sa.Column("entity", sa.String(length=200), nullable=True),
        sa.Column("consistency_score", sa.Float(), nullable=True),
        sa.Column("severity", sa.String(length=10), nullable=True),
        sa.Column("checked_at", core.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "consistency_score IS NULL OR (consistency_score >= 0 AND consistency_score <= 1)",
            name="ck_consistency_check_consistency_score_unit",
        ),
        sa.ForeignKeyConstraint(
            ["current_conversation_id"], ["conversation.id"], ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(["patient_id"], ["patient.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["previous_conversation_id"], ["conversation.id"], ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("consistency_check", schema=None) as batch_op:
        batch_op.create_index(
            "idx_consistency_issues",
            ["is_consistent"],
            unique=False,
            sqlite_where=sa.text("is_consistent = 0"),
            postgresql_where=sa.text("is_consistent = false"),
        )
        batch_op.create_index(
            batch_op.f("ix_consistency_check_current_conversation_id"),
            ["current_conversation_id"],
            unique=False,
        )
        batch_op.create_index(
            batch_op.f("ix_consistency_check_patient_id"), ["patient_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_consistency_check_previous_conversation_id"),
            ["previous_conversation_id"],
            unique=False,
        )

    op.create_table(
        "entity_mention",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("patient_id", sa.String(length=64), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("at", core.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("assertion", sa.String(length=20), nullable=False),
        sa.Column("action", sa.String(length=20), nullable=True),
        sa.Column("value", sa.String(length=100), nullable=True),
        sa.Column("unit", sa.String(length=40), nullable=True),
        sa.Column("dose", sa.String(length=100), nullable=True),
        sa.Column("frequency", sa.String(length=100), nullable=True),
        sa.Column("statement", sa.Text(), nullable=True),
        sa.Column("statement_start", sa.Integer(), nullable=True),
        sa.Column("statement_end", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversation.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["patient_id"], ["patient.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("entity_mention", schema=None) as batch_op:
        batch_op.create_index(
            "idx_entity_patient_kind_name", ["patient_id", "kind", "name"], unique=False
        )
        batch_op.create_index("idx_entity_patient_time", ["patient_id", "at"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_entity_mention_conversation_id"), ["conversation_id"], unique=False
        )

    op.create_table(
        "evidence_validation",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=True),
        sa.Column("transcript_hash", sa.String(length=64), nullable=False),
        sa.Column("transcript_len", sa.Integer(), nullable=False),
        sa.Column("mode", sa.String(length=20), nullable=False),
        sa.Column("status", sa.String(length=30), nullable=False),
        sa.Column("extracted_count", sa.Integer(), nullable=False),
        sa.Column("validated_count", sa.Integer(), nullable=False),
        sa.Column("rejected_count", sa.Integer(), nullable=False),
        sa.Column(
            "rejected_by_domain",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("failure_category", sa.String(length=40), nullable=True),
        sa.Column("created_at", core.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversation.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("evidence_validation", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_evidence_validation_conversation_id"), ["conversation_id"], unique=False
        )

    op.create_table(
        "selfcheck_result",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("method", sa.String(length=30), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("sample_count", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=True),
        sa.Column(
            "sentence_scores",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("passage_score", sa.Float(), nullable=True),
        sa.Column("risk_score", sa.Float(), nullable=True),
        sa.Column("risk_level", sa.String(length=20), nullable=True),
        sa.Column("created_at", core.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "risk_score IS NULL OR (risk_score >= 0 AND risk_score <= 1)",
            name="ck_selfcheck_result_risk_score_unit",
        ),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversation.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("selfcheck_result", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_selfcheck_result_conversation_id"), ["conversation_id"], unique=False
        )

    op.create_table(
        "statement_check",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("statement", sa.Text(), nullable=True),
        sa.Column("statement_index", sa.Integer(), nullable=False),
        sa.Column("start", sa.Integer(), nullable=True),
        sa.Column("end", sa.Integer(), nullable=True),
        sa.Column("is_grounded", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("source_chunk_id", sa.String(length=200), nullable=True),
        sa.Column("source_text", sa.Text(), nullable=True),
        sa.Column("supporting_evidence", sa.Text(), nullable=True),
        sa.Column("evidence_start", sa.Integer(), nullable=True),
        sa.Column("evidence_end", sa.Integer(), nullable=True),
        sa.Column("grounding_confidence", sa.Float(), nullable=True),
        sa.Column("verification_method", sa.String(length=30), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("risk", sa.Float(), nullable=False),
        sa.Column("verified_at", core.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "status IN ('grounded', 'unsupported', 'contradicted')", name="ck_statement_status"
        ),
        sa.CheckConstraint(
            "grounding_confidence IS NULL OR (grounding_confidence >= 0 AND grounding_confidence <= 1)",
            name="ck_statement_check_grounding_confidence_unit",
        ),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversation.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("statement_check", schema=None) as batch_op:
        batch_op.create_index(
            "idx_grounding_unsupported",
            ["is_grounded"],
            unique=False,
            sqlite_where=sa.text("is_grounded = 0"),
            postgresql_where=sa.text("is_grounded = false"),
        )
        batch_op.create_index(
            "idx_statement_flagged_conversation",
            ["conversation_id", "risk"],
            unique=False,
            sqlite_where=sa.text("status IN ('unsupported', 'contradicted')"),
            postgresql_where=sa.text("status IN ('unsupported', 'contradicted')"),
        )
        batch_op.create_index(
            "idx_statement_flagged_risk",
            ["risk", "id"],
            unique=False,
            sqlite_where=sa.text("status IN ('unsupported', 'contradicted')"),
            postgresql_where=sa.text("status IN ('unsupported', 'contradicted')"),
        )
        batch_op.create_index(
            batch_op.f("ix_statement_check_conversation_id"), ["conversation_id"], unique=False
        )

    op.create_table(
        "review",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column(
            "statement_check_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=True,
        ),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("reviewer", sa.String(length=200), nullable=False),
        sa.Column("verdict", sa.String(length=20), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("created_at", core.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "verdict IN ('confirmed', 'false_alarm', 'unsure')", name="ck_review_verdict"
        ),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversation.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["statement_check_id"], ["statement_check.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("review", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_review_conversation_id"), ["conversation_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_review_created_at"), ["created_at"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_review_statement_check_id"), ["statement_check_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("review", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_review_statement_check_id"))
        batch_op.drop_index(batch_op.f("ix_review_created_at"))
        batch_op.drop_index(batch_op.f("ix_review_conversation_id"))

    op.drop_table("review")
    with op.batch_alter_table("statement_check", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_statement_check_conversation_id"))
        batch_op.drop_index(
            "idx_statement_flagged_risk",
            sqlite_where=sa.text("status IN ('unsupported', 'contradicted')"),
            postgresql_where=sa.text("status IN ('unsupported', 'contradicted')"),
        )
        batch_op.drop_index(
            "idx_statement_flagged_conversation",
            sqlite_where=sa.text("status IN ('unsupported', 'contradicted')"),
            postgresql_where=sa.text("status IN ('unsupported', 'contradicted')"),
        )
        batch_op.drop_index(
            "idx_grounding_unsupported",
            sqlite_where=sa.text("is_grounded = 0"),
            postgresql_where=sa.text("is_grounded = false"),
        )

    op.drop_table("statement_check")
    with op.batch_alter_table("selfcheck_result", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_selfcheck_result_conversation_id"))

    op.drop_table("selfcheck_result")
    with op.batch_alter_table("evidence_validation", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_evidence_validation_conversation_id"))

    op.drop_table("evidence_validation")
    with op.batch_alter_table("entity_mention", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_entity_mention_conversation_id"))
        batch_op.drop_index("idx_entity_patient_time")
        batch_op.drop_index("idx_entity_patient_kind_name")

    op.drop_table("entity_mention")
    with op.batch_alter_table("consistency_check", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_consistency_check_previous_conversation_id"))
        batch_op.drop_index(batch_op.f("ix_consistency_check_patient_id"))
        batch_op.drop_index(batch_op.f("ix_consistency_check_current_conversation_id"))
        batch_op.drop_index(
            "idx_consistency_issues",
            sqlite_where=sa.text("is_consistent = 0"),
            postgresql_where=sa.text("is_consistent = false"),
        )

    op.drop_table("consistency_check")
    with op.batch_alter_table("confidence_metric", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_confidence_metric_conversation_id"))
        batch_op.drop_index(
            "idx_confidence_low",
            sqlite_where=sa.text("aggregate_confidence < 0.7"),
            postgresql_where=sa.text("aggregate_confidence < 0.7"),
        )

    op.drop_table("confidence_metric")
    with op.batch_alter_table("claim_audit", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_claim_audit_conversation_id"))

    op.drop_table("claim_audit")
    with op.batch_alter_table("conversation", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_conversation_patient_id"))
        batch_op.drop_index(batch_op.f("ix_conversation_is_flagged"))
        batch_op.drop_index("idx_conversation_timestamp")
        batch_op.drop_index("idx_conversation_quality")
        batch_op.drop_index("idx_conversation_patient_time")
        batch_op.drop_index("idx_conversation_model_time")

    op.drop_table("conversation")
    with op.batch_alter_table("quality_daily_model", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_quality_daily_model_day"))

    op.drop_table("quality_daily_model")
    with op.batch_alter_table("quality_daily", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_quality_daily_day"))

    op.drop_table("quality_daily")
    op.drop_table("patient")
    op.drop_table("llm_call")
    op.drop_table("embedding_cache")
    with op.batch_alter_table("audit_event", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_audit_event_at"))
        batch_op.drop_index(batch_op.f("ix_audit_event_action"))

    op.drop_table("audit_event")
