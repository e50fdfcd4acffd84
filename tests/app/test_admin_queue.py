"""AppTests of the admin page's ingestion queue: the depth by state and the dead-letter list
on PostgreSQL, with a retry button that puts the job back in the queue; on SQLite a note that
the queue needs PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from streamlit.testing.v1 import AppTest

from core.config import reset_settings_cache
from core.queue import enqueue
from core.records import parse_record
from core.storage import jobs, repo
from core.storage.db import read_session, write_session
from tests.app.seed import open_page


def _record(i: int) -> dict[str, object]:
    return {
        "id": f"a-{i}",
        "patient_id": f"p-{i}",
        "query": "What does she take?",
        "answer": "She takes metformin 500 mg twice daily.",
        "sources": [{"id": "n-1", "text": "Metformin 500 mg twice daily."}],
    }


def _metric(at: AppTest, label: str) -> str:
    return next(str(m.value) for m in at.metric if m.label == label)


def _admin_page(db_url: str, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("GROUNDWATCH_DATABASE_URL", db_url)
    reset_settings_cache()
    at = open_page("admin")
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.postgres
@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_admin_sees_the_queue_and_retries_a_dead_letter_job(
    engine: Engine, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = [parse_record(_record(i), max_text_chars=10_000) for i in range(3)]
    ids = enqueue(engine=engine, records=records, replace=False, submitted_by="clinic-app")
    dead = ids[1]
    with write_session(engine) as s:  # its last try failed: the queue's own function says so
        job_id = jobs.queue_job_id(session=s, ingest_id=dead)
        s.execute(text("SET LOCAL search_path TO procrastinate, public"))
        s.execute(
            text("SELECT procrastinate_finish_job_v1(:j, 'failed', false)"),
            {"j": job_id},
        )
        jobs.fail_ingest_job(
            session=s, ingest_id=dead, error_class="RecordExistsError", error_message="id a-1"
        )

    at = _admin_page(db_url, monkeypatch)
    assert (_metric(at, "queued"), _metric(at, "failed"), _metric(at, "done")) == ("2", "1", "0")
    (table,) = [d.value for d in at.dataframe if "job" in d.value.columns]
    assert list(table["job"]) == [dead]
    assert list(table["error"]) == ["RecordExistsError"]

    at.button(key="admin_dead_retry").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(f"Job {dead} is queued again" in s.value for s in at.success)
    with read_session(engine) as s:
        (view,) = jobs.job_views(session=s, ids=[dead])
        events = repo.list_audit_events(session=s, action="job_retry")
    assert view.state == "queued"
    assert [(e.target_type, e.target_id) for e in events] == [("ingest_job", str(dead))]
    at.run()
    assert _metric(at, "failed") == "0"
    assert any("No job in the dead-letter state" in c.value for c in at.caption)


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_on_sqlite_the_admin_page_says_the_queue_needs_postgresql(
    engine: Engine, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = _admin_page(db_url, monkeypatch)
    assert any("need PostgreSQL" in c.value for c in at.caption)
    assert not [m for m in at.metric if m.label == "failed"]
