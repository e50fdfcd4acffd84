"""The answer grounding verifier: every statement of an answer checked against its sources.

Tiers, in order: exact (normalised substring) -> fuzzy (rapidfuzz) -> semantic (MiniLM cosine
against source sentences and overlapping sentence windows; a run-on transcript turn is read in
pieces of about 40 words; when nothing is similar enough, the most similar sentence that names
every term of the statement, a lexical match) -> inference (NLI cross-encoder
and/or LLM judge, when given) -> unsupported. A fuzzy or semantic match is accepted only when
the statement's specifics (numbers, doses, vital signs, negation, laterality, named drugs and
conditions) agree with the evidence around it; otherwise the statement is ``contradicted``
(the evidence asserts another value) or ``unsupported``.
"""

from __future__ import annotations

import json
import logging
import re
import textwrap
import time
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np
from rapidfuzz import fuzz

from core.assertion import QUESTION_RUN, is_question, reply_index
from core.checks import OK, CheckStatus, failed, skipped, unavailable
from core.grounding.facts import (
    FAMILIES,
    NAME_FAMILIES,
    FactCheck,
    compare_facts,
    known_families,
    mentions,
    statement_terms,
)
from core.grounding.inference import Judgement, llm_judge, nli_judge
from core.grounding.learned import EVIDENCE_PASSAGES, PASSAGE_WORDS
from core.grounding.perturb import negation_cue, opposite_as_written, turned_round
from core.grounding.structured import reading
from core.grounding.support import (
    evidence_keys,
    keys_of,
    novelty,
    statement_words,
    unsaid_phrases,
    unsupported_words,
)
from core.grounding.types import GroundingResult, Method, SourceChunk, StatementGrounding, Status
from core.lexicon import shorthand_used, written_out
from core.text import (
    Span,
    asserts_nothing,
    normalize,
    normalize_with_map,
    short_hash,
    split_sentences,
)
from core.text import split_statements as _split_statements

if TYPE_CHECKING:
    from core.backends.embedder import Embedder
    from core.backends.llm import LLMClient
    from core.backends.nli import NLIModel
    from core.grounding.learned import SupportModel

log = logging.getLogger(__name__)

TIERS = ("exact", "fuzzy", "semantic", "learned", "nli", "llm_judge", "inference")


@lru_cache(maxsize=1)
def tuned_parameters() -> dict[str, Any]:
    """Thresholds chosen on development data (core/data/grounding_params.json)."""
    text = (Path(__file__).resolve().parent.parent / "data" / "grounding_params.json").read_text(
        "utf-8"
    )
    return dict(json.loads(text))


@lru_cache(maxsize=4096)
def _normalized(text: str) -> tuple[str, list[int]]:
    """Normalised chunk text and offset map, cached: a source is normalised once."""
    return normalize_with_map(text)


@dataclass(frozen=True, slots=True)
class _Unit:
    """A source sentence or a window of consecutive sentences of one chunk."""

    chunk: int
    first: int  # index of the first sentence in the chunk
    last: int  # index of the last sentence (inclusive)
    start: int
    end: int
    text: str


_PIECE_WORDS = 40  # a run-on sentence is read in pieces of about this many words
_WORD_RE = re.compile(r"\S+")
# Where speech starts a new thought: a run-on sentence is cut before these if it can be.
_BREAK_WORDS = frozenset("okay ok alright so now and".split())


