"""statement_check.statement_hash: the statement's identity that verdicts follow

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-25 03:00:00
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("statement_check", schema=None) as batch_op:
        batch_op.add_column(sa.Column("statement_hash", sa.String(length=64), nullable=True))
    # rows whose text is still stored get their hash; purged rows keep none (no identity)
    bind = op.get_bind()
    table = sa.table(
        "statement_check",
        sa.column("id", sa.BigInteger()),
        sa.column("statement", sa.Text()),
        sa.column("statement_hash", sa.String(64)),
    )
    last = 0
    while True:
        rows = bind.execute(
            sa.select(table.c.id, table.c.statement)
            .where(table.c.id > last, table.c.statement.is_not(None))
            .order_by(table.c.id)
            .limit(1000)
        ).all()
        if not rows:
            break
        bind.execute(
            table.update()
            .where(table.c.id == sa.bindparam("row_id"))
            .values(statement_hash=sa.bindparam("digest")),
            [
                {
                    "row_id": r[0],
                    "digest": hashlib.sha256(r[1].encode("utf-8", "surrogatepass")).hexdigest(),
                }
                for r in rows
            ],
        )
        last = rows[-1][0]


def downgrade() -> None:
    with op.batch_alter_table("statement_check", schema=None) as batch_op:
        batch_op.drop_column("statement_hash")
