"""End to end: ten verdicts given by keyboard alone in the review queue, then one undone, in
real Chromium against `groundwatch serve` (the demo through the real pipeline)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.e2e.test_dashboard_e2e import (  # the same server and browser set-up
    ARTIFACTS,
    TIMEOUT_MS,
    _open,
    _settle,
    browser,  # noqa: F401 - a fixture used by name
    serve_demo,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.model]


@pytest.fixture(scope="module")
def queue_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A dashboard on a demo large enough to leave a dozen items to review."""
    db = tmp_path_factory.mktemp("keys") / "demo.db"
    with serve_demo(db, patients=6, answers=90, days=20) as url:
        yield url


@pytest.fixture
def page(browser: object) -> Iterator[object]:  # noqa: F811 - the fixture, not the import
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})  # type: ignore[attr-defined]
    pg = ctx.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    yield pg
    ctx.close()


def _wait_for_queue(page: object, want: int, timeout: float | None = None) -> None:
    """Wait until the page's "In queue" count is ``want``."""
    page.wait_for_function(  # type: ignore[attr-defined]
        """([want]) => {
            const m = [...document.querySelectorAll('[data-testid="stMetric"]')]
                .find(e => e.innerText.includes('In queue'));
            return m && parseInt(m.innerText.replace(/\\D/g, '')) === want;
        }""",
        arg=[want],
        **({"timeout": timeout} if timeout is not None else {}),
    )


def _in_queue(page: object) -> int:
    metric = page.locator('[data-testid="stMetric"]', has_text="In queue").first  # type: ignore[attr-defined]
    value = metric.locator('[data-testid="stMetricValue"]').inner_text()
    return int(re.sub(r"\D", "", value))


def test_ten_verdicts_by_keyboard_alone_and_an_undo(queue_server: str, page: object) -> None:
    _open(page, f"{queue_server}/review", "Review queue")
    page.get_by_text("Item 1 of").first.wait_for()  # type: ignore[attr-defined]
    _settle(page)
    # the one thing typed: the reviewer's name, asked once on the page
    name = page.get_by_placeholder("e.g. Dr. Rivera").last  # type: ignore[attr-defined]
    name.fill("Dr. Keys")
    name.press("Enter")
    page.get_by_text("Reviewing as Dr. Keys").first.wait_for()  # type: ignore[attr-defined]
    _settle(page)
    before = _in_queue(page)
    assert before >= 11, f"the demo left only {before} items to review"
    keys = "hfhuhhfhhf"  # confirmed, false alarm, unsure: ten verdicts
    for n, key in enumerate(keys, start=1):
        page.locator("h1").first.click()  # type: ignore[attr-defined]  # focus off any field
        page.keyboard.press(key)  # type: ignore[attr-defined]
        try:
            _wait_for_queue(page, before - n, timeout=15_000)
        except Exception:
            # a key pressed while the page was still re-rendering the verdict buttons (their
            # shortcuts are bound as they mount) can be lost; pressed again only if it was
            # (one press counts once: a second verdict would make the count miss below)
            assert _in_queue(page) == before - n + 1, "the count moved, but not by this one key"
            page.locator("h1").first.click()  # type: ignore[attr-defined]
            page.keyboard.press(key)  # type: ignore[attr-defined]
            _wait_for_queue(page, before - n)
        _settle(page)
    assert _in_queue(page) == before - len(keys)
    page.locator("h1").first.click()  # type: ignore[attr-defined]
    page.keyboard.press("z")  # type: ignore[attr-defined]  # undo the last verdict
    _wait_for_queue(page, before - len(keys) + 1)
    page.screenshot(path=str(ARTIFACTS / "review_keyboard.png"), full_page=True)  # type: ignore[attr-defined]