def _pieces(text: str, sentence: Span) -> list[Span]:
    """A run-on sentence (a transcript turn without punctuation) cut into pieces of about
    ``_PIECE_WORDS`` words, before a word that starts a new thought where one is near, so that
    what is said late in a long turn is still embedded (the model reads 256 tokens)."""
    words = list(_WORD_RE.finditer(sentence.text))
    if len(words) <= 3 * _PIECE_WORDS // 2:
        return [sentence]
    out: list[Span] = []
    begin = 0
    while len(words) - begin > 3 * _PIECE_WORDS // 2:
        cut = begin + _PIECE_WORDS
        for k in range(cut, cut - _PIECE_WORDS // 2, -1):  # look back for a new thought
            if words[k].group(0).lower() in _BREAK_WORDS:
                cut = k
                break
        a = sentence.start + words[begin].start()
        b = sentence.start + words[cut - 1].end()
        out.append(Span(text[a:b], a, b))
        begin = cut
    a, b = sentence.start + words[begin].start(), sentence.end
    out.append(Span(text[a:b], a, b))
    return out


class _SourceIndex:
    """Sentences and overlapping windows of all chunks, normalised once.

    A structured chunk (JSON, FHIR resources, a table) is read as sentences
    (:func:`core.grounding.structured.reading`): ``sources`` hold what is read, ``readings``
    map it back to the chunk as given (:meth:`located`)."""

    def __init__(
        self, sources: Sequence[SourceChunk], window: int, structured: bool = True
    ) -> None:
        self.readings = [reading(c.text) if structured else None for c in sources]
        self.sources = [
            c if r is None else SourceChunk(c.id, r.text, c.type, c.similarity)
            for c, r in zip(sources, self.readings, strict=True)
        ]
        self.sentences: list[list[Span]] = []
        self.units: list[_Unit] = []
        self.norm: list[tuple[str, list[int]]] = []
        for ci, chunk in enumerate(self.sources):
            sentences = [p for s in split_sentences(chunk.text) for p in _pieces(chunk.text, s)]
            self.sentences.append(sentences)
            self.norm.append(_normalized(chunk.text))
            for size in range(1, window + 1):
                for i in range(0, max(0, len(sentences) - size + 1)):
                    first, last = sentences[i], sentences[i + size - 1]
                    text = chunk.text[first.start : last.end]
                    self.units.append(_Unit(ci, i, i + size - 1, first.start, last.end, text))
        self.unit_norm = [self._unit_norm(u) for u in self.units]
        self.passages = _passages(self.sources, self.sentences)
        self.vectors: np.ndarray | None = None
        self.passage_vectors: np.ndarray | None = None

    @cached_property
    def shorthand(self) -> frozenset[str]:
        """The clinical shorthand the sources write: a statement keeps it as written."""
        return shorthand_used(c.text for c in self.sources)

    def located(self, unit: _Unit) -> tuple[int, int]:
        """``unit``'s ``[start, end)`` in its chunk as given: for a structured chunk, the
        records it was read from."""
        r = self.readings[unit.chunk]
        return (unit.start, unit.end) if r is None else r.raw_span(unit.start, unit.end)

    def _unit_norm(self, unit: _Unit) -> str:
        """The unit's normalised text, cut from its chunk's (normalised once)."""
        norm, mapping = self.norm[unit.chunk]
        a, b = bisect_left(mapping, unit.start), bisect_left(mapping, unit.end)
        return norm[a:b].strip()

    def source_sentences(self, chunk: int) -> list[str]:
        return [s.text for s in self.sentences[chunk]]

    def sentence_texts(self) -> list[str]:
        return [s.text for sentences in self.sentences for s in sentences]

    def embed(self, embedder: Embedder, extra: Sequence[str] = ()) -> np.ndarray:
        """Sentence vectors from the embedder; a window's vector is its sentences' mean.

        ``extra`` texts (the statements) ride along in the same call; their vectors are
        returned."""
        texts = self.sentence_texts()
        both = embedder.encode([*texts, *extra])
        flat, extra_vectors = both[: len(texts)], both[len(texts) :]
        self.vectors = self._window_vectors(flat, self.units)
        self.passage_vectors = self._window_vectors(flat, self.passages)
        return extra_vectors

    def _window_vectors(self, flat: np.ndarray, units: Sequence[_Unit]) -> np.ndarray:
        """Each unit's normalised sum of its sentences' vectors (``flat``: one row per
        sentence). Rows are added in sentence order and each norm is a dot product, as
        ``flat[a:b].sum(axis=0)`` and ``np.linalg.norm`` do: the same float32 values."""
        if not units:
            return np.zeros((0, flat.shape[1] if flat.size else 1), np.float32)
        offsets = np.cumsum([0, *(len(s) for s in self.sentences)])
        first = np.array([offsets[u.chunk] + u.first for u in units])
        size = np.array([u.last - u.first + 1 for u in units])
        sums = flat[first]  # a copy
        for j in range(1, int(size.max())):
            rows = np.flatnonzero(size > j)
            sums[rows] += flat[first[rows] + j]
        norms = np.sqrt(np.array([v.dot(v) for v in sums], dtype=sums.dtype))
        norms[norms == 0] = 1
        return sums / norms[:, None]

    def best_passages(self, statement: str, vector: np.ndarray | None, k: int) -> list[_Unit]:
        """The ``k`` passages most like the statement: cosine plus half the share of the
        statement's content words that the passage says (what the words alone find, such
        as a drug name in a list, is found even where the meaning embeds far away); without
        a vector, by the words alone."""
        if vector is None or self.passage_vectors is None:
            sims = np.zeros(len(self.passages))
        else:
            sims = self.passage_vectors @ vector
        words = {key for key, _ in statement_words(statement)}
        if words:
            said = np.array(
                [len(words & evidence_keys(p.text)) / len(words) for p in self.passages]
            )
            sims = sims + 0.5 * said
        order = np.argsort(-sims, kind="stable")[:k]
        return [self.passages[int(i)] for i in order]

    def evidence(self, units: Sequence[_Unit]) -> str:
        """The text of several passages in source order, overlapping ones merged, the rest
        joined by an ellipsis."""
        spans: list[tuple[int, int, int]] = []
        for u in sorted(units, key=lambda u: (u.chunk, u.start)):
            if spans and spans[-1][0] == u.chunk and u.start <= spans[-1][2]:
                chunk, a, b = spans.pop()
                spans.append((chunk, a, max(b, u.end)))
            else:
                spans.append((u.chunk, u.start, u.end))
        return " … ".join(self.sources[c].text[a:b].strip() for c, a, b in spans)

    def context(self, unit: _Unit, margin: int = 2) -> list[str]:
        """The unit's sentences with ``margin`` neighbours each side (for fact checks)."""
        sentences = self.sentences[unit.chunk]
        lo, hi = max(0, unit.first - margin), min(len(sentences), unit.last + margin + 1)
        return [s.text for s in sentences[lo:hi]]

    def focus(self, unit: _Unit) -> list[str]:
        """The unit's own sentences plus the next one, or, when the unit ends in a run of
        questions, up to the reply to them ("any recent flare ups ?" "any back pain ?" "no")."""
        sentences = self.sentences[unit.chunk]
        ahead = [s.text for s in sentences[unit.last : unit.last + QUESTION_RUN + 1]]
        end = unit.last + reply_index(ahead, 0) + 1
        return [s.text for s in sentences[unit.first : end]]

    def lead_in(self, chunk: int, start: int, end: int, words: int = 3) -> str:
        """The matched text ``[start, end)`` with up to ``words`` word(s) before it in its
        sentence, small words such as "of", "any" not counted: what decides the negation of a
        verbatim match ("no masses" vs "masses", "no evidence of any rebound")."""
        text = self.sources[chunk].text
        floor = max((s.start for s in self.sentences[chunk] if s.start <= start), default=0)
        a, counted = start, 0
        while counted < words:
            b = text.rfind(" ", floor, max(floor, a - 1))
            if b < 0:
                a = floor
                break
            # "no evidence of any rebound": small words between a cue and its noun are free
            counted += text[b + 1 : a].strip().lower() not in _LEAD_IN_FREE
            a = b
        return text[max(floor, a) : end].strip()

    def verbatim_focus(self, chunk: int, start: int, end: int) -> list[str]:
        """What decides the negation of a verbatim match: its lead-in; but a match inside a
        question ("do you exercise regularly ?") is read as the question with its reply."""
        sentences = self.sentences[chunk]
        k = next((i for i, s in enumerate(sentences) if s.start <= start < s.end), -1)
        if k >= 0 and is_question(sentences[k].text):
            return [s.text for s in sentences[k : k + 2]]
        return [self.lead_in(chunk, start, end)]

    def sentence_span(self, chunk: int, start: int, end: int) -> _Unit:
        """The sentences of ``chunk`` overlapping ``[start, end)`` as a unit."""
        sentences = self.sentences[chunk]
        idx = [i for i, s in enumerate(sentences) if s.start < end and s.end > start] or [0]
        text = self.sources[chunk].text
        if not sentences:
            return _Unit(chunk, 0, 0, start, end, text[start:end])
        return _Unit(chunk, idx[0], idx[-1], start, end, text[start:end])


def _passages(sources: Sequence[SourceChunk], sentences: list[list[Span]]) -> list[_Unit]:
    """Each chunk cut into passages: from every sentence, it and the sentences after it up to
    about :data:`PASSAGE_WORDS` words (at least one sentence); a passage inside the one
    before is left out."""
    out: list[_Unit] = []
    for ci, spans in enumerate(sentences):
        counts = [len(_WORD_RE.findall(s.text)) for s in spans]
        last_end = -1
        for i in range(len(spans)):
            j, words = i, counts[i]
            while j + 1 < len(spans) and words + counts[j + 1] <= PASSAGE_WORDS:
                j += 1
                words += counts[j]
            if j == last_end:
                continue
            last_end = j
            a, b = spans[i].start, spans[j].end
            out.append(_Unit(ci, i, j, a, b, sources[ci].text[a:b]))
    return out


_LEAD_IN_FREE = frozenset("of any the a an some your my his her their".split())


@dataclass(frozen=True, slots=True)
class _Decision:
    status: Status
    method: Method
    confidence: float
    unit: _Unit | None
    reason: str | None
    similarity: float | None = None
    support: float | None = None
    evidence: str | None = None  # what the learned tier read (for the unsupported words)
    signals: tuple[tuple[str, float], ...] = ()
    marks: tuple[tuple[int, int], ...] = ()  # words of the statement marked besides those
    family: str | None = None  # the family of fact checks whose conflict decided it
    said: tuple[str, ...] = ()  # the statement's words for the specific that decided it


@dataclass(frozen=True, slots=True)
class _ModelPairs:
    """What the learned tier reads: per statement its passages, their text and its negation
    cue; ``pairs`` holds each statement against its evidence, then the opposites of the
    rows in ``contrasted`` against theirs."""

    units: list[list[_Unit]]
    evidence: list[str]
    cues: list[tuple[int, int, str] | None]
    contrasted: list[int]
    pairs: list[tuple[str, str]]
    read: list[str]  # each statement as the model reads it (shorthand written out)


# answers whose model pairs verify_batch scores in one call: a few hundred pairs, enough for
# batches sorted by length to be tightly padded, while the call holds the model (and its lock,
# which a server's other requests wait on) for a few seconds at most
BATCH_ANSWERS = 16


class GroundingVerifier:
    """Verifies each statement of an answer against source chunks (offline).

    Args:
        embedder: sentence embedder for the semantic tier; ``None``: tier ``unavailable``.
        nli: NLI cross-encoder for the inference tier; ``None``: that judge ``unavailable``.
        llm: OpenAI-compatible client used as an LLM judge; ``None``: ``unavailable``.
        learned: the learned verifier (:class:`~core.grounding.learned.SupportModel`); when
            given, it decides every statement that exact matching does not settle, and the
            fuzzy and semantic tiers only find its evidence; ``None``: the rules decide.
        fact_families: which families of fact checks run (default: those the shipped
            settings keep; all of :data:`~core.grounding.facts.FAMILIES` without a model).
        semantic_threshold: least cosine for a semantic match against notes, documents and
            messages (default from core/data/grounding_params.json).
        transcript_threshold: the same against transcripts, where speech paraphrases the
            statement loosely (default: tuned on ACI-Bench development dialogues).
        fuzzy_threshold: least rapidfuzz partial ratio (0-1) for a fuzzy match.
        grounding_threshold: least grounding score for ``overall_grounded``.
        window: largest number of consecutive source sentences compared as one unit.
        candidates: best semantic candidates whose facts are checked per statement.
        split: ``statements`` splits coordinated claims; ``sentences`` keeps sentences whole.
        structured: read a source that is a record (JSON, FHIR, a table) as sentences
            (:mod:`core.grounding.structured`); False reads every source as raw text.
    """

    def __init__(
        self,
        *,
        embedder: Embedder | None = None,
        nli: NLIModel | None = None,
        llm: LLMClient | None = None,
        learned: SupportModel | None = None,
        fact_families: Sequence[str] | None = None,
        semantic_threshold: float | None = None,
        transcript_threshold: float | None = None,
        fuzzy_threshold: float | None = None,
        grounding_threshold: float = 0.7,
        window: int = 3,
        candidates: int = 5,
        split: Literal["statements", "sentences"] = "statements",
        structured: bool = True,
    ) -> None:
        params = tuned_parameters()
        self.structured = structured
        self.embedder = embedder
        self.nli = nli
        self.llm = llm
        self.learned = learned
        combination = learned.settings.get("combination") if learned is not None else None
        if combination:
            check_combination(combination)
        self.combination: dict[str, Any] | None = combination
        if fact_families is None:
            kept = (combination or {}).get("fact_families")
            fact_families = FAMILIES if kept is None else tuple(kept)
        # (a combination fitted when drugs and conditions were one family, "names", is
        # fitted again by benchmarks/fit_verifier.py)
        known_families(fact_families)
        self.fact_families = tuple(fact_families)
        self.semantic_threshold = float(
            params["semantic_threshold"] if semantic_threshold is None else semantic_threshold
        )
        self.transcript_threshold = float(
            params["transcript_threshold"] if transcript_threshold is None else transcript_threshold
        )
        self.fuzzy_threshold = float(
            params["fuzzy_threshold"] if fuzzy_threshold is None else fuzzy_threshold
        )
        self.nli_threshold = float(params.get("nli_threshold", 0.5))
        for name, value in (
            ("semantic_threshold", self.semantic_threshold),
            ("transcript_threshold", self.transcript_threshold),
            ("fuzzy_threshold", self.fuzzy_threshold),
            ("grounding_threshold", grounding_threshold),
        ):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name}: must be within [0, 1], got {value}")
        if window < 1 or candidates < 1:
            raise ValueError("window and candidates: must be at least 1")
        if split not in ("statements", "sentences"):
            raise ValueError("split: must be 'statements' or 'sentences'")
        self.grounding_threshold = grounding_threshold
        self.window = window
        self.candidates = candidates
        self.split = split

    # -- public API ------------------------------------------------------------------------

    def split_statements(self, answer: str) -> list[Span]:
        """The answer's statements with offsets (see :func:`core.text.split_statements`),
        without those that assert nothing while another statement says something."""
        return self._statements(answer)[0]

    def _statements(self, answer: str) -> tuple[list[Span], int]:
        """The statements to verify, and how many sentences were passed over because they
        assert nothing (:func:`core.text.asserts_nothing`: a bare reply, a greeting, a
        question that makes no claim). Sources cannot bear out "Yes." or "Have you seen
        it?": verified, such a sentence was flagged, and an answer's least support was its
        and not that of its claims. An answer of nothing else keeps them all, to be verified
        (and flagged) as before: a bare "Yes." may answer a question the verifier never sees."""
        spans = split_sentences(answer) if self.split == "sentences" else _split_statements(answer)
        said = [span for span in spans if not asserts_nothing(span.text)]
        return (said, len(spans) - len(said)) if said else (spans, 0)

    def verify(self, answer: str, sources: Sequence[SourceChunk]) -> GroundingResult:
        """Ground every statement of ``answer`` in ``sources``.

        Raises:
            ValueError: the answer is not a string or holds no statement; duplicate source ids.
        """
        started = time.perf_counter()
        return self._verify_index(*self._prepare(answer, sources), started=started)

    def _prepare(
        self, answer: str, sources: Sequence[SourceChunk]
    ) -> tuple[str, list[Span], _SourceIndex, int]:
        """The checked answer, its statements, its sources' index, and how many of its
        sentences assert nothing and are passed over."""
        if not isinstance(answer, str):
            raise ValueError("answer: must be a string")
        statements, passed_over = self._statements(answer)
        if not statements:
            raise ValueError("answer: contains no statement to verify")
        _check_sources(sources)
        return answer, statements, self._index(sources), passed_over

    def _index(self, sources: Sequence[SourceChunk]) -> _SourceIndex:
        return _SourceIndex(sources, self.window, self.structured)

    def _verify_index(
        self,
        answer: str,
        statements: list[Span],
        index: _SourceIndex,
        passed_over: int,
        *,
        started: float,
    ) -> GroundingResult:
        """Ground the prepared answer (``started``: when its own check began, for the log)."""
        sources = index.sources
        checks: dict[str, CheckStatus] = {}
        warnings: list[str] = []
        if passed_over:
            warnings.append(
                f"{passed_over} sentence{'s' if passed_over > 1 else ''} not verified: "
                "a reply, greeting or question that asserts nothing the sources could bear out"
            )
        results = self._verify_all(statements, index, checks, warnings)
        result = _assemble(results, checks, warnings, self.grounding_threshold, bool(sources))
        log.info(
            "grounding answer=%s statements=%d sources=%d grounded=%d contradicted=%d in %.0f ms",
            short_hash(answer),
            len(statements),
            len(sources),
            sum(r.is_grounded for r in results),
            result.contradicted_count,
            (time.perf_counter() - started) * 1000,
        )
        return result

    def verify_statement(
        self, statement: str, sources: Sequence[SourceChunk]
    ) -> StatementGrounding:
        """Ground one statement as a whole (no further splitting)."""
        if not isinstance(statement, str) or not statement.strip():
            raise ValueError("statement: must be a non-empty string")
        _check_sources(sources)
        index = self._index(sources)
        span = Span(statement, 0, len(statement))
        return self._verify_all([span], index, {}, [])[0]

    def verify_statements(
        self, statements: Sequence[str], sources: Sequence[SourceChunk]
    ) -> list[StatementGrounding]:
        """Ground several statements, each taken whole, against the same sources.

        The sources are split, normalised and embedded once for all statements.
        """
        spans = []
        for i, statement in enumerate(statements):
            if not isinstance(statement, str) or not statement.strip():
                raise ValueError(f"statements[{i}]: must be a non-empty string")
            spans.append(Span(statement, 0, len(statement)))
        _check_sources(sources)
        index = self._index(sources)
        return self._verify_all(spans, index, {}, [])

    def verify_batch(
        self, cases: Sequence[tuple[str, Sequence[SourceChunk]]]
    ) -> list[GroundingResult]:
        """Ground many answers; all texts are embedded in one pass first (fewer model calls).
        Each answer's sources are split (and a structured one read) once, for both passes."""
        prepared = [self._prepare(answer, sources) for answer, sources in cases]
        if self.embedder is not None:
            texts = [
                text
                for _, statements, index, _ in prepared
                for text in (*(s.text for s in statements), *index.sentence_texts())
            ]
            if texts:
                self.embedder.encode(list(dict.fromkeys(texts)))
        results: list[GroundingResult] = []
        for start in range(0, len(prepared), BATCH_ANSWERS):
            group = prepared[start : start + BATCH_ANSWERS]
            self._score_batch(group)
            # each answer's log line times its own check, not the batch's preparation
            results += [self._verify_index(*p, started=time.perf_counter()) for p in group]
        return results

    def _score_batch(self, prepared: Sequence[tuple[str, list[Span], _SourceIndex, int]]) -> None:
        """The learned model's pairs of many answers, scored in one call: sorted by length
        across the answers, its batches are padded less than one answer's few pairs alone.
        The model keeps the scores, so each answer's own pass reads them back unchanged; a
        failure here is left for that pass to meet and report."""
        if self.learned is None:
            return
        pairs: list[tuple[str, str]] = []
        for _, statements, index, _ in prepared:
            if not index.sources or not index.units:
                continue
            open_ = [
                i
                for i, span in enumerate(statements)
                if self._exact(normalize(span.text), span.text, index) is None
            ]
            if not open_:
                continue
            texts = [statements[i].text for i in open_]
            rows: list[np.ndarray | None] = [None] * len(open_)
            if self.embedder is not None:
                try:
                    rows = list(index.embed(self.embedder, texts))
                except Exception:  # the answer's own pass reports it
                    continue
            pairs += self._model_pairs(texts, rows, index).pairs
        if pairs:
            try:
                self.learned.logits(pairs)
            except Exception:  # each answer's own pass fails the tier and says why
                log.debug("batch scoring failed; each answer is scored on its own")

    def evidence_texts(
        self, statements: Sequence[str], sources: Sequence[SourceChunk]
    ) -> list[str]:
        """For each statement, the evidence the learned tier reads: its best passages joined
        (the same retrieval, so that what a model is trained on is what it is shown; without
        an embedder, passages are found by their words alone)."""
        _check_sources(sources)
        index = self._index(sources)
        if not index.passages:
            return ["" for _ in statements]
        vectors = None if self.embedder is None else index.embed(self.embedder, list(statements))
        return [
            index.evidence(
                index.best_passages(
                    written_out(s, index.shorthand),  # as the learned tier finds them
                    None if vectors is None else vectors[i],
                    EVIDENCE_PASSAGES,
                )
            )
            for i, s in enumerate(statements)
        ]

    # -- tiers -----------------------------------------------------------------------------

    def _verify_all(
        self,
        statements: list[Span],
        index: _SourceIndex,
        checks: dict[str, CheckStatus],
        warnings: list[str],
    ) -> list[StatementGrounding]:
        decisions: list[_Decision | None] = [None] * len(statements)
        if not index.sources or not index.units:
            for name in TIERS:
                checks[name] = skipped("no source text to check against")
            reason = "no source text to check against"
            return [
                _to_result(i, s, _Decision("unsupported", "unsupported", 1.0, None, reason), index)
                for i, s in enumerate(statements)
            ]
        norm_statements = [normalize(s.text) for s in statements]
        for i, span in enumerate(statements):
            decisions[i] = self._exact(norm_statements[i], span.text, index)
        checks["exact"] = OK
        open_ = [i for i, d in enumerate(decisions) if d is None]  # what exact left open
        for i in open_:
            decisions[i] = self._fuzzy(norm_statements[i], statements[i].text, index)
        checks["fuzzy"] = OK if open_ else skipped("every statement matched exactly")

        vectors: dict[int, np.ndarray] = {}
        best: dict[int, _Decision] = {}
        if self.embedder is None:
            checks["semantic"] = unavailable("no embedding model given")
        elif not open_:
            checks["semantic"] = skipped("every statement matched at an earlier tier")
        else:
            try:
                rows = index.embed(self.embedder, [statements[i].text for i in open_])
            except Exception as exc:  # the model failed: say so, keep the other tiers
                checks["semantic"] = failed(f"embedding failed ({type(exc).__name__})")
                log.warning("semantic tier failed: %s", type(exc).__name__)
            else:
                checks["semantic"] = OK
                vectors = {i: rows[k] for k, i in enumerate(open_)}
                for i in open_:
                    if decisions[i] is not None:
                        continue
                    decision, fallback = self._semantic(statements[i].text, vectors[i], index)
                    decisions[i] = decision
                    if fallback is not None:
                        best[i] = fallback

        if self.learned is None:
            checks["learned"] = unavailable("no learned verifier given")
        elif not open_:
            checks["learned"] = skipped("every statement matched exactly")
        else:
            self._learned_tier(statements, open_, vectors, decisions, best, index, checks)
        pending = [i for i, d in enumerate(decisions) if d is None or d.status == "unsupported"]
        self._inference(statements, pending, decisions, best, index, checks, warnings)
        return self._results(statements, decisions, best, index)

    def _results(
        self,
        statements: list[Span],
        decisions: list[_Decision | None],
        best: dict[int, _Decision],
        index: _SourceIndex,
    ) -> list[StatementGrounding]:
        results = []
        for i, span in enumerate(statements):
            decision = (
                decisions[i]
                or best.get(i)
                or _Decision("unsupported", "unsupported", 0.5, None, "no matching source text")
            )
            results.append(_to_result(i, span, decision, index))
        return results

    def _model_pairs(
        self, texts: Sequence[str], vectors: Sequence[np.ndarray | None], index: _SourceIndex
    ) -> _ModelPairs:
        """What the learned model reads for these statements: each against its best
        passages, and each that says something is present or absent turned round against
        the same evidence (its opposite: "denies chest pain" -> "reports chest pain"; a
        visit that bears out the opposite better speaks against the statement however well
        its words match). Only a word that says something is present or absent is flipped:
        on dev rows, turning copulas round too ("is" -> "is not") read twice as many
        statements and gained nothing. Clinical shorthand is written out on both sides, as a
        visit says it ("SOBOE": "short of breath on exertion"), but for what the other side
        writes the same way."""
        read = [written_out(t, index.shorthand) for t in texts]
        pairs_of = zip(read, vectors, strict=True)
        units = [index.best_passages(t, v, EVIDENCE_PASSAGES) for t, v in pairs_of]
        evidence = [index.evidence(u) for u in units]
        shown = [written_out(e, shorthand_used([t])) for t, e in zip(texts, evidence, strict=True)]
        cues = [negation_cue(t, generic=False) for t in read]
        opposites = [turned_round(t, c) for t, c in zip(read, cues, strict=True)]
        contrasted = [row for row, o in enumerate(opposites) if o is not None]
        pairs = list(zip(read, shown, strict=True))
        pairs += [(cast(str, opposites[row]), shown[row]) for row in contrasted]
        return _ModelPairs(units, evidence, cues, contrasted, pairs, read)

    def _learned_tier(
        self,
        statements: list[Span],
        open_: list[int],
        vectors: dict[int, np.ndarray],
        decisions: list[_Decision | None],
        best: dict[int, _Decision],
        index: _SourceIndex,
        checks: dict[str, CheckStatus],
    ) -> None:
        """Every statement exact matching left open, read by the learned model against its
        best passages. The decision is a fitted combination (:func:`combine`) of the model's
        probability, the share of the statement's words its evidence does not say, and what
        the rules found (their verdict, and a fact check of the best passage), and by how much
        the model prefers the statement's opposite (:func:`~core.grounding.perturb.negated`)
        against the same evidence; a statement not grounded is contradicted when the rules
        found a conflict or the evidence bears out its opposite, else unsupported."""
        assert self.learned is not None
        plan = self._model_pairs(
            [statements[i].text for i in open_], [vectors.get(i) for i in open_], index
        )
        texts = plan.read  # the statements as the model reads them
        units, evidence, cues, contrasted = plan.units, plan.evidence, plan.cues, plan.contrasted
        try:
            logits = self.learned.logits(plan.pairs).astype(np.float64)
        except Exception as exc:  # the rules' verdicts stand, and the check says why
            checks["learned"] = failed(f"learned verifier failed ({type(exc).__name__})")
            log.warning("learned tier failed: %s", type(exc).__name__)
            return
        checks["learned"] = OK
        probs = 1.0 / (1.0 + np.exp(-logits[: len(texts)]))
        opposite = np.zeros(len(texts))  # log-odds by which the opposite reads better
        opposite_borne = np.zeros(len(texts), dtype=bool)  # the opposite itself above even odds
        for k, row in enumerate(contrasted):
            other = logits[len(texts) + k]
            opposite[row] = float(np.clip(other - logits[row], -OPPOSITE_CLIP, OPPOSITE_CLIP))
            opposite_borne[row] = other >= 0
        source_keys = keys_of(c.text for c in index.sources)  # whole sources: read once
        for row, i in enumerate(open_):
            rules = decisions[i] or best.get(i)
            passage = units[row][0] if units[row] else None
            check = (
                _check_unit(texts[row], passage, index, self.fact_families)
                if passage is not None
                else None
            )
            signals = {
                "model": float(probs[row]),
                "new_words": novelty(texts[row], [evidence[row]]),
                "new_words_source": novelty(texts[row], keys=source_keys),
                # a conflict per family of fact checks: the fit weighs each by how often it
                # is right on development data (a dose conflict is rarely wrong; negation
                # read from a paraphrase more often is)
                **{
                    f"conflict_{family}": float(
                        check is not None and check.status == "conflict" and check.family == family
                    )
                    for family in FAMILIES
                },
                "missing": float(check is not None and check.status == "missing"),
                "opposite": float(opposite[row]),
                "rules_grounded": float(rules is not None and rules.status == "grounded"),
                "rules_contradicted": float(rules is not None and rules.status == "contradicted"),
            }
            support, grounded = combine(signals, self.combination)
            named = tuple(signals.items())
            # the rules' match is the tighter evidence span where they found one
            unit = rules.unit if rules is not None and rules.unit is not None else passage
            family: str | None = None  # of the conflict that makes it contradicted
            said: tuple[str, ...] = ()  # the statement's words the decisive check is about
            # a conflict of the negation family contradicts only where the model agrees
            negation_ok = negation_upheld(float(opposite[row]))
            if grounded:
                status, method, reason = "grounded", "inference", None
                if rules is not None and rules.status == "grounded":
                    method = rules.method
            elif (
                rules is not None
                and rules.status == "contradicted"
                and rules.family not in NAME_FAMILIES
                and (rules.family != "negation" or negation_ok)
            ):
                status, method, reason = "contradicted", rules.method, rules.reason
                family = rules.family
                said = rules.said
            elif (
                check is not None
                and check.status == "conflict"
                and check.family not in NAME_FAMILIES
                and (check.family != "negation" or negation_ok)
            ):
                status, method, reason, unit = "contradicted", "inference", check.reason, passage
                family = check.family
                said = check.said
            elif negation_ok and opposite_borne[row]:
                # the model reads the statement's opposite as borne out by the same evidence
                status, method, unit = "contradicted", "inference", passage
                reason = (
                    f"the sources say the opposite: “{opposite_as_written(texts[row], cues[row])}”"
                )
                family = "negation"
            elif check is not None and check.status == "conflict" and check.family in NAME_FAMILIES:
                # another drug or condition named nearby does not make this one false: the
                # statement is unsupported, and the reason says what the evidence names instead
                status, method, reason = "unsupported", "unsupported", check.reason
                said = check.said
            elif (
                rules is not None
                and rules.status == "contradicted"
                and rules.family in NAME_FAMILIES
            ):  # the same, found by the rules in the passage they matched
                status, method, reason = "unsupported", "unsupported", rules.reason
                said = rules.said
            else:
                status, method = "unsupported", "unsupported"
                reason = f"the sources do not bear it out (support {support:.2f})"
                # in the statement's own words, as its marks are
                unsaid = unsaid_phrases(statements[i].text, keys=source_keys)
                if unsaid:  # what no source names at all is what to check first
                    shown = ", ".join(
                        f"“{textwrap.shorten(w, UNSAID_CHARS, placeholder='…')}”"
                        for w in unsaid[:UNSAID_SHOWN]
                    )
                    more = (
                        f" and {len(unsaid) - UNSAID_SHOWN} more"
                        if len(unsaid) > UNSAID_SHOWN
                        else ""
                    )
                    reason += f"; no source says {shown}{more}"
            # a contradiction on negation marks the words turned round, where the model too
            # reads the statement turned round there as the better borne out
            cue = cues[row]
            turned = family == "negation" and cue is not None and negation_ok
            marks: tuple[tuple[int, int], ...] = ()
            if turned and cue is not None:  # where the statement as written says the cue
                written = statements[i].text
                cue_words = texts[row][cue[0] : cue[1]]
                same = texts[row] == written
                marks = ((cue[0], cue[1]),) if same else _said_marks(written, [cue_words])
            confidence = support if status == "grounded" else 1.0 - support
            decisions[i] = _Decision(
                cast(Status, status),
                cast(Method, method),
                confidence,
                unit,
                reason,
                rules.similarity if rules is not None else None,
                support,
                evidence[row],
                named,
                marks,
                family,
                said,
            )
            best.pop(i, None)

    def _exact(self, norm_statement: str, statement: str, index: _SourceIndex) -> _Decision | None:
        if len(norm_statement) < 3:
            return None
        for ci, (norm_text, mapping) in enumerate(index.norm):
            pos = _find_word(norm_text, norm_statement)
            if pos < 0:
                continue
            start = mapping[pos]
            end = mapping[pos + len(norm_statement) - 1] + 1
            unit = index.sentence_span(ci, start, end)
            check = compare_facts(
                statement,
                index.context(unit, 0),
                index.source_sentences(ci),
                focus=index.verbatim_focus(ci, start, end),
                families=self.fact_families,
            )
            if check.status == "agree":
                return _Decision("grounded", "exact_match", 1.0, unit, None, 1.0)
            return _from_facts(check, "exact_match", unit, 1.0)
        return None

    def _fuzzy(self, norm_statement: str, statement: str, index: _SourceIndex) -> _Decision | None:
        if len(norm_statement) < 8:
            return None
        best_score, best_k = 0.0, -1
        for k, norm_unit in enumerate(index.unit_norm):
            score = fuzz.partial_ratio(norm_statement, norm_unit, score_cutoff=best_score)
            if len(norm_unit) < len(norm_statement):  # the unit covers only part of it
                score *= len(norm_unit) / len(norm_statement)
            if score > best_score:
                best_score, best_k = score, k
        score = best_score / 100.0
        if best_k < 0 or score < self.fuzzy_threshold:
            return None
        unit = _tighten(index.units[best_k], norm_statement)
        check = compare_facts(
            statement,
            index.context(unit, 1),
            index.source_sentences(unit.chunk),
            focus=index.verbatim_focus(unit.chunk, unit.start, unit.end),
            families=self.fact_families,
        )
        if check.status == "agree":
            return _Decision("grounded", "fuzzy_match", score, unit, None, score)
        if check.status == "conflict":
            return _from_facts(check, "fuzzy_match", unit, score)
        return None  # a specific is missing: let the semantic tier look further

    def _semantic(
        self, statement: str, vector: np.ndarray, index: _SourceIndex
    ) -> tuple[_Decision | None, _Decision | None]:
        assert index.vectors is not None
        sims = index.vectors @ vector
        order = np.argsort(-sims)[: self.candidates]
        top = float(sims[order[0]])
        first_bad: _Decision | None = None
        disputed: set[str] = set()  # terms a closer candidate said the other way
        close = False  # whether any candidate reached its threshold
        for pos, k in enumerate(order):
            sim = float(sims[k])
            unit = index.units[int(k)]
            thr = self._threshold(index, unit)
            if sim < thr:
                continue
            close = True
            context = index.context(unit)
            check = _check_unit(statement, unit, index, self.fact_families)
            if check.term:
                disputed.add(check.term)
            if check.status == "agree" and disputed and not mentions(context, disputed):
                continue  # silent on what a closer match contradicted: no support
            if check.status == "agree" and not mentions(
                context, statement_terms(statement), every=False
            ):
                # it agrees only by saying nothing of what the statement names: a farther
                # match that says it the other way decides
                rival = self._conflict_among(statement, sims, order[pos + 1 :], index)
                if rival is not None:
                    return rival, None
            if check.status == "agree":
                confidence = 0.5 + 0.5 * (sim - thr) / max(1e-6, 1.0 - thr)
                return _Decision("grounded", "semantic_match", confidence, unit, None, sim), None
            if first_bad is None:
                first_bad = _from_facts(check, "semantic_match", unit, sim)
        if first_bad is not None:
            return first_bad, None
        if not close:
            anchored = self._anchored(statement, sims, index)
            if anchored is not None:
                return anchored, None
        unit = index.units[int(order[0])]
        thr = self._threshold(index, unit)
        confidence = 0.5 + 0.5 * (thr - top) / max(1e-6, thr)
        reason = f"no source text similar enough (best cosine {top:.2f} < {thr:.2f})"
        return None, _Decision("unsupported", "unsupported", confidence, unit, reason, top)

    def _anchored(self, statement: str, sims: np.ndarray, index: _SourceIndex) -> _Decision | None:
        """When no source text is similar enough, the most similar source sentence that
        names every term the statement speaks of is its evidence: a short statement split
        off a list ("She takes lisinopril" against "Metformin 500 mg b.i.d., lisinopril 10 mg
        daily.") or one that turns a note round ("She has no history of diabetes." against
        "PMH: type 2 diabetes") embeds far from the sentence that decides it. The facts
        decide, as for a semantic match: grounded (a lexical, ``fuzzy_match``, match) when
        they agree, contradicted when they conflict, else unsupported."""
        terms = statement_terms(statement)
        if not terms:
            return None
        for k in np.argsort(-sims):
            unit = index.units[int(k)]
            if unit.first != unit.last or not mentions([unit.text], terms):
                continue  # one sentence that names them all: a window adds nothing
            sim = float(sims[k])
            check = _check_unit(statement, unit, index, self.fact_families)
            if check.status == "agree":
                return _Decision("grounded", "fuzzy_match", 0.6, unit, None, sim)
            return _from_facts(check, "fuzzy_match", unit, sim)
        return None

    def _conflict_among(
        self, statement: str, sims: np.ndarray, candidates: np.ndarray, index: _SourceIndex
    ) -> _Decision | None:
        """The first of ``candidates`` (above the threshold) that says a term of the
        statement the other way: a negation conflict only, as numbers and sides differ too
        often between the many things a visit speaks of."""
        for k in candidates:
            sim = float(sims[k])
            unit = index.units[int(k)]
            if sim < self._threshold(index, unit):
                continue
            check = _check_unit(statement, unit, index, self.fact_families)
            if check.status == "conflict" and check.term:
                return _from_facts(check, "semantic_match", unit, sim)
        return None

    def _threshold(self, index: _SourceIndex, unit: _Unit) -> float:
        if index.sources[unit.chunk].type == "transcript":
            return self.transcript_threshold
        return self.semantic_threshold

    def _inference(
        self,
        statements: list[Span],
        pending: list[int],
        decisions: list[_Decision | None],
        best: dict[int, _Decision],
        index: _SourceIndex,
        checks: dict[str, CheckStatus],
        warnings: list[str],
    ) -> None:
        judges: list[tuple[str, Any]] = []
        if self.nli is None:
            checks["nli"] = unavailable("no NLI model configured (GROUNDWATCH_NLI_MODEL)")
        else:
            judges.append(("nli", self.nli))
        if self.llm is None:
            checks["llm_judge"] = unavailable("no LLM configured (GROUNDWATCH_LLM_BASE_URL)")
        else:
            judges.append(("llm_judge", self.llm))
        if not judges:
            learned = checks.get("learned")
            if learned is not None and learned.status in ("ok", "skipped"):
                checks["inference"] = learned  # the learned verifier is the inference tier
            else:
                checks["inference"] = unavailable(
                    "no learned verifier, no NLI model and no LLM judge "
                    "(GROUNDWATCH_LEARNED_VERIFIER, GROUNDWATCH_NLI_MODEL, "
                    "GROUNDWATCH_LLM_BASE_URL)"
                )
            return
        if not pending:
            for name, _ in judges:
                checks[name] = skipped("every statement was decided at an earlier tier")
            checks["inference"] = skipped("every statement was decided at an earlier tier")
            return
        candidates = {i: self._evidence_units(statements[i].text, index) for i in pending}
        for name, judge in judges:
            errors = unparseable = 0
            for i in pending:
                current = decisions[i]
                if current is not None and current.status != "unsupported":
                    continue
                units = candidates[i]
                if not units:
                    continue
                try:
                    if name == "nli":
                        verdict = nli_judge(
                            judge,
                            statements[i].text,
                            [u.text for u in units],
                            threshold=self.nli_threshold,
                        )
                    else:
                        verdict = llm_judge(judge, statements[i].text, [u.text for u in units])
                except Exception as exc:
                    errors += 1
                    log.warning("%s failed on statement %d: %s", name, i, type(exc).__name__)
                    status = getattr(exc, "status", "failed")
                    if status == "unavailable":
                        checks[name] = unavailable(f"{name} backend unavailable")
                        break
                    continue
                if verdict.verdict == "unparseable":
                    unparseable += 1
                    continue
                decided = self._apply_judgement(statements[i].text, verdict, units, index)
                if decided is not None:
                    decisions[i] = decided
            if name not in checks:
                total = len(pending)
                if errors and errors >= total:
                    checks[name] = failed(f"all {total} {name} calls failed")
                else:
                    checks[name] = OK
                if errors:
                    warnings.append(f"{name}: {errors} of {total} calls failed")
                if unparseable:
                    warnings.append(f"{name}: {unparseable} of {total} replies were unparseable")
        ran = [checks[name] for name, _ in judges]
        checks["inference"] = (
            OK if any(c.ran for c in ran) else next((c for c in ran if c.status != "ok"), OK)
        )

    def _evidence_units(self, statement: str, index: _SourceIndex) -> list[_Unit]:
        """Up to three best windows for a statement (semantic if possible, else fuzzy)."""
        if index.vectors is not None and self.embedder is not None:
            vector = self.embedder.encode([statement])[0]
            order = np.argsort(-(index.vectors @ vector))[:3]
            return [index.units[int(k)] for k in order]
        norm = normalize(statement)
        scored = sorted(
            range(len(index.units)),
            key=lambda k: -fuzz.token_set_ratio(norm, index.unit_norm[k]),
        )
        return [index.units[k] for k in scored[:3]]

    def _apply_judgement(
        self, statement: str, verdict: Judgement, units: list[_Unit], index: _SourceIndex
    ) -> _Decision | None:
        unit = units[min(verdict.evidence_index, len(units) - 1)]
        if verdict.verdict == "entailed":
            check = compare_facts(
                statement,
                index.context(unit),
                index.source_sentences(unit.chunk),
                focus=index.focus(unit),
                families=self.fact_families,
            )
            if check.status == "conflict":
                return _from_facts(check, "inference", unit, None)
            return _Decision("grounded", "inference", verdict.confidence, unit, None)
        if verdict.verdict == "contradicted":
            return _Decision(
                "contradicted",
                "inference",
                verdict.confidence,
                unit,
                "the judge found a contradiction",
            )
        return None


