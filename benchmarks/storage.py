"""Storage speed on SQLite and PostgreSQL: import throughput and dashboard query times.

    python benchmarks/storage.py [--engines sqlite,postgresql] [--records 10000]
                                 [--sizes 100000,1000000] [--patients 3000] [--days 365]
                                 [--repeat 7] [--pg-url postgresql://postgres@127.0.0.1:5432]
                                 [--json]

Import throughput is ``repo.store_bundles`` of pre-checked bundles (the storage path of
``groundwatch import``: a conversation with its statement, consistency, confidence and entity
rows, all in one transaction), then the same records again (idempotent re-import).

Query times are measured on scratch databases bulk-loaded with ``--sizes`` synthetic
conversations (about 3 statement checks each, some reviewed), the ``quality_daily`` rollup
built consistently from them, then queried through ``core.storage.repo`` as the dashboard
does: median and p95 over ``--repeat`` runs after one warm-up. Targets: import >= 2,000
records/s on SQLite; trend query <= 200 ms at 1,000,000 conversations on PostgreSQL.

Scratch databases are SQLite files under the temporary directory and PostgreSQL databases
named ``gw_bench_*`` created on ``--pg-url`` and dropped at the end. All text is invented
from templates.
"""

from __future__ import annotations

import json
import os
import platform
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import Integer, func, insert, select
from sqlmodel import Session

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._common import base_parser, print_json, print_table  # noqa: E402
from core.pipeline import statement_risk  # noqa: E402
from core.storage import models as m  # noqa: E402
from core.storage import repo  # noqa: E402
from core.storage.db import get_engine, read_session, upgrade_to_head  # noqa: E402

MODELS = ("clinical-llm-a", "clinical-llm-b", "clinical-llm-c")
MODEL_SHARE = (0.5, 0.3, 0.2)
ANCHOR = datetime(2026, 1, 1, tzinfo=UTC)
IMPORT_TARGET = 2000.0  # records/s on SQLite
TREND_TARGET_MS = 200.0  # PostgreSQL, 1,000,000 conversations

_QUERIES = (
    "What medications is the patient currently taking?",
    "Summarise the most recent visit.",
    "Does the patient have any allergies or chronic conditions?",
    "What did the patient report at the last visit?",
)
_DRUGS = (
    ("metformin", "500 mg twice daily"),
    ("lisinopril", "10 mg once daily"),
    ("atorvastatin", "40 mg at bedtime"),
    ("levothyroxine", "75 mcg every morning"),
    ("apixaban", "5 mg twice daily"),
    ("sertraline", "50 mg once daily"),
)
_CONDITIONS = ("hypertension", "type 2 diabetes", "hyperlipidemia", "asthma", "gout")


# --------------------------------------------------------------------------- environment


def environment_note(pg_version: str | None) -> str:
    """Cores, load average and versions: speed depends on them."""
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    parts = [
        f"cores: {os.cpu_count()}",
        f"load average (1/5/15 min): {load}",
        f"python {platform.python_version()}",
        f"sqlite {sqlite3.sqlite_version}",
    ]
    if pg_version:
        parts.append(f"postgresql {pg_version}")
    return "environment: " + "; ".join(parts)


# --------------------------------------------------------------------------- scratch databases


@dataclass(slots=True)
class Scratch:
    """A scratch database: a SQLite file or a PostgreSQL database created for the run."""

    engine_name: str
    url: str
    admin_url: str | None = None
    path: Path | None = None

    def drop(self) -> None:
        get_engine(self.url).dispose()
        if self.path is not None:
            for suffix in ("", "-wal", "-shm"):
                Path(str(self.path) + suffix).unlink(missing_ok=True)
        elif self.admin_url is not None:
            _pg_admin(self.admin_url, f"DROP DATABASE IF EXISTS {self.url.rsplit('/', 1)[1]}")


