"""the daily rollups keep the sums of squares of grounding and consistency; an index on the
time of the flagged statements

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-28 05:00:00

The overview's per-model table shows 95 % intervals of the mean grounding and consistency,
which need each model's sums of squares over the range: they were summed over the range's
answers in ``conversation`` (an index-only scan of ~82,000 entries for a month on 1,000,000
conversations, 55-85 ms on PostgreSQL). With the sums of squares beside the sums in
``quality_daily`` and ``quality_daily_model`` (``core.storage.writes`` keeps them with every
write, as it keeps the sums), the table reads the few hundred rows of the rollup. Existing
rollup rows are filled from their conversations here (about 80 s, the rollups locked
meanwhile, for 1,000,000 conversations on PostgreSQL on a 2-core machine, with the index
below).

The review queue and its filter counts select the flagged statements of a date range: through
the time index of every statement, they read nearly three statements for each one they keep.
On an index on the time of the flagged statements alone (covering on PostgreSQL, like the time
index) each of those reads took about a third less time on the same data (the filter counts
86 ms against 134 ms, the page and the count 60 and 56 ms against 94 and 88 ms).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ROLLUPS = ("quality_daily", "quality_daily_model")
SQUARES = ("sumsq_grounding", "sumsq_consistency")
INCLUDE = ["id", "status", "risk", "kind", "severity", "model_used", "patient_id"]
FLAGGED = sa.text("status IN ('unsupported', 'contradicted')")

# each (day, model, patient) bucket's sums of squares, from its conversations (a day is the
# UTC day, as core.storage.writes._day cuts it)
_FILL_PG = """
UPDATE quality_daily AS q
SET sumsq_grounding = s.g, sumsq_consistency = s.c
FROM (
    SELECT date_trunc('day', query_timestamp AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day,
        model_used, patient_id,
        coalesce(sum(grounding_score * grounding_score), 0) AS g,
        coalesce(sum(consistency_score * consistency_score), 0) AS c
    FROM conversation
    GROUP BY 1, 2, 3
) AS s
WHERE q.day = s.day AND q.model_used = s.model_used AND q.patient_id = s.patient_id
"""
_FILL_MODEL_PG = """
UPDATE quality_daily_model AS q
SET sumsq_grounding = s.g, sumsq_consistency = s.c
FROM (
    SELECT day, model_used, sum(sumsq_grounding) AS g, sum(sumsq_consistency) AS c
    FROM quality_daily
    GROUP BY 1, 2
) AS s
WHERE q.day = s.day AND q.model_used = s.model_used
"""
# SQLite keeps times as naive UTC text ("2026-01-05 09:00:00.000000"): a day's conversations
# are those from its midnight to the next
_SQLITE_DAY = (
    "FROM conversation AS c WHERE c.patient_id = quality_daily.patient_id "
    "AND c.model_used = quality_daily.model_used "
    "AND c.query_timestamp >= quality_daily.day "
    "AND c.query_timestamp < datetime(quality_daily.day, '+1 day')"
)
_FILL_SQLITE = f"""
UPDATE quality_daily SET
    sumsq_grounding = coalesce((SELECT sum(c.grounding_score * c.grounding_score) {_SQLITE_DAY}), 0),
    sumsq_consistency = coalesce(
        (SELECT sum(c.consistency_score * c.consistency_score) {_SQLITE_DAY}), 0)
"""
_MODEL_SQLITE = (
    "FROM quality_daily AS d WHERE d.day = quality_daily_model.day "
    "AND d.model_used = quality_daily_model.model_used"
)
_FILL_MODEL_SQLITE = f"""
UPDATE quality_daily_model SET
    sumsq_grounding = coalesce((SELECT sum(d.sumsq_grounding) {_MODEL_SQLITE}), 0),
    sumsq_consistency = coalesce((SELECT sum(d.sumsq_consistency) {_MODEL_SQLITE}), 0)
"""


def upgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    for table in ROLLUPS:
        with op.batch_alter_table(table) as batch:
            for name in SQUARES:  # a default for the rows there are, filled below
                batch.add_column(
                    sa.Column(name, sa.Float(), nullable=False, server_default=sa.text("0"))
                )
    op.execute(_FILL_PG if postgresql else _FILL_SQLITE)
    op.execute(_FILL_MODEL_PG if postgresql else _FILL_MODEL_SQLITE)
    for table in ROLLUPS:
        # as the other sums: every writer names them (a bulk load that left them out would
        # give wrong intervals, where it now fails)
        with op.batch_alter_table(table) as batch:
            for name in SQUARES:
                batch.alter_column(name, existing_type=sa.Float(), server_default=None)
    op.create_index(
        "idx_statement_flagged_time",
        "statement_check",
        ["query_timestamp"],
        postgresql_include=INCLUDE,
        sqlite_where=FLAGGED,
        postgresql_where=FLAGGED,
    )


def downgrade() -> None:
    op.drop_index("idx_statement_flagged_time", table_name="statement_check")
    for table in ROLLUPS:
        with op.batch_alter_table(table) as batch:
            for name in SQUARES:
                batch.drop_column(name)
