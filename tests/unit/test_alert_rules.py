"""The alerts file's validation (errors name the rule and the field), the rules' decisions on
plain data, the webhook body (ids, counts and scores only), its signature and the backoff."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from core.alerts import evaluate
from core.alerts.rules import (
    AlertRulesError,
    CalibrationDriftRule,
    ContradictionRule,
    FlaggedShareRule,
    ScoreBelowRule,
    Webhook,
    load_config,
    parse_config,
    resolve_secret,
)
from core.alerts.webhooks import payload, sign, verify
from core.storage.alerts import AnswerFacts, Verdict, WindowCounts
from core.storage.models import AlertFiring

EXAMPLE = Path(__file__).resolve().parents[2] / "alerts.example.yaml"
AT = datetime(2026, 1, 5, 9, tzinfo=UTC)


def doc(*rules: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"rules": list(rules), **extra}


SHARE = {"name": "share", "kind": "flagged_share", "window": "1h", "threshold": 0.3}


# --------------------------------------------------------------------------- validation


def test_the_example_file_is_valid_and_uses_every_kind() -> None:
    config = load_config(EXAMPLE)
    assert {r.kind for r in config.rules} == {
        "flagged_share",
        "contradiction",
        "score_below",
        "calibration_drift",
    }
    assert config.webhooks
    assert config.dashboard_url


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        (
            {**SHARE, "threshold": 1.5},
            "rule 'share' (rules[0]), field threshold: Input should be less than 1",
        ),
        ({**SHARE, "window": "soon"}, "rule 'share' (rules[0]), field window: expected a duration"),
        ({**SHARE, "window": "30s"}, "field window: must lie between 1m and 365d"),
        ({**SHARE, "colour": "red"}, "rule 'share' (rules[0]), field colour: Extra inputs"),
        ({"name": "x", "kind": "louder"}, "rule 'x' (rules[0]): unknown kind; allowed: flagged"),
        ({"name": "x"}, "rule 'x' (rules[0]): kind is missing"),
        (
            {"name": "low", "kind": "score_below", "score": "risk", "threshold": 0.5},
            "rule 'low' (rules[0]), field score: Input should be 'grounding' or 'consistency'",
        ),
        (
            {"name": "drift", "kind": "calibration_drift", "verdicts": 3, "threshold": 0.1},
            "rule 'drift' (rules[0]), field verdicts: Input should be greater than or equal to 10",
        ),
        ({"name": "bad name!", "kind": "contradiction"}, "rules[0]), field name: String should"),
    ],
)
def test_an_invalid_rule_is_named_with_its_field(rule: dict[str, Any], expected: str) -> None:
    with pytest.raises(AlertRulesError) as err:
        parse_config(doc(rule), source="alerts.yaml")
    assert str(err.value).startswith("alerts.yaml: ")
    assert expected in str(err.value)


def test_names_must_be_unique_and_notify_must_name_a_webhook() -> None:
    twice = doc({"name": "a", "kind": "contradiction"}, {"name": "a", "kind": "contradiction"})
    with pytest.raises(AlertRulesError, match="rule 'a': the name is used twice"):
        parse_config(twice)
    orphan = doc({"name": "a", "kind": "contradiction", "notify": ["pager"]})
    with pytest.raises(AlertRulesError, match="rule 'a', field notify: no webhook named 'pager'"):
        parse_config(orphan)
    with pytest.raises(AlertRulesError, match="field rules: Tuple should have at least 1 item"):
        parse_config({"rules": []})
    with pytest.raises(AlertRulesError, match="expected a mapping"):
        parse_config(["rules"])


def test_a_webhook_is_named_in_its_errors() -> None:
    hooks = [{"name": "pager", "url": "ftp://x", "secret": "s" * 20}]
    with pytest.raises(AlertRulesError, match=r"webhook 'pager' \(webhooks\[0\]\), field url"):
        parse_config(doc({"name": "a", "kind": "contradiction"}, webhooks=hooks))
    both = [{"name": "pager", "url": "https://x", "secret": "s" * 20, "secret_env": "X"}]
    with pytest.raises(AlertRulesError, match="give secret or secret_env, not both"):
        parse_config(doc({"name": "a", "kind": "contradiction"}, webhooks=both))


def test_a_file_that_is_not_yaml_or_missing_says_so(tmp_path: Path) -> None:
    bad = tmp_path / "a.yaml"
    bad.write_text("rules: [\n  - {", encoding="utf-8")
    with pytest.raises(AlertRulesError, match=r"not valid YAML at line \d+"):
        load_config(bad)
    with pytest.raises(AlertRulesError, match="cannot be read"):
        load_config(tmp_path / "missing.yaml")


def test_the_secret_comes_from_the_hook_its_variable_or_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    own = Webhook(name="a", url="https://x", secret="s" * 16)
    assert resolve_secret(own, "d" * 16) == "s" * 16
    named = Webhook(name="b", url="https://x", secret_env="HOOK_SECRET")
    with pytest.raises(AlertRulesError, match="variable HOOK_SECRET is unset"):
        resolve_secret(named, None)
    monkeypatch.setenv("HOOK_SECRET", "e" * 16)
    assert resolve_secret(named, None) == "e" * 16
    bare = Webhook(name="c", url="https://x")
    assert resolve_secret(bare, "d" * 16) == "d" * 16
    with pytest.raises(AlertRulesError, match="webhook 'c': no secret"):
        resolve_secret(bare, None)


def test_backoff_doubles_and_is_bounded() -> None:
    hook = Webhook(name="a", url="https://x", max_attempts=6, backoff_s=1.0, max_backoff_s=5.0)
    assert hook.delays() == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert Webhook(name="a", url="https://x", max_attempts=1).delays() == []
    with pytest.raises(ValueError, match="less than or equal to 10"):
        Webhook(name="a", url="https://x", max_attempts=11)


# --------------------------------------------------------------------------- decisions


def facts(**over: Any) -> AnswerFacts:
    base: dict[str, Any] = {
        "conversation_id": "c-1",
        "external_id": "ext-1",
        "patient_id": "p-1",
        "model": "m",
        "timestamp": AT,
        "grounding_score": 0.9,
        "consistency_score": 0.9,
        "is_flagged": False,
        "contradicted_statements": 0,
        "contradicted_earlier": 0,
    }
    base.update(over)
    return AnswerFacts(**base)


def test_flagged_share_needs_enough_answers_and_a_share_above_the_threshold() -> None:
    rule = FlaggedShareRule(**{**SHARE, "min_answers": 10})  # type: ignore[arg-type]
    assert rule.window == timedelta(hours=1)
    few = evaluate.flagged_share(rule, "m", WindowCounts(9, 9, ()))
    assert few.status == "not_evaluated"
    assert "9 answers" in few.reason
    at = evaluate.flagged_share(rule, "m", WindowCounts(10, 3, ("a", "b", "c")))
    assert at.status == "clear"  # 0.3 is not above 0.3
    above = evaluate.flagged_share(rule, "m", WindowCounts(10, 4, ("a", "b", "c", "d")))
    assert above.status == "firing"
    assert above.firing is not None
    assert above.condition_key == "share|model:m"
    assert (above.firing.value, above.firing.counts["window_s"]) == (0.4, 3600)
    assert above.firing.conversation_ids == ("a", "b", "c", "d")


def test_contradiction_counts_the_chosen_sources_per_patient() -> None:
    rule = ContradictionRule(name="c", kind="contradiction")
    assert evaluate.contradiction(rule, facts()).status == "clear"
    found = evaluate.contradiction(rule, facts(contradicted_earlier=2))
    assert found.status == "firing"
    assert found.condition_key == "c|patient:p-1"
    assert found.firing is not None
    assert found.firing.patient_id == "p-1"
    only_grounding = ContradictionRule(name="c", kind="contradiction", source="grounding")
    assert evaluate.contradiction(only_grounding, facts(contradicted_earlier=2)).status == "clear"
    assert evaluate.contradiction(only_grounding, facts(contradicted_statements=1)).firing


def test_score_below_is_strict_and_not_evaluated_without_a_score() -> None:
    rule = ScoreBelowRule(name="low", kind="score_below", score="consistency", threshold=0.5)
    assert evaluate.score_below(rule, facts(consistency_score=0.5)).status == "clear"
    low = evaluate.score_below(rule, facts(consistency_score=0.2))
    assert low.status == "firing"
    assert low.firing is not None
    assert low.firing.value == 0.2
    missing = evaluate.score_below(rule, facts(consistency_score=None))
    assert missing.status == "not_evaluated"
    assert "no consistency score" in missing.reason
    per_model = ScoreBelowRule(
        name="low", kind="score_below", score="grounding", threshold=0.5, per="model"
    )
    found = evaluate.score_below(per_model, facts(grounding_score=0.1))
    assert found.condition_key == "low|model:m"
    assert found.firing is not None
    assert found.firing.patient_id is None


def test_calibration_drift_uses_the_most_recent_verdicts_only() -> None:
    rule = CalibrationDriftRule(
        name="drift", kind="calibration_drift", verdicts=10, threshold=0.2, bins=10
    )

    def v(risk: float, confirmed: bool, i: int) -> Verdict:
        return Verdict(risk, confirmed, f"c-{i}", AT - timedelta(minutes=i))

    few = evaluate.calibration_drift(rule, [v(0.9, True, i) for i in range(9)])
    assert few.status == "not_evaluated"
    assert "9 verdicts" in few.reason
    calibrated = [v(0.95, True, i) for i in range(10)]
    assert evaluate.calibration_drift(rule, calibrated).status == "clear"
    # the ten most recent are false alarms at risk 0.9 (ECE 0.9); older ones do not count
    drifted = [v(0.9, False, i) for i in range(10)] + [v(0.95, True, 10 + i) for i in range(50)]
    found = evaluate.calibration_drift(rule, drifted)
    assert found.status == "firing"
    assert found.firing is not None
    assert found.firing.value == pytest.approx(0.9)
    assert found.firing.counts == {"verdicts": 10, "confirmed": 0, "bins": 10}
    assert found.condition_key == "drift|service"


# --------------------------------------------------------------------------- the body


def test_the_body_carries_ids_counts_and_links_and_its_signature_checks() -> None:
    firing = AlertFiring(
        id=7,
        rule="contradiction",
        kind="contradiction",
        condition_key="contradiction|patient:p-1",
        state="open",
        model="m",
        patient_id="p-1",
        value=1.0,
        counts={"contradicted_statements": 0, "contradicted_earlier": 1},
        conversation_ids=["c-1", "c-2"],
        occurrences=1,
        first_at=AT,
        last_at=AT,
    )
    body = payload(firing, external_ids={"c-1": "ext-1"}, dashboard_url="https://gw.example/")
    data = json.loads(body)
    assert set(data) == {
        "event",
        "firing_id",
        "rule",
        "kind",
        "condition",
        "state",
        "model",
        "patient_id",
        "value",
        "threshold",
        "counts",
        "occurrences",
        "first_at",
        "last_at",
        "answers",
        "link",
    }
    assert data["answers"][0] == {
        "id": "ext-1",
        "conversation_id": "c-1",
        "link": "https://gw.example/report?id=c-1",
    }
    assert data["answers"][1]["id"] is None
    assert data["link"] == "https://gw.example/alerts?alert=7"
    assert data["first_at"] == "2026-01-05T09:00:00+00:00"
    secret = "k" * 32
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    assert sign(body, secret) == f"sha256={expected}"
    assert verify(body, secret, f"sha256={expected}")
    assert not verify(body + b" ", secret, f"sha256={expected}")
    assert not verify(body, "other" * 8, f"sha256={expected}")
    assert not verify(body, secret, None)
    no_link = json.loads(payload(firing, external_ids={}, dashboard_url=None))
    assert no_link["link"] is None
    assert no_link["answers"][0]["link"] is None