def _pg_admin(admin_url: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
        conn.execute(sql.encode())


def pg_version(admin_url: str) -> str | None:
    """Server version, or None when the server cannot be reached."""
    import psycopg

    try:
        with psycopg.connect(admin_url, connect_timeout=5) as conn:
            row = conn.execute("SHOW server_version").fetchone()
    except psycopg.Error:
        return None
    return str(row[0]).split()[0] if row else None


def scratch(engine_name: str, label: str, pg_url: str) -> Scratch:
    """A fresh, migrated scratch database."""
    tag = f"{label}_{os.getpid()}"
    if engine_name == "sqlite":
        path = Path(tempfile.gettempdir()) / f"gw_bench_{tag}.db"
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
        s = Scratch("sqlite", f"sqlite:///{path}", path=path)
    else:
        name = f"gw_bench_{tag}"
        admin = pg_url.rstrip("/") + "/postgres"
        _pg_admin(admin, f"DROP DATABASE IF EXISTS {name}")
        _pg_admin(admin, f"CREATE DATABASE {name}")
        s = Scratch("postgresql", f"{pg_url.rstrip('/')}/{name}", admin_url=admin)
    upgrade_to_head(s.url)
    return s


# --------------------------------------------------------------------------- synthetic rows


def _answer(rng: random.Random) -> str:
    meds = rng.sample(_DRUGS, 2)
    return (
        f"The patient takes {meds[0][0]} {meds[0][1]} and {meds[1][0]} {meds[1][1]}. "
        f"History of {rng.choice(_CONDITIONS)}. Allergic to penicillin. "
        f"Blood pressure {rng.randint(110, 160)}/{rng.randint(60, 95)} at the last visit."
    )


def _sources(rng: random.Random) -> list[dict[str, Any]]:
    drug, dose = rng.choice(_DRUGS)
    return [
        {
            "id": "note-1",
            "type": "note",
            "similarity": round(rng.uniform(0.5, 0.95), 3),
            "text": f"Visit note. Continues {drug} {dose}. No new complaints.",
        },
        {
            "id": "doc-1",
            "type": "document",
            "similarity": round(rng.uniform(0.4, 0.9), 3),
            "text": f"Medication list: {drug} {dose}. Allergies: penicillin (hives).",
        },
    ]


_STATUS = ("grounded", "unsupported", "contradicted")
_STATUS_P = (0.85, 0.12, 0.03)
_METHOD = {"grounded": "exact_match", "unsupported": "unsupported", "contradicted": "inference"}


def make_bundles(n: int, *, patients: int, days: int, seed: int) -> list[repo.ConversationBundle]:
    """Pre-checked bundles as the pipeline builds them: 1 conversation + 10 check rows."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        at = ANCHOR - timedelta(days=rng.randrange(days), minutes=rng.randrange(12 * 60))
        pid = f"p-{rng.randrange(patients):05d}"
        statuses = rng.choices(_STATUS, _STATUS_P, k=3)
        flagged = sum(s != "grounded" for s in statuses)
        conv = m.Conversation(
            id="",
            external_id=f"bench-{seed}-{i:07d}",
            patient_id=pid,
            query=rng.choice(_QUERIES),
            query_timestamp=at,
            answer=_answer(rng),
            model_used=rng.choices(MODELS, MODEL_SHARE)[0],
            sources=_sources(rng),
            grounding_score=round(1 - flagged / 3, 4),
            consistency_score=round(rng.uniform(0.7, 1.0), 4),
            confidence_score=round(rng.uniform(0.5, 0.95), 4),
            hallucination_risk=round(rng.uniform(0.0, 0.6), 4),
            overall_quality=round(rng.uniform(0.5, 0.95), 4),
            risk_level="low",
            is_flagged=flagged > 0,
            flagged_statements=flagged,
            total_statements=3,
            execution_time_ms=rng.randint(5, 80),
            feature_flags={"grounding_verification": True, "consistency_checking": True},
            check_status={"grounding": {"status": "ok"}, "consistency": {"status": "ok"}},
            warnings=[],
            content_hash=f"h-{seed}-{i}",
        )
        b = repo.ConversationBundle(conversation=conv)
        for k, st in enumerate(statuses):
            conf = round(rng.uniform(0.5, 1.0), 4)
            b.statements.append(
                m.StatementCheck(
                    conversation_id="",
                    statement=f"Statement {k} of the answer.",
                    statement_index=k,
                    start=k * 40,
                    end=k * 40 + 30,
                    is_grounded=st == "grounded",
                    status=st,
                    source_chunk_id="note-1",
                    supporting_evidence="Continues the medication." if st == "grounded" else None,
                    grounding_confidence=conf,
                    verification_method=_METHOD[st],
                    risk=statement_risk(st, conf),
                )
            )
        b.consistency.append(
            m.ConsistencyCheck(
                patient_id=pid,
                current_conversation_id="",
                check_type="entity_consistency",
                is_consistent=True,
                consistency_score=conv.consistency_score,
            )
        )
        for k in range(2):
            b.confidence.append(
                m.ConfidenceMetric(
                    conversation_id="",
                    extraction_index=k,
                    retrieval_confidence=0.8,
                    source_confidence=1.0 if k == 0 else 0.9,
                    extraction_confidence=0.9,
                    consistency_confidence=conv.consistency_score,
                    aggregate_confidence=0.85,
                    uncertainty_level="low",
                )
            )
        for k, (drug, dose) in enumerate(rng.sample(_DRUGS, 4)):
            b.mentions.append(
                m.EntityMention(
                    patient_id=pid,
                    conversation_id="",
                    at=at,
                    kind="medication",
                    name=drug,
                    assertion="affirmed",
                    dose=dose.split(" ")[0],
                    unit=dose.split(" ")[1],
                    frequency=" ".join(dose.split(" ")[2:]),
                    statement=f"Takes {drug}.",
                    statement_start=k * 20,
                    statement_end=k * 20 + 15,
                )
            )
        out.append(b)
    return out


def bench_import(
    engine_name: str, n: int, *, pg_url: str, patients: int, days: int
) -> list[dict[str, Any]]:
    """records/s of ``repo.store_bundles``: first import, then the same records again."""
    db = scratch(engine_name, "import", pg_url)
    try:
        engine = get_engine(db.url)
        rows = []
        for label, seed in (("import (new records)", 1), ("re-import (unchanged)", 1)):
            bundles = make_bundles(n, patients=min(patients, n), days=days, seed=seed)
            children = sum(
                len(b.statements) + len(b.consistency) + len(b.confidence) + len(b.mentions)
                for b in bundles
            )
            t, cpu = time.perf_counter(), time.process_time()
            outcomes = repo.store_bundles(engine=engine, bundles=bundles)
            secs, cpu = time.perf_counter() - t, time.process_time() - cpu
            statuses = {o.status for o in outcomes}
            rows.append(
                {
                    "engine": engine_name,
                    "case": label,
                    "records": n,
                    "rows_per_record": round(1 + children / n, 1),
                    "seconds": secs,
                    "records_per_s": n / secs,
                    "cpu_s": cpu,
                    "records_per_cpu_s": n / cpu if cpu > 0 else None,
                    "target": IMPORT_TARGET if engine_name == "sqlite" else None,
                    "note": "/".join(sorted(statuses)),
                }
            )
        with read_session(engine) as s:
            stored = repo.count_conversations(session=s)
        if stored != n:
            raise SystemExit(f"error: {engine_name}: stored {stored} conversations, expected {n}")
        return rows
    finally:
        db.drop()


# --------------------------------------------------------------------------- bulk load


@dataclass(slots=True)
class Columns:
    """Per-conversation arrays kept for the rollup (numbers only)."""

    day: np.ndarray
    model: np.ndarray
    patient: np.ndarray
    flagged: np.ndarray
    scores: dict[str, np.ndarray]


_SCORE_COLS = ("grounding", "consistency", "confidence", "risk", "quality")


def _patient_weights(rng: np.random.Generator, patients: int) -> np.ndarray:
    # a few patients are asked about far more often than most (lognormal activity)
    w = rng.lognormal(mean=0.0, sigma=1.0, size=patients)
    return w / w.sum()


def generate_columns(n: int, *, patients: int, days: int, seed: int) -> Columns:
    """Day, model, patient and scores of ``n`` conversations (vectorised)."""
    rng = np.random.default_rng(seed)
    # volume grows over the period: later days are a little busier
    day_w = np.linspace(0.7, 1.3, days)
    day = rng.choice(days, size=n, p=day_w / day_w.sum())
    model = rng.choice(len(MODELS), size=n, p=MODEL_SHARE)
    patient = rng.choice(patients, size=n, p=_patient_weights(rng, patients))
    grounding = np.round(rng.beta(8, 2, size=n), 4)
    grounding[rng.random(n) < 0.03] = np.nan  # no sources: grounding skipped
    consistency = np.round(rng.beta(15, 1, size=n), 4)
    consistency[rng.random(n) < 0.05] = np.nan  # first answer of a patient
    confidence = np.round(rng.beta(6, 2, size=n), 4)
    risk = np.round(rng.beta(2, 6, size=n), 4)
    quality = np.round(np.clip(0.6 * np.nan_to_num(grounding, nan=0.8) + 0.4 * (1 - risk), 0, 1), 4)
    flagged = (risk > 0.3) | (np.nan_to_num(grounding, nan=1.0) < 0.7)
    return Columns(
        day=day,
        model=model,
        patient=patient,
        flagged=flagged,
        scores={
            "grounding": grounding,
            "consistency": consistency,
            "confidence": confidence,
            "risk": risk,
            "quality": quality,
        },
    )


def _num(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


def _ts_sqlite(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%d %H:%M:%S.%f")


def conversation_rows(
    cols: Columns, start: int, stop: int, *, days: int, seed: int, sqlite_fmt: bool
) -> Iterator[tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]]:
    """Conversation and statement-check rows of ``[start, stop)`` in chunks."""
    rng = random.Random(seed + start)
    first_day = ANCHOR - timedelta(days=days)
    flags = json.dumps({"grounding_verification": True, "consistency_checking": True})
    checks = json.dumps({"grounding": {"status": "ok"}, "consistency": {"status": "ok"}})
    ts = _ts_sqlite if sqlite_fmt else (lambda d: d)
    chunk = 20_000
    sc_id = 0  # statement ids are assigned here so reviews can point at them
    for lo in range(start, stop, chunk):
        convs: list[tuple[Any, ...]] = []
        stmts: list[tuple[Any, ...]] = []
        for i in range(lo, min(stop, lo + chunk)):
            at = first_day + timedelta(
                days=int(cols.day[i]), hours=rng.randint(7, 19), minutes=rng.randrange(60)
            )
            conv_id = f"{i:032x}"
            n_st = rng.choice((2, 3, 3, 4))
            statuses = rng.choices(_STATUS, _STATUS_P, k=n_st)
            flagged_st = sum(s != "grounded" for s in statuses)
            sc = cols.scores
            convs.append(
                (
                    conv_id,
                    f"bench-{i:08d}",
                    f"p-{int(cols.patient[i]):05d}",
                    rng.choice(_QUERIES),
                    None,
                    ts(at),
                    _answer(rng),
                    None,
                    MODELS[int(cols.model[i])],
                    None,
                    json.dumps(_sources(rng)),
                    None,
                    None,
                    _num(sc["grounding"][i]),
                    _num(sc["consistency"][i]),
                    _num(sc["confidence"][i]),
                    _num(sc["risk"][i]),
                    _num(sc["quality"][i]),
                    "high" if cols.flagged[i] else "low",
                    bool(cols.flagged[i]),
                    flagged_st,
                    n_st,
                    rng.randint(5, 80),
                    flags,
                    checks,
                    "[]",
                    f"{i:064x}",
                    None,
                    ts(at),
                    ts(at),
                )
            )
            for k, st in enumerate(statuses):
                conf = round(rng.uniform(0.5, 1.0), 4)
                sc_id += 1
                stmts.append(
                    (
                        sc_id,
                        conv_id,
                        f"Statement {k} of the answer.",
                        k,
                        k * 40,
                        k * 40 + 30,
                        st == "grounded",
                        st,
                        "note-1",
                        "Continues the medication." if st == "grounded" else None,
                        None,
                        None,
                        conf,
                        _METHOD[st],
                        None,
                        statement_risk(st, conf),
                        ts(at),
                        ts(at),  # the answer's time, model and patient, as the writer copies
                        MODELS[int(cols.model[i])],
                        f"p-{int(cols.patient[i]):05d}",
                    )
                )
        yield convs, stmts


_CONV_COLS = (
    "id, external_id, patient_id, query, query_intent, query_timestamp, answer, "
    "detailed_summary, model_used, extractions, sources, samples, evidence, grounding_score, "
    "consistency_score, confidence_score, hallucination_risk, overall_quality, risk_level, "
    "is_flagged, flagged_statements, total_statements, execution_time_ms, feature_flags, "
    "check_status, warnings, content_hash, text_purged_at, created_at, updated_at"
)
_SC_COLS = (
    'id, conversation_id, statement, statement_index, start, "end", is_grounded, status, '
    "source_chunk_id, supporting_evidence, evidence_start, evidence_end, "
    "grounding_confidence, verification_method, reason, risk, verified_at, "
    "query_timestamp, model_used, patient_id"
)
_QD_COLS = (
    "day, model_used, patient_id, n, n_flagged, n_grounding, sum_grounding, n_consistency, "
    "sum_consistency, n_confidence, sum_confidence, n_risk, sum_risk, n_quality, sum_quality, "
    "sumsq_grounding, sumsq_consistency"
)
#: the scores whose sums of squares the rollup keeps too (migration 0013)
_SQUARED = ("grounding", "consistency")


def rollup_rows(cols: Columns, *, days: int, sqlite_fmt: bool) -> list[tuple[Any, ...]]:
    """The ``quality_daily`` rows that the write path would have built for these rows."""
    frame: dict[str, Any] = {
        "day": cols.day,
        "model": cols.model,
        "patient": cols.patient,
        "n": np.ones(len(cols.day), dtype=np.int64),
        "n_flagged": cols.flagged.astype(np.int64),
    }
    for name in _SCORE_COLS:
        v = cols.scores[name]
        frame[f"n_{name}"] = (~np.isnan(v)).astype(np.int64)
        frame[f"sum_{name}"] = np.nan_to_num(v, nan=0.0)
        if name in _SQUARED:
            frame[f"sumsq_{name}"] = np.nan_to_num(v * v, nan=0.0)
    grouped = pd.DataFrame(frame).groupby(["day", "model", "patient"], sort=True).sum()
    first_day = ANCHOR - timedelta(days=days)
    day_values = [first_day + timedelta(days=d) for d in range(days)]
    out = []
    for (d, mdl, p), r in zip(grouped.index, grouped.itertuples(index=False), strict=True):
        day = day_values[int(d)]
        out.append(
            (
                _ts_sqlite(day) if sqlite_fmt else day,
                MODELS[int(mdl)],
                f"p-{int(p):05d}",
                int(r.n),
                int(r.n_flagged),
                *(
                    v
                    for name in _SCORE_COLS
                    for v in (int(getattr(r, f"n_{name}")), float(getattr(r, f"sum_{name}")))
                ),
                *(float(getattr(r, f"sumsq_{name}")) for name in _SQUARED),
            )
        )
    return out


def _cols(model: Any) -> Any:
    """The Core column collection of a table model (typed loosely for SQL building)."""
    return model.__table__.c


def _secondary_indexes(table_names: tuple[str, ...]) -> list[Any]:
    return [idx for t in m.ALL_TABLES if t.name in table_names for idx in t.indexes]


def bulk_load(db: Scratch, n: int, *, patients: int, days: int, seed: int) -> dict[str, Any]:
    """Fill the scratch database with ``n`` conversations, their statements and the rollup."""
    engine = get_engine(db.url)
    cols = generate_columns(n, patients=patients, days=days, seed=seed)
    sqlite_fmt = db.engine_name == "sqlite"
    indexes = _secondary_indexes(("conversation", "statement_check", "quality_daily"))
    t0 = time.perf_counter()
    with engine.begin() as conn:
        for idx in indexes:
            idx.drop(conn)
    raw = engine.raw_connection()
    n_statements = 0
    try:
        dbapi: Any = raw.driver_connection
        now = datetime.now(UTC)
        patient_rows = [
            (f"p-{p:05d}", _ts_sqlite(now) if sqlite_fmt else now) for p in range(patients)
        ]
        rollup = rollup_rows(cols, days=days, sqlite_fmt=sqlite_fmt)
        batches = conversation_rows(cols, 0, n, days=days, seed=seed, sqlite_fmt=sqlite_fmt)
        if sqlite_fmt:
            cur = dbapi.cursor()
            cur.execute("BEGIN")
            cur.executemany("INSERT INTO patient (id, created_at) VALUES (?, ?)", patient_rows)
            for convs, stmts in batches:
                cur.executemany(
                    f"INSERT INTO conversation ({_CONV_COLS}) VALUES ({', '.join('?' * 30)})",
                    convs,
                )
                cur.executemany(
                    f"INSERT INTO statement_check ({_SC_COLS}) VALUES ({', '.join('?' * 20)})",
                    stmts,
                )
                n_statements += len(stmts)
            cur.executemany(
                f"INSERT INTO quality_daily ({_QD_COLS}) VALUES ({', '.join('?' * 17)})", rollup
            )
            cur.execute("COMMIT")
        else:
            with dbapi.cursor() as cur:
                with cur.copy("COPY patient (id, created_at) FROM STDIN") as cp:
                    for row in patient_rows:
                        cp.write_row(row)
                for convs, stmts in batches:
                    with cur.copy(f"COPY conversation ({_CONV_COLS}) FROM STDIN") as cp:
                        for row in convs:
                            cp.write_row(row)
                    with cur.copy(f"COPY statement_check ({_SC_COLS}) FROM STDIN") as cp:
                        for row in stmts:
                            cp.write_row(row)
                    n_statements += len(stmts)
                with cur.copy(f"COPY quality_daily ({_QD_COLS}) FROM STDIN") as cp:
                    for row in rollup:
                        cp.write_row(row)
                cur.execute(
                    "SELECT setval(pg_get_serial_sequence('statement_check', 'id'), "
                    "(SELECT max(id) FROM statement_check))"
                )
            dbapi.commit()
    finally:
        raw.close()
    load_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    with engine.begin() as conn:
        for idx in indexes:
            idx.create(conn)
    index_s = time.perf_counter() - t1
    with Session(engine) as session:
        repo.rebuild_model_rollup(session=session)
        session.commit()
    n_reviews = add_reviews(engine, seed=seed)
    _analyze(db)
    return {
        "conversations": n,
        "statements": n_statements,
        "rollup_rows": len(rollup),
        "reviews": n_reviews,
        "load_s": load_s,
        "index_s": index_s,
    }


def add_reviews(engine: Any, *, seed: int) -> int:
    """Verdicts on about 10% of the flagged statements (so 'unreviewed' filters something)."""
    rng = random.Random(seed)
    with engine.begin() as conn:
        sc = _cols(m.StatementCheck)
        flagged = conn.execute(
            select(sc.id, sc.conversation_id)
            .where(sc.status != "grounded")
            .where(func.abs(sc.id % 10) == 0)
        ).all()
        rows = [
            {
                "statement_check_id": sid,
                "conversation_id": cid,
                "reviewer": rng.choice(("Dr. Rivera", "Dr. Okafor", "Nurse Lindqvist")),
                "verdict": rng.choice(("confirmed", "false_alarm", "false_alarm", "unsure")),
                "created_at": ANCHOR,
            }
            for sid, cid in flagged
        ]
        if rows:
            conn.execute(insert(m.Review.__table__), rows)  # type: ignore[attr-defined]
    return len(rows)


def _analyze(db: Scratch) -> None:
    engine = get_engine(db.url)
    if db.engine_name == "sqlite":
        with engine.begin() as conn:
            conn.exec_driver_sql("ANALYZE")
        return
    # what autovacuum would have done by the time anyone looks: statistics + visibility map
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql("VACUUM (ANALYZE)")


def verify_rollup(engine: Any) -> None:
    """The rollup agrees with a direct aggregation over the conversation table."""
    conv = _cols(m.Conversation)
    with read_session(engine) as s:
        k = repo.kpis(session=s)
        direct = s.execute(
            select(
                func.count(),
                func.sum(func.cast(conv.is_flagged, Integer)),
                func.avg(conv.grounding_score),
                func.avg(conv.consistency_score),
            )
        ).one()
    if k.conversations != direct[0] or k.flagged != int(direct[1]):
        raise SystemExit("error: bulk-loaded rollup disagrees with the conversation table")
    for got, want in ((k.grounding, direct[2]), (k.consistency, direct[3])):
        if got is None or abs(got - float(want)) > 1e-6:
            raise SystemExit("error: bulk-loaded rollup averages disagree with conversations")


# --------------------------------------------------------------------------- queries


def timed(fn: Callable[[], Any], repeat: int) -> tuple[list[float], Any]:
    result = fn()  # warm-up (plans, caches)
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        out.append((time.perf_counter() - t) * 1000)
    return out, result


def p95(values: list[float]) -> float:
    return float(np.percentile(values, 95))


def query_cases(engine: Any, *, days: int) -> list[tuple[str, Callable[[], Any]]]:
    """The dashboard's queries, run exactly as it runs them (through ``repo``)."""
    end = ANCHOR + timedelta(days=1)
    last30 = repo.Filters(start=end - timedelta(days=30), end=end)
    qd = _cols(m.QualityDaily)
    with read_session(engine) as s:
        busiest = s.execute(
            select(qd.patient_id).group_by(qd.patient_id).order_by(func.sum(qd.n).desc()).limit(1)
        ).scalar_one()
    one_patient = repo.Filters(patient_ids=(busiest,))
    one_model = repo.Filters(models=(MODELS[1],))

    def run(fn: Callable[..., Any], **kw: Any) -> Callable[[], Any]:
        def call() -> Any:
            with read_session(engine) as s:
                return fn(session=s, **kw)

        return call

    return [
        ("trend by day, all time", run(repo.quality_trend)),
        ("trend by week, all time", run(repo.quality_trend, granularity="week")),
        ("trend by day, last 30 days", run(repo.quality_trend, filters=last30)),
        ("trend by day, one patient", run(repo.quality_trend, filters=one_patient)),
        ("trend by day, one model", run(repo.quality_trend, filters=one_model)),
        ("kpis, all time", run(repo.kpis)),
        ("kpis, last 30 days", run(repo.kpis, filters=last30)),
        (
            "flagged first page, unreviewed, last 30 days",
            run(repo.flagged_statements, filters=last30, review_state="unreviewed", limit=50),
        ),
        (
            "flagged first page, all, all time",
            run(repo.flagged_statements, limit=50),
        ),
        (
            "flagged first page, one patient",
            run(repo.flagged_statements, filters=one_patient, review_state="unreviewed"),
        ),
    ]


def _result_size(result: Any) -> str:
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], int):
        return f"{len(result[0])} of {result[1]:,} rows"
    if isinstance(result, list):
        return f"{len(result)} periods"
    return "1 row"


