"""manifest.yml is a valid Slack app manifest and matches what the bot really does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft7Validator
from referencing import Registry, Resource

from bots.slack.settings import BOT_SCOPES
from tests.support.schemas import schemas_dir

ROOT = Path(__file__).resolve().parents[3]
SCHEMAS = schemas_dir()
VERSIONED = "https://raw.githubusercontent.com/slackapi/manifest-schema/v0.5.0/schemas/"


def manifest() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "manifest.yml").read_text())
    return loaded


@pytest.fixture(scope="module")
def validator() -> Draft7Validator:
    root = json.loads((SCHEMAS / "slack-app-manifest.schema.json").read_text())
    registry: Registry = Registry()
    for version in ("1.0.0", "2.0.0"):
        schema = json.loads((SCHEMAS / f"slack-app-manifest-{version}.schema.json").read_text())
        uri = f"{VERSIONED}manifest.schema.{version}.json"
        registry = registry.with_resource(uri, Resource.from_contents(schema))
    return Draft7Validator(root, registry=registry)


def test_manifest_validates_against_the_official_schema(validator: Draft7Validator) -> None:
    errors = [e.message for e in validator.iter_errors(manifest())]
    assert errors == []


def test_a_broken_manifest_is_rejected(validator: Draft7Validator) -> None:
    broken = manifest()
    broken["features"]["slash_commands"][0]["command"] = "ask"  # must start with "/"
    broken["display_information"]["name"] = "x" * 40
    assert len(list(validator.iter_errors(broken))) >= 1


def test_manifest_scopes_are_exactly_the_ones_the_bot_uses() -> None:
    assert sorted(manifest()["oauth_config"]["scopes"]["bot"]) == sorted(BOT_SCOPES)


def test_manifest_subscribes_to_every_event_the_bot_handles() -> None:
    events = set(manifest()["settings"]["event_subscriptions"]["bot_events"])
    assert {
        "app_mention",
        "message.im",
        "message.channels",
        "message.groups",
        "app_home_opened",
        "assistant_thread_started",
        "user_change",
        "subteam_members_changed",
        "subteam_updated",
        "tokens_revoked",
        "app_uninstalled",
    } <= events


def test_manifest_defaults_to_socket_mode_with_interactivity_and_the_ask_command() -> None:
    data = manifest()
    assert data["settings"]["socket_mode_enabled"] is True
    assert data["settings"]["interactivity"]["is_enabled"] is True
    assert [c["command"] for c in data["features"]["slash_commands"]] == ["/ask"]
    assert data["features"]["agent_view"]["suggested_prompts"]
