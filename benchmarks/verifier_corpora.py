"""(statement, evidence, label) pairs from the public claim/evidence corpora, for the verifier.

Reads the folders of ``../shared/data/verification`` (DATA.md, "Verification corpora") and
turns each into short pairs: label 1 when the evidence supports (entails, fully attributes)
the statement, 0 when it refutes it, says too little, or the statement is (partly)
hallucinated. Evidence is kept short (at most ``MAX_EVIDENCE_WORDS`` words): the rationale
sentences a corpus labels, never a whole abstract; a claim without a rationale (and any long
source: CliniFact abstracts, CMU-DoG and TopicalChat knowledge) gets the few sentences that
share most words with it, so that its negative is topical rather than trivially unrelated.

Training reads only the train and dev parts. :func:`test_parts` names every file holding a
test part; no training loader opens one (every read goes through a guard that refuses them).
:func:`load_test` alone opens them, for the held-out benchmark (``grounding_heldout.py``),
and marks each of its pairs ``test``, a split the training script refuses. VitaminC's
files are its own test splits, which DATA.md allows for training here; they, BEGIN's dev
files and the FaithDial audit (one set each) are split 90/10 into train/dev by a stable hash
of a group key (the Wikipedia page, or the knowledge text), so that related rows never
straddle the split.

    python benchmarks/verifier_corpora.py --data ../shared/data [--limit N] [--seed 13]
"""

from __future__ import annotations

import argparse
import ast
import csv
import hashlib
import html
import json
import random
import re
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Split = Literal["train", "dev", "test"]  # "test" only from load_test, never in training

MAX_EVIDENCE_WORDS = 120
DEV_EVERY = 10  # hash-split corpora: one group in ten is dev
BOOST = 3  # CliniFact: how many shared words a sentence reporting a result is worth

csv.field_size_limit(1 << 28)


@dataclass(frozen=True, slots=True)
class Pair:
    """One training pair for the cross-encoder verifier."""

    statement: str
    evidence: str
    label: int
    corpus: str
    split: Split
    kind: str


# Files (relative to the ``verification`` folder) that hold a test part: never opened.
_TEST_PARTS: dict[str, tuple[str, ...]] = {
    # DATA.md: VitaminC's files are its own test splits, usable for training here.
    "vitaminc": (),
    "scifact": (
        "SciFact/hf_csv/claims_test.csv",
        "SciFact/multivers_test_labels/claims_test.jsonl",
    ),
    "checkcovid": (
        "Check-COVID/Check-COVID/test/covidCheck_test_composed.json",
        "Check-COVID/Check-COVID/test/covidCheck_test_extracted.json",
        "Check-COVID/Check-COVID/variants_for_experiments/challenge_subset/"
        "covidCheck_test_composed_noNEI_numeric.json",
        "Check-COVID/Check-COVID/variants_for_experiments/challenge_subset/"
        "covidCheck_test_composed_noNEI_temporal.json",
        "Check-COVID/Check-COVID/variants_for_experiments/challenge_subset/"
        "covidCheck_test_extracted_noNEI_numeric.json",
        "Check-COVID/Check-COVID/variants_for_experiments/challenge_subset/"
        "covidCheck_test_extracted_noNEI_temporal.json",
        # every claim of every split in one file, the test claims included
        "Check-COVID/Check-COVID/Check-COVID_all.json",
    ),
    "citint": (
        "Citation-Integrity/multivers_format_jedick/claims_test.jsonl",
        "Citation-Integrity/original/claims-test.jsonl",
        "Citation-Integrity/original/test.jsonl",
    ),
    "clinifact": ("CliniFact/data/processed/primary_outcome_publication_dataset/test_set.csv",),
    # The annotations file holds every split; a row is kept only when its article is listed
    # in the train or validation id file, so the test id files are never needed.
    "evinf": (
        "Evidence-Inference/annotations/splits/test_article_ids.txt",
        "Evidence-Inference/annotations/splits/ev1_test_article_ids.txt",
        "Evidence-Inference/annotations/splits/ev2_test_article_ids.txt",
    ),
    # README: annotated samples of three systems and the gold responses, no splits.
    "faithdial": (),
    # The WoW test set is BEGIN's benchmark: report only. Its three dev files train and tune.
    "begin": ("BEGIN/wow/begin_test_wow.tsv",),
}
_FORBIDDEN = frozenset(p for parts in _TEST_PARTS.values() for p in parts)


