"""The Ray job: an actor pool that checks answers again (:class:`Scorer`, one copy of the
models per actor) and the driver that selects what is left, streams the results back and
writes them in batches, one transaction each, at most once per run and answer."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import secrets
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.engine import Engine

from core.config import Settings, load_settings
from core.records import parse_record
from core.rescore.report import RescoreReport, result_row, stored_report
from core.rescore.selection import (
    RUN_ID,
    RescoreError,
    Selection,
    read_record_files,
    settings_hash,
    verifier_version,
)
from core.storage import rescore as store
from core.storage import thresholds
from core.storage.db import read_session, write_session

log = logging.getLogger(__name__)


class Scorer:
    """The Ray actor's work (``map_batches`` with this class = an actor pool): loads the
    pipeline and its models once, then checks batches of answers and returns result rows
    (one JSON string per answer in column ``row``; no record text).

    Args:
        settings: the driver's settings (``Settings.model_dump()``), so every actor scores
            with the same configuration whatever its environment.
        run_id: the run the rows belong to.
        records: ``None`` for stored answers (read by id from the database); for files,
            conversation id -> record JSON.
    """

    def __init__(
        self,
        *,
        settings: dict[str, Any],
        run_id: str,
        records: dict[str, str] | None = None,
    ) -> None:
        from core.pipeline import QualityPipeline
        from core.storage.db import get_engine

        values = dict(settings)
        if not values.get("embedding_workers"):
            values["embedding_workers"] = 1  # one core per actor: no thread per core
        self.settings = load_settings(**values)
        _one_thread_per_cpu()
        self.engine = get_engine(self.settings.database_url)
        # re-scoring stores nothing, so no alert rule has anything new to read
        self.pipeline = QualityPipeline(settings=self.settings, engine=self.engine, alerts=None)
        self.run_id = run_id
        self.records = records

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, list[str]]:
        ids = [str(i) for i in batch["conversation_id"]]
        rows = self.score(ids)
        return {"row": [json.dumps(r) for r in rows]}

    def score(self, conversation_ids: Sequence[str]) -> list[dict[str, Any]]:
        """Result rows for these answers, in order; an answer that cannot be checked gets a
        ``failed`` row with the reason (error type, never text)."""
        with read_session(self.engine) as session:
            stored = {
                s.conversation_id: s
                for s in store.stored_answers(session=session, conversation_ids=conversation_ids)
            }
        records: dict[str, Any] = {}
        reasons: dict[str, str] = {}
        for cid in conversation_ids:
            raw: Any = None
            if self.records is not None:
                raw = json.loads(self.records[cid])
            elif cid in stored:
                raw = stored[cid].record
                if raw is None:
                    reasons[cid] = "record text purged or not kept: nothing to check"
                    continue
            else:
                reasons[cid] = "answer no longer stored"
                continue
            try:
                records[cid] = parse_record(raw, max_text_chars=self.settings.max_transcript_chars)
            except ValueError as exc:
                reasons[cid] = f"invalid record: {exc}"
        reports = self._check(records, reasons)
        return [
            result_row(
                run_id=self.run_id,
                conversation_id=cid,
                stored=stored.get(cid),
                report=reports.get(cid),
                reason=reasons.get(cid),
            )
            for cid in conversation_ids
        ]

    def _check(self, records: dict[str, Any], reasons: dict[str, str]) -> dict[str, Any]:
        """Reports by conversation id; a batch that fails is checked record by record, so
        one bad record fails alone."""
        if not records:
            return {}
        items = list(records.items())
        try:
            reports = self.pipeline.check_many([r for _, r in items])
            return {cid: rep for (cid, _), rep in zip(items, reports, strict=True)}
        except Exception as exc:
            if len(items) == 1:
                reasons[items[0][0]] = f"checks failed: {type(exc).__name__}"
                return {}
            log.warning(
                "rescore: a batch of %d failed (%s); checking it one by one",
                len(items),
                type(exc).__name__,
            )
        out: dict[str, Any] = {}
        for cid, record in items:
            out.update(self._check({cid: record}, reasons))
        return out


def _one_thread_per_cpu() -> None:
    """PyTorch in an actor uses as many threads as the actor has CPUs (not the machine's)."""
    try:
        import ray
        import torch

        if not ray.is_initialized():  # outside Ray (direct use): leave PyTorch as it is
            return
        cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 1.0)
        torch.set_num_threads(max(1, int(cpus)))
    except Exception:  # no assigned resources to read: leave PyTorch as it is
        return


