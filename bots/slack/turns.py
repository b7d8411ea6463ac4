"""Durable turns of the Slack bot: what a listener records, and the worker that answers it.

A listener (``bots.slack.bot``) turns a verified delivery into a ``QueuedTurn`` and
``state.turns.enqueue``-s it before Slack gets its ack. ``SlackTurns.answer`` runs it on
whichever process's worker picks it up; the queue keeps the turns of one thread in order:

    QueuedTurn -> RequestContext + the workspace's Web API client -> agent.send_message
               -> ReplyStream (every message it posts is recorded on the turn at once)

- **Re-run after a crash** (``turn.attempt > 1``): a run that had finished (only its
  completion was lost) is not repeated; otherwise what the dead run posted is deleted, then
  the question is answered again, so the thread ends with one answer. A private answer
  (ephemeral messages cannot be deleted) is not repeated: the asker is told plainly that
  it was interrupted. After ``max_attempts`` runs, ``give_up`` tells the user the same.
- **Stop**: the button carries the turn id; ``request_stop`` cancels the handler on
  whichever process runs it. The reply is settled ("stopped") and the turn completes.
  Any other cancellation (a shutdown that outlasted its drain, a lost lease) also settles
  the reply, then propagates, so the turn stays pending and is run again elsewhere.
- **Shutdown** (``stop``): no new turns are taken; the ones this process holds finish and
  complete first (``DrainingTurnQueue``), so a rolling restart re-runs nothing.

The payload (``QueuedTurn``) and the notices live in ``bots.slack.queued``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from pydantic import ValidationError
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from adapters.slack.context import conversation_id
from adapters.slack.history import fetch_thread, thread_prompt
from adapters.slack.markdown import escape_mrkdwn, truncate
from adapters.slack.stream import ReplyStream
from adapters.slack.threads import ThreadMembership
from agent_core.agent import Agent
from agent_core.errors import AgentError, StateUnavailableError
from agent_core.state.draining import DrainingTurnQueue
from agent_core.state.turns import Turn, TurnQueue
from agent_core.users import RequestContext
from bots.slack.metrics import SlackMetrics
from bots.slack.queued import (
    INTERRUPTED,
    QueuedTurn,
    TurnRequest,
    reply_target,
    tell,
)

log = logging.getLogger(__name__)

ClientFor = Callable[[str, str | None, bool], Awaitable[AsyncWebClient]]
"""``(team_id, enterprise_id, enterprise_install) -> client`` of that workspace."""


class _Progress:
    """Records on the turn what this run posts, as it posts it (a re-run reads it)."""

    def __init__(self, turn: Turn) -> None:
        self.turn = turn
        self.posted: list[str] = []
        self.private_sent = False

    async def post(self, ts: str) -> None:
        self.posted.append(ts)
        await self._record(reply_ts=self.posted[0], posted=list(self.posted))

    async def private(self) -> None:
        if not self.private_sent:
            self.private_sent = True
            await self._record(private_sent=True)

    async def answered(self) -> None:
        await self._record(answered=True)

    async def _record(self, **progress: Any) -> None:
        try:
            await self.turn.record(**progress)
        except StateUnavailableError as error:  # keep answering; a re-run may repeat a post
            log.warning("slack: could not record progress of turn %s (%s)", self.turn.id, error)


class SlackTurns:
    """The worker side of the Slack bot's turns; see the module docstring.

    >>> from agent_core import (Agent, InMemoryAgentMemory, ScriptedLlmService,
    ...                         StaticUserResolver, ToolRegistry, User)
    >>> from agent_core.state import MemoryKeyValueStore, MemoryTurnQueue
    >>> agent = Agent(llm_service=ScriptedLlmService(["hi"]), tool_registry=ToolRegistry(),
    ...               user_resolver=StaticUserResolver(User(id="u")),
    ...               agent_memory=InMemoryAgentMemory())
    >>> async def client_for(team, enterprise, org): return AsyncWebClient()
    >>> turns = SlackTurns(agent, MemoryTurnQueue(), client_for,
    ...                    ThreadMembership(MemoryKeyValueStore()), metrics=SlackMetrics())
    >>> turns.running
    0
    """

    def __init__(
        self,
        agent: Agent,
        queue: TurnQueue,
        client_for: ClientFor,
        threads: ThreadMembership,
        *,
        metrics: SlackMetrics,
        concurrency: int = 64,
        stop_button_after: float = 3.0,
        flush_chars: int = 1000,
        flush_interval: float = 1.0,
    ) -> None:
        self.agent = agent
        self.queue = queue
        self.client_for = client_for
        self.threads = threads
        self.metrics = metrics
        self.concurrency = concurrency
        self.stop_button_after = stop_button_after
        self.flush_chars = flush_chars
        self.flush_interval = flush_interval
        self._running = 0
        self._finished = asyncio.Event()
        self._worker: asyncio.Task[None] | None = None
        self._intake: DrainingTurnQueue | None = None

    # --- the worker ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start answering queued turns in this process (call in the event loop)."""
        if self._worker is None or self._worker.done():
            self._intake = DrainingTurnQueue(self.queue)
            self._worker = asyncio.create_task(
                self._intake.run(self.answer, concurrency=self.concurrency, give_up=self.give_up),
                name="slack-turn-worker",
            )

    async def stop(self, *, timeout: float = 30.0) -> None:
        """Take no new turns, finish (and complete) the ones this process holds, up to
        ``timeout``; then stop working. Turns still running then are settled as stopped
        and stay queued: another process (or the next start) runs them again."""
        if self._intake is not None:
            await self._intake.drain(timeout=timeout)
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.cancel()
            await asyncio.gather(worker, return_exceptions=True)

    @property
    def running(self) -> int:
        """Turns this process is answering now."""
        return self._running

    async def wait_idle(self, *, timeout: float = 30.0) -> None:
        """Until no turn is queued or running anywhere (tests, benchmarks, shutdown)."""
        deadline = time.monotonic() + timeout
        while self._running or await self.queue.pending():
            if time.monotonic() > deadline:
                raise TimeoutError("turns still running")
            self._finished.clear()
            with contextlib.suppress(TimeoutError):  # local ends wake at once; remote ones poll
                await asyncio.wait_for(self._finished.wait(), 0.01)

    # --- one turn -----------------------------------------------------------------------------

    async def answer(self, turn: Turn) -> None:
        """The queue's handler: answer one accepted message (see the module docstring)."""
        prepared = await self._open(turn)
        if prepared is None:
            return
        queued, client = prepared
        if turn.progress.get("answered"):
            return  # an earlier run finished; only the turn's completion was lost
        if turn.is_retry and not await self._recover(turn, queued, client):
            return
        request = await self._request(turn, queued, client)
        if request is not None:
            await self._serve(turn, request)

    async def give_up(self, turn: Turn) -> None:
        """The turn failed ``max_attempts`` times: tidy up and tell the asker plainly."""
        prepared = await self._open(turn)
        if prepared is None or turn.progress.get("gave_up"):
            return
        queued, client = prepared
        await self._retract(turn, queued, client)
        await tell(client, reply_target(queued, turn.progress.get("thread_ts")), INTERRUPTED)
        with contextlib.suppress(StateUnavailableError):
            await turn.record(gave_up=True)
        self.metrics.turns.labels(outcome="interrupted").inc()

    async def _open(self, turn: Turn) -> tuple[QueuedTurn, AsyncWebClient] | None:
        try:
            queued = QueuedTurn.model_validate(turn.payload)
        except ValidationError:
            log.error("slack: dropped turn %s with an unreadable payload", turn.id)
            return None
        try:
            client = await self.client_for(
                queued.team, queued.context.get("enterprise_id"), queued.enterprise_install
            )
        except AgentError as error:
            log.info("slack: dropped turn %s of workspace %s (%s)", turn.id, queued.team, error)
            return None
        return queued, client

    async def _recover(self, turn: Turn, queued: QueuedTurn, client: AsyncWebClient) -> bool:
        """A re-run: True to answer again (after deleting what the dead run posted)."""
        log.warning("slack: turn %s is run again (attempt %d)", turn.id, turn.attempt)
        if queued.private and turn.progress.get("private_sent"):
            await tell(client, reply_target(queued, None), INTERRUPTED)
            self.metrics.turns.labels(outcome="interrupted").inc()
            return False
        await self._retract(turn, queued, client)
        return True

    @staticmethod
    async def _retract(turn: Turn, queued: QueuedTurn, client: AsyncWebClient) -> None:
        channel = str(queued.context["channel_id"])
        for ts in turn.progress.get("posted") or []:
            with contextlib.suppress(SlackApiError):
                await client.chat_delete(channel=channel, ts=str(ts))

    async def _request(
        self, turn: Turn, queued: QueuedTurn, client: AsyncWebClient
    ) -> TurnRequest | None:
        meta = dict(queued.context)
        if queued.open_thread:
            thread_ts = turn.progress.get("thread_ts") or await self._open_thread(
                turn, queued, client
            )
            if thread_ts is None:
                return None
            meta["thread_id"] = thread_ts
            await self.threads.join(queued.team, str(meta["channel_id"]), thread_ts)
        meta["turn_id"] = turn.id
        context = RequestContext(metadata=meta)
        return TurnRequest(
            context=context,
            text=queued.text,
            target=replace(reply_target(queued, str(meta["thread_id"])), turn_id=turn.id),
            client=client,
            conversation_id=conversation_id(context),
            history_before_ts=queued.history_before_ts,
            bot_user_id=queued.bot_user_id,
        )

    async def _open_thread(
        self, turn: Turn, queued: QueuedTurn, client: AsyncWebClient
    ) -> str | None:
        """Post "<@user> asked: ..." for a public slash command; its ts is the thread."""
        channel = str(queued.context["channel_id"])
        opener = f"<@{queued.user}> asked: {escape_mrkdwn(truncate(queued.text, 2900))}"
        try:
            posted = await client.chat_postMessage(channel=channel, text=opener)
        except SlackApiError as error:
            log.info("slack: cannot post in %s (%s)", channel, error.response.get("error"))
            command = queued.context.get("command") or "/ask"
            if queued.response_url:
                await AsyncWebhookClient(queued.response_url).send(
                    response_type="ephemeral",
                    text="I can't post in this conversation. Invite me with `/invite`, or ask "
                    f"privately: `{command} private {queued.text}`",
                )
            return None
        thread_ts = str(posted["ts"])
        with contextlib.suppress(StateUnavailableError):
            await turn.record(thread_ts=thread_ts)
        return thread_ts

    async def _serve(self, turn: Turn, request: TurnRequest) -> None:
        started = time.monotonic()
        self._running += 1
        self.metrics.active_turns.inc()
        outcome = "failed"
        try:
            outcome = await self._answer(turn, request)
        except asyncio.CancelledError:
            outcome = "stopped"
            raise
        finally:
            self._running -= 1
            self._finished.set()
            self.metrics.active_turns.dec()
            self.metrics.turn_seconds.observe(time.monotonic() - started)
            self.metrics.turns.labels(outcome=outcome).inc()

    async def _answer(self, turn: Turn, request: TurnRequest) -> str:
        progress = _Progress(turn)
        reply = ReplyStream(
            request.client,
            request.target,
            flush_chars=self.flush_chars,
            flush_interval=self.flush_interval,
            on_post=progress.post,
            on_private=progress.private,
        )
        stop_timer = asyncio.create_task(self._show_stop_later(reply, turn.id))
        outcome = "completed"
        try:
            text = await self._question(request)
            async for component in self.agent.send_message(
                request.context, text, conversation_id=request.conversation_id
            ):
                await reply.handle(component)
        except asyncio.CancelledError:
            outcome = "stopped"
        except Exception:
            outcome = "failed"
            log.exception("slack: turn %s failed while replying", turn.id)
        finally:
            stop_timer.cancel()
            await asyncio.gather(stop_timer, return_exceptions=True)
        await self._close(reply, stopped=outcome == "stopped")
        if outcome == "stopped":
            raise asyncio.CancelledError  # settled: the worker completes a Stop, keeps the rest
        await progress.answered()
        return outcome

    async def _question(self, request: TurnRequest) -> str:
        if request.history_before_ts is None:
            return request.text
        target = request.target
        history = await fetch_thread(
            request.client,
            channel=target.channel,
            thread_ts=target.thread_ts,
            before_ts=request.history_before_ts,
        )
        return thread_prompt(history, request.text, bot_user_id=request.bot_user_id)

    async def _show_stop_later(self, reply: ReplyStream, turn_id: str) -> None:
        await asyncio.sleep(self.stop_button_after)
        with contextlib.suppress(SlackApiError):
            await reply.show_stop(turn_id)

    @staticmethod
    async def _close(reply: ReplyStream, *, stopped: bool) -> None:
        try:
            await reply.close(stopped=stopped)
        except SlackApiError as error:
            log.warning("slack: could not finish the reply (%s)", error.response.get("error"))
