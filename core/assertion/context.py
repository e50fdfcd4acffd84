"""ConText categories: historical, hypothetical and family, and extraction's modifiers.

A trigger phrase (the JSON's ``context``: "history of", "consider", "mother", "allergic
to", "stopped") reaches forward, backward or both to a mention unless a break ("but", "due
to") or another category's trigger stands between them. Negation is not one of them: it is
the token reading's (:mod:`core.assertion.reading`), whose cues extraction adds as
:data:`NEGATION_CUE` triggers so that they end the other categories' scopes as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from core.assertion.rules import Direction, load_rules

Assertion = Literal["affirmed", "negated", "historical", "hypothetical", "family"]

ASSERTION_CATEGORIES = frozenset({"historical", "hypothetical", "family"})
"""The ConText categories that decide a mention's assertion (negation is the token
reading's: :func:`read_negation`)."""
NEGATION_CUE = "negated"
"""The category of a trigger standing for a cue of the token reading: it decides nothing
itself, but ends the scope of the other assertion categories, as each ends another's
("the parents deny any vomiting" is no family history)."""
_BLOCKING = ASSERTION_CATEGORIES | {NEGATION_CUE}
ACTION_CATEGORIES = frozenset({"started", "stopped", "increased", "decreased", "continued"})
"""Medication actions, read after a drug's name as after its trigger ("was stopped")."""
BREAKS = frozenset({"terminate", "pseudo"})
"""Categories that end every scope ("but", "due to") or only look like a trigger."""
_PRIORITY: tuple[Assertion, ...] = ("family", "negated", "hypothetical", "historical")


@dataclass(frozen=True, slots=True)
class Trigger:
    """A ConText phrase found in a sentence, at token indices ``[start, end)``."""

    category: str
    forward: bool
    backward: bool
    start: int
    end: int
    post: bool = False  # an action verb after an auxiliary ("was stopped"): acts backwards
    plural: bool = False  # "were stopped": may cover a list of drugs before it


def context_trigger(key: str) -> tuple[str, Direction] | None:
    """The (category, direction) of a phrase key (:func:`phrase_key`), if it is a trigger."""
    return load_rules().context.get(key)


def _scope_clear(
    start: int, end: int, trigger: Trigger, triggers: Sequence[Trigger], categories: set[str]
) -> bool:
    """True if no break or other modifier stands between ``trigger`` and the target."""
    lo, hi = (trigger.end, start) if trigger.end <= start else (end, trigger.start)
    for other in triggers:
        if other is trigger or not (lo <= other.start < hi):
            continue
        if other.category in BREAKS:
            return False
        if "allergy" in categories and other.category in ACTION_CATEGORIES:
            return False
        if other.category in _BLOCKING and other.category not in categories:
            return False
        if other.category in categories and other.category != trigger.category:
            return False
    return True


def _faces(start: int, end: int, trigger: Trigger) -> bool:
    return (trigger.end <= start and trigger.forward) or (trigger.start >= end and trigger.backward)


def reaching(
    start: int, end: int, triggers: Sequence[Trigger], categories: set[str]
) -> Trigger | None:
    """The first trigger of ``categories`` whose scope reaches the target at token indices
    ``[start, end)``: it faces the target and nothing between them ends its scope."""
    for trigger in triggers:
        if (
            trigger.category in categories
            and _faces(start, end, trigger)
            and _scope_clear(start, end, trigger, triggers, categories)
        ):
            return trigger
    return None


def mention_assertion(
    start: int, end: int, triggers: Sequence[Trigger], *, negated: bool
) -> Assertion:
    """The assertion of a mention at token indices ``[start, end)``: ``negated`` as the
    token reading has it, and the ConText categories whose triggers reach it; family before
    negated before hypothetical before historical."""
    found: set[Assertion] = {"negated"} if negated else set()
    for trigger in triggers:
        if (
            trigger.category in ASSERTION_CATEGORIES
            and _faces(start, end, trigger)
            and _scope_clear(start, end, trigger, triggers, {trigger.category})
        ):
            found.add(trigger.category)  # type: ignore[arg-type]
    return next((a for a in _PRIORITY if a in found), "affirmed")
