"""Settings: defaults from the specifications, environment overrides, clear errors."""

from __future__ import annotations

import pytest

from core.config import Settings, SettingsError, get_settings, load_settings


def test_defaults_follow_the_specifications() -> None:
    s = load_settings()
    assert s.database_url == "sqlite:///groundwatch.db"
    assert s.enable_conversation_history
    assert s.enable_grounding_verification
    assert s.enable_consistency_checking
    assert s.enable_confidence_calibration
    assert s.enable_hallucination_detection is False
    assert (s.grounding_score_threshold, s.consistency_score_threshold) == (0.7, 0.8)
    assert (s.confidence_score_threshold, s.hallucination_risk_threshold) == (0.6, 0.3)
    assert s.hallucination_detection_samples == 3
    assert s.hallucination_detection_temp_range == 0.1
    assert s.evidence_quote_validation_enabled is True
    assert s.evidence_quote_validation_mode == "substring"
    assert s.evidence_quote_fuzzy_threshold == 0.85
    assert s.evidence_quote_fail_on_all_rejected is False
    assert s.evidence_quote_log_rejections is True
    assert s.nli_model is None
    assert s.llm_base_url is None


def test_environment_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROUNDWATCH_DATABASE_URL", "postgresql://u@h:5432/db")
    monkeypatch.setenv("GROUNDWATCH_ENABLE_HALLUCINATION_DETECTION", "true")
    monkeypatch.setenv("GROUNDWATCH_EVIDENCE_QUOTE_VALIDATION_MODE", "fuzzy")
    monkeypatch.setenv("GROUNDWATCH_EVIDENCE_QUOTE_FUZZY_THRESHOLD", "0.9")
    monkeypatch.setenv("GROUNDWATCH_LLM_BASE_URL", "http://127.0.0.1:8080/v1")
    s = get_settings()
    assert s.database_url.startswith("postgresql://")
    assert s.enable_hallucination_detection is True
    assert s.evidence_quote_validation_mode == "fuzzy"
    assert s.evidence_quote_fuzzy_threshold == 0.9
    assert s.llm_base_url == "http://127.0.0.1:8080/v1"


@pytest.mark.parametrize(
    ("var", "value", "expected"),
    [
        ("GROUNDWATCH_EVIDENCE_QUOTE_VALIDATION_MODE", "semantic", "'substring' or 'fuzzy'"),
        ("GROUNDWATCH_EVIDENCE_QUOTE_FUZZY_THRESHOLD", "0.3", "greater than or equal to 0.5"),
        ("GROUNDWATCH_GROUNDING_SCORE_THRESHOLD", "1.5", "less than or equal to 1"),
        ("GROUNDWATCH_ENABLE_GROUNDING_VERIFICATION", "perhaps", "boolean"),
        ("GROUNDWATCH_DATABASE_URL", "mysql://x", "sqlite:// or postgresql://"),
        ("GROUNDWATCH_HALLUCINATION_DETECTION_SAMPLES", "zero", "integer"),
    ],
)
def test_invalid_values_name_the_variable(
    monkeypatch: pytest.MonkeyPatch, var: str, value: str, expected: str
) -> None:
    monkeypatch.setenv(var, value)
    with pytest.raises(SettingsError) as info:
        load_settings()
    message = str(info.value)
    assert var in message
    assert expected in message
    assert "\n" not in message


def test_settings_are_frozen() -> None:
    s = Settings()
    with pytest.raises(ValueError, match="frozen"):
        s.grounding_score_threshold = 0.1  # type: ignore[misc]
