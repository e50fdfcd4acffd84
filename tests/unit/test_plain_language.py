"""Plain words for the report and calibration pages (dashboard/plain.py): pure functions."""

from __future__ import annotations

import pytest

from dashboard import plain

NLI_NOTICE = "inference tier unavailable (GROUNDWATCH_NLI_MODEL is not set)"
LOW_GROUNDING = "grounding score 0.33 is below the threshold 0.70"


# --------------------------------------------------------------------------- words


@pytest.mark.parametrize(
    ("method", "words"),
    [
        ("exact_match", "matched word for word"),
        ("semantic_match", "matched by meaning"),
        ("inference", "judged by the verification model"),
        ("unsupported", "no matching passage found"),
        ("some_new_tier", "some new tier"),
        (None, "not recorded"),
    ],
)
def test_methods_read_as_words(method, words):
    assert plain.method_words(method) == words


def test_the_method_tooltip_keeps_the_stored_value():
    assert "semantic_match" in plain.method_help("semantic_match")


def test_a_table_leaves_out_columns_of_nothing_and_shows_gaps_as_a_dash():
    rows = [
        {"claim": "A.", "evidence_support": 0.123, "gap_bits": None, "flagged": True,
         "gap_type": "phantom_citation", "evidence_ids": []},
        {"claim": "B.", "evidence_support": None, "gap_bits": None, "flagged": False,
         "gap_type": None, "evidence_ids": ["s-1", "s-2"]},
    ]  # fmt: skip
    table, tips = plain.plain_table(rows, plain.CLAIM_COLUMNS)
    assert list(table[0]) == ["Claim", "Flagged", "Kind of gap", "Support", "Evidence cited"]
    assert "Gap (bits)" not in table[0]  # None in every row
    assert table[0]["Support"] == "0.12"
    assert table[1]["Support"] == plain.EMPTY
    assert (table[0]["Flagged"], table[1]["Flagged"]) == ("yes", "no")
    assert table[0]["Kind of gap"] == "phantom citation"
    assert table[1]["Evidence cited"] == "s-1, s-2"
    assert table[0]["Evidence cited"] == plain.EMPTY
    assert set(tips) == set(table[0])
    assert all(tips.values())


def test_record_text_in_a_table_is_kept_as_it_is():
    table, _ = plain.plain_table([{"claim": "takes_metformin"}], {"claim": ("Claim", "")})
    assert table[0]["Claim"] == "takes metformin"  # a one-word label reads with spaces
    table, _ = plain.plain_table([{"claim": "Takes 10 mg_x."}], {"claim": ("Claim", "")})
    assert table[0]["Claim"] == "Takes 10 mg_x."


# --------------------------------------------------------------------------- setup notes


def test_setup_notices_are_kept_apart_from_findings():
    warnings = [
        LOW_GROUNDING,
        NLI_NOTICE,
        "statement #2 contradicts source note-1: dose differs: 20 mg vs 10 mg",
        "llm_judge: 3 of 5 calls failed",
        "semantic tier failed (RuntimeError)",
        "LLM claim extraction requested but no LLM configured",
        "1 of 3 statements are unsupported by the sources",
    ]
    checks = {
        "grounding": {"status": "ok", "reason": None},
        "grounding.inference": {"status": "unavailable", "reason": "GROUNDWATCH_NLI_MODEL"},
        "selfcheck": {"status": "skipped", "reason": "no samples"},
        "epistemic": {"status": "failed", "reason": "ValueError"},
    }
    n = plain.split_notices(warnings, checks)
    assert n.findings == (warnings[0], warnings[2], warnings[6])
    assert n.setup == (warnings[1], warnings[3], warnings[4], warnings[5])
    assert [c for c, _, _ in n.not_run] == ["grounding.inference", "selfcheck", "epistemic"]
    assert n.label == "Setup notes: 1 check failed, 2 checks did not run"


def test_the_setup_label_when_every_check_ran():
    ok = {"grounding": {"status": "ok", "reason": None}}
    assert plain.split_notices([], ok).label == "Setup notes: every check ran"
    assert plain.split_notices([NLI_NOTICE], ok).label == "Setup notes: every check ran (1 note)"


# --------------------------------------------------------------------------- risk level


def _st(index, status, severity=None, kind=None):
    return {"index": index, "status": status, "severity": severity, "kind": kind}


def test_a_critical_flag_raises_the_level_shown_to_high_with_its_reason():
    statements = [_st(0, "grounded"), _st(1, "unsupported", "high", "drug"),
                  _st(2, "unsupported", "critical", "allergy")]  # fmt: skip
    r = plain.shown_risk("medium", statements)
    assert (r.level, r.stored, r.raised) == ("high", "medium", True)
    assert r.reason == "a critical finding: allergy (statement #3)"


