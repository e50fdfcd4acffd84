"""Grounding of clinical note sections against their dialogues (MTS-Dialog test sets).

The dialogue is the source; each sentence of the note section written from it is a statement.
Positives are the real reference sentences, all of them (people wrote them from the visit,
and sometimes they add what it never says: such a sentence flagged counts as a false alarm).
Negatives are hallucinations generated from each sentence with a fixed seed by the same
generator the verifier's training uses on training rows (:mod:`core.grounding.perturb`: changed
specifics, flipped negations, additions never said, merged facts, hedges made certain, ...);
the test sets are never trained or tuned on.

Each verifier is reported side by side with flagging everything: the learned verifier (the
default), the previous rules-only verifier (no learned model), per kind of hallucination
(precision / recall / F1 of each kind against the real sentences), overall, the false-alarm rate
on the real sentences, and AUROC of the statement's support (higher support = less likely
hallucinated).

A second table reads whole sections, as a reviewer of automatic summaries does: each test
section as written (clean) and the same section with one sentence replaced by its generated
hallucination (hallucinated), ranked by the share of statements not grounded (one minus the
grounding score, the product's headline score), by the least support of any statement, and by
the chance that at least one statement is unsupported (one minus the product of the
statements' support). The share of the section's words the dialogue never says is the
baseline any verifier must beat.

A third table asks whether a flag follows the evidence or how a sentence reads: each
generated hallucination that can be made true (an addition, or a changed specific the
dialogue says in the same words) is checked against its dialogue as it is and against the
dialogue made to say it: the added line spoken in a wording training never uses, or the
changed words changed in the dialogue too. A verifier that reads the evidence flags the first
and not the second ("follows evidence": the difference); one that has learnt how a generated
sentence reads flags both. ``--said N`` sets how many encounters of each set (default 60).

A fourth table reads facts under labels, as LLM summaries write them ("Allergies:
penicillin."): every test section whose header names a kind of fact (allergies, medications,
past medical and surgical history) under its label, each statement as it is (a positive) and
under the label of the kind it is most often mistaken for ("Medications: penicillin.", a
hallucination), and that swapped statement against the dialogue made to say it (flagging it
then is a false alarm).

A fifth table asks whether a question is read as a finding: every real sentence that rests
on the patient's bare yes or no to a question of the doctor's ("No known drug allergies."
after "Any allergies to medications?" "No."), against the dialogue as it is and with that
answer replaced by one that answers nothing ("Could you say that again?", in words no
training pair uses). Flagged then, the sentence is a clinician's question reported as a fact,
an error generated consultation notes make.

With ``--sets primock`` (in the default) the same is measured on PriMock57's test
consultations (day 5): clinicians' own shorthand notes of mock primary-care consultations
against their manual transcripts, a style of note no other set has.

    python benchmarks/grounding_mts.py --data ../shared/data [--sets 1,2,primock] [--encounters N]
"""

from __future__ import annotations

import csv
import random
import time
from collections import defaultdict
from typing import Any

from _common import base_parser, prf, print_json, print_table, require_data, support_model
from verifier_data import (
    HELD_OUT_NON_ANSWERS,
    SECTION_LABELS,
    benchmark_hallucinations,
    benchmark_items,
    counterfactual_evidence,
    note_statements,
    primock_encounters,
    under_label,
    withdrawn_answer,
)

SETS = {
    "1": "MTS-Dialog-TestSet-1-MEDIQA-Chat-2023.csv",
    "2": "MTS-Dialog-TestSet-2-MEDIQA-Sum-2023.csv",
}


def auroc(labels: list[int], scores: list[float]) -> float:
    """Area under the ROC curve of ``scores`` for ``labels`` (1 = hallucinated)."""
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(labels, scores)) if len(set(labels)) == 2 else float("nan")


