"""Reaching a person and a place in Teams: ``person`` (the conversation's roster),
``place_gone`` (a proactive post the Bot Connector refused for good), ``post`` (a component
as a proactive message) and ``tell`` (a notice in the conversation, or 1:1 to its person).

- the roster answering 404 for the member means they left the conversation (or the
  tenant); any other failure is ``unknown``, never a departure;
- a proactive post refused with 403 (the bot was removed, or the user blocked it) or 404
  (the conversation is gone) will be refused again: the place is gone. Throttling and
  outages are worth trying at the next run.

Teams gives no time zone in the roster: it comes with each activity (``localTimezone``),
which is where a schedule takes its owner's zone from when it is made.
"""

from __future__ import annotations

import logging

from adapters.reach import Person
from adapters.teams import activities, elements
from adapters.teams.activities import ConversationRef
from adapters.teams.connector import ConnectorError, TeamsConnector
from adapters.teams.render import render
from agent_core.components import NotificationComponent, UiComponent

log = logging.getLogger(__name__)


def place_gone(error: BaseException) -> str | None:
    """Why a failed proactive post means the place is gone for good; None when it may work
    later.

    >>> place_gone(ConnectorError(403, "BotNotInConversationRoster"))
    'I was removed from the conversation (403 BotNotInConversationRoster)'
    >>> place_gone(ConnectorError(429, "TooManyRequests")) is None
    True
    """
    if not isinstance(error, ConnectorError):
        return None
    status = f"{error.status} {error.code}".strip()
    if error.blocked:
        return f"the owner blocked the bot ({status})"
    if error.status == 403:
        return f"I was removed from the conversation ({status})"
    if error.status == 404:
        return f"the conversation is gone ({status})"
    return None


async def person(connector: TeamsConnector, conversation_id: str, member_id: str) -> Person:
    """``member_id`` (an Entra object id or Teams user id) as the conversation's roster
    describes them now."""
    try:
        member = await connector.get_member(conversation_id, member_id)
    except ConnectorError as error:
        if error.status == 404:
            return Person("gone", reason="is no longer in the conversation")
        return Person("unknown", reason=str(error))
    return Person("active", name=member.get("name") or None)


async def post(connector: TeamsConnector, ref: ConversationRef, component: UiComponent) -> str:
    """``component`` as a proactive message of its own in ``ref``'s conversation; its id.
    Raises ``ConnectorError`` (the caller asks ``place_gone``)."""
    rendering = render(component)
    if rendering is not None and rendering.card is not None:
        message = activities.message(ref, attachments=[elements.attachment(rendering.card)])
    else:
        text = rendering.text if rendering is not None else None
        message = activities.message(ref, text or "")
    return await connector.send(ref.conversation_id, message)


async def tell(
    connector: TeamsConnector, ref: ConversationRef, text: str, *, personal: bool = False
) -> bool:
    """A notice (``text``, plain) in ``ref``'s conversation, or, with ``personal``, in a 1:1
    chat with ``ref``'s person (their own chat already when the conversation is one). False
    when Teams refused it (logged)."""
    notice = UiComponent(rich_component=NotificationComponent(message=text, level="warning"))
    target = ref.proactive()
    try:
        if personal and not ref.is_personal:
            parameters = {
                "isGroup": False,
                "bot": ref.bot,
                "members": [{"id": ref.user.get("id")}],
                "tenantId": ref.tenant_id,
                "channelData": {"tenant": {"id": ref.tenant_id}},
            }
            chat = await connector.create_conversation(parameters)
            target = ConversationRef.from_record(
                {**ref.to_record(), "conversation_id": chat, "conversation_type": "personal"}
            )
        await post(connector, target, notice)
    except ConnectorError as error:
        log.warning("teams: could not tell %s (%s)", ref.conversation_id, error)
        return False
    return True
