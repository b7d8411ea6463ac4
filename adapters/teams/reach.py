"""Reaching a person and a place in Teams: ``person`` (the conversation's roster) and
``place_gone`` (a proactive post the Bot Connector refused for good).

- the roster answering 404 for the member means they left the conversation (or the
  tenant); any other failure is ``unknown``, never a departure;
- a proactive post refused with 403 (the bot was removed, or the user blocked it) or 404
  (the conversation is gone) will be refused again: the place is gone. Throttling and
  outages are worth trying at the next run.

Teams gives no time zone in the roster: it comes with each activity (``localTimezone``),
which is where a schedule takes its owner's zone from when it is made.
"""

from __future__ import annotations

from adapters.reach import Person
from adapters.teams.connector import ConnectorError, TeamsConnector


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
