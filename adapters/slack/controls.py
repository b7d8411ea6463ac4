"""The bot's own controls: feedback buttons, sources, the Stop button, and the clicks on them.

``feedback_block`` is the ``context_actions`` block with ``feedback_buttons`` every final
answer carries; ``sources_block`` the line citing an answer's tables, with "Show query";
``stop_message`` the "working… Stop" message of a long turn (a turn's steps stream as
``adapters.slack.plan``).

A click arrives as a signed ``block_actions`` payload; pure readers say what it means:

    feedback buttons  -> feedback_of(body): the ``Feedback`` (the turn from the block id)
    the Stop button   -> stop_request_of(body): the turn to stop
    "Show query"      -> show_query_of(body): the turn whose queries to show (privately,
                         to a clicker allowed to see SQL: checked at the click)
    action buttons    -> button_message_of(body): the message to send on the clicker's behalf

>>> feedback_block()["elements"][0]["type"]
'feedback_buttons'
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    ButtonElement,
    ContextActionsBlock,
    FeedbackButtonObject,
    FeedbackButtonsElement,
    MarkdownTextObject,
    SectionBlock,
)

from adapters.slack.context import action_context, conversation_id
from adapters.slack.elements import ACTION_BUTTON, context
from adapters.slack.limits import MAX_SECTION_TEXT, SlackMessage, pack_messages
from adapters.slack.markdown import escape_mrkdwn, truncate
from adapters.slack.payloads import BlockActions
from agent_core.components import (
    ButtonGroupComponent,
    SourcesComponent,
)
from agent_core.feedback import Feedback

FEEDBACK_ACTION = "threadline_feedback"
FEEDBACK_BLOCK = "threadline_feedback"
STOP_ACTION = "threadline_stop"
SHOW_QUERY_ACTION = "threadline_show_query"
MAX_CITED_TABLES_CHARS = 600
"""How much of the sources line table names may take (the rest: "and N more")."""
TASK_STATUS = {
    "pending": "pending",
    "in_progress": "in_progress",
    "running": "in_progress",
    "completed": "complete",
    "success": "complete",
    "error": "error",
    "failed": "error",
    "stopped": "error",  # Slack's task cards have no "stopped": the detail says so
}


@functools.cache
def _feedback_block() -> dict[str, Any]:
    buttons = FeedbackButtonsElement(
        action_id=FEEDBACK_ACTION,
        positive_button=FeedbackButtonObject(
            text="Good answer", accessibility_label="Mark this answer as good", value="positive"
        ),
        negative_button=FeedbackButtonObject(
            text="Bad answer", accessibility_label="Mark this answer as bad", value="negative"
        ),
    )
    return ContextActionsBlock(elements=[buttons]).to_dict()


def feedback_block(turn_id: str | None = None) -> dict[str, Any]:
    """The thumbs up / down ``context_actions`` block every final answer carries; its
    ``block_id`` names the turn that answered, so a rating reaches that turn's memories.

    Built (and validated) once; each call returns a copy the caller may change.

    >>> feedback_turn(feedback_block("42")["block_id"])
    '42'
    """
    block = copy.deepcopy(_feedback_block())
    if turn_id:
        block["block_id"] = f"{FEEDBACK_BLOCK}:{turn_id}"[:255]
    return block


def feedback_turn(block_id: object) -> str | None:
    """The turn a feedback block rates (see ``feedback_block``), or None."""
    prefix = f"{FEEDBACK_BLOCK}:"
    if isinstance(block_id, str) and block_id.startswith(prefix) and len(block_id) > len(prefix):
        return block_id[len(prefix) :]
    return None


def sources_line(sources: SourcesComponent) -> str:
    """The mrkdwn line citing an answer's tables for everyone (never its SQL).

    >>> from agent_core.components import Source
    >>> sources_line(SourcesComponent(sources=[Source(tool="run_sql", query="SELECT 1",
    ...                                               tables=["orders"], rows=3)]))
    ':bar_chart: Sources: `orders` · 1 query · 3 rows'
    """
    tables, shown, used = sources.tables(), [], 0
    for table in tables:
        name = "`" + escape_mrkdwn(truncate(table, 100)).replace("`", "'") + "`"
        if used + len(name) > MAX_CITED_TABLES_CHARS:
            break
        shown.append(name)
        used += len(name) + 2
    more = f" and {len(tables) - len(shown)} more" if len(shown) < len(tables) else ""
    count = len(sources.sources)
    parts = [f"Sources: {', '.join(shown)}{more}" if tables else "Sources"]
    parts.append(f"{count} quer{'y' if count == 1 else 'ies'}")
    if count == 1 and (rows := sources.sources[0].rows_text()):
        parts.append(rows)
    return ":bar_chart: " + " · ".join(parts)


def sources_block(sources: SourcesComponent, turn_id: str | None) -> dict[str, Any]:
    """The compact line an answer ends with: its tables, and (with ``turn_id``) a "Show
    query" button. The button carries only the turn id; whoever clicks it is checked then.

    >>> from agent_core.components import Source
    >>> cited = SourcesComponent(sources=[Source(tool="run_sql", query="SELECT 1")])
    >>> block = sources_block(cited, "42")
    >>> block["accessory"]["action_id"], block["accessory"]["value"]
    ('threadline_show_query', '42')
    """
    text = MarkdownTextObject(text=truncate(sources_line(sources), MAX_SECTION_TEXT))
    if not turn_id:
        return SectionBlock(text=text).to_dict()
    label = "Show query" if len(sources.sources) == 1 else "Show queries"
    button = ButtonElement(text=label, action_id=SHOW_QUERY_ACTION, value=turn_id[:255])
    return SectionBlock(text=text, accessory=button).to_dict()


def stop_message(turn_id: str) -> SlackMessage:
    """The "working… Stop" message shown while a long turn runs; its button cancels the turn."""
    stop = ButtonElement(text="Stop", action_id=STOP_ACTION, value=turn_id, style="danger")
    blocks = [
        *context(":hourglass_flowing_sand: Working on it…"),
        ActionsBlock(elements=[stop]).to_dict(),
    ]
    return pack_messages(blocks, text="Working on it…")[0]


# --- clicks on the controls ---------------------------------------------------------------------


def feedback_of(click: BlockActions) -> Feedback | None:
    """The ``Feedback`` a click on an answer's feedback buttons gives, or None.

    >>> feedback = feedback_of(BlockActions(type="block_actions", team={"id": "T1"},
    ...     user={"id": "U1"},
    ...     channel={"id": "C1"}, container={"message_ts": "7.0", "thread_ts": "6.0"},
    ...     actions=[{"action_id": "threadline_feedback", "value": "negative",
    ...               "block_id": "threadline_feedback:42"}]))
    >>> feedback.conversation_id, feedback.message_id, feedback.positive, feedback.turn_id
    ('slack:T1:C1:6.0', '7.0', False, '42')
    """
    action = click.actions[0]  # bolt routes one action at a time
    if action.action_id != FEEDBACK_ACTION:
        return None
    container, message = click.container, click.message
    message_ts = (container and container.message_ts) or (message and message.ts) or ""
    return Feedback(
        conversation_id=conversation_id(action_context(click)),
        message_id=message_ts,
        positive=action.value == "positive",
        turn_id=feedback_turn(action.block_id),
    )


def stop_request_of(click: BlockActions) -> str | None:
    """The turn a click on the Stop button asks to stop, or None.

    >>> stop_request_of(_clicked("threadline_stop", "17-0"))
    '17-0'
    """
    action = click.actions[0]
    if action.action_id != STOP_ACTION or not action.value:
        return None
    return action.value


def show_query_of(click: BlockActions) -> str | None:
    """The turn whose queries a click on "Show query" asks for, or None.

    >>> show_query_of(_clicked("threadline_show_query", "17-0"))
    '17-0'
    """
    action = click.actions[0]
    if action.action_id != SHOW_QUERY_ACTION or not action.value:
        return None
    return action.value


def button_message_of(click: BlockActions) -> str | None:
    """The message an action button sends on the clicker's behalf (``elements.action_buttons``),
    or None for other clicks.

    >>> button_message_of(_clicked("threadline_button:0", "Top?"))
    'Top?'
    """
    action = click.actions[0]
    if not action.action_id.startswith(f"{ACTION_BUTTON}:"):
        return None
    return action.value or ""


def _clicked(action_id: str, value: str) -> BlockActions:
    """A click on ``action_id`` (the examples above)."""
    return BlockActions(
        type="block_actions",
        user={"id": "U1"},  # type: ignore[arg-type]
        actions=[{"action_id": action_id, "value": value}],  # type: ignore[list-item]
    )


MAX_SUGGESTED_PROMPTS = 4
"""Slack shows at most four suggested prompts in an assistant thread."""


def suggested_prompts(group: ButtonGroupComponent) -> list[dict[str, str]] | None:
    """The buttons as Slack's suggested prompts (``assistant.threads.setSuggestedPrompts``)
    when each one asks a question (it sends its own label, as the starter view's do) and
    they fit; ``None`` when they are buttons of another kind.

    >>> from agent_core.components import ButtonSpec
    >>> ask = ButtonGroupComponent(buttons=[ButtonSpec(label="Top customers?",
    ...                                                action="Top customers?")])
    >>> suggested_prompts(ask)
    [{'title': 'Top customers?', 'message': 'Top customers?'}]
    >>> delete = ButtonGroupComponent(buttons=[ButtonSpec(label="Delete m1", action="/delete m1")])
    >>> suggested_prompts(delete) is None
    True
    """
    buttons = [b for b in group.buttons if not b.disabled]
    if not buttons or len(buttons) > MAX_SUGGESTED_PROMPTS:
        return None
    if any(b.action != b.label or b.action.startswith("/") for b in buttons):
        return None
    return [{"title": truncate(b.label, 75), "message": b.action} for b in buttons]