def evaluate(verifier: Any, cases: list[tuple[list[Any], list[Any]]]) -> dict[str, Any]:
    """Flags and support of every statement of ``cases`` ((sources, [(statement, kind of
    hallucination or None, original)])); per-kind and overall scores, and each case's
    statements as (kind, original, flagged, support) for :func:`section_rows`."""
    per_kind: dict[str, list[tuple[int, int]]] = defaultdict(list)
    labels: list[int] = []
    flags: list[int] = []
    risk: list[float] = []
    sections: list[list[tuple[str | None, str, int, float]]] = []
    started = time.perf_counter()
    for sources, items in cases:
        results = verifier.verify_statements([t for t, _, _ in items], sources)
        flag_of: dict[str, int] = {}
        section = []
        for (_, kind, orig), res in zip(items, results, strict=True):
            flag = int(not res.is_grounded)
            support = res.support if res.support is not None else float(res.is_grounded)
            if res.status == "contradicted":
                support = 0.0
            labels.append(int(kind is not None))
            flags.append(flag)
            risk.append(1.0 - support)
            section.append((kind, orig, flag, support))
            if kind is None:
                flag_of[orig] = flag
        sections.append(section)
        for (_, kind, orig), res in zip(items, results, strict=True):
            if kind is not None:
                per_kind[kind].append((flag_of[orig], int(not res.is_grounded)))
    elapsed = time.perf_counter() - started
    table = []
    for kind in sorted(per_kind):
        pairs = per_kind[kind]
        p, r, f = prf(
            [0] * len(pairs) + [1] * len(pairs), [o for o, _ in pairs] + [x for _, x in pairs]
        )
        table.append({"kind": kind, "n": len(pairs), "precision": p, "recall": r, "f1": f})
    p, r, f = prf(labels, flags)
    real = [fl for fl, lab in zip(flags, labels, strict=True) if lab == 0]
    table.append({"kind": "all", "n": sum(labels), "precision": p, "recall": r, "f1": f})
    return {
        "per_kind": table,
        "f1": f,
        "precision": p,
        "recall": r,
        "false_alarm_rate": sum(real) / len(real) if real else 0.0,
        "auroc": auroc(labels, risk),
        "real_sentences": len(real),
        "hallucinations": sum(labels),
        "statements_per_s": len(labels) / elapsed if elapsed else 0.0,
        "sections": sections,
    }


def section_rows(
    sections: list[list[tuple[str | None, str, int, float]]], seed: int
) -> list[tuple[int, float, float, float]]:
    """Whole sections: (label, share not grounded, one minus the least support, chance that
    one is unsupported) for each section as written (label 0) and, where one of its
    sentences has a hallucination, the section with that sentence replaced (label 1; the
    sentence and its hallucination chosen with ``seed``)."""
    rng = random.Random(seed)
    out = []
    for section in sections:
        real = [(orig, flag, sup) for kind, orig, flag, sup in section if kind is None]
        if not real:
            continue
        fakes = [(orig, flag, sup) for kind, orig, flag, sup in section if kind is not None]
        out.append(_aggregate(0, [(f, s) for _, f, s in real]))
        if fakes:
            orig, flag, sup = rng.choice(fakes)
            swapped = [(f, s) for o, f, s in real if o != orig] + [(flag, sup)]
            out.append(_aggregate(1, swapped))
    return out


def _aggregate(label: int, statements: list[tuple[int, float]]) -> tuple[int, float, float, float]:
    share = sum(f for f, _ in statements) / len(statements)
    least = min(s for _, s in statements)
    none_unsupported = 1.0
    for _, s in statements:
        none_unsupported *= s
    return label, share, 1.0 - least, 1.0 - none_unsupported


def section_texts(cases: list[tuple[list[Any], list[Any]]], seed: int) -> list[tuple[int, float]]:
    """The baseline: (label, share of the section's content words the dialogue never says),
    for the same sections and swaps as :func:`section_rows`."""
    from core.grounding.support import novelty

    rng = random.Random(seed)
    out = []
    for sources, items in cases:
        real = [orig for _, kind, orig in items if kind is None]
        if not real:
            continue
        dialogue = [c.text for c in sources]
        out.append((0, novelty(" ".join(real), dialogue)))
        fakes = [(text, orig) for text, kind, orig in items if kind is not None]
        if fakes:
            text, orig = rng.choice(fakes)
            swapped = [r for r in real if r != orig] + [text]
            out.append((1, novelty(" ".join(swapped), dialogue)))
    return out


def test_cases(rows: list[dict[str, str]], seed: int) -> list[tuple[list[Any], list[Any]]]:
    """Each encounter's dialogue as the source and its items (real and generated)."""
    from core.grounding import SourceChunk

    rng = random.Random(seed)
    return [
        (
            [SourceChunk("dialogue", r["dialogue"], "transcript")],
            benchmark_items(r["section_text"], r["dialogue"], rng),
        )
        for r in rows
    ]


