"""Drug names from a public drug dictionary, for the named-drug check.

The data file of the ``drug-named-entity-recognition`` package (MIT licence: names from
DrugBank, MeSH and MedlinePlus, each variant linked to its generic name) is read directly;
the package itself is not imported, as its import reads and writes caches in the home
directory and its lookups may call a web service. Kept: one-word names of five letters or
more whose drug has a MedlinePlus page (drugs people are prescribed or buy, not enzymes,
reagents or drug classes), each with the generic name(s) it stands for: "norvasc" ->
{"amlodipine"}.
"""

from __future__ import annotations

import bz2
import importlib.util
import pickle
import re
from functools import lru_cache
from pathlib import Path

_PACKAGE = "drug_named_entity_recognition"
_DATA_FILE = "drug_ner_dictionary.pkl.bz2"
_NAME_RE = re.compile(r"[a-z]{5,}")
# Names the dictionary lists that notes mostly use otherwise: "luminal" (of a lumen),
# "cortisol" (a lab value).
_NOT_DRUGS = frozenset({"luminal", "cortisol"})


def _data_path() -> Path:
    spec = importlib.util.find_spec(_PACKAGE)  # locates the package without running it
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "the drug dictionary package 'drug-named-entity-recognition' is not installed "
            "(make install)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / _DATA_FILE


@lru_cache(maxsize=1)
def drug_names() -> dict[str, frozenset[str]]:
    """One-word drug name (brand or generic, lower case) -> its generic name(s)."""
    path = _data_path()
    with bz2.open(path, "rb") as fh:
        # the package's own data file, installed with the project like its code
        data = pickle.load(fh)
    variants = data.get("drug_variant_to_canonical") if isinstance(data, dict) else None
    details = data.get("drug_canonical_to_data") if isinstance(data, dict) else None
    if not isinstance(variants, dict) or not isinstance(details, dict):
        raise RuntimeError(f"{path.name}: not the expected drug dictionary")
    out: dict[str, frozenset[str]] = {}
    for name, generics in variants.items():
        if not isinstance(name, str) or not _NAME_RE.fullmatch(name) or name in _NOT_DRUGS:
            continue
        kept = frozenset(
            g
            for g in generics
            if isinstance(details.get(g), dict) and "medline_plus_id" in details[g]
        )
        if kept:
            out[name] = kept
    return out


@lru_cache(maxsize=4096)
def generics_in(text_low: str) -> frozenset[str]:
    """The generic names of every dictionary drug named in ``text_low`` (cached)."""
    names = drug_names()
    return frozenset(
        g for word in set(re.findall(r"[a-z]+", text_low)) for g in names.get(word, ())
    )
