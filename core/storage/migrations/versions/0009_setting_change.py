"""setting_change: settings applied from the dashboard (the review threshold), with history

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25 12:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import core.storage.types

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "setting_change",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("name", sa.String(length=60), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("previous", sa.Float(), nullable=True),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("reason", sa.String(length=500), nullable=True),
        sa.Column("changed_at", core.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_setting_change_name", "setting_change", ["name"])
    op.create_index("ix_setting_change_changed_at", "setting_change", ["changed_at"])


def downgrade() -> None:
    op.drop_index("ix_setting_change_changed_at", table_name="setting_change")
    op.drop_index("ix_setting_change_name", table_name="setting_change")
    op.drop_table("setting_change")