ADDITIONS = "added content"
CHANGES = "changed specific"


def said_cases(rows: list[dict[str, str]], seed: int) -> list[tuple[str, str, str, str]]:
    """Does a flag follow the evidence or how a sentence reads? For each generated
    hallucination that can be made true, (group, statement, dialogue as it is, dialogue
    changed to say it): an addition's line spoken in the dialogue (in the wording training
    never uses), or a changed specific changed in the dialogue too. The same hallucinations
    as :func:`test_cases` (same seed)."""
    rng = random.Random(seed)
    flip = random.Random(seed + 1)
    out = []
    for r in rows:
        for _, h in benchmark_hallucinations(r["section_text"], r["dialogue"], rng):
            if h is None:
                continue
            said = counterfactual_evidence(h, r["dialogue"], flip, held_out=True)
            if said is not None:
                group = ADDITIONS if h.said else CHANGES
                out.append((group, h.text, r["dialogue"], said))
    return out


def evidence_reading(verifier: Any, cases: list[tuple[str, str, str, str]]) -> list[dict[str, Any]]:
    """Share of the hallucinations flagged against the dialogue as it is (recall) and against
    the dialogue that says them (false alarms: the sentence is now true), per group."""
    from core.grounding import SourceChunk

    flagged: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for group, text, dialogue, said in cases:
        (as_is,) = verifier.verify_statements([text], [SourceChunk("d", dialogue, "transcript")])
        (true,) = verifier.verify_statements([text], [SourceChunk("d", said, "transcript")])
        flagged[group].append((int(not as_is.is_grounded), int(not true.is_grounded)))
    table = []
    for group in (ADDITIONS, CHANGES):
        pairs = flagged.get(group, [])
        if pairs:
            recall = sum(a for a, _ in pairs) / len(pairs)
            alarms = sum(b for _, b in pairs) / len(pairs)
            table.append(
                {
                    "group": group,
                    "n": len(pairs),
                    "flagged, not said": recall,
                    "flagged, said": alarms,
                    "follows evidence": recall - alarms,
                }
            )
    return table


def label_cases(rows: list[dict[str, str]], seed: int) -> list[tuple[str, str, int, str | None]]:
    """(dialogue, statement, label, dialogue made to say it) of the sections whose header names
    a kind of fact: each statement under its label (label 0), and under the label of another
    kind (label 1, :func:`~core.grounding.perturb.hallucinate`'s ``label_swap``) with the
    dialogue made to say that (in the wording training never uses), where it can be."""
    from core.grounding.perturb import hallucinate

    rng, flip = random.Random(seed), random.Random(seed + 1)
    out: list[tuple[str, str, int, str | None]] = []
    for r in rows:
        if r.get("section_header") not in SECTION_LABELS:
            continue
        dialogue = r["dialogue"]
        for s in note_statements(under_label(r["section_header"], r["section_text"], rng)):
            out.append((dialogue, s, 0, None))
            for h in hallucinate(s, dialogue, rng, kinds=("label_swap",)):
                said = counterfactual_evidence(h, dialogue, flip, held_out=True)
                out.append((dialogue, h.text, 1, said))
    return out


def label_reading(verifier: Any, cases: list[tuple[str, str, int, str | None]]) -> dict[str, Any]:
    """F1, false alarms and recall of the facts under labels; and the share of swapped ones
    flagged against the dialogue made to say them (a false alarm: the statement is now true)."""
    from core.grounding import SourceChunk

    labels, flags, on_said = [], [], []
    for dialogue, text, label, said in cases:
        (res,) = verifier.verify_statements([text], [SourceChunk("d", dialogue, "transcript")])
        labels.append(label)
        flags.append(int(not res.is_grounded))
        if said is not None:
            (true,) = verifier.verify_statements([text], [SourceChunk("d", said, "transcript")])
            on_said.append(int(not true.is_grounded))
    p, r, f = prf(labels, flags)
    real = [fl for fl, lab in zip(flags, labels, strict=True) if lab == 0]
    return {
        "facts": len(real),
        "swapped": sum(labels),
        "f1": f,
        "precision": p,
        "recall": r,
        "false alarms": sum(real) / len(real) if real else float("nan"),
        "flagged, said": sum(on_said) / len(on_said) if on_said else float("nan"),
    }


