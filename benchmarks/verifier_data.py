"""(statement, evidence, label) pairs for the learned verifier, from public data only.

Clinical pairs: each sentence of a reference note (ACI-Bench; the clinicians' notes of
PriMock57's mock primary-care consultations, read against their merged per-speaker
transcripts) or note section (MTS-Dialog, with its back-translated copies) against the
passages of its own visit that the verifier would read it against
(:meth:`GroundingVerifier.evidence_texts`: the same retrieval as in the product). Notes
sometimes add what the visit never says, so a reference sentence is kept as a positive only
when the evidence says at least half of its content words (``MAX_POSITIVE_NOVELTY``), or
three quarters and means much the same (``RESCUE_*``); the rest are left out and counted.
Negatives are made from kept
positives with a fixed seed (:mod:`core.grounding.perturb`: changed specifics, flipped
negations, additions never said, merged facts, hedges made certain), plus a sentence of
another visit's note read against this visit, plus a positive read against a passage of its
visit that does not say it. Half of the generated hallucinations that can be made true are
also kept as positives against evidence changed to say them (``COUNTERFACTUAL_SHARE``: an
addition's line spoken, in one of the wordings :mod:`core.grounding.perturb` gives; a
changed specific changed in the evidence too), so that the sentence alone never tells the
label. With ``--evidence-negation-share`` (0 by default, which builds the shipped model's
pairs), that share of the positives is also shown against its evidence turned round where it
says them ("reports chest pain" -> "denies chest pain", the "yes" that answers "any chest
pain?" made "no"), so that the model reads whether the evidence says a thing or its
opposite, not only that it speaks of it (about one positive in seven can be turned so); with
``--both-turned`` also the statement turned round against that evidence, as a positive
(where both turn the same words), so that of the four readings of one fact neither the
statement's form nor the evidence's tells the label.
With ``--specifics-share`` (0 by default), that share of the positives also yields one more
changed specific (:data:`SPECIFIC_KINDS`: a number, unit of time, side, attribute, drug,
diagnosis, test or relative changed), each against the visit's evidence or, half of the time,
against the note's own passage around the sentence (written, dense text, as a record read as
sentences is), and each also as a positive against that evidence changed to say it: two pairs
that differ in one specific alone, so that the model learns to read the specific where every
other word agrees.
MedHallu answers (ground truth and hallucinated) against their
knowledge. The general claim/evidence corpora come from ``verifier_corpora.py``.

Which rows may be used is decided by :func:`core.grounding.splits.split_of`; a test row is
never read here.

    python benchmarks/verifier_data.py --data ../shared/data --out build/verifier/pairs.jsonl
"""

from __future__ import annotations

import csv
import difflib
import json
import random
import re
import sys
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from _common import ROOT, base_parser, require_data

sys.path.insert(0, str(ROOT / "benchmarks"))

from core.grounding.perturb import Hallucination, hallucinate  # noqa: E402

# A reference sentence is a positive when its evidence says at least half its content words,
# or three quarters of them and it means much the same (clinical words for plain speech:
# "denies hematemesis" against "no, I haven't vomited any blood").
MAX_POSITIVE_NOVELTY = 0.5
RESCUE_NOVELTY = 0.75
RESCUE_COSINE = 0.5
MIN_WORDS = 3
# Share of generated hallucinations also shown, the very same sentence, against evidence
# that does say it (the added line spoken, or the changed words changed in the evidence too):
# so that the model learns to compare with the evidence rather than to recognise how a
# generated sentence reads ("..., and an MRI was ordered" is not wrong in itself).
COUNTERFACTUAL_SHARE = 0.5
# How often each kind of hallucination is chosen when a statement allows several: the edits
# that change a specific are rarer in the data than additions, so they weigh more.
KIND_WEIGHTS = {
    "number": 3.0,
    "time_unit": 2.0,
    "negation": 3.0,
    "laterality": 3.0,
    "attribute": 2.5,
    "drug": 3.0,
    "diagnosis": 2.5,
    "test": 2.5,
    "specialty": 2.0,
    "site": 2.0,
    "hedge": 2.0,
    "sex": 0.7,
    "relative": 2.0,
    "family_to_patient": 2.5,
    "merge": 2.5,
    "add_order": 1.0,
    "add_referral": 0.7,
    "add_family_history": 0.7,
    "add_duration": 1.0,
    "add_age": 0.8,
    "add_symptom": 1.2,
    "add_social": 0.7,
    "add_drug": 0.8,
    "patient_to_relative": 1.0,  # can be made of most sentences: chosen often enough
    "drug_allergy": 6.0,  # only of a sentence that names a drug: seldom possible
    "past_current": 5.0,  # only of a sentence that says when: seldom possible
    "label_swap": 6.0,  # only of a short fact under a label: seldom possible
}
# The kinds whose words the visit says, tied wrongly: whose fact, what kind of fact, under
# which label (:attr:`Recipe.tie_share` scales how often they are drawn).
TIE_KINDS = ("patient_to_relative", "drug_allergy", "past_current", "label_swap")
# MTS-Dialog's section headers that name a kind of fact, in spellings a note labels them by
# (core.text.fact_label reads each back to one). A share of those sections is read under a
# label, as LLM summaries write them ("Allergies: penicillin."), so that the model learns
# that the label is part of what is said; the rest as they are.
SECTION_LABELS = {
    "ALLERGY": ("Allergies", "ALLERGIES", "Drug allergies", "Known allergies"),
    "MEDICATIONS": ("Medications", "MEDICATIONS", "Current medications", "Meds"),
    "PASTMEDICALHX": ("Past medical history", "PAST MEDICAL HISTORY", "PMH", "Medical history"),
    "PASTSURGICAL": ("Past surgical history", "PAST SURGICAL HISTORY", "PSH", "Surgeries"),
}
LABEL_SHARE = 0.6
# how a note lays a label out: on the fact's line, on its own line, as a heading, in bold
_LABEL_LAYOUTS = ("{l}: {t}", "{l}:\n{t}", "## {l}\n\n{t}", "**{l}:** {t}", "{L}\n\n{t}")


Item = tuple[str, str | None, str]  # (statement, kind of hallucination or None, original)


