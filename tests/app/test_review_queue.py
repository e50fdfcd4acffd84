"""AppTests of review at speed: the queue sorted by severity then risk, its filters with the
count each option leaves, verdict buttons and the reviewer's name at the top, undo, keyboard
shortcuts, and verdicts on the report page (real pages on a real SQLite database)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select
from streamlit.testing.v1 import AppTest

from core.storage import models as m
from core.storage import repo
from core.storage.db import get_engine, read_session, upgrade_to_head, write_session
from tests.app.seed import APP, DAYS, END, Seeded, login, open_page

# (conversation, patient, model, statement, status, kind, severity, risk)
ITEMS = [
    ("q-1", "p-1", "model-a", "Number critical.", "contradicted", "number", "critical", 0.6),
    ("q-1", "p-1", "model-a", "Invented low.", "unsupported", "invented", "low", 0.95),
    ("q-2", "p-2", "model-b", "Side high.", "contradicted", "side", "high", 0.7),
    ("q-2", "p-2", "model-b", "Allergy critical.", "contradicted", "allergy", "critical", 0.9),
    ("q-3", "p-1", "model-b", "Condition medium.", "unsupported", "condition", "medium", 0.8),
    ("q-3", "p-1", "model-b", "Never classified.", "unsupported", None, None, 0.99),
]
ORDER = [
    "Allergy critical.",
    "Number critical.",
    "Side high.",
    "Condition medium.",
    "Invented low.",
    "Never classified.",
]


@pytest.fixture
def queue_db(tmp_path: Path) -> Seeded:
    """Three answers, six flagged statements of every severity (one unclassified)."""
    url = f"sqlite:///{tmp_path / 'queue.db'}"
    upgrade_to_head(url)
    at = datetime.combine(END, datetime.min.time(), tzinfo=UTC) - timedelta(days=2)
    convs: dict[str, m.Conversation] = {}
    statements: dict[str, list[m.StatementCheck]] = {}
    for ext, patient, model, text, status, kind, severity, risk in ITEMS:
        answer = " ".join(item[3] for item in ITEMS if item[0] == ext)
        convs.setdefault(
            ext,
            m.Conversation(
                id="",
                external_id=ext,
                patient_id=patient,
                query="What is the plan?",
                query_timestamp=at,
                answer=answer,
                model_used=model,
                sources=[{"id": "note-1", "text": "A note.", "type": "note"}],
                grounding_score=0.0,
                hallucination_risk=0.8,
                is_flagged=True,
                content_hash=ext,
            ),
        )
        start = answer.index(text)
        statements.setdefault(ext, []).append(
            m.StatementCheck(
                conversation_id="",
                statement=text,
                statement_index=len(statements.get(ext, [])),
                start=start,
                end=start + len(text),
                is_grounded=False,
                status=status,
                verification_method="unsupported",
                grounding_confidence=0.8,
                risk=risk,
                kind=kind,
                severity=severity,
            )
        )
    with write_session(get_engine(url)) as s:
        for ext, conv in convs.items():
            repo.store_conversation(
                session=s,
                bundle=repo.ConversationBundle(conversation=conv, statements=statements[ext]),
            )
    return Seeded(url, len(convs), {}, len(ITEMS), "")


def _in_queue(at: AppTest) -> int:
    return int(next(x for x in at.metric if x.label == "In queue").value.replace(",", ""))


def _statement_shown(at: AppTest, url: str) -> str:
    """The statement of the open item (its note field is keyed by its statement check)."""
    sid = int(at.text_area[0].key.removeprefix("review_note_"))
    with read_session(get_engine(url)) as s:
        sc = s.get(m.StatementCheck, sid)
    assert sc is not None
    return str(sc.statement)


def _options(at: AppTest, key: str) -> list[str]:
    return list(at.multiselect(key=key).options)


def _ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def test_the_queue_opens_on_the_most_severe_then_riskiest(queue_db, use_db) -> None:
    use_db(queue_db)
    at = open_page("review")
    _ok(at)
    assert _in_queue(at) == len(ITEMS)
    seen = [_statement_shown(at, queue_db.url)]
    for _ in range(len(ITEMS) - 1):
        at.button(key="review_next").click().run()
        _ok(at)
        seen.append(_statement_shown(at, queue_db.url))
    assert seen == ORDER
    assert "severity: unclassified" in "\n".join(str(h.proto.body) for h in at.get("html"))


def test_each_filter_shows_the_items_it_leaves(queue_db, use_db) -> None:
    use_db(queue_db)
    at = open_page("review")
    _ok(at)
    assert _options(at, "review_severities") == [
        "critical (2)",
        "high (1)",
        "medium (1)",
        "low (1)",
        "unclassified (1)",
    ]
    assert "dose / number (1)" in _options(at, "review_kinds")
    assert _options(at, "review_models") == ["model-a (2)", "model-b (4)"]
    assert _options(at, "review_patients") == ["p-1 (4)", "p-2 (2)"]

    at.multiselect(key="review_severities").set_value(["critical"]).run()
    _ok(at)
    assert _in_queue(at) == 2
    assert _statement_shown(at, queue_db.url) == "Allergy critical."
    # the other filters count under the chosen severity; the severity filter keeps its counts
    assert _options(at, "review_kinds") == ["dose / number (1)", "allergy (1)"]
    assert _options(at, "review_models") == ["model-a (1)", "model-b (1)"]
    assert _options(at, "review_patients") == ["p-1 (1)", "p-2 (1)"]
    assert "high (1)" in _options(at, "review_severities")

    at.multiselect(key="review_models").set_value(["model-a"]).run()
    _ok(at)
    assert _in_queue(at) == 1
    assert _statement_shown(at, queue_db.url) == "Number critical."
    assert _options(at, "review_patients") == ["p-1 (1)"]

    at.multiselect(key="review_severities").set_value([]).run()
    at.multiselect(key="review_models").set_value([]).run()
    at.multiselect(key="review_kinds").set_value(["unclassified", "side"]).run()
    _ok(at)
    assert _in_queue(at) == 2
    assert _statement_shown(at, queue_db.url) == "Side high."
    at.multiselect(key="review_kinds").set_value([]).run()
    at.multiselect(key="review_patients").set_value(["p-2"]).run()
    _ok(at)
    assert _in_queue(at) == 2
    assert _options(at, "review_severities") == ["critical (1)", "high (1)"]


def test_the_name_is_asked_on_the_page_and_a_verdict_can_be_undone(queue_db, use_db) -> None:
    use_db(queue_db)
    at = open_page("review")
    _ok(at)
    assert at.button(key="review_confirmed").disabled
    assert at.button(key="review_undo_button").disabled
    # the shortcuts are Streamlit's own, shown on the buttons
    assert at.button(key="review_confirmed").proto.shortcut.upper() == "H"
    assert at.button(key="review_false_alarm").proto.shortcut.upper() == "F"
    assert at.button(key="review_next").proto.shortcut.upper() == "J"
    at.text_input(key="review_reviewer").input("Dr. Page").run()
    _ok(at)
    assert at.text_input(key="sidebar_reviewer").value == "Dr. Page"
    assert "review_reviewer" not in [t.key for t in at.text_input]  # asked once
    assert not at.button(key="review_confirmed").disabled

    at.button(key="review_confirmed").click().run()
    _ok(at)
    assert _in_queue(at) == len(ITEMS) - 1
    assert _statement_shown(at, queue_db.url) == "Number critical."
    engine = get_engine(queue_db.url)
    with read_session(engine) as s:
        reviews = list(s.execute(select(m.Review)).scalars())
    assert [(r.reviewer, r.verdict) for r in reviews] == [("Dr. Page", "confirmed")]

    at.button(key="review_undo_button").click().run()
    _ok(at)
    assert _in_queue(at) == len(ITEMS)
    assert (
        _statement_shown(at, queue_db.url) == "Allergy critical."
    )  # the item is back, and open again
    assert at.button(key="review_undo_button").disabled
    with read_session(engine) as s:
        assert not list(s.execute(select(m.Review)).scalars())
        actions = [
            (e.action, e.actor)
            for e in s.execute(select(m.AuditEvent).order_by(m.AuditEvent.id)).scalars()
            if e.action in ("review", "undo_review")
        ]
    assert actions == [
        ("review", "local-admin (Dr. Page)"),
        ("undo_review", "local-admin (Dr. Page)"),
    ]


def test_the_last_item_can_be_undone_from_an_empty_queue(queue_db, use_db) -> None:
    use_db(queue_db)
    at = open_page("review")
    at.multiselect(key="review_severities").set_value(["low"]).run()
    at.text_input(key="sidebar_reviewer").input("Dr. Last").run()
    at.button(key="review_unsure").click().run()
    _ok(at)
    assert any("Nothing left" in x.value for x in at.success)
    at.button(key="review_undo_button").click().run()
    _ok(at)
    assert _in_queue(at) == 1
    assert _statement_shown(at, queue_db.url) == "Invented low."


def _conversation_id(url: str, ext: str) -> str:
    with read_session(get_engine(url)) as s:
        conv = s.execute(select(m.Conversation).where(m.Conversation.external_id == ext)).scalar()
    assert conv is not None
    return conv.id


def _statement_id(url: str, text: str) -> int:
    with read_session(get_engine(url)) as s:
        sc = s.execute(select(m.StatementCheck).where(m.StatementCheck.statement == text)).scalar()
    assert sc is not None
    return int(sc.id or 0)


def test_verdicts_on_the_report_page(queue_db, use_db) -> None:
    use_db(queue_db)
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["sidebar_dates"] = (END - timedelta(days=DAYS - 1), END)
    at.session_state["report_conversation"] = _conversation_id(queue_db.url, "q-2")
    at.run()
    at.switch_page("app_pages/report.py").run()
    _ok(at)
    sid = _statement_id(queue_db.url, "Side high.")
    key = f"report_verdict_{sid}_false_alarm"
    assert at.button(key=key).disabled  # no name yet: asked on the page
    at.text_input(key="report_reviewer").input("Dr. Report").run()
    _ok(at)
    at.button(key=key).click().run()
    _ok(at)
    engine = get_engine(queue_db.url)
    with read_session(engine) as s:
        reviews = list(s.execute(select(m.Review)).scalars())
    assert [(r.statement_check_id, r.reviewer, r.verdict) for r in reviews] == [
        (sid, "Dr. Report", "false_alarm")
    ]
    assert any("verdict: false_alarm" in e.label for e in at.expander)
    at.button(key="report_undo_button").click().run()
    _ok(at)
    with read_session(engine) as s:
        assert not list(s.execute(select(m.Review)).scalars())


def test_report_verdicts_carry_the_login_and_obey_the_role(
    queue_db, use_db, users_file: Path
) -> None:
    use_db(queue_db)
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["sidebar_dates"] = (END - timedelta(days=DAYS - 1), END)
    at.session_state["report_conversation"] = _conversation_id(queue_db.url, "q-2")
    at.run()
    login(at, "rita")
    at.switch_page("app_pages/report.py").run()
    _ok(at)
    sid = _statement_id(queue_db.url, "Allergy critical.")
    assert "report_reviewer" not in [t.key for t in at.text_input]  # the login names her
    at.button(key=f"report_verdict_{sid}_confirmed").click().run()
    _ok(at)
    with read_session(get_engine(queue_db.url)) as s:
        review = s.execute(select(m.Review)).scalar()
    assert review is not None
    assert (review.reviewer, review.verdict) == ("rita", "confirmed")


def _walk(node: object, out: list[str]) -> list[str]:
    """Every element's key or text, in the order the page draws them."""
    for child in getattr(node, "children", {}).values():
        out.append(str(getattr(child, "key", None) or getattr(child, "value", "")))
        _walk(child, out)
    return out