def test_parts() -> dict[str, list[str]]:
    """For each corpus, the files (relative to ``verification/``) of its test parts."""
    return {name: list(parts) for name, parts in _TEST_PARTS.items()}


test_parts.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


# --- reading ---------------------------------------------------------------------------------


def _path(root: Path, rel: str, *, test: bool = False) -> Path:
    """``root/rel``, refusing any file of a test part; with ``test`` (:func:`load_test`
    only), refusing any file that is not one."""
    if test:
        if rel not in _FORBIDDEN:
            raise PermissionError(f"{rel} is not a test part")
        return root / rel
    if rel in _FORBIDDEN:
        raise PermissionError(f"{rel} is a test part and is never read for training")
    return root / rel


def _text(root: Path, rel: str, *, test: bool = False) -> str:
    with _path(root, rel, test=test).open(encoding="utf-8") as fh:
        return fh.read()


def _json_records(root: Path, rel: str, *, test: bool = False) -> list[dict[str, Any]]:
    """A JSON array or JSON-lines file as a list of records."""
    text = _text(root, rel, test=test).strip()
    if text.startswith("["):
        return list(json.loads(text))
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _csv_rows(
    root: Path, rel: str, *, tsv: bool = False, test: bool = False
) -> list[dict[str, str]]:
    with _path(root, rel, test=test).open(encoding="utf-8", newline="") as fh:
        if tsv:
            return list(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
        return list(csv.DictReader(fh))


def _ids(root: Path, rel: str) -> set[str]:
    return set(_text(root, rel).split())


# --- text ------------------------------------------------------------------------------------

_STOP = frozenset(
    "a an the and or of in on at to for from by with as is are was were be been being this that"
    " these those it its their there than then which who whom what when where while into over"
    " under after before between during about not no nor but if so such can could may might"
    " will would should has have had do does did also more most less other some any each all"
    " both we our they he she his her them i you your me my us".split()
)
_PTB = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}"}
_NOT_AN_END = r"(?<!\bvs\.)(?<!\bal\.)(?<!e\.g\.)(?<!i\.e\.)(?<!\bFig\.)(?<!\bNo\.)(?<!\bca\.)"
_SENTENCE_BREAK = re.compile(_NOT_AN_END + r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])|\s*\n+\s*")
# dialogue knowledge (WoW, TopicalChat fun facts) often starts its sentences in lower case
_LOOSE_BREAK = re.compile(_NOT_AN_END + r"(?<=[.!?])\s+|\s*\n+\s*")
_CITATION = re.compile(r"[\[(][^\[\]()]{0,80}?<\|\w+\|>[^\[\]()]{0,80}?[\])]|<\|\w+\|>")


def _clean(text: object) -> str:
    """Text as one line: odd spaces and replacement characters made plain, runs collapsed."""
    if not isinstance(text, str):
        return ""
    text = re.sub(r"[\ufffd\u00a0\u2009\u202f\u200b]", " ", text)
    return " ".join(text.split())


def _detok(text: str) -> str:
    """Undo Penn-Treebank style tokenization: "do n't", "-LRB-", "``", "a , b", "x - y"."""
    for token, char in _PTB.items():
        text = text.replace(token, char)
    text = text.replace("``", '"').replace("''", '"')
    text = re.sub(r"\s+([,.;:!?%)\]}])", r"\1", text)
    text = re.sub(r"([(\[{$])\s+", r"\1", text)
    text = re.sub(r"\s+('s|'re|'ve|'ll|'d|'m|n't)\b", r"\1", text, flags=re.IGNORECASE)
    text = re.sub(r"(\w) ' s\b", r"\1's", text)
    text = re.sub(r"(?<=\w) - (?=\w)", "-", text)  # "motion - picture"
    text = re.sub(r'"\s+([^"]*?)\s+"', r'"\1"', text)
    text = re.sub(r"\(\s*[,;]?\s*\)", "", text)  # pronunciations cut out of Wikipedia
    text = re.sub(r"\(\s*[,;]\s*", "(", text)
    return _clean(text)


def _words(text: str) -> int:
    return len(text.split())


def _clip(text: str, limit: int = MAX_EVIDENCE_WORDS) -> str:
    """At most ``limit`` words: whole sentences when they fit, else the first words."""
    if _words(text) <= limit:
        return text
    kept: list[str] = []
    for sentence in _sentences(text):
        if _words(" ".join([*kept, sentence])) > limit:
            break
        kept.append(sentence)
    if kept:
        return " ".join(kept)
    return " ".join(text.split()[:limit])


