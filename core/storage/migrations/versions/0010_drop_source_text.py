"""statement_check.source_text dropped: it was never written (the evidence span is kept in
supporting_evidence, and the whole source in conversation.sources)

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25 13:15:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("statement_check") as batch:
        batch.drop_column("source_text")


def downgrade() -> None:
    with op.batch_alter_table("statement_check") as batch:
        batch.add_column(sa.Column("source_text", sa.Text(), nullable=True))
