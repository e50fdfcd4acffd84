"""The claim/evidence corpus loader: right labels and splits, and no test part ever opened.

Runs on a tiny fake ``verification`` tree with the real corpora's file layout and made-up
rows; every test-part file holds a row with the word LEAK, which must never come out.
"""

from __future__ import annotations

import builtins
import csv
import io
import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))

import verifier_corpora as vc  # noqa: E402

LEAK = "LEAK row from a test part"


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _csv(path: Path, header: list[str], rows: list[list[Any]], *, tsv: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, delimiter="\t" if tsv else ",")
        writer.writerow(header)
        writer.writerows(rows)


def _vitaminc(root: Path) -> None:
    for name in ("vitaminc_real", "vitaminc_synthetic"):
        _jsonl(
            root / "VitaminC" / name / "test.jsonl",
            [
                {
                    "claim": "Zorbia has 12 moons .",
                    "evidence": "Zorbia has 12 moons .",
                    "label": "SUPPORTS",
                    "page": "Zorbia",
                    "case_id": "a",
                },
                {
                    "claim": "Zorbia has 15 moons .",
                    "evidence": "Zorbia has 12 moons .",
                    "label": "REFUTES",
                    "page": "Zorbia",
                    "case_id": "a",
                },
                {
                    "claim": "Zorbia is blue .",
                    "evidence": "Zorbia was found in 1901 .",
                    "label": "NOT ENOUGH INFO",
                    "page": "Zorbia",
                    "case_id": "b",
                },
            ],
        )


def _scifact(root: Path) -> None:
    base = root / "SciFact"
    abstract = "['Blorp cells grow fast in cold water.'\n 'Snibbin lowers blorp growth.']"
    other = "['Quiffle proteins bind to snibbin.'\n 'Quiffle levels were unchanged.']"
    _csv(
        base / "hf_csv" / "corpus_train.csv",
        ["doc_id", "title", "abstract", "structured"],
        [[1, "t", abstract, False], [2, "u", other, False]],
    )
    _jsonl(
        base / "multivers_test_labels" / "claims_train.jsonl",
        [
            {
                "id": 1,
                "claim": "Blorp cells grow fast in cold water.",
                "evidence": {"1": [{"sentences": [0], "label": "SUPPORT"}]},
                "cited_doc_ids": [1],
            },
            {
                "id": 2,
                "claim": "Snibbin raises blorp growth.",
                "evidence": {"1": [{"sentences": [1], "label": "REFUTE"}]},
                "cited_doc_ids": [1, 2],
            },
        ],
    )
    _jsonl(
        base / "multivers_test_labels" / "claims_dev.jsonl",
        [{"id": 3, "claim": "Quiffle proteins are red.", "evidence": {}, "cited_doc_ids": [2]}],
    )
    _jsonl(
        base / "multivers_test_labels" / "claims_test.jsonl",
        [{"id": 9, "claim": LEAK, "evidence": {}, "cited_doc_ids": [2]}],
    )
    _csv(base / "hf_csv" / "claims_test.csv", ["id", "claim"], [[9, LEAK]])


def _checkcovid(root: Path) -> None:
    base = root / "Check-COVID" / "Check-COVID"
    base.mkdir(parents=True)
    corpus = [
        {
            "cord_id": "c1",
            "title": "t",
            "abstract": ["Abstract Masks cut spread by half.", "The trial ran in winter."],
        },
    ]
    (base / "corpus.json").write_text(json.dumps(corpus), encoding="utf-8")
    one = {"sent_index": 0, "type": "PRIMARY"}
    _jsonl(
        base / "train" / "covidCheck_train_composed+extracted.json",
        [
            {
                "id": "1",
                "claim": "Masks cut spread by half.",
                "cord_id": "c1",
                "label": "SUPPORT",
                "evidence_set": [one],
            },
            {
                "id": "2",
                "claim": "Masks double the spread.",
                "cord_id": "c1",
                "label": "REFUTE",
                "evidence_set": [one],
            },
        ],
    )
    _jsonl(
        base / "dev" / "covidCheck_dev_composed+extracted.json",
        [
            {
                "id": "3",
                "claim": "Masks were tested in summer.",
                "cord_id": "c1",
                "label": "NOTENOUGHINFO",
                "evidence_set": [{"sent_index": 1, "type": "PRIMARY"}],
            },
        ],
    )
    leak = [{"id": "9", "claim": LEAK, "cord_id": "c1", "label": "SUPPORT", "evidence_set": [one]}]
    for rel in vc.test_parts()["checkcovid"]:
        _jsonl(root / rel, leak)


