"""Storage: SQLModel tables, engine/sessions, queries (repo), Alembic migrations."""
