"""AppTests of the Alerts page on a seeded database with real alerts: open first, the plain
sentence, acknowledge and resolve (stored with who and when, audited), the answers' links, the
delivery log, roles."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select
from streamlit.testing.v1 import AppTest

from core.storage import alerts as store
from core.storage import models as m
from core.storage.db import get_engine, read_session, write_session
from tests.app.seed import APP, Seeded, login, open_page


def seed_alerts(seeded: Seeded) -> dict[str, int]:
    """Three alerts on the seeded answers: an open contradiction with two deliveries, an open
    flagged share, and a resolved low score."""
    engine = get_engine(seeded.url)
    with read_session(engine) as s:
        convs = list(s.execute(select(m.Conversation).limit(7)).scalars())
    at = datetime(2026, 3, 1, 9, tzinfo=UTC)
    with write_session(engine) as s:
        contradiction, _ = store.fire(
            session=s,
            firing_in=store.FiringIn(
                rule="contradiction",
                kind="contradiction",
                condition_key=f"contradiction|patient:{convs[0].patient_id}",
                patient_id=convs[0].patient_id,
                model=convs[0].model_used,
                value=1.0,
                counts={"contradicted_statements": 0, "contradicted_earlier": 1},
                conversation_ids=tuple(c.id for c in convs),
            ),
            now=at,
        )
        share, _ = store.fire(
            session=s,
            firing_in=store.FiringIn(
                rule="flagged-share",
                kind="flagged_share",
                condition_key="flagged-share|model:model-x",
                model="model-x",
                value=0.4,
                threshold=0.3,
                counts={"answers": 50, "flagged": 20, "window_s": 3600},
                conversation_ids=(convs[1].id,),
            ),
            now=at - timedelta(hours=1),
        )
        low, _ = store.fire(
            session=s,
            firing_in=store.FiringIn(
                rule="grounding-low",
                kind="score_below",
                condition_key="grounding-low|patient:p-x",
                patient_id="p-x",
                value=0.2,
                threshold=0.5,
                counts={"grounding_score": 0.2},
            ),
            now=at + timedelta(hours=1),
        )
        for attempt, outcome, status in ((1, "retry", 500), (2, "delivered", 200)):
            store.record_delivery(
                session=s,
                firing_id=int(contradiction.id or 0),
                webhook="oncall",
                attempt=attempt,
                outcome=outcome,  # type: ignore[arg-type]
                status_code=status,
                duration_ms=12,
            )
        store.change_state(session=s, firing_id=int(low.id or 0), state="resolved", actor="dr-r")
    return {
        "contradiction": int(contradiction.id or 0),
        "share": int(share.id or 0),
        "low": int(low.id or 0),
    }


def metric(at: AppTest, label: str) -> str:
    return next(str(x.value) for x in at.metric if x.label == label)


def markdown(at: AppTest) -> str:
    """The page's Markdown as it reads (Markdown escapes removed)."""
    return "\n".join(str(x.value) for x in at.markdown).replace("\\", "")


def test_open_alerts_first_acknowledge_and_resolve(fresh_db, use_db):
    use_db(fresh_db)
    ids = seed_alerts(fresh_db)
    at = open_page("alerts")
    assert not at.exception, [e.value for e in at.exception]
    assert (metric(at, "Open"), metric(at, "Acknowledged"), metric(at, "Resolved")) == (
        "2",
        "0",
        "1",
    )
    text = markdown(at)
    # the open ones, most recent first; the resolved one only in the "all" view
    assert text.index(f"alert {ids['contradiction']}") < text.index(f"alert {ids['share']}")
    assert f"alert {ids['low']}" not in text
    assert "20 of 50 answers from model-x in 1 hour were flagged (40%)" in text
    assert "contradicts the patient's earlier answers" in text
    # links to the answers behind it (the report page by id), five shown and the rest folded
    links = list(at.get("page_link"))
    assert sum("report" in x.proto.page for x in links) >= 5
    assert at.expander[0].label == "2 more"
    # the delivery log
    (log,) = [d.value for d in at.dataframe if "status_code" in d.value.columns]
    assert list(log["status_code"]) == [200, 500]
    assert list(log["outcome"]) == ["delivered", "retry"]

    at.sidebar.text_input(key="sidebar_reviewer").input("Dr. Alert").run()
    at.button(key=f"alerts_ack_{ids['contradiction']}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert metric(at, "Acknowledged") == "1"
    assert "acknowledged by local-admin (Dr. Alert)" in "\n".join(str(s.value) for s in at.success)
    at.button(key=f"alerts_resolve_{ids['contradiction']}").click().run()
    assert metric(at, "Resolved") == "2"
    with read_session(get_engine(fresh_db.url)) as s:
        row = store.get_firing(session=s, firing_id=ids["contradiction"])
        events = list(
            s.execute(
                select(m.AuditEvent).where(m.AuditEvent.target_type == "alert_firing")
            ).scalars()
        )
    assert row is not None
    assert row.state == "resolved"
    assert row.acknowledged_by == row.resolved_by == "local-admin (Dr. Alert)"
    assert {e.action for e in events} >= {"alert_acknowledge", "alert_resolve"}

    at.radio(key="alerts_show").set_value("all").run()
    assert f"alert {ids['low']}" in markdown(at)
    assert "Resolved by dr-r" in "\n".join(str(c.value) for c in at.caption)


def test_an_alert_opened_by_its_link_comes_first(fresh_db, use_db):
    use_db(fresh_db)
    ids = seed_alerts(fresh_db)
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["alert"] = str(ids["low"])
    at.switch_page("app_pages/alerts.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.subheader[0].value == f"Alert {ids['low']}"
    assert "scored 0.20 for grounding, below the 0.50" in markdown(at)
    # resolved: no buttons to change it
    assert not [b for b in at.button if b.key and b.key.endswith(f"_{ids['low']}")]


def test_an_analyst_cannot_open_alerts(fresh_db, use_db, users_file):
    use_db(fresh_db)
    seed_alerts(fresh_db)
    at = AppTest.from_file(APP, default_timeout=60).run()
    login(at, "andy")
    with pytest.raises(ValueError, match="alerts"):  # not in the analyst's navigation at all
        at.switch_page("app_pages/alerts.py")
