"""One record in -> the enabled checks -> stored in one transaction -> a QualityReport out.

The phase 9 query flow: store the conversation, verify grounding, check consistency against
the patient's earlier answers, score confidence, run SelfCheck when samples (or an LLM) are
there, audit claims (SPEC-16), assess risk, and return the quality metrics and warnings with
every check's status. A check that cannot run says why; nothing degrades silently.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, cast

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from core.backends import load_embedder, load_learned, load_llm, load_nli
from core.backends.llm import LLMClient, LLMError
from core.checks import OK, CheckStatus, failed, skipped, unavailable
from core.config import Settings
from core.records import ConversationRecord
from core.stages import STAGES, Stage, Work, transcript_text, unit_interval
from core.storage import models as m
from core.storage import repo, thresholds
from core.storage.db import read_session, write_session
from core.text import content_hash, short_hash

log = logging.getLogger(__name__)

Auto = Literal["auto"]
StoreStatus = repo.StoreStatus
# a report's store status: what storing did, or ``not_stored`` (checked only: re-scoring)
ReportStatus = Literal["imported", "updated", "unchanged", "not_stored"]
# A batch whose insert meets a record a concurrent writer just stored is read and stored again.
STORE_ATTEMPTS = 3


@dataclass(frozen=True, slots=True)
class QualityReport:
    """Everything the pipeline found about one record.

    ``metrics`` holds the phase 9 quality_metrics (grounding, consistency, confidence:
    higher is better; hallucination_risk: higher is worse; overall_quality: higher is better).
    """

    external_id: str
    conversation_id: str
    store_status: ReportStatus
    metrics: Any
    risk: Any
    warnings: tuple[str, ...]
    checks: dict[str, CheckStatus]
    execution_time_ms: int
    is_flagged: bool
    grounding: Any = None
    evidence: Any = None
    consistency: Any = None
    confidence: Any = None
    selfcheck: Any = None
    epistemic: Any = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe summary (scores, statuses, warnings; statement details via grounding)."""
        return {
            "id": self.external_id,
            "conversation_id": self.conversation_id,
            "store_status": self.store_status,
            "quality_metrics": self.metrics.to_dict() if self.metrics else None,
            "risk": self.risk.to_dict() if self.risk else None,
            "warnings": list(self.warnings),
            "checks": {k: v.to_dict() for k, v in self.checks.items()},
            "execution_time_ms": self.execution_time_ms,
            "is_flagged": self.is_flagged,
            "grounding": self.grounding.to_dict() if self.grounding else None,
            "consistency": self.consistency.to_dict() if self.consistency else None,
        }


def statement_risk(status: str, confidence: float) -> float:
    """Review priority of a statement in [0, 1] (higher = look first).

    Contradicted statements rank above unsupported ones; within a status, the surer the
    detector, the higher.
    """
    c = min(1.0, max(0.0, float(confidence)))
    if status == "contradicted":
        return round(0.5 + 0.5 * c, 6)
    if status == "unsupported":
        return round(0.25 + 0.5 * c, 6)
    return round(0.25 * (1.0 - c), 6)


