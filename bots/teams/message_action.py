"""The message-extension action "Ask Threadline about this" in the Teams bot (the Slack twin:
``bots.slack.message_action``): a turn asked by whoever ran it, about the message they
pointed at, answered as a reply in that message's conversation (thread, in a channel).

    composeExtension/submitAction (authenticated) -> the message activity the turn answers
        (``adapters.teams.message_action.asked_activity``: the asker's, quoting the message
        as data), recorded before Teams gets its answer, deduplicated by the invoke's id
    -> 200 with an empty body: Teams closes the command's form

The message's author is never the asker: the turn runs with the asker's identity, groups,
data roles and budget.
"""

from __future__ import annotations

from typing import Any

from adapters.teams.context import Wire, asker_id, delivery_key, turn_key
from adapters.teams.message_action import MessageAction, asked_activity
from adapters.teams.payloads import Activity
from bots.teams.kinds import TeamsAsked
from bots.turns import TurnHost

CLOSE_FORM: dict[str, Any] = {}
"""The invoke's answer: nothing to show in the form (the answer comes as a reply)."""


async def accept_message_action(turns: TurnHost, invoke: Wire, action: MessageAction) -> None:
    """Record the turn of ``action`` (raises ``StateUnavailableError`` while the state is
    down: the bot tells the asker in the invoke's answer)."""
    asked = asked_activity(invoke, action)
    await turns.accept(
        turn_key(asked),
        TeamsAsked.of(Activity.model_validate(asked), str(asked["text"])),
        owner=asker_id(asked) or None,
        dedupe_key=delivery_key(invoke),
    )
