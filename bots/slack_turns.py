"""``TurnManager``: turns run in background tasks after Slack got its ack.

One turn at a time per conversation (thread x user), so two quick messages in one thread
are answered in order against a consistent history. The Stop button cancels the task; the
agent then settles the conversation and the reply says the answer was stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.history import fetch_thread, thread_prompt
from adapters.slack.reply import ReplyStream, ReplyTarget
from agent_core.agent import Agent
from agent_core.users import RequestContext
from bots.slack_metrics import SlackMetrics

log = logging.getLogger(__name__)


@dataclass
class TurnRequest:
    """One question to answer: who asked (signed context), what, and where to answer.

    >>> from adapters.slack.context import event_context
    >>> event = {"user": "U1", "channel": "C1", "ts": "1.0"}
    >>> ctx = event_context({"team_id": "T1", "event": event})
    >>> target = ReplyTarget("C1", "1.0", "T1", "U1")
    >>> TurnRequest(ctx, "hi", target, AsyncWebClient(), "slack:T1:C1:1.0").text
    'hi'
    """

    context: RequestContext
    text: str
    target: ReplyTarget
    client: AsyncWebClient
    conversation_id: str
    history_before_ts: str | None = None
    """Set on a first mention inside a human thread: read the thread up to this message."""
    bot_user_id: str | None = None


Prepare = Callable[[], Awaitable[TurnRequest | None]]


def _ready(request: TurnRequest) -> Prepare:
    async def prepare() -> TurnRequest:
        return request

    return prepare


@dataclass
class _Running:
    task: asyncio.Task[None]
    user_id: str
    stopping: bool = False


class TurnManager:
    """Starts, serialises and stops turns; see the module docstring.

    >>> from agent_core import (Agent, InMemoryAgentMemory, ScriptedLlmService,
    ...                         StaticUserResolver, ToolRegistry, User)
    >>> agent = Agent(llm_service=ScriptedLlmService(["hi"]), tool_registry=ToolRegistry(),
    ...               user_resolver=StaticUserResolver(User(id="u")),
    ...               agent_memory=InMemoryAgentMemory())
    >>> TurnManager(agent, metrics=SlackMetrics()).running
    0
    """

    def __init__(
        self,
        agent: Agent,
        *,
        metrics: SlackMetrics,
        stop_button_after: float = 3.0,
        flush_chars: int = 1000,
        flush_interval: float = 1.0,
    ) -> None:
        self.agent = agent
        self.metrics = metrics
        self.stop_button_after = stop_button_after
        self.flush_chars = flush_chars
        self.flush_interval = flush_interval
        self._running: dict[str, _Running] = {}
        self._ids = itertools.count(1)
        self._id_prefix = os.urandom(6).hex() + "-"  # ids of this process only
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    def start(self, request: TurnRequest | Prepare, *, user_id: str | None = None) -> str:
        """Run a turn in the background; returns the turn id the Stop button carries.

        ``request`` may be a coroutine function that prepares the request inside the turn
        (posting a slash command's opening message, say) and returns ``None`` to give up.
        """
        turn_id = f"{self._id_prefix}{next(self._ids)}"
        if isinstance(request, TurnRequest):
            user_id, prepare = request.target.user_id, _ready(request)
        else:
            prepare = request
        if user_id is None:
            raise ValueError("user_id is required with a prepare function")
        task = asyncio.create_task(self._run(turn_id, prepare), name=f"slack-turn-{turn_id}")
        self._running[turn_id] = _Running(task, user_id)
        return turn_id

    def stop(self, turn_id: str, user_id: str) -> bool:
        """Cancel a running turn; only the person who asked may stop it."""
        running = self._running.get(turn_id)
        if running is None or running.user_id != user_id:
            return False
        if not running.stopping:  # a second click must not interrupt the tidy-up
            running.stopping = True
            running.task.cancel()
        return True

    async def stop_all(self) -> None:
        """Stop every running turn (shutdown) and wait until they have settled."""
        tasks = [r.task for r in self._running.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    @property
    def running(self) -> int:
        return len(self._running)

    async def wait_idle(self, timeout: float | None = None) -> None:
        """Wait for every running turn (shutdown, tests, benchmarks)."""
        while self._running:
            tasks = [r.task for r in self._running.values()]
            await asyncio.wait(tasks, timeout=timeout)
            if timeout is not None:
                return

    @contextlib.asynccontextmanager
    async def _serialised(self, key: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(key) or (asyncio.Lock(), 0)
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users <= 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)

    async def _run(self, turn_id: str, prepare: Prepare) -> None:
        try:
            request = await prepare()
            if request is not None:
                await self._serve(turn_id, request)
        finally:
            self._running.pop(turn_id, None)

    async def _serve(self, turn_id: str, request: TurnRequest) -> None:
        key = f"{request.conversation_id}:{request.target.user_id}"
        async with self._serialised(key):
            started = time.monotonic()
            self.metrics.active_turns.inc()
            try:
                outcome = await self._answer(turn_id, request)
            finally:
                self.metrics.active_turns.dec()
                self.metrics.turn_seconds.observe(time.monotonic() - started)
            self.metrics.turns.labels(outcome=outcome).inc()

    async def _answer(self, turn_id: str, request: TurnRequest) -> str:
        reply = ReplyStream(
            request.client,
            request.target,
            flush_chars=self.flush_chars,
            flush_interval=self.flush_interval,
        )
        stop_timer = asyncio.create_task(self._show_stop_later(reply, turn_id))
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
            log.exception("slack: turn %s failed while replying", turn_id)
        finally:
            stop_timer.cancel()
            await asyncio.gather(stop_timer, return_exceptions=True)
        await self._close(reply, stopped=outcome == "stopped")
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
