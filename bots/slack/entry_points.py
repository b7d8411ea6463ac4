"""The manifest lines of the ways into Threadline beyond mentions, DMs and commands: the
Workflow Builder step, the message shortcut, and the Home tab (``bots.slack.manifest`` adds
them).

- **Workflow step** (``functions``): "Ask Threadline" (``adapters.slack.workflow``). Slack
  lists an app's steps in Workflow Builder only when the app is org-ready, so the manifest
  sets ``settings.org_deploy_enabled``.
- **Message shortcut** (``shortcuts``): "Ask Threadline about this" on any message
  (``bots.slack.message_action``).
- **Home tab** (``features.app_home.home_tab_enabled``): the person's schedules,
  connections, approvals and usage (``bots.slack.home``).
- **Decisions typed** (``slash_commands``): ``/approve <id>`` and ``/deny <id>``, the
  Home's Approve and Deny typed in any chat (as in Teams' 1:1 chat, where a card's buttons
  are messages): Slack takes a message starting with ``/`` only as a registered command.

>>> sorted(workflow_functions())
['ask_threadline']
>>> message_shortcuts()[0]["type"]
'message'
>>> [c["command"] for c in decision_commands()]
['/approve', '/deny']
"""

from __future__ import annotations

from typing import Any

from adapters.slack.workflow import ASK_STEP

ASK_ABOUT_MESSAGE = "ask_about_message"
"""The message shortcut's ``callback_id``."""
DECISION_COMMANDS = ("/approve", "/deny")
"""The slash commands deciding an approval (``bots.home.Home.decide``)."""


def workflow_functions(name: str = "Threadline") -> dict[str, Any]:
    """The ``functions`` of the manifest: the step, its inputs and outputs."""
    return {
        ASK_STEP: {
            "title": f"Ask {name}",
            "description": f"Ask {name} a question about your data; use its answer in the "
            "next steps",
            "input_parameters": {
                "question": {
                    "type": "string",
                    "title": "Question",
                    "description": "What to ask, e.g. revenue yesterday by region",
                    "is_required": True,
                    "name": "question",
                },
                "run_as": {
                    "type": "slack#/types/user_context",
                    "title": "Run as",
                    "description": "Whose access to data applies: the person who used "
                    "this workflow",
                    "is_required": True,
                    "name": "run_as",
                },
                "channel": {
                    "type": "slack#/types/channel_id",
                    "title": "Answer as in channel",
                    "description": "Optional: the channel whose settings (profile) answer",
                    "is_required": False,
                    "name": "channel",
                },
                "post_in": {
                    "type": "slack#/types/channel_id",
                    "title": "Post the answer in",
                    "description": "Optional: a channel the answer is posted in as well",
                    "is_required": False,
                    "name": "post_in",
                },
            },
            "output_parameters": {
                "answer": {
                    "type": "string",
                    "title": "Answer",
                    "description": "The answer's text",
                    "is_required": True,
                    "name": "answer",
                },
                "table": {
                    "type": "string",
                    "title": "Table",
                    "description": "The answer's table as text (empty when it has none)",
                    "is_required": True,
                    "name": "table",
                },
            },
        }
    }


def message_shortcuts(name: str = "Threadline") -> list[dict[str, Any]]:
    """The ``features.shortcuts`` of the manifest."""
    return [
        {
            "name": f"Ask {name} about it"[:24],  # Slack: at most 24 characters
            "type": "message",
            "callback_id": ASK_ABOUT_MESSAGE,
            "description": f"Ask {name} about this message; it answers in the message's thread",
        }
    ]


def decision_commands(name: str = "Threadline") -> list[dict[str, Any]]:
    """The ``features.slash_commands`` that decide an approval (``/approve <id>``)."""
    return [
        {
            "command": command,
            "description": f"{command[1:].capitalize()} a request {name} is waiting on "
            "(the id is on the request and on your Home)",
            "usage_hint": "<id>",
            "should_escape": False,
        }
        for command in DECISION_COMMANDS
    ]
