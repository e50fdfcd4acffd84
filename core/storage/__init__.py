"""Storage: SQLModel tables, engine/sessions, one module of functions per job (writes,
queries, answers, purge, caches, ...; ``repo`` re-exports them), Alembic migrations."""