def _citint(root: Path) -> None:
    base = root / "Citation-Integrity" / "multivers_format_jedick"
    _jsonl(
        base / "corpus.jsonl",
        [
            {
                "doc_id": 10,
                "title": "",
                "abstract": ["Gleep mice live longer.", "Food was normal."],
            },
            {"doc_id": 11, "title": "", "abstract": ["Gleep mice were fed at night."]},
        ],
    )
    _jsonl(
        base / "claims_train.jsonl",
        [
            {
                "id": 0,
                "claim": "Gleep mice live longer [<|cit|>].",
                "evidence": {"10": [{"sentences": [0], "label": "SUPPORT"}]},
                "cited_doc_ids": [10],
            },
            {
                "id": 1,
                "claim": "Gleep mice die young (<|multi_cit|>; Smith, <|other_cit|>).",
                "evidence": {"10": [{"sentences": [0], "label": "REFUTE"}]},
                "cited_doc_ids": [10],
            },
        ],
    )
    _jsonl(
        base / "claims_dev.jsonl",
        [
            {
                "id": 2,
                "claim": "Gleep mice eat at night <|cit|>.",
                "evidence": {},
                "cited_doc_ids": [11],
            }
        ],
    )
    for rel in vc.test_parts()["citint"]:
        _jsonl(root / rel, [{"id": 9, "claim": LEAK, "evidence": {}, "cited_doc_ids": [11]}])


def _clinifact(root: Path) -> None:
    base = root / "CliniFact" / "data" / "processed" / "primary_outcome_publication_dataset"
    header = ["claim", "article_abstract", "label"]
    abstract = (
        "BACKGROUND: Drug Q was tested. RESULTS: Drug Q lowered pain versus placebo (p<0.01)."
    )
    _csv(
        base / "train_set.csv",
        header,
        [
            ["Drug Q is superior to Placebo in terms of Pain", abstract, 1],
            ["Drug Q is superior to Placebo in terms of Sleep", abstract, 0],
        ],
    )
    _csv(base / "validation_set.csv", header, [["Drug R is superior to Placebo", abstract, 2]])
    _csv(base / "test_set.csv", header, [[LEAK, abstract, 1]])


def _evinf(root: Path) -> None:
    base = root / "Evidence-Inference" / "annotations"
    _csv(
        base / "prompts_merged.csv",
        ["PromptID", "PMCID", "Outcome", "Intervention", "Comparator"],
        [[1, 100, "Pain score", "drug Z", "placebo"], [2, 200, "LEAK", "drug Y", "placebo"]],
    )
    header = [
        "UserID",
        "PromptID",
        "PMCID",
        "Valid Label",
        "Valid Reasoning",
        "Label",
        "Annotations",
        "Label Code",
        "In Abstract",
        "Evidence Start",
        "Evidence End",
    ]
    _csv(
        base / "v2_annotations.csv",
        header,
        [
            [
                0,
                1,
                100,
                True,
                True,
                "significantly decreased",
                "Pain fell more with Z (p=0.01).",
                -1,
                "UNK",
                0,
                10,
            ],
            [1, 2, 200, True, True, "significantly increased", LEAK, 1, "UNK", 0, 10],
        ],
    )
    splits = base / "splits"
    splits.mkdir()
    (splits / "train_article_ids.txt").write_text("100\n", encoding="utf-8")
    (splits / "validation_article_ids.txt").write_text("300\n", encoding="utf-8")
    for rel in vc.test_parts()["evinf"]:
        (root / rel).write_text("200\n", encoding="utf-8")


def _faithdial(root: Path) -> None:
    rows = [
        [
            "Plinko is a board game from 1950.",
            "hi",
            "Plinko is a board game from 1950.",
            "Entailment",
            "x",
        ],
        [
            "Plinko is a board game from 1950.",
            "hi",
            "Plinko was invented on Mars.",
            "Hallucination",
            "x",
        ],
        [
            "Plinko is a board game from 1950.",
            "hi",
            "Plinko is a game, my uncle loves it.",
            "Entailment,Hallucination",
            "x",
        ],
        ["Plinko is a board game from 1950.", "hi", "Cool!", "Generic", "x"],
    ]
    for rel in vc._FAITHDIAL_FILES:
        _csv(root / rel, ["knowledge", "history", "response", "begin_label", "vrm_label"], rows)