def test_the_verdict_buttons_sit_beside_the_statement_above_answer_and_source(
    queue_db, use_db
) -> None:
    use_db(queue_db)
    at = open_page("review")
    _ok(at)
    drawn = _walk(at.main, [])
    answer_at = drawn.index("**The statement inside its answer**")
    for key in ("review_confirmed", "review_false_alarm", "review_unsure", "review_undo_button"):
        assert drawn.index(key) < answer_at
    assert drawn.index(f"review_note_{_statement_id(queue_db.url, 'Allergy critical.')}") < (
        answer_at
    )


def test_the_page_filters_offer_only_what_the_sidebar_keeps(queue_db, use_db) -> None:
    use_db(queue_db)
    at = open_page("review")
    at.multiselect(key="sidebar_models").set_value(["model-b"]).run()
    _ok(at)
    assert _in_queue(at) == 4
    assert _options(at, "review_models") == ["model-b (4)"]
    at.multiselect(key="sidebar_patients").set_value(["p-2"]).run()
    _ok(at)
    assert _in_queue(at) == 2
    assert _options(at, "review_patients") == ["p-2 (2)"]
    assert _options(at, "review_severities") == ["critical (1)", "high (1)"]


def test_a_queue_item_links_to_its_report_and_its_patient(queue_db, use_db) -> None:
    use_db(queue_db)
    at = open_page("review")
    _ok(at)
    links = {link.proto.page: link.proto.query_string for link in at.get("page_link")}
    # the first item is "Allergy critical." of answer q-2, patient p-2
    assert links["report"] == f"id={_conversation_id(queue_db.url, 'q-2')}"
    assert links["patients"] == "patient=p-2"