@dataclass(frozen=True, slots=True)
class Recipe:
    """What the clinical pairs hold besides positives and one or two generated negatives of
    each; the defaults are what ``verifier_data.py`` builds with no options.

    ``turned_share``: that share of the positives also against their evidence turned round
    (:func:`negated_evidence`), as negatives; with ``both_turned``, the statement turned round
    against that evidence too, as a positive (:func:`negated_statement_and_evidence`).
    ``specifics_share``: that share of the positives also yields a changed specific and its
    counterpart (:func:`specific_rows`). ``tie_share``: the weights of :data:`TIE_KINDS` and
    the share of encounters whose every fact under a label is also swapped to another label
    (1: as many as :data:`KIND_WEIGHTS` says, 0: none). ``withdrawn_share``: that share of the
    positives that rest on the patient's bare yes or no to a question also against their
    evidence with that answer withdrawn (:func:`withdrawn_answers`), as negatives: a question
    is not a finding; above 1, each in as many versions as its whole part says (up to one
    per reply of :data:`NON_ANSWERS`). With ``harvested``, those replies are drawn from
    :data:`NON_ANSWERS` and the patients' own replies that answer nothing in the training
    transcripts (:func:`harvest_replies`), and each withdrawn version has a positive beside
    it: the same sentence against its evidence with the answer said in another patient's
    words (:func:`answered_again`)."""

    turned_share: float = 0.0
    both_turned: bool = False
    specifics_share: float = 0.0
    tie_share: float = 1.0
    withdrawn_share: float = 0.0
    harvested: bool = False

    def kind_weights(self) -> dict[str, float]:
        """:data:`KIND_WEIGHTS`, those of :data:`TIE_KINDS` scaled by ``tie_share``."""
        scale = dict.fromkeys(TIE_KINDS, self.tie_share)
        return {k: w * scale.get(k, 1.0) for k, w in KIND_WEIGHTS.items()}


@dataclass(frozen=True, slots=True)
class Encounter:
    """A visit and the note (or note section) written from it."""

    dataset: str
    file: str
    key: str
    split: str
    dialogue: str
    note: str
    header: str


@dataclass(frozen=True, slots=True)
class Row:
    """One training pair (``label`` 1: the evidence supports the statement)."""

    statement: str
    evidence: str
    label: int
    corpus: str
    split: str
    kind: str


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def clinical_encounters(
    data: Path, *, augmented_share: float, rng: random.Random
) -> list[Encounter]:
    """ACI-Bench train/valid and MTS-Dialog training (+ a share of each back-translated
    copy), every row's split from :func:`split_of`; test files are not opened."""
    from core.grounding.splits import ACI_DEV, ACI_TRAIN, MTS_TRAIN, split_of

    out: list[Encounter] = []
    for name in (ACI_TRAIN, ACI_DEV):
        for row in _csv(require_data(data, "aci_bench", name)):
            split = split_of("aci", name)
            out.append(
                Encounter("aci", name, row["encounter_id"], split, row["dialogue"], row["note"], "")
            )
    for k, name in enumerate(MTS_TRAIN):
        rows = _csv(require_data(data, "mts_dialog", name))
        if k:  # a back-translated copy: a share of its translated rows (it repeats the rest)
            rows = [r for r in rows if r["ID"].startswith("TR=") and rng.random() < augmented_share]
        for row in rows:
            split = split_of("mts", name, row["ID"])
            out.append(
                Encounter(
                    "mts" if k == 0 else "mts_bt",
                    name,
                    row["ID"],
                    split,
                    row["dialogue"],
                    row["section_text"],
                    row["section_header"],
                )
            )
    assert all(e.split != "test" for e in out)
    return out


_TEXTGRID_RE = re.compile(
    r'intervals \[\d+\]:\s*xmin = ([\d.]+)\s*xmax = [\d.]+\s*text = "((?:[^"]|"")*)"'
)
_TRANSCRIPT_TAG_RE = re.compile(r"</?UNSURE>|<[A-Z_]+/>")


def _textgrid_turns(path: Path, speaker: str) -> list[tuple[float, str, str]]:
    """(start time, speaker, words) of every non-empty interval of a Praat TextGrid, with
    the transcribers' marks taken out (<UNSURE>word</UNSURE> keeps the word)."""
    turns = []
    for m in _TEXTGRID_RE.finditer(path.read_text(encoding="utf-8")):
        words = " ".join(_TRANSCRIPT_TAG_RE.sub(" ", m.group(2).replace('""', '"')).split())
        if words:
            turns.append((float(m.group(1)), speaker, words))
    return turns


def primock_transcript(folder: Path, visit: str) -> str:
    """A PriMock57 consultation's two per-speaker transcripts merged by time into a
    dialogue, one "Doctor:" or "Patient:" line per turn (a speaker's consecutive intervals
    joined)."""
    turns = sorted(
        _textgrid_turns(folder / f"{visit}_doctor.TextGrid", "Doctor")
        + _textgrid_turns(folder / f"{visit}_patient.TextGrid", "Patient")
    )
    lines: list[list[str]] = []
    for _, speaker, words in turns:
        if lines and lines[-1][0] == speaker:
            lines[-1][1] += " " + words
        else:
            lines.append([speaker, words])
    return "\n".join(f"{speaker}: {words}" for speaker, words in lines)


def primock_encounters(data: Path, *, splits: Sequence[str] = ("train", "dev")) -> list[Encounter]:
    """The PriMock57 consultations of ``splits`` (:func:`split_of`): each clinician's note
    against the transcript of its consultation."""
    from core.grounding.splits import split_of

    root = require_data(data, "verification", "PriMock57")
    out = []
    for note_file in sorted((root / "notes").glob("day*_consultation*.json")):
        split = split_of("primock", note_file.name)
        if split not in splits:
            continue
        visit = note_file.stem
        note = json.loads(note_file.read_text(encoding="utf-8"))["note"]
        dialogue = primock_transcript(root / "transcripts", visit)
        out.append(Encounter("primock", note_file.name, visit, split, dialogue, note, ""))
    return out