def _sentences(text: str, *, loose: bool = False) -> list[str]:
    parts = (_LOOSE_BREAK if loose else _SENTENCE_BREAK).split(text)
    return [s for s in (_clean(p) for p in parts) if s]


def _content(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 1 and w not in _STOP}


def _pick(
    statement: str,
    sentences: Sequence[str],
    rng: random.Random,
    *,
    fewest: int = 1,
    most: int = 3,
    boost: re.Pattern[str] | None = None,
) -> str:
    """``fewest``-``most`` sentences (how many: the rng) sharing most content words with the
    statement, in their own order, within ``MAX_EVIDENCE_WORDS``; a sentence ``boost``
    matches counts as sharing ``BOOST`` more words."""
    wanted = rng.randint(fewest, most)
    words = _content(statement)

    def score(i: int) -> int:
        found = boost is not None and boost.search(sentences[i]) is not None
        return len(words & _content(sentences[i])) + (BOOST if found else 0)

    ranked = sorted(range(len(sentences)), key=lambda i: (-score(i), _words(sentences[i]), i))
    chosen: list[int] = []
    total = 0
    for i in ranked:
        n = _words(sentences[i])
        if chosen and total + n > MAX_EVIDENCE_WORDS:
            continue
        chosen.append(i)
        total += n
        if len(chosen) == wanted:
            break
    return _clip(" ".join(sentences[i] for i in sorted(chosen)))


def _hash_split(key: str) -> Split:
    """A stable 90/10 train/dev split on ``key`` (lower-cased, letters and digits only)."""
    norm = re.sub(r"[^a-z0-9]", "", key.lower())
    digest = hashlib.sha1(norm.encode("utf-8")).digest()
    return "dev" if int.from_bytes(digest[:8], "big") % DEV_EVERY == 0 else "train"


# --- corpora ---------------------------------------------------------------------------------

Maker = Callable[[Path, random.Random], Iterable[Pair]]

_VITAMINC_FILES = ("VitaminC/vitaminc_real/test.jsonl", "VitaminC/vitaminc_synthetic/test.jsonl")
_VITAMINC_LABELS = {
    "SUPPORTS": (1, "supports"),
    "REFUTES": (0, "refutes"),
    "NOT ENOUGH INFO": (0, "nei"),
}


def _vitaminc(root: Path, rng: random.Random) -> Iterable[Pair]:
    """Both VitaminC sets; split by the Wikipedia page, so no page's revisions straddle it."""
    for rel in _VITAMINC_FILES:
        for row in _json_records(root, rel):
            if row.get("label") not in _VITAMINC_LABELS:
                continue
            label, kind = _VITAMINC_LABELS[row["label"]]
            split = _hash_split(str(row.get("page") or row["claim"]))
            yield Pair(
                _detok(row["claim"]), _detok(row["evidence"]), label, "vitaminc", split, kind
            )


_SCIFACT_CLAIMS: dict[Split, str] = {
    "train": "SciFact/multivers_test_labels/claims_train.jsonl",
    "dev": "SciFact/multivers_test_labels/claims_dev.jsonl",
}
_STRING_LITERAL = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"", re.DOTALL)


def _scifact_corpus(root: Path) -> dict[int, list[str]]:
    """Abstract sentences by doc id (the CSV holds each abstract as a printed array)."""
    docs: dict[int, list[str]] = {}
    for row in _csv_rows(root, "SciFact/hf_csv/corpus_train.csv"):
        found = _STRING_LITERAL.findall(row["abstract"])
        docs[int(row["doc_id"])] = [_clean(ast.literal_eval(s)) for s in found]
    return docs


def _rationale_pairs(
    claim: str,
    evidence: dict[str, list[dict[str, Any]]],
    cited: Iterable[int],
    docs: dict[int, list[str]],
    rng: random.Random,
    corpus: str,
    split: Split,
) -> Iterable[Pair]:
    """SciFact-format rationales: one pair per rationale; NEI for cited docs without one."""
    for doc_id, rationales in evidence.items():
        sentences = docs.get(int(doc_id), [])
        for rationale in rationales:
            idx = sorted(i for i in rationale["sentences"] if 0 <= i < len(sentences))
            supports = rationale["label"] == "SUPPORT"
            text = _clip(" ".join(sentences[i] for i in idx))
            yield Pair(
                claim, text, int(supports), corpus, split, "supports" if supports else "refutes"
            )
    for cited_doc in cited:
        if str(cited_doc) not in evidence and docs.get(int(cited_doc)):
            nei = _pick(claim, docs[int(cited_doc)], rng, most=2)
            yield Pair(claim, nei, 0, corpus, split, "nei")


