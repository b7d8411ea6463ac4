"""``ReplyStream``: one turn's components -> Slack Web API calls in one thread.

    status bar / tool running   -> assistant.threads.setStatus      (StatusLine)
    task tracker updates        -> task_update chunks of the streaming answer, else status
    the answer (markdown text)  -> chat.startStream/appendStream/stopStream + feedback buttons
    everything else             -> blocks (chat.postMessage, chat.update, chat.delete, files)
    audience "requester"        -> inline in a DM; chat.postEphemeral to the asker elsewhere

Updates of one component are coalesced to at most one ``chat.update`` per
``update_interval`` (the newest version wins), so no turn outruns ``chat.update``'s tier.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.answer import AnswerStream
from adapters.slack.controls import feedback_block, stop_message, task_chunk
from adapters.slack.limits import SlackMessage
from adapters.slack.private import PROGRESS_STATUSES, QUIET_WHEN_DONE, PrivateDelivery
from adapters.slack.render import render
from adapters.slack.status import StatusLine
from agent_core.components import (
    ComponentLifecycle,
    RichTextComponent,
    StatusBarUpdateComponent,
    StatusCardComponent,
    TaskTrackerUpdateComponent,
    UiComponent,
)

log = logging.getLogger(__name__)

STOPPED_NOTE = "\n\n_(stopped)_"


@dataclass(frozen=True)
class ReplyTarget:
    """Where a turn answers: the thread, who asked, and how privately.

    ``private`` sends everything only to the asker (a private slash command); then
    ``response_url`` is the fallback when the bot is not in the channel.

    >>> ReplyTarget(channel="C1", thread_ts="1.0", team_id="T1", user_id="U1").is_dm
    False
    """

    channel: str
    thread_ts: str
    team_id: str
    user_id: str
    is_dm: bool = False
    private: bool = False
    response_url: str | None = None
    turn_id: str | None = None
    """The bot's turn this reply answers (named by the answer's feedback buttons)."""


class ReplyStream:
    """Renders one turn into Slack; call ``handle`` per component, then ``close``.

    ``on_post(ts)`` runs after each message this turn creates (before anything more is
    sent), ``on_private()`` after each ephemeral one: a durable turn records them there.

    >>> client = AsyncWebClient(token="xoxb-test")
    >>> reply = ReplyStream(client, ReplyTarget("C1", "1.0", "T1", "U1"))
    >>> reply.posted
    []
    """

    def __init__(
        self,
        client: AsyncWebClient,
        target: ReplyTarget,
        *,
        flush_chars: int = 1000,
        flush_interval: float = 1.0,
        update_interval: float = 1.0,
        on_post: Callable[[str], Awaitable[None]] | None = None,
        on_private: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._client = client
        self.target = target
        self.flush_chars = flush_chars
        self.flush_interval = flush_interval
        self.update_interval = update_interval
        self.status = StatusLine(client, target.channel, target.thread_ts)
        self._private = PrivateDelivery(client, target, on_send=on_private)
        self._post_hook = on_post
        self._answers: dict[str, AnswerStream] = {}
        self._current: AnswerStream | None = None
        self._messages: dict[str, list[str]] = {}  # component id -> posted ts
        self._quiet: set[str] = set()  # progress cards shown through the status line
        self._last_update: dict[str, float] = {}
        self._pending: dict[str, UiComponent] = {}
        self._stop_ts: str | None = None
        self.posted: list[str] = []
        self.answer_ts: str | None = None

    # --- entry points -------------------------------------------------------------------------

    async def handle(self, component: UiComponent) -> None:
        """Show one component version."""
        await self._flush_pending(force=False)
        if self.target.private or (component.is_private and not self.target.is_dm):
            await self._private.send(component)
            return
        rich = component.rich_component
        match rich:
            case StatusBarUpdateComponent():
                if rich.status == "working":
                    await self.status.set(rich.message)
            case TaskTrackerUpdateComponent():
                await self._task(rich)
            case StatusCardComponent() if self._is_quiet_progress(rich):
                self._quiet.add(rich.id)
                if rich.status in PROGRESS_STATUSES:
                    await self.status.set(f"is running {rich.title}…")
            case RichTextComponent() if rich.markdown and component.audience == "everyone":
                await self._answer(rich)
            case _:
                await self._blocks(component)

    async def show_stop(self, turn_id: str) -> None:
        """Post the "working… Stop" message; ``close`` removes it."""
        if self._stop_ts is None and not self.target.private:
            self._stop_ts = await self._post(stop_message(turn_id))

    async def close(self, *, stopped: bool = False) -> None:
        """End the turn: settle open answers, apply pending updates, tidy status and Stop."""
        for answer in self._answers.values():
            if not answer.finished:
                if stopped and answer.text:
                    await answer.append(STOPPED_NOTE)
                await answer.finish()
        await self._flush_pending(force=True)
        if self._stop_ts is not None:
            with contextlib.suppress(SlackApiError):
                await self._client.chat_delete(channel=self.target.channel, ts=self._stop_ts)
            self._stop_ts = None
        await self.status.clear()

    # --- status and tasks ---------------------------------------------------------------------

    def _is_quiet_progress(self, card: StatusCardComponent) -> bool:
        """Tool progress shows in the status line; only failures become messages."""
        if card.status in PROGRESS_STATUSES:
            return card.id not in self._messages
        return card.id in self._quiet and card.status in QUIET_WHEN_DONE

    async def _task(self, update: TaskTrackerUpdateComponent) -> None:
        chunk = task_chunk(update)
        if chunk is None:
            return
        if self._current is not None and await self._current.add_chunks([chunk]):
            return
        if chunk["status"] == "in_progress":
            await self.status.set(f"is running {chunk['title']}…")

    # --- the answer ---------------------------------------------------------------------------

    def _new_answer(self, rich: RichTextComponent) -> AnswerStream:
        target = self.target
        answer = AnswerStream(
            self._client,
            channel=target.channel,
            thread_ts=target.thread_ts,
            team_id=target.team_id,
            user_id=target.user_id,
            flush_chars=self.flush_chars,
            flush_interval=self.flush_interval,
            on_post=self._on_post,
        )
        self._answers[rich.id] = self._current = answer
        return answer

    async def _answer(self, rich: RichTextComponent) -> None:
        answer = self._answers.get(rich.id)
        if rich.lifecycle is ComponentLifecycle.REMOVE or not rich.visible:
            if answer is not None:
                await answer.discard()
            return
        if answer is None:
            answer = self._new_answer(rich)
        delta = rich.delta
        if delta is None or rich.lifecycle is ComponentLifecycle.REPLACE:
            if not rich.content.startswith(answer.text):  # rewritten: start over
                await answer.discard()
                answer = self._new_answer(rich)
            delta = rich.content[len(answer.text) :]
        await answer.append(delta)
        if not rich.streaming:
            feedback = feedback_block(self.target.turn_id)
            self.answer_ts = await answer.finish([feedback]) or self.answer_ts

    async def _on_post(self, ts: str) -> None:
        self.posted.append(ts)
        self.status.replied()
        if self._post_hook is not None:
            await self._post_hook(ts)

    # --- blocks ---------------------------------------------------------------------------------

    async def _blocks(self, component: UiComponent) -> None:
        rich = component.rich_component
        known = self._messages.get(rich.id)
        if rich.lifecycle is ComponentLifecycle.REMOVE or not rich.visible:
            self._pending.pop(rich.id, None)
            for ts in self._messages.pop(rich.id, []):
                with contextlib.suppress(SlackApiError):
                    await self._client.chat_delete(channel=self.target.channel, ts=ts)
            return
        if known is None:
            self._messages[rich.id] = [
                posted for message in render(component) if (posted := await self._post(message))
            ]
            self._last_update[rich.id] = time.monotonic()
            return
        self._pending[rich.id] = component
        await self._flush_pending(force=False)

    async def _flush_pending(self, *, force: bool) -> None:
        now = time.monotonic()
        for component_id, component in list(self._pending.items()):
            if force or now - self._last_update.get(component_id, 0.0) >= self.update_interval:
                del self._pending[component_id]
                self._last_update[component_id] = now
                await self._update(component_id, render(component))

    async def _update(self, component_id: str, messages: list[SlackMessage]) -> None:
        old = self._messages.get(component_id, [])
        kept: list[str] = []
        for index, message in enumerate(messages):
            if index < len(old) and message.blocks:
                await self._client.chat_update(
                    channel=self.target.channel,
                    ts=old[index],
                    text=message.text,
                    blocks=message.blocks,
                )
                kept.append(old[index])
            elif index >= len(old) and (ts := await self._post(message)):
                kept.append(ts)
        for ts in old[len(messages) :]:
            with contextlib.suppress(SlackApiError):
                await self._client.chat_delete(channel=self.target.channel, ts=ts)
        self._messages[component_id] = kept

    async def _post(self, message: SlackMessage) -> str | None:
        """Post ``message`` in the thread (then its files); returns its ts."""
        ts: str | None = None
        if message.blocks:
            response = await self._client.chat_postMessage(
                channel=self.target.channel,
                thread_ts=self.target.thread_ts,
                text=message.text,
                blocks=message.blocks,
            )
            ts = str(response["ts"])
            await self._on_post(ts)
        for upload in message.files:
            try:
                await self._client.files_upload_v2(
                    channel=self.target.channel,
                    thread_ts=self.target.thread_ts,
                    filename=upload.filename,
                    content=upload.content,
                    title=upload.title,
                    alt_txt=upload.alt_text,
                    initial_comment=None if message.blocks else message.text,
                )
            except SlackApiError as error:
                log.warning(
                    "slack: could not upload %s (%s)", upload.filename, error.response.get("error")
                )
            else:
                self.status.replied()
        return ts
