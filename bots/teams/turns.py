"""``TeamsTurns``: Teams turns through the durable turn queue, answered by any process.

Ingress *accepts* a message: ``accept`` records it (with its delivery key, so a redelivered
activity is dropped atomically) before Teams gets its ``201``. Each process runs a worker
(``TurnQueue.run``) that answers turns through the conversation reference saved in the turn,
with a connector that needs no inbound request (``bots.teams.outbound``), through the
adapter's reply stream and answer slot (``adapters.teams.stream`` / ``slot``). Turns of one
conversation and asker run one at a time, in order, whichever process picks them up.

The lifecycle (the same as ``bots.slack.turns``): ``start()`` the worker, ``accept(...)`` turns,
``request_stop(turn_id, by=)``, ``idle()`` (tests) and ``drain(timeout=)`` (shutdown); the
worker calls ``_answer(turn)``, and ``_give_up(turn)`` when a turn's runs kept dying.

Crash safety: the message that carries the answer is recorded on the turn as soon as it is
posted (``AnswerSlot``). When a process dies mid-turn, another takes the turn over and
answers *into that message* (the stream is closed with the answer, a card is updated), so
nothing is posted twice; after ``max_attempts`` runs the user is told plainly that the
answer was interrupted (``adapters.notices.INTERRUPTED``). ``answered`` is recorded last, so
a run whose only loss was the queue's completion does nothing again.

State outage mid-turn: a message posted while Redis was down could not be recorded; it is
kept in this process and recorded as soon as Redis is back (``bots.outage``), so the run
that follows answers into it (the partial answer or the notice) instead of beside it.

Stop: Teams' own Stop on a stream (403) ends the turn on the process streaming it; the Stop
button of a group chat's progress card reaches any process and goes through
``request_stop`` to the process running the turn (only the asker's click is honoured).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any

from adapters.fetch import Fetcher, FetchPolicy
from adapters.files import SharedFile
from adapters.notices import INTERRUPTED, STOPPED
from adapters.stream import ReplyStream
from adapters.teams.activities import ConversationRef
from adapters.teams.connector import TeamsConnector
from adapters.teams.context import (
    Wire,
    asker_id,
    conversation_id,
    delivery_key,
    request_context,
    thread_key,
    turn_key,
)
from adapters.teams.files import FileOffers, download, shared_files
from adapters.teams.slot import AnswerSlot, PostedMessage
from adapters.teams.stream import ReplyOptions, TeamsReplyStream
from agent_core.errors import StateUnavailableError
from agent_core.state.draining import DrainingTurnQueue
from agent_core.state.turns import Turn, TurnQueue
from agent_core.tools.files import file_scope
from bots.agents import ServedAgent
from bots.files import SharedFiles, take_files
from bots.outage import Unrecorded
from bots.teams.metrics import TeamsMetrics
from bots.teams.outbound import Outbound

logger = logging.getLogger(__name__)


class TeamsTurns:
    """Accepts turns into ``queue`` and answers them on this process's worker.

    >>> from agent_core.state import MemoryTurnQueue
    >>> import asyncio
    >>> turns = TeamsTurns(None, queue=MemoryTurnQueue(), outbound=None,  # type: ignore[arg-type]
    ...                    options=ReplyOptions(), metrics=TeamsMetrics())
    >>> asyncio.run(turns.idle())
    """

    def __init__(
        self,
        agent: ServedAgent,
        *,
        queue: TurnQueue,
        outbound: Outbound,
        options: ReplyOptions,
        metrics: TeamsMetrics,
        files: FileOffers | None = None,
        shared_files: SharedFiles | None = None,
        concurrency: int = 32,
        max_attempts: int = 3,
        dedupe_ttl: float = 3600.0,
        stop_button_after: float | None = 3.0,
    ) -> None:
        self._agent = agent
        self._queue = queue
        self._worker_queue = DrainingTurnQueue(queue)
        self._outbound = outbound
        self._options = options
        self._metrics = metrics
        self._files = files
        self._shared_files = shared_files
        self._concurrency = concurrency
        self._max_attempts = max_attempts
        self._dedupe_ttl = dedupe_ttl
        self._stop_button_after = stop_button_after
        self._worker: asyncio.Task[None] | None = None
        self._closing = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._unrecorded: Unrecorded[PostedMessage] = Unrecorded(
            within=lambda: 60 * self._queue.claim_after, what="teams"
        )
        """Messages of turns the state could not record (an outage), by turn id."""
        self._accepted = self._finished = self._running = 0
        self._changed = asyncio.Event()

    # ------------------------------------------------------------------ ingress

    async def accept(self, activity: Wire, text: str) -> str | None:
        """Record a turn for ``activity`` (before Teams is answered): its id, or None for a
        redelivered activity. Raises ``StateUnavailableError`` while the state is down."""
        turn_id = await self._queue.enqueue(
            turn_key(activity),
            {"activity": dict(activity), "text": text},
            dedupe_key=delivery_key(activity),
            dedupe_ttl=self._dedupe_ttl,
            owner=asker_id(activity) or None,
        )
        if turn_id is None:
            self._metrics.duplicates.inc()
            logger.info("dropped a redelivered activity %s", activity.get("id"))
        else:
            self._accepted += 1
        return turn_id

    async def request_stop(self, turn_id: str, *, by: str) -> None:
        """Stop a running turn on whichever process runs it (if ``by`` asked it)."""
        await self._queue.request_stop(turn_id, by=by)

    def background(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run ``work`` as a tracked background task (drained on shutdown)."""
        task = asyncio.create_task(work, name="teams-background")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # ------------------------------------------------------------------ worker

    def start(self) -> None:
        """Start this process's worker (at application startup)."""
        if self._worker is None:
            self._worker = asyncio.create_task(
                self._worker_queue.run(
                    self._answer,
                    concurrency=self._concurrency,
                    max_attempts=self._max_attempts,
                    give_up=self._give_up,
                ),
                name="teams-turn-worker",
            )

    async def _answer(self, turn: Turn) -> None:
        if turn.progress.get("answered"):
            return  # an earlier run answered; only the queue's completion was lost
        await self._run(turn, self._reply)

    async def _give_up(self, turn: Turn) -> None:
        """The turn's runs kept dying: say so, in place of what they posted."""
        if not turn.progress.get("answered"):
            await self._run(turn, self._interrupted)

    async def _run(self, turn: Turn, body: Callable[[Turn], Awaitable[str]]) -> None:
        """Run ``body`` for ``turn`` with its metrics; then note it answered."""
        self._running += 1
        self._metrics.active_turns.inc()
        outcome = "failed"
        try:
            outcome = await body(turn)
        except asyncio.CancelledError:
            outcome = "cancelled"
            raise
        finally:
            self._metrics.active_turns.dec()
            self._metrics.turns.labels(outcome=outcome).inc()
            self._metrics.turn_seconds.observe(max(0.0, time.time() - turn.enqueued_at))
            self._running -= 1
            self._finished += 1
            self._changed.set()
        await _record(turn, at_end=True, answered=True)

    async def _slot(self, turn: Turn, ref: ConversationRef) -> tuple[TeamsConnector, AnswerSlot]:
        """The connector for the turn's conversation, and the slot its answer goes into
        (what an earlier run posted, if any)."""
        connector = await self._outbound.connector(ref.service_url)
        try:
            await self._outbound.remember(ref)
        except StateUnavailableError as error:
            logger.warning("conversation reference not saved: %s", error)

        async def posted(message: PostedMessage) -> None:
            await turn.record(**message.as_progress())

        previous = self._unrecorded.get(turn.id) or PostedMessage.from_progress(turn.progress)
        return connector, AnswerSlot(connector, ref, posted=previous, on_posted=posted)

    async def _reply(self, turn: Turn) -> str:
        activity: Mapping[str, Any] = turn.payload["activity"]
        text = str(turn.payload.get("text") or "")
        ref = ConversationRef.from_activity(activity)
        connector, slot = await self._slot(turn, ref)
        if turn.is_retry:
            logger.warning(
                "turn %s runs again (attempt %d) after its process stopped; answering in %s",
                turn.id,
                turn.attempt,
                "place" if slot.current else "a new message",
            )
        me = asyncio.current_task()
        stopped: list[str] = []

        def stopped_by_teams(reason: str) -> None:  # Stop on the stream, or the bot blocked
            stopped.append(reason)
            if me is not None and me is not asyncio.current_task():
                me.cancel()  # from the stream's sender: interrupt the agent

        async with TeamsReplyStream(
            connector,
            ref,
            options=self._options,
            on_stop=stopped_by_teams,
            files=self._files,
            slot=slot,
            stop_turn=turn.id,
            stop_button_after=self._stop_button_after,
        ) as reply:
            try:
                await self._talk(reply, activity, text, turn.id)
            except asyncio.CancelledError:
                return await self._cancelled(reply, by_teams=bool(stopped))
            except Exception:
                logger.exception("teams turn %s in %s failed", turn.id, thread_key(activity))
                return "failed"
            finally:
                self._unrecorded.keep(turn.id, slot)
            await reply.finish()
        if slot.current is not None:
            await self._remember_answer(ref, slot.current.id, turn.id)
        return "completed"

    async def _talk(
        self, reply: ReplyStream, activity: Mapping[str, Any], text: str, turn_id: str
    ) -> None:
        context = request_context(activity)
        context.metadata["turn_id"] = turn_id
        if files := shared_files(activity):
            text = await self._with_files(reply, files, context.metadata, text)
        key = conversation_id(context)
        async for component in self._agent.send_message(context, text, conversation_id=key):
            await reply.handle(component)

    async def _with_files(
        self, reply: ReplyStream, files: list[SharedFile], metadata: Mapping[str, Any], text: str
    ) -> str:
        """Load the files sent with the message into the asker's tables (telling the asker
        what could not be read); the question, with what the files became."""
        store = self._shared_files
        limit = store.max_bytes if store is not None else 0
        policy = store.policy if store is not None else FetchPolicy()

        async def fetch(file: SharedFile) -> bytes:
            async with Fetcher(policy) as fetcher:
                return await download(fetcher, file, max_bytes=limit)

        taken = await take_files(
            store,
            files,
            asker=str(metadata.get("user_id") or ""),
            scope=file_scope(metadata),
            fetch=fetch,
        )
        if (notice := taken.notice()) is not None:
            await reply.handle(notice)
        return taken.question(text)

    async def _remember_answer(self, ref: ConversationRef, message_id: str, turn_id: str) -> None:
        try:
            await self._outbound.remember_answer(ref, message_id, turn_id)
        except StateUnavailableError as error:  # feedback on it then rates no memories
            logger.warning("could not note the answer of turn %s: %s", turn_id, error)

    async def _cancelled(self, reply: ReplyStream, *, by_teams: bool) -> str:
        """The answer was cancelled: by Teams' Stop (the stream shows it), by the asker's
        Stop button (relayed by ``request_stop``: say so in place), or by a shutdown (the
        turn stays queued for another run, which answers into what was posted)."""
        me = asyncio.current_task()
        if self._closing and not by_teams:
            raise asyncio.CancelledError
        if me is not None:
            me.uncancel()
        if not by_teams:
            await reply.settle(STOPPED)
        return "stopped"

    async def _interrupted(self, turn: Turn) -> str:
        ref = ConversationRef.from_activity(turn.payload["activity"])
        _, slot = await self._slot(turn, ref)
        await slot.settle(INTERRUPTED)
        return "interrupted"

    # ------------------------------------------------------------------ lifecycle

    def _settled(self) -> bool:
        return not self._tasks and not self._running and self._finished >= self._accepted

    async def idle(self) -> None:
        """Wait until every turn this process accepted was answered and no background work
        is left (tests, benchmarks)."""
        while True:
            if self._tasks:
                await asyncio.gather(*set(self._tasks), return_exceptions=True)
                continue
            if self._settled():
                return
            self._changed.clear()
            await self._changed.wait()

    async def drain(self, timeout: float = 10.0) -> None:
        """Shutdown: take no new turns and let the ones taken finish (and be completed) for
        up to ``timeout`` seconds, then stop the worker. A turn still running then stays in
        the queue for another process (or the next start), which answers into what it
        posted."""
        deadline = asyncio.get_running_loop().time() + timeout
        if not await self._worker_queue.drain(timeout=timeout):
            logger.warning("stopping with %d turns still running", self._running)
        if self._tasks:
            remaining = max(0.0, deadline - asyncio.get_running_loop().time())
            await asyncio.wait(set(self._tasks), timeout=remaining)
        self._closing = True
        self._unrecorded.cancel()
        worker, self._worker = self._worker, None
        pending = [*self._tasks, *([worker] if worker else [])]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)


async def _record(turn: Turn, *, at_end: bool = False, **progress: Any) -> None:
    try:
        await (turn.record_at_end if at_end else turn.record)(**progress)
    except StateUnavailableError as error:  # at worst the turn is answered again in place
        logger.warning("could not record turn %s progress: %s", turn.id, error)
