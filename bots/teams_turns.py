"""``TeamsTurns``: turns run in background tasks after Teams got its HTTP answer.

A turn replies through the conversation reference saved from the activity, never through
the request, so Teams' ~15 s limit never triggers a redelivery. One turn at a time per
conversation and user, so quick successive questions are answered in order against a
consistent history. When the user presses Stop (or blocked the bot) the reply stream asks
for the turn to be cancelled; the agent then settles the conversation.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Coroutine, Mapping
from typing import Any, Protocol

from adapters.teams.activities import ConversationRef
from adapters.teams.connector import TeamsConnector
from adapters.teams.context import Wire, request_context, thread_key
from adapters.teams.files import FileOffers
from adapters.teams.reply import ReplyOptions, TeamsReplyStream
from agent_core.components import UiComponent
from agent_core.feedback import Feedback
from agent_core.users import RequestContext
from bots.teams_metrics import TeamsMetrics

logger = logging.getLogger(__name__)


class TeamsAgent(Protocol):
    """What the host needs from an agent (``agent_core.agent.Agent`` is one)::

        async for component in agent.send_message(context, text, conversation_id=key): ...
        await agent.record_feedback(context, feedback)
    """

    def send_message(
        self, request_context: RequestContext, message: str, *, conversation_id: str | None
    ) -> AsyncIterator[UiComponent]: ...

    async def record_feedback(
        self, request_context: RequestContext, feedback: Feedback
    ) -> None: ...


class TeamsTurns:
    """Starts, serialises, stops and drains the bot's turns.

    >>> from adapters.teams.reply import ReplyOptions
    >>> from bots.teams_metrics import TeamsMetrics
    >>> import asyncio
    >>> asyncio.run(TeamsTurns(agent=None, options=ReplyOptions(), metrics=TeamsMetrics()).idle())
    """

    def __init__(
        self,
        agent: TeamsAgent,
        options: ReplyOptions,
        metrics: TeamsMetrics,
        files: FileOffers | None = None,
    ) -> None:
        self._agent = agent
        self._options = options
        self._metrics = metrics
        self._files = files
        self._locks: dict[str, asyncio.Lock] = {}
        self._waiting: dict[str, int] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, activity: Wire, text: str, connector: TeamsConnector) -> asyncio.Task[None]:
        """Run a turn for ``activity`` in the background; returns its task."""
        return self.background(self._run(dict(activity), text, connector))

    def background(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run ``work`` as a tracked background task (drained on shutdown)."""
        task = asyncio.create_task(work, name="teams-turn")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _run(self, activity: Mapping[str, Any], text: str, connector: TeamsConnector) -> None:
        context = request_context(activity)
        key = thread_key(activity)
        name = f"{key}|{context.metadata.get('user_id')}"
        self._waiting[name] = self._waiting.get(name, 0) + 1
        lock = self._locks.setdefault(name, asyncio.Lock())
        try:
            async with lock:
                await self._answer(activity, context, key, text, connector)
        finally:
            self._waiting[name] -= 1
            if not self._waiting[name]:  # nobody queued behind: forget the lock
                del self._waiting[name]
                self._locks.pop(name, None)

    async def _answer(
        self,
        activity: Mapping[str, Any],
        context: RequestContext,
        key: str,
        text: str,
        connector: TeamsConnector,
    ) -> None:
        task = asyncio.current_task()
        stopped: list[str] = []

        def stop(reason: str) -> None:
            stopped.append(reason)
            if task is not None and task is not asyncio.current_task():
                task.cancel()  # from the stream's sender: interrupt the agent

        started = time.monotonic()
        self._metrics.active_turns.inc()
        outcome = "completed"
        try:
            ref = ConversationRef.from_activity(activity)
            async with TeamsReplyStream(
                connector, ref, options=self._options, on_stop=stop, files=self._files
            ) as reply:
                async for component in self._agent.send_message(context, text, conversation_id=key):
                    await reply.handle(component)
                await reply.finish()
        except asyncio.CancelledError:
            if not stopped:
                outcome = "cancelled"
                raise
            if task is not None:
                task.uncancel()
            outcome = "stopped"
        except Exception:
            outcome = "failed"
            logger.exception("teams turn in %s failed", key)
        finally:
            self._metrics.active_turns.dec()
            self._metrics.turns.labels(outcome=outcome).inc()
            self._metrics.turn_seconds.observe(time.monotonic() - started)

    async def idle(self) -> None:
        """Wait until no turn is running (tests, graceful shutdown)."""
        while self._tasks:
            await asyncio.gather(*set(self._tasks), return_exceptions=True)

    async def drain(self, timeout: float = 10.0) -> None:
        """Let running turns finish (shutdown); cancel what is left after ``timeout``."""
        if not self._tasks:
            return
        _, pending = await asyncio.wait(set(self._tasks), timeout=timeout)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
