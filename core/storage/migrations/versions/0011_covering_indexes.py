"""Covering indexes for the dashboard's reads on PostgreSQL: the time index of
``conversation`` and the flagged-statement index of ``statement_check`` carry the columns the
per-model statistics and the review queue read, so those scans never visit the tables' rows

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-26 07:30:00

On 1,000,000 conversations (a 30-day window of ~82,000 answers whose rows lie spread over the
table), the per-model statistics read ~280 MB of ``conversation`` rows for five columns and
each review-queue count read ~660 MB of both tables; as index-only scans they read the
indexes alone. SQLite has no INCLUDE: there the indexes stay as they were.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_FLAGGED = sa.text("status IN ('unsupported', 'contradicted')")
CONVERSATION_INCLUDE = [
    "id",
    "model_used",
    "patient_id",
    "is_flagged",
    "grounding_score",
    "consistency_score",
]
STATEMENT_INCLUDE = ["id", "kind", "severity"]


def _indexes(*, covering: bool) -> None:
    op.drop_index("idx_conversation_timestamp", table_name="conversation")
    op.create_index(
        "idx_conversation_timestamp",
        "conversation",
        ["query_timestamp"],
        postgresql_include=CONVERSATION_INCLUDE if covering else [],
    )
    op.drop_index("idx_statement_flagged_conversation", table_name="statement_check")
    op.create_index(
        "idx_statement_flagged_conversation",
        "statement_check",
        ["conversation_id", "risk"],
        postgresql_include=STATEMENT_INCLUDE if covering else [],
        sqlite_where=_FLAGGED,
        postgresql_where=_FLAGGED,
    )


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _indexes(covering=True)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _indexes(covering=False)