def bench_queries(
    engine_name: str,
    size: int,
    *,
    pg_url: str,
    patients: int,
    days: int,
    repeat: int,
    seed: int,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Bulk-load ``size`` conversations, then time the dashboard queries."""
    db = scratch(engine_name, f"q{size}", pg_url)
    try:
        load = bulk_load(db, size, patients=patients, days=days, seed=seed)
        engine = get_engine(db.url)
        verify_rollup(engine)
        rows = []
        for name, fn in query_cases(engine, days=days):
            ms, result = timed(fn, repeat)
            is_target = (
                engine_name == "postgresql"
                and size >= 1_000_000
                and name.startswith("trend by day, all time")
            )
            rows.append(
                {
                    "engine": engine_name,
                    "conversations": size,
                    "query": name,
                    "median_ms": statistics.median(ms),
                    "p95_ms": p95(ms),
                    "target_ms": TREND_TARGET_MS if is_target else None,
                    "result": _result_size(result),
                }
            )
        load_row = {"engine": engine_name, **load}
        return rows, load_row
    finally:
        db.drop()


# --------------------------------------------------------------------------- main


def _fmt_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        r2 = dict(r)
        for k, v in r.items():
            if v is None:
                r2[k] = "-"
            elif k.startswith("target"):
                r2[k] = f"{v:,.0f}"
            elif isinstance(v, float):
                r2[k] = f"{v:,.0f}" if "_per_" in k else f"{v:,.1f}"
            elif isinstance(v, int) and not isinstance(v, bool):
                r2[k] = f"{v:,}"
        target = r.get("target") or r.get("target_ms")
        if target is not None:
            value = r.get("records_per_s", r.get("median_ms"))
            ok = value >= target if "records_per_s" in r else value <= target
            r2["meets_target"] = "yes" if ok else "NO"
        out.append(r2)
    return out


def main() -> None:
    ap = base_parser(__doc__.splitlines()[0], data=False)
    ap.add_argument("--engines", default="sqlite,postgresql", help="comma list")
    ap.add_argument("--records", type=int, default=10_000, help="records for the import test")
    ap.add_argument(
        "--sizes", default="100000,1000000", help="conversations for the query tests (comma list)"
    )
    ap.add_argument("--patients", type=int, default=3000, help="patients (30-3000 realistic)")
    ap.add_argument("--days", type=int, default=365, help="days spanned (90-365 realistic)")
    ap.add_argument("--repeat", type=int, default=7, help="timed runs per query")
    ap.add_argument(
        "--pg-url",
        default=os.environ.get("GROUNDWATCH_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432"),
        help="PostgreSQL server (without database) where gw_bench_* databases are created",
    )
    args = ap.parse_args()
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    bad = [e for e in engines if e not in ("sqlite", "postgresql")]
    if bad:
        raise SystemExit(f"error: --engines: unknown engine {bad[0]!r} (sqlite, postgresql)")
    try:
        sizes = [int(x.replace("_", "")) for x in args.sizes.split(",") if x.strip()]
    except ValueError:
        raise SystemExit("error: --sizes: expected a comma list of integers") from None
    pg = pg_version(args.pg_url.rstrip("/") + "/postgres") if "postgresql" in engines else None
    if "postgresql" in engines and pg is None:
        raise SystemExit(f"error: PostgreSQL not reachable at {args.pg_url}")

    import_rows: list[dict[str, Any]] = []
    query_rows: list[dict[str, Any]] = []
    load_rows: list[dict[str, Any]] = []
    env_before = environment_note(pg)
    for e in engines:
        if args.records > 0:
            import_rows += bench_import(
                e, args.records, pg_url=args.pg_url, patients=args.patients, days=args.days
            )
    for size in sizes:
        for e in engines:
            q, load = bench_queries(
                e,
                size,
                pg_url=args.pg_url,
                patients=args.patients,
                days=args.days,
                repeat=args.repeat,
                seed=args.seed,
            )
            query_rows += q
            load_rows.append(load)
    env_after = environment_note(pg)
    if args.json:
        print_json(
            {
                "environment": {"before": env_before, "after": env_after},
                "import": import_rows,
                "queries": query_rows,
                "bulk_load": load_rows,
                "patients": args.patients,
                "days": args.days,
                "repeat": args.repeat,
            }
        )
        return
    print(env_before)
    print(f"at the end:  {env_after.split('; ', 1)[1]}")
    print()
    if import_rows:
        print_table(
            _fmt_rows(import_rows),
            [
                "engine",
                "case",
                "records",
                "rows_per_record",
                "seconds",
                "records_per_s",
                "cpu_s",
                "records_per_cpu_s",
                "target",
                "meets_target",
                "note",
            ],
            title="Import throughput: repo.store_bundles, one transaction "
            "(1 conversation + 3 statements + 1 consistency + 2 confidence + 4 mentions)",
        )
    if query_rows:
        print_table(
            _fmt_rows(query_rows),
            [
                "engine",
                "conversations",
                "query",
                "median_ms",
                "p95_ms",
                "target_ms",
                "meets_target",
                "result",
            ],
            title=f"Dashboard queries through core.storage.repo ({args.patients:,} patients, "
            f"{args.days} days, {len(MODELS)} models; median and p95 of {args.repeat} runs)",
        )
        print_table(
            _fmt_rows(load_rows),
            [
                "engine",
                "conversations",
                "statements",
                "rollup_rows",
                "reviews",
                "load_s",
                "index_s",
            ],
            title="Bulk load of the query-test databases (COPY / executemany, not the import path)",
        )


if __name__ == "__main__":
    main()
