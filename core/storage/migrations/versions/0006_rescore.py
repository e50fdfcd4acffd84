"""rescore: re-scoring runs (verifier version, settings, selection, counts) and each answer's
scores before and after a run, one row per run and answer (no text)

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25 12:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import core.storage.types

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SCORES = ("grounding", "risk", "quality")


def upgrade() -> None:
    op.create_table(
        "rescore_run",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("verifier_version", sa.String(length=100), nullable=False),
        sa.Column("settings_hash", sa.String(length=64), nullable=False),
        sa.Column("source", sa.String(length=10), nullable=False),
        sa.Column("filters", core.storage.types.JSONType, nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("started_at", core.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("finished_at", core.storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("selected", sa.Integer(), nullable=False),
        sa.Column("checked", sa.Integer(), nullable=False),
        sa.Column("failed", sa.Integer(), nullable=False),
        sa.Column("newly_flagged", sa.Integer(), nullable=False),
        sa.Column("cleared", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_rescore_run_started_at"), "rescore_run", ["started_at"], unique=False)
    score_checks = [
        sa.CheckConstraint(
            f"{c} IS NULL OR ({c} >= 0 AND {c} <= 1)", name=f"ck_rescore_result_{c}_unit"
        )
        for side in ("old", "new")
        for c in (f"{side}_{s}" for s in _SCORES)
    ]
    op.create_table(
        "rescore_result",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("change", sa.String(length=10), nullable=False),
        sa.Column("old_flagged", sa.Boolean(), nullable=True),
        sa.Column("new_flagged", sa.Boolean(), nullable=True),
        sa.Column("old_grounding", sa.Float(), nullable=True),
        sa.Column("new_grounding", sa.Float(), nullable=True),
        sa.Column("old_risk", sa.Float(), nullable=True),
        sa.Column("new_risk", sa.Float(), nullable=True),
        sa.Column("old_quality", sa.Float(), nullable=True),
        sa.Column("new_quality", sa.Float(), nullable=True),
        sa.Column("old_flagged_statements", sa.Integer(), nullable=True),
        sa.Column("new_flagged_statements", sa.Integer(), nullable=True),
        sa.Column("reason", sa.String(length=200), nullable=True),
        sa.Column("checked_at", core.storage.types.UTCDateTime(timezone=True), nullable=False),
        *score_checks,
        sa.ForeignKeyConstraint(["run_id"], ["rescore_run.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("run_id", "conversation_id", name="uq_rescore_result_run_conversation"),
    )
    op.create_index(
        "idx_rescore_result_run_change", "rescore_result", ["run_id", "change"], unique=False
    )
    op.create_index(
        op.f("ix_rescore_result_conversation_id"),
        "rescore_result",
        ["conversation_id"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_rescore_result_conversation_id"), table_name="rescore_result")
    op.drop_index("idx_rescore_result_run_change", table_name="rescore_result")
    op.drop_table("rescore_result")
    op.drop_index(op.f("ix_rescore_run_started_at"), table_name="rescore_run")
    op.drop_table("rescore_run")
