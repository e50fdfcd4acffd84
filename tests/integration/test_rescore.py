"""`groundwatch rescore` on a real local Ray (2 CPUs): 2,000 stored answers re-scored by a
subprocess that is killed with SIGKILL half-way, then resumed: every answer has exactly one
result, the resumed run checks only what was left, and the change report is the one a direct
run of the pipeline over the same records gives.

The verifier change: the answers are stored with answer grounding off and consistency on,
then re-scored with grounding on (rules and MiniLM, the learned verifier off to keep the test
short) and consistency off, so flags move both ways.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.engine import Engine

from core.config import load_settings
from core.pipeline import QualityPipeline
from core.records import parse_record
from core.rescore import result_row, stored_report, summarise
from core.storage import rescore as store
from core.storage.db import get_engine, read_session
from core.storage.models import Conversation, RescoreResult
from core.storage.repo import conversation_id_for

pytestmark = [pytest.mark.model, pytest.mark.slow]

ANSWERS = 2_000
STORED_WITH = {"learned_verifier": False, "enable_grounding_verification": False}
RESCORED_WITH = {"learned_verifier": False, "enable_consistency_checking": False}
RESCORED_ENV = {"GROUNDWATCH_LEARNED_VERIFIER": "0", "GROUNDWATCH_ENABLE_CONSISTENCY_CHECKING": "0"}

_SYMPTOMS = ("headache", "cough", "back pain", "fatigue", "nausea", "knee pain", "rash")
_DRUGS = (("metformin", 500), ("lisinopril", 10), ("atorvastatin", 20), ("sertraline", 50))


def small_records(n: int, *, seed: int = 11, patients: int = 40) -> list[dict[str, Any]]:
    """Short answers about 40 patients: a supported sentence, then one that is supported, a
    wrong dose, an invented event or a paraphrase; doses differ between a patient's answers."""
    rng = random.Random(seed)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    out = []
    for i in range(n):
        sym, (drug, dose), days = rng.choice(_SYMPTOMS), rng.choice(_DRUGS), rng.randint(2, 14)
        source = (
            f"Patient reports {sym} for {days} days. Current medication: {drug} {dose} mg "
            "daily. No known drug allergies."
        )
        second = rng.choice(
            (
                f"They take {drug} {dose} mg daily.",
                f"They take {drug} {dose * 2} mg daily.",
                f"The {sym} started after a fall at work.",
                f"The patient is on {drug} every day.",
            )
        )
        out.append(
            {
                "id": f"r-{i:05d}",
                "patient_id": f"p-{i % patients:03d}",
                "timestamp": (start + timedelta(hours=3 * i)).isoformat(),
                "query": f"What is going on with the patient's {sym}?",
                "answer": f"The patient has had {sym} for {days} days. {second}",
                "sources": [{"id": "note-1", "text": source, "type": "note"}],
                "model": "model-a" if i % 2 else "model-b",
            }
        )
    return out


def _count(engine: Engine, run_id: str) -> int:
    with read_session(engine) as session:
        stmt = select(func.count()).where(RescoreResult.run_id == run_id)
        return int(session.execute(stmt).scalar_one())


def _cli(db_url: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "core.cli", "rescore", *args]