def test_a_contradiction_raises_the_level_shown_to_high():
    r = plain.shown_risk("low", [_st(0, "contradicted", "medium", "number")])
    assert (r.level, r.reason) == ("high", "a contradiction: statement #1 contradicts its source")
    earlier = plain.shown_risk("very_low", [], [{"severity": "medium"}])
    assert earlier.level == "high"
    assert earlier.reason == "a contradiction with an earlier answer about the same patient"
    critical = plain.shown_risk("low", [_st(0, "contradicted")], [{"severity": "critical"}])
    assert critical.reason == "a critical finding: contradicts an earlier answer"


def test_a_critical_finding_comes_before_a_contradiction():
    r = plain.shown_risk("low", [_st(0, "contradicted", "high"), _st(1, "unsupported", "critical")])
    assert r.reason == "a critical finding: unclassified (statement #2)"


@pytest.mark.parametrize("stored", ["high", "very_high"])
def test_a_level_already_high_is_shown_as_stored(stored):
    r = plain.shown_risk(stored, [_st(0, "unsupported", "critical", "allergy")])
    assert (r.level, r.raised) == (stored, False)


def test_without_a_critical_finding_or_contradiction_the_stored_level_stands():
    r = plain.shown_risk("low", [_st(0, "grounded", "critical"), _st(1, "unsupported", "high")])
    assert (r.level, r.reason) == ("low", None)
    assert plain.shown_risk(None, []).level is None
    assert plain.shown_risk(None, [_st(0, "contradicted")]).level == "high"


def test_risk_levels_read_as_words():
    assert plain.risk_words("very_high") == "very high"
    assert plain.risk_words(None) == "not assessed"


# --------------------------------------------------------------------------- calibration


def test_too_few_verdicts_are_warned_about():
    text = plain.few_verdicts_warning(12)
    assert text is not None
    assert "Only 12 verdicts" in text
    assert f"fewer than {plain.MIN_CALIBRATION_VERDICTS}" in text
    assert plain.few_verdicts_warning(plain.MIN_CALIBRATION_VERDICTS - 1) is not None
    assert plain.few_verdicts_warning(plain.MIN_CALIBRATION_VERDICTS) is None
    assert plain.few_verdicts_warning(1, minimum=1) is None


def test_every_calibration_metric_has_one_sentence():
    for key in ("ece", "brier", "aurc", "flag_rate", "false_alarm_rate", "reliability"):
        assert plain.METRIC_HELP[key].count(". ") == 0  # one sentence
        assert plain.METRIC_HELP[key].endswith(".")


HIST = [0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 3, 2]  # 20 bins over [0, 1]
REVIEWED = [
    {"risk": 0.32, "verdict": "false_alarm"},
    {"risk": 0.52, "verdict": "false_alarm"},
    {"risk": 0.55, "verdict": "confirmed"},
    {"risk": 0.95, "verdict": "confirmed"},
    {"risk": 0.40, "verdict": "unsure"},  # left out
    {"risk": None, "verdict": "confirmed"},  # left out
]


def test_raising_the_threshold_counts_the_flags_that_go():
    c = plain.threshold_change(HIST, REVIEWED, current=0.3, chosen=0.9)
    assert (c.flagged_now, c.flagged_then, c.delta, c.approximate) == (20, 5, -15, False)
    assert (c.false_alarms_gone, c.confirmed_gone) == (2, 1)
    assert (c.false_alarms_come, c.confirmed_come) == (0, 0)
    text = plain.describe_threshold_change(c)
    assert text.startswith("Raising the threshold from 0.30 to 0.90 would take 15 flags away")
    assert "2 false alarms would go" in text
    assert "1 confirmed hallucination would no longer be flagged" in text


def test_lowering_the_threshold_counts_the_flags_that_come():
    c = plain.threshold_change(HIST, REVIEWED, current=0.5, chosen=0.3)
    assert (c.flagged_now, c.flagged_then, c.delta) == (10, 20, 10)
    assert (c.false_alarms_come, c.confirmed_come) == (1, 0)
    text = plain.describe_threshold_change(c)
    assert text.startswith("Lowering the threshold from 0.50 to 0.30 would add 10 flags")
    assert "0 confirmed hallucinations and 1 false alarm would be flagged" in text


def test_the_threshold_in_force_changes_nothing():
    c = plain.threshold_change(HIST, REVIEWED, current=0.3, chosen=0.3)
    assert c.delta == 0
    text = plain.describe_threshold_change(c)
    assert text == "This is the threshold in force (0.30): 20 statements are at or above it."


def test_a_threshold_between_bins_is_counted_about():
    c = plain.threshold_change(HIST, [], current=0.33, chosen=0.6)
    assert c.approximate
    assert "about 5 flags away" in plain.describe_threshold_change(c)
    assert "No reviewed statement would change." in plain.describe_threshold_change(c)


def test_a_move_within_one_bin_changes_no_flag():
    c = plain.threshold_change(HIST, [], current=0.3, chosen=0.25)
    text = plain.describe_threshold_change(c)
    assert text == (
        "Lowering the threshold from 0.30 to 0.25 would change no flag (20 flags either way)."
        " No reviewed statement would change."
    )
