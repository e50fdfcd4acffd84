"""Re-scoring history on Ray: the enabled checks run again over stored answers (or record
files), and the change in flags is recorded and reported.

A run is a Ray Data pipeline (:mod:`core.rescore.job`): the ids of the answers still to check,
read by an actor pool (one copy of the models per actor), whose results stream back to the
driver, which writes them in batches, one transaction each, at most once per run and answer
(:mod:`core.storage.rescore`). A run killed half-way and started again under the same id
checks only what has no result yet. Results are kept beside the stored scores, never over
them: every run is a version that can be shown alone or compared with another
(:mod:`core.rescore.report`). What a run covers and which version it is:
:mod:`core.rescore.selection`.
"""

from __future__ import annotations

from core.rescore.job import Scorer, new_run_id, rescore, start_ray
from core.rescore.report import (
    TOP_CHANGES,
    Change,
    ChangeSummary,
    RescoreReport,
    change_from_row,
    change_of,
    result_row,
    stored_report,
    summarise,
)
from core.rescore.selection import (
    RUN_ID,
    SCORING_SETTINGS,
    RescoreError,
    Selection,
    read_record_files,
    settings_hash,
    verifier_version,
)

__all__ = [
    "RUN_ID",
    "SCORING_SETTINGS",
    "TOP_CHANGES",
    "Change",
    "ChangeSummary",
    "RescoreError",
    "RescoreReport",
    "Scorer",
    "Selection",
    "change_from_row",
    "change_of",
    "new_run_id",
    "read_record_files",
    "rescore",
    "result_row",
    "settings_hash",
    "start_ray",
    "stored_report",
    "summarise",
    "verifier_version",
]
