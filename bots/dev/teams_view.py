"""The Teams side of the console: the shipped fake Bot Connector, and what the page shows.

The fake (``adapters.teams.testing``, the one the tests use) is mounted at ``/teams/`` of the
console, which is the ``serviceUrl`` of every console conversation. Each turn's real
``TeamsReplyStream`` sends through the outbound client the Teams bot uses
(``bots.teams.connector.BotConnectorClient`` behind ``RetryingConnector``), with a bearer
token of its own. ``TeamsView`` observes every call the fake accepts (typing, streaming
informative updates and chunks, the final message with its Adaptive Cards, targeted
messages, a 1:1 chat for admin-only detail) and reports it to the turn's feed as a ``teams``
event, so the page shows exactly what Teams would receive. ``conversation_ref`` builds the
reference a real inbound activity would give, for a personal chat or a channel.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Literal

import aiohttp
from aiohttp import web

from adapters.teams.activities import ConversationRef
from adapters.teams.connector import RetryingConnector, TeamsConnector
from adapters.teams.testing import ConnectorCall, FakeBotConnector
from bots.dev.events import TurnFeed
from bots.dev.identity import Persona
from bots.teams.connector import BotConnectorClient

BOT_ACCOUNT = {"id": "28:threadline-console", "name": "Threadline"}
TENANT_ID = "console-tenant"
KEEP = 500
"""Calls the fake remembers (a long console session stays small)."""

Route = Literal["conversation", "targeted", "personal"]
ACTIVITY_OPS = {
    "send_to_conversation": "send",
    "reply_to_activity": "send",
    "update_activity": "update",
    "delete_activity": "delete",
}


def teams_conversation_id(persona: Persona, thread_id: str) -> str:
    if persona.is_dm:
        return f"a:console-personal-{persona.user_id}"
    return f"19:console-channel@thread.tacv2;messageid={thread_id}"


def conversation_ref(
    persona: Persona, thread_id: str, activity_id: str, service_url: str
) -> ConversationRef:
    """The reference the inbound message of this turn would carry in Teams."""
    return ConversationRef(
        service_url=service_url,
        conversation_id=teams_conversation_id(persona, thread_id),
        activity_id=activity_id,
        bot=dict(BOT_ACCOUNT),
        user={
            "id": f"29:{persona.user_id}",
            "name": persona.name,
            "aadObjectId": f"aad-{persona.user_id}",
        },
        tenant_id=TENANT_ID,
        conversation_type="personal" if persona.is_dm else "channel",
    )


@dataclass(frozen=True)
class TurnToken:
    """The bearer token a turn's connector sends, so its calls are reported to its feed."""

    value: str

    async def token(self) -> str | None:
        return self.value


@dataclass(frozen=True)
class TeamsSession:
    """One turn's view of the connector: its feed, and who its private messages are for."""

    feed: TurnFeed
    private_to: str


class TeamsView:
    """The console's fake Bot Connector; ``open(feed, private_to=...)`` returns a token,
    ``connector(...)`` the outbound client that sends with it.

    >>> view = TeamsView()
    >>> view.open(TurnFeed(), private_to="U0ANA").startswith("console-")
    True
    """

    def __init__(self) -> None:
        self.fake = FakeBotConnector(on_call=self._report, keep=KEEP)
        self._sessions: dict[str, TeamsSession] = {}

    def mount(self, app: web.Application) -> None:
        app.add_subapp("/teams", self.fake.web_app())

    def open(self, feed: TurnFeed, *, private_to: str) -> str:
        token = f"console-{os.urandom(8).hex()}"
        self._sessions[token] = TeamsSession(feed, private_to)
        return token

    def close(self, token: str) -> None:
        self._sessions.pop(token, None)

    @staticmethod
    def connector(http: aiohttp.ClientSession, service_url: str, token: str) -> TeamsConnector:
        """The Teams bot's own outbound path, to the fake at ``service_url``."""
        return RetryingConnector(BotConnectorClient(http, service_url, TurnToken(token)))

    def _route(self, call: ConnectorCall) -> Route:
        if call.query.get("isTargetedActivity") == "true":
            return "targeted"
        return "personal" if call.conversation_id in self.fake.conversations else "conversation"

    def _report(self, call: ConnectorCall) -> None:
        token = call.headers.get("Authorization", "").removeprefix("Bearer ")
        session = self._sessions.get(token)
        op = ACTIVITY_OPS.get(call.operation)
        if session is None or op is None or call.status >= 400:
            return
        route = self._route(call)
        activity: dict[str, Any] = call.body if isinstance(call.body, dict) else {}
        if op == "send":
            activity_id = str((call.response or {}).get("id") or "")
        else:  # the client repeats the id in an update's body: the event carries it already
            activity_id = call.activity_id or ""
            activity = {k: v for k, v in activity.items() if k != "id"}
        session.feed.emit(
            "teams",
            {
                "op": op,
                "id": activity_id,
                "conversation_id": call.conversation_id,
                "route": route,
                "private_to": session.private_to if route != "conversation" else None,
                "activity": activity,
            },
        )