# --------------------------------------------------------------------------- the driver


def new_run_id() -> str:
    """A fresh run id: the UTC start time and 6 random hex digits."""
    return f"rs-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def start_ray(*, address: str | None, num_cpus: int | None) -> bool:
    """Start a local Ray on this machine's cores (``num_cpus``, default all) or connect to the
    cluster at ``address``, quietly (no dashboard, warnings only). Returns whether it was
    started here (and is to be shut down here)."""
    import ray

    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")
    quiet: dict[str, Any] = {
        "logging_level": logging.ERROR,
        "log_to_driver": False,
        "configure_logging": True,
    }
    if address:
        ray.init(address=address, **quiet)
    else:
        ray.init(
            address="local",
            num_cpus=num_cpus or os.cpu_count() or 1,
            include_dashboard=False,
            **quiet,
        )
    import ray.data

    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False  # the command draws its own
    ctx.print_on_execution_start = False
    logging.getLogger("ray.data").setLevel(logging.ERROR)
    return True


def _open_run(
    *,
    engine: Engine,
    settings: Settings,
    run_id: str,
    selection: Selection | None,
    resume: bool,
) -> tuple[Selection, datetime]:
    """Create the run, or find it to resume: same verifier version and settings, and (when a
    selection is given) the same selection. Returns the selection and the run's start."""
    version = verifier_version(settings)
    with write_session(engine) as session:
        digest = settings_hash(
            settings, review_threshold=thresholds.review_threshold(session=session)
        )
        run = store.get_run(session=session, run_id=run_id)
        if run is None:
            if resume:
                raise RescoreError(f"no re-scoring run {run_id!r} to resume")
            if selection is None:
                raise RescoreError("a new run needs a selection")
            run = store.create_run(
                session=session,
                run_id=run_id,
                verifier_version=version,
                settings_hash=digest,
                source=selection.source,
                filters=selection.to_dict(),
            )
            return selection, run.started_at
        if run.verifier_version != version or run.settings_hash != digest:
            raise RescoreError(
                f"run {run_id!r} was made by verifier {run.verifier_version} with settings "
                f"{run.settings_hash}; these are {version} and {digest}: start a new run"
            )
        kept = Selection.from_dict(run.filters or {})
        if selection is not None and selection != kept:
            raise RescoreError(
                f"run {run_id!r} covers another selection; resume it with --resume {run_id}"
            )
        store.reopen_run(session=session, run_id=run_id)
        return kept, run.started_at


