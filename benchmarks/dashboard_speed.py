"""Dashboard speed: each page's script-run time (AppTest) on large stores.

Fills a SQLite file (default 100,000 conversations) and a scratch PostgreSQL database
(default 1,000,000) with synthetic scored rows by bulk insert (COPY on PostgreSQL), then runs
every page with Streamlit's AppTest: once with empty query caches (cold) and once more
(warm). Prints a plain table; ``--json`` for machine output. Target: <= 1 s per page.

    python benchmarks/dashboard_speed.py
    python benchmarks/dashboard_speed.py --sizes 20000:sqlite
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "dashboard" / "streamlit_app.py")
PAGES = ("overview", "review", "report", "upload", "calibration", "patients")
MODELS = ("clinical-llm-a", "clinical-llm-b", "clinical-llm-c")
DAYS = 365
STATUSES = ("grounded", "grounded", "unsupported", "contradicted")

sys.path.insert(0, str(ROOT))


def _rows(n: int, seed: int = 11) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Conversation and statement rows (two statements per conversation)."""
    rng = random.Random(seed)
    patients = max(50, n // 500)
    end = datetime(2026, 3, 31, tzinfo=UTC)
    conv, stmts = [], []
    sid = 0
    for i in range(n):
        cid = uuid.UUID(int=rng.getrandbits(128)).hex
        at = end - timedelta(seconds=rng.randrange(DAYS * 86400))
        g, c, f = rng.random(), 0.6 + 0.4 * rng.random(), rng.random()
        risk = max(0.0, min(1.0, 1 - g * 0.7 - 0.3 * c + 0.1 * rng.random()))
        flagged = g < 0.7 or risk >= 0.3
        conv.append(
            (
                cid,
                f"bench-{i}",
                f"bp-{rng.randrange(patients):05d}",
                at,
                "What medications is the patient taking?",
                "The patient takes lisinopril 10 mg once daily. The patient takes metformin.",
                MODELS[rng.randrange(3)],
                g,
                c,
                f,
                risk,
                (g + c + f + 1 - risk) / 4,
                "medium",
                flagged,
                1 if flagged else 0,
                2,
                f"h{i}",
            )
        )
        for k in range(2):
            sid += 1
            status = "grounded" if k == 0 or not flagged else rng.choice(STATUSES[2:])
            conf = rng.random()
            r = (
                0.5 + 0.5 * conf
                if status == "contradicted"
                else (0.25 + 0.5 * conf if status == "unsupported" else 0.25 * (1 - conf))
            )
            stmts.append(
                (
                    sid,
                    cid,
                    "The patient takes metformin.",
                    k,
                    0,
                    28,
                    status == "grounded",
                    status,
                    "s-1",
                    "metformin 500 mg",
                    conf,
                    "semantic_match",
                    round(r, 6),
                    at,
                    at,  # the answer's time, model and patient, as store_conversation copies
                    conv[-1][6],
                    conv[-1][2],
                )
            )
    return conv, stmts


CONV_COLS = (
    "id, external_id, patient_id, query_timestamp, query, answer, model_used, "
    "grounding_score, consistency_score, confidence_score, hallucination_risk, "
    "overall_quality, risk_level, is_flagged, flagged_statements, total_statements, "
    "content_hash"
)
STMT_COLS = (
    'id, conversation_id, statement, statement_index, start, "end", is_grounded, '
    "status, source_chunk_id, supporting_evidence, grounding_confidence, "
    "verification_method, risk, verified_at, query_timestamp, model_used, patient_id"
)
ROLLUP_SQL = """
INSERT INTO quality_daily (day, model_used, patient_id, n, n_flagged, n_grounding,
    sum_grounding, sumsq_grounding, n_consistency, sum_consistency, sumsq_consistency,
    n_confidence, sum_confidence, n_risk, sum_risk, n_quality, sum_quality)
SELECT {day}, model_used, patient_id, count(*), sum(CASE WHEN is_flagged THEN 1 ELSE 0 END),
    count(grounding_score), sum(grounding_score), sum(grounding_score * grounding_score),
    count(consistency_score), sum(consistency_score), sum(consistency_score * consistency_score),
    count(confidence_score), sum(confidence_score),
    count(hallucination_risk), sum(hallucination_risk), count(overall_quality),
    sum(overall_quality)
FROM conversation GROUP BY 1, 2, 3
"""


def _fill(url: str, n: int) -> str:
    """Create the schema and bulk-load ``n`` conversations; returns one conversation id."""
    from sqlalchemy import text

    from core.storage.db import get_engine, upgrade_to_head

    upgrade_to_head(url)
    engine = get_engine(url)
    conv, stmts = _rows(n)
    patients = sorted({r[2] for r in conv})
    now = datetime.now(UTC)
    if engine.dialect.name == "postgresql":
        raw = engine.raw_connection()
        try:
            cur = raw.cursor()
            with cur.copy("COPY patient (id, created_at) FROM STDIN") as cp:
                for p in patients:
                    cp.write_row((p, now))
            with cur.copy(
                f"COPY conversation ({CONV_COLS}, created_at, updated_at) FROM STDIN"
            ) as cp:
                for r in conv:
                    cp.write_row((*r, now, now))
            with cur.copy(f"COPY statement_check ({STMT_COLS}) FROM STDIN") as cp:
                for r in stmts:
                    cp.write_row(r)
            cur.execute(ROLLUP_SQL.format(day="date_trunc('day', query_timestamp)"))
            cur.execute(
                "SELECT setval(pg_get_serial_sequence('statement_check', 'id'), "
                "(SELECT max(id) FROM statement_check))"
            )
            raw.commit()
        finally:
            raw.close()
        # what autovacuum does after a bulk load (a server with autovacuum off never does):
        # the statistics, and the visibility map that index-only scans need
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
            c.execute(text("VACUUM ANALYZE"))
    else:
        with engine.begin() as c:
            c.execute(
                text("INSERT INTO patient (id, created_at) VALUES (:id, :at)"),
                [{"id": p, "at": now.replace(tzinfo=None)} for p in patients],
            )
            cols = [x.strip() for x in CONV_COLS.split(",")]
            ins = text(
                f"INSERT INTO conversation ({CONV_COLS}, created_at, updated_at) VALUES "
                f"({', '.join(':' + x for x in cols)}, :ca, :ua)"
            )
            naive = now.replace(tzinfo=None)
            for i in range(0, len(conv), 20_000):
                c.execute(
                    ins,
                    [
                        {
                            **dict(
                                zip(cols, (*r[:3], r[3].replace(tzinfo=None), *r[4:]), strict=True)
                            ),
                            "ca": naive,
                            "ua": naive,
                        }
                        for r in conv[i : i + 20_000]
                    ],
                )
            scols = [x.strip().strip('"') for x in STMT_COLS.split(",")]
            ins = text(
                f"INSERT INTO statement_check ({STMT_COLS}) VALUES "
                f"({', '.join(':' + x for x in scols)})"
            )
            for i in range(0, len(stmts), 20_000):
                c.execute(
                    ins,
                    [
                        dict(
                            zip(
                                scols,
                                (*r[:13], r[13].replace(tzinfo=None), r[14].replace(tzinfo=None))
                                + r[15:],
                                strict=True,
                            )
                        )
                        for r in stmts[i : i + 20_000]
                    ],
                )
            c.execute(text(ROLLUP_SQL.format(day="datetime(date(query_timestamp))")))
            c.execute(text("ANALYZE"))
    from sqlmodel import Session

    from core.storage import repo

    with Session(engine) as session:
        repo.rebuild_model_rollup(session=session)
        session.commit()
    _reviews(url)
    return conv[-1][0]


def _reviews(url: str, k: int = 2000) -> None:
    from sqlalchemy import select
    from sqlmodel import col

    from core.storage import models as m
    from core.storage import repo
    from core.storage.db import get_engine, write_session

    rng = random.Random(3)
    with write_session(get_engine(url)) as s:
        ids = list(
            s.execute(
                select(col(m.StatementCheck.id))
                .where(col(m.StatementCheck.status) != "grounded")
                .limit(k)
            ).scalars()
        )
        for sid in ids:
            repo.create_review(
                session=s,
                statement_check_id=int(sid),
                reviewer="bench",
                verdict=rng.choice(repo.VERDICTS),
            )


def _measure(url: str, conversation_id: str, repeats: int) -> dict[str, dict[str, float]]:
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from core.config import reset_settings_cache

    os.environ["GROUNDWATCH_DATABASE_URL"] = url
    reset_settings_cache()
    out: dict[str, dict[str, float]] = {}
    for page in PAGES:  # engine, migration check and module imports happen once per process
        warmup = AppTest.from_file(APP, default_timeout=300)
        warmup.session_state["report_conversation"] = conversation_id
        warmup.run()
        warmup.switch_page(f"app_pages/{page}.py").run()
    for page in PAGES:
        cold, warm = [], []
        for _ in range(repeats):
            at = AppTest.from_file(APP, default_timeout=300)
            at.session_state["report_conversation"] = conversation_id
            at.run()
            st.cache_data.clear()
            at.switch_page(f"app_pages/{page}.py")
            t0 = time.perf_counter()
            at.run()
            cold.append(time.perf_counter() - t0)
            if at.exception:
                raise RuntimeError(f"page {page} failed: {at.exception[0].value}")
            t0 = time.perf_counter()
            at.run()
            warm.append(time.perf_counter() - t0)
        out[page] = {"cold_s": statistics.median(cold), "warm_s": statistics.median(warm)}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--sizes",
        default="100000:sqlite,1000000:postgresql",
        help="comma list of N:backend (backend sqlite or postgresql)",
    )
    ap.add_argument(
        "--pg-url",
        default="postgresql://postgres@127.0.0.1:5432/postgres",
        help="server to create the scratch database on",
    )
    ap.add_argument("--pg-db", default="groundwatch_bench_dashboard")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--keep", action="store_true", help="keep the scratch databases")
    ap.add_argument(
        "--reuse",
        action="store_true",
        help="PostgreSQL: measure the scratch database as it is (no reload)",
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    results = []
    tmp = Path(tempfile.mkdtemp(prefix="gw-bench-"))
    for spec in args.sizes.split(","):
        n_text, _, backend = spec.partition(":")
        n = int(n_text)
        if backend == "postgresql" and args.reuse:
            from sqlalchemy import select
            from sqlalchemy.engine import make_url
            from sqlmodel import col

            from core.storage.db import get_engine, read_session
            from core.storage.models import Conversation

            url = str(make_url(args.pg_url).set(database=args.pg_db))
            with read_session(get_engine(url)) as s:
                cid = s.execute(select(col(Conversation.id)).limit(1)).scalar_one()
            times = _measure(url, cid, args.repeats)
            results.append({"backend": backend, "conversations": n, "load_s": 0.0, "pages": times})
            continue
        if backend == "postgresql":
            from sqlalchemy import create_engine, text
            from sqlalchemy.engine import make_url

            admin = create_engine(
                make_url(args.pg_url).set(drivername="postgresql+psycopg"),
                isolation_level="AUTOCOMMIT",
            )
            with admin.connect() as c:
                c.execute(text(f'DROP DATABASE IF EXISTS "{args.pg_db}"'))
                c.execute(text(f'CREATE DATABASE "{args.pg_db}"'))
            admin.dispose()
            url = str(make_url(args.pg_url).set(database=args.pg_db))
        else:
            url = f"sqlite:///{tmp / f'bench-{n}.db'}"
        t0 = time.perf_counter()
        cid = _fill(url, n)
        load_s = time.perf_counter() - t0
        times = _measure(url, cid, args.repeats)
        results.append({"backend": backend, "conversations": n, "load_s": load_s, "pages": times})
        if backend == "postgresql" and not args.keep:
            from core.storage.db import get_engine

            get_engine(url).dispose()
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(
        f"{'backend':<11} {'conversations':>13} {'page':<12} {'cold s':>7} {'warm s':>7} "
        f"{'<= 1 s':>6}"
    )
    for r in results:
        for page, t in r["pages"].items():
            ok = "yes" if t["cold_s"] <= 1.0 else "no"
            print(
                f"{r['backend']:<11} {r['conversations']:>13,} {page:<12} "
                f"{t['cold_s']:>7.3f} {t['warm_s']:>7.3f} {ok:>6}"
            )
        print(
            f"{r['backend']:<11} {r['conversations']:>13,} {'(bulk load)':<12} {r['load_s']:>7.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