def _scifact(root: Path, rng: random.Random) -> Iterable[Pair]:
    docs = _scifact_corpus(root)
    for split, rel in _SCIFACT_CLAIMS.items():
        for row in _json_records(root, rel):
            yield from _rationale_pairs(
                _clean(row["claim"]),
                row["evidence"],
                row.get("cited_doc_ids", []),
                docs,
                rng,
                "scifact",
                split,
            )


_CHECKCOVID = "Check-COVID/Check-COVID/"
_CHECKCOVID_CLAIMS: dict[Split, str] = {
    "train": _CHECKCOVID + "train/covidCheck_train_composed+extracted.json",
    "dev": _CHECKCOVID + "dev/covidCheck_dev_composed+extracted.json",
}
_CHECKCOVID_LABELS = {
    "SUPPORT": (1, "supports"),
    "REFUTE": (0, "refutes"),
    "NOTENOUGHINFO": (0, "nei"),
}


def _checkcovid_docs(root: Path) -> dict[str, list[str]]:
    return {
        d["cord_id"]: [re.sub(r"^Abstract\s+", "", _clean(s)) for s in d["abstract"]]
        for d in _json_records(root, _CHECKCOVID + "corpus.json")
    }


def _checkcovid_pairs(
    rows: Iterable[dict[str, Any]], docs: dict[str, list[str]], split: Split
) -> Iterable[Pair]:
    for row in rows:
        if row.get("label") not in _CHECKCOVID_LABELS:
            continue
        sentences = docs.get(row["cord_id"], [])
        idx = sorted({e["sent_index"] for e in row["evidence_set"]})
        text = " ".join(sentences[i] for i in idx if 0 <= i < len(sentences))
        label, kind = _CHECKCOVID_LABELS[row["label"]]
        yield Pair(_clean(row["claim"]), _clip(text), label, "checkcovid", split, kind)


def _checkcovid(root: Path, rng: random.Random) -> Iterable[Pair]:
    """Every claim with its annotated sentences (NEI claims too: topical, not deciding)."""
    docs = _checkcovid_docs(root)
    for split, rel in _CHECKCOVID_CLAIMS.items():
        yield from _checkcovid_pairs(_json_records(root, rel), docs, split)


_CITINT = "Citation-Integrity/multivers_format_jedick/"
_CITINT_CLAIMS: dict[Split, str] = {
    "train": _CITINT + "claims_train.jsonl",
    "dev": _CITINT + "claims_dev.jsonl",
}


def _strip_citations(text: str) -> str:
    """A citing sentence without its citation markers (``[<|multi_cit|>,7]``, ``(<|cit|>)``)."""
    text = _CITATION.sub("", text)
    text = re.sub(r"\(\s*\)|\[\s*\]", "", text)
    text = re.sub(r"\s+([,.;:)\]])", r"\1", text)
    return _clean(text)


def _citint_docs(root: Path) -> dict[int, list[str]]:
    return {
        int(d["doc_id"]): [_clean(s) for s in d["abstract"]]
        for d in _json_records(root, _CITINT + "corpus.jsonl")
    }


def _citint(root: Path, rng: random.Random) -> Iterable[Pair]:
    """Citing sentences against the cited paper's sentences (MultiVerS-format copy, the one
    with its corpus): SUPPORT = accurate citation; REFUTE = any inaccuracy."""
    docs = _citint_docs(root)
    for split, rel in _CITINT_CLAIMS.items():
        for row in _json_records(root, rel):
            yield from _rationale_pairs(
                _strip_citations(row["claim"]),
                row["evidence"],
                row.get("cited_doc_ids", []),
                docs,
                rng,
                "citint",
                split,
            )


_CLINIFACT = "CliniFact/data/processed/primary_outcome_publication_dataset/"
_CLINIFACT_FILES: dict[Split, str] = {
    "train": _CLINIFACT + "train_set.csv",
    "dev": _CLINIFACT + "validation_set.csv",
}
_CLINIFACT_LABELS = {"1": (1, "supports"), "0": (0, "inconclusive"), "2": (0, "nei")}
# a sentence that reports a test result (whatever the label: the same rule for all of them)
_RESULT = re.compile(
    r"\b[pP]\s*[<=>≤≥]|signific|95\s*%|\bCI\b|(odds|hazard|risk) ratio|did not differ"
    r"|no (statistically )?(significant )?difference",
    re.IGNORECASE,
)


