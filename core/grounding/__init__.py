"""Answer grounding: every statement of an answer checked against its sources, offline.

See :class:`GroundingVerifier` for the tiers and :mod:`core.grounding.facts` for the clinical
specifics (numbers, doses, negation, laterality, drugs, conditions) a match must agree on.
"""

from core.grounding.facts import FactCheck, compare_facts
from core.grounding.types import (
    SOURCE_TYPES,
    GroundingResult,
    Method,
    SourceChunk,
    SourceType,
    StatementGrounding,
    Status,
)
from core.grounding.verifier import TIERS, GroundingVerifier, tuned_parameters

__all__ = [
    "SOURCE_TYPES",
    "TIERS",
    "FactCheck",
    "GroundingResult",
    "GroundingVerifier",
    "Method",
    "SourceChunk",
    "SourceType",
    "StatementGrounding",
    "Status",
    "compare_facts",
    "tuned_parameters",
]
