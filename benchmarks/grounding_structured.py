"""Grounding against structured sources: a patient record as FHIR resources, as plain JSON, as
tables, and the same record written as a note.

No public labelled set pairs statements with structured clinical records, so this benchmark
makes its own, with a fixed seed: ``--records`` synthetic patients, each with medications
(drug, dose, frequency), allergies (or none known), conditions (one of them ruled out, in FHIR
a refuted Condition), laboratory results with their units and flags, a blood pressure and a
heart rate, and a relative's history. Each record is written four ways, the facts the same:

- ``fhir``: a FHIR R4 Bundle (AllergyIntolerance, MedicationStatement, Condition, Observation,
  FamilyMemberHistory) with codings, systems and URLs as a real export has them;
- ``json``: an application's own record (``{"medications": [{"name": ..., "dose": ...}]}``);
- ``table``: medications and laboratory results as Markdown and tab-separated tables, the rest
  as a short list;
- ``note``: the same facts as prose, the control (what the verifier was trained to read).

Statements about the record are written from templates in several wordings: for each item a
true one, and a false one of the kind a model gets wrong (another dose or value, another
drug, an allergy denied or invented, a ruled-out condition asserted, another relative, an
added drug the record does not name). Scored by the learned verifier (the default), by the
same with structured reading turned off (the source read as raw text, as before
:mod:`core.grounding.structured`), and by flagging everything: F1 of the flags
(hallucinated = positive), the false-alarm rate on true statements, and AUROC of one minus the
statement's support.

Synthetic and template-made: it shows whether a structured source is read at all, not how
well real statements about real records are judged.

    python benchmarks/grounding_structured.py [--records 120] [--seed 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _common import prf, print_json, print_table, support_model  # noqa: E402

DRUGS = {  # name: (doses in mg, frequencies)
    "metformin": ((500, 850, 1000), ("twice daily", "once daily")),
    "lisinopril": ((5, 10, 20, 40), ("once daily",)),
    "amlodipine": ((2.5, 5, 10), ("once daily",)),
    "atorvastatin": ((10, 20, 40, 80), ("at night", "once daily")),
    "simvastatin": ((20, 40), ("at night",)),
    "levothyroxine": ((25, 50, 75, 100), ("every morning",)),
    "omeprazole": ((20, 40), ("once daily", "twice daily")),
    "sertraline": ((50, 100), ("once daily",)),
    "metoprolol": ((25, 50, 100), ("twice daily",)),
    "warfarin": ((2, 3, 5), ("once daily",)),
    "apixaban": ((2.5, 5), ("twice daily",)),
    "furosemide": ((20, 40), ("once daily", "twice daily")),
    "gabapentin": ((100, 300), ("three times daily",)),
    "prednisone": ((5, 10, 20), ("once daily",)),
    "aspirin": ((81, 325), ("once daily",)),
    "losartan": ((25, 50, 100), ("once daily",)),
    "insulin glargine": ((10, 20, 30), ("at night",)),
    "albuterol": ((90,), ("as needed",)),
}
ALLERGENS = {
    "penicillin": ("hives", "rash", "anaphylaxis"),
    "sulfa drugs": ("rash", "hives"),
    "latex": ("contact dermatitis", "itching"),
    "peanuts": ("anaphylaxis", "throat swelling"),
    "codeine": ("nausea", "vomiting"),
    "iodinated contrast": ("hives", "shortness of breath"),
    "shellfish": ("hives", "lip swelling"),
}
CONDITIONS = (
    "type 2 diabetes mellitus",
    "essential hypertension",
    "hyperlipidemia",
    "hypothyroidism",
    "atrial fibrillation",
    "asthma",
    "chronic kidney disease",
    "osteoarthritis",
    "major depressive disorder",
    "gastroesophageal reflux disease",
    "heart failure",
    "gout",
)
LABS = {  # name: (unit, low, high, decimals)
    "hemoglobin A1c": ("%", 4.0, 5.6, 1),
    "potassium": ("mmol/L", 3.5, 5.1, 1),
    "sodium": ("mmol/L", 135, 145, 0),
    "creatinine": ("mg/dL", 0.6, 1.2, 1),
    "hemoglobin": ("g/dL", 12.0, 16.0, 1),
    "TSH": ("mIU/L", 0.4, 4.0, 1),
    "LDL cholesterol": ("mg/dL", 0, 100, 0),
    "eGFR": ("mL/min/1.73m2", 60, 120, 0),
}
RELATIVES = ("mother", "father", "sister", "brother")
FAMILY_CONDITIONS = (
    "breast cancer",
    "colon cancer",
    "coronary artery disease",
    "stroke",
    "type 2 diabetes mellitus",
)

SNOMED, RXNORM, LOINC = (
    "http://snomed.info/sct",
    "http://www.nlm.nih.gov/research/umls/rxnorm",
    "http://loinc.org",
)
CLINICAL = "http://terminology.hl7.org/CodeSystem/condition-clinical"
VERIFICATION = "http://terminology.hl7.org/CodeSystem/condition-ver-status"


def _num(x: float) -> str:
    return f"{x:g}"


def make_record(rng: random.Random) -> dict[str, Any]:
    """A synthetic patient: medications, allergies, conditions, labs, vitals, family history."""
    meds = []
    for name in rng.sample(sorted(DRUGS), rng.randint(3, 5)):
        doses, freqs = DRUGS[name]
        unit = "mcg" if name == "albuterol" else "units" if name.startswith("insulin") else "mg"
        meds.append(
            {"name": name, "dose": rng.choice(doses), "unit": unit, "frequency": rng.choice(freqs)}
        )
    allergies = [
        {"substance": a, "reaction": rng.choice(ALLERGENS[a])}
        for a in rng.sample(sorted(ALLERGENS), rng.choice((0, 1, 1, 2)))
    ]
    conditions = rng.sample(CONDITIONS, 4)
    labs = []
    for name in rng.sample(sorted(LABS), rng.randint(3, 5)):
        unit, low, high, dec = LABS[name]
        span = high - low
        value = round(rng.uniform(low - 0.3 * span, high + 0.5 * span), dec)
        value = max(value, 0.1)
        flag = "high" if value > high else "low" if value < low else "normal"
        labs.append({"name": name, "value": value, "unit": unit, "flag": flag})
    return {
        "meds": meds,
        "allergies": allergies,
        "conditions": conditions[:3],
        "ruled_out": conditions[3],
        "labs": labs,
        "bp": (rng.randint(105, 170), rng.randint(62, 100)),
        "hr": rng.randint(52, 110),
        "family": (rng.choice(RELATIVES), rng.choice(FAMILY_CONDITIONS)),
    }


# --------------------------------------------------------------------------- the four sources


def _concept(text: str, system: str, code: str) -> dict[str, Any]:
    return {"coding": [{"system": system, "code": code, "display": text}], "text": text}


def _status(system: str, code: str) -> dict[str, Any]:
    return {"coding": [{"system": system, "code": code}]}


def as_fhir(r: dict[str, Any], rng: random.Random) -> str:
    entries: list[dict[str, Any]] = [{"resourceType": "Patient", "id": "p1", "gender": "unknown"}]
    for a in r["allergies"]:
        entries.append(
            {
                "resourceType": "AllergyIntolerance",
                "id": f"a{len(entries)}",
                "clinicalStatus": _status(
                    "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical", "active"
                ),
                "verificationStatus": _status(
                    "http://terminology.hl7.org/CodeSystem/allergyintolerance-verification",
                    "confirmed",
                ),
                "type": "allergy",
                "code": _concept(a["substance"], SNOMED, str(rng.randint(10**6, 10**7))),
                "patient": {"reference": "Patient/p1"},
                "reaction": [
                    {
                        "manifestation": [
                            _concept(a["reaction"], SNOMED, str(rng.randint(10**6, 10**7)))
                        ]
                    }
                ],
            }
        )
    if not r["allergies"]:
        entries.append(
            {
                "resourceType": "AllergyIntolerance",
                "id": "nka",
                "clinicalStatus": _status(
                    "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical", "active"
                ),
                "code": _concept("No known allergy", SNOMED, "716186003"),
                "patient": {"reference": "Patient/p1"},
            }
        )
    for m in r["meds"]:
        entries.append(
            {
                "resourceType": "MedicationStatement",
                "id": f"m{len(entries)}",
                "status": "active",
                "medicationCodeableConcept": {
                    "coding": [
                        {
                            "system": RXNORM,
                            "code": str(rng.randint(10**4, 10**6)),
                            "display": m["name"],
                        }
                    ]
                },
                "subject": {"reference": "Patient/p1"},
                "dosage": [{"text": f"{_num(m['dose'])} {m['unit']} {m['frequency']}"}],
            }
        )
    for c in r["conditions"]:
        entries.append(
            {
                "resourceType": "Condition",
                "id": f"c{len(entries)}",
                "clinicalStatus": _status(CLINICAL, "active"),
                "verificationStatus": _status(VERIFICATION, "confirmed"),
                "code": _concept(c, SNOMED, str(rng.randint(10**6, 10**7))),
                "subject": {"reference": "Patient/p1"},
            }
        )
    entries.append(
        {
            "resourceType": "Condition",
            "id": "ruled-out",
            "verificationStatus": _status(VERIFICATION, "refuted"),
            "code": _concept(r["ruled_out"], SNOMED, str(rng.randint(10**6, 10**7))),
            "subject": {"reference": "Patient/p1"},
        }
    )
    for lab in r["labs"]:
        flag = {"high": ("H", "High"), "low": ("L", "Low"), "normal": ("N", "Normal")}[lab["flag"]]
        entries.append(
            {
                "resourceType": "Observation",
                "id": f"o{len(entries)}",
                "status": "final",
                "category": [
                    {
                        "coding": [
                            {
                                "system": "http://terminology.hl7.org/CodeSystem/observation-category",
                                "code": "laboratory",
                            }
                        ]
                    }
                ],
                "code": _concept(
                    lab["name"], LOINC, f"{rng.randint(1000, 99999)}-{rng.randint(0, 9)}"
                ),
                "subject": {"reference": "Patient/p1"},
                "valueQuantity": {
                    "value": lab["value"],
                    "unit": lab["unit"],
                    "system": "http://unitsofmeasure.org",
                },
                "interpretation": [
                    {
                        "coding": [
                            {
                                "system": "http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation",
                                "code": flag[0],
                                "display": flag[1],
                            }
                        ]
                    }
                ],
            }
        )
    entries.append(
        {
            "resourceType": "Observation",
            "id": "bp",
            "status": "final",
            "code": _concept("Blood pressure", LOINC, "85354-9"),
            "component": [
                {
                    "code": _concept("Systolic blood pressure", LOINC, "8480-6"),
                    "valueQuantity": {"value": r["bp"][0], "unit": "mmHg"},
                },
                {
                    "code": _concept("Diastolic blood pressure", LOINC, "8462-4"),
                    "valueQuantity": {"value": r["bp"][1], "unit": "mmHg"},
                },
            ],
        }
    )
    entries.append(
        {
            "resourceType": "Observation",
            "id": "hr",
            "status": "final",
            "code": _concept("Heart rate", LOINC, "8867-4"),
            "valueQuantity": {"value": r["hr"], "unit": "beats/minute"},
        }
    )
    who, what = r["family"]
    entries.append(
        {
            "resourceType": "FamilyMemberHistory",
            "id": "fh",
            "status": "completed",
            "patient": {"reference": "Patient/p1"},
            "relationship": {
                "coding": [
                    {
                        "system": "http://terminology.hl7.org/CodeSystem/v3-RoleCode",
                        "code": who[:3].upper(),
                        "display": who,
                    }
                ]
            },
            "condition": [{"code": _concept(what, SNOMED, str(rng.randint(10**6, 10**7)))}],
        }
    )
    bundle = {
        "resourceType": "Bundle",
        "type": "collection",
        "entry": [
            {"fullUrl": f"urn:uuid:{rng.getrandbits(64):016x}", "resource": e} for e in entries
        ],
    }
    return json.dumps(bundle, indent=1)


def as_json(r: dict[str, Any]) -> str:
    return json.dumps(
        {
            "medications": [
                {
                    "name": m["name"],
                    "dose": f"{_num(m['dose'])} {m['unit']}",
                    "frequency": m["frequency"],
                }
                for m in r["meds"]
            ],
            "allergies": [
                {"substance": a["substance"], "reaction": a["reaction"]} for a in r["allergies"]
            ]
            or "none known",
            "problems": r["conditions"],
            "ruled_out": [r["ruled_out"]],
            "labs": [
                {"test": x["name"], "value": x["value"], "unit": x["unit"], "flag": x["flag"]}
                for x in r["labs"]
            ],
            "vitals": {
                "blood_pressure": f"{r['bp'][0]}/{r['bp'][1]} mmHg",
                "heart_rate": f"{r['hr']} bpm",
            },
            "family_history": [{"relative": r["family"][0], "condition": r["family"][1]}],
        },
        indent=2,
    )


def as_tables(r: dict[str, Any]) -> list[str]:
    meds = ["| drug | dose | frequency |", "|---|---|---|"] + [
        f"| {m['name']} | {_num(m['dose'])} {m['unit']} | {m['frequency']} |" for m in r["meds"]
    ]
    labs = ["test\tvalue\tunit\tflag"] + [
        f"{x['name']}\t{_num(x['value'])}\t{x['unit']}\t{x['flag']}" for x in r["labs"]
    ]
    allergies = (
        ", ".join(f"{a['substance']} ({a['reaction']})" for a in r["allergies"]) or "none known"
    )
    rest = "\n".join(
        [
            f"Allergies: {allergies}",
            f"Problems: {', '.join(r['conditions'])}",
            f"Ruled out: {r['ruled_out']}",
            f"BP {r['bp'][0]}/{r['bp'][1]} mmHg, HR {r['hr']} bpm",
            f"Family history: {r['family'][0]} - {r['family'][1]}",
        ]
    )
    return ["\n".join(meds), "\n".join(labs), rest]


def as_note(r: dict[str, Any]) -> str:
    meds = "; ".join(
        f"{m['name']} {_num(m['dose'])} {m['unit']} {m['frequency']}" for m in r["meds"]
    )
    allergies = (
        "Allergies: "
        + ", ".join(f"{a['substance']}, which causes {a['reaction']}" for a in r["allergies"])
        + "."
        if r["allergies"]
        else "No known drug allergies."
    )
    labs = " ".join(
        f"{x['name'][:1].upper()}{x['name'][1:]} was {_num(x['value'])} {x['unit']}"
        + ("" if x["flag"] == "normal" else f", {x['flag']}")
        + "."
        for x in r["labs"]
    )
    return (
        f"Current medications: {meds}. {allergies} "
        f"Past medical history is significant for {', '.join(r['conditions'][:-1])} and "
        f"{r['conditions'][-1]}. Workup ruled out {r['ruled_out']}. Blood pressure today was "
        f"{r['bp'][0]}/{r['bp'][1]} and heart rate {r['hr']}. "
        f"{labs} Family history: her {r['family'][0]} had {r['family'][1]}."
    )


# --------------------------------------------------------------------------- statements


def statements(r: dict[str, Any], rng: random.Random) -> list[tuple[str, str | None]]:
    """(statement, kind of error or None for a true one) about the record."""
    out: list[tuple[str, str | None]] = []

    def med_text(name: str, dose: float, unit: str, freq: str) -> str:
        return rng.choice(
            (
                f"She takes {name} {_num(dose)} {unit} {freq}.",
                f"She is on {name} {_num(dose)} {unit} {freq}.",
                f"Her medications include {name} {_num(dose)} {unit}.",
            )
        )

    for m in r["meds"]:
        out.append((med_text(m["name"], m["dose"], m["unit"], m["frequency"]), None))
    m = rng.choice(r["meds"])
    doses = [d for d in (*DRUGS[m["name"]][0], m["dose"] * 2) if d != m["dose"]]
    out.append((med_text(m["name"], rng.choice(doses), m["unit"], m["frequency"]), "dose"))
    other = rng.choice(sorted(set(DRUGS) - {x["name"] for x in r["meds"]}))
    o_doses, o_freqs = DRUGS[other]
    out.append((med_text(other, rng.choice(o_doses), "mg", rng.choice(o_freqs)), "added drug"))
    named = {a["substance"] for a in r["allergies"]}
    for a in r["allergies"]:
        out.append(
            (
                rng.choice(
                    (
                        f"She is allergic to {a['substance']}.",
                        f"She has an allergy to {a['substance']}, which causes {a['reaction']}.",
                        f"{a['substance'].capitalize()} gives her {a['reaction']}.",
                    )
                ),
                None,
            )
        )
    if r["allergies"]:
        out.append(
            (
                rng.choice(("She has no known drug allergies.", "She denies any allergies.")),
                "allergy denied",
            )
        )
    else:
        out.append(
            (rng.choice(("She has no known drug allergies.", "She reports no allergies.")), None)
        )
    invented = rng.choice(sorted(set(ALLERGENS) - named))
    out.append((f"She is allergic to {invented}.", "allergy invented"))
    for c in r["conditions"]:
        out.append(
            (
                rng.choice(
                    (f"She has {c}.", f"Her history includes {c}.", f"She is known to have {c}.")
                ),
                None,
            )
        )
    out.append(
        (
            rng.choice((f"She has {r['ruled_out']}.", f"Her history includes {r['ruled_out']}.")),
            "ruled-out asserted",
        )
    )
    out.append((f"{r['ruled_out'][:1].upper()}{r['ruled_out'][1:]} was ruled out.", None))
    for lab in r["labs"]:
        unit, low, high, dec = LABS[lab["name"]]
        flag = "" if lab["flag"] == "normal" else f", which is {lab['flag']}"
        out.append((f"Her {lab['name']} is {_num(lab['value'])} {unit}{flag}.", None))
    lab = rng.choice(r["labs"])
    unit, low, high, dec = LABS[lab["name"]]
    shift = (high - low) * rng.choice((0.4, 0.6, -0.4)) or 1
    wrong = round(max(lab["value"] + shift, 0.1), dec)
    if wrong == lab["value"]:
        wrong = round(lab["value"] * 1.5 + 1, dec)
    out.append((f"Her {lab['name']} is {_num(wrong)} {unit}.", "lab value"))
    sys_, dia = r["bp"]
    out.append((f"Her blood pressure was {sys_}/{dia}.", None))
    out.append(
        (
            f"Her blood pressure was {sys_ + rng.choice((-25, -15, 15, 25))}/"
            f"{dia + rng.choice((-10, 10))}.",
            "vital sign",
        )
    )
    out.append((f"Her heart rate was {r['hr']}.", None))
    who, what = r["family"]
    out.append((f"Her {who} had {what}.", None))
    others = [x for x in RELATIVES if x != who]
    out.append((f"Her {rng.choice(others)} had {what}.", "family member"))
    return out


# --------------------------------------------------------------------------- run


def _auroc(labels: list[int], scores: list[float]) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(labels, scores)) if len(set(labels)) == 2 else float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=120)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--formats", default="fhir,json,table,note")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    from core.backends.embedder import get_embedder
    from core.grounding import GroundingVerifier
    from core.grounding.types import SourceChunk

    rng = random.Random(args.seed)
    cases = []
    for _ in range(args.records):
        r = make_record(rng)
        texts = {
            "fhir": [as_fhir(r, rng)],
            "json": [as_json(r)],
            "table": as_tables(r),
            "note": [as_note(r)],
        }
        cases.append((texts, statements(r, rng)))
    embedder, model = get_embedder(), support_model()
    verifiers = {
        read: GroundingVerifier(embedder=embedder, learned=model, structured=read)
        for read in (True, False)
    }
    rows, details = [], {}
    for fmt in args.formats.split(","):
        for label, read in (("learned, structured reading", True), ("learned, raw text", False)):
            if fmt == "note" and not read:
                continue
            verifier = verifiers[read]
            labels, flags, risk = [], [], []
            kinds: dict[str, list[tuple[int, int]]] = defaultdict(list)
            started = time.perf_counter()
            for texts, items in cases:
                sources = [SourceChunk(f"s{i}", t, "document") for i, t in enumerate(texts[fmt])]
                results = verifier.verify_statements([s for s, _ in items], sources)
                for (_, kind), res in zip(items, results, strict=True):
                    bad = int(kind is not None)
                    flag = int(not res.is_grounded)
                    labels.append(bad)
                    flags.append(flag)
                    risk.append(
                        1.0
                        - (
                            0.0
                            if res.status == "contradicted"
                            else res.support
                            if res.support is not None
                            else float(res.is_grounded)
                        )
                    )
                    kinds[kind or "true"].append((bad, flag))
            p, rc, f1 = prf(labels, flags)
            real = [f for lab, f in zip(labels, flags, strict=True) if lab == 0]
            row = {
                "format": fmt,
                "verifier": label,
                "statements": len(labels),
                "F1": round(f1, 3),
                "precision": round(p, 3),
                "recall": round(rc, 3),
                "false alarms": round(sum(real) / max(1, len(real)), 3),
                "AUROC": round(_auroc(labels, risk), 3),
                "s": round(time.perf_counter() - started, 1),
            }
            rows.append(row)
            details[f"{fmt} / {label}"] = {
                k: round(sum(f for _, f in v) / len(v), 3) for k, v in sorted(kinds.items())
            }
        n_bad = sum(1 for _, items in cases for _, kind in items if kind)
        n_all = sum(len(items) for _, items in cases)
        _, _, f_all = prf([1] * n_bad + [0] * (n_all - n_bad), [1] * n_all)
        rows.append(
            {
                "format": fmt,
                "verifier": "flag everything",
                "statements": n_all,
                "F1": round(f_all, 3),
                "precision": round(n_bad / n_all, 3),
                "recall": 1.0,
                "false alarms": 1.0,
                "AUROC": 0.5,
                "s": 0.0,
            }
        )
    if args.json:
        print_json({"rows": rows, "flagged_share_by_kind": details})
        return 0
    print_table(
        rows,
        [
            "format",
            "verifier",
            "statements",
            "F1",
            "precision",
            "recall",
            "false alarms",
            "AUROC",
            "s",
        ],
        title=f"Structured sources: {args.records} synthetic records, seed {args.seed}",
    )
    columns = sorted({k for share in details.values() for k in share})
    print()
    print_table(
        [{"format / verifier": name, **share} for name, share in details.items()],
        ["format / verifier", *columns],
        title="Share flagged by kind (true: false alarms)",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