def labelled_note(header: str, note: str, key: str) -> str:
    """The note of a section whose header names a kind of fact (:data:`SECTION_LABELS`)
    under a label, for a seeded share of them (by ``key``, so that no other draw moves);
    else the note as it is."""
    draw = random.Random(f"{key}/label")
    if header not in SECTION_LABELS or draw.random() >= LABEL_SHARE:
        return note
    return under_label(header, note, draw)


def under_label(header: str, note: str, draw: random.Random) -> str:
    """``note`` under a label for its section ``header``, in a spelling and a layout drawn
    by ``draw``."""
    label = draw.choice(SECTION_LABELS[header])
    layout = draw.choice(_LABEL_LAYOUTS)
    return layout.format(l=label, L=label.upper(), t=note.strip())


def long_enough(statement: str) -> bool:
    """Whether a statement says enough to be judged: three words, or one under a label that
    names a kind of fact ("Allergies: penicillin.")."""
    from core.text import split_label

    label, body = split_label(statement)
    return len(body.split()) >= (1 if label else MIN_WORDS) and any(c.isalpha() for c in body)


def note_statements(note: str) -> list[str]:
    """A note's statements (:func:`core.text.split_statements`) that say enough to judge."""
    from core.text import split_statements

    return [s.text.strip() for s in split_statements(note) if long_enough(s.text.strip())]


def _choose(
    options: Sequence[Any],
    rng: random.Random,
    n: int,
    kind_weights: Mapping[str, float] = KIND_WEIGHTS,
) -> list[Any]:
    pool = list(options)
    chosen = []
    for _ in range(min(n, len(pool))):
        weights = [kind_weights.get(h.kind, 1.0) for h in pool]
        pick = rng.choices(range(len(pool)), weights=weights)[0]
        chosen.append(pool.pop(pick))
    return chosen


def said_enough(new_words: float, cosine: float) -> bool:
    """Whether a reference sentence counts as borne out by its evidence (a positive): the
    evidence says at least half its content words, or three quarters and means much the same.
    The rest may add what the visit never said (reference notes do), so they are no clean
    label of support."""
    return new_words <= MAX_POSITIVE_NOVELTY or (
        new_words <= RESCUE_NOVELTY and cosine >= RESCUE_COSINE
    )


def statement_cosines(verifier: Any, statements: Sequence[str], evidence: Sequence[str]) -> Any:
    """Cosine of each statement with its evidence, by the verifier's embedder."""
    vectors = verifier.embedder.encode([*statements, *evidence])
    return (vectors[: len(statements)] * vectors[len(statements) :]).sum(axis=1)


def negative_rows(
    h: Hallucination, evidence: str, enc: Encounter, draw: random.Random, counts: Counter[str]
) -> list[Row]:
    """A generated hallucination against its evidence (a negative) and, for
    ``COUNTERFACTUAL_SHARE`` of them (drawn from ``draw``), the same statement against the
    evidence changed to say it (a positive, kind ``<kind>_said``), where that can be made."""
    rows = [Row(h.text, evidence, 0, enc.dataset, enc.split, h.kind)]
    said = (
        counterfactual_evidence(h, evidence, draw) if draw.random() < COUNTERFACTUAL_SHARE else None
    )
    if said is not None:
        counts["counterfactual positive (evidence made to say it)"] += 1
        rows.append(Row(h.text, said, 1, enc.dataset, enc.split, f"{h.kind}_said"))
    return rows


