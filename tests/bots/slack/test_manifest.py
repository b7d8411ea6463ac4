"""``threadline slack-manifest`` prints a valid Slack app manifest (Socket Mode or HTTP mode)
that matches what the bot really does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator
from referencing import Registry, Resource

from bots.cli import main
from bots.slack.manifest import manifest as build_manifest
from bots.slack.settings import BOT_SCOPES
from tests.support.schemas import schemas_dir

SCHEMAS = schemas_dir()
ROOT = Path(__file__).resolve().parents[3]
VERSIONED = "https://raw.githubusercontent.com/slackapi/manifest-schema/v0.5.0/schemas/"


def manifest(*args: str) -> dict[str, Any]:
    """What ``threadline slack-manifest ARGS`` prints."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["slack-manifest", *args]) == 0
    printed: dict[str, Any] = json.loads(out.getvalue())
    return printed


@pytest.fixture(scope="module")
def validator() -> Draft7Validator:
    root = json.loads((SCHEMAS / "slack-app-manifest.schema.json").read_text())
    registry: Registry = Registry()
    for version in ("1.0.0", "2.0.0"):
        schema = json.loads((SCHEMAS / f"slack-app-manifest-{version}.schema.json").read_text())
        uri = f"{VERSIONED}manifest.schema.{version}.json"
        registry = registry.with_resource(uri, Resource.from_contents(schema))
    return Draft7Validator(root, registry=registry)


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("--http", "https://bot.example.com"),
        ("--token-rotation", "--http", "https://bot.example.com"),
    ],
)
def test_manifest_validates_against_the_official_schema(
    validator: Draft7Validator, args: tuple[str, ...]
) -> None:
    errors = [e.message for e in validator.iter_errors(manifest(*args))]
    assert errors == []


def test_http_mode_points_every_url_at_the_bot() -> None:
    """HTTP mode once needed three URLs edited by hand in manifest.yml."""
    data = manifest("--http", "https://bot.example.com/", "--command", "/data")
    events = "https://bot.example.com/slack/events"
    assert data["settings"]["socket_mode_enabled"] is False
    assert data["settings"]["event_subscriptions"]["request_url"] == events
    assert data["settings"]["interactivity"]["request_url"] == events
    ask, schedule, approve, deny = data["features"]["slash_commands"]
    assert ask == {**ask, "command": "/data", "url": events}
    assert schedule == {**schedule, "command": "/schedule", "url": events}
    assert "run <id>" in schedule["usage_hint"]
    assert approve == {**approve, "command": "/approve", "url": events}
    assert deny == {**deny, "command": "/deny", "url": events}
    assert data["oauth_config"]["redirect_urls"] == ["https://bot.example.com/slack/oauth_redirect"]


@pytest.mark.parametrize(
    "args", [("--http", "http://bot.example.com"), ("--http", "bot"), ("--command", "ask")]
)
def test_bad_manifest_options_are_refused(
    args: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["slack-manifest", *args]) == 2
    assert "threadline slack-manifest:" in capsys.readouterr().err


def test_group_dms_are_covered() -> None:
    """Group DMs were not: no mpim:history scope, no message.mpim event."""
    data = build_manifest()
    assert "mpim:history" in data["oauth_config"]["scopes"]["bot"]
    assert "message.mpim" in data["settings"]["event_subscriptions"]["bot_events"]


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


def test_manifest_defaults_to_socket_mode_with_interactivity_and_the_commands() -> None:
    data = manifest()
    assert data["settings"]["socket_mode_enabled"] is True
    assert data["settings"]["interactivity"]["is_enabled"] is True
    commands = [c["command"] for c in data["features"]["slash_commands"]]
    assert commands == ["/ask", "/schedule", "/approve", "/deny"]
    assert data["features"]["agent_view"]["suggested_prompts"]


def test_the_manifest_file_is_what_the_command_prints(validator: Draft7Validator) -> None:
    """``manifest.yml`` at the top of the repository (the layout our users follow) is
    exactly ``threadline slack-manifest`` (regenerate it with
    ``threadline slack-manifest > manifest.yml``), and valid as Slack reads it: YAML."""
    import yaml

    text = (ROOT / "manifest.yml").read_text(encoding="utf-8")
    assert text == json.dumps(manifest(), indent=2) + "\n"
    assert [e.message for e in validator.iter_errors(yaml.safe_load(text))] == []


def test_the_app_is_org_ready_and_token_rotation_is_asked_for() -> None:
    """Issue 38: org-ready always (an org-wide Enterprise Grid install; Workflow Builder's
    steps need it too) and rotating tokens on a flag; the checked-in manifest.yml (a
    single-token app) keeps rotation off. The revocation events the bot handles stay
    subscribed either way."""
    default, enterprise = manifest(), manifest("--token-rotation")
    assert default["settings"]["org_deploy_enabled"] is True
    assert default["settings"]["token_rotation_enabled"] is False
    assert enterprise["settings"]["token_rotation_enabled"] is True
    for data in (default, enterprise):
        events = data["settings"]["event_subscriptions"]["bot_events"]
        assert {"tokens_revoked", "app_uninstalled"} <= set(events)


def test_the_workflow_step_and_the_message_shortcut_are_declared(
    validator: Draft7Validator,
) -> None:
    """Issue 40: the step runs as Slack's user context (never a user id a workflow's author
    types in), and Workflow Builder lists it only for an org-ready app."""
    data = manifest("--http", "https://bot.example.com")
    step = data["functions"]["ask_threadline"]
    assert step["input_parameters"]["run_as"]["type"] == "slack#/types/user_context"
    assert sorted(step["output_parameters"]) == ["answer", "table"]
    assert data["settings"]["org_deploy_enabled"] is True
    [shortcut] = data["features"]["shortcuts"]
    assert (shortcut["type"], shortcut["callback_id"]) == ("message", "ask_about_message")
    assert data["features"]["app_home"]["home_tab_enabled"] is True
    assert [e.message for e in validator.iter_errors(data)] == []