# --- helpers -----------------------------------------------------------------------------

COMBINED_SIGNALS = (
    "model",
    "new_words",
    "new_words_source",
    *(f"conflict_{family}" for family in FAMILIES),
    "missing",
    "opposite",
    "rules_grounded",
    "rules_contradicted",
)
# The words no source says that an unsupported statement's reason quotes, at most, and the
# characters of each (a longer phrase is cut at a word and ends in an ellipsis).
UNSAID_SHOWN = 3
UNSAID_CHARS = 60


# The log-odds by which the model prefers a statement's opposite are clipped to this: beyond
# it, the two readings are equally settled.
OPPOSITE_CLIP = 8.0


def negation_upheld(opposite: float) -> bool:
    """Whether a negation read by hand (the fact checks' negation family) may stand as the
    error of a statement whose ``opposite`` signal is this: only where the model too reads
    the statement turned round as the better borne out. Read from a paraphrase, the family
    was wrong more often than right on dev rows (half of its conflicts fell on statements
    whose error was another, an added order or drug). The verifier contradicts on it only
    then, and severity names it the kind only then."""
    return opposite > 0


# Within one step of the model's fitted step function every statement would get the same
# support, and the support score (an answer's least support), and every ranking by it, would
# lose the order the model puts them in: on the dev parts of the claim/evidence corpora,
# ranking by the combined support fell below ranking by the model alone (AUROC 0.702 against
# 0.731 on Check-COVID, 0.765 against 0.783 on CliniFact; with this slope 0.723 and 0.781),
# most of it ties. This slope on the model's log-odds keeps that order; it is small enough
# that it moved no decision on the 4,458 development rows it was tried on (the 2,930 clinical
# ones the combination is fitted on, and 1,528 of the claim/evidence corpora's), nor on the
# 5,237 pairs of their test parts (``benchmarks/grounding_heldout.py``).
MODEL_TIE_SLOPE = 0.01


