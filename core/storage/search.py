"""Search over stored record text: full-text search of queries and answers, and a patient's
past queries for similarity ranking.

Full-text search is the database's own (created by migration 0005):

- PostgreSQL: ``websearch_to_tsquery`` against the ``english`` tsvector of query and answer,
  served by the GIN expression index ``idx_conversation_fts``;
- SQLite: the FTS5 table ``conversation_fts`` (porter stemming, diacritics folded), which
  triggers on ``conversation`` keep in step with every insert, edit, purge and delete.

Both take the same search syntax, that of ``websearch_to_tsquery``: words (all must occur),
``"a quoted phrase"``, ``or`` between two terms, ``-word`` to exclude. Stemming makes
``headaches`` find ``headache`` on both; PostgreSQL also drops English stop words (a search
for ``the`` alone finds nothing there).

Purged text leaves the index with the row: the SQLite triggers delete the index row when the
text is cleared, and :func:`compact_index` then merges the index so that no deleted term
stays in its pages; on PostgreSQL the index follows the row, and the space of the old row
versions is reclaimed by ``VACUUM`` (:func:`reclaim_purged`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, literal_column, select, text
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from core.storage.models import Conversation

FTS_TABLE = "conversation_fts"
PG_INDEX = "idx_conversation_fts"
PG_CONFIG = "english"
MAX_QUERY_CHARS = 500
MAX_TERMS = 32

# the expression the PostgreSQL GIN index is built on (migration 0005): queries must use the
# same one for the index to serve them
_PG_DOCUMENT = (
    f"to_tsvector('{PG_CONFIG}', coalesce(conversation.query, '') || ' ' || "
    "coalesce(conversation.answer, ''))"
)
_TOKEN = re.compile(r'(-?)"([^"]*)"?|(\S+)')


class SearchQueryError(ValueError):
    """A search text that cannot be run (the message says why, never repeats the text)."""


@dataclass(frozen=True, slots=True)
class SearchTerms:
    """A parsed search: groups of terms that must all match (within a group, any one term
    may), and terms that must not."""

    groups: tuple[tuple[str, ...], ...]
    excluded: tuple[str, ...]


def parse_search(q: str) -> SearchTerms:
    """Words, quoted phrases, ``or`` and ``-exclusions`` of a search text, as
    ``websearch_to_tsquery`` reads them.

    Raises:
        SearchQueryError: too long, too many terms, or nothing to look for (only exclusions
            or punctuation).
    """
    if len(q) > MAX_QUERY_CHARS:
        raise SearchQueryError(f"at most {MAX_QUERY_CHARS} characters")
    groups: list[list[str]] = []
    excluded: list[str] = []
    join_next = False
    count = 0
    for m in _TOKEN.finditer(q):
        negated, phrase, word = m.group(1) == "-", m.group(2), m.group(3)
        if word is not None:
            if word.lower() == "or" and groups:
                join_next = True
                continue
            negated = word.startswith("-")
            phrase = word.lstrip("-")
        term = " ".join(phrase.split())
        if not re.search(r"\w", term):
            continue
        count += 1
        if count > MAX_TERMS:
            raise SearchQueryError(f"at most {MAX_TERMS} words or phrases")
        if negated:
            excluded.append(term)
        elif join_next:
            groups[-1].append(term)
        else:
            groups.append([term])
        join_next = False
    if not groups:
        raise SearchQueryError(
            "give at least one word or phrase to look for (a leading '-' excludes one)"
        )
    return SearchTerms(tuple(tuple(g) for g in groups), tuple(excluded))


def _fts5_string(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def fts5_query(terms: SearchTerms) -> str:
    """The FTS5 query of parsed terms: every term a quoted string (a phrase), so no search
    text is ever read as FTS5 syntax."""
    positive = " AND ".join(
        "(" + " OR ".join(_fts5_string(t) for t in group) + ")" for group in terms.groups
    )
    if not terms.excluded:
        return positive
    negative = " OR ".join(_fts5_string(t) for t in terms.excluded)
    return f"({positive}) NOT ({negative})"


def text_condition(*, session: Session, q: str) -> Any:
    """A condition on ``conversation`` rows: their query or answer matches the search ``q``.

    Raises:
        SearchQueryError: ``q`` cannot be searched (see :func:`parse_search`).
    """
    terms = parse_search(q)
    if session.get_bind().dialect.name == "postgresql":
        return literal_column(_PG_DOCUMENT).op("@@", is_comparison=True)(
            func.websearch_to_tsquery(literal_column(f"'{PG_CONFIG}'"), q)
        )
    matching = text(f"SELECT conversation_id FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH :gw_fts")
    return col(Conversation.id).in_(
        matching.bindparams(gw_fts=fts5_query(terms)).columns(literal_column("conversation_id"))
    )


def compact_index(*, session: Session) -> None:
    """Merge the SQLite full-text index into one segment, which drops the entries of deleted
    rows from its pages (after a purge). Nothing to do on PostgreSQL."""
    if session.get_bind().dialect.name == "sqlite":
        session.execute(text(f"INSERT INTO {FTS_TABLE} ({FTS_TABLE}) VALUES ('optimize')"))


def reclaim_purged(engine: Engine) -> None:
    """PostgreSQL: ``VACUUM`` the conversation table after a purge, so that the old row
    versions (and their index entries) that still hold the purged text are cleaned now rather
    than at the next autovacuum. Nothing to do on SQLite (see :func:`compact_index`)."""
    if engine.dialect.name != "postgresql":
        return
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM conversation"))


def include_object(
    obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any
) -> bool:
    """Alembic's filter: the full-text index (the FTS5 table and its shadow tables, the
    PostgreSQL expression index) is made by migration 0005 in SQL, not from the models, so
    schema comparison leaves it out."""
    if type_ == "table" and name is not None and name.startswith(FTS_TABLE):
        return False
    return not (type_ == "index" and name == PG_INDEX)


# --------------------------------------------------------------------------- similar queries


@dataclass(frozen=True, slots=True)
class PastQuery:
    """One of a patient's stored queries (the text is patient text)."""

    conversation_id: str
    external_id: str
    timestamp: datetime
    query: str


def patient_queries(*, session: Session, patient_id: str, limit: int) -> list[PastQuery]:
    """The patient's stored queries that still have their text, newest first, at most
    ``limit`` (served by the (patient, time) index)."""
    c = Conversation
    stmt = (
        select(col(c.id), col(c.external_id), col(c.query_timestamp), col(c.query))
        .where(col(c.patient_id) == patient_id, col(c.query).is_not(None))
        .order_by(col(c.query_timestamp).desc(), col(c.id).desc())
        .limit(limit)
    )
    return [PastQuery(str(r[0]), str(r[1]), r[2], str(r[3])) for r in session.execute(stmt)]


__all__ = [
    "FTS_TABLE",
    "MAX_QUERY_CHARS",
    "PastQuery",
    "SearchQueryError",
    "SearchTerms",
    "compact_index",
    "fts5_query",
    "include_object",
    "parse_search",
    "patient_queries",
    "reclaim_purged",
    "text_condition",
]
