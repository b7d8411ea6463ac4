"""``SlackPlan``: the turn's plan in the thread, streamed as Slack's native task updates.

Once a turn runs a second step (or the model states a plan of two steps or more:
``agent_core.tools.plan``), its steps appear as one streamed message
(``chat.startStream`` with ``task_display_mode``: ``timeline`` in a DM, ``plan`` in a
channel) whose ``task_update`` chunks tick each step off and whose ``plan_update`` chunk
titles it ("Working: 2 of 5 steps done"). A turn of one step shows only the status line.
``close`` ends the stream with the final title; after a Stop the unfinished steps end
``stopped`` (Slack's card shows ``error`` with the detail "Stopped").

When the answer starts streaming, the plan's stream ends (``pause``): one stream at a time
in a thread, and the plan stands complete above the answer. Where streaming is refused (a
workspace without it, an expired stream) or fails on Slack's side, or after ``pause``, the
plan becomes a ``plan`` block of ``task_card`` blocks, posted once and updated in
place. Either way Slack hears at most once per ``update_interval`` (a 50-step plan costs a
few calls, not one per step). A long plan keeps ``MAX_PLAN_TASKS`` cards, the last
standing for the rest (``adapters.tasks.TaskBoard.shown``).

>>> from slack_sdk.web.async_client import AsyncWebClient
>>> from adapters.slack.context import ReplyTarget
>>> plan = SlackPlan(AsyncWebClient(token="xoxb-1"), ReplyTarget("D1", "1.0", "T1", "U1",
...                                                              is_dm=True))
>>> plan.mode, plan.started
('timeline', False)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from slack_sdk.models.blocks import PlanBlock, TaskCardBlock
from slack_sdk.models.messages.chunk import PlanUpdateChunk, TaskUpdateChunk
from slack_sdk.web.async_chat_stream import AsyncChatStream
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.answer import falls_back
from adapters.slack.context import ReplyTarget
from adapters.slack.controls import TASK_STATUS
from adapters.slack.errors import SlackCallFailed, web_client
from adapters.slack.escape import escape
from adapters.slack.limits import MAX_PLAN_TASKS, MAX_TASK_DETAIL, MAX_TASK_TITLE, validate_block
from adapters.slack.markdown import truncate
from adapters.tasks import PlanTask, TaskBoard
from agent_core.components import (
    TaskListComponent,
    TaskTrackerUpdateComponent,
    ToolStatusComponent,
)

log = logging.getLogger(__name__)

DisplayMode = Literal["timeline", "plan"]


def task_update_chunk(task: PlanTask) -> dict[str, Any]:
    """One task as a streamed ``task_update`` chunk (built with slack_sdk's model).

    >>> task_update_chunk(PlanTask("t1", "run_sql", "completed", "12 ms"))["status"]
    'complete'
    """
    status = TASK_STATUS[task.status]
    detail = truncate(task.detail, MAX_TASK_DETAIL) if task.detail else None
    chunk = TaskUpdateChunk(
        id=task.id,
        title=truncate(task.title, MAX_TASK_TITLE) or "Step",
        status=status,
        output=detail if status == "complete" else None,
        details=None if status == "complete" else detail,
    )
    return {k: v for k, v in chunk.to_dict().items() if v is not None}


def plan_update_chunk(title: str) -> dict[str, Any]:
    """The plan's title as a streamed ``plan_update`` chunk."""
    return PlanUpdateChunk(title=truncate(title, MAX_TASK_TITLE)).to_dict()


def _rich_text(text: str) -> dict[str, Any]:
    section = {"type": "rich_text_section", "elements": [{"type": "text", "text": text}]}
    return {"type": "rich_text", "elements": [section]}


def plan_block(board: TaskBoard) -> dict[str, Any]:
    """The plan as one ``plan`` block of ``task_card`` blocks (where streaming is not)."""
    cards = [
        TaskCardBlock(
            task_id=task.id,
            title=truncate(task.title, MAX_TASK_TITLE) or "Step",
            status=TASK_STATUS[task.status],
            details=_rich_text(truncate(task.detail, MAX_TASK_DETAIL)) if task.detail else None,
        )
        for task in board.shown(MAX_PLAN_TASKS)
    ]
    plan = PlanBlock(title=truncate(board.title(), MAX_TASK_TITLE), tasks=cards)
    return validate_block(plan.to_dict())


class SlackPlan:
    """One turn's plan message; see the module docstring. ``on_post(ts)`` is told the ts of
    the message it creates (the reply stream records it in its slot)."""

    def __init__(
        self,
        client: AsyncWebClient,
        target: ReplyTarget,
        *,
        update_interval: float = 1.0,
        on_post: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self._client = web_client(client)
        self._target = target
        self.mode: DisplayMode = "timeline" if target.is_dm else "plan"
        self.update_interval = update_interval
        self._on_post = on_post
        self.board = TaskBoard()
        self._stream: AsyncChatStream | None = None
        self.ts: str | None = None
        self.fallback = False
        """The plan is a plan block updated in place: streaming was refused, or the answer
        took over the thread's stream (``pause``)."""
        self.closed = False
        self._sent: dict[str, PlanTask] = {}
        self._title_sent: str | None = None
        self._sent_at = 0.0
        self._shown_in_place: tuple[str, tuple[PlanTask, ...]] | None = None
        self._timer: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    @property
    def started(self) -> bool:
        return self.ts is not None

    @property
    def visible(self) -> bool:
        """The plan shows once the turn runs a second step."""
        return self.started or len(self.board) > 1

    async def update(
        self, update: ToolStatusComponent | TaskTrackerUpdateComponent | TaskListComponent
    ) -> bool:
        """Apply one update (a tool call's status, a group's change, or a version of the
        model's stated plan); False while the plan is not shown (a turn of one step)."""
        if isinstance(update, TaskListComponent):
            changed = not self.closed and self.board.apply_plan(update)
        else:
            changed = not self.closed and self.board.apply(update)
        if not changed:
            return self.started
        if not self.visible:
            return False
        await self._send()
        return True

    async def close(self, *, stopped: bool = False) -> None:
        """End the plan: its final title (and, after a Stop, its stopped steps)."""
        if self.closed:
            return
        self.closed = True
        await self._cancel_timer()
        self.board.end(stopped=stopped)
        if not self.visible:
            return
        try:
            async with self._lock:
                if await self._stop_stream():
                    return
                await self._post_or_update()
        except SlackCallFailed as error:
            log.warning("slack: could not close the plan (%s)", error.failure)

    async def aclose(self) -> None:
        """Stop the pending update, if any (the turn is over)."""
        await self._cancel_timer()

    async def pause(self) -> None:
        """The answer starts streaming: the plan's stream ends with what it shows, and any
        later change updates the message in place (one stream at a time in a thread)."""
        if self.fallback or self.closed:
            return
        await self._cancel_timer()
        async with self._lock:
            try:
                await self._stop_stream()
            except SlackCallFailed as error:
                log.info("slack: could not end the plan's stream (%s)", error.failure)
            self.fallback = True
            self._shown_in_place = self._snapshot()

    # --- sending ------------------------------------------------------------------------------

    def _changes(self) -> list[dict[str, Any]]:
        """The chunks that bring what Slack shows up to date (none when nothing changed)."""
        chunks: list[dict[str, Any]] = []
        title = self.board.title()
        if self.mode == "plan" and title != self._title_sent:
            chunks.append(plan_update_chunk(title))
            self._title_sent = title
        for task in self.board.shown(MAX_PLAN_TASKS):
            if self._sent.get(task.id) != task:
                chunks.append(task_update_chunk(task))
                self._sent[task.id] = task
        return chunks

    async def _send(self) -> None:
        """Bring Slack up to date now if ``update_interval`` has passed since the last send,
        else once it has (one send carries every change made meanwhile)."""
        wait = self.update_interval - (time.monotonic() - self._sent_at)
        if self.started and wait > 0:
            if self._timer is None:
                self._timer = asyncio.create_task(self._send_later(wait), name="slack-plan")
            return
        async with self._lock:
            self._sent_at = time.monotonic()
            if not self.fallback and await self._stream_changes():
                return
            await self._post_or_update()

    async def _send_later(self, wait: float) -> None:
        await asyncio.sleep(wait)
        self._timer = None
        try:
            await self._send()
        except SlackCallFailed as error:
            log.warning("slack: could not update the plan (%s)", error.failure)

    async def _cancel_timer(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None and timer is not asyncio.current_task():
            timer.cancel()
            await asyncio.gather(timer, return_exceptions=True)

    async def _stream_changes(self) -> bool:
        """Stream what changed; False when streaming is refused (the plan block follows)."""
        chunks = self._changes()
        if not chunks:
            return True
        try:
            if self._stream is None:
                target = self._target
                self._stream = await self._client.chat_stream(
                    channel=target.channel,
                    thread_ts=target.thread_ts,
                    recipient_team_id=target.team_id,
                    recipient_user_id=target.user_id,
                    task_display_mode=self.mode,
                    buffer_size=1,
                )
            await self._stream.append(chunks=chunks)
        except SlackCallFailed as error:
            if not falls_back(error):
                raise
            log.info("slack: plan streaming failed (%s); posting it", error.failure)
            self.fallback = True
            return False
        if self.ts is None and self._stream.ts:
            await self._posted(self._stream.ts)
        return True

    async def _stop_stream(self) -> bool:
        """End the stream with the last changes; False when there is none to end, or Slack
        refused (the plan block follows)."""
        if self._stream is None or self.fallback:
            return False
        try:
            await self._stream.stop(chunks=self._changes())
        except SlackCallFailed as error:
            if not falls_back(error):
                raise
            self.fallback = True
            return False
        return True

    def _snapshot(self) -> tuple[str, tuple[PlanTask, ...]]:
        return self.board.title(), tuple(self.board.shown(MAX_PLAN_TASKS))

    async def _post_or_update(self) -> None:
        """The plan as a plan block: posted once, then updated in place when it changed."""
        snapshot = self._snapshot()
        if self.ts is not None and snapshot == self._shown_in_place:
            return
        self._shown_in_place = snapshot
        blocks, text = [plan_block(self.board)], escape(self.board.title())
        if self.ts is None:
            response = await self._client.chat_postMessage(
                channel=self._target.channel,
                thread_ts=self._target.thread_ts,
                text=text,
                blocks=blocks,
            )
            await self._posted(str(response["ts"]))
        else:
            with contextlib.suppress(SlackCallFailed):
                await self._client.chat_update(
                    channel=self._target.channel, ts=self.ts, text=text, blocks=blocks
                )

    async def _posted(self, ts: str) -> None:
        self.ts = ts
        if self._on_post is not None:
            await self._on_post(ts)