class QualityPipeline:
    """Runs the checks enabled by the settings' feature flags and stores the results.

    Args:
        settings: flags, thresholds and backend configuration.
        engine: the database to store into (and read the patient's history from).
        embedder: ``"auto"`` loads MiniLM when grounding is enabled; ``None`` disables the
            semantic tiers (reported as ``unavailable``); or an embedder object.
        nli: ``"auto"`` loads ``GROUNDWATCH_NLI_MODEL`` when set; ``None``; or a model.
        learned: ``"auto"`` loads the shipped learned verifier when grounding is enabled
            (unless ``GROUNDWATCH_LEARNED_VERIFIER`` is off); ``None``: the rules decide; or a
            :class:`~core.grounding.learned.SupportModel`.
        llm: ``"auto"`` connects to ``GROUNDWATCH_LLM_BASE_URL`` when set; ``None``; or a client.
        alerts: ``"auto"`` evaluates the rules of ``GROUNDWATCH_ALERTS_FILE`` (when set) after
            each stored batch, delivering webhooks in the background; ``None``; or an
            :class:`~core.alerts.AlertMonitor` (the command line passes a synchronous one).
    """

    def __init__(
        self,
        *,
        settings: Settings,
        engine: Engine,
        embedder: Any | Auto | None = "auto",
        nli: Any | Auto | None = "auto",
        llm: LLMClient | Auto | None = "auto",
        learned: Any | Auto | None = "auto",
        alerts: Any | Auto | None = "auto",
    ) -> None:
        self.settings = settings
        self.engine = engine
        if alerts == "auto":
            from core.alerts import AlertMonitor

            alerts = AlertMonitor.from_settings(settings, engine)
        # evaluated after every stored batch (core.alerts); it never fails the ingest
        self.alerts = alerts
        # backends load on first use, so a batch of unchanged records loads no model
        self._backend_args: dict[str, Any] = {
            "embedder": embedder,
            "nli": nli,
            "llm": llm,
            "learned": learned,
        }
        self._backends: dict[str, Any] = {}
        self._backend_status: dict[str, CheckStatus] = {}
        self._backend_lock = threading.RLock()
        # the batch stages, in order (core/stages: one module per detector)
        self.stages: list[Stage] = [stage() for stage in STAGES]
        self._grounding: Any = None
        self._evidence: Any = None
        self._consistency: Any = None
        self._confidence: Any = None
        self._selfcheck: Any = None
        self._epistemic: Any = None

    # ------------------------------------------------------------------ backends

    def _backend(self, name: str) -> Any:
        with self._backend_lock:
            if name not in self._backends:
                loader = {
                    "embedder": self._load_embedder,
                    "nli": self._load_nli,
                    "llm": self._load_llm,
                    "learned": self._load_learned,
                }[name]
                self._backends[name] = loader(self._backend_args[name])
            return self._backends[name]

    @property
    def embedder(self) -> Any:
        """The embedding model (loaded on first use), or ``None``."""
        return self._backend("embedder")

    @property
    def nli(self) -> Any:
        """The NLI cross-encoder (loaded on first use), or ``None``."""
        return self._backend("nli")

    @property
    def llm(self) -> LLMClient | None:
        """The LLM client (connected on first use), or ``None``."""
        return cast("LLMClient | None", self._backend("llm"))

    @property
    def learned(self) -> Any:
        """The learned verifier (loaded on first use), or ``None``."""
        return self._backend("learned")

    @property
    def backend_status(self) -> dict[str, CheckStatus]:
        """Each backend's status; loads those not loaded yet."""
        for name in self._backend_args:
            self._backend(name)
        return self._backend_status

    def _load_embedder(self, embedder: Any) -> Any:
        if embedder != "auto":
            self._backend_status["embedder"] = (
                OK if embedder is not None else unavailable("no embedding model given")
            )
            return embedder
        if not self.settings.enable_grounding_verification:
            self._backend_status["embedder"] = skipped("grounding verification disabled")
            return None
        emb, status = load_embedder(self.settings, store=repo.DbEmbeddingStore(self.engine))
        self._backend_status["embedder"] = status
        return emb

    def _load_learned(self, learned: Any) -> Any:
        if learned != "auto":
            self._backend_status["learned"] = (
                OK if learned is not None else unavailable("no learned verifier given")
            )
            return learned
        if not self.settings.enable_grounding_verification:
            self._backend_status["learned"] = skipped("grounding verification disabled")
            return None
        model, status = load_learned(self.settings)
        self._backend_status["learned"] = status
        return model

    def _load_nli(self, nli: Any) -> Any:
        if nli != "auto":
            self._backend_status["nli"] = (
                OK if nli is not None else unavailable("no NLI model configured")
            )
            return nli
        model, status = load_nli(self.settings)
        self._backend_status["nli"] = status
        return model

    def _load_llm(self, llm: Any) -> LLMClient | None:
        if llm != "auto":
            self._backend_status["llm"] = (
                OK if llm is not None else unavailable("no LLM configured")
            )
            return llm
        client, status = load_llm(self.settings, cache=repo.DbLLMCache(self.engine))
        self._backend_status["llm"] = status
        return client

    # ------------------------------------------------------------------ detectors

    @property
    def grounding_verifier(self) -> Any:
        if self._grounding is None:
            from core.grounding import GroundingVerifier

            self._grounding = GroundingVerifier(
                embedder=self.embedder,
                nli=self.nli,
                llm=self.llm,
                learned=self.learned,
                grounding_threshold=self.settings.grounding_score_threshold,
            )
        return self._grounding

    @property
    def evidence_grounder(self) -> Any:
        if self._evidence is None:
            from core.evidence import EvidenceGrounder

            s = self.settings
            self._evidence = EvidenceGrounder(
                mode=s.evidence_quote_validation_mode,
                threshold=s.evidence_quote_fuzzy_threshold,
                fail_on_all_rejected=False,
                log_rejections=s.evidence_quote_log_rejections,
            )
        return self._evidence

    @property
    def consistency_checker(self) -> Any:
        if self._consistency is None:
            from core.consistency import ConsistencyChecker

            self._consistency = ConsistencyChecker(nli=self.nli, llm=self.llm)
        return self._consistency

    @property
    def confidence_scorer(self) -> Any:
        if self._confidence is None:
            from core.calibration import ConfidenceScorer

            self._confidence = ConfidenceScorer(
                confidence_threshold=self.settings.confidence_score_threshold
            )
        return self._confidence

    # ------------------------------------------------------------------ public API

    def process(self, record: ConversationRecord, *, replace: bool = True) -> QualityReport:
        """Check and store one record (``replace``: see :meth:`process_many`)."""
        return self.process_many([record], replace=replace)[0]

    def process_many(
        self,
        records: Sequence[ConversationRecord],
        *,
        progress: Callable[[int], Any] | None = None,
        replace: bool = True,
    ) -> list[QualityReport]:
        """Check and store many records in ONE transaction (all land or none does).

        A record id stored already with other content is replaced, unless ``replace`` is
        false: then :class:`~core.storage.repo.RecordExistsError` is raised and nothing lands.

        Records are processed in time order so that each is checked for consistency against
        the same patient's earlier answers, including earlier records of this batch. Model
        work (grounding, evidence) runs batched before the transaction opens.

        Idempotency comes first: a record stored already with the same content costs one
        lookup and is not checked again; its report (``store_status`` ``unchanged``) carries
        the stored scores, flag, warnings and check statuses.
        """
        ordered = sorted(records, key=lambda r: r.when)
        unchanged = self._unchanged_reports(ordered)
        works = [
            Work(record=r, started=time.perf_counter()) for r in ordered if r.id not in unchanged
        ]
        if not works:
            if progress is not None:
                progress(len(ordered))
            log.info("pipeline: %d records unchanged, nothing to check", len(unchanged))
            return [unchanged[r.id] for r in records]
        sampled = [w for w in works if self._sampled(w)]
        for stage in self.stages:
            stage.run(self, sampled)
        for attempt in range(1, STORE_ATTEMPTS + 1):
            saved = [(list(w.warnings), dict(w.checks)) for w in works]
            pending: list[tuple[repo.ConversationBundle, dict[str, Any]]] = []
            timelines: dict[str, list[Any]] = {}
            try:
                with write_session(self.engine) as session:
                    bar = thresholds.review_threshold(session=session)
                    for work in works:
                        pending.append(self._finish(session, work, timelines, bar))
                    outcomes = repo.store_many(
                        session=session, bundles=[b for b, _ in pending], replace=replace
                    )
                break
            except IntegrityError:
                # another writer stored one of these records (or its patient) between our
                # read and our insert: nothing of ours landed; read again and store again,
                # now as unchanged or updated
                if attempt == STORE_ATTEMPTS:
                    raise
                log.info("store conflicted with a concurrent writer; attempt %d", attempt + 1)
                for w, (warnings, checks) in zip(works, saved, strict=True):
                    w.warnings[:] = warnings
                    w.checks.clear()
                    w.checks.update(checks)
        if progress is not None:
            progress(len(ordered))
        reports = [
            QualityReport(
                conversation_id=outcome.conversation_id, store_status=outcome.status, **fields
            )
            for (_, fields), outcome in zip(pending, outcomes, strict=True)
        ]
        by_id = {**unchanged, **{r.external_id: r for r in reports}}
        log.info("pipeline stored %d records, %d unchanged", len(reports), len(unchanged))
        if self.alerts is not None:  # committed: the rules read what was stored
            self.alerts.after_store([r.conversation_id for r in reports])
        return [by_id[r.id] for r in records]

    def check_many(self, records: Sequence[ConversationRecord]) -> list[QualityReport]:
        """Run the enabled checks on records and store NOTHING (re-scoring, :mod:`core.rescore`).

        Each record is checked as :meth:`process_many` would check it now, stored or not:
        consistency against the patient's stored answers (its own stored version left out,
        the batch's earlier records in), the same thresholds. Reports carry ``store_status``
        ``not_stored``, in the order of ``records``.
        """
        ordered = sorted(records, key=lambda r: r.when)
        works = [Work(record=r, started=time.perf_counter()) for r in ordered]
        sampled = [w for w in works if self._sampled(w)]
        for stage in self.stages:
            stage.run(self, sampled)
        timelines: dict[str, list[Any]] = {}
        with read_session(self.engine) as session:
            bar = thresholds.review_threshold(session=session)
            fields = [self._finish(session, w, timelines, bar)[1] for w in works]
        by_id = {
            f["external_id"]: QualityReport(
                conversation_id=repo.conversation_id_for(f["external_id"]),
                store_status="not_stored",
                **f,
            )
            for f in fields
        }
        return [by_id[r.id] for r in records]

    def _sampled(self, w: Work) -> bool:
        """Whether the record falls under the check sample rate (``check_sample_rate``); one
        that does not gets every check marked skipped, with the rate as the reason."""
        rate = self.settings.check_sample_rate
        if in_sample(w.record.id, rate):
            return True
        reason = f"not sampled (check sample rate {rate:g})"
        w.sampled = False
        for name in (*(stage.name for stage in self.stages), "consistency", "confidence"):
            w.checks[name] = skipped(reason)
        return False

    def _unchanged_reports(self, records: Sequence[ConversationRecord]) -> dict[str, QualityReport]:
        """Reports of the records stored already with the same content (external id ->
        report from the stored row), found by one lookup before any check runs. A record
        given twice in one batch is always checked (the later copy decides)."""
        counts: dict[str, int] = {}
        for r in records:
            counts[r.id] = counts.get(r.id, 0) + 1
        ids = {repo.conversation_id_for(r.id): r for r in records if counts[r.id] == 1}
        if not ids:
            return {}
        with read_session(self.engine) as session:
            stored = repo.stored_conversations(session=session, conversation_ids=list(ids))
        out: dict[str, QualityReport] = {}
        for conv_id, conv in stored.items():
            record = ids[conv_id]
            if conv.content_hash != record.fingerprint():
                continue
            out[record.id] = _stored_report(record.id, conv)
        return out

    # ------------------------------------------------------------------ stages

    # ------------------------------------------------------------------ per record

    def _finish(
        self,
        session: Session,
        w: Work,
        timelines: dict[str, list[Any]],
        review_threshold: float | None = None,
    ) -> tuple[repo.ConversationBundle, dict[str, Any]]:
        """Score one record and build its rows (stored with the batch by the caller).

        ``review_threshold``: the threshold applied from the calibration page
        (:mod:`core.storage.thresholds`); a statement below it does not flag its answer.
        """
        from core.quality import assess_hallucination_risk, overall_quality

        s = self.settings
        rec = w.record
        conv_id = repo.conversation_id_for(rec.id)
        at = rec.when
        consistency, mentions = self._consistency_for(session, w, conv_id, at, timelines)
        confidence = self._confidence_for(w, consistency)

        grounding_score = w.grounding.grounding_score if w.grounding is not None else None
        consistency_score = consistency.consistency_score if consistency is not None else None
        confidence_score = confidence.overall_confidence if confidence is not None else None
        selfcheck_risk = getattr(w.selfcheck, "risk_score", None) if w.selfcheck else None
        risk = assess_hallucination_risk(
            grounding_score,
            consistency_score,
            confidence_score,
            selfcheck_risk,
            grounding_threshold=s.grounding_score_threshold,
            consistency_threshold=s.consistency_score_threshold,
            confidence_threshold=s.confidence_score_threshold,
            risk_threshold=s.hallucination_risk_threshold,
        )
        w.checks["risk"] = risk.status
        metrics = overall_quality(
            grounding_score, consistency_score, confidence_score, risk.risk_score
        )
        w.warnings.extend(risk.contributing_factors)
        if consistency is not None:
            w.warnings.extend(consistency.warnings)
        if confidence is not None and confidence.overall_confidence < s.confidence_score_threshold:
            w.warnings.append(
                f"Low confidence ({confidence.overall_confidence:.2f}): verify source"
            )

        statements = list(w.grounding.statements) if w.grounding is not None else []
        flagged_statements = sum(
            thresholds.counts_as_flagged(
                st.status, statement_risk(st.status, st.confidence), review_threshold
            )
            for st in statements
        )
        contradictions = list(consistency.contradictions) if consistency is not None else []
        kinds = _classify(statements, contradictions, w)
        is_flagged = bool(risk.flagged or flagged_statements or contradictions)
        elapsed = int((time.perf_counter() - w.started) * 1000)
        flags = {
            "conversation_history": s.enable_conversation_history,
            "grounding_verification": s.enable_grounding_verification,
            "consistency_checking": s.enable_consistency_checking,
            "confidence_calibration": s.enable_confidence_calibration,
            "hallucination_detection": s.enable_hallucination_detection,
            "evidence_validation": s.evidence_quote_validation_enabled,
            "epistemic_verification": s.enable_epistemic_verification,
        }
        checks = {**w.checks}
        warnings = tuple(dict.fromkeys(w.warnings))
        conv = m.Conversation(
            id=conv_id,
            external_id=rec.id,
            patient_id=rec.patient_id,
            query=rec.query,
            query_intent=rec.query_intent,
            query_timestamp=at,
            answer=rec.answer,
            model_used=rec.model,
            sources=[src.model_dump() for src in rec.sources],
            samples=list(rec.samples) if rec.samples else None,
            evidence=rec.evidence,
            extractions=None,
            grounding_score=grounding_score,
            consistency_score=consistency_score,
            confidence_score=confidence_score,
            hallucination_risk=risk.risk_score,
            overall_quality=metrics.overall_quality,
            risk_level=risk.risk_level,
            is_flagged=is_flagged,
            flagged_statements=flagged_statements,
            total_statements=len(statements),
            execution_time_ms=elapsed,
            feature_flags=flags,
            check_status={k: v.to_dict() for k, v in checks.items()},
            warnings=list(warnings),
            content_hash=rec.fingerprint(),
        )
        bundle = repo.ConversationBundle(conversation=conv)
        for st, (kind, severity) in zip(statements, kinds, strict=True):
            bundle.statements.append(
                m.StatementCheck(
                    conversation_id=conv_id,
                    statement=st.statement,
                    statement_index=st.index,
                    statement_hash=content_hash(st.statement),
                    start=st.start,
                    end=st.end,
                    is_grounded=st.is_grounded,
                    status=st.status,
                    source_chunk_id=st.source_chunk_id,
                    supporting_evidence=st.supporting_evidence,
                    evidence_start=st.evidence_start,
                    evidence_end=st.evidence_end,
                    grounding_confidence=unit_interval(st.confidence),
                    verification_method=st.verification_method,
                    reason=st.reason,
                    risk=statement_risk(st.status, st.confidence),
                    kind=kind,
                    severity=severity,
                )
            )
        if consistency is not None:
            for c in contradictions:
                prev = c.previous_conversation_id or None
                bundle.consistency.append(
                    m.ConsistencyCheck(
                        patient_id=rec.patient_id,
                        current_conversation_id=conv_id,
                        previous_conversation_id=prev,
                        check_type=c.check_type,
                        is_consistent=False,
                        inconsistency_description=c.explanation,
                        current_statement=c.current_statement,
                        previous_statement=c.previous_statement,
                        entity=c.entity,
                        consistency_score=consistency.consistency_score,
                        severity=c.severity,
                    )
                )
            if not contradictions and consistency.status.status == "ok":
                bundle.consistency.append(
                    m.ConsistencyCheck(
                        patient_id=rec.patient_id,
                        current_conversation_id=conv_id,
                        check_type="entity_consistency",
                        is_consistent=True,
                        consistency_score=consistency.consistency_score,
                    )
                )
        if mentions:
            for e in mentions:
                bundle.mentions.append(
                    m.EntityMention(
                        patient_id=rec.patient_id,
                        conversation_id=conv_id,
                        at=at,
                        kind=e.kind,
                        name=e.name[:200],
                        assertion=e.assertion,
                        action=e.action,
                        value=(e.value or None) and str(e.value)[:100],
                        unit=(e.unit or None) and str(e.unit)[:40],
                        dose=(e.dose or None) and str(e.dose)[:100],
                        frequency=(e.frequency or None) and str(e.frequency)[:100],
                        statement=e.statement,
                        statement_start=e.statement_start,
                        statement_end=e.statement_end,
                    )
                )
        if confidence is not None:
            for i, sc in enumerate(confidence.confidence_breakdown):
                bundle.confidence.append(
                    m.ConfidenceMetric(
                        conversation_id=conv_id,
                        extraction_index=i,
                        retrieval_confidence=sc.retrieval_confidence,
                        source_confidence=sc.source_confidence,
                        extraction_confidence=sc.extraction_confidence,
                        consistency_confidence=sc.consistency_confidence,
                        aggregate_confidence=sc.aggregate_confidence,
                        uncertainty_level=sc.uncertainty_level,
                        uncertainty_explanation=sc.uncertainty_explanation,
                    )
                )
        for stage in self.stages:
            bundle.add(stage.rows(w, conv_id))
        if not s.enable_conversation_history:
            # scores, statuses and offsets are kept; every column tagged as patient text goes
            bundle.strip_patient_text()
        log.debug(
            "checked record %s: %d statements, %d contradictions",
            short_hash(rec.id),
            len(statements),
            len(contradictions),
        )
        return bundle, {
            "external_id": rec.id,
            "metrics": metrics,
            "risk": risk,
            "warnings": warnings,
            "checks": checks,
            "execution_time_ms": elapsed,
            "is_flagged": is_flagged,
            "grounding": w.grounding,
            "evidence": w.evidence,
            "consistency": consistency,
            "confidence": confidence,
            "selfcheck": w.selfcheck,
            "epistemic": w.epistemic,
        }

    def _consistency_for(
        self,
        session: Session,
        w: Work,
        conv_id: str,
        at: datetime,
        timelines: dict[str, list[Any]],
    ) -> tuple[Any, list[Any]]:
        """Check the answer against the patient's timeline: stored rows read once per batch,
        plus the rows of this batch's earlier records (kept in ``timelines``)."""
        from core.clinical import extract_mentions
        from core.consistency import TimelineEntry, timeline_entries

        rec = w.record
        try:
            mentions = extract_mentions(rec.answer)
        except Exception as exc:
            w.checks["consistency"] = failed(f"mention extraction: {type(exc).__name__}")
            return None, []
        entries = timeline_entries(
            mentions, patient_id=rec.patient_id, conversation_id=conv_id, timestamp=at
        )
        if not self.settings.enable_consistency_checking:
            w.checks["consistency"] = skipped("consistency checking disabled")
            return None, entries
        known = timelines.get(rec.patient_id)
        if known is None:
            rows = repo.entity_timeline(session=session, patient_id=rec.patient_id)
            known = [
                TimelineEntry(
                    patient_id=r.patient_id,
                    conversation_id=r.conversation_id,
                    timestamp=r.at,
                    kind=r.kind,
                    name=r.name,
                    assertion=r.assertion,
                    action=r.action,
                    value=r.value,
                    unit=r.unit,
                    dose=r.dose,
                    frequency=r.frequency,
                    statement=r.statement or "",
                    statement_start=r.statement_start or 0,
                    statement_end=r.statement_end or 0,
                )
                for r in rows
            ]
        # this record's own earlier version is replaced by what it says now
        known = [e for e in known if e.conversation_id != conv_id]
        timelines[rec.patient_id] = [*known, *entries]
        if not w.sampled:  # not checked, but its mentions join the timeline of later answers
            return None, entries
        timeline = [e for e in known if e.timestamp < at]
        try:
            result = self.consistency_checker.check(
                mentions,
                timeline,
                at=at,
                patient_id=rec.patient_id,
                conversation_id=conv_id,
            )
        except Exception as exc:
            w.checks["consistency"] = failed(type(exc).__name__)
            return None, entries
        w.checks["consistency"] = result.status
        for name, status in result.checks.items():
            w.checks[f"consistency.{name}"] = status
        if result.status.status != "ok":
            return None, entries
        return result, entries

    def _confidence_for(self, w: Work, consistency: Any) -> Any:
        if not w.sampled:
            return None
        if not self.settings.enable_confidence_calibration:
            w.checks["confidence"] = skipped("confidence calibration disabled")
            return None
        rec = w.record
        if not rec.sources:
            w.checks["confidence"] = skipped("no sources to be confident about")
            return None
        scorer = self.confidence_scorer
        cons = consistency.consistency_score if consistency is not None else None
        try:
            scores = [
                scorer.score(
                    similarity=None if src.similarity is None else float(src.similarity),
                    source_type=src.type,
                    temperature=None if rec.temperature is None else float(rec.temperature),
                    consistency=cons,
                )
                for src in rec.sources
            ]
            result = scorer.aggregate(scores)
        except (ValueError, TypeError) as exc:
            w.checks["confidence"] = failed(type(exc).__name__)
            return None
        w.checks["confidence"] = OK
        return result


