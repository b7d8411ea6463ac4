"""The metadata every channel adapter puts in ``RequestContext.metadata``.

Adapters fill these keys from the signed payload only (never from message text), so the
agent, tools and hooks can rely on them whatever the channel::

    platform      "slack" | "teams" | "console"
    workspace_id  Slack team / enterprise id, Teams tenant id
    user_id       the platform's own user id (Slack U..., Teams AAD object id)
    user_name     display name when the payload carries one
    channel_id    Slack channel / Teams conversation id
    thread_id     Slack thread_ts / Teams conversation id (+ reply chain)
    is_dm         True in a 1:1 conversation with the bot
    is_private    True when only the asker sees the answer (Slack ``/ask private``, an
                  ephemeral message): memories made there stay the asker's
    command       the slash command when the message came from one
    turn_id       the channel's id for this turn; the agent uses it as its request id, so
                  feedback on the answer can name the turn

Each channel's ``context`` module builds the conversation id the agent stores history
under (``adapters.slack.context.thread_key``, ``adapters.teams.context.thread_key``).
"""

from __future__ import annotations

from typing import Any, Literal

from typing_extensions import TypedDict  # pydantic reads it on Python 3.11 too

Platform = Literal["slack", "teams", "console"]


class ChannelMetadata(TypedDict, total=False):
    platform: Platform
    workspace_id: str
    user_id: str
    user_name: str
    channel_id: str
    thread_id: str
    is_dm: bool
    is_private: bool
    command: str
    turn_id: str


def is_direct_message(metadata: dict[str, Any]) -> bool:
    """Whether admin-only detail may render inline (only the asker can see the conversation)."""
    return bool(metadata.get("is_dm"))
