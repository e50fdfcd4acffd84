"""Dashboard time to content: every page in real Chromium, cold and warm.

For each page and run: a fresh ``groundwatch serve`` process and a first browser context
(cold), then a second context on the same server (warm). The time runs from ``page.goto``
until a page-specific element that only appears once the page's data is drawn (a plotted
trace, the verdict buttons of a queue item, an answer's heading, the audit table's count).
The server's own start (Python and Streamlit imports, migrations) is not counted: it is up
and healthy before the clock starts; the first script run with its imports is.

The data: ``groundwatch demo`` into a scratch SQLite file (or ``--sqlite FILE`` as it is),
and with ``--pg-url`` a PostgreSQL database as well: by default a scratch database on that
server filled with ``--pg-rows`` synthetic conversations the way
``benchmarks/dashboard_speed.py`` fills it (COPY; 1,000,000 take several minutes), or with
``--pg-existing`` the database the URL names, measured as it is.

First the floor: a bare Streamlit page (one line of text) served the same way and timed the
same way, the soonest any page can draw on this machine, and the same page with one small
Vega-Lite chart, timed until the chart is drawn (``--no-floor`` skips both). Machines here
differ by two to three times in speed, so a page's time above the floor says more about the
dashboard than its time alone.

Prints a table (page, cold median, warm median, runs, cold time above the floor) per
database; ``--json`` for machine output. Target (issue 23): <= 1.5 s cold. A benchmark, not a
test: nothing runs it in CI.

    python benchmarks/dashboard_ttc.py
    python benchmarks/dashboard_ttc.py --runs 5 --pages overview,review
    python benchmarks/dashboard_ttc.py --pg-url postgresql://postgres@127.0.0.1:5432/postgres
    python benchmarks/dashboard_ttc.py --pg-url postgresql://u@host/groundwatch --pg-existing
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TARGET_S = 1.5
TIMEOUT_MS = 120_000

#: A Vega-Lite chart (st.vega_lite_chart) and whether Vega has drawn its marks: a line, bar or
#: point with its path in the chart's SVG.
_CHART = "'[data-testid=\"stVegaLiteChart\"]'"
_DRAWN = (
    "c => [...c.querySelectorAll('.mark-line path, .mark-rect path, .mark-symbol path')]"
    ".some(p => (p.getAttribute('d') || '').length > 4)"
)

#: Per page: a JavaScript predicate true once the page's data is drawn (not merely loaded).
CONTENT: dict[str, str] = {
    # the trend chart and the volume chart, each with its marks drawn
    "overview": f"[...document.querySelectorAll({_CHART})].filter({_DRAWN}).length >= 2",
    # the first queue item: its position and its verdict buttons
    "review": "/Item \\d+ of/.test(document.body.innerText)"
    " && [...document.querySelectorAll('button')].some(b => b.innerText.includes('Confirmed'))",
    # an answer's heading ("Answer <id>") under the page title
    "report": "[...document.querySelectorAll('h3')].some(h => h.innerText.startsWith('Answer '))",
    # no data on this page: its prompt to upload
    "upload": "document.body.innerText.includes('paste a transcript to begin')",
    # the reliability diagram (or the note that there are no verdicts yet)
    "calibration": f"[...document.querySelectorAll({_CHART})].some({_DRAWN})"
    " || document.body.innerText.includes('Calibration needs reviewed statements')",
    # the patient's answers over time
    "patients": f"[...document.querySelectorAll({_CHART})].some({_DRAWN})",
    # the audit trail's table and its count
    "admin": "/[\\d,]+ events, newest first/.test(document.body.innerText)",
}
PAGES = tuple(CONTENT)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(url: str) -> dict[str, str]:
    env = {**os.environ, "GROUNDWATCH_DATABASE_URL": url}
    env.pop("GROUNDWATCH_LLM_BASE_URL", None)
    env.pop("GROUNDWATCH_AUTH_FILE", None)  # no login: the local admin sees every page
    return env


#: The floor: a page with one line of text and nothing else, served by the same Streamlit with
#: the dashboard's settings. No page can draw sooner on the machine; a page's time above it is
#: what the dashboard itself costs (its script, its data, its charts).
FLOOR_SCRIPT = 'import streamlit as st\n\nst.write("bare page drawn")\n'
FLOOR_CONTENT = "document.body.innerText.includes('bare page drawn')"
#: The same bare page with one small Vega-Lite line chart (30 points), timed until its marks
#: are drawn: what one chart costs on the machine before any of the dashboard's own work.
CHART_FLOOR_SCRIPT = FLOOR_SCRIPT + (
    "st.vega_lite_chart({'mark': {'type': 'line', 'point': True}, "
    "'data': {'values': [{'x': i, 'y': i % 7} for i in range(30)]}, "
    "'encoding': {'x': {'field': 'x', 'type': 'quantitative'}, "
    "'y': {'field': 'y', 'type': 'quantitative'}}})\n"
)
CHART_FLOOR_CONTENT = f"[...document.querySelectorAll({_CHART})].some({_DRAWN})"


@contextmanager
def _server(url: str, script: Path | None = None) -> Iterator[str]:
    """A fresh ``groundwatch serve`` on a free port (or, with ``script``, Streamlit serving
    that script with the dashboard's settings), healthy before it is yielded."""
    port = _free_port()
    if script is None:
        cmd = [sys.executable, "-m", "core.cli", "serve", "--port", str(port)]
    else:
        from core.cli.records import _streamlit_options

        options = _streamlit_options(ROOT / ".streamlit" / "config.toml")
        cmd = [sys.executable, "-m", "streamlit", "run", str(script), "--server.port", str(port)]
        cmd += ["--server.address", "127.0.0.1", *options]
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=_env(url),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the dashboard exited with code {proc.returncode}")
            try:
                with urllib.request.urlopen(base + "/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError("the dashboard did not become healthy")
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _time_to_content(browser: Any, url: str, page: str, content: str | None = None) -> float:
    """Seconds from navigation to the page's content (``content``: a JavaScript predicate
    instead of the page's own), in a new browser context."""
    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
    try:
        pg = ctx.new_page()
        pg.set_default_timeout(TIMEOUT_MS)
        t0 = time.perf_counter()
        pg.goto(f"{url}/{page}", wait_until="commit")
        # right after the commit the document may have no body yet: not drawn, not an error
        drawn = content or CONTENT[page]
        pg.wait_for_function(
            f"() => {{ try {{ return {drawn}; }} catch (e) {{ return false; }} }}",
            polling=25,
        )
        elapsed = time.perf_counter() - t0
        if pg.get_by_text("Page not found").count():
            raise RuntimeError(f"/{page}: page not found")
        return elapsed
    finally:
        ctx.close()


def measure(browser: Any, db_url: str, pages: tuple[str, ...], runs: int) -> dict[str, Any]:
    """Cold and warm times (seconds) of every page: ``{page: {"cold": [...], "warm": [...]}}``."""
    out: dict[str, Any] = {p: {"cold": [], "warm": []} for p in pages}
    for run in range(runs):
        for page in pages:
            with _server(db_url) as url:
                out[page]["cold"].append(_time_to_content(browser, url, page))
                out[page]["warm"].append(_time_to_content(browser, url, page))
            print(
                f"  run {run + 1}/{runs} {page:<12} cold {out[page]['cold'][-1]:.2f} s, "
                f"warm {out[page]['warm'][-1]:.2f} s",
                file=sys.stderr,
            )
    return out


def measure_floor(browser: Any, directory: Path, runs: int) -> dict[str, Any]:
    """Cold and warm times of the bare page (:data:`FLOOR_SCRIPT`) and of the bare page with
    one chart (:data:`CHART_FLOOR_SCRIPT`), each measured like a page:
    ``{"bare": {"cold": [...], "warm": [...]}, "chart": {...}}``."""
    out: dict[str, Any] = {}
    for name, text, content in (
        ("bare", FLOOR_SCRIPT, FLOOR_CONTENT),
        ("chart", CHART_FLOOR_SCRIPT, CHART_FLOOR_CONTENT),
    ):
        script = directory / f"{name}_page.py"
        script.write_text(text, encoding="utf-8")
        times: dict[str, list[float]] = {"cold": [], "warm": []}
        for run in range(runs):
            with _server(f"sqlite:///{directory / 'unused.db'}", script) as url:
                times["cold"].append(_time_to_content(browser, url, "", content))
                times["warm"].append(_time_to_content(browser, url, "", content))
            print(
                f"  run {run + 1}/{runs} {name + ' page':<12} cold {times['cold'][-1]:.2f} s, "
                f"warm {times['warm'][-1]:.2f} s",
                file=sys.stderr,
            )
        out[name] = times
    return out


def demo_database(directory: Path, answers: int) -> str:
    """A scratch SQLite file loaded by ``groundwatch demo`` (the real pipeline)."""
    url = f"sqlite:///{directory / 'demo.db'}"
    done = subprocess.run(
        [sys.executable, "-m", "core.cli", "demo", "--answers", str(answers), "--json"],
        cwd=ROOT,
        env=_env(url),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"groundwatch demo failed:\n{done.stderr[-2000:]}")
    return url


def postgres_database(pg_url: str, db_name: str, rows: int) -> str:
    """A scratch database on the server of ``pg_url``, filled like dashboard_speed.py does."""
    import dashboard_speed  # benchmarks/dashboard_speed.py: the bulk loader
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    admin = create_engine(
        make_url(pg_url).set(drivername="postgresql+psycopg"), isolation_level="AUTOCOMMIT"
    )
    with admin.connect() as c:
        c.execute(text(f'DROP DATABASE IF EXISTS "{db_name}"'))
        c.execute(text(f'CREATE DATABASE "{db_name}"'))
    admin.dispose()
    url = make_url(pg_url).set(database=db_name).render_as_string(hide_password=False)
    dashboard_speed._fill(url, rows)
    return url


def _table(name: str, results: dict[str, Any], floor: float | None = None) -> str:
    """One database's table; with ``floor`` (the bare page's cold median) a column of each
    page's cold time above it."""
    over = f" {'over the floor s':>17}" if floor is not None else ""
    lines = [
        name,
        f"{'page':<12} {'cold median s':>14} {'warm median s':>14} {'runs':>5} "
        f"{'<= ' + str(TARGET_S) + ' s cold':>15}{over}",
    ]
    for page, t in results.items():
        cold, warm = statistics.median(t["cold"]), statistics.median(t["warm"])
        ok = "yes" if cold <= TARGET_S else "no"
        extra = f" {cold - floor:>17.2f}" if floor is not None else ""
        lines.append(f"{page:<12} {cold:>14.2f} {warm:>14.2f} {len(t['cold']):>5} {ok:>15}{extra}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="runs per page (medians are printed)")
    ap.add_argument("--pages", default=",".join(PAGES), help="comma list of pages")
    ap.add_argument("--answers", type=int, default=600, help="answers of the demo data")
    ap.add_argument("--sqlite", type=Path, help="measure this SQLite file instead of a new demo")
    ap.add_argument("--no-demo", action="store_true", help="skip the demo data")
    ap.add_argument("--pg-url", help="PostgreSQL server (or database, with --pg-existing)")
    ap.add_argument("--pg-db", default="groundwatch_bench_ttc", help="scratch database name")
    ap.add_argument("--pg-rows", type=int, default=1_000_000, help="conversations to load")
    ap.add_argument(
        "--pg-existing", action="store_true", help="measure the --pg-url database as it is"
    )
    ap.add_argument(
        "--no-floor", action="store_true", help="skip the bare Streamlit page (the floor)"
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    pages = tuple(p.strip() for p in args.pages.split(",") if p.strip())
    unknown = [p for p in pages if p not in CONTENT]
    if unknown:
        ap.error(f"unknown pages: {', '.join(unknown)} (known: {', '.join(PAGES)})")
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} is missing: apt-get install -y chromium")

    from playwright.sync_api import sync_playwright

    results: dict[str, Any] = {}
    floor: dict[str, Any] | None = None
    with tempfile.TemporaryDirectory(prefix="gw-ttc-") as tmp:
        databases: list[tuple[str, str]] = []
        if args.sqlite is not None:
            databases.append((f"SQLite {args.sqlite.name}", f"sqlite:///{args.sqlite.resolve()}"))
        elif not args.no_demo:
            print(f"loading the demo ({args.answers} answers) ...", file=sys.stderr)
            url = demo_database(Path(tmp), args.answers)
            databases.append((f"demo data, SQLite, {args.answers} answers", url))
        if args.pg_url and args.pg_existing:
            databases.append(("PostgreSQL (existing database)", args.pg_url))
        elif args.pg_url:
            print(f"loading {args.pg_rows:,} conversations into PostgreSQL ...", file=sys.stderr)
            url = postgres_database(args.pg_url, args.pg_db, args.pg_rows)
            databases.append((f"PostgreSQL, {args.pg_rows:,} conversations", url))
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                if not args.no_floor:
                    print("the bare page (the floor):", file=sys.stderr)
                    floor = measure_floor(browser, Path(tmp), args.runs)
                for name, url in databases:
                    print(f"{name}:", file=sys.stderr)
                    results[name] = measure(browser, url, pages, args.runs)
            finally:
                browser.close()
    floor_cold = None if floor is None else statistics.median(floor["bare"]["cold"])
    if args.json:
        print(json.dumps({"floor": floor, "databases": results}, indent=2))
        return 0
    print(f"time to content in Chromium, medians of {args.runs} runs; target <= {TARGET_S} s cold")
    if floor is not None and floor_cold is not None:
        print(
            f"the floor, a bare Streamlit page served the same way: {floor_cold:.2f} s cold, "
            f"{statistics.median(floor['bare']['warm']):.2f} s warm (no page can draw sooner "
            f"here); the same with one small Vega-Lite chart drawn: "
            f"{statistics.median(floor['chart']['cold']):.2f} s cold, "
            f"{statistics.median(floor['chart']['warm']):.2f} s warm"
        )
    for name, r in results.items():
        print()
        print(_table(name, r, floor_cold))
    return 0


if __name__ == "__main__":
    sys.exit(main())
