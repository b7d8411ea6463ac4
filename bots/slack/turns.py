"""Durable turns of the Slack bot: what a listener records, and the worker that answers it.

A listener (``bots.slack.bot``) turns a verified delivery into a ``QueuedTurn`` and
``accept``-s it (``state.turns.enqueue``) before Slack gets its ack. ``_answer`` runs it on
whichever process's worker picks it up; the queue keeps the turns of one thread in order:

    QueuedTurn -> AnswerSlot (what an earlier run posted) -> RequestContext
               -> agent.send_message -> SlackReplyStream (each message it posts is recorded
                  on the turn at once, through the slot)

- **Re-run after a crash** (``turn.attempt > 1``): a run that had finished (only its
  completion was lost) is not repeated; otherwise the slot deletes what the dead run posted,
  then the question is answered again, so the thread ends with one answer. A private answer
  (ephemeral messages cannot be deleted) is not repeated: the asker is told plainly that
  it was interrupted. After ``max_attempts`` runs, ``_give_up`` tells the user the same.
- **Stop**: the button carries the turn id; ``request_stop`` cancels the handler on
  whichever process runs it. The reply is settled ("Stopped.") and the turn completes.
  Any other cancellation (a shutdown that outlasted its drain, a lost lease) also settles
  the reply, then propagates, so the turn stays pending and is run again elsewhere.
- **Shutdown** (``drain``): no new turns are taken; the ones this process holds finish and
  complete first (``DrainingTurnQueue``), so a rolling restart re-runs nothing.
- **State outage mid-turn**: what the turn posted while Redis was down could not be recorded;
  it is kept in this process and recorded as soon as Redis is back (``bots.outage``), so the
  re-run that follows takes back the partial answer and the notice, on any process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Coroutine
from typing import Any

from pydantic import BaseModel, ValidationError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.fetch import FetchPolicy
from adapters.files import SharedFile
from adapters.notices import INTERRUPTED, STOPPED
from adapters.slack.context import (
    ReplyTarget,
    asker_id,
    conversation_id,
    reply_target,
    turn_key,
)
from adapters.slack.files import download
from adapters.slack.history import ThreadContext, ThreadView, thread_prompt
from adapters.slack.slot import AnswerSlot, PostedMessages
from adapters.slack.sources import QueryRecords
from adapters.slack.stream import SlackReplyStream
from adapters.slack.threads import ThreadMembership
from agent_core.components import NotificationComponent, SourcesComponent, UiComponent
from agent_core.errors import AgentError, StateUnavailableError
from agent_core.state.draining import DrainingTurnQueue
from agent_core.state.keyvalue import Flag
from agent_core.state.turns import Turn, TurnQueue
from agent_core.tools.files import file_scope
from agent_core.users import RequestContext
from bots.agents import ServedAgent
from bots.files import SharedFiles, take_files
from bots.outage import Unrecorded
from bots.slack.clients import WorkspaceClients
from bots.slack.metrics import SlackMetrics

log = logging.getLogger(__name__)


class QueuedTurn(BaseModel):
    """What a listener records before the ack: enough to answer on any process.

    ``context`` is the ``RequestContext`` metadata built from the *signed* request;
    ``open_thread`` marks a public slash command, whose worker first posts
    "<@user> asked: ..." and answers in that message's thread.

    >>> turn = QueuedTurn(context={"workspace_id": "T1", "channel_id": "C1",
    ...                            "thread_id": "1.0", "user_id": "U1"}, text="hi")
    >>> turn.owner, turn.turn_key
    ('T1:U1', 'slack:T1:C1:1.0')
    """

    context: dict[str, Any]
    text: str
    private: bool = False
    response_url: str | None = None
    open_thread: bool = False
    history_before_ts: str | None = None
    """Set on a first mention inside a human thread: read the thread up to this message."""
    message_ts: str | None = None
    """The message's ``ts`` when it replies in a channel thread: the turn is given what the
    thread said before it that its conversation lacks."""
    bot_user_id: str | None = None
    enterprise_install: bool = False
    files: list[SharedFile] = []
    """The files shared with the message (read from the signed event; downloaded by the
    worker)."""

    @property
    def team(self) -> str:
        return str(self.context["workspace_id"])

    @property
    def owner(self) -> str:
        """Who may stop the turn (``request_stop(by=...)``)."""
        return asker_id(RequestContext(metadata=self.context))

    @property
    def turn_key(self) -> str:
        """The queue's ordering key (see ``adapters.slack.context.turn_key``)."""
        context = RequestContext(metadata=self.context)
        return turn_key(context, private=self.private, opens_thread=self.open_thread)

    def target(self, *, thread_ts: str | None = None, turn_id: str | None = None) -> ReplyTarget:
        """Where the answer goes (privately while a slash command has no thread yet)."""
        return reply_target(
            RequestContext(metadata=self.context),
            thread_ts=thread_ts,
            private=self.private,
            response_url=self.response_url,
            turn_id=turn_id,
        )

    def request_context(self, target: ReplyTarget, turn_id: str) -> RequestContext:
        """The context the agent answers in: the signed one, in the thread answered in."""
        return RequestContext(
            metadata={**self.context, "thread_id": target.thread_ts, "turn_id": turn_id}
        )

    def payload(self, **changes: Any) -> dict[str, Any]:
        """What the queue records (with ``changes`` applied)."""
        payload = self.model_dump(mode="json", exclude_defaults=True)
        payload.update({name: value for name, value in changes.items() if value is not None})
        return payload


