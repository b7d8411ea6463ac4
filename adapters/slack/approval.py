"""The approval message in Slack: what will run, Approve / Deny, and the click on them.

``approval_message(view)`` is a Block Kit message (validated through slack_sdk's models,
within Slack's limits): a header, who asks to run what, each call's arguments in a code
block (escaped: a ``<!channel>`` in an argument is text; cut to ``ARGUMENT_CHARS``), who may
approve and until when, and, while pending, Approve / Deny buttons (and Stop, for the asker)
carrying only the approval id. Once decided, the same message (``chat.update``) says who
decided and when, without buttons. ``approval_click_of(click)`` reads a click on those
buttons from a signed ``block_actions`` payload; whether the clicker may decide is the
agent's check, at the click.

>>> from agent_core.components import ApprovalCallView, ApprovalComponent
>>> view = ApprovalComponent(approval_id="a1", calls=[ApprovalCallView(tool="refund",
...     arguments={"order": 42})], asker="Ana", approvers="Ana", expires_at=0)
>>> [message] = approval_message(view)
>>> [b["type"] for b in message.blocks]
['header', 'section', 'section', 'context', 'actions']
>>> approval_click_of(BlockActions(type="block_actions", user={"id": "U1"},
...     actions=[{"action_id": "threadline_approval:deny", "value": "a1"}]))
ApprovalClick(approval_id='a1', decision='deny')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from slack_sdk.models.blocks import ActionsBlock, ButtonElement
from slack_sdk.web.async_client import AsyncWebClient

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
from adapters.slack.elements import context, header, sections
from adapters.slack.escape import escape
from adapters.slack.limits import SlackMessage, pack_messages
from adapters.slack.payloads import BlockActions
from agent_core.components import ApprovalComponent

APPROVAL_ACTION = "threadline_approval"
"""``action_id`` prefix of the Approve / Deny buttons (``:approve`` / ``:deny``)."""
APPROVAL_BLOCK = "threadline_approval"


def _call_blocks(view: ApprovalComponent) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for call in view.calls[:MAX_CALLS_SHOWN]:
        arguments = call.arguments_text(ARGUMENT_CHARS).replace("```", "'''")
        blocks += sections(f"*{escape(call.tool)}*\n```{escape(arguments)}```")
    more = hidden_calls(view)
    return blocks + (context(escape(more)) if more else [])


def _buttons(view: ApprovalComponent) -> list[dict[str, Any]]:
    value = view.approval_id[:2000]
    approve = ButtonElement(
        text="Approve", action_id=f"{APPROVAL_ACTION}:approve", value=value, style="primary"
    )
    deny = ButtonElement(
        text="Deny", action_id=f"{APPROVAL_ACTION}:deny", value=value, style="danger"
    )
    stop = ButtonElement(text="Stop", action_id=f"{APPROVAL_ACTION}:stop", value=value)
    return [ActionsBlock(block_id=APPROVAL_BLOCK, elements=[approve, deny, stop]).to_dict()]


def approval_message(view: ApprovalComponent) -> list[SlackMessage]:
    """The approval as a Block Kit message (one; see the module docstring)."""
    blocks = [
        *header(headline(view)),
        *sections(escape(request_line(view))),
        *_call_blocks(view),
        *context(escape(footer(view))),
        *(_buttons(view) if view.pending else []),
    ]
    return pack_messages(blocks, text=view.summary())


async def update_approval(
    client: AsyncWebClient, where: Mapping[str, Any], view: ApprovalComponent
) -> None:
    """Show ``view`` in place of the approval message at ``where`` (``chat.update``)."""
    [message] = approval_message(view)
    await client.chat_update(
        channel=str(where["channel"]), ts=str(where["ts"]), text=message.text, blocks=message.blocks
    )


def approval_click_of(click: BlockActions) -> ApprovalClick | None:
    """The Approve / Deny / Stop click a ``block_actions`` payload carries, or None for
    others."""
    action = click.actions[0]  # bolt routes one action at a time
    prefix, _, decision = action.action_id.partition(":")
    if prefix != APPROVAL_ACTION or not action.value:
        return None
    for known in DECISIONS:
        if decision == known:
            return ApprovalClick(action.value, known)
    return None
