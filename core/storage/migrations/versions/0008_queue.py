"""queue: the ingestion job queue (PostgreSQL only)

The ``ingest_job`` table (the raw record of a queued answer and what became of it) on every
backend, so that the schema matches the models everywhere; on PostgreSQL also the schema of
the job queue itself (procrastinate's, as the installed release ships it) in its own
PostgreSQL schema ``procrastinate``, apart from Groundwatch's tables. A later procrastinate
release that changes its schema comes with a revision here that applies its migration files.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25 12:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import core.storage.types

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

QUEUE_SCHEMA = "procrastinate"


def upgrade() -> None:
    op.create_table(
        "ingest_job",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("queue_job_id", sa.BigInteger(), nullable=True),
        sa.Column("external_id", sa.String(length=200), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("payload", core.storage.types.JSONType, nullable=True),
        sa.Column("payload_hash", sa.String(length=12), nullable=False),
        sa.Column("replace", sa.Boolean(), nullable=False),
        sa.Column("submitted_by", sa.String(length=200), nullable=False),
        sa.Column("created_at", core.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("finished_at", core.storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("outcome", sa.String(length=20), nullable=True),
        sa.Column("error_class", sa.String(length=100), nullable=True),
        sa.Column("error_message", sa.String(length=300), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("queue_job_id"),
    )
    with op.batch_alter_table("ingest_job") as batch:
        batch.create_index("ix_ingest_job_conversation_id", ["conversation_id"])
        batch.create_index("ix_ingest_job_created_at", ["created_at"])
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    from procrastinate.schema import SchemaManager

    previous = bind.exec_driver_sql("SHOW search_path").scalar_one()
    bind.exec_driver_sql(f"CREATE SCHEMA {QUEUE_SCHEMA}")
    bind.exec_driver_sql(f"SET LOCAL search_path TO {QUEUE_SCHEMA}")
    bind.exec_driver_sql(SchemaManager.get_schema().replace("%", "%%"))  # no parameters
    bind.execute(sa.text("SELECT set_config('search_path', :p, true)"), {"p": previous})


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"DROP SCHEMA IF EXISTS {QUEUE_SCHEMA} CASCADE")
    op.drop_table("ingest_job")