def _begin(root: Path) -> None:
    header = ["model_name", "data_source", "knowledge", "message", "response", "begin_label"]
    know = "Tarrow is a city on a lake ."
    rows = [
        ["t5", "wow", know, "hm", "Tarrow is a city on a lake .", "Fully attributable"],
        ["t5", "wow", know, "hm", "Tarrow has 3 million people .", "Not fully attributable"],
        ["t5", "wow", know, "hm", "nice", "Generic"],
    ]
    for rel in vc._BEGIN_FILES:
        _csv(root / rel, header, rows, tsv=True)
    _csv(
        root / "BEGIN/wow/begin_test_wow.tsv",
        header,
        [["t5", "wow", know, "hm", LEAK, "Fully attributable"]],
        tsv=True,
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "verification"
    for build in (
        _vitaminc,
        _scifact,
        _checkcovid,
        _citint,
        _clinifact,
        _evinf,
        _faithdial,
        _begin,
    ):
        build(root)
    for parts in vc.test_parts().values():
        assert all((root / rel).is_file() for rel in parts), parts
    return root


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every path opened while the test runs (``open``, ``io.open`` and ``Path.open``)."""
    seen: list[Path] = []
    real_open, real_path_open = builtins.open, Path.open

    def spy_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, str | Path):
            seen.append(Path(file).resolve())
        return real_open(file, *args, **kwargs)

    def spy_path_open(self: Path, *args: Any, **kwargs: Any) -> Any:
        seen.append(self.resolve())
        return real_path_open(self, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy_open)
    monkeypatch.setattr(io, "open", spy_open)
    monkeypatch.setattr(Path, "open", spy_path_open)
    return seen


def _tail(pair: vc.Pair) -> tuple[int, str, str, str]:
    return pair.label, pair.corpus, pair.split, pair.kind


def _by_statement(pairs: list[vc.Pair]) -> dict[str, vc.Pair]:
    return {p.statement: p for p in pairs}


def test_every_corpus_names_its_test_parts() -> None:
    parts = vc.test_parts()
    assert set(parts) == set(vc.CORPORA)
    for name in ("scifact", "checkcovid", "citint", "clinifact", "evinf", "begin"):
        assert parts[name], name
    assert "BEGIN/wow/begin_test_wow.tsv" in parts["begin"]
    assert "SciFact/multivers_test_labels/claims_test.jsonl" in parts["scifact"]
    assert "Check-COVID/Check-COVID/Check-COVID_all.json" in parts["checkcovid"]
    assert all("test" in rel or "_all" in rel for p in parts.values() for rel in p)


def test_the_guard_refuses_test_parts(tree: Path) -> None:
    for rel in (r for p in vc.test_parts().values() for r in p):
        with pytest.raises(PermissionError):
            vc._path(tree, rel)


def test_no_test_part_is_opened_and_none_comes_out(tree: Path, opened: list[Path]) -> None:
    pairs = [p for name in vc.CORPORA for p in vc.load_corpus(name, tree, rng=random.Random(0))]
    forbidden = {(tree / rel).resolve() for p in vc.test_parts().values() for rel in p}
    assert opened, "the spy saw no file at all"
    assert not forbidden & set(opened)
    assert all("LEAK" not in p.statement and "LEAK" not in p.evidence for p in pairs)
    assert {p.corpus for p in pairs} == set(vc.CORPORA)
    for p in pairs:
        assert isinstance(p.statement, str)
        assert p.statement == p.statement.strip()
        assert isinstance(p.evidence, str)
        assert p.evidence
        assert p.label in (0, 1)
        assert p.split in ("train", "dev")
        assert len(p.evidence.split()) <= vc.MAX_EVIDENCE_WORDS


def test_labels_and_splits(tree: Path) -> None:
    rng = random.Random(0)
    sci_pairs = vc.load_corpus("scifact", tree, rng=rng)
    sci = _by_statement(sci_pairs)
    assert _tail(sci["Blorp cells grow fast in cold water."]) == (1, "scifact", "train", "supports")
    # a refuting rationale in the first cited abstract, nothing in the second: NEI there
    refuted = {p.kind: p for p in sci_pairs if p.statement == "Snibbin raises blorp growth."}
    assert set(refuted) == {"refutes", "nei"}
    assert refuted["refutes"].evidence == "Snibbin lowers blorp growth."
    assert refuted["nei"].label == 0
    assert refuted["nei"].evidence.startswith("Quiffle proteins bind to snibbin.")
    nei = sci["Quiffle proteins are red."]
    assert (nei.label, nei.split, nei.kind) == (0, "dev", "nei")
    assert "Quiffle" in nei.evidence  # the sentence sharing most words, not a random one

    covid = _by_statement(vc.load_corpus("checkcovid", tree, rng=rng))
    assert covid["Masks cut spread by half."].evidence == "Masks cut spread by half."
    assert covid["Masks cut spread by half."].label == 1
    assert covid["Masks double the spread."].kind == "refutes"
    assert _tail(covid["Masks were tested in summer."]) == (0, "checkcovid", "dev", "nei")

    cit = _by_statement(vc.load_corpus("citint", tree, rng=rng))
    assert set(cit) == {
        "Gleep mice live longer.",
        "Gleep mice die young.",
        "Gleep mice eat at night.",
    }
    assert cit["Gleep mice live longer."].label == 1
    assert cit["Gleep mice die young."].label == 0
    assert cit["Gleep mice eat at night."].split == "dev"

    clin = vc.load_corpus("clinifact", tree, rng=rng)
    assert [(p.label, p.split, p.kind) for p in clin] == [
        (1, "train", "supports"),
        (0, "train", "inconclusive"),
        (0, "dev", "nei"),
    ]

    evinf = vc.load_corpus("evinf", tree, rng=rng)
    assert len(evinf) == 2
    assert {p.split for p in evinf} == {"train"}
    good = next(p for p in evinf if p.label == 1)
    assert "significantly decreased pain score" in good.statement
    assert next(p for p in evinf if p.label == 0).evidence == good.evidence

    faith = _by_statement(vc.load_corpus("faithdial", tree, rng=rng))
    assert len(faith) == 4  # the same rows in twelve files: deduplicated
    assert faith["Plinko is a board game from 1950."].label == 1
    assert faith["Plinko was invented on Mars."].kind == "hallucination"
    assert _tail(faith["Plinko is a game, my uncle loves it."])[:2] == (0, "faithdial")
    assert faith["Plinko is a game, my uncle loves it."].kind == "partial"
    assert faith["Cool!"].kind == "generic"

    begin = _by_statement(vc.load_corpus("begin", tree, rng=rng))
    assert begin["Tarrow is a city on a lake."].label == 1  # detokenized
    assert begin["Tarrow has 3 million people."].label == 0
    assert len({p.split for p in begin.values()}) == 1  # one knowledge: one side of the split

    vit = _by_statement(vc.load_corpus("vitaminc", tree, rng=rng))
    assert vit["Zorbia has 12 moons."].label == 1
    assert vit["Zorbia has 15 moons."].kind == "refutes"
    assert vit["Zorbia is blue."].kind == "nei"


def test_loading_is_deterministic_and_limit_balances(tree: Path) -> None:
    first = [vc.load_corpus(n, tree, rng=random.Random(5)) for n in vc.CORPORA]
    again = [vc.load_corpus(n, tree, rng=random.Random(5)) for n in vc.CORPORA]
    assert first == again
    few = vc.load_corpus("faithdial", tree, rng=random.Random(5), limit=2)
    assert sorted(p.label for p in few) == [0, 1]


def test_hash_split_is_stable_and_about_one_in_ten() -> None:
    keys = [f"page {i}" for i in range(5000)]
    splits = [vc._hash_split(k) for k in keys]
    assert splits == [vc._hash_split(k) for k in keys]
    assert 0.07 < splits.count("dev") / len(splits) < 0.13
    assert vc._hash_split("The Page") == vc._hash_split("the page")


def test_unknown_corpus_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown corpus"):
        vc.load_corpus("nope", tmp_path, rng=random.Random(0))


def test_test_parts_are_read_only_by_load_test(tree: Path, opened: list[Path]) -> None:
    """The held-out benchmark's loader: the test rows themselves, every pair marked
    ``test``, and no training or dev claim file opened (only test parts and the documents
    claims cite)."""
    seen: dict[str, list[vc.Pair]] = {
        name: vc.load_test(name, tree, rng=random.Random(0)) for name in vc.TEST_CORPORA
    }
    for name, pairs in seen.items():
        assert pairs, name
        assert {p.split for p in pairs} == {"test"}, name
        assert {p.statement for p in pairs} == {LEAK}, name
        assert all(p.evidence for p in pairs), name
    assert _tail(seen["clinifact"][0]) == (1, "clinifact", "test", "supports")
    assert _tail(seen["begin"][0]) == (1, "begin", "test", "supports")
    assert {p.kind for p in seen["scifact"]} == {"nei"}  # no rationale: the cited abstract
    allowed = {(tree / rel).resolve() for p in vc.test_parts().values() for rel in p}
    documents = {"corpus_train.csv", "corpus.json", "corpus.jsonl"}
    assert opened
    assert all(path in allowed or path.name in documents for path in opened), opened


def test_load_test_refuses_what_is_not_a_test_part(tree: Path) -> None:
    with pytest.raises(ValueError, match="no test part"):
        vc.load_test("vitaminc", tree, rng=random.Random(0))
    with pytest.raises(PermissionError, match="not a test part"):
        vc._path(tree, vc._CITINT_CLAIMS["train"], test=True)