# The direction each signal may move the probability of support (+1 up, -1 down): the fit is
# held to them, so that no artefact of the development data (generated hallucinations change
# one word; real notes paraphrase freely) can teach that more unsaid words, or a conflicting
# dose, make a statement more likely true.
SIGNAL_SIGNS = {
    "model": 1,
    "new_words": -1,
    "new_words_source": -1,
    **{f"conflict_{family}": -1 for family in FAMILIES},
    "missing": -1,
    "opposite": -1,
    "rules_grounded": 1,
    "rules_contradicted": -1,
}


def check_combination(params: dict[str, Any]) -> None:
    """Refuse a fitted combination (``verifier.json``) that :func:`combine` would misread:
    a signal the verifier does not give, a step function whose thresholds are not in order or
    whose values are not one more than its thresholds, or weights that do not match the
    features. ValueError names what is wrong."""
    known = set(COMBINED_SIGNALS)
    if "shapes" in params:
        for name, shape in params["shapes"].items():
            if name not in known:
                raise ValueError(f"combination.shapes: unknown signal {name!r}")
            thresholds, values = shape.get("thresholds", []), shape.get("values", [])
            if len(values) != len(thresholds) + 1:
                raise ValueError(
                    f"combination.shapes.{name}: {len(values)} values for "
                    f"{len(thresholds)} thresholds (needs one more value)"
                )
            if any(a >= b for a, b in zip(thresholds, thresholds[1:], strict=False)):
                raise ValueError(f"combination.shapes.{name}: thresholds not increasing")
    else:
        features, coef = params.get("features", []), params.get("coef")
        if coef is None or len(coef) != len(features):
            raise ValueError("combination: needs 'shapes', or one 'coef' per feature")
        if unknown := sorted(set(features) - known):
            raise ValueError(f"combination.features: unknown signal(s) {', '.join(unknown)}")


