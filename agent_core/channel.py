"""The metadata every channel adapter puts in ``RequestContext.metadata``.

Adapters fill these keys from the signed payload only (never from message text), so the
agent, tools and hooks can rely on them whatever the channel::

    platform      "slack" | "teams" | "console" ("eval": ``bots.eval``'s questions)
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

Each channel adds its own keys, prefixed with its name (``slack_``, ``teams_``, ``console_``),
and the bots mark what they decided (``scheduled_by``, ``profile``). Every key set anywhere is
declared below: mypy checks each read and each write into a ``ChannelMetadata``, and pydantic
checks the declared keys a ``RequestContext`` is built with. A key no one declared (a context
a previous version queued, an extension's own) is kept as it came, never dropped.

Each channel's ``context`` module builds the conversation id the agent stores history
under (``adapters.slack.context.thread_key``, ``adapters.teams.context.thread_key``).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Literal

from pydantic import ConfigDict, TypeAdapter, with_config
from typing_extensions import TypedDict  # pydantic reads it on Python 3.11 too

Platform = Literal["slack", "teams", "console", "eval"]


@with_config(ConfigDict(extra="allow"))
class ChannelMetadata(TypedDict, total=False):
    """``RequestContext.metadata``: the keys above, each channel's own, and the bots'.

    >>> from agent_core.users import RequestContext
    >>> RequestContext(metadata={"platform": "console", "console_email": None,
    ...                          "kept": 1}).metadata
    {'platform': 'console', 'console_email': None, 'kept': 1}
    """

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

    slack_enterprise_id: str
    """The Enterprise Grid org of the installation."""
    slack_event_type: str
    """The event or payload the turn came from (``app_mention``, ``message_action``...)."""
    slack_enterprise_install: bool
    """Set by a turn of an org-wide installation (a turn resumed later finds its token)."""
    slack_user_team: str
    """The asker's own workspace as the event says (``user_team``); the identity resolver
    checks it against the installing workspace (``adapters.slack.identity``)."""
    slack_ext_shared: bool
    """The event's envelope said the channel is shared with another organisation
    (``is_ext_shared_channel``; ``adapters.slack.places`` decides, this is one signal)."""

    teams_conversation_type: str
    """``personal``, ``groupChat`` or ``channel``."""
    teams_user_id: str
    """The sender's Bot Framework id (``29:...``, needed to message them 1:1)."""
    teams_aad_object_id: str
    teams_service_url: str
    """Where the conversation's replies go."""
    teams_from_tenant: str
    """The sender's own tenant (checked by the identity resolver)."""
    teams_team_id: str
    teams_channel_id: str

    console_groups: list[str]
    """The groups the console's persona switcher chose."""
    console_email: str | None
    """The persona's email, when it has one."""

    scheduled_by: str
    """The schedule a scheduled run asks for (its id)."""
    profile: str
    """The profile whose place the request was asked in (``bots.profiles``)."""


def read_metadata(values: Mapping[str, object]) -> ChannelMetadata:
    """``values`` (metadata kept as a plain dict: an approval's request, a schedule's place)
    checked as ``ChannelMetadata``; undeclared keys are kept.

    >>> read_metadata({"platform": "slack", "is_dm": True, "kept": 1})
    {'platform': 'slack', 'is_dm': True, 'kept': 1}
    """
    return _adapter().validate_python(values)


@cache
def _adapter() -> TypeAdapter[ChannelMetadata]:
    return TypeAdapter(ChannelMetadata)


def is_direct_message(metadata: ChannelMetadata) -> bool:
    """Whether admin-only detail may render inline (only the asker can see the conversation)."""
    return bool(metadata.get("is_dm"))
