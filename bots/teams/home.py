"""``/home`` in the Teams bot: the person's home (``bots.home``) as one Adaptive Card in their
1:1 chat with the bot (a personal tab would need a hosted web page). Its buttons send their
commands as messages from the clicker (``Action.Execute``), answered like the same command
typed in chat: the schedule commands (``bots.teams.schedules``) or the agent.

Its Approve and Deny (``/approve <id>``, ``/deny <id>``, sent from the 1:1 chat) are decided
by ``Home.decide``: the approval message's own decision, checked again for the clicker.

In a group chat or a channel, ``/home`` (and a home's Approve or Deny) answers with where to
find it: a home is one person's, never shown to a room.

Kept current the Teams way: the card carries a ``refresh`` action, which Teams invokes
when the person views it (``refreshed``: their home as it stands, built for the signed
invoker, in their 1:1 chat only). Slack's tab is instead published again when something it
shows changes (``bots.slack.home``): a Teams card is a message, and Teams asks for it.
"""

from __future__ import annotations

from typing import Any

from adapters.teams import activities
from adapters.teams.activities import ConversationRef
from adapters.teams.context import request_context
from adapters.teams.elements import attachment
from adapters.teams.home_view import home_card, home_response
from adapters.teams.payloads import Activity
from adapters.teams.slot import AnswerSlot
from agent_core.components import UiComponent
from agent_core.state.turns import Turn
from bots.home import Home, is_decision
from bots.home import home_card as home_component
from bots.teams.kinds import TeamsAsked
from bots.turns import Outcome

HOME_COMMAND = "/home"
PERSONAL_ONLY = "Your home is yours alone: say `/home` in your 1:1 chat with me."


class TeamsHome:
    """See the module docstring."""

    def __init__(self, home: Home) -> None:
        self.home = home

    async def command(self, turn: Turn, asked: TeamsAsked, slot: AnswerSlot) -> Outcome | None:
        """Answer ``asked`` when it says ``/home`` or decides from it (None otherwise)."""
        text = asked.text.strip()
        # A Teams card button is a message from its clicker, so the home's Approve/Deny
        # arrive here as if typed, and typing them works the same; Slack's twin is its
        # /approve and /deny slash commands (``SlackHome.typed``). Only in the 1:1 chat:
        # a Teams reply in a room is seen by the room, a Slack command's answer is not.
        if text.lower() != HOME_COMMAND and not is_decision(text):
            return None
        activity = asked.activity
        ref = ConversationRef.from_activity(activity)
        context = request_context(activity)
        shown: list[UiComponent] = [home_component("Home", PERSONAL_ONLY)]
        if ref.is_personal and (decided := await self.home.decide(context, text)) is not None:
            shown = [decided]
        elif ref.is_personal:
            shown = await self.home.components(context, timezone=_zone(activity))
        card = home_card(shown)
        await slot.fill(activities.message(ref, attachments=[attachment(card)]))
        await turn.record_at_end(answered=True)
        return "completed"

    async def refreshed(self, activity: Activity) -> dict[str, Any] | None:
        """The home card's refresh (Teams asks when the card is viewed): the invoker's home
        as it stands, as the invoke's response; None outside their 1:1 chat."""
        if not ConversationRef.from_activity(activity).is_personal:
            return None
        shown = await self.home.components(request_context(activity), timezone=_zone(activity))
        return home_response(home_card(shown))


def _zone(activity: Activity) -> str:
    """The asker's time zone, as their client says (``localTimezone``), else UTC."""
    zone = (activity.model_extra or {}).get("localTimezone")
    return zone if isinstance(zone, str) and zone else "UTC"