def combine(signals: dict[str, float], params: dict[str, Any] | None) -> tuple[float, bool]:
    """The calibrated probability that the sources support a statement, and whether it is
    grounded: a combination of the signals fitted on development data
    (``benchmarks/fit_verifier.py``), the model's log-odds among them, on the log-odds scale:
    a monotone step function per signal (``shapes``: its ``thresholds`` and the ``values``
    between them, with :data:`MODEL_TIE_SLOPE` on the model's log-odds) or a weight per
    signal (``coef``, the earlier versions' form); without fitted parameters, the model's
    probability against 0.5."""
    p = min(1 - 1e-6, max(1e-6, signals["model"]))
    if not params:
        return p, p >= 0.5
    x = {**signals, "model": float(np.log(p / (1 - p)))}
    z = float(params["intercept"])
    if "shapes" in params:
        for name, shape in params["shapes"].items():
            z += float(shape["values"][bisect_left(shape["thresholds"], x[name])])
        if "model" in params["shapes"]:
            z += MODEL_TIE_SLOPE * x["model"]
    else:
        z += sum(
            float(w) * x[name] for name, w in zip(params["features"], params["coef"], strict=True)
        )
    support = 1.0 / (1.0 + float(np.exp(-z)))
    # a fact check precise enough on development data decides alone (a dose or a side the
    # evidence gives otherwise): the support is at most how often its conflicts were wrong
    for family, at_most in params.get("vetoes", {}).items():
        if signals.get(f"conflict_{family}"):
            support = min(support, float(at_most))
    return support, support >= float(params["threshold"])