def _clinifact(root: Path, rng: random.Random) -> Iterable[Pair]:
    """Trial claims against the 2-3 abstract sentences that share most words with them,
    favouring sentences that report a result (the label is the trial's test result)."""
    for split, rel in _CLINIFACT_FILES.items():
        yield from _clinifact_pairs(_csv_rows(root, rel), rng, split)


def _clinifact_pairs(
    rows: Iterable[dict[str, str]], rng: random.Random, split: Split
) -> Iterable[Pair]:
    for row in rows:
        if row.get("label") not in _CLINIFACT_LABELS:
            continue
        claim = _clean(row["claim"])
        sentences = _sentences(row.get("article_abstract") or "")
        text = _pick(claim, sentences, rng, fewest=2, boost=_RESULT)
        label, kind = _CLINIFACT_LABELS[row["label"]]
        yield Pair(claim, text, label, "clinifact", split, kind)


_EVINF = "Evidence-Inference/annotations/"
_EVINF_SPLITS: dict[Split, str] = {
    "train": _EVINF + "splits/train_article_ids.txt",
    "dev": _EVINF + "splits/validation_article_ids.txt",
}
# README "Caveat": prompts flagged incorrect, questionable or malformed.
_EVINF_FLAGGED = frozenset(
    int(x)
    for x in """911 912 1262 1261 3044 3248 3111 3620 4308 4490 4491 4324 4325 4492 4824 5000
    5001 5002 5046 5047 4948 5639 5710 5752 5775 5782 5841 5843 5861 5862 5863 5964 5965 5966
    5975 4807 5776 5777 5778 5779 5780 5781 6034 6065 6066 6666 6667 6668 6669 7040 7042 7944
    8590 8605 8606 8639 8640 8745 8747 8749 8877 8878 8593 8631 8635 8884 8886 8773 10032 10035
    8876 8875 8885 8917 8921 8118 10885 10886 10887 10888 10889 10890 7811 7812 7813 7814 7815
    8197 8198 8199 8200 8201 9429 9430 9431 8536 9432 3514 346 5037 4715 8767 9295 9297 8870
    9862""".split()
)
_EVINF_TEMPLATES = {
    "increased": (
        "{i} significantly increased {o} compared with {c}.",
        "Compared with {c}, {i} significantly increased {o}.",
    ),
    "decreased": (
        "{i} significantly decreased {o} compared with {c}.",
        "Compared with {c}, {i} significantly decreased {o}.",
    ),
    "no_difference": (
        "There was no significant difference in {o} between {i} and {c}.",
        "{i} and {c} did not differ significantly in {o}.",
    ),
}
_EVINF_MAX_FIELD_WORDS = 15


def _evinf_label(text: str) -> str | None:
    text = text.strip().lower()
    if text.startswith("significantly increase"):
        return "increased"
    if text.startswith("significantly decrease"):
        return "decreased"
    if text.startswith("no significant"):
        return "no_difference"
    return None


def _evinf_field(text: str) -> str:
    """A prompt field for the middle of a sentence: entities decoded, "The x" as "the x"."""
    text = _clean(html.unescape(html.unescape(text))).rstrip(" .;,")
    first = text.split(" ", 1)[0]
    if first[:1].isupper() and first[1:].islower():
        text = text[0].lower() + text[1:]
    return text


def _evinf_statement(label: str, fields: dict[str, str], rng: random.Random) -> str:
    text = rng.choice(_EVINF_TEMPLATES[label]).format(**fields)
    return text[0].upper() + text[1:]


