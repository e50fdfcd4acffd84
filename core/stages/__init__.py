"""The pipeline's batch stages: one module per detector, registered in :data:`STAGES`.

Each stage runs its detector over a batch of records before anything is stored and turns a
record's result into the rows stored with it (:class:`~core.stages.base.Stage`). The pipeline
runs them in this order, then scores each record (consistency, confidence, risk, which need
the patient's stored history) and stores everything in one transaction. Adding a detector is
a module here and a line in :data:`STAGES` (plus a table and a migration when it stores rows;
ARCHITECTURE.md).
"""

from __future__ import annotations

from core.stages.base import PipelineContext, Stage, Work, unit_interval
from core.stages.epistemic import EpistemicStage
from core.stages.evidence import EvidenceStage, transcript_text
from core.stages.grounding import GroundingStage
from core.stages.selfcheck import SelfCheckStage

STAGES: tuple[type[Stage], ...] = (EvidenceStage, GroundingStage, SelfCheckStage, EpistemicStage)

__all__ = [
    "STAGES",
    "EpistemicStage",
    "EvidenceStage",
    "GroundingStage",
    "PipelineContext",
    "SelfCheckStage",
    "Stage",
    "Work",
    "transcript_text",
    "unit_interval",
]