def _env(db_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GROUNDWATCH_")}
    return {**env, "GROUNDWATCH_DATABASE_URL": db_url, **RESCORED_ENV}


def test_rescore_killed_half_way_resumes_and_matches_a_direct_run(
    sqlite_url: str, tmp_path: Path
) -> None:
    from core.storage.db import upgrade_to_head

    upgrade_to_head(sqlite_url)
    engine = get_engine(sqlite_url)
    raw = small_records(ANSWERS)
    records = [parse_record(r, max_text_chars=10_000) for r in raw]
    QualityPipeline(
        settings=load_settings(database_url=sqlite_url, **STORED_WITH), engine=engine
    ).process_many(records)
    with read_session(engine) as session:
        old = dict(session.execute(select(Conversation.id, Conversation.is_flagged)).all())
    assert len(old) == ANSWERS

    # the first start, killed with SIGKILL (with its local Ray) once some results are written
    run_id = "kill-test"
    argv = _cli(sqlite_url, "--run-id", run_id, "--num-cpus", "2", "--batch-size", "20")
    first = subprocess.Popen(
        [*argv, "--write-every", "40", "--json"],
        env=_env(sqlite_url),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + 600
    try:
        while _count(engine, run_id) < 200:
            assert first.poll() is None, first.communicate()[1].decode()[-2000:]
            assert time.monotonic() < deadline, "no results written in 10 minutes"
            time.sleep(0.1)
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    time.sleep(1.0)  # let the killed Ray's actors notice their driver is gone
    before = _count(engine, run_id)
    assert 200 <= before < ANSWERS, before
    with read_session(engine) as session:
        run = store.get_run(session=session, run_id=run_id)
        assert run is not None
        assert (run.status, run.finished_at) == ("running", None)

    # started again: only what was left is checked, nothing is written twice
    done = subprocess.run(
        _cli(sqlite_url, "--resume", run_id, "--num-cpus", "2", "--json"),
        env={**_env(sqlite_url), "GROUNDWATCH_LOG_LEVEL": "DEBUG"},
        capture_output=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    report = json.loads(done.stdout)
    # the log says what happened in ids and counts, never the records' words
    output = done.stdout.decode() + done.stderr.decode()
    assert f"rescore run {run_id}: {ANSWERS} answers selected, {before} done before" in output
    for word in (*_SYMPTOMS, *(drug for drug, _ in _DRUGS)):
        assert word not in output.lower(), word
    assert report["status"] == "finished"
    assert report["selected"] == ANSWERS
    assert report["resumed"] == before
    assert report["checked"] == ANSWERS
    assert report["failed"] == 0
    assert report["verifier_version"] == "rules"
    with read_session(engine) as session:
        n, distinct = session.execute(
            select(func.count(), func.count(func.distinct(RescoreResult.conversation_id))).where(
                RescoreResult.run_id == run_id
            )
        ).one()
        assert n == distinct == ANSWERS
        results = {r.conversation_id: r for r in store.run_results(session=session, run_id=run_id)}
    assert set(results) == set(old)

    # the direct computation: the pipeline in this process, on the original records
    pipeline = QualityPipeline(
        settings=load_settings(database_url=sqlite_url, **RESCORED_WITH), engine=engine
    )
    with read_session(engine) as session:
        answers = {
            a.conversation_id: a
            for a in store.stored_answers(session=session, conversation_ids=list(old))
        }
    direct_rows = []
    for i in range(0, ANSWERS, 500):
        for rep in pipeline.check_many(records[i : i + 500]):
            cid = conversation_id_for(rep.external_id)
            direct_rows.append(
                result_row(run_id=run_id, conversation_id=cid, stored=answers[cid], report=rep)
            )
    mismatched = [
        r["conversation_id"]
        for r in direct_rows
        if (r["new_flagged"], r["change"])
        != (results[r["conversation_id"]].new_flagged, results[r["conversation_id"]].change)
    ]
    assert not mismatched, f"{len(mismatched)} answers differ, e.g. {mismatched[:3]}"
    direct = summarise(direct_rows)
    assert direct.newly_flagged > 0  # flags moved both ways
    assert direct.cleared > 0
    assert report["newly_flagged"] == direct.newly_flagged
    assert report["cleared"] == direct.cleared
    assert report["same"] == direct.same
    assert report["changed"] == sum(old[c] != bool(r.new_flagged) for c, r in results.items())
    assert [c["conversation_id"] for c in report["top_changes"]] == [
        c.conversation_id for c in direct.top
    ]
    stored = stored_report(engine=engine, run_id=run_id)
    assert stored.summary == direct

    # the stored scores are untouched: the run's results sit beside them
    with read_session(engine) as session:
        now = dict(session.execute(select(Conversation.id, Conversation.is_flagged)).all())
        assert now == old
        leftover = session.execute(text("SELECT count(*) FROM rescore_run")).scalar_one()
        assert leftover == 1


@pytest.mark.postgres
@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_rescore_on_postgresql_filters_files_and_comparison(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    """On PostgreSQL, in this process: a filtered run, the same run id again (nothing left,
    nothing written twice), a run over a JSONL and a Parquet file (records stored before and
    new ones), and the two runs compared."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from core.rescore import RescoreError, Selection, rescore

    raw = small_records(120, seed=5, patients=10)
    QualityPipeline(
        settings=load_settings(database_url=db_url, **STORED_WITH), engine=engine
    ).process_many([parse_record(r, max_text_chars=10_000) for r in raw[:100]])
    settings = load_settings(database_url=db_url, **RESCORED_WITH)
    by_model = Selection(model="model-a")
    first = rescore(
        settings=settings,
        engine=engine,
        run_id="pg-a",
        selection=by_model,
        actors=1,
        num_cpus=2,
        batch_size=10,
        write_every=20,
    )
    assert (first.status, first.selected, first.summary.checked) == ("finished", 50, 50)
    assert first.summary.failed == 0
    # the same answers checked directly: the same flags
    pipeline = QualityPipeline(settings=settings, engine=engine)
    model_a = [parse_record(r, max_text_chars=10_000) for r in raw[:100] if r["model"] == "model-a"]
    direct = {
        conversation_id_for(r.external_id): r.is_flagged for r in pipeline.check_many(model_a)
    }
    with read_session(engine) as session:
        stored = {
            r.conversation_id: r.new_flagged
            for r in store.run_results(session=session, run_id="pg-a")
        }
    assert stored == direct
    # the same run id again: nothing left to check, nothing written twice
    again = rescore(settings=settings, engine=engine, run_id="pg-a", selection=by_model)
    assert (again.resumed, again.summary.checked) == (50, 50)
    assert again.summary == first.summary
    with pytest.raises(RescoreError, match="another selection"):
        rescore(settings=settings, engine=engine, run_id="pg-a", selection=Selection())
    with pytest.raises(RescoreError, match="was made by verifier"):
        rescore(settings=load_settings(database_url=db_url), engine=engine, run_id="pg-a")

    # files: 30 stored records and 10 new ones in JSONL, 10 stored ones in Parquet
    jsonl = tmp_path / "records.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in [*raw[:30], *raw[100:110]]) + "\n")
    parquet = tmp_path / "records.parquet"
    pq.write_table(pa.Table.from_pylist(raw[30:40]), parquet)
    files = rescore(
        settings=settings,
        engine=engine,
        run_id="pg-files",
        selection=Selection(files=(str(jsonl), str(parquet))),
        actors=1,
        num_cpus=2,
    )
    s = files.summary
    assert (files.selected, s.checked, s.new, s.failed) == (50, 50, 10, 0)
    assert s.newly_flagged + s.cleared + s.same == 40
    with read_session(engine) as session:
        cmp = store.compare_runs(session=session, run_a="pg-a", run_b="pg-files")
        in_files = {conversation_id_for(r["id"]) for r in raw[:40]}
        expected = len(in_files & set(stored))
    assert cmp.both == expected  # model-a answers among the first 40 records
    assert cmp.flagged_in_a_only == cmp.flagged_in_b_only == 0  # same verifier, same flags


def test_rescore_command_errors_name_the_problem_and_start_nothing(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bad input is refused before Ray starts: a file's invalid line (named, without its
    text), an unknown run, filters given with --resume, a malformed run id."""
    from typer.testing import CliRunner

    from core.cli import app
    from core.config import reset_settings_cache

    monkeypatch.setenv("GROUNDWATCH_DATABASE_URL", sqlite_url)
    reset_settings_cache()
    bad = tmp_path / "bad.jsonl"
    record = small_records(1)[0]
    bad.write_text(json.dumps(record) + "\n" + json.dumps({**record, "answer": ""}) + "\n")
    runner = CliRunner()

    out = runner.invoke(app, ["rescore", str(bad), "--json"])
    assert out.exit_code == 2
    error = json.loads(out.stdout)
    assert error["error"] == "rescore"
    assert "line 2" in error["message"]
    assert "field answer" in error["message"]
    assert record["query"] not in out.stdout

    out = runner.invoke(app, ["rescore", "--report", "nope", "--json"])
    assert out.exit_code == 1
    assert "no re-scoring run 'nope'" in json.loads(out.stdout)["message"]

    out = runner.invoke(app, ["rescore", "--resume", "nope", "--json"])
    assert out.exit_code == 2
    assert "no re-scoring run 'nope' to resume" in json.loads(out.stdout)["message"]

    out = runner.invoke(app, ["rescore", "--resume", "nope", "--model", "m", "--json"])
    assert out.exit_code == 1
    assert "give no files or filters" in json.loads(out.stdout)["message"]

    out = runner.invoke(app, ["rescore", "--run-id", "../x", "--json"])
    assert out.exit_code == 2
    assert "run id" in json.loads(out.stdout)["message"]
    with read_session(get_engine(sqlite_url)) as session:
        assert store.list_runs(session=session) == []  # nothing recorded for refused runs
