"""End to end: the Alerts page in real Chromium against `groundwatch serve`, on a demo whose
answers were checked through the real pipeline with alert rules on (the rules fired while the
demo stored its answers); an alert is acknowledged and the database says by whom."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from sqlalchemy import select

from core.storage import models as m
from core.storage.db import get_engine, read_session
from tests.e2e.test_dashboard_e2e import (  # the same server and browser set-up
    ARTIFACTS,
    TIMEOUT_MS,
    _open,
    _settle,
    browser,  # noqa: F401 - a fixture used by name
    serve_demo,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.model]

RULES = {
    "rules": [
        {"name": "contradiction", "kind": "contradiction"},
        {"name": "grounding-low", "kind": "score_below", "score": "grounding", "threshold": 0.9},
    ]
}


@pytest.fixture(scope="module")
def alerts_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    folder = tmp_path_factory.mktemp("alerts")
    rules = folder / "alerts.yaml"
    rules.write_text(yaml.safe_dump(RULES), encoding="utf-8")
    db = folder / "demo.db"
    settings = {"GROUNDWATCH_ALERTS_FILE": str(rules)}
    with serve_demo(db, patients=4, answers=40, days=20, settings=settings) as url:
        yield url, db


@pytest.fixture
def page(browser: object) -> Iterator[object]:  # noqa: F811 - the fixture, not the import
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})  # type: ignore[attr-defined]
    pg = ctx.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    yield pg
    ctx.close()


def _metric(page: object, label: str) -> int:
    metric = page.locator('[data-testid="stMetric"]', has_text=label).first  # type: ignore[attr-defined]
    return int(re.sub(r"\D", "", metric.locator('[data-testid="stMetricValue"]').inner_text()))


def test_acknowledge_an_alert_in_the_browser(alerts_server: tuple[str, Path], page: object) -> None:
    url, db = alerts_server
    engine = get_engine(f"sqlite:///{db}")
    with read_session(engine) as s:
        stored = list(s.execute(select(m.AlertFiring)).scalars())
    assert stored, "the demo's answers fired no alert"
    assert all(f.state == "open" for f in stored)

    _open(page, f"{url}/alerts", "Alerts")
    page.get_by_text("The answers behind it").first.wait_for()  # type: ignore[attr-defined]
    _settle(page)
    opened = _metric(page, "Open")
    assert opened == len(stored)
    assert _metric(page, "Acknowledged") == 0
    # an answer's link goes to its report page
    link = page.locator('a[href*="report?id="]').first  # type: ignore[attr-defined]
    assert re.search(r"report\?id=[0-9a-f]{32}", link.get_attribute("href") or "")

    page.locator("button", has_text="Acknowledge").first.click()  # type: ignore[attr-defined]
    page.get_by_text("acknowledged by").first.wait_for()  # type: ignore[attr-defined]
    _settle(page)
    assert _metric(page, "Acknowledged") == 1
    assert _metric(page, "Open") == opened - 1
    page.screenshot(path=str(ARTIFACTS / "alerts_acknowledged.png"), full_page=True)  # type: ignore[attr-defined]

    with read_session(engine) as s:
        acked = list(
            s.execute(select(m.AlertFiring).where(m.AlertFiring.state == "acknowledged")).scalars()  # type: ignore[arg-type]
        )
    assert len(acked) == 1
    assert acked[0].acknowledged_by
    assert acked[0].acknowledged_at is not None
