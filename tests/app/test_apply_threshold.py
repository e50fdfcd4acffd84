"""Applying a review threshold on the calibration page: an admin applies the chosen value with
a reason (stored, audited with the name), the review queue holds only what is at or above it,
going back to the default restores every flag, and only an admin may apply one."""

from __future__ import annotations

from sqlalchemy import func, select
from streamlit.testing.v1 import AppTest

from core.storage import models as m
from core.storage.db import get_engine, read_session
from tests.app.seed import Seeded, login, open_page


def _ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def _in_queue(at: AppTest) -> int:
    return int(next(x for x in at.metric if x.label == "In queue").value.replace(",", ""))


def _unreviewed_at_or_above(url: str, bar: float) -> int:
    """Flagged statements without a verdict at or above ``bar``, counted from the tables."""
    sc = m.StatementCheck
    reviewed = select(m.Review.statement_check_id)
    stmt = select(func.count()).where(
        sc.status.in_(("unsupported", "contradicted")),  # type: ignore[attr-defined]
        sc.risk >= bar - 1e-9,  # type: ignore[operator]
        sc.id.not_in(reviewed),  # type: ignore[union-attr]
    )
    with read_session(get_engine(url)) as s:
        return int(s.execute(stmt).scalar_one())


def test_an_admin_applies_a_threshold_and_the_queue_follows(fresh_db: Seeded, use_db) -> None:
    use_db(fresh_db)
    at = open_page("review")
    _ok(at)
    everything = _in_queue(at)
    assert everything == _unreviewed_at_or_above(fresh_db.url, 0.0)
    bar = 0.6
    assert 0 < _unreviewed_at_or_above(fresh_db.url, bar) < everything  # the seed spans it

    at.switch_page("app_pages/calibration.py").run()
    _ok(at)
    at.slider(key="calibration_threshold").set_value(bar).run()
    apply = at.button(key="calibration_apply")
    assert apply.disabled  # a reason is required
    at.text_input(key="calibration_threshold_reason").input("too many false alarms").run()
    at.button(key="calibration_apply").click().run()
    _ok(at)

    with read_session(get_engine(fresh_db.url)) as s:
        changes = s.execute(select(m.SettingChange)).scalars().all()
        events = (
            s.execute(select(m.AuditEvent).where(m.AuditEvent.action == "apply_threshold"))
            .scalars()
            .all()
        )
    assert [(c.name, c.value, c.previous, c.reason) for c in changes] == [
        ("review_threshold", bar, None, "too many false alarms")
    ]
    assert changes[0].actor.startswith("local-admin")
    assert len(events) == 1
    assert events[0].actor == changes[0].actor
    assert events[0].detail == {"value": bar, "previous": None}
    assert "applied by local-admin" in at.slider(key="calibration_threshold").help

    at.switch_page("app_pages/review.py").run()
    _ok(at)
    assert _in_queue(at) == _unreviewed_at_or_above(fresh_db.url, bar)
    assert any("review threshold of 0.60 is applied" in c.value for c in at.caption)

    at.switch_page("app_pages/calibration.py").run()
    at.text_input(key="calibration_threshold_reason").input("back to every flag").run()
    at.button(key="calibration_default").click().run()
    _ok(at)
    at.switch_page("app_pages/review.py").run()
    assert _in_queue(at) == everything
    assert not any("review threshold" in c.value for c in at.caption)


def test_a_threshold_below_every_unsupported_statement_cannot_be_applied(
    fresh_db: Seeded, use_db
) -> None:
    use_db(fresh_db)
    at = open_page("calibration")
    at.slider(key="calibration_threshold").set_value(0.1).run()
    at.text_input(key="calibration_threshold_reason").input("flag more").run()
    assert at.button(key="calibration_apply").disabled
    assert any("lowest threshold that can be applied is 0.25" in w.value for w in at.warning)


def test_only_an_admin_applies_a_threshold(fresh_db: Seeded, use_db, users_file) -> None:
    use_db(fresh_db)
    at = open_page()
    login(at, "andy")  # an analyst sees the calibration page, not the apply button
    at.switch_page("app_pages/calibration.py").run()
    _ok(at)
    assert not [b for b in at.button if b.key == "calibration_apply"]
    assert any("Only an admin applies a threshold" in c.value for c in at.caption)
