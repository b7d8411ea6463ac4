"""Validation against the official schemas in shared/schemas (no network)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import jsonschema

from tests.support.schemas import schemas_dir

SCHEMAS = schemas_dir()


@cache
def _validator(name: str) -> jsonschema.protocols.Validator:
    schema = json.loads((SCHEMAS / name).read_text())
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)  # type: ignore[no-any-return]


_POINT = {
    "type": "object",
    "required": ["x", "y"],
    "additionalProperties": False,
    "properties": {
        "x": {"type": ["string", "number"]},
        "y": {"type": "number"},
        "color": {"type": "string"},
    },
}
_SERIES = {
    "type": "object",
    "required": ["legend", "values"],
    "additionalProperties": False,
    "properties": {
        "legend": {"type": "string"},
        "color": {"type": "string"},
        "values": {"type": "array", "items": _POINT, "minItems": 1},
    },
}
_SLICE = {
    "type": "object",
    "required": ["legend", "value"],
    "additionalProperties": False,
    "properties": {
        "legend": {"type": "string"},
        "value": {"type": "number"},
        "color": {"type": "string"},
    },
}
TEAMS_CHARTS: dict[str, dict[str, Any]] = {
    "Chart.VerticalBar": _POINT,
    "Chart.HorizontalBar": _POINT,
    "Chart.VerticalBar.Grouped": _SERIES,
    "Chart.Line": _SERIES,
    "Chart.Pie": _SLICE,
    "Chart.Donut": _SLICE,
}
"""Teams' chart elements (learn.microsoft.com: "Charts in Adaptive Cards"): each one's data."""


def _chart_schema(kind: str) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["type", "data"],
        "additionalProperties": False,
        "properties": {
            "type": {"const": kind},
            "data": {"type": "array", "items": TEAMS_CHARTS[kind], "minItems": 1},
            "title": {"type": "string"},
            "xAxisTitle": {"type": "string"},
            "yAxisTitle": {"type": "string"},
            "colorSet": {"type": "string"},
            "fallback": {"type": ["object", "string"]},
            "id": {"type": "string"},
        },
    }


def _as_any_host_sees_it(value: Any) -> Any:
    """Teams' chart elements checked against their schema, then replaced by their fallback:
    what a host without Teams' charts shows, which must be valid Adaptive Card 1.5."""
    if isinstance(value, list):
        return [v for v in (_as_any_host_sees_it(v) for v in value) if v is not None]
    if not isinstance(value, dict):
        return value
    kind = value.get("type")
    if isinstance(kind, str) and kind.startswith("Chart."):
        assert kind in TEAMS_CHARTS, f"not one of Teams' charts: {kind}"
        errors = list(jsonschema.Draft7Validator(_chart_schema(kind)).iter_errors(value))
        assert not errors, "\n".join(f"{list(e.path)}: {e.message[:300]}" for e in errors[:5])
        fallback = value.get("fallback")
        return _as_any_host_sees_it(fallback) if isinstance(fallback, dict) else None
    return {k: _as_any_host_sees_it(v) for k, v in value.items() if k != "msteams"}


def assert_valid_card(card: dict[str, Any]) -> None:
    """Raise unless ``card`` is a valid Adaptive Card 1.5 (Teams' ``msteams`` keys removed),
    its Teams charts valid and each with a valid fallback."""
    assert card["type"] == "AdaptiveCard" and card["version"] == "1.5"
    errors = sorted(
        _validator("adaptive-card-1.5.schema.json").iter_errors(_as_any_host_sees_it(card)),
        key=lambda e: list(e.path),
    )
    assert not errors, "\n".join(f"{list(e.path)}: {e.message[:300]}" for e in errors[:5])


def assert_valid_manifest(manifest: dict[str, Any]) -> None:
    errors = list(_validator("teams-app-manifest-1.29.schema.json").iter_errors(manifest))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message[:300]}" for e in errors[:5])


def cards_in(activity: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        a["content"]
        for a in activity.get("attachments") or []
        if a.get("contentType") == "application/vnd.microsoft.card.adaptive"
    ]
