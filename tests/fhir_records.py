"""FHIR resources for the tests of structured sources (hand-written, no real patient)."""

from __future__ import annotations

import json
from typing import Any

METFORMIN = {
    "resourceType": "MedicationStatement",
    "status": "active",
    "medicationCodeableConcept": {
        "coding": [
            {
                "system": "http://www.nlm.nih.gov/research/umls/rxnorm",
                "code": "860975",
                "display": "metformin",
            }
        ]
    },
    "dosage": [{"text": "500 mg by mouth twice daily"}],
}


def bundle(*resources: dict[str, Any]) -> dict[str, Any]:
    """A collection Bundle of ``resources``, each with a full URL as an export writes it."""
    return {
        "resourceType": "Bundle",
        "type": "collection",
        "entry": [{"fullUrl": f"urn:uuid:{i}", "resource": r} for i, r in enumerate(resources)],
    }


def bundle_text(*resources: dict[str, Any]) -> str:
    """:func:`bundle` as indented JSON text."""
    return json.dumps(bundle(*resources), indent=2)