def _evinf(root: Path, rng: random.Random) -> Iterable[Pair]:
    """Evidence Inference 2.0 prompts as statements: per prompt, one verified evidence span
    with the statement of its label (1) and of one other label (0)."""
    split_of: dict[str, Split] = {
        pmcid: split for split, rel in _EVINF_SPLITS.items() for pmcid in _ids(root, rel)
    }
    prompts = {row["PromptID"]: row for row in _csv_rows(root, _EVINF + "prompts_merged.csv")}
    spans: dict[str, list[tuple[str, str]]] = defaultdict(list)
    article: dict[str, str] = {}
    for row in _csv_rows(root, _EVINF + "v2_annotations.csv"):
        if row["PMCID"] not in split_of or int(row["PromptID"]) in _EVINF_FLAGGED:
            continue
        if row["Valid Label"] != "True" or row["Valid Reasoning"] != "True":
            continue
        label = _evinf_label(row["Label"])
        text = _clean(html.unescape(row["Annotations"]))
        if label and text:
            spans[row["PromptID"]].append((label, text))
            article[row["PromptID"]] = row["PMCID"]
    for prompt_id in sorted(spans, key=int):
        found = spans[prompt_id]
        prompt = prompts.get(prompt_id)
        if prompt is None or len({label for label, _ in found}) != 1:
            continue  # unknown prompt, or annotators disagree
        fields = {
            k[0].lower(): _evinf_field(prompt[k]) for k in ("Intervention", "Comparator", "Outcome")
        }
        if any(not v or _words(v) > _EVINF_MAX_FIELD_WORDS for v in fields.values()):
            continue
        label, text = rng.choice(sorted(set(found)))
        other = rng.choice([x for x in _EVINF_TEMPLATES if x != label])
        split = split_of[article[prompt_id]]
        evidence = _clip(text)
        yield Pair(_evinf_statement(label, fields, rng), evidence, 1, "evinf", split, "supports")
        yield Pair(_evinf_statement(other, fields, rng), evidence, 0, "evinf", split, "refutes")


_FAITHDIAL = "FaithDial-data-audit/data-audit/"
_FAITHDIAL_FILES = tuple(
    _FAITHDIAL + name
    for name in (
        "CTRL/ctrl_processed_cmu.csv",
        "CTRL/ctrl_processed_topicalchat.csv",
        "CTRL/ctrl_processed_wow.csv",
        "DoHA/doha_processed_cmu.csv",
        "DoHA/doha_processed_topical.csv",
        "DoHA/doha_processed_wow.csv",
        "GPT2/gpt2_processed_cmu.csv",
        "GPT2/gpt2_processed_topical.csv",
        "GPT2/gpt2_processed_wow.csv",
        "gold/cmu.csv",
        "gold/topical.csv",
        "gold/wow.csv",
    )
)


def _faithdial_label(text: str) -> tuple[int, str] | None:
    """The audit's BEGIN tags (``entailment,uncooperative``, ``partial hallucination``...)."""
    tags = {t.strip() for t in re.split(r"[,.]", text.lower().replace("entailmentt", "entailment"))}
    tags.discard("")
    if not tags:
        return None
    if "partial hallucination" in tags or {"entailment", "hallucination"} <= tags:
        return 0, "partial"
    if tags & {"hallucination", "hallucinated"}:
        return 0, "hallucination"
    if tags == {"generic"}:
        return 0, "generic"
    if "uncooperative" in tags:  # faithful to the knowledge, just not to the conversation
        return 1, "uncooperative"
    if tags == {"entailment"}:
        return 1, "supports"
    return None


def _grounded_pair(
    response: str,
    knowledge: str,
    label: int,
    corpus: str,
    kind: str,
    rng: random.Random,
    split: Split | None = None,
) -> Pair:
    """A dialogue response against its knowledge, cut to the sentences it shares most with;
    without ``split``, split by the knowledge."""
    response, knowledge = _detok(response), _detok(knowledge)
    evidence = knowledge
    if _words(knowledge) > MAX_EVIDENCE_WORDS:
        evidence = _pick(response, _sentences(knowledge, loose=True), rng, fewest=2, most=4)
    # split on the whole knowledge, so every response to one context lands on the same side
    return Pair(response, evidence, label, corpus, split or _hash_split(knowledge), kind)


def _faithdial(root: Path, rng: random.Random) -> Iterable[Pair]:
    """Responses of CTRL, DoHA, GPT-2 and the gold human ones, audited against the knowledge."""
    for rel in _FAITHDIAL_FILES:
        for row in _csv_rows(root, rel):
            cells = list(row.values())  # knowledge, history, response, BEGIN tags, VRM tags
            if len(cells) < 4:
                continue
            found = _faithdial_label(cells[3] or "")
            if found is None:
                continue
            label, kind = found
            yield _grounded_pair(cells[2] or "", cells[0] or "", label, "faithdial", kind, rng)


_BEGIN_FILES = (
    "BEGIN/wow/begin_dev_wow.tsv",
    "BEGIN/cmu-dog/begin_dev_cmu.tsv",
    "BEGIN/topicalchat/begin_dev_tc.tsv",
)
_BEGIN_LABELS = {
    "fully attributable": (1, "supports"),
    "not fully attributable": (0, "unattributable"),
    "generic": (0, "generic"),
}


