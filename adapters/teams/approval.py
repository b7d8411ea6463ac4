"""The approval card in Teams: what will run, Approve / Deny, and the click on them.

``approval_card(view)`` is an Adaptive Card 1.5: a headline, who asks to run what, each
call's arguments in a monospace block (TextRuns: never parsed as Markdown, so markup in an
argument shows as text; cut to ``ARGUMENT_CHARS``), who may approve and until when, and,
while pending, ``Action.Execute`` Approve / Deny, and Stop for the asker (verb
``threadline.approval``, data: the approval id and the decision) - Teams' universal actions,
in channels and chats alike. The card's ``refresh`` action (verb
``threadline.approval.refresh``) lets a client fetch the card as it now stands; after a
decision the bot answers the click with the refreshed card and updates the message for
everyone. ``approval_click_of(activity)`` reads a click from the signed
``adaptiveCard/action`` invoke; whether the clicker may decide is the agent's check, at the
click.

>>> from agent_core.components import ApprovalCallView, ApprovalComponent
>>> view = ApprovalComponent(approval_id="a1", calls=[ApprovalCallView(tool="refund")],
...                          asker="Ana", approvers="Ana", expires_at=0)
>>> card = approval_card(view)
>>> [a["title"] for a in card["actions"]], card["refresh"]["action"]["verb"]
(['Approve', 'Deny', 'Stop'], 'threadline.approval.refresh')
>>> approval_click_of({"type": "invoke", "name": "adaptiveCard/action", "value": {"action": {
...     "verb": "threadline.approval", "data": {"threadline_approval": "a1",
...     "decision": "approve"}}}})
ApprovalClick(approval_id='a1', decision='approve')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters.approval import (
    ARGUMENT_CHARS,
    DECISIONS,
    MAX_CALLS_SHOWN,
    ApprovalClick,
    footer,
    headline,
    hidden_calls,
    request_line,
)
from adapters.teams import activities, elements
from adapters.teams.activities import ConversationRef
from adapters.teams.connector import TeamsConnector
from adapters.teams.context import Wire
from adapters.teams.controls import CARD_ACTION
from agent_core.components import ApprovalComponent

APPROVAL_VERB = "threadline.approval"
REFRESH_VERB = "threadline.approval.refresh"

_STYLES: dict[str, elements.ContainerStyle] = {
    "pending": "warning",
    "approved": "good",
    "denied": "attention",
    "expired": "attention",
    "cancelled": "attention",
}


def _decision(view: ApprovalComponent, title: str, decision: str, style: str) -> elements.Element:
    return {
        "type": "Action.Execute",
        "title": title,
        "verb": APPROVAL_VERB,
        "data": {"threadline_approval": view.approval_id, "decision": decision},
        "style": style,
    }


def _calls(view: ApprovalComponent) -> list[elements.Element]:
    shown: list[elements.Element] = []
    for call in view.calls[:MAX_CALLS_SHOWN]:
        shown.append(elements.plain_block(call.tool, weight="Bolder"))
        shown.append(elements.monospace_block(call.arguments_text(ARGUMENT_CHARS)))
    more = hidden_calls(view)
    return shown + ([elements.plain_block(more, subtle=True)] if more else [])


def approval_card(view: ApprovalComponent) -> elements.Element:
    """The approval as an Adaptive Card (see the module docstring)."""
    body = [
        elements.container(
            [
                elements.plain_block(headline(view), weight="Bolder", size="Medium"),
                elements.plain_block(request_line(view)),
                *_calls(view),
                elements.plain_block(footer(view), subtle=True, size="Small"),
            ],
            style=_STYLES[view.state],
        )
    ]
    actions = (
        [
            _decision(view, "Approve", "approve", "positive"),
            _decision(view, "Deny", "deny", "destructive"),
            _decision(view, "Stop", "stop", "default"),
        ]
        if view.pending
        else []
    )
    card = elements.card(body, actions, fallback_text=view.summary())
    card["refresh"] = {
        "action": {
            "type": "Action.Execute",
            "title": "Refresh",
            "verb": REFRESH_VERB,
            "data": {"threadline_approval": view.approval_id},
        }
    }
    return card


def card_response(view: ApprovalComponent) -> dict[str, Any]:
    """The invoke response to a click or a refresh: the card as it now stands (Teams shows
    it in place of the one clicked, for the clicker at once).

    >>> from agent_core.components import ApprovalCallView
    >>> view = ApprovalComponent(approval_id="a1", calls=[ApprovalCallView(tool="refund")],
    ...                          asker="Ana", approvers="Ana", expires_at=0, state="denied")
    >>> response = card_response(view)
    >>> response["type"], "actions" in response["value"]
    ('application/vnd.microsoft.card.adaptive', False)
    """
    return {
        "statusCode": 200,
        "type": "application/vnd.microsoft.card.adaptive",
        "value": approval_card(view),
    }


async def update_approval(
    connector: TeamsConnector, where: Mapping[str, Any], view: ApprovalComponent
) -> None:
    """Show ``view`` in place of the approval message at ``where`` (Bot Connector update:
    the message holds the approval alone, so it is replaced whole)."""
    ref = ConversationRef.from_record(where["conversation"])
    message = activities.message(ref, attachments=[elements.attachment(approval_card(view))])
    await connector.update(ref.conversation_id, str(where["activity_id"]), message)


def _action(activity: Wire) -> Mapping[str, Any]:
    if activity.get("type") != "invoke" or activity.get("name") != CARD_ACTION:
        return {}
    value = activity.get("value")
    action = value.get("action") if isinstance(value, Mapping) else None
    return action if isinstance(action, Mapping) else {}


def _approval_id(action: Mapping[str, Any]) -> str | None:
    data = action.get("data")
    found = data.get("threadline_approval") if isinstance(data, Mapping) else None
    return found if isinstance(found, str) and 0 < len(found) <= 200 else None


def approval_click_of(activity: Wire) -> ApprovalClick | None:
    """The Approve / Deny / Stop click an invoke carries, or None for other invokes."""
    action = _action(activity)
    if action.get("verb") != APPROVAL_VERB or (approval_id := _approval_id(action)) is None:
        return None
    decision = action["data"].get("decision")
    for known in DECISIONS:
        if decision == known:
            return ApprovalClick(approval_id, known)
    return None


def approval_refresh_of(activity: Wire) -> str | None:
    """The approval a card's refresh asks for, or None for other invokes."""
    action = _action(activity)
    return _approval_id(action) if action.get("verb") == REFRESH_VERB else None
