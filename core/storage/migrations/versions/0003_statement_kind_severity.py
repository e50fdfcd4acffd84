"""statement_check.kind and .severity: what is wrong with a flagged statement, and how much
it matters clinically (core/severity.py, docs/severity.md)

Flagged statements stored before this revision are classified here when their text is still
stored (the same classification the pipeline applies to new answers, without the learned
decision's signals, which were never stored: the reason, the stored evidence and the answer's
consistency findings decide). Statements whose text was purged or never stored stay NULL and
are shown as "unclassified".

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-25 08:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH = 500


def upgrade() -> None:
    with op.batch_alter_table("statement_check", schema=None) as batch_op:
        batch_op.add_column(sa.Column("kind", sa.String(length=20), nullable=True))
        batch_op.add_column(sa.Column("severity", sa.String(length=10), nullable=True))
    _classify_stored(op.get_bind())


def _classify_stored(bind: sa.engine.Connection) -> None:
    from core.severity import EarlierConflict, classify

    sc = sa.table(
        "statement_check",
        sa.column("id", sa.BigInteger()),
        sa.column("conversation_id", sa.String(64)),
        sa.column("statement", sa.Text()),
        sa.column("status", sa.String(20)),
        sa.column("reason", sa.Text()),
        sa.column("supporting_evidence", sa.Text()),
        sa.column("kind", sa.String(20)),
        sa.column("severity", sa.String(10)),
    )
    cc = sa.table(
        "consistency_check",
        sa.column("current_conversation_id", sa.String(64)),
        sa.column("current_statement", sa.Text()),
        sa.column("severity", sa.String(10)),
        sa.column("is_consistent", sa.Boolean()),
    )
    last = 0
    while True:
        rows = bind.execute(
            sa.select(
                sc.c.id,
                sc.c.conversation_id,
                sc.c.statement,
                sc.c.status,
                sc.c.reason,
                sc.c.supporting_evidence,
            )
            .where(
                sc.c.id > last,
                sc.c.statement.is_not(None),
                sc.c.status.in_(["unsupported", "contradicted"]),
            )
            .order_by(sc.c.id)
            .limit(BATCH)
        ).all()
        if not rows:
            break
        conversations = sorted({r[1] for r in rows})
        earlier: dict[str, list[EarlierConflict]] = {}
        for conv_id, sentence, severity in bind.execute(
            sa.select(cc.c.current_conversation_id, cc.c.current_statement, cc.c.severity).where(
                cc.c.current_conversation_id.in_(conversations),
                cc.c.is_consistent.is_(False),
                cc.c.current_statement.is_not(None),
            )
        ):
            earlier.setdefault(conv_id, []).append(EarlierConflict(sentence, severity))
        updates = []
        for row_id, conv_id, statement, status, reason, evidence in rows:
            found = classify(
                status=status,
                statement=statement,
                reason=reason,
                evidence=evidence,
                earlier=earlier.get(conv_id, ()),
            )
            if found is not None:
                updates.append({"row_id": row_id, "k": found.kind, "s": found.severity})
        if updates:
            bind.execute(
                sc.update()
                .where(sc.c.id == sa.bindparam("row_id"))
                .values(kind=sa.bindparam("k"), severity=sa.bindparam("s")),
                updates,
            )
        last = rows[-1][0]


def downgrade() -> None:
    with op.batch_alter_table("statement_check", schema=None) as batch_op:
        batch_op.drop_column("severity")
        batch_op.drop_column("kind")