def _begin(root: Path, rng: random.Random) -> Iterable[Pair]:
    """BEGIN's dev files (WoW, CMU-DoG, TopicalChat); its WoW test file is never read."""
    for rel in _BEGIN_FILES:
        yield from _begin_pairs(_csv_rows(root, rel, tsv=True), rng)


def _begin_pairs(
    rows: Iterable[dict[str, str]], rng: random.Random, split: Split | None = None
) -> Iterable[Pair]:
    for row in rows:
        found = _BEGIN_LABELS.get((row.get("begin_label") or "").strip().lower())
        if found is None:
            continue
        label, kind = found
        response, knowledge = row.get("response") or "", row.get("knowledge") or ""
        yield _grounded_pair(response, knowledge, label, "begin", kind, rng, split)


_MAKERS: dict[str, Maker] = {
    "vitaminc": _vitaminc,
    "scifact": _scifact,
    "checkcovid": _checkcovid,
    "citint": _citint,
    "clinifact": _clinifact,
    "evinf": _evinf,
    "faithdial": _faithdial,
    "begin": _begin,
}
CORPORA: tuple[str, ...] = tuple(_MAKERS)


# --- test parts (benchmarks only) -------------------------------------------------------------


def _scifact_test(root: Path, rng: random.Random) -> Iterable[Pair]:
    docs = _scifact_corpus(root)
    for row in _json_records(root, "SciFact/multivers_test_labels/claims_test.jsonl", test=True):
        claim, evidence = _clean(row["claim"]), row["evidence"]
        cited = row.get("cited_doc_ids", [])
        yield from _rationale_pairs(claim, evidence, cited, docs, rng, "scifact", "test")


def _citint_test(root: Path, rng: random.Random) -> Iterable[Pair]:
    docs = _citint_docs(root)
    for row in _json_records(root, _CITINT + "claims_test.jsonl", test=True):
        claim, evidence = _strip_citations(row["claim"]), row["evidence"]
        cited = row.get("cited_doc_ids", [])
        yield from _rationale_pairs(claim, evidence, cited, docs, rng, "citint", "test")


def _checkcovid_test(root: Path, rng: random.Random) -> Iterable[Pair]:
    docs = _checkcovid_docs(root)
    for name in ("composed", "extracted"):
        rel = _CHECKCOVID + f"test/covidCheck_test_{name}.json"
        yield from _checkcovid_pairs(_json_records(root, rel, test=True), docs, "test")


def _clinifact_test(root: Path, rng: random.Random) -> Iterable[Pair]:
    rows = _csv_rows(root, _CLINIFACT + "test_set.csv", test=True)
    yield from _clinifact_pairs(rows, rng, "test")


def _begin_test(root: Path, rng: random.Random) -> Iterable[Pair]:
    rows = _csv_rows(root, "BEGIN/wow/begin_test_wow.tsv", tsv=True, test=True)
    yield from _begin_pairs(rows, rng, "test")


_TEST_MAKERS: dict[str, Maker] = {
    "begin": _begin_test,
    "clinifact": _clinifact_test,
    "scifact": _scifact_test,
    "checkcovid": _checkcovid_test,
    "citint": _citint_test,
}
TEST_CORPORA: tuple[str, ...] = tuple(_TEST_MAKERS)


def load_test(name: str, root: Path, *, rng: random.Random) -> list[Pair]:
    """The test part of one corpus, made into pairs exactly as its training pairs are (the
    same evidence, labels and kinds), for benchmarks that report on what training never
    reads (``grounding_heldout.py``). Only files :func:`test_parts` names are opened here,
    and each pair's split is ``test``, which the training script refuses.

    Args:
        name: one of :data:`TEST_CORPORA` (VitaminC, the FaithDial audit and Evidence
            Inference's test articles are not among them: the first two have no test part
            apart from what trains, the last states its claims from templates).
        root: the ``verification`` folder (or the data folder holding it).
        rng: the source of every random choice (evidence sentences of claims without a
            rationale, and of long knowledge).
    """
    if name not in _TEST_MAKERS:
        raise ValueError(f"no test part of {name!r}; known: {', '.join(TEST_CORPORA)}")
    return _dedupe(_TEST_MAKERS[name](_verification_root(Path(root)), rng))


# --- assembly --------------------------------------------------------------------------------


def _dedupe(pairs: Iterable[Pair]) -> list[Pair]:
    """Pairs with text on both sides, each (statement, evidence) once; a pair given two labels
    is dropped altogether."""
    first: dict[tuple[str, str], Pair] = {}
    labels: dict[tuple[str, str], set[int]] = defaultdict(set)
    for pair in pairs:
        if not pair.statement or not pair.evidence:
            continue
        key = (pair.statement, pair.evidence)
        first.setdefault(key, pair)
        labels[key].add(pair.label)
    return [p for key, p in first.items() if len(labels[key]) == 1]