def encounter_rows(
    enc: Encounter,
    verifier: Any,
    rng: random.Random,
    foreign: Sequence[str],
    counts: Counter[str],
    recipe: Recipe = Recipe(),
    replies: Replies | None = None,
) -> list[Row]:
    """Positives, generated negatives, a foreign sentence and an off-passage pair, and what
    the ``recipe`` adds (:class:`Recipe`; ``replies``: those harvested from the training
    transcripts, which a recipe with ``harvested`` draws on)."""
    from core.grounding import SourceChunk
    from core.grounding.support import novelty
    from core.text import split_label

    statements = note_statements(labelled_note(enc.header, enc.note, f"{enc.file}/{enc.key}"))
    if not statements or not enc.dialogue.strip():
        return []
    source = [SourceChunk("visit", enc.dialogue, "transcript")]
    evidence = verifier.evidence_texts(statements, source)
    cosines = statement_cosines(verifier, statements, evidence)
    kept = []
    for s, ev, cos in zip(statements, evidence, cosines, strict=True):
        if not said_enough(novelty(split_label(s)[1], [ev]), float(cos)):
            counts["positive dropped (evidence says under half its words)"] += 1
            continue
        counts["positive kept"] += 1
        kept.append((s, ev))
    negatives: list[Hallucination] = []
    kind_weights = recipe.kind_weights()
    for s, _ in kept:
        made = hallucinate(s, enc.dialogue, rng, others=statements)
        negatives.extend(_choose(made, rng, 2 if rng.random() < 0.3 else 1, kind_weights))
    for s in rng.sample(list(foreign), min(len(foreign), 1 + len(kept) // 6)):
        negatives.append(Hallucination("other_visit", s, ""))
    neg_evidence = verifier.evidence_texts([h.text for h in negatives], source) if negatives else []
    rows = [Row(s, ev, 1, enc.dataset, enc.split, "reference") for s, ev in kept]
    flip = random.Random(f"{enc.file}/{enc.key}")  # the other rows' draws stay as they were
    for h, ev in zip(negatives, neg_evidence, strict=True):
        if h.kind == "other_visit" and novelty(h.text, [ev]) < 0.3:
            counts["foreign sentence dropped (the visit says it too)"] += 1
            continue
        rows += negative_rows(h, ev, enc, flip, counts)
    # every fact under a label also under the label of another kind, where it can be made
    # (one kind drawn among many is too seldom this one), and as often said as the rest
    swap = random.Random(f"{enc.file}/{enc.key}/label_swap")  # the other draws stay as they were
    drawn = {(h.original, h.kind) for h in negatives}
    swapping = recipe.tie_share >= 1 or swap.random() < recipe.tie_share
    swapped = [
        h
        for s, _ in (kept if swapping else [])
        if (s, "label_swap") not in drawn
        for h in hallucinate(s, enc.dialogue, swap, kinds=("label_swap",))
    ]
    swap_evidence = verifier.evidence_texts([h.text for h in swapped], source) if swapped else []
    for h, ev in zip(swapped, swap_evidence, strict=True):
        counts["fact under another label (every one)"] += 1
        rows += negative_rows(h, ev, enc, swap, counts)
    turn = random.Random(f"{enc.file}/{enc.key}/turned")  # the other draws stay as they were
    for s, ev in kept:
        if turn.random() < recipe.turned_share and (denied := negated_evidence(s, ev)):
            counts["evidence turned round (negative)"] += 1
            rows.append(Row(s, denied, 0, enc.dataset, enc.split, "evidence_negated"))
            # and the statement turned round too, where both turn the same words: the
            # evidence turned round says it (the four readings of one fact, so that neither
            # how the statement reads nor how the evidence reads tells the label)
            both = negated_statement_and_evidence(s, ev) if recipe.both_turned else None
            if both is not None:
                counts["statement and evidence turned round (positive)"] += 1
                rows.append(Row(both[0], both[1], 1, enc.dataset, enc.split, "negation_said"))
    # a positive against a passage of its visit that does not say it
    for s, ev in kept[: max(1, len(kept) // 8)]:
        other = [r.evidence for r in rows if r.evidence != ev and novelty(s, [r.evidence]) > 0.6]
        if other:
            rows.append(Row(s, rng.choice(other), 0, enc.dataset, enc.split, "off_passage"))
    ask = random.Random(f"{enc.file}/{enc.key}/withdrawn")  # after the rest: no draw moves
    share = recipe.withdrawn_share
    for s, ev in kept if share > 0 else []:
        # above 1, as many versions as the share's whole part says, each with another reply
        copies = int(share) + (ask.random() < share % 1)
        own = replies if recipe.harvested else None
        nothing = NON_ANSWERS + own.nothing if own else NON_ANSWERS
        for without in withdrawn_answers(s, ev, ask, copies, nothing) if copies else []:
            counts["answer withdrawn (negative)"] += 1
            rows.append(Row(s, without, 0, enc.dataset, enc.split, "answer_withdrawn"))
        for given in answered_again(s, ev, ask, copies, own) if own and copies else []:
            counts["answer given in other words (positive)"] += 1
            rows.append(Row(s, given, 1, enc.dataset, enc.split, "answer_given"))
    if recipe.specifics_share > 0:
        rows += specific_rows(enc, statements, kept, recipe.specifics_share, counts)
    return rows


_REPLY_RE = re.compile(r"^(\W*(?:\[\w+\]|\w+:)?\W*)(no|nope|yes|yeah|yep)\b", re.I)
_SCOPE_WORDS = 4  # a negation governs the words just after it


def negated_statement_and_evidence(statement: str, evidence: str) -> tuple[str, str] | None:
    """The statement and its evidence both turned round, so that the one says the other:
    the statement by its first word that says something is present or absent ("denies chest
    pain" -> "reports chest pain"; no copula or auxiliary), the evidence by
    :func:`negated_evidence` on the words that word governs. None where either cannot be
    turned, or where the two turn different things ("denies smoking" in a statement whose
    evidence is turned round on its asthma)."""
    from core.grounding.perturb import negation_cue, turned_round
    from core.grounding.support import statement_words

    cue = negation_cue(statement, generic=False)
    turned = turned_round(statement, cue)
    if cue is None or turned is None:
        return None
    scope = {k for k, _ in statement_words(" ".join(statement[cue[1] :].split()[:_SCOPE_WORDS]))}
    denied = negated_evidence(statement, evidence, about=scope) if scope else None
    return (turned, denied) if denied is not None else None


def negated_evidence(statement: str, evidence: str, *, about: set[str] | None = None) -> str | None:
    """``evidence`` with the sentence that says ``statement`` turned round, so that it says
    the opposite: the sentence sharing the most of the statement's content words
    flipped by the negation table where the flipped word governs one of them
    ("reports chest pain" -> "denies chest pain"), or, for a question ("any chest pain?"),
    the yes or no that answers it. The sentence must share at least half of the statement's
    content words. None where that cannot be done, or where the rest of the evidence alone
    still says half of the statement's words (it might still support it); with ``about``
    (content-word keys), also where the words turned round name none of them."""
    from core.assertion import is_question
    from core.grounding.perturb import negation_cue, turned_round
    from core.grounding.support import evidence_keys, novelty, statement_words
    from core.text import Span, split_sentences

    keys = {k for k, _ in statement_words(statement)}
    sentences = split_sentences(evidence)
    if len(keys) < 2 or not sentences:
        return None
    shared = [len(keys & evidence_keys(x.text)) for x in sentences]
    best = max(range(len(sentences)), key=lambda i: (shared[i], -i))
    if shared[best] < max(1, len(keys) / 2):
        return None
    target = sentences[best]
    said = target  # the words that say it: the sentence, or a question with its answer
    cue = negation_cue(target.text)
    if cue is not None:
        after = " ".join(target.text[cue[1] :].split()[:_SCOPE_WORDS])
        held = keys if about is None else about  # the words the turned word must govern
        new = turned_round(target.text, cue) if held & evidence_keys(after) else None
    elif is_question(target.text) and best + 1 < len(sentences):
        if about is not None and not about & evidence_keys(target.text):
            return None
        target = sentences[best + 1]
        said = Span(evidence[said.start : target.end], said.start, target.end)
        m = _REPLY_RE.match(target.text)
        if m is None:
            return None
        word = m.group(2)
        if re.search(r"\b(?:none|not|never|nothing|no)\b|n't\b", target.text[m.end(2) :], re.I):
            return None  # "no, none": one word turned round would leave the answer torn
        flipped = "yes" if word.lower() in ("no", "nope") else "no"
        flipped = flipped.capitalize() if word[:1].isupper() else flipped
        new = target.text[: m.start(2)] + flipped + target.text[m.end(2) :]
    else:
        return None
    if not new:
        return None
    rest = evidence[: said.start] + " " + evidence[said.end :]
    if novelty(statement, [rest]) < 0.5:
        return None
    return evidence[: target.start] + new + evidence[target.end :]


def _changed_span(original: str, text: str) -> tuple[str, str] | None:
    """The words ``text`` has in place of ``original``'s, when one run of words changed."""
    a, b = original.split(), text.split()
    ops = difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
    changed = [op for op in ops if op[0] != "equal"]
    if len(changed) != 1 or changed[0][0] != "replace":
        return None
    _, i1, i2, j1, j2 = changed[0]
    old, new = " ".join(a[i1:i2]).strip(".,;:"), " ".join(b[j1:j2]).strip(".,;:")
    return (old, new) if old and new and old.lower() != new.lower() else None


def _spoken(line: str, evidence: str) -> str:
    """``line`` ("Doctor: ...", "Patient: ...") written as the evidence writes its turns:
    ACI-Bench's "[doctor] lower case , spaced punctuation" or as it is."""
    if not re.search(r"\[(?:doctor|patient)\]", evidence):
        return line

    def turn(m: re.Match[str]) -> str:
        words = re.sub(r"\s*([,.?!])", r" \1", m.group(2).strip().lower())
        return f"[{m.group(1).lower()}] {words}"

    return "\n".join(
        turn(m) for m in re.finditer(r"(Doctor|Patient): (.*?)(?=\s*(?:Doctor|Patient):|$)", line)
    )


def counterfactual_evidence(
    h: Hallucination, evidence: str, rng: random.Random, *, held_out: bool = False
) -> str | None:
    """``evidence`` changed so that it supports the hallucination ``h``: an addition's line
    spoken at a line break in its first part (where truncation does not reach), in one of
    the wordings training may use or, with ``held_out``, in the one it never sees; or a
    changed specific changed in the evidence too. None when neither can be done."""
    if h.said:
        if h.kind == "add_age" and re.search(r"year-old|years? old", evidence, re.I):
            return None  # a line with another age would contradict, not support
        line = h.said[-1] if held_out else rng.choice(h.said[:-1])
        starts = [0] + [m.end() for m in re.finditer(r"\n| … ", evidence)]
        starts = [p for p in starts if p <= 0.6 * len(evidence)] or [0]
        at = rng.choice(starts)
        return f"{evidence[:at]}{_spoken(line, evidence)}\n{evidence[at:]}"
    if h.kind in NO_COUNTERFACTUAL or not h.original:
        return None
    span = _changed_span(h.original, h.text)
    if span is None:
        return None
    old, new = span
    pattern = re.compile(rf"(?<![\w.]){re.escape(old)}(?![\w]|\.\d)", re.I)
    if not pattern.search(evidence):
        return None
    return pattern.sub(new.replace("\\", "\\\\"), evidence)


# Replies that leave a question open: what a withdrawn answer becomes in training pairs
# (:func:`withdrawn_answers`).
NON_ANSWERS = (
    "Sorry, you broke up there.",
    "Hmm, I'm not really sure.",
    "I'd have to think about that.",
    "Can we come back to that?",
    "I don't remember, to be honest.",
    "Why do you ask?",
)
# Others, sharing no word of substance with those, for the benchmarks: a model that flags
# a question reported as a fact only where one of the training replies follows it has
# learned six phrases, not to read whether the question was answered.
HELD_OUT_NON_ANSWERS = (
    "Could you say that again?",
    "Good question.",
    "Let me check my notes and tell you later.",
    "Pardon me, what was that?",
)
# Who asks and who answers, by the name of a turn's speaker (its tag as
# ``core.text.SPEAKER_RE`` reads it: "Doctor:", "Guest_family:", "[doctor]").
_ASKS = re.compile(r"(?:doctor|dr|physician|clinician|nurse|guest_clinic[a-z]*)_?\d*", re.I)
_ANSWERS = re.compile(r"(?:patient|pt|guest_family|patient_guest)_?\d*", re.I)


def _party(line: str) -> tuple[str, str, str] | None:
    """(who, tag, text) of a transcript line: who is "asks" for the clinician's side,
    "answers" for the patient's (and a relative's), "" for another; None when the line is no
    turn."""
    from core.text import SPEAKER_RE

    m = SPEAKER_RE.match(line)
    if m is None:
        return None
    tag = m.group(0)
    name = tag.strip().strip("[]:").strip()
    who = "asks" if _ASKS.fullmatch(name) else "answers" if _ANSWERS.fullmatch(name) else ""
    return who, tag, line[m.end() :]


def _in_style(reply: str, bracketed: bool) -> str:
    """A reply written as the transcript writes its turns: lower case with every stop set
    off by a space where its speakers are tagged "[patient]" (ACI-Bench's transcripts)."""
    return re.sub(r"\s*([,.?!])", r" \1", reply.lower()) if bracketed else reply


def withdrawn_answers(
    statement: str,
    dialogue: str,
    rng: random.Random,
    copies: int = 1,
    replies: tuple[str, ...] = NON_ANSWERS,
) -> list[str]:
    """``dialogue`` with the patient's bare yes or no to the question ``statement`` rests on
    replaced by a reply that answers nothing (one of ``replies``: :data:`NON_ANSWERS` for
    training, :data:`HELD_OUT_NON_ANSWERS` for the benchmarks), in up to ``copies``
    versions, each with another reply; none when there is no such question. The question
    must be the clinician's (a doctor's, a nurse's, another clinician's), answered in the next
    turn by the patient or a relative with a reply that asserts nothing else ("Yes.",
    "Nope.", "I do."), and the statement's words that the dialogue says must be said, at
    least half of them, in that question alone: then what bears the statement out is the
    answer, and without it nothing does ("No known drug allergies." against "Doctor: Any
    allergies to medications?" "Patient: Sorry, you broke up there."). A clinician's question
    is not a finding, and a note that reports one as a fact is wrong: generated consultation
    notes do it ("symptoms mentioned reported as fact"). Transcripts whose turns are tagged
    ("Doctor:", "Guest_family:", "[doctor]") only."""
    found = _answer_at(statement, dialogue)
    if found is None:
        return []
    lines, i, tag = found
    first = rng.choice(replies)
    others = [r for r in replies if r != first]
    if copies > 1:
        rng.shuffle(others)
    return _with_reply(lines, i, tag, [first, *others][: max(0, copies)])


def _with_reply(lines: list[str], i: int, tag: str, replies: Sequence[str]) -> list[str]:
    """The transcript ``lines`` with line ``i`` replaced by each of ``replies`` in turn,
    spoken by ``tag`` as the transcript writes its turns."""
    out = []
    for words in replies:
        changed = list(lines)
        changed[i] = tag + _in_style(words, tag.lstrip().startswith("["))
        out.append("\n".join(changed))
    return out


def _answer_at(statement: str, dialogue: str) -> tuple[list[str], int, str] | None:
    """(the dialogue's lines, the line of the bare answer ``statement`` rests on, its
    speaker's tag), as :func:`withdrawn_answers` finds it; None when there is none."""
    from core.assertion.dialogue import is_question
    from core.grounding.support import evidence_keys, statement_words
    from core.text import asserts_nothing, split_sentences

    lines = dialogue.split("\n")
    turns = [_party(line) for line in lines]
    wanted = {key for key, _ in statement_words(statement)}
    # (words said in the question alone, the answer's line, its speaker's tag)
    best: tuple[int, int, str] | None = None
    for i in range(len(lines) - 1):
        asked, reply = turns[i], turns[i + 1]
        if asked is None or reply is None or (asked[0], reply[0]) != ("asks", "answers"):
            continue
        answer = reply[2].strip()
        if not answer or answer.endswith("?") or not asserts_nothing(answer):
            continue
        sentences = [x.text for x in split_sentences(asked[2])]
        questions = " ".join(x for x in sentences if is_question(x))
        in_question = evidence_keys(questions) & wanted if questions else frozenset()
        if not in_question:
            continue
        rest = [line for j, line in enumerate(lines) if j != i]
        rest += [x for x in sentences if not is_question(x)]  # what the clinician's turn asserts
        elsewhere = frozenset().union(*(evidence_keys(line) for line in rest)) & wanted
        alone = in_question - elsewhere
        if alone and 2 * len(alone) >= len(in_question | elsewhere):
            if best is None or len(alone) > best[0]:
                best = (len(alone), i + 1, reply[1])
    if best is None:
        return None
    _, i, tag = best
    return lines, i, tag


def withdrawn_answer(
    statement: str,
    dialogue: str,
    rng: random.Random,
    replies: tuple[str, ...] = NON_ANSWERS,
) -> str | None:
    """The first of :func:`withdrawn_answers`: ``dialogue`` with the answer ``statement``
    rests on withdrawn, or None."""
    found = withdrawn_answers(statement, dialogue, rng, replies=replies)
    return found[0] if found else None


@dataclass(frozen=True, slots=True)
class Replies:
    """Patients' own replies to clinicians' questions, read off training transcripts
    (:func:`harvest_replies`): those that answer nothing, bare yeses and bare noes."""

    nothing: tuple[str, ...] = ()
    yes: tuple[str, ...] = ()
    no: tuple[str, ...] = ()


# A reply that leans one way: a yes or no, a hedge, small talk, a number.
_LEANS_RE = re.compile(
    r"\b(?:yes|yeah|yep|yup|ya|no|nope|nah|never|none|nothing|sure|okay|ok|correct|right|"
    r"absolutely|definitely|maybe|probably|mm-hmm|uh-huh|mhm|good|fine|well|great|thanks?|"
    r"i (?:do|am|have|did|was|had))\b|\d",
    re.I,
)
# "I don't know", "not sure", "no idea": a reply that says it cannot answer ("I don't know
# of any" answers no).
_CANNOT_SAY_RE = re.compile(
    r"\b(?:don't|do not|dont|can't|cannot) (?:know|remember|recall|say|tell)\b(?! of)|"
    r"\bnot (?:really |quite |too )?sure\b|\bno (?:idea|clue)\b",
    re.I,
)
# Words a reply that answers nothing may hold: what it is about must come from the question.
_EMPTY_KEYS = frozenset(
    "mean sorri hello hi hear repeat know don't can't remember recal i'm not sur idea actualli "
    "realli honestli doctor um uh".split()
)
# What makes a bare reply say more than its yes or no, or say it of someone else: it would
# not fit every question ("No, just me.", "I am okay.", "Yes, she did.").
_NOT_BARE_RE = re.compile(
    r"\b(?:okay|ok|just|that's it|thanks?|thank you|will do|certainly|here|there|guess|"
    r"he|she|they|we|been|was)\b|-$",
    re.I,
)


def reply_polarity(reply: str) -> str | None:
    """What a bare reply says, "yes" or "no" (as ``core.assertion.reply_answer`` reads it),
    where it says one of them and nothing else that would not fit every question ("Yes, I
    do.", "Uh, no.", "No, not that I know of."); None for anything else ("Okay.", "I don't
    know.", "Yep. Uh, no.", "No, just me.")."""
    from core.assertion import reply_answer
    from core.text import asserts_nothing

    text = " ".join(reply.split())
    if not text or text.endswith("?") or len(text.split()) > 8 or _NOT_BARE_RE.search(text):
        return None
    if _CANNOT_SAY_RE.search(text) or not asserts_nothing(text):
        return None
    answer = reply_answer(text)
    return None if answer is None else "yes" if answer else "no"


def _words(text: str) -> list[str]:
    """A reply's words in lower case, without punctuation: how two replies are compared."""
    return re.findall(r"[a-z']+", text.lower())


def answers_nothing(reply: str) -> bool:
    """Whether a reply to a question leaves it open and says nothing of its own: a question
    back ("What do you mean by that?", "Sorry?") or "I don't know", with no yes or no, no
    hedge, no number and no word of a topic."""
    from core.grounding.support import evidence_keys

    text = " ".join(reply.split())
    if not text or len(text.split()) > 10 or _LEANS_RE.search(_CANNOT_SAY_RE.sub(" ", text)):
        return False
    if not (text.endswith("?") or _CANNOT_SAY_RE.search(text)):
        return False
    return evidence_keys(text) <= _EMPTY_KEYS


def harvest_replies(encounters: Sequence[Encounter], held_out: Sequence[str] = ()) -> Replies:
    """The patients' replies to a clinician's question in ``encounters`` (training
    encounters only: the caller's to choose) that answer nothing, say a bare yes or a bare
    no: the many ways real patients put it, so that a model shown pairs with the answer
    withdrawn or given (:func:`answered_again`) cannot learn a handful of phrases instead of
    reading whether the question was answered. Replies sharing a word of substance or three
    words in a row with one of ``held_out`` ("what was that?") are left out: the benchmarks
    withdraw answers with those."""
    from core.grounding.support import evidence_keys

    def plain(text: str) -> str:  # as a tagged line of MTS-Dialog writes it
        text = re.sub(r"\s+([,.?!])", r"\1", " ".join(text.split())).lstrip(" ,.")
        return text[:1].upper() + text[1:]

    def triples(text: str) -> set[tuple[str, ...]]:
        words = _words(text)
        return {tuple(words[i : i + 3]) for i in range(len(words) - 2)}

    held_keys = frozenset().union(*(evidence_keys(r) for r in held_out))
    held_triples = set().union(*(triples(r) for r in held_out))
    found: dict[str, dict[str, str]] = {"nothing": {}, "yes": {}, "no": {}}
    for enc in encounters:
        turns = [_party(line) for line in enc.dialogue.split("\n")]
        for asked, reply in zip(turns, turns[1:], strict=False):
            if asked is None or reply is None or (asked[0], reply[0]) != ("asks", "answers"):
                continue
            if "?" not in asked[2]:
                continue
            text = plain(reply[2])
            words = " ".join(_words(text))
            if not words or evidence_keys(text) & held_keys or triples(text) & held_triples:
                continue
            which = "nothing" if answers_nothing(text) else reply_polarity(text)
            if which is not None:
                found[which].setdefault(words, text)
    return Replies(*(tuple(sorted(found[k].values())) for k in ("nothing", "yes", "no")))


def answered_again(
    statement: str, dialogue: str, rng: random.Random, copies: int, replies: Replies
) -> list[str]:
    """``dialogue`` with the patient's bare yes or no that ``statement`` rests on (as
    :func:`withdrawn_answers` finds it) said in other words, another patient's of the same
    sense, in up to ``copies`` versions: positives to set beside the withdrawn ones, so that
    neither how the reply is worded nor the question alone tells the label, but whether the
    question was answered."""
    found = _answer_at(statement, dialogue)
    if found is None:
        return []
    lines, i, tag = found
    said = lines[i][len(tag) :]
    sense = reply_polarity(said)
    if sense is None:
        return []
    pool = [r for r in (replies.yes if sense == "yes" else replies.no) if _words(r) != _words(said)]
    return _with_reply(lines, i, tag, rng.sample(pool, min(copies, len(pool))))


# A flipped negation or hedge changed in the evidence by words would rarely read as speech.
NO_COUNTERFACTUAL = frozenset({"negation", "hedge", "sex", "other_visit"})
# The edits that change one specific of a statement, which cost most when missed.
SPECIFIC_KINDS = (
    "number",
    "time_unit",
    "laterality",
    "attribute",
    "drug",
    "diagnosis",
    "test",
    "relative",
    "family_to_patient",
)


def note_passage(statements: Sequence[str], i: int) -> str:
    """The ``i``-th statement of a note with the one before and after it."""
    return " ".join(statements[max(0, i - 1) : i + 2])


def specific_rows(
    enc: Encounter,
    statements: Sequence[str],
    kept: Sequence[tuple[str, str]],
    share: float,
    counts: Counter[str],
) -> list[Row]:
    """For ``share`` of the kept positives, one changed specific of it against its evidence
    (or, half of the time, the note's passage around it) as a negative, and the same sentence
    against that evidence changed to say it as a positive (where the evidence names the
    changed words). Its own generator, so that the other rows' draws stay as they were."""
    rng = random.Random(f"{enc.file}/{enc.key}/specifics")
    rows: list[Row] = []
    for s, ev in kept:
        if rng.random() >= share:
            continue
        made = hallucinate(s, enc.dialogue, rng, others=statements, kinds=SPECIFIC_KINDS)
        if not made:
            continue
        h = _choose(made, rng, 1)[0]
        if rng.random() < 0.5:  # every kept positive is one of the note's statements
            ev = note_passage(statements, statements.index(s))
            where = "note"
        else:
            where = "visit"
        said = counterfactual_evidence(h, ev, rng)
        if said is None and where == "note":
            continue  # the note says the sentence as written; a negative alone would teach form
        counts[f"changed specific against the {where} (negative)"] += 1
        rows.append(Row(h.text, ev, 0, enc.dataset, enc.split, f"{h.kind}_{where}"))
        if said is not None:
            counts[f"changed specific against the {where} changed too (positive)"] += 1
            rows.append(Row(h.text, said, 1, enc.dataset, enc.split, f"{h.kind}_{where}_said"))
    return rows


def medhallu_rows(data: Path, verifier: Any) -> list[Row]:
    """Both answers of every MedHallu train/dev row against the knowledge passages the
    verifier retrieves for the whole answer."""
    from core.grounding import SourceChunk
    from core.grounding.splits import split_of

    path = require_data(data, "medhallu", "medhallu_pqa_labeled.jsonl")
    rows: list[Row] = []
    with path.open(encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            split = split_of("medhallu", path.name, i)
            if split == "test":
                continue
            item = json.loads(line)
            sources = [SourceChunk(f"k{j}", t) for j, t in enumerate(item["Knowledge"]) if t]
            answers = [item["Ground Truth"], item["Hallucinated Answer"]]
            evidence = verifier.evidence_texts(answers, sources)
            rows.append(Row(answers[0], evidence[0], 1, "medhallu", split, "ground_truth"))
            kind = f"medhallu_{item.get('Difficulty Level', 'unknown')}"
            rows.append(Row(answers[1], evidence[1], 0, "medhallu", split, kind))
    return rows


PARTS = ("clinical", "medhallu", "general")


def build(
    data: Path,
    *,
    seed: int,
    augmented_share: float,
    general_limit: int,
    parts: Sequence[str],
    recipe: Recipe = Recipe(),
) -> Iterator[Row]:
    """Every pair of the chosen ``parts``: clinical, then MedHallu, then the general corpora."""
    if "clinical" in parts:
        yield from clinical_rows(data, seed=seed, augmented_share=augmented_share, recipe=recipe)
    if "medhallu" in parts:
        yield from medhallu_rows(data, _verifier())
    if "general" in parts:
        import verifier_corpora

        root = require_data(data, "verification")
        for name in verifier_corpora.CORPORA:
            rng = random.Random(seed)
            for p in verifier_corpora.load_corpus(name, root, rng=rng, limit=general_limit):
                yield Row(p.statement, p.evidence, p.label, p.corpus, p.split, p.kind)


def _verifier() -> Any:
    from core.backends.embedder import get_embedder
    from core.grounding import GroundingVerifier

    return GroundingVerifier(embedder=get_embedder())


def clinical_rows(
    data: Path,
    *,
    seed: int,
    augmented_share: float,
    recipe: Recipe = Recipe(),
) -> Iterator[Row]:
    """The pairs of every ACI-Bench, MTS-Dialog and PriMock57 train/dev encounter."""

    rng = random.Random(seed)
    verifier = _verifier()
    encounters = clinical_encounters(data, augmented_share=augmented_share, rng=rng)
    encounters += primock_encounters(data)
    assert all(e.split != "test" for e in encounters)
    by_header: dict[tuple[str, str], list[Encounter]] = {}
    for enc in encounters:
        by_header.setdefault((enc.split, enc.header or enc.dataset), []).append(enc)
    counts: Counter[str] = Counter()
    replies = None
    if recipe.harvested:  # the training transcripts' own, none the benchmarks withdraw with
        train = [e for e in encounters if e.split == "train"]
        replies = harvest_replies(train, held_out=HELD_OUT_NON_ANSWERS)
        for name in ("nothing", "yes", "no"):
            print(f"  replies harvested, {name}: {len(getattr(replies, name))}", file=sys.stderr)
    for n, enc in enumerate(encounters):
        group = [e for e in by_header[(enc.split, enc.header or enc.dataset)] if e.key != enc.key]
        others = rng.sample(group, min(3, len(group)))
        foreign = [s for o in others for s in note_statements(o.note)]
        yield from encounter_rows(enc, verifier, rng, foreign, counts, recipe, replies)
        if n % 200 == 0:
            print(f"  clinical encounters {n}/{len(encounters)}", file=sys.stderr, flush=True)
    for key, value in counts.items():
        print(f"  {key}: {value}", file=sys.stderr)


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "verifier" / "pairs.jsonl")
    parser.add_argument("--augmented-share", type=float, default=0.25)
    parser.add_argument("--general-limit", type=int, default=10000, help="pairs per general corpus")
    parser.add_argument("--parts", default=",".join(PARTS), help="which parts to build")
    parser.add_argument(
        "--evidence-negation-share",
        type=float,
        default=0.0,
        help="share of positives also shown against their evidence turned round (negatives)",
    )
    parser.add_argument(
        "--both-turned",
        action="store_true",
        help="with it, the statement turned round too, against that evidence (positives)",
    )
    parser.add_argument(
        "--specifics-share",
        type=float,
        default=0.0,
        help="share of positives that also yield a changed specific and its counterpart",
    )
    parser.add_argument(
        "--tie-share",
        type=float,
        default=1.0,
        help="scales how often facts are tied wrongly: whose fact, what kind, which label",
    )
    parser.add_argument(
        "--withdrawn-share",
        type=float,
        default=0.0,
        help="share of positives resting on a yes or no also shown with that answer withdrawn "
        "(negatives); above 1, that many versions of each, each with another reply",
    )
    parser.add_argument(
        "--harvested-replies",
        action="store_true",
        help="with it, withdrawn answers use the training transcripts' own replies that answer "
        "nothing too, and each has a positive beside it with the answer in other words",
    )
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    counts: Counter[tuple[str, str, int]] = Counter()
    kinds: Counter[str] = Counter()
    with args.out.open("w", encoding="utf-8") as fh:
        for row in build(
            args.data,
            seed=args.seed,
            augmented_share=args.augmented_share,
            general_limit=args.general_limit,
            parts=args.parts.split(","),
            recipe=Recipe(
                turned_share=args.evidence_negation_share,
                both_turned=args.both_turned,
                specifics_share=args.specifics_share,
                tie_share=args.tie_share,
                withdrawn_share=args.withdrawn_share,
                harvested=args.harvested_replies,
            ),
        ):
            assert row.split in ("train", "dev"), row.split
            fh.write(json.dumps(asdict(row), ensure_ascii=False) + "\n")
            counts[(row.corpus, row.split, row.label)] += 1
            kinds[row.kind] += 1
    table = sorted({(c, s) for c, s, _ in counts})
    print(f"{'corpus':<14}{'split':<7}{'supported':>10}{'not':>8}")
    for corpus, split in table:
        print(
            f"{corpus:<14}{split:<7}{counts[(corpus, split, 1)]:>10}{counts[(corpus, split, 0)]:>8}"
        )
    print(dict(kinds.most_common()))


def benchmark_hallucinations(
    note: str, dialogue: str, rng: random.Random, *, every: bool = False
) -> list[tuple[str, Hallucination | None]]:
    """Every sentence of a note as it is (a real reference sentence, with None), and for each
    one hallucination of it, chosen as in training (with ``every``, each one the generator can
    make of it): how the benchmarks and the fit on dev rows read an encounter (no sentence is
    left out for what the visit does not say)."""
    statements = note_statements(note)
    out: list[tuple[str, Hallucination | None]] = []
    for s in statements:
        out.append((s, None))
        made = hallucinate(s, dialogue, rng, others=statements)
        for h in made if every else _choose(made, rng, 1):
            out.append((s, h))
    return out


def benchmark_items(
    note: str, dialogue: str, rng: random.Random, *, every: bool = False
) -> list[Item]:
    """:func:`benchmark_hallucinations` as (statement, kind of hallucination or None,
    original sentence)."""
    return [
        (s, None, s) if h is None else (h.text, h.kind, s)
        for s, h in benchmark_hallucinations(note, dialogue, rng, every=every)
    ]


if __name__ == "__main__":
    main()
