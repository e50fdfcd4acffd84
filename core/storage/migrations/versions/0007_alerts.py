"""alerts: alert rules' firings and webhook deliveries

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25 12:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import core.storage.types

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_OPEN = sa.text("state != 'resolved'")
_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "alert_firing",
        sa.Column("id", _ID, nullable=False),
        sa.Column("rule", sa.String(length=100), nullable=False),
        sa.Column("kind", sa.String(length=30), nullable=False),
        sa.Column("condition_key", sa.String(length=400), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=True),
        sa.Column("patient_id", sa.String(length=64), nullable=True),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("threshold", sa.Float(), nullable=True),
        sa.Column("counts", _JSON, nullable=True),
        sa.Column("conversation_ids", _JSON, nullable=True),
        sa.Column("occurrences", sa.Integer(), nullable=False),
        sa.Column("first_at", core.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("last_at", core.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("acknowledged_by", sa.String(length=200), nullable=True),
        sa.Column("acknowledged_at", core.storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("resolved_by", sa.String(length=200), nullable=True),
        sa.Column("resolved_at", core.storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "state IN ('open', 'acknowledged', 'resolved')", name="ck_alert_firing_state"
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("alert_firing", schema=None) as batch_op:
        batch_op.create_index(
            "uq_alert_firing_open",
            ["condition_key"],
            unique=True,
            sqlite_where=_OPEN,
            postgresql_where=_OPEN,
        )
        batch_op.create_index("idx_alert_firing_state_time", ["state", "last_at"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_alert_firing_patient_id"), ["patient_id"], unique=False
        )

    op.create_table(
        "alert_delivery",
        sa.Column("id", _ID, nullable=False),
        sa.Column("firing_id", _ID, nullable=False),
        sa.Column("webhook", sa.String(length=100), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error_class", sa.String(length=100), nullable=True),
        sa.Column("outcome", sa.String(length=20), nullable=False),
        sa.Column("duration_ms", sa.Integer(), nullable=True),
        sa.Column("at", core.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["firing_id"], ["alert_firing.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("alert_delivery", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_alert_delivery_at"), ["at"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_alert_delivery_firing_id"), ["firing_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("alert_delivery", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_alert_delivery_firing_id"))
        batch_op.drop_index(batch_op.f("ix_alert_delivery_at"))
    op.drop_table("alert_delivery")
    with op.batch_alter_table("alert_firing", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_alert_firing_patient_id"))
        batch_op.drop_index("idx_alert_firing_state_time")
        batch_op.drop_index("uq_alert_firing_open")
    op.drop_table("alert_firing")
