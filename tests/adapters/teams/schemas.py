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


def _strip_msteams(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_msteams(v) for k, v in value.items() if k != "msteams"}
    if isinstance(value, list):
        return [_strip_msteams(v) for v in value]
    return value


def assert_valid_card(card: dict[str, Any]) -> None:
    """Raise unless ``card`` is a valid Adaptive Card 1.5 (Teams' ``msteams`` keys removed)."""
    assert card["type"] == "AdaptiveCard" and card["version"] == "1.5"
    errors = sorted(
        _validator("adaptive-card-1.5.schema.json").iter_errors(_strip_msteams(card)),
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
