"""``SlackReplyStream``: one turn's components -> Slack Web API calls in one thread.

The channel's ``adapters.stream.ReplyStream``::

    async with SlackReplyStream(client, target, slot=slot, stop_turn=turn_id) as reply:
        async for component in agent.send_message(context, text, conversation_id=key):
            await reply.handle(component)
        await reply.finish()            # or, on Stop: await reply.settle(notices.STOPPED)

What each component becomes:

    status bar / tool running   -> assistant.threads.setStatus      (StatusLine)
    tool calls' statuses, task  -> the plan (``plan.SlackPlan``) from the second step on:
    tracker updates, the
    model's stated plan            task_update / plan_update chunks, else a plan block;
                                   one step alone shows as the status line
    a tool call that failed     -> also a message (its status card)
    the answer (markdown text)  -> chat.startStream/appendStream/stopStream + feedback buttons
    the answer's sources        -> a line under the answer (its tables) + "Show query"
    questions to suggest (DM)   -> assistant.threads.setSuggestedPrompts (else buttons)
    everything else             -> blocks (chat.postMessage, chat.update, chat.delete, files)
    audience "requester"        -> inline in a DM; chat.postEphemeral to the asker elsewhere

An approval (``ApprovalComponent``) is a message of its own; ``on_approval(approval_id,
where)`` hears where it went, so a decision can update it in place
(``adapters.slack.approval.update_approval``).

Tables and charts come after the answer's text, as in Teams (where they are the answer
message's cards): one that arrives before any text is held until the answer is posted, or
until the turn ends.

Updates of one component are coalesced to at most one ``chat.update`` per
``update_interval`` (the newest version wins), so no turn outruns ``chat.update``'s tier.
A turn that runs longer than ``stop_button_after`` shows a "Working on it… Stop" message
(with ``stop_turn``, the turn its button stops); ``finish`` / ``settle`` remove it. Every
message posted is reported to the ``slot`` (``adapters.slack.slot``), which a durable turn
records so a re-run can take it back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, Self

from slack_sdk.web.async_client import AsyncWebClient

from adapters.notices import closing_note
from adapters.slack.answer import AnswerStream
from adapters.slack.context import ReplyTarget
from adapters.slack.controls import (
    feedback_block,
    sources_block,
    stop_message,
    suggested_prompts,
)
from adapters.slack.errors import SlackCallFailed, web_client
from adapters.slack.escape import escape
from adapters.slack.limits import SlackMessage
from adapters.slack.plan import SlackPlan
from adapters.slack.private import PROGRESS_STATUSES, QUIET_WHEN_DONE, PrivateDelivery
from adapters.slack.render import render
from adapters.slack.slot import AnswerSlot
from adapters.slack.status import StatusLine
from agent_core.components import (
    ApprovalComponent,
    ButtonGroupComponent,
    ChartComponent,
    ComponentLifecycle,
    DataFrameComponent,
    RichTextComponent,
    SourcesComponent,
    StatusBarUpdateComponent,
    StatusCardComponent,
    TaskListComponent,
    TaskTrackerUpdateComponent,
    ToolStatusComponent,
    UiComponent,
)

log = logging.getLogger(__name__)

OnApproval = Callable[[str, dict[str, Any]], Awaitable[None]]
"""Told where an approval message went: ``(approval_id, {"channel": ..., "ts": ...})``."""


class SlackReplyStream:
    """Renders one turn into Slack; see the module docstring.

    ``slot`` is where the answer goes and what it posted (default: a new one);
    ``stop_turn`` the turn id the Stop button carries (no button without it).

    >>> client = AsyncWebClient(token="xoxb-test")
    >>> reply = SlackReplyStream(client, ReplyTarget("C1", "1.0", "T1", "U1"))
    >>> reply.slot.current.ts, reply.answer_ts
    ((), None)
    """

    def __init__(
        self,
        client: AsyncWebClient,
        target: ReplyTarget,
        *,
        slot: AnswerSlot | None = None,
        stop_turn: str | None = None,
        stop_button_after: float | None = 3.0,
        flush_chars: int = 1000,
        flush_interval: float = 1.0,
        update_interval: float = 1.0,
        on_approval: OnApproval | None = None,
    ) -> None:
        self._client = web_client(client)
        self._on_approval = on_approval
        self.target = target
        self.slot = slot if slot is not None else AnswerSlot(client, target)
        self.flush_chars = flush_chars
        self.flush_interval = flush_interval
        self.update_interval = update_interval
        self.status = StatusLine(client, target.channel, target.thread_ts)
        self._private = PrivateDelivery(client, target, on_send=self.slot.posted_privately)
        self._stop_turn = stop_turn
        self._stop_button_after = stop_button_after
        self._stop_timer: asyncio.Task[None] | None = None
        self._stop_posting = False
        self._stop_ts: str | None = None
        self._settled = False
        self._answers: dict[str, AnswerStream] = {}
        self._current: AnswerStream | None = None
        self._messages: dict[str, list[str]] = {}  # component id -> posted ts
        self._quiet: set[str] = set()  # progress cards shown through the status line
        self._last_update: dict[str, float] = {}
        self._pending: dict[str, UiComponent] = {}
        self._held: dict[str, UiComponent] = {}  # data waiting for the answer's text
        self._answer_posted = False
        self._sources: SourcesComponent | None = None  # cited under the next final answer
        self._sources_text = ""
        self.answer_ts: str | None = None
        self.plan = SlackPlan(
            client, target, update_interval=update_interval, on_post=self._on_post
        )

    async def __aenter__(self) -> Self:
        delay = self._stop_button_after
        if self._stop_turn is not None and delay is not None and not self.target.private:
            self._stop_timer = asyncio.create_task(
                self._show_stop_later(self._stop_turn, delay), name="slack-stop-button"
            )
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    # --- the lifecycle ------------------------------------------------------------------------

    async def handle(self, component: UiComponent) -> None:
        """Show one component version (ignored once the stream was settled)."""
        if self._settled or self._took_sources(component):
            return
        await self._flush_pending(force=False)
        if self.target.private or (component.is_private and not self._private.inline):
            await self._private.deliver(component)
            return
        rich = component.rich_component
        match rich:
            case StatusBarUpdateComponent():
                if rich.status == "working":
                    await self.status.set(rich.message)
            case ToolStatusComponent():
                await self._tool_call(component, rich)
            case TaskTrackerUpdateComponent():
                await self._task(rich)
            case TaskListComponent() if rich.as_plan:
                await self.plan.update(rich)
            case StatusCardComponent() if await self._quiet_progress(rich):
                pass
            case RichTextComponent() if rich.markdown and component.audience == "everyone":
                await self._answer(rich)
            case ButtonGroupComponent() if await self._suggest(rich):
                pass
            case DataFrameComponent() | ChartComponent() if not self._answer_posted:
                self._held[rich.id] = component  # after the answer's text
            case _:
                await self._blocks(component)

    def _took_sources(self, component: UiComponent) -> bool:
        """Keep the answer's sources, cited under the answer once it is written."""
        rich = component.rich_component
        if not isinstance(rich, SourcesComponent) or component.is_private:
            return False
        self._sources = rich
        return True

    async def finish(self) -> None:
        """The turn answered: complete open answers, apply pending updates, remove the Stop
        message and the status line."""
        await self._close(note=None)

    async def settle(self, note: str) -> None:
        """The turn ended early (stopped, interrupted): open answers end with ``note``
        (``_(Stopped.)_``), then as ``finish``; later components are ignored."""
        self._settled = True
        await self._close(note=note)

    async def aclose(self) -> None:
        """Stop background sends: the Stop message's timer (and the message, if shown)."""
        await self._cancel_stop_timer()
        await self.plan.aclose()
        await self._remove_stop()

    async def _close(self, *, note: str | None) -> None:
        await self._cancel_stop_timer()
        await self.plan.close(stopped=note is not None)
        try:
            for answer in self._answers.values():
                if not answer.finished:
                    if note and answer.text:
                        await answer.append(closing_note(note))
                    await answer.finish()
            await self._release_held()
            await self._cite_alone()
            await self._flush_pending(force=True)
            await self._remove_stop()
            await self.status.clear()
        except SlackCallFailed as error:
            log.warning("slack: could not finish the reply (%s)", error.failure)

    # --- the Stop message ---------------------------------------------------------------------

    async def _show_stop_later(self, turn_id: str, delay: float) -> None:
        await asyncio.sleep(delay)
        self._stop_posting = True  # from here on, closing waits for the message's ts
        with contextlib.suppress(SlackCallFailed):
            self._stop_ts = await self._post(stop_message(turn_id))

    async def _cancel_stop_timer(self) -> None:
        timer, self._stop_timer = self._stop_timer, None
        if timer is None:
            return
        if not self._stop_posting:
            timer.cancel()
        await asyncio.gather(timer, return_exceptions=True)

    async def _remove_stop(self) -> None:
        stop_ts, self._stop_ts = self._stop_ts, None
        if stop_ts is not None:
            with contextlib.suppress(SlackCallFailed):
                await self._client.chat_delete(channel=self.target.channel, ts=stop_ts)

    # --- status and tasks ---------------------------------------------------------------------

    async def _quiet_progress(self, card: StatusCardComponent) -> bool:
        """Progress shows in the status line (True: shown there, or quietly done); only
        failures become messages."""
        if card.status in PROGRESS_STATUSES:
            quiet = card.id not in self._messages
        else:
            quiet = card.id in self._quiet and card.status in QUIET_WHEN_DONE
        if quiet:
            self._quiet.add(card.id)
            if card.status in PROGRESS_STATUSES:
                await self.status.set(f"is running {card.title}…")
        return quiet

    async def _tool_call(self, component: UiComponent, call: ToolStatusComponent) -> None:
        """A tool call: a step of the plan and, while it runs, the status line; a call that
        failed is also a message (a finished call is only ticked off)."""
        if call.failed:
            await self._blocks(component)
        await self.plan.update(call)
        if call.status == "in_progress":
            await self.status.set(f"is running {call.tool}…")

    async def _task(self, update: TaskTrackerUpdateComponent) -> None:
        """A step of the plan: the plan's message from the second step on, else the status
        line names the step running."""
        if await self.plan.update(update):
            return
        task = update.task
        if task is not None and (update.status or task.status) == "in_progress":
            await self.status.set(f"is running {task.title}…")

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
            on_post=self._on_answer_post,
            before_first_send=self.plan.pause,  # one stream at a time in the thread
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
            cited = self._cited()
            final = [feedback] if cited is None else [cited, feedback]
            self.answer_ts = await answer.finish(final) or self.answer_ts

    async def _cite_alone(self) -> None:
        """Sources not yet cited under an answer: a private answer's (after its text, to the
        asker alone), or those of an answer without text."""
        if self.target.private and self._sources is not None:
            sources, self._sources = self._sources, None
            await self._private.deliver(UiComponent.of(sources, sources.summary()))
        elif (cited := self._cited()) is not None:
            await self._post(SlackMessage(text=escape(self._sources_text), blocks=[cited]))

    def _cited(self) -> dict[str, object] | None:
        """The sources line for the answer being finished (once), with "Show query" where
        someone reading the thread may be allowed the SQL: never in the DM of an asker who
        may not see it (nobody else reads it)."""
        sources, self._sources = self._sources, None
        if sources is None or not sources.sources:
            return None
        self._sources_text = sources.summary()
        may_show = sources.queries_public or sources.asker_sees_queries or not self.target.is_dm
        return sources_block(sources, self.target.turn_id if may_show else None)

    async def _on_post(self, ts: str) -> None:
        self.status.replied()
        await self.slot.posted(ts)

    async def _on_answer_post(self, ts: str) -> None:
        await self._on_post(ts)
        await self._release_held()

    async def _release_held(self) -> None:
        """The answer's text is out (or the turn ended): post the tables and charts held."""
        self._answer_posted = True
        held, self._held = self._held, {}
        for component in held.values():
            await self._blocks(component)

    # --- suggested prompts ------------------------------------------------------------------

    async def _suggest(self, group: ButtonGroupComponent) -> bool:
        """Questions to suggest, in a DM (an assistant thread), go where Slack shows them;
        False when they are not that (or Slack refused), and they are shown as buttons."""
        prompts = suggested_prompts(group)
        if not self.target.is_dm or prompts is None or group.id in self._messages:
            return False
        try:
            await self._client.assistant_threads_setSuggestedPrompts(
                channel_id=self.target.channel,
                thread_ts=self.target.thread_ts,
                prompts=prompts,
                title="Try asking",
            )
        except SlackCallFailed as error:
            log.info("slack: suggested prompts refused (%s)", error.failure)
            return False
        return True

    # --- blocks ---------------------------------------------------------------------------------

    async def _blocks(self, component: UiComponent) -> None:
        rich = component.rich_component
        known = self._messages.get(rich.id)
        if rich.lifecycle is ComponentLifecycle.REMOVE or not rich.visible:
            self._pending.pop(rich.id, None)
            for ts in self._messages.pop(rich.id, []):
                with contextlib.suppress(SlackCallFailed):
                    await self._client.chat_delete(channel=self.target.channel, ts=ts)
            return
        if known is None:
            self._messages[rich.id] = [
                posted for message in render(component) if (posted := await self._post(message))
            ]
            self._last_update[rich.id] = time.monotonic()
            await self._posted_approval(rich, self._messages[rich.id])
            return
        self._pending[rich.id] = component
        await self._flush_pending(force=False)

    async def _posted_approval(self, rich: object, posted: list[str]) -> None:
        if not isinstance(rich, ApprovalComponent) or not posted or self._on_approval is None:
            return
        target = self.target
        where = {"platform": "slack", "team": target.team_id, "channel": target.channel}
        await self._on_approval(
            rich.approval_id, where | {"ts": posted[0], "thread_ts": target.thread_ts}
        )

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
            with contextlib.suppress(SlackCallFailed):
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
                    initial_comment=None if message.blocks else (message.text or None),
                )
            except SlackCallFailed as error:
                failure = error.failure
                log.warning("slack: could not upload %s (%s)", upload.filename, failure)
            else:
                self.status.replied()
        return ts
