"""End to end: `groundwatch serve` on a free port, driven by Debian's Chromium via Playwright.

The database is a temporary SQLite file loaded with a small demo through the real pipeline.
Screenshots of every page land in ``tests/e2e/artifacts/``.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.model]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
TIMEOUT_MS = 90_000


IMAGE_HOST = "127.0.0.1:9"
EVIL_RECORD = {
    "id": f"**evil** ![img](http://{IMAGE_HOST}/x.png)",
    "patient_id": "p-evil",
    "timestamp": "2026-01-02T09:00:00Z",
    "query": "What does he take?",
    "answer": "He takes metformin 500 mg daily.",
    "sources": [{"id": f"[src](http://{IMAGE_HOST}/s)", "text": "Metformin 500 mg daily."}],
    "model": f"![m](http://{IMAGE_HOST}/m.png)",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_healthy(url: str, proc: subprocess.Popen[bytes], timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"dashboard exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise TimeoutError("dashboard did not become healthy")


@contextlib.contextmanager
def serve_demo(
    db: Path,
    *,
    patients: int,
    answers: int,
    days: int,
    extra: Path | None = None,
    settings: dict[str, str] | None = None,
) -> Iterator[str]:
    """`groundwatch demo` into ``db`` (then ``extra`` imported, when given) and `groundwatch
    serve` on a free port, both with the ``GROUNDWATCH_*`` ``settings`` given; yields the
    dashboard's URL and stops the server."""
    env = {**os.environ, "GROUNDWATCH_DATABASE_URL": f"sqlite:///{db}", **(settings or {})}
    env.pop("GROUNDWATCH_LLM_BASE_URL", None)
    sizes = ["--patients", str(patients), "--answers", str(answers), "--days", str(days)]
    demo = subprocess.run(
        [sys.executable, "-m", "core.cli", "demo", *sizes, "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=900,
        check=False,
    )
    assert demo.returncode == 0, demo.stderr.decode()[-2000:]
    summary = json.loads(demo.stdout.decode().strip().splitlines()[-1])
    assert summary["records"] == answers
    if extra is not None:
        imported = subprocess.run(
            [sys.executable, "-m", "core.cli", "import", str(extra), "--json"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            timeout=600,
            check=False,
        )
        assert imported.returncode == 0, imported.stderr.decode()[-2000:]
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "core.cli", "serve", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("e2e") / "demo.db"
    # a record whose id and model name hold Markdown (an image the browser would fetch)
    evil = db.parent / "evil.jsonl"
    evil.write_text(json.dumps(EVIL_RECORD) + "\n", encoding="utf-8")
    with serve_demo(db, patients=4, answers=40, days=20, extra=evil) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium")
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser: object) -> Iterator[object]:
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})  # type: ignore[attr-defined]
    pg = ctx.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    yield pg
    ctx.close()


def _open(page: object, url: str, heading: str) -> None:
    page.goto(url)  # type: ignore[attr-defined]
    page.get_by_role("heading", name=heading).first.wait_for()  # type: ignore[attr-defined]


def _settle(page: object) -> None:
    """Wait until the script run finished (Streamlit shows a running indicator meanwhile)."""
    page.wait_for_function(  # type: ignore[attr-defined]
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"
    )


def _upload(page: object, index: int, path: Path, expect: str) -> None:
    """Give the index-th file input a file and wait for ``expect`` (re-give it once if the
    widget was re-rendered while the first upload was in flight)."""
    for attempt in range(3):
        page.locator("input[type=file]").nth(index).set_input_files(str(path))  # type: ignore[attr-defined]
        try:
            page.get_by_text(expect).first.wait_for(timeout=30_000)  # type: ignore[attr-defined]
            return
        except Exception:
            if attempt == 2:
                page.screenshot(path=str(ARTIFACTS / f"failed_{path.stem}.png"), full_page=True)  # type: ignore[attr-defined]
                raise