def _check_sources(sources: Sequence[SourceChunk]) -> None:
    seen: set[str] = set()
    for i, chunk in enumerate(sources):
        if not isinstance(chunk, SourceChunk):
            raise ValueError(f"sources[{i}]: must be a SourceChunk")
        if chunk.id in seen:
            raise ValueError(f"sources[{i}].id: duplicate source id")
        seen.add(chunk.id)


def _check_unit(
    statement: str, unit: _Unit, index: _SourceIndex, families: Sequence[str] = FAMILIES
) -> FactCheck:
    """The statement's specifics against a semantic candidate and the text around it, the
    evidence's clinical shorthand written out ("BP 150/90", "metformin BD": "blood pressure",
    "twice a day") but for what the statement writes the same way."""
    kept = shorthand_used([statement])

    def read(texts: Sequence[str]) -> list[str]:
        return [written_out(t, kept) for t in texts]

    return compare_facts(
        statement,
        read(index.context(unit)),
        read(index.source_sentences(unit.chunk)),
        focus=read(index.focus(unit)),
        families=families,
    )


def _tighten(unit: _Unit, norm_statement: str) -> _Unit:
    """Narrow a fuzzy match to the aligned part of the unit (the evidence span)."""
    norm_text, mapping = normalize_with_map(unit.text)
    if len(norm_text) <= len(norm_statement) or not mapping:
        return unit
    align = fuzz.partial_ratio_alignment(norm_statement, norm_text)
    if align is None or align.dest_end <= align.dest_start:
        return unit
    a = mapping[align.dest_start]
    b = mapping[min(align.dest_end, len(mapping)) - 1] + 1
    text = unit.text
    while a > 0 and text[a - 1].isalnum():  # whole words: "ular venous" is "jugular venous"
        a -= 1
    while b < len(text) and text[b].isalnum():
        b += 1
    return _Unit(unit.chunk, unit.first, unit.last, unit.start + a, unit.start + b, unit.text[a:b])