def answer_cases(visits: list[tuple[str, str]], seed: int) -> list[tuple[str, str, str]]:
    """(statement, dialogue, dialogue without the answer) for each real sentence of the
    (note, dialogue) ``visits`` that rests on the patient's yes or no to a clinician's
    question, with that answer replaced by one that answers nothing
    (:func:`verifier_data.withdrawn_answer`), in words no training pair uses
    (:data:`verifier_data.HELD_OUT_NON_ANSWERS`)."""
    rng = random.Random(seed)
    out = []
    for note, dialogue in visits:
        for s in note_statements(note):
            withdrawn = withdrawn_answer(s, dialogue, rng, HELD_OUT_NON_ANSWERS)
            if withdrawn is not None:
                out.append((s, dialogue, withdrawn))
    return out


def answer_reading(verifier: Any, cases: list[tuple[str, str, str]]) -> dict[str, Any]:
    """Share of the sentences flagged against the dialogue as it is (false alarms) and with
    the patient's answer withdrawn (the sentence is then a question reported as a fact), and,
    free of any threshold, the share whose support falls once the answer is withdrawn (ties
    count half; 0.5 is a verifier that does not read the answer, NaN one that gives no
    support, as the rules alone)."""
    from core.grounding import SourceChunk

    answered, withdrawn, falls = [], [], []
    for text, dialogue, without in cases:
        (a,) = verifier.verify_statements([text], [SourceChunk("d", dialogue, "transcript")])
        (w,) = verifier.verify_statements([text], [SourceChunk("d", without, "transcript")])
        answered.append(int(not a.is_grounded))
        withdrawn.append(int(not w.is_grounded))
        if a.support is not None and w.support is not None:
            falls.append(1.0 if w.support < a.support else 0.5 if w.support == a.support else 0.0)
    n = len(cases)
    return {
        "n": n,
        "flagged, answered": sum(answered) / n,
        "flagged, answer withdrawn": sum(withdrawn) / n,
        "follows evidence": (sum(withdrawn) - sum(answered)) / n,
        "support falls": sum(falls) / len(falls) if falls else float("nan"),
    }


ANSWER_COLUMNS = (
    "n",
    "flagged, answered",
    "flagged, answer withdrawn",
    "follows evidence",
    "support falls",
)
ANSWER_TITLE = (
    "Questions reported as facts: real sentences that rest on the patient's yes or no, "
    "against the dialogue as it is and with that answer withdrawn (higher 'follows "
    "evidence' and 'support falls' are better; 'support falls' is 0.5 for a verifier that "
    "does not read the answer)"
)


