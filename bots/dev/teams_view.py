"""The Teams side of the console: an in-process Bot Connector for the real Teams reply.

``ConsoleConnector`` implements the adapter's ``TeamsConnector`` protocol: every activity the
real ``TeamsReplyStream`` sends (typing, streaming informative updates and chunks, the final
message with its Adaptive Cards, targeted messages, a 1:1 chat for admin-only detail) is
recorded and reported to the turn's feed as a ``teams`` event, so the page shows exactly what
Teams would receive. ``conversation_ref`` builds the reference a real inbound activity would
give, for a personal chat or a channel.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping
from typing import Any, Literal

from adapters.teams.activities import ConversationRef
from bots.dev.events import TurnFeed
from bots.dev.identity import Persona

BOT_ACCOUNT = {"id": "28:threadline-console", "name": "Threadline"}
TENANT_ID = "console-tenant"
SERVICE_URL = "http://127.0.0.1/console-connector/"
Route = Literal["conversation", "targeted", "personal"]


def teams_conversation_id(persona: Persona, thread_id: str) -> str:
    if persona.is_dm:
        return f"a:console-personal-{persona.user_id}"
    return f"19:console-channel@thread.tacv2;messageid={thread_id}"


def conversation_ref(persona: Persona, thread_id: str, activity_id: str) -> ConversationRef:
    """The reference the inbound message of this turn would carry in Teams."""
    return ConversationRef(
        service_url=SERVICE_URL,
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


class ConsoleConnector:
    """Records what the Teams reply sends; see the module docstring.

    >>> import asyncio
    >>> feed = TurnFeed()
    >>> connector = ConsoleConnector(feed, "a:1")
    >>> asyncio.run(connector.reply("a:1", "in-1", {"type": "message", "text": "hi"}))
    'act-1'
    """

    _ids = itertools.count(1)

    def __init__(self, feed: TurnFeed, conversation_id: str, *, private_to: str = "") -> None:
        self.feed = feed
        self.conversation_id = conversation_id
        self.private_to = private_to
        self._personal: set[str] = set()
        self.sent: list[dict[str, Any]] = []

    def _new_id(self) -> str:
        return f"act-{next(self._ids)}"

    def _route(self, conversation_id: str) -> Route:
        return "personal" if conversation_id in self._personal else "conversation"

    def _report(
        self,
        op: str,
        conversation_id: str,
        activity_id: str,
        activity: Mapping[str, Any],
        route: Route,
    ) -> None:
        record = {
            "op": op,
            "id": activity_id,
            "conversation_id": conversation_id,
            "route": route,
            "private_to": self.private_to if route != "conversation" else None,
            "activity": dict(activity),
        }
        self.sent.append(record)
        self.feed.emit("teams", record)

    async def send(self, conversation_id: str, activity: Mapping[str, Any]) -> str:
        activity_id = self._new_id()
        self._report("send", conversation_id, activity_id, activity, self._route(conversation_id))
        return activity_id

    async def reply(
        self, conversation_id: str, reply_to_id: str, activity: Mapping[str, Any]
    ) -> str:
        activity_id = self._new_id()
        self._report("send", conversation_id, activity_id, activity, self._route(conversation_id))
        return activity_id

    async def update(
        self, conversation_id: str, activity_id: str, activity: Mapping[str, Any]
    ) -> None:
        self._report("update", conversation_id, activity_id, activity, self._route(conversation_id))

    async def delete(self, conversation_id: str, activity_id: str) -> None:
        self._report("delete", conversation_id, activity_id, {}, self._route(conversation_id))

    async def send_targeted(self, conversation_id: str, activity: Mapping[str, Any]) -> str:
        activity_id = self._new_id()
        self._report("send", conversation_id, activity_id, activity, "targeted")
        return activity_id

    async def create_conversation(self, parameters: Mapping[str, Any]) -> str:
        members = parameters.get("members") or [{}]
        conversation_id = f"a:console-1on1-{members[0].get('id', '')}-{os.urandom(3).hex()}"
        self._personal.add(conversation_id)
        return conversation_id

    async def get_member(self, conversation_id: str, member_id: str) -> dict[str, Any]:
        return {"id": member_id}
