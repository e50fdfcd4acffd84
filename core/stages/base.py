"""What a pipeline stage is: the record being checked (:class:`Work`), what a stage may ask of
the pipeline (:class:`PipelineContext`), and the :class:`Stage` protocol itself."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from core.checks import CheckStatus
from core.records import ConversationRecord

if TYPE_CHECKING:
    from core.backends.llm import LLMClient
    from core.config import Settings


@dataclass(slots=True)
class Work:
    """One record on its way through the pipeline: each stage records its status in
    ``checks`` (under its name, and ``name.tier`` for tiers), its warnings, and its result
    under its name in ``results``."""

    record: ConversationRecord
    started: float
    checks: dict[str, CheckStatus] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    results: dict[str, Any] = field(default_factory=dict)
    sampled: bool = True  # False: outside the check sample rate, every check skipped

    @property
    def grounding(self) -> Any:
        """The :class:`~core.grounding.GroundingResult`, or ``None`` when it did not run."""
        return self.results.get("grounding")

    @property
    def evidence(self) -> Any:
        """The evidence-quote result, or ``None``."""
        return self.results.get("evidence")

    @property
    def selfcheck(self) -> Any:
        """The SelfCheck result, or ``None``."""
        return self.results.get("selfcheck")

    @property
    def epistemic(self) -> Any:
        """The SPEC-16 claim audit, or ``None``."""
        return self.results.get("epistemic")


class PipelineContext(Protocol):
    """What a stage may use of the pipeline: the settings and the shared backends and
    detectors (loaded once per pipeline)."""

    settings: Settings

    @property
    def embedder(self) -> Any: ...

    @property
    def nli(self) -> Any: ...

    @property
    def learned(self) -> Any: ...

    @property
    def llm(self) -> LLMClient | None: ...

    @property
    def grounding_verifier(self) -> Any: ...

    @property
    def evidence_grounder(self) -> Any: ...


class Stage(Protocol):
    """A detector as the pipeline runs it, on a batch before anything is stored.

    ``run`` sets ``work.checks[name]`` for every record (``ok``, ``skipped``, ``unavailable``
    or ``failed`` with the reason: a stage never raises for one record) and stores its result
    in ``work.results[name]``; ``rows`` turns a record's result into the rows stored with the
    conversation (none when it stores nothing), text included: with conversation history off
    the pipeline clears every column tagged as patient text
    (:func:`core.storage.models.strip_patient_text`), so a stage never strips text itself.
    """

    name: str

    def run(self, pipeline: PipelineContext, works: Sequence[Work]) -> None: ...

    def rows(self, work: Work, conversation_id: str) -> list[Any]: ...


def unit_interval(value: Any) -> float | None:
    """``value`` clipped to [0, 1] (``None`` stays ``None``): what score columns accept."""
    if value is None:
        return None
    return min(1.0, max(0.0, float(value)))