def _find_word(haystack: str, needle: str) -> int:
    """Position of ``needle`` in ``haystack`` on word boundaries, else -1."""
    start = 0
    while True:
        pos = haystack.find(needle, start)
        if pos < 0:
            return -1
        end = pos + len(needle)
        if (pos == 0 or haystack[pos - 1] == " ") and (
            end == len(haystack) or haystack[end] == " "
        ):
            return pos
        start = pos + 1


def _from_facts(check: FactCheck, method: Method, unit: _Unit, sim: float | None) -> _Decision:
    if check.status == "conflict":
        return _Decision(
            "contradicted",
            method,
            0.8,
            unit,
            check.reason,
            sim,
            family=check.family,
            said=check.said,
        )
    return _Decision("unsupported", "unsupported", 0.7, unit, check.reason, sim, said=check.said)


def _said_marks(statement: str, said: Sequence[str]) -> tuple[tuple[int, int], ...]:
    """Where the statement writes the specific a fact check decided on ("20 mg" of a dose
    that differs, "right" of a side): the first of its spellings found as whole words, in
    any case; none when the statement writes it otherwise ("twenty milligrams")."""
    for phrase in said:
        m = re.search(rf"(?<![\w.]){re.escape(phrase)}(?!\w)", statement, re.IGNORECASE)
        if m:
            return ((m.start(), m.end()),)
    return ()


