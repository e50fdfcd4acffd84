"""SPEC-16 epistemic verification: claims, evidence audit, evidence dependence.

:class:`EpistemicVerifier` decomposes an answer into claims, maps each claim to the sources it
cites, audits it against that evidence (the grounding tiers plus rule checks of its
specifics, and an LLM judge when one is configured), measures evidence dependence by
scrubbing (the answer regenerated with and without the evidence, compared by embedding) and
returns a :class:`HallucinationReport`. Every check reports its status; nothing is guessed.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from core.backends.llm import ChatResponse, LLMClient, LLMError
from core.checks import OK, CheckStatus, failed, skipped, unavailable
from core.epistemic.citations import CitationResolver, strip_citations
from core.epistemic.prompts import (
    UnparseableReplyError,
    direct_check_messages,
    extraction_messages,
    parse_claim_lines,
    parse_support_score,
    with_evidence_messages,
    without_evidence_messages,
)
from core.epistemic.specifics import (
    SpecificsFinding,
    best_clause,
    compare_specifics,
    has_specifics,
    lexical_support,
    quantities,
    stated_count_mismatch,
    without_quantities,
)
from core.epistemic.types import (
    CRITICAL_GAP_TYPES,
    SUGGESTED_ACTIONS,
    Claim,
    ClaimVerification,
    EpistemicGap,
    GapType,
    HallucinationReport,
    VerificationConfig,
    VerificationUsage,
)
from core.grounding import SourceChunk
from core.text import content_hash, short_hash, split_sentences, split_statements

if TYPE_CHECKING:
    from core.backends.embedder import Embedder

log = logging.getLogger(__name__)

MIN_GAP_PROBABILITY = 2.0**-10  # gap bits are capped at 10
LEXICAL_SUPPORT = 0.8  # share of a claim's content words in one evidence sentence
WEAK_MATCH_LEXICAL = 0.5  # the same share a weak semantic match needs to count
_CERTAINTY = re.compile(
    r"\b(?:definitely|certainly|clearly|confirmed|always|never|proven|diagnosed|must|"
    r"likely|probably|possibly|may|might|suggests?)\b",
    re.I,
)
_SEVERITY_ORDER: dict[str, int] = {
    "contradicted": 0,
    "phantom_citation": 1,
    "unsupported": 2,
    "partial_support": 3,
    "over_extrapolation": 4,
    "evidence_independent": 5,
}


class StatementGrounder(Protocol):
    """The grounding tiers (``core.grounding.GroundingVerifier`` implements it)."""

    def verify_statement(self, statement: str, sources: Sequence[Any]) -> Any: ...


class VerificationCache(Protocol):
    """Stores claim outcomes by the hashes of claim and evidence (pluggable)."""

    def get(self, key: str) -> Any | None: ...

    def put(self, key: str, value: Any) -> None: ...


class InMemoryVerificationCache:
    """Thread-safe LRU cache of claim outcomes."""

    def __init__(self, max_entries: int = 10_000) -> None:
        self._data: OrderedDict[str, Any] = OrderedDict()
        self._max = max_entries
        self._lock = threading.Lock()

    def get(self, key: str) -> Any | None:
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: str, value: Any) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self._max:
                self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)


@dataclass(frozen=True, slots=True)
class _Gap:
    gap_type: GapType
    reason: str
    source_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Outcome:
    """What the audit of one claim found (cached by claim and evidence hashes)."""

    evidence_ids: tuple[str, ...]
    support: float | None
    method: str | None
    gaps: tuple[_Gap, ...]
    evidence: str | None = None
    evidence_source_id: str | None = None
    evidence_start: int | None = None
    evidence_end: int | None = None
    llm_support: float | None = None
    llm_status: str | None = None
    llm_tokens: int = 0
    audit_error: str | None = None


@dataclass(slots=True)
class _Tally:
    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    cache_hits: int = 0
    cache_misses: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, response: ChatResponse) -> None:
        with self.lock:
            self.calls += 1
            self.cached += int(response.cached)
            if not response.cached:
                self.prompt_tokens += response.prompt_tokens
                self.completion_tokens += response.completion_tokens
                self.latency_ms += response.latency_ms


def _check_sources(sources: Sequence[SourceChunk]) -> None:
    seen: set[str] = set()
    for i, src in enumerate(sources):
        if not isinstance(src, SourceChunk):
            raise ValueError(f"sources[{i}]: must be a SourceChunk (id, text)")
        sid = src.id
        if sid in seen:
            raise ValueError(f"sources[{i}].id: duplicate source id")
        seen.add(sid)


def _sample_fraction(seed: int, text: str) -> float:
    return int(content_hash(f"{seed}\x1f{text}")[:8], 16) / 0xFFFFFFFF


def gap_bits_from_probability(p: float) -> float:
    """Evidence gap in bits, ``-log2(p)`` of a support probability (floored at 2**-10).

    0 bits: the evidence fully supports the claim; each bit halves the support.
    """
    return max(0.0, float(-math.log2(max(MIN_GAP_PROBABILITY, min(1.0, p)))))


class EpistemicVerifier:
    """Audits an answer's claims against the sources it was given.

    Args:
        grounding: the grounding tiers; default: ``core.grounding.GroundingVerifier`` built
            with ``embedder``.
        embedder: sentence embedder for evidence dependence (``None``: that check is
            ``unavailable``).
        llm: OpenAI-compatible client for claim extraction, the direct evidence check and
            evidence scrubbing (``None``: those checks are ``unavailable``).
        config: thresholds, mode and limits (SPEC-16 defaults).
        cache: claim-outcome cache; default: in memory.
    """

    def __init__(
        self,
        *,
        grounding: StatementGrounder | None = None,
        embedder: Embedder | None = None,
        llm: LLMClient | None = None,
        config: VerificationConfig | None = None,
        cache: VerificationCache | None = None,
    ) -> None:
        if grounding is None:
            from core.grounding import GroundingVerifier

            grounding = GroundingVerifier(embedder=embedder)
        self.grounding: StatementGrounder = grounding
        self.embedder = embedder
        self.llm = llm
        self.config = config or VerificationConfig()
        self.cache: VerificationCache = cache if cache is not None else InMemoryVerificationCache()

    # --- public API ----------------------------------------------------------------------

    def verify(
        self,
        answer: str,
        sources: Sequence[SourceChunk],
        *,
        question: str | None = None,
        response_id: str | None = None,
    ) -> HallucinationReport:
        """Verify an answer against its sources.

        Raises:
            ValueError: malformed input (names the field, never the text).
        """
        if not isinstance(answer, str):
            raise ValueError("answer: must be a string")
        if question is not None and not isinstance(question, str):
            raise ValueError("question: must be a string")
        _check_sources(sources)
        started = time.perf_counter()
        cfg = self.config
        rid = response_id or short_hash(answer)
        reason = None
        if not cfg.enabled:
            reason = "verification disabled"
        elif not sources or not any(s.text.strip() for s in sources):
            reason = "no evidence to verify against"
        elif len(answer.strip()) < cfg.min_answer_chars:
            reason = f"answer shorter than {cfg.min_answer_chars} characters"
        if reason is not None:
            log.info("epistemic skipped response=%s reason=%s", short_hash(rid), reason)
            return self._skipped_report(rid, reason, started)

        tally = _Tally()
        warnings: list[str] = []
        checks: dict[str, CheckStatus] = {}
        claims, extraction = self._extract(answer, sources, tally, warnings)
        checks["claims"] = OK if claims else skipped("no claims found in the answer")
        audited = claims[: cfg.max_claims_per_response]
        if len(claims) > len(audited):
            warnings.append(
                f"{len(claims) - len(audited)} claims beyond max_claims_per_response "
                f"({cfg.max_claims_per_response}) were not verified"
            )
        outcomes, audit_status, llm_status, cached_flags = self._audit_all(audited, sources, tally)
        checks["audit"] = audit_status
        outcomes = _add_internal_gaps(answer, audited, outcomes)
        checks["llm_direct"] = llm_status
        dependence, dep_status, answer_dependence = self._dependence(
            audited, sources, question, tally, warnings
        )
        checks["dependence"] = dep_status
        report = self._build_report(
            rid, claims, audited, outcomes, cached_flags, dependence, answer_dependence,
            extraction, warnings, checks, tally, started,
        )  # fmt: skip
        log.info(
            "epistemic verified response=%s claims=%d audited=%d flagged=%d llm_calls=%d "
            "latency_ms=%.0f",
            short_hash(rid),
            report.total_claims,
            report.verified_claims,
            report.flagged_claims,
            report.usage.llm_calls,
            report.latency_ms,
        )
        return report

    def verify_claim(self, claim: str, evidence: str | Sequence[str]) -> ClaimVerification:
        """Verify one claim against evidence text(s) (the seed's ``verify_claim``).

        Evidence passages get ids ``e1``, ``e2``...; the LLM judge runs whenever an LLM is
        configured, whatever the mode.
        """
        texts = [evidence] if isinstance(evidence, str) else list(evidence)
        sources = [SourceChunk(id=f"e{i + 1}", text=t) for i, t in enumerate(texts)]
        _check_sources(sources)
        if not isinstance(claim, str) or not claim.strip():
            raise ValueError("claim: must be a non-empty string")
        item = Claim("c1", claim.strip(), 0, len(claim))
        outcomes, _, _, cached = self._audit_all([item], sources, _Tally(), force_llm=True)
        return self._claim_verification(item, outcomes[0], None, None, cached[0])

    # --- claims --------------------------------------------------------------------------

    def _rule_claims(self, answer: str, resolver: CitationResolver) -> list[Claim]:
        citations = resolver.find(answer)
        sentences = split_sentences(answer)
        claims: list[Claim] = []
        for span in split_statements(answer):
            own = [c for c in citations if span.start <= c.start < span.end]
            if not own:
                sentence = next((s for s in sentences if s.start <= span.start < s.end), None)
                if sentence is not None:
                    own = [c for c in citations if sentence.start <= c.start < sentence.end]
            text = strip_citations(span.text, resolver.find(span.text))
            if len(re.findall(r"[A-Za-z]{2,}", text)) < 2:
                continue  # a lone citation or heading, not a claim
            claims.append(Claim(f"c{len(claims) + 1}", text, span.start, span.end, tuple(own)))
        if claims:
            # A marker opening a sentence ("... high. [2] Next ...") belongs to the claim before.
            fixed: list[Claim] = []
            for i, claim in enumerate(claims):
                extra = tuple(
                    c
                    for c in citations
                    if i + 1 < len(claims)
                    and claim.end <= c.start < claims[i + 1].start
                    and c not in claim.citations
                    and not answer[claim.end : c.start].strip(" .;,")
                )
                fixed.append(replace(claim, citations=claim.citations + extra))
            claims = fixed
        return claims

    def _extract(
        self,
        answer: str,
        sources: Sequence[SourceChunk],
        tally: _Tally,
        warnings: list[str],
    ) -> tuple[list[Claim], str]:
        resolver = CitationResolver([s.id for s in sources])
        rule_claims = self._rule_claims(answer, resolver)
        use_llm = self.llm is not None and self.config.claim_extraction != "rules"
        if not use_llm:
            if self.config.claim_extraction == "llm":
                warnings.append("LLM claim extraction requested but no LLM configured")
            return rule_claims, "rules"
        assert self.llm is not None
        try:
            response = self.llm.chat(extraction_messages(answer), max_tokens=256)
            tally.add(response)
            lines = parse_claim_lines(response.text)
        except (LLMError, UnparseableReplyError) as exc:
            warnings.append(f"LLM claim extraction failed ({exc}); rule-based claims used")
            return rule_claims, "rules"
        claims = _align_claims(lines, rule_claims)
        if not claims:
            warnings.append("LLM claims did not match the answer; rule-based claims used")
            return rule_claims, "rules"
        return claims, "llm"

    # --- audit ---------------------------------------------------------------------------

    def _selected_for_llm(self, claim: Claim) -> bool:
        mode = self.config.mode
        if mode == "full":
            return True
        if mode == "sample":
            return _sample_fraction(self.config.seed, claim.text) < self.config.sample_rate
        return bool(claim.citations or has_specifics(claim.text) or _CERTAINTY.search(claim.text))

    def _audit_all(
        self,
        claims: Sequence[Claim],
        sources: Sequence[SourceChunk],
        tally: _Tally,
        *,
        force_llm: bool = False,
    ) -> tuple[list[_Outcome], CheckStatus, CheckStatus, list[bool]]:
        by_id = {s.id: s for s in sources}
        selected = [
            self.llm is not None and (force_llm or self._selected_for_llm(c)) for c in claims
        ]
        keys = [self._cache_key(c, sources, sel) for c, sel in zip(claims, selected, strict=True)]
        results: list[_Outcome | None] = []
        for key in keys:
            hit = self.cache.get(key)
            results.append(hit if isinstance(hit, _Outcome) else None)
        cached = [r is not None for r in results]
        misses = [i for i, r in enumerate(results) if r is None]
        tally.cache_hits += len(claims) - len(misses)
        tally.cache_misses += len(misses)
        pre = self._ground_groups([claims[i] for i in misses], sources, by_id)
        for i in misses:
            results[i] = self._local_audit(claims[i], sources, by_id, pre.get(claims[i].claim_id))
        judge = [i for i in misses if selected[i]]

        def run(i: int) -> _Outcome:
            outcome = results[i]
            assert outcome is not None
            return self._judge(claims[i], outcome, by_id, tally)

        # The local tiers share one CPU-bound model (sequential); LLM judging is I/O-bound.
        if self.config.parallel and len(judge) > 1:
            with ThreadPoolExecutor(max_workers=min(4, len(judge))) as pool:
                judged = list(pool.map(run, judge))
        else:
            judged = [run(i) for i in judge]
        for i, outcome in zip(judge, judged, strict=True):
            results[i] = outcome
        outcomes = [r for r in results if r is not None]
        for i in misses:
            o = outcomes[i]
            if o.audit_error is None and o.llm_status in (None, "ok"):
                self.cache.put(keys[i], o)
        errors = [o.audit_error for o in outcomes if o.audit_error]
        if not claims:
            audit_status = skipped("no claims to audit")
        elif errors and len(errors) == len(outcomes):
            audit_status = failed(f"grounding failed for all {len(errors)} claims ({errors[0]})")
        elif errors:
            audit_status = failed(f"grounding failed for {len(errors)} of {len(outcomes)} claims")
        else:
            audit_status = OK
        llm_status = _llm_status(self.llm is not None, self.config, outcomes, selected)
        return outcomes, audit_status, llm_status, cached

    def _ground_groups(
        self, claims: Sequence[Claim], sources: Sequence[SourceChunk], by_id: dict[str, SourceChunk]
    ) -> dict[str, Any]:
        """Grounding of each claim against its evidence, one batch per evidence set."""
        groups: dict[tuple[str, ...], list[Claim]] = {}
        for claim in claims:
            groups.setdefault(claim.cited_ids or tuple(s.id for s in sources), []).append(claim)
        out: dict[str, Any] = {}
        batch = getattr(self.grounding, "verify_statements", None)
        for ids, members in groups.items():
            evidence = [by_id[i] for i in ids]
            texts = [c.text for c in members]
            try:
                if batch is not None:
                    results = list(batch(texts, evidence))
                else:
                    results = [self.grounding.verify_statement(t, evidence) for t in texts]
            except Exception as exc:  # noqa: BLE001 - a backend failure is a status
                log.warning("epistemic grounding failed claims=%d: %s", len(texts),
                            type(exc).__name__)  # fmt: skip
                results = [exc] * len(texts)
            for claim, result in zip(members, results, strict=True):
                out[claim.claim_id] = result
        return out

    def _cache_key(self, claim: Claim, sources: Sequence[SourceChunk], with_llm: bool) -> str:
        evidence = "|".join(f"{s.id}:{content_hash(s.text)}" for s in sources)
        cited = ",".join(claim.cited_ids) + ";" + ",".join(claim.phantom_labels)
        cfg = self.config
        return content_hash(
            f"{content_hash(claim.text)}\x1f{content_hash(evidence)}\x1f{cited}\x1f"
            f"{with_llm}\x1f{cfg.support_threshold}\x1f{getattr(self.llm, 'model', '')}"
        )

    def _local_audit(
        self,
        claim: Claim,
        sources: Sequence[SourceChunk],
        by_id: dict[str, SourceChunk],
        grounded: Any = None,
    ) -> _Outcome:
        gaps: list[_Gap] = []
        phantoms = claim.phantom_labels
        if phantoms:
            gaps.append(
                _Gap(
                    "phantom_citation",
                    f"cites {', '.join(phantoms)}: no such source among the {len(sources)} given",
                )
            )
        cited = [by_id[i] for i in claim.cited_ids]
        evidence = cited or list(sources)
        evidence_ids = tuple(s.id for s in evidence)
        try:
            if isinstance(grounded, Exception):
                raise grounded
            g = grounded or self.grounding.verify_statement(claim.text, evidence)
        except Exception as exc:  # noqa: BLE001 - a backend failure is a status, not a crash
            log.warning("epistemic grounding failed claim=%s: %s", short_hash(claim.text),
                        type(exc).__name__)  # fmt: skip
            return _Outcome(evidence_ids, None, None, tuple(gaps), audit_error=type(exc).__name__)
        status = getattr(g, "status", "unsupported")
        conf = float(getattr(g, "confidence", 0.0) or 0.0)
        method = getattr(g, "verification_method", None)
        src_id = getattr(g, "source_chunk_id", None)
        ev_text = getattr(g, "supporting_evidence", None)
        ev_start = getattr(g, "evidence_start", None)
        ev_end = getattr(g, "evidence_end", None)
        texts = [s.text for s in evidence]
        spec = compare_specifics(claim.text, texts)
        support: float
        if status == "contradicted" and spec.kind != "conflict" and _doubtful(g, spec):
            # The grounding tier read a number of another item, or a question, as a conflict;
            # the anchored rule check says the evidence only lacks the detail.
            status = "unsupported"
            conf = 0.5
        if status == "contradicted":
            gaps.append(
                _Gap(
                    "contradicted",
                    getattr(g, "reason", None) or "the evidence contradicts the claim",
                    (src_id,) if src_id else evidence_ids,
                )  # fmt: skip
            )
            support = 1.0 - conf
        elif status == "grounded" and (
            conf >= self.config.support_threshold
            or method in ("exact_match", "fuzzy_match")
            or spec.kind != "ok"
            or lexical_support(claim.text, texts, by_part=False)[0] >= WEAK_MATCH_LEXICAL
        ):
            # A weak semantic match (below support_threshold) counts only when the claim's
            # words are also found in the evidence; general statements otherwise pass.
            support = conf
            support, extra = _specifics_gap(spec, support, src_id, evidence_ids)
            gaps.extend(extra)
        elif (lex := lexical_support(claim.text, texts))[0] >= LEXICAL_SUPPORT and (
            spec.kind == "ok"
        ):
            support, method = lex[0], "lexical_match"
            ev_text, ev_start, ev_end = lex[1], None, None
            src_id = next((s.id for s in evidence if lex[1] in s.text), src_id)
            if src_id is not None:
                ev_start = by_id[src_id].text.find(lex[1])
                ev_end = ev_start + len(lex[1]) if ev_start >= 0 else None
                ev_start = ev_start if ev_start >= 0 else None
        else:
            support = 1.0 - conf
            moved = None
            others = [s for s in sources if s.id not in claim.cited_ids] if cited else []
            if others:
                moved = self._grounded_elsewhere(claim.text, others)
            _, share = _best_share(claim.text, texts)
            if moved is not None:
                gaps.append(
                    _Gap(
                        "partial_support",
                        f"cited {', '.join(claim.cited_ids)} does not state the claim; "
                        f"{moved} does",
                        (*claim.cited_ids, moved),
                    )
                )
            elif spec.kind == "conflict" and (share >= 0.5 or spec.anchored):
                gaps.append(_Gap("contradicted", spec.reason or "", evidence_ids))
                support = 0.0
            elif spec.kind == "addition" and (
                spec.anchored
                or lexical_support(without_quantities(claim.text), texts, by_part=False)[0] >= 0.6
            ):
                gaps.append(_Gap("over_extrapolation", spec.reason or "", evidence_ids))
                support = min(support, spec.coverage)
            elif not phantoms or not cited:
                where = "the cited source" if cited else "any source"
                weak = (
                    f" (semantic match {conf:.2f} below {self.config.support_threshold:.2f})"
                    if status == "grounded"
                    else ""
                )
                gaps.append(_Gap("unsupported", f"not found in {where}{weak}", evidence_ids))
        return _Outcome(
            evidence_ids,
            round(support, 4),
            method,
            tuple(gaps),
            evidence=ev_text,
            evidence_source_id=src_id,
            evidence_start=ev_start,
            evidence_end=ev_end,
        )

    def _grounded_elsewhere(self, text: str, others: Sequence[SourceChunk]) -> str | None:
        for other in others:
            share, _ = lexical_support(text, [other.text])
            if share >= LEXICAL_SUPPORT and compare_specifics(text, [other.text]).kind == "ok":
                return other.id
        try:
            g = self.grounding.verify_statement(text, others)
        except Exception:  # noqa: BLE001
            return None
        if getattr(g, "status", None) != "grounded":
            return None
        src = getattr(g, "source_chunk_id", None)
        chosen = [s.text for s in others if s.id == src] or [s.text for s in others]
        if compare_specifics(text, chosen).kind != "ok":
            return None
        return str(src) if src else None

    def _judge(
        self, claim: Claim, outcome: _Outcome, by_id: dict[str, SourceChunk], tally: _Tally
    ) -> _Outcome:
        """The LLM direct evidence check (SPEC-16 method 1) on top of a local outcome."""
        assert self.llm is not None
        evidence = "\n\n".join(f"[{i}] {by_id[i].text}" for i in outcome.evidence_ids)
        try:
            response = self.llm.chat(direct_check_messages(claim.text, evidence), max_tokens=40)
        except LLMError as exc:
            return replace(outcome, llm_status=exc.status)
        tally.add(response)
        tokens = response.prompt_tokens + response.completion_tokens
        try:
            p = parse_support_score(response.text)
        except UnparseableReplyError:
            return replace(outcome, llm_status="failed", llm_tokens=tokens)
        gaps = outcome.gaps
        if p < self.config.support_threshold and not gaps:
            gaps = (_Gap("unsupported", f"LLM judge rated support {p:.2f}", outcome.evidence_ids),)
        return replace(outcome, llm_support=p, llm_status="ok", llm_tokens=tokens, gaps=gaps)

    # --- evidence dependence ---------------------------------------------------------------

    def _dependence(
        self,
        claims: Sequence[Claim],
        sources: Sequence[SourceChunk],
        question: str | None,
        tally: _Tally,
        warnings: list[str],
    ) -> tuple[list[tuple[float, float] | None], CheckStatus, float | None]:
        none: list[tuple[float, float] | None] = [None] * len(claims)
        if self.llm is None:
            return none, unavailable("no LLM configured"), None
        if self.embedder is None:
            return none, unavailable("no embedder configured"), None
        if not question or not question.strip():
            return none, skipped("no question given to regenerate the answer"), None
        if not claims:
            return none, skipped("no claims"), None
        evidence = "\n\n".join(s.text for s in sources)
        try:
            with_ev = self.llm.chat(with_evidence_messages(question, evidence), max_tokens=160)
            tally.add(with_ev)
            without = self.llm.chat(without_evidence_messages(question), max_tokens=160)
            tally.add(without)
        except LLMError as exc:
            status = unavailable(str(exc)) if exc.status == "unavailable" else failed(str(exc))
            return none, status, None
        if not with_ev.text.strip() or not without.text.strip():
            return none, failed("the LLM returned an empty regeneration"), None
        with_sents = [s.text for s in split_sentences(with_ev.text)] or [with_ev.text]
        without_sents = [s.text for s in split_sentences(without.text)] or [without.text]
        texts = [c.text for c in claims]
        vecs = self.embedder.encode([with_ev.text, without.text, *with_sents, *without_sents,
                                     *texts])  # fmt: skip
        a, b = vecs[0], vecs[1]
        nw = len(with_sents)
        w = vecs[2 : 2 + nw]
        wo = vecs[2 + nw : 2 + nw + len(without_sents)]
        cv = vecs[2 + nw + len(without_sents) :]
        answer_dep = float(np.clip(1.0 - float(a @ b), 0.0, 1.0))
        if answer_dep < self.config.dependence_threshold:
            warnings.append(
                f"the regenerated answer barely changes without the evidence "
                f"(dependence {answer_dep:.2f})"
            )
        per_claim: list[tuple[float, float] | None] = []
        for row in cv:
            dep = float(np.clip(1.0 - float(np.max(wo @ row)), 0.0, 1.0))
            cons = float(np.clip(float(np.max(w @ row)), 0.0, 1.0))
            per_claim.append((round(dep, 4), round(cons, 4)))
        return per_claim, OK, round(answer_dep, 4)

    # --- report --------------------------------------------------------------------------

    def _claim_verification(
        self,
        claim: Claim,
        outcome: _Outcome,
        dependence: float | None,
        consistency: float | None,
        cached: bool,
    ) -> ClaimVerification:
        gaps = list(outcome.gaps)
        if dependence is not None and dependence < self.config.dependence_threshold:
            gaps.append(
                _Gap(
                    "evidence_independent",
                    f"the model states this without the evidence (dependence {dependence:.2f})",
                )
            )
        supports = [x for x in (outcome.support, outcome.llm_support) if x is not None]
        confidence = round(min(supports), 4) if supports else None
        bits = (
            round(gap_bits_from_probability(outcome.llm_support), 4)
            if outcome.llm_support is not None
            else None
        )
        gaps.sort(key=lambda g: _SEVERITY_ORDER[g.gap_type])
        flagged = bool(gaps)
        justified = (
            not flagged and confidence is not None and confidence >= self.config.support_threshold
        )
        return ClaimVerification(
            claim_id=claim.claim_id,
            claim_text=claim.text,
            start=claim.start,
            end=claim.end,
            evidence_ids=outcome.evidence_ids,
            cited_ids=claim.cited_ids,
            phantom_citations=claim.phantom_labels,
            evidence_support=outcome.support,
            llm_support=outcome.llm_support,
            evidence_dependence=dependence,
            consistency_score=consistency,
            confidence=confidence,
            confidence_justified=justified,
            evidence_gap_bits=bits if flagged or bits is not None else None,
            is_flagged=flagged,
            flag_reason=gaps[0].gap_type if gaps else None,
            reason="; ".join(g.reason for g in gaps if g.reason) or None,
            verification_method=outcome.method,
            evidence=outcome.evidence,
            evidence_source_id=outcome.evidence_source_id,
            evidence_start=outcome.evidence_start,
            evidence_end=outcome.evidence_end,
            llm_checked=outcome.llm_status == "ok",
            llm_tokens=outcome.llm_tokens,
            cached=cached,
        )

    def _build_report(
        self,
        rid: str,
        claims: Sequence[Claim],
        audited: Sequence[Claim],
        outcomes: Sequence[_Outcome],
        cached: Sequence[bool],
        dependence: Sequence[tuple[float, float] | None],
        answer_dependence: float | None,
        extraction: str,
        warnings: list[str],
        checks: dict[str, CheckStatus],
        tally: _Tally,
        started: float,
    ) -> HallucinationReport:
        cfg = self.config
        verifications: list[ClaimVerification] = []
        gaps: list[EpistemicGap] = []
        for claim, outcome, hit, dep in zip(audited, outcomes, cached, dependence, strict=True):
            cv = self._claim_verification(
                claim, outcome, dep[0] if dep else None, dep[1] if dep else None, hit
            )
            verifications.append(cv)
            all_gaps = list(outcome.gaps)
            if cv.evidence_dependence is not None and cv.evidence_dependence < (
                cfg.dependence_threshold
            ):
                all_gaps.append(
                    _Gap("evidence_independent", "the model states this without the evidence")
                )
            for g in all_gaps:
                bits = cv.evidence_gap_bits
                critical = g.gap_type in CRITICAL_GAP_TYPES or (
                    bits is not None and bits > cfg.gap_threshold_bits
                )
                gaps.append(
                    EpistemicGap(
                        claim_id=claim.claim_id,
                        claim_text=claim.text,
                        gap_type=g.gap_type,
                        severity="critical" if critical else "warning",
                        reason=g.reason,
                        suggested_action=SUGGESTED_ACTIONS[g.gap_type],
                        gap_bits=bits,
                        source_ids=g.source_ids,
                    )
                )
        confidences = [c.confidence for c in verifications if c.confidence is not None]
        bits_all = [g.gap_bits for g in gaps if g.gap_bits is not None]
        critical = any(g.severity == "critical" for g in gaps)
        guidance = _retry_guidance(gaps) if gaps else None
        price_in, price_out = cfg.prompt_cost_per_1k, cfg.completion_cost_per_1k
        cost = None
        if price_in is not None and price_out is not None:
            cost = round(
                tally.prompt_tokens / 1000 * price_in + tally.completion_tokens / 1000 * price_out,
                6,
            )
        usage = VerificationUsage(
            llm_calls=tally.calls,
            cached_llm_calls=tally.cached,
            prompt_tokens=tally.prompt_tokens,
            completion_tokens=tally.completion_tokens,
            llm_latency_ms=tally.latency_ms,
            cache_hits=tally.cache_hits,
            cache_misses=tally.cache_misses,
            cost=cost,
        )
        return HallucinationReport(
            response_id=rid,
            total_claims=len(claims),
            verified_claims=len(verifications),
            flagged_claims=sum(c.is_flagged for c in verifications),
            claims=tuple(verifications),
            gaps=tuple(gaps),
            overall_confidence=round(float(np.mean(confidences)), 4) if confidences else None,
            max_gap_bits=max(bits_all) if bits_all else None,
            has_critical_gaps=critical,
            should_retry=critical and cfg.on_failure == "retry" and cfg.max_retries > 0,
            retry_guidance=guidance,
            evidence_dependence=answer_dependence,
            skipped=False,
            skip_reason=None,
            claim_extraction=extraction,
            mode=cfg.mode,
            warnings=tuple(warnings),
            checks=checks,
            usage=usage,
            latency_ms=(time.perf_counter() - started) * 1000,
        )

    def _skipped_report(self, rid: str, reason: str, started: float) -> HallucinationReport:
        status = skipped(reason)
        return HallucinationReport(
            response_id=rid,
            total_claims=0,
            verified_claims=0,
            flagged_claims=0,
            claims=(),
            gaps=(),
            overall_confidence=None,
            max_gap_bits=None,
            has_critical_gaps=False,
            should_retry=False,
            retry_guidance=None,
            evidence_dependence=None,
            skipped=True,
            skip_reason=reason,
            claim_extraction=None,
            mode=self.config.mode,
            warnings=(),
            checks=dict.fromkeys(("claims", "audit", "llm_direct", "dependence"), status),
            latency_ms=(time.perf_counter() - started) * 1000,
        )


def _doubtful(g: Any, spec: SpecificsFinding) -> bool:
    """True when a grounding contradiction rests on a reading the rule check does not share."""
    evidence = (getattr(g, "supporting_evidence", None) or "").rstrip()
    if evidence.endswith("?"):
        return True
    return spec.kind == "addition"


def _add_internal_gaps(
    answer: str, claims: Sequence[Claim], outcomes: Sequence[_Outcome]
) -> list[_Outcome]:
    """Flag a count that disagrees with the list the answer itself gives right after it."""
    result = list(outcomes)
    for sentence in split_sentences(answer):
        found = stated_count_mismatch(sentence.text)
        if found is None:
            continue
        pos = sentence.start + found[0]
        for i, claim in enumerate(claims):
            if claim.start <= pos < claim.end:
                gap = _Gap(
                    "contradicted",
                    f"states {found[1]} but lists {found[2]} items",
                    result[i].evidence_ids,
                )
                result[i] = replace(result[i], gaps=(gap, *result[i].gaps), support=0.0)
                break
    return result


def _best_share(claim: str, texts: Sequence[str]) -> tuple[str, float]:
    return best_clause(claim, "\n".join(texts))


def _specifics_gap(
    spec: SpecificsFinding, support: float, src_id: str | None, evidence_ids: tuple[str, ...]
) -> tuple[float, list[_Gap]]:
    where = (src_id,) if src_id else evidence_ids
    if spec.kind == "conflict":
        return 0.0, [_Gap("contradicted", spec.reason or "", where)]
    if spec.kind == "addition":
        return min(support, spec.coverage), [_Gap("over_extrapolation", spec.reason or "", where)]
    return support, []


def _llm_status(
    has_llm: bool, cfg: VerificationConfig, outcomes: Sequence[_Outcome], selected: Sequence[bool]
) -> CheckStatus:
    if not has_llm:
        return unavailable("no LLM configured")
    if not any(selected):
        return skipped(f"no claim selected in {cfg.mode} mode")
    statuses = [o.llm_status for o, s in zip(outcomes, selected, strict=True) if s]
    ok = sum(s == "ok" for s in statuses)
    bad = [s for s in statuses if s not in ("ok", None)]
    if not bad:
        return OK
    if ok:
        return failed(f"{len(bad)} of {len(statuses)} LLM checks failed")
    if all(s == "unavailable" for s in bad):
        return unavailable("LLM server unavailable")
    return failed(f"all {len(bad)} LLM checks failed or were unparseable")


def _retry_guidance(gaps: Sequence[EpistemicGap]) -> str:
    parts = []
    for g in gaps:
        where = f" ({', '.join(g.source_ids)})" if g.source_ids else ""
        parts.append(f"{g.claim_id}: {g.gap_type.replace('_', ' ')}{where}")
    return (
        "Answer again using only the given sources and cite the source of each claim. "
        "Fix: " + "; ".join(parts) + "."
    )


def _align_claims(lines: Sequence[str], rule_claims: Sequence[Claim]) -> list[Claim]:
    """Keep LLM claims that match a statement of the answer; they inherit its span and cites.

    A claim is dropped when no statement matches it (token-set ratio below 80) or when it
    carries a number the statement lacks (the extractor must not invent specifics).
    """
    from rapidfuzz import fuzz

    out: list[Claim] = []
    for line in lines:
        best, score = None, 0.0
        for rc in rule_claims:
            s = fuzz.token_set_ratio(line.lower(), rc.text.lower())
            if s > score:
                best, score = rc, s
        if best is None or score < 80:
            continue
        values = {q.value for q in quantities(best.text)}
        if any(q.value not in values for q in quantities(line)):
            continue
        out.append(Claim(f"c{len(out) + 1}", line, best.start, best.end, best.citations))
    return out