class SlackTurns:
    """The Slack bot's turns: accepted by the listeners, answered by this process's worker;
    see the module docstring.

    >>> from agent_core import (Agent, InMemoryAgentMemory, ScriptedLlmService,
    ...                         StaticUserResolver, ToolRegistry, User)
    >>> from agent_core.state import MemoryKeyValueStore, MemoryTurnQueue
    >>> from bots.slack.clients import build_client
    >>> from bots.slack.settings import SlackSettings
    >>> agent = Agent(llm_service=ScriptedLlmService(["hi"]), tool_registry=ToolRegistry(),
    ...               user_resolver=StaticUserResolver(User(id="u")),
    ...               agent_memory=InMemoryAgentMemory())
    >>> settings = SlackSettings(bot_token="xoxb-1", signing_secret="s")
    >>> clients = WorkspaceClients(settings, build_client(settings, "xoxb-1"))
    >>> from adapters.slack.history import HistoryGate
    >>> from adapters.slack.threads import ThreadTranscript
    >>> cache = MemoryKeyValueStore()
    >>> context = ThreadContext(ThreadTranscript(cache), HistoryGate(cache))
    >>> turns = SlackTurns(agent, MemoryTurnQueue(), clients, ThreadMembership(cache), context,
    ...                    metrics=SlackMetrics())
    >>> turns.running
    0
    """

    def __init__(
        self,
        agent: ServedAgent,
        queue: TurnQueue,
        clients: WorkspaceClients,
        threads: ThreadMembership,
        thread_context: ThreadContext,
        *,
        metrics: SlackMetrics,
        files: SharedFiles | None = None,
        concurrency: int = 64,
        dedupe_ttl: float = 3600.0,
        stop_button_after: float = 3.0,
        flush_chars: int = 1000,
        flush_interval: float = 1.0,
        queries: QueryRecords | None = None,
    ) -> None:
        self.agent = agent
        self.queries = queries
        self.queue = queue
        self.clients = clients
        self.threads = threads
        self.thread_context = thread_context
        self.metrics = metrics
        self.files = files
        self.concurrency = concurrency
        self.dedupe_ttl = dedupe_ttl
        self.stop_button_after = stop_button_after
        self.flush_chars = flush_chars
        self.flush_interval = flush_interval
        self._running = 0
        self._finished = asyncio.Event()
        self._worker: asyncio.Task[None] | None = None
        self._intake: DrainingTurnQueue | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._unrecorded: Unrecorded[PostedMessages] = Unrecorded(
            within=lambda: 60 * self.queue.claim_after, what="slack"
        )
        """Posts of turns the state could not record (an outage), by turn id."""

    # --- ingress ------------------------------------------------------------------------------

    async def accept(
        self, queued: QueuedTurn, *, dedupe_key: str | None = None, flag: Flag | None = None
    ) -> str | None:
        """Record a turn (before the ack), with ``flag`` when given (the thread it joins):
        its id, or None for a delivery seen before. Raises ``StateUnavailableError`` while
        the state is down."""
        turn_id = await self.queue.enqueue(
            queued.turn_key,
            queued.payload(),
            dedupe_key=dedupe_key,
            dedupe_ttl=self.dedupe_ttl,
            owner=queued.owner,
            flag=flag,
        )
        if turn_id is None:
            self.metrics.duplicates.inc()
        return turn_id

    async def request_stop(self, turn_id: str, *, by: str) -> None:
        """Stop a running turn on whichever process runs it (if ``by`` asked it)."""
        await self.queue.request_stop(turn_id, by=by)

    def background(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run ``work`` (a notice after the ack) as a tracked task: ``idle`` and ``drain``
        wait for it."""
        task = asyncio.create_task(work, name="slack-background")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # --- the worker ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start answering queued turns in this process (call in the event loop)."""
        if self._worker is None or self._worker.done():
            self._intake = DrainingTurnQueue(self.queue)
            self._worker = asyncio.create_task(
                self._intake.run(self._answer, concurrency=self.concurrency, give_up=self._give_up),
                name="slack-turn-worker",
            )

    @property
    def running(self) -> int:
        """Turns this process is answering now."""
        return self._running

    async def idle(self, *, timeout: float = 30.0) -> None:
        """Until no turn is queued or running anywhere and no notice is being sent (tests,
        benchmarks, shutdown)."""
        deadline = time.monotonic() + timeout
        while self._running or await self.queue.pending():
            if time.monotonic() > deadline:
                raise TimeoutError("turns still running")
            self._finished.clear()
            with contextlib.suppress(TimeoutError):  # local ends wake at once; remote ones poll
                await asyncio.wait_for(self._finished.wait(), 0.01)
        await asyncio.gather(*set(self._tasks), return_exceptions=True)

    async def drain(self, *, timeout: float = 30.0) -> None:
        """Take no new turns, finish (and complete) the ones this process holds, up to
        ``timeout``; then stop working. Turns still running then are settled as stopped
        and stay queued: another process (or the next start) runs them again."""
        if self._intake is not None:
            await self._intake.drain(timeout=timeout)
        self._unrecorded.cancel()
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.cancel()
            await asyncio.gather(worker, return_exceptions=True)
        await asyncio.gather(*set(self._tasks), return_exceptions=True)

    # --- one turn -----------------------------------------------------------------------------

    async def _answer(self, turn: Turn) -> None:
        """The queue's handler: answer one accepted message (see the module docstring)."""
        opened = await self._open(turn)
        if opened is None or turn.progress.get("answered"):
            return  # unreadable, or an earlier run finished and only its completion was lost
        queued, client, slot = opened
        if turn.is_retry and not await self._recover(turn, slot):
            return
        if queued.open_thread and not await self._open_thread(queued, slot):
            return
        await self._serve(turn, queued, client, slot)

    async def _give_up(self, turn: Turn) -> None:
        """The turn failed ``max_attempts`` times: tidy up and tell the asker plainly."""
        opened = await self._open(turn)
        if opened is None or turn.progress.get("gave_up"):
            return
        _, _, slot = opened
        await slot.settle(INTERRUPTED)
        await _record(turn, gave_up=True)
        self.metrics.turns.labels(outcome="interrupted").inc()

    async def _open(self, turn: Turn) -> tuple[QueuedTurn, AsyncWebClient, AnswerSlot] | None:
        """The turn's payload, its workspace's client and its slot (what earlier runs
        posted); None for a turn that cannot be answered (logged)."""
        try:
            queued = QueuedTurn.model_validate(turn.payload)
        except ValidationError:
            log.error("slack: dropped turn %s with an unreadable payload", turn.id)
            return None
        enterprise = queued.context.get("slack_enterprise_id")
        try:
            client = await self.clients.client_for(
                queued.team, enterprise, enterprise_install=queued.enterprise_install
            )
        except AgentError as error:
            log.info("slack: dropped turn %s of workspace %s (%s)", turn.id, queued.team, error)
            return None

        async def posted(messages: PostedMessages) -> None:
            await turn.record(**messages.as_progress())

        previous = PostedMessages.from_progress(turn.progress)
        if (kept := self._unrecorded.get(turn.id)) is not None:
            previous = previous.merged(kept)
        target = queued.target(thread_ts=previous.thread_ts, turn_id=turn.id)
        return queued, client, AnswerSlot(client, target, posted=previous, on_posted=posted)

    async def _recover(self, turn: Turn, slot: AnswerSlot) -> bool:
        """A re-run: True to answer again (the slot took back what the dead run posted)."""
        log.warning("slack: turn %s is run again (attempt %d)", turn.id, turn.attempt)
        if await slot.recover():
            return True
        self.metrics.turns.labels(outcome="interrupted").inc()
        return False

    async def _open_thread(self, queued: QueuedTurn, slot: AnswerSlot) -> bool:
        """A public slash command: the thread it is answered in (which the bot joins)."""
        command = str(queued.context.get("command") or "/ask")
        thread_ts = await slot.open_thread(queued.text, command=command)
        if thread_ts is not None:
            await self.threads.join(queued.team, slot.target.channel, thread_ts)
        return thread_ts is not None

    async def _serve(
        self, turn: Turn, queued: QueuedTurn, client: AsyncWebClient, slot: AnswerSlot
    ) -> None:
        started = time.monotonic()
        self._running += 1
        self.metrics.active_turns.inc()
        outcome = "failed"
        try:
            outcome = await self._reply(turn, queued, client, slot)
        except asyncio.CancelledError:
            outcome = "stopped"
            raise
        finally:
            self._unrecorded.keep(turn.id, slot)
            self._running -= 1
            self._finished.set()
            self.metrics.active_turns.dec()
            self.metrics.turn_seconds.observe(time.monotonic() - started)
            self.metrics.turns.labels(outcome=outcome).inc()

    async def _reply(
        self, turn: Turn, queued: QueuedTurn, client: AsyncWebClient, slot: AnswerSlot
    ) -> str:
        outcome = "completed"
        async with SlackReplyStream(
            client,
            slot.target,
            slot=slot,
            stop_turn=turn.id,
            stop_button_after=self.stop_button_after,
            flush_chars=self.flush_chars,
            flush_interval=self.flush_interval,
        ) as reply:
            try:
                await self._talk(reply, queued, client, turn.id)
            except asyncio.CancelledError:
                await reply.settle(STOPPED)
                raise  # settled: the worker completes a Stop, keeps the turn on any other cancel
            except Exception:
                outcome = "failed"
                log.exception("slack: turn %s failed while replying", turn.id)
            await reply.finish()
        await _record(turn, at_end=True, answered=True)
        return outcome

    async def _talk(
        self, reply: SlackReplyStream, queued: QueuedTurn, client: AsyncWebClient, turn_id: str
    ) -> None:
        context = queued.request_context(reply.target, turn_id)
        view = await self._thread_view(queued, client, reply.target)
        if (notice := view.notice) is not None:  # the asker learns what it could not see
            await reply.handle(UiComponent.of(NotificationComponent(message=notice), notice))
        text = thread_prompt(
            view.messages, queued.text, bot_user_id=queued.bot_user_id, notice=view.notice
        )
        if queued.files:
            text = await self._with_files(reply, queued, client, context, text)
        key = conversation_id(context)
        async for component in self.agent.send_message(context, text, conversation_id=key):
            await self._keep_queries(reply.target, component)
            await reply.handle(component)

    async def _keep_queries(self, target: ReplyTarget, component: UiComponent) -> None:
        """The answer's queries, kept for its "Show query" button (``adapters.slack.sources``)."""
        sources = component.rich_component
        if self.queries is None or not isinstance(sources, SourcesComponent) or target.private:
            return
        try:
            await self.queries.save(
                target.team_id, target.channel, target.thread_ts, target.turn_id or "", sources
            )
        except StateUnavailableError as error:  # the answer matters more than the button
            log.warning("slack: queries of turn %s not kept (%s)", target.turn_id, error)

    async def _thread_view(
        self, queued: QueuedTurn, client: AsyncWebClient, target: ReplyTarget
    ) -> ThreadView:
        """What the thread said before the question that the conversation lacks: what
        other apps posted since the last turn, and the thread itself on a first mention
        (read from Slack once, within its limits)."""
        before_ts = queued.history_before_ts or queued.message_ts
        if before_ts is None:
            return ThreadView([])
        try:
            return await self.thread_context.before(
                client,
                team=queued.team,
                channel=target.channel,
                thread_ts=target.thread_ts,
                before_ts=before_ts,
                joins=queued.history_before_ts is not None,
            )
        except StateUnavailableError as error:  # answer the question without them
            log.warning("slack: thread context of %s not read (%s)", target.thread_ts, error)
            return ThreadView([])

    async def _with_files(
        self,
        reply: SlackReplyStream,
        queued: QueuedTurn,
        client: AsyncWebClient,
        context: RequestContext,
        text: str,
    ) -> str:
        """Load the files shared with the message into the asker's tables (telling the
        asker what could not be read); the question, with what the files became."""
        limit = self.files.max_bytes if self.files is not None else 0
        policy = self.files.policy if self.files is not None else FetchPolicy()

        async def fetch(file: SharedFile) -> bytes:
            return await download(client, file, max_bytes=limit, policy=policy)

        taken = await take_files(
            self.files,
            queued.files,
            asker=str(context.metadata.get("user_id") or ""),
            scope=file_scope(context.metadata),
            fetch=fetch,
        )
        if (notice := taken.notice()) is not None:
            await reply.handle(notice)
        return taken.question(text)


async def _record(turn: Turn, *, at_end: bool = False, **progress: Any) -> None:
    try:
        await (turn.record_at_end if at_end else turn.record)(**progress)
    except StateUnavailableError as error:  # keep going; a re-run may repeat a post
        log.warning("slack: could not record progress of turn %s (%s)", turn.id, error)