def test_every_page_renders(server: str, page: object) -> None:
    pages = [
        ("", "Overview", "Hallucination risk"),
        ("overview", "Overview", "Hallucination risk"),
        ("review", "Review queue", "In queue"),
        ("report", "Query report", "most recent flagged answer"),
        ("upload", "Upload", "paste a transcript to begin"),
        ("calibration", "Calibration", "Threshold explorer"),
        ("patients", "Patients", "Entity timeline"),
        ("alerts", "Alerts", "Acknowledged"),
        ("rescore", "Re-scoring", "No re-scoring run yet"),
    ]
    for path, heading, text in pages:
        _open(page, f"{server}/{path}", heading)
        page.get_by_text(text).first.wait_for()  # type: ignore[attr-defined]
        if path in ("", "overview", "calibration", "patients"):
            page.locator("[data-testid=stVegaLiteChart] svg").first.wait_for()  # type: ignore[attr-defined]
        _settle(page)
        assert page.get_by_text("Page not found").count() == 0  # type: ignore[attr-defined]
        page.screenshot(path=str(ARTIFACTS / f"{path or 'overview'}.png"), full_page=True)  # type: ignore[attr-defined]


def test_give_a_verdict(server: str, page: object) -> None:
    _open(page, f"{server}/review", "Review queue")
    page.get_by_text("Item 1 of").first.wait_for()  # type: ignore[attr-defined]
    name = page.get_by_role("textbox", name="Reviewer name")  # type: ignore[attr-defined]
    name.fill("Dr. Browser")
    name.press("Enter")
    # the name reruns the page: click only once the rerun has drawn the buttons again (a
    # click on a button that the rerun replaces is lost)
    page.get_by_text("Reviewing as Dr. Browser").first.wait_for()  # type: ignore[attr-defined]
    _settle(page)
    queue = page.get_by_test_id("stMetricValue").first.inner_text()  # type: ignore[attr-defined]
    button = page.locator("button:enabled", has_text="False alarm").first  # type: ignore[attr-defined]
    button.wait_for()
    button.click()
    page.get_by_text("Verdict stored").first.wait_for()  # type: ignore[attr-defined]
    _settle(page)
    after = page.get_by_test_id("stMetricValue").first.inner_text()  # type: ignore[attr-defined]
    assert int(after.replace(",", "")) == int(queue.replace(",", "")) - 1
    page.screenshot(path=str(ARTIFACTS / "review_verdict.png"), full_page=True)  # type: ignore[attr-defined]


def test_upload_a_transcript(server: str, page: object, tmp_path: Path) -> None:
    transcript = tmp_path / "visit.txt"
    transcript.write_text(
        "Doctor: Any chest pain?\nPatient: No, none at all.\n"
        "Doctor: Still on the lisinopril 10 mg?\nPatient: Yes, every morning.\n"
    )
    quotes = tmp_path / "quotes.json"
    quotes.write_text(json.dumps({"meds": ["lisinopril 10 mg", "metoprolol 50 mg"]}))
    _open(page, f"{server}/upload", "Upload")
    page.get_by_text("paste a transcript to begin").wait_for()  # type: ignore[attr-defined]
    _settle(page)
    _upload(page, 0, transcript, "Add evidence quotes or an answer")
    _upload(page, 1, quotes, "Evidence quotes")
    grounded = page.locator("mark.gw-evidence").first  # type: ignore[attr-defined]
    grounded.wait_for()
    assert grounded.inner_text() == "lisinopril 10 mg"
    assert page.locator("mark.gw-rejected").count() >= 1  # type: ignore[attr-defined]
    _settle(page)
    page.screenshot(path=str(ARTIFACTS / "upload_result.png"), full_page=True)  # type: ignore[attr-defined]


def test_upload_bad_file_shows_clear_error(server: str, page: object, tmp_path: Path) -> None:
    bad = tmp_path / "broken.txt"
    bad.write_bytes(b"\xff\xfe not utf-8")
    _open(page, f"{server}/upload", "Upload")
    page.get_by_text("paste a transcript to begin").wait_for()  # type: ignore[attr-defined]
    _settle(page)
    _upload(page, 0, bad, "broken.txt: invalid UTF-8")
    page.screenshot(path=str(ARTIFACTS / "upload_error.png"), full_page=True)  # type: ignore[attr-defined]


def test_record_fields_are_shown_as_typed_and_fetch_nothing(server: str, page: object) -> None:
    """Markdown in a record's id, source id and model name is shown literally: no bold, no
    link, and Chromium requests nothing from the host the image points to."""
    from core.storage.repo import conversation_id_for

    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))  # type: ignore[attr-defined]
    cid = conversation_id_for(str(EVIL_RECORD["id"]))
    _open(page, f"{server}/report?id={cid}", "Query report")
    page.get_by_text("**evil** ![img](http", exact=False).first.wait_for()  # type: ignore[attr-defined]
    _settle(page)
    assert not [u for u in requested if IMAGE_HOST in u]
    main = page.locator("section.main, [data-testid=stMain]").first  # type: ignore[attr-defined]
    assert main.locator(f"img[src*='{IMAGE_HOST}']").count() == 0
    links = main.locator(f"a[href*='{IMAGE_HOST}']")
    assert links.count() == 0, [
        links.nth(i).evaluate("e => e.parentElement.outerHTML") for i in range(links.count())
    ]
    page.screenshot(path=str(ARTIFACTS / "report_literal_fields.png"), full_page=True)  # type: ignore[attr-defined]


