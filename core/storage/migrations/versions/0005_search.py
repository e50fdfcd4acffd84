"""search: full-text search over query and answer text (SQLite FTS5, PostgreSQL tsvector);
login_lock: failed dashboard logins and account locks, persisted

Search (see :mod:`core.storage.search`):

- SQLite: the FTS5 table ``conversation_fts`` (conversation id, query, answer), one row per
  conversation that has text, sharing the conversation's rowid. Triggers on ``conversation``
  keep it in step with every insert, edit, purge (text set to NULL) and delete, so purged text
  leaves the index with the row; existing rows are indexed here.
- PostgreSQL: a GIN index on the tsvector of query and answer (``english`` configuration);
  PostgreSQL keeps it in step with the rows, existing rows included.

This revision also adds the table ``login_lock`` (the dashboard's users live in a YAML file,
so there is no user table to add columns to): per account (a hash of the typed user name),
the failed logins in a row, the locks in a row and the time the current lock ends.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25 12:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import core.storage.types

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The SQL of the index lives here, frozen as this revision created it (the module that
# queries it, core.storage.search, names the same table, columns and expression).
_FTS_COLUMNS = "conversation_id UNINDEXED, query, answer"
_FTS_TOKENIZE = "porter unicode61 remove_diacritics 2"
_HAS_TEXT = "{row}.query IS NOT NULL OR {row}.answer IS NOT NULL"
_INSERT = (
    "INSERT INTO conversation_fts (rowid, conversation_id, query, answer) "
    "SELECT {row}.rowid, {row}.id, {row}.query, {row}.answer WHERE " + _HAS_TEXT
)
_DELETE = "DELETE FROM conversation_fts WHERE rowid = old.rowid AND conversation_id = old.id"
_SQLITE_TRIGGERS = {
    "conversation_fts_insert": (
        "AFTER INSERT ON conversation BEGIN " + _INSERT.format(row="new") + "; END"
    ),
    "conversation_fts_update": (
        "AFTER UPDATE OF query, answer ON conversation BEGIN "
        + _DELETE
        + "; "
        + _INSERT.format(row="new")
        + "; END"
    ),
    "conversation_fts_delete": "AFTER DELETE ON conversation BEGIN " + _DELETE + "; END",
}
_PG_INDEX = (
    "CREATE INDEX idx_conversation_fts ON conversation USING gin "
    "(to_tsvector('english', coalesce(query, '') || ' ' || coalesce(answer, '')))"
)


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        op.execute(
            f"CREATE VIRTUAL TABLE conversation_fts USING fts5({_FTS_COLUMNS}, "
            f"tokenize = '{_FTS_TOKENIZE}')"
        )
        for name, body in _SQLITE_TRIGGERS.items():
            op.execute(f"CREATE TRIGGER {name} {body}")
        op.execute(
            "INSERT INTO conversation_fts (rowid, conversation_id, query, answer) "
            "SELECT rowid, id, query, answer FROM conversation WHERE "
            + _HAS_TEXT.format(row="conversation")
        )
    elif dialect == "postgresql":
        op.execute(_PG_INDEX)
    op.create_table(
        "login_lock",
        sa.Column("login_key", sa.String(length=64), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("lockouts", sa.Integer(), nullable=False),
        sa.Column("locked_until", core.storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("updated_at", core.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("login_key"),
    )


def downgrade() -> None:
    op.drop_table("login_lock")
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        for name in _SQLITE_TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
        op.execute("DROP TABLE IF EXISTS conversation_fts")
    elif dialect == "postgresql":
        op.execute("DROP INDEX IF EXISTS idx_conversation_fts")
