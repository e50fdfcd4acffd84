"""Reading the Vega-Lite charts of dashboard.figures in tests: the spec a builder writes (checked
against the Vega-Lite schema) or the one Streamlit sends (with its datasets as Arrow), its
single views and the rows each one draws."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import pyarrow as pa
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema import SCHEMA_URL, load_schema

Spec = dict[str, Any]


def spec_of(chart: Spec) -> Spec:
    """A builder's Vega-Lite spec, once it is proved valid against the Vega-Lite schema of
    the version it names (raises ``jsonschema.ValidationError`` otherwise)."""
    assert chart["$schema"] == SCHEMA_URL, "the specs name the Vega-Lite version Altair ships"
    validate_jsonschema(json.loads(json.dumps(chart)), _schema())
    return chart


@lru_cache(maxsize=1)
def _schema() -> Spec:
    return load_schema()


def streamlit_spec(proto: Any) -> Spec:
    """The spec of a Vega-Lite element Streamlit sent (an AppTest element's ``proto``), with
    the datasets it moved out of the spec (Arrow) put back as rows."""
    spec: Spec = json.loads(proto.spec)
    datasets = dict(spec.get("datasets") or {})
    for d in proto.datasets:
        datasets[d.name] = _arrow_rows(d.data.data)
    if proto.data.data:
        spec["data"] = {"values": _arrow_rows(proto.data.data)}
    spec["datasets"] = datasets
    return spec


def _arrow_rows(data: bytes) -> list[dict[str, Any]]:
    table = pa.ipc.open_stream(data).read_all()
    return [{k: v for k, v in r.items() if not k.startswith("__index")} for r in table.to_pylist()]


def _rows(spec: Spec, data: Any) -> list[dict[str, Any]]:
    if not isinstance(data, dict):
        return []
    if "values" in data:
        return list(data["values"])
    return list((spec.get("datasets") or {}).get(data.get("name"), []))


def units(spec: Spec) -> Iterator[tuple[Spec, list[dict[str, Any]]]]:
    """Every single view of ``spec`` (through layers and stacks) with the rows it draws (its
    own data or the data it inherits)."""

    def walk(node: Spec, inherited: list[dict[str, Any]]) -> Iterator[tuple[Spec, list[Any]]]:
        rows = _rows(spec, node["data"]) if "data" in node else inherited
        children = [
            c for key in ("layer", "vconcat", "hconcat", "concat") for c in node.get(key, [])
        ]
        if not children:
            yield node, rows
        for child in children:
            yield from walk(child, rows)

    yield from walk(spec, [])


def mark(unit: Spec) -> str:
    m = unit.get("mark")
    return str(m.get("type") if isinstance(m, dict) else m)


def panels(spec: Spec) -> list[Spec]:
    """The stacked charts of a vconcat (the chart itself otherwise)."""
    return list(spec.get("vconcat") or [spec])


def title_text(node: Spec) -> str:
    title = node.get("title")
    text = title.get("text") if isinstance(title, dict) else title
    return " ".join(text) if isinstance(text, list) else str(text or "")


def selections(spec: Spec) -> dict[str, Spec]:
    """The point selections of the chart by name (Altair lifts them to the top)."""
    out: dict[str, Spec] = {}
    for p in spec.get("params") or []:
        if isinstance(p.get("select"), dict):
            out[p["name"]] = p
    for unit, _ in units(spec):
        for p in unit.get("params") or []:
            if isinstance(p.get("select"), dict):
                out[p["name"]] = p
    return out


def rules(spec: Spec) -> list[tuple[Spec, float]]:
    """Every horizontal rule (a threshold) with its y value."""
    out = []
    for unit, _ in units(spec):
        y = (unit.get("encoding") or {}).get("y") or {}
        if mark(unit) == "rule" and "datum" in y:
            out.append((unit, float(y["datum"])))
    return out


def texts(spec: Spec) -> list[str]:
    """The texts of the chart's text marks (labels and notes)."""
    out = []
    for unit, rows in units(spec):
        field = ((unit.get("encoding") or {}).get("text") or {}).get("field")
        if mark(unit) == "text" and field:
            out += [str(r[field]) for r in rows if r.get(field) is not None]
    return out