def rescore(
    *,
    settings: Settings,
    engine: Engine,
    run_id: str,
    selection: Selection | None = None,
    resume: bool = False,
    actors: int | None = None,
    batch_size: int = 32,
    write_every: int = 128,
    address: str | None = None,
    num_cpus: int | None = None,
    on_total: Callable[[int, int], Any] | None = None,
    on_written: Callable[[int], Any] | None = None,
) -> RescoreReport:
    """Re-score a selection with Ray and record the run (see the module docstring).

    Args:
        run_id: a new id, or that of a run to go on with (its version and settings must be
            these, and ``selection`` its selection or ``None``).
        resume: the run must exist (its stored selection is used).
        actors: actor-pool size (one copy of the models each); default: one per CPU of the
            cluster.
        batch_size: answers per actor call; ``write_every``: results per written transaction.
        address: a Ray cluster to use; ``None`` starts a local Ray on ``num_cpus`` cores.
        on_total: called once with (answers left to check, answers done before).
        on_written: called with the number of results each written batch added.

    Raises:
        RescoreError: a bad run id, a run that cannot be resumed, an unreadable file.
    """
    if not RUN_ID.match(run_id):
        raise RescoreError(
            "run id: 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )

    def read_files(paths: Sequence[str]) -> dict[str, str]:
        return read_record_files(
            paths, max_bytes=settings.max_input_bytes, max_text_chars=settings.max_transcript_chars
        )

    # files are read and validated before a run is recorded: a bad file records nothing
    records = read_files(selection.files) if selection is not None and selection.files else None
    selection, started = _open_run(
        engine=engine, settings=settings, run_id=run_id, selection=selection, resume=resume
    )
    if selection.files:
        if records is None:  # resumed: the run's own files
            records = read_files(selection.files)
        ids = list(records)
    else:
        with read_session(engine) as session:
            ids = store.select_conversation_ids(
                session=session,
                since=selection.since,
                until=selection.until,
                model=selection.model,
                patient_id=selection.patient_id,
                only_flagged=selection.only_flagged,
                stored_before=started,
            )
    with write_session(engine) as session:
        store.set_selected(session=session, run_id=run_id, selected=len(ids))
        done = store.done_ids(session=session, run_id=run_id)
    todo = [i for i in ids if i not in done]
    if records is not None:
        records = {cid: records[cid] for cid in todo}
    if on_total is not None:
        on_total(len(todo), len(ids) - len(todo))
    log.info(
        "rescore run %s: %d answers selected, %d done before, %d to check",
        run_id,
        len(ids),
        len(ids) - len(todo),
        len(todo),
    )
    if todo:
        _run_on_ray(
            settings=settings,
            engine=engine,
            run_id=run_id,
            todo=todo,
            records=records,
            actors=actors,
            batch_size=batch_size,
            write_every=write_every,
            address=address,
            num_cpus=num_cpus,
            on_written=on_written,
        )
    with write_session(engine) as session:
        store.finish_run(session=session, run_id=run_id, selected=len(ids))
    report = stored_report(engine=engine, run_id=run_id)
    log.info(
        "rescore run %s finished: %d checked, %d newly flagged, %d cleared, %d failed",
        run_id,
        report.summary.checked,
        report.summary.newly_flagged,
        report.summary.cleared,
        report.summary.failed,
    )
    return dataclasses.replace(report, resumed=len(ids) - len(todo))


def _run_on_ray(
    *,
    settings: Settings,
    engine: Engine,
    run_id: str,
    todo: list[str],
    records: dict[str, str] | None,
    actors: int | None,
    batch_size: int,
    write_every: int,
    address: str | None,
    num_cpus: int | None,
    on_written: Callable[[int], Any] | None,
) -> None:
    import ray
    import ray.data

    started_here = start_ray(address=address, num_cpus=num_cpus)
    try:
        size = actors or max(1, int(ray.cluster_resources().get("CPU", 1)))
        # enough blocks to keep every actor busy and the results streaming back
        blocks = min(len(todo), max(2 * size, min(len(todo) // batch_size, 10_000)))
        items = ray.data.from_items(
            [{"conversation_id": cid} for cid in todo], override_num_blocks=blocks
        )
        results = items.map_batches(
            Scorer,
            batch_size=batch_size,
            compute=ray.data.ActorPoolStrategy(size=size),
            num_cpus=1,
            fn_constructor_kwargs={
                "settings": settings.model_dump(),
                "run_id": run_id,
                "records": records,
            },
        )
        for batch in results.iter_batches(batch_size=write_every, batch_format="numpy"):
            rows = [json.loads(r) for r in batch["row"]]
            with write_session(engine) as session:
                added = store.write_results(session=session, rows=rows)
            if on_written is not None:
                on_written(added)
    finally:
        if started_here:
            ray.shutdown()
