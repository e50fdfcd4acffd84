"""statement_check carries its answer's time, model and patient, with an index on the time and
one on the patient and time of the flagged statements

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-27 16:10:00

The review queue, its filter counts and the calibration page's risk histogram select
statements by their answer's date range, model and patient. Joined to ``conversation`` for
that, each read looked up every answer of the range (~82,000 for a month on 1,000,000
conversations) one by one: 0.3-0.6 s a read on PostgreSQL, several per page. With the three
columns copied onto the statement (``core.storage.writes`` writes them with every stored
conversation; an edited answer's statements are written again) and an index on the time that
carries what those reads use, they are one index range scan; one on the patient and time of
the flagged statements keeps a patient's queue over all time to the patient's own rows (only
the flagged ones, so that an import writes little more: importing into SQLite was a few per
cent slower with this migration, about 15 % with the patient index on every statement).
Existing rows are filled from their conversations here.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from core.storage.types import UTCDateTime

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INCLUDE = ["id", "status", "risk", "kind", "severity", "model_used", "patient_id"]
PATIENT_INCLUDE = ["id", "risk", "kind", "severity", "model_used"]
FLAGGED = sa.text("status IN ('unsupported', 'contradicted')")


def upgrade() -> None:
    with op.batch_alter_table("statement_check") as batch:
        batch.add_column(sa.Column("query_timestamp", UTCDateTime(), nullable=True))
        batch.add_column(sa.Column("model_used", sa.String(200), nullable=True))
        batch.add_column(sa.Column("patient_id", sa.String(64), nullable=True))
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "UPDATE statement_check AS s SET query_timestamp = c.query_timestamp, "
            "model_used = c.model_used, patient_id = c.patient_id "
            "FROM conversation AS c WHERE c.id = s.conversation_id"
        )
    else:
        op.execute(
            "UPDATE statement_check SET "
            "query_timestamp = (SELECT c.query_timestamp FROM conversation AS c "
            "WHERE c.id = statement_check.conversation_id), "
            "model_used = (SELECT c.model_used FROM conversation AS c "
            "WHERE c.id = statement_check.conversation_id), "
            "patient_id = (SELECT c.patient_id FROM conversation AS c "
            "WHERE c.id = statement_check.conversation_id)"
        )
    op.create_index(
        "idx_statement_time", "statement_check", ["query_timestamp"], postgresql_include=INCLUDE
    )
    op.create_index(
        "idx_statement_patient",
        "statement_check",
        ["patient_id", "query_timestamp"],
        postgresql_include=PATIENT_INCLUDE,
        sqlite_where=FLAGGED,
        postgresql_where=FLAGGED,
    )


def downgrade() -> None:
    op.drop_index("idx_statement_patient", table_name="statement_check")
    op.drop_index("idx_statement_time", table_name="statement_check")
    with op.batch_alter_table("statement_check") as batch:
        batch.drop_column("patient_id")
        batch.drop_column("model_used")
        batch.drop_column("query_timestamp")