def _marked(
    marks: Sequence[tuple[int, int]], words: Sequence[tuple[int, int]]
) -> tuple[tuple[int, int], ...]:
    """The spans to mark in a statement, in order: the decision's own marks (the words its
    reason is about), and the words the evidence does not say that do not overlap them."""
    out = list(marks)
    out += [w for w in words if all(w[1] <= a or w[0] >= b for a, b in marks)]
    return tuple(sorted(out))


def _to_result(i: int, span: Span, d: _Decision, index: _SourceIndex) -> StatementGrounding:
    unit = d.unit
    where = index.located(unit) if unit is not None else None
    return StatementGrounding(
        index=i,
        statement=span.text,
        start=span.start,
        end=span.end,
        status=d.status,
        verification_method=d.method if d.status != "unsupported" else "unsupported",
        confidence=float(min(1.0, max(0.0, d.confidence))),
        source_chunk_id=index.sources[unit.chunk].id if unit is not None else None,
        supporting_evidence=unit.text if unit is not None else None,
        evidence_start=where[0] if where is not None else None,
        evidence_end=where[1] if where is not None else None,
        reason=d.reason,
        similarity=d.similarity,
        support=d.support,
        unsupported_words=(
            ()
            if d.status == "grounded"
            else _marked(
                d.marks or _said_marks(span.text, d.said),
                [
                    (w.start, w.end)
                    for w in unsupported_words(
                        span.text, [d.evidence or (unit.text if unit is not None else "")]
                    )
                ],
            )
        ),
        signals=d.signals,
    )


def _assemble(
    results: list[StatementGrounding],
    checks: dict[str, CheckStatus],
    warnings: list[str],
    threshold: float,
    has_sources: bool,
) -> GroundingResult:
    total = len(results)
    grounded = sum(r.is_grounded for r in results)
    contradicted = [r for r in results if r.status == "contradicted"]
    unsupported = [r for r in results if r.status == "unsupported"]
    flagged = [r for r in results if not r.is_grounded]
    score = grounded / total if total else 0.0
    notes = list(warnings)
    if not has_sources:
        notes.insert(0, "no sources given: nothing could be grounded")
    if unsupported:
        notes.append(f"{len(unsupported)} of {total} statements are unsupported by the sources")
    for r in contradicted:
        # numbered from 1, as every table shows statements (the JSON ``index`` is 0-based)
        notes.append(f"statement #{r.index + 1} contradicts source {r.source_chunk_id}: {r.reason}")
    for name in ("semantic", "inference"):
        check = checks.get(name)
        if check is not None and check.status in ("unavailable", "failed"):
            notes.append(f"{name} tier {check}")
    support = [
        0.0
        if r.status == "contradicted"
        else r.support
        if r.support is not None
        else float(r.is_grounded)
        for r in results
    ]
    return GroundingResult(
        overall_grounded=bool(total) and score >= threshold and not contradicted,
        grounding_score=score,
        support_score=min(support) if support else 0.0,
        statements=tuple(results),
        unsupported_statements=tuple(r.statement for r in flagged),
        warnings=tuple(notes),
        checks={name: checks[name] for name in TIERS if name in checks},
    )
