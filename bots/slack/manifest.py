"""``threadline slack-manifest``: the Slack app manifest, for Socket Mode or HTTP mode.

Paste what it prints in api.slack.com/apps -> Create New App -> From a manifest (Slack takes
JSON as well as YAML), install the app, then run ``threadline slack``:

- Socket Mode (the default; no public URL): create an app-level token with
  ``connections:write`` (Basic Information -> App-Level Tokens) for ``SLACK_APP_TOKEN``, and
  take ``SLACK_BOT_TOKEN`` (xoxb-) from Install App.
- HTTP mode: ``threadline slack-manifest --http https://HOST`` points events, interactivity,
  the slash command and the OAuth redirect (many workspaces) at ``https://HOST/slack/...``;
  run with ``SLACK_SIGNING_SECRET`` and ``SLACK_BOT_TOKEN``.
- Always org-ready (``org_deploy_enabled``): Workflow Builder lists the steps of org-ready
  apps only, and it changes nothing for a workspace outside Enterprise Grid; in a Grid
  organisation an org admin installs it once and adds it to workspaces (README "Enterprise
  Grid").
- ``--token-rotation``: expiring bot tokens (``token_rotation_enabled``; Slack does not let
  an app turn it off again). Needs the OAuth install (``SLACK_CLIENT_ID`` /
  ``SLACK_CLIENT_SECRET``): the bot renews each installation's token (README "Token rotation").

The scopes are exactly what the bot uses (``bots.slack.settings.BOT_SCOPES``) and the events
exactly what it listens to, group DMs included.

>>> manifest()["settings"]["socket_mode_enabled"]
True
>>> manifest(http="https://bot.example.com")["settings"]["event_subscriptions"]["request_url"]
'https://bot.example.com/slack/events'
>>> settings = manifest(token_rotation=True)["settings"]
>>> settings["org_deploy_enabled"], settings["token_rotation_enabled"]
(True, True)
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any
from urllib.parse import urlsplit

from bots.slack.entry_points import decision_commands, message_shortcuts, workflow_functions
from bots.slack.settings import BOT_SCOPES

BOT_EVENTS = [
    "app_home_opened",
    "app_mention",
    "app_uninstalled",
    "assistant_thread_context_changed",
    "assistant_thread_started",
    "channel_shared",
    "channel_unshared",
    "message.channels",
    "message.groups",
    "message.im",
    "message.mpim",
    "subteam_members_changed",
    "subteam_updated",
    "tokens_revoked",
    "user_change",
]
"""The events the bot handles (``bots.slack.bot``)."""

AGENT_DESCRIPTION = (
    "Threadline answers questions about your data: it writes and runs the SQL, shows the "
    "result as a table or chart, and explains it. Mention it in a thread, DM it, or use /ask."
)


SCHEDULE_COMMAND = "/schedule"
"""Schedules and alerts (``/schedule list``, ``/schedule pause <id>``...: one command)."""


def _base_url(http: str) -> str:
    parts = urlsplit(http)
    if parts.scheme != "https" or not parts.netloc or parts.query or parts.fragment:
        raise ValueError(f"--http takes the bot's public https:// address, got {http!r}")
    return f"https://{parts.netloc}{parts.path.rstrip('/')}"


def manifest(
    *,
    http: str | None = None,
    name: str = "Threadline",
    command: str = "/ask",
    token_rotation: bool = False,
) -> dict[str, Any]:
    """The app manifest; ``http`` (``https://HOST``) switches it from Socket Mode to HTTP;
    ``token_rotation``: expiring bot tokens."""
    base = _base_url(http) if http else None
    slash: dict[str, Any] = {
        "command": command,
        "description": f'Ask {name} a question (add "private" to get the answer only yourself)',
        "usage_hint": "[private] how many orders did we ship last month?",
        "should_escape": False,
    }
    schedule: dict[str, Any] = {
        "command": SCHEDULE_COMMAND,
        "description": f"Ask {name} a question on a schedule, or set an alert",
        "usage_hint": "every weekday 9:00 revenue yesterday | list | pause <id> | run <id>",
        "should_escape": False,
    }
    decisions = decision_commands(name)
    events: dict[str, Any] = {"bot_events": BOT_EVENTS}
    interactivity: dict[str, Any] = {"is_enabled": True}
    oauth: dict[str, Any] = {"scopes": {"bot": sorted(BOT_SCOPES)}}
    if base:
        slash["url"] = events["request_url"] = interactivity["request_url"] = f"{base}/slack/events"
        for other in (schedule, *decisions):
            other["url"] = slash["url"]
        oauth["redirect_urls"] = [f"{base}/slack/oauth_redirect"]
    return {
        "_metadata": {"major_version": 1, "minor_version": 1},
        "display_information": {
            "name": name[:35],
            "description": "Ask your data questions in Slack threads; answers with SQL, "
            "tables and charts.",
            "background_color": "#1d3557",
        },
        "features": {
            "app_home": {
                "home_tab_enabled": True,
                "messages_tab_enabled": True,
                "messages_tab_read_only_enabled": False,
            },
            "bot_user": {"display_name": name[:80], "always_online": True},
            "agent_view": {
                "agent_description": AGENT_DESCRIPTION,
                "suggested_prompts": [
                    {"title": "What can you do?", "message": "What can you do?"},
                    {"title": "Commands", "message": "/help"},
                ],
            },
            "slash_commands": [slash, schedule, *decisions],
            "shortcuts": message_shortcuts(name),
        },
        "oauth_config": oauth,
        "settings": {
            "event_subscriptions": events,
            "interactivity": interactivity,
            "org_deploy_enabled": True,  # Workflow Builder lists steps of org-ready apps only
            "socket_mode_enabled": base is None,
            "token_rotation_enabled": token_rotation,
        },
        "functions": workflow_functions(name),
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--http",
        metavar="https://HOST",
        help="HTTP mode: the bot's public address; events, interactivity, the slash command "
        "and the OAuth redirect go to https://HOST/slack/... (default: Socket Mode)",
    )
    parser.add_argument("--name", default="Threadline", help="the app's name (default Threadline)")
    parser.add_argument(
        "--command",
        dest="slash_command",
        default="/ask",
        help="the slash command, as SLACK_COMMAND sets it for the bot (default /ask)",
    )
    parser.add_argument(
        "--token-rotation",
        action="store_true",
        help="expiring bot tokens the bot renews (token_rotation_enabled; needs the OAuth "
        "install: SLACK_CLIENT_ID + SLACK_CLIENT_SECRET; Slack cannot turn it off again)",
    )


def run(args: argparse.Namespace) -> int:
    command = args.slash_command
    if not command.startswith("/") or " " in command:
        print(
            f"threadline slack-manifest: --command must look like /ask, got {command!r}",
            file=sys.stderr,
        )
        return 2
    try:
        data = manifest(
            http=args.http,
            name=args.name,
            command=command,
            token_rotation=args.token_rotation,
        )
    except ValueError as error:
        print(f"threadline slack-manifest: {error}", file=sys.stderr)
        return 2
    print(json.dumps(data, indent=2))
    return 0