def load_set(data: Any, key: str) -> list[dict[str, str]]:
    """The rows of MTS-Dialog test set ``key`` ("1" or "2"), or with ``key`` "primock" the
    test consultations of PriMock57 (day 5: a clinician's whole note against the merged
    transcript, another hand and another country's primary care)."""
    if key == "primock":
        return [
            {"dialogue": e.dialogue, "section_text": e.note}
            for e in primock_encounters(data, splits=("test",))
        ]
    with require_data(data, "mts_dialog", SETS[key]).open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def set_name(key: str) -> str:
    return "PriMock57 day 5" if key == "primock" else f"TestSet-{key}"


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument(
        "--sets", default="1,2,primock", help="which test sets (1, 2, primock; comma-separated)"
    )
    parser.add_argument("--encounters", type=int, default=0, help="sample N per set (0: all)")
    parser.add_argument(
        "--verifiers", default="learned,rules", help="which verifiers: learned, rules or both"
    )
    parser.add_argument(
        "--said",
        type=int,
        default=60,
        help="encounters per set for the evidence-reading table (0: leave it out)",
    )
    args = parser.parse_args()

    from core.backends.embedder import get_embedder
    from core.grounding import GroundingVerifier

    embedder = get_embedder()
    chosen = args.verifiers.split(",")
    verifiers = {}
    if "learned" in chosen:
        verifiers["learned (default)"] = GroundingVerifier(
            embedder=embedder, learned=support_model()
        )
    if "rules" in chosen:
        verifiers["rules only (previous)"] = GroundingVerifier(embedder=embedder)
    summary = []
    reading: list[dict[str, Any]] = []
    labelled: list[dict[str, Any]] = []
    asked: list[dict[str, Any]] = []
    whole: list[dict[str, Any]] = []
    details: dict[str, Any] = {}
    for key in args.sets.split(","):
        rows = load_set(args.data, key.strip())
        if args.encounters and len(rows) > args.encounters:
            rows = random.Random(args.seed).sample(rows, args.encounters)
        cases = test_cases(rows, args.seed)
        said = said_cases(rows[: args.said], args.seed) if args.said else []
        facts = label_cases(rows, args.seed)
        answers = answer_cases([(r["section_text"], r["dialogue"]) for r in rows], args.seed)
        n_real = sum(k is None for _, items in cases for _, k, _ in items)
        n_hall = sum(k is not None for _, items in cases for _, k, _ in items)
        baseline = prf([0] * n_real + [1] * n_hall, [1] * (n_real + n_hall))
        summary.append(
            {
                "set": set_name(key),
                "verifier": "flag everything",
                "f1": baseline[2],
                "precision": baseline[0],
                "recall": 1.0,
                "false alarms": 1.0,
                "auroc": 0.5,
            }
        )
        baseline_rows = section_texts(cases, args.seed)
        whole.append(
            {
                "set": set_name(key),
                "ranked by": "new words (baseline)",
                "sections": len(baseline_rows),
                "auroc": auroc([y for y, _ in baseline_rows], [v for _, v in baseline_rows]),
            }
        )
        for label, verifier in verifiers.items():
            out = evaluate(verifier, cases)
            rows_ = section_rows(out.pop("sections"), args.seed)
            ys = [r[0] for r in rows_]
            for name, col in (
                ("share not grounded", 1),
                ("least support", 2),
                ("any unsupported", 3),
            ):
                whole.append(
                    {
                        "set": set_name(key),
                        "ranked by": f"{label}: {name}",
                        "sections": len(rows_),
                        "auroc": auroc(ys, [r[col] for r in rows_]),
                    }
                )
            details[f"{key}/{label}"] = out
            for line in evidence_reading(verifier, said) if said else []:
                reading.append({"set": set_name(key), "verifier": label, **line})
            if facts:
                labelled.append(
                    {"set": set_name(key), "verifier": label, **label_reading(verifier, facts)}
                )
            if answers:
                asked.append(
                    {"set": set_name(key), "verifier": label, **answer_reading(verifier, answers)}
                )
            summary.append(
                {
                    "set": set_name(key),
                    "verifier": label,
                    "f1": out["f1"],
                    "precision": out["precision"],
                    "recall": out["recall"],
                    "false alarms": out["false_alarm_rate"],
                    "auroc": out["auroc"],
                    "statements/s": out["statements_per_s"],
                }
            )
            print_table(
                out["per_kind"],
                ["kind", "n", "precision", "recall", "f1"],
                f"{set_name(key)}, {label}: {len(rows)} encounters, {out['real_sentences']} real "
                f"sentences, {out['hallucinations']} hallucinations (seed {args.seed})",
            )
    print(
        "MTS-Dialog test sets and PriMock57's test notes: real reference sentences vs generated "
        "hallucinations "
        "(targets: F1 >= 0.85 with <= 10 % false alarms)"
    )
    print_table(
        summary,
        ["set", "verifier", "f1", "precision", "recall", "false alarms", "auroc", "statements/s"],
    )
    print_table(
        whole,
        ["set", "ranked by", "sections", "auroc"],
        "Whole sections: as written vs one sentence replaced by a hallucination (AUROC)",
    )
    if reading:
        print_table(
            reading,
            [
                "set",
                "verifier",
                "group",
                "n",
                "flagged, not said",
                "flagged, said",
                "follows evidence",
            ],
            "Evidence reading: the same generated sentence flagged against the dialogue as it "
            "is, and against the dialogue made to say it (higher 'follows evidence' is better)",
        )
    if labelled:
        print_table(
            labelled,
            [
                "set",
                "verifier",
                "facts",
                "swapped",
                "f1",
                "precision",
                "recall",
                "false alarms",
                "flagged, said",
            ],
            "Facts under labels ('Allergies: penicillin.'): as written vs under the label of "
            "another kind; 'flagged, said': the swapped ones against the dialogue made to say "
            "them (lower is better)",
        )
    if asked:
        print_table(asked, ["set", "verifier", *ANSWER_COLUMNS], ANSWER_TITLE)
    if args.json:
        print_json(
            {
                "summary": summary,
                "sections": whole,
                "reading": reading,
                "labelled": labelled,
                "asked": asked,
                "details": details,
            }
        )


if __name__ == "__main__":
    main()