def _metric(page: object, label: str) -> str:
    box = page.get_by_test_id("stMetric").filter(has_text=label).first  # type: ignore[attr-defined]
    return str(box.get_by_test_id("stMetricValue").inner_text())


def _overview(page: object, url: str) -> None:
    _open(page, url, "Overview")
    page.locator("[data-testid=stVegaLiteChart] svg").first.wait_for()  # type: ignore[attr-defined]
    _settle(page)
    assert page.get_by_text("Page not found").count() == 0  # type: ignore[attr-defined]


def test_a_shared_url_reproduces_the_view_in_a_new_browser_context(
    server: str, browser: object
) -> None:
    """Filters picked in one browser are in its address; the address opened in a new browser
    context (no cookies, a new session) shows the same view."""
    model = "clinical-llm-b"
    viewport = {"width": 1400, "height": 1000}
    first = browser.new_context(viewport=viewport)  # type: ignore[attr-defined]
    try:
        pg = first.new_page()
        pg.set_default_timeout(TIMEOUT_MS)
        _overview(pg, f"{server}/overview")
        pg.get_by_role("combobox", name="Model").click()
        pg.get_by_role("option", name=model).click()
        pg.keyboard.press("Escape")
        pg.wait_for_function(f"() => location.search.includes('models={model}')")
        _settle(pg)
        pg.get_by_role("radio", name="week", exact=True).click()
        pg.wait_for_function("() => location.search.includes('period=week')")
        _settle(pg)
        shared = pg.url
        answers = _metric(pg, "Answers")
        flagged = _metric(pg, "Share flagged")
    finally:
        first.close()
    assert "/overview?" in shared

    second = browser.new_context(viewport=viewport)  # type: ignore[attr-defined]
    try:
        pg2 = second.new_page()
        pg2.set_default_timeout(TIMEOUT_MS)
        _overview(pg2, shared)
        assert _metric(pg2, "Answers") == answers
        assert _metric(pg2, "Share flagged") == flagged
        # the model is chosen in the sidebar and weeks are the period
        tags = pg2.get_by_test_id("stSidebar").locator("[data-tag]")
        assert tags.count() == 1
        assert tags.first.inner_text().strip() == model
        week = pg2.get_by_role("radio", name="week", exact=True)
        assert week.get_attribute("aria-checked") == "true"
        assert pg2.url == shared
        pg2.screenshot(path=str(ARTIFACTS / "overview_shared_url.png"), full_page=True)
    finally:
        second.close()


def test_a_chart_point_opens_its_answers(server: str, page: object) -> None:
    """Clicking a point of a trend chart lists the answers of that day and model, with links
    to their reports, and puts the point in the address."""
    _overview(page, f"{server}/overview")
    chart = page.locator("[data-testid=stVegaLiteChart]").first  # type: ignore[attr-defined]
    heading = page.get_by_role("heading", name="Answers of")  # type: ignore[attr-defined]
    for attempt in range(3):
        # a point of the first small chart (grounding): Vega draws each as a path in its
        # marks; on a loaded machine the chart may be drawn again (its view replaced) just
        # after the first click, which the new view never hears of: click once more then
        chart.locator(".mark-symbol.role-mark path").first.click(force=True)
        try:
            heading.first.wait_for(timeout=30_000)
            break
        except Exception:
            if attempt == 2:
                page.screenshot(path=str(ARTIFACTS / "failed_drill_down.png"), full_page=True)  # type: ignore[attr-defined]
                raise
    page.wait_for_function("() => location.search.includes('day=')")  # type: ignore[attr-defined]
    _settle(page)
    answers = page.get_by_test_id("stDataFrame").last  # type: ignore[attr-defined]
    answers.wait_for()
    page.screenshot(path=str(ARTIFACTS / "overview_drill_down.png"), full_page=True)  # type: ignore[attr-defined]
