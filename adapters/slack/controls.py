"""The bot's own controls and stream chunks: feedback buttons, the Stop button, task updates.

``feedback_block`` is the ``context_actions`` block with ``feedback_buttons`` every final
answer carries; ``stop_message`` the "working… Stop" message of a long turn; ``task_chunk``
turns task tracker updates and tool status cards into streamed ``task_update`` chunks.

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
)

from adapters.slack.elements import context
from adapters.slack.limits import SlackMessage, pack_messages
from adapters.slack.markdown import truncate
from agent_core.components import (
    RichComponent,
    StatusCardComponent,
    TaskTrackerUpdateComponent,
)

FEEDBACK_ACTION = "threadline_feedback"
FEEDBACK_BLOCK = "threadline_feedback"
STOP_ACTION = "threadline_stop"
TASK_STATUS = {
    "pending": "pending",
    "in_progress": "in_progress",
    "running": "in_progress",
    "completed": "complete",
    "success": "complete",
    "error": "error",
    "failed": "error",
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


def stop_message(turn_id: str) -> SlackMessage:
    """The "working… Stop" message shown while a long turn runs; its button cancels the turn."""
    stop = ButtonElement(text="Stop", action_id=STOP_ACTION, value=turn_id, style="danger")
    blocks = [
        *context(":hourglass_flowing_sand: Working on it…"),
        ActionsBlock(elements=[stop]).to_dict(),
    ]
    return pack_messages(blocks, text="Working on it…")[0]


def task_chunk(rich: RichComponent) -> dict[str, Any] | None:
    """A streamed ``task_update`` chunk for task tracker updates and status cards."""
    if isinstance(rich, TaskTrackerUpdateComponent):
        task = rich.task
        status = rich.status or (task.status if task else None)
        title = task.title if task else rich.detail or "Task"
        task_id = rich.task_id or (task.id if task else None)
        if task_id is None or status is None:
            return None
        chunk: dict[str, Any] = {
            "type": "task_update",
            "id": task_id,
            "title": truncate(title, 150),
            "status": TASK_STATUS[status],
        }
        if rich.detail:
            chunk["details"] = truncate(rich.detail, 500)
        return chunk
    if isinstance(rich, StatusCardComponent) and rich.status in TASK_STATUS:
        chunk = {
            "type": "task_update",
            "id": rich.id,
            "title": truncate(rich.title, 150),
            "status": TASK_STATUS[rich.status],
        }
        if rich.description:
            chunk["output" if chunk["status"] == "complete" else "details"] = truncate(
                rich.description, 500
            )
        return chunk
    return None