def _balanced(pairs: Sequence[Pair], quota: int, rng: random.Random) -> list[Pair]:
    """``quota`` pairs, half of each label when both have enough, in their original order."""
    pos = [i for i, p in enumerate(pairs) if p.label == 1]
    neg = [i for i, p in enumerate(pairs) if p.label == 0]
    take_pos = min(len(pos), max(quota // 2, quota - len(neg)))
    take_neg = min(len(neg), quota - take_pos)
    chosen = set(rng.sample(pos, take_pos)) | set(rng.sample(neg, take_neg))
    return [pairs[i] for i in sorted(chosen)]


def _subsample(pairs: list[Pair], limit: int | None, rng: random.Random) -> list[Pair]:
    """At most ``limit`` pairs, keeping each split's share, balanced by label within it."""
    if limit is None or len(pairs) <= limit:
        return pairs
    dev = [p for p in pairs if p.split == "dev"]
    train = [p for p in pairs if p.split == "train"]
    dev_quota = min(len(dev), round(limit * len(dev) / len(pairs)))
    return _balanced(train, limit - dev_quota, rng) + _balanced(dev, dev_quota, rng)


def _verification_root(root: Path) -> Path:
    return root / "verification" if (root / "verification").is_dir() else root


def load_corpus(
    name: str, root: Path, *, rng: random.Random, limit: int | None = None
) -> list[Pair]:
    """The train and dev pairs of one corpus.

    Args:
        name: one of :data:`CORPORA`.
        root: the ``verification`` folder (or the data folder holding it).
        rng: the source of every random choice (evidence sentences, templates, subsample).
        limit: at most this many pairs, subsampled by split and balanced by label.

    Returns:
        The pairs, deduplicated, train then dev when subsampled.
    """
    if name not in _MAKERS:
        raise ValueError(f"unknown corpus {name!r}; known: {', '.join(CORPORA)}")
    pairs = _dedupe(_MAKERS[name](_verification_root(Path(root)), rng))
    return _subsample(pairs, limit, rng)


# --- summary ---------------------------------------------------------------------------------


def _mean(values: Sequence[int]) -> float:
    return sum(values) / len(values) if values else 0.0


def summary(root: Path, *, seed: int = 13, limit: int | None = None, examples: int = 2) -> None:
    """Print, per corpus and split, the label counts, mean word counts and a few examples."""
    header = f"{'corpus':<11}{'split':<6}{'label1':>7}{'label0':>7}{'stmt_w':>8}{'evid_w':>8}"
    lines = [header, "-" * len(header)]
    shown: list[str] = []
    total = 0.0
    for name in CORPORA:
        start = time.perf_counter()
        pairs = load_corpus(name, root, rng=random.Random(seed), limit=limit)
        took = time.perf_counter() - start
        total += took
        for split in ("train", "dev"):
            part = [p for p in pairs if p.split == split]
            ones = sum(p.label for p in part)
            lines.append(
                f"{name:<11}{split:<6}{ones:>7}{len(part) - ones:>7}"
                f"{_mean([_words(p.statement) for p in part]):>8.1f}"
                f"{_mean([_words(p.evidence) for p in part]):>8.1f}"
            )
        kinds = Counter(p.kind for p in pairs)
        shown.append(f"\n== {name} ({took:.1f} s) kinds: {dict(kinds.most_common())}")
        pick = random.Random(seed)
        for label in (1, 0):
            group = [p for p in pairs if p.label == label]
            for p in pick.sample(group, min(examples, len(group))):
                shown.append(f"  [{p.label} {p.kind} {p.split}] S: {p.statement}")
                shown.append(f"      E: {p.evidence}")
    print("\n".join(lines))
    print("\n".join(shown))
    print(f"\nloaded all corpora in {total:.1f} s")


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: print the summary of every corpus."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
    parser.add_argument("--data", type=Path, default=default, help="data folder")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--limit", type=int, default=None, help="pairs per corpus")
    parser.add_argument("--examples", type=int, default=2, help="examples per label")
    args = parser.parse_args(argv)
    if not _verification_root(args.data).is_dir():
        sys.exit(f"error: {args.data} does not exist")
    summary(args.data, seed=args.seed, limit=args.limit, examples=args.examples)


if __name__ == "__main__":
    main()