def _classify(
    statements: Sequence[Any], contradictions: Sequence[Any], w: Work
) -> list[tuple[str | None, str | None]]:
    """Kind and severity of each statement (None, None for a grounded one): what is wrong and
    what it would cost a patient (:mod:`core.severity`). A classifier error leaves the
    statements unclassified and fails the ``severity`` check, naming the error type only."""
    from core.severity import EarlierConflict, classify

    earlier = [EarlierConflict(c.current_statement, c.severity) for c in contradictions]
    try:
        out: list[tuple[str | None, str | None]] = []
        for st in statements:
            found = classify(
                status=st.status,
                statement=st.statement,
                reason=st.reason,
                evidence=st.supporting_evidence,
                signals=st.signals,
                earlier=earlier,
            )
            out.append((found.kind, found.severity) if found is not None else (None, None))
        return out
    except Exception as exc:
        w.checks["severity"] = failed(f"kind and severity not read ({type(exc).__name__})")
        log.warning("severity classification failed: %s", type(exc).__name__)
        return [(None, None)] * len(statements)


def in_sample(record_id: str, rate: float) -> bool:
    """Whether a record with this id is checked at ``rate`` in [0, 1]: the first 8 bytes of
    the SHA-256 of its id, read as a fraction, fall under the rate (the same id always gets
    the same answer, in any process)."""
    if rate >= 1.0:
        return True
    if rate <= 0.0:
        return False
    digest = hashlib.sha256(record_id.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < rate


__all__ = [
    "QualityPipeline",
    "QualityReport",
    "in_sample",
    "statement_risk",
    "transcript_text",
    "LLMError",
]


def _stored_report(external_id: str, conv: m.Conversation) -> QualityReport:
    """The report of a record stored already with the same content, from its stored row (not
    checked again: the scores, flag, warnings and check statuses are those stored)."""
    from core.quality import QualityMetrics

    checks = {
        name: CheckStatus(value.get("status", "failed"), value.get("reason"))
        for name, value in (conv.check_status or {}).items()
        if isinstance(value, dict)
    }
    return QualityReport(
        external_id=external_id,
        conversation_id=str(conv.id),
        store_status="unchanged",
        metrics=QualityMetrics(
            grounding_score=conv.grounding_score,
            consistency_score=conv.consistency_score,
            confidence_score=conv.confidence_score,
            hallucination_risk=conv.hallucination_risk,
            overall_quality=conv.overall_quality,
        ),
        risk=None,
        warnings=tuple(str(w) for w in (conv.warnings or ())),
        checks=checks,
        execution_time_ms=0,
        is_flagged=bool(conv.is_flagged),
    )
