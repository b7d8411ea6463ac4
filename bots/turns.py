"""``TurnHost``: every channel's turns, written once: accepted before the platform's ack,
answered by whichever process's worker picks them up.

    listener --accept(kind)--> TurnQueue --worker--> TurnHost._answer(turn)
                                  _route: the payload read once as a turn kind
                                    (``bots.turn_kinds``) and matched once:
                                    wing.for_turn(turn.writes)
                                      .question / resumed / step / scheduled / removed
                                  route.slot(turn)          where the answer goes
                                  route.answer(turn, slot)  -> Answering
                                  files -> the asker's tables (bots.files)
                                  agent.send_message(question or Resume,
                                                     writes=turn.writes) -> reply.handle
                                  reply.finish(); answered recorded

A *wing* is the channel's part (``bots.slack.turns``, ``bots.teams.turns``,
``bots.dev.turns``): its union of the turn kinds (``Wing.kinds``) and, for each kind, a
``Route``: where the turn's answer goes (its ``slot``: what earlier runs posted) and an
``Answering``: the ``RequestContext``, the question and the channel's ``ReplyStream``.
Everything else is here, the same for every channel:

- **Order**: the queue runs the turns of one ordering key one at a time (the wing's key:
  see ``adapters.<channel>.context.turn_key``); at most ``per_person`` of one asker's turns
  run at once in a process, and the rest wait in order without holding a slot
  (``TurnWorker``), so one person's many questions never hold up another's.
- **Stop**: the asker's Stop (``request_stop``, from any process) or the platform's own
  (Teams' Stop on a stream: ``Answering.reply`` is given ``stop``) cancels the turn; its
  reply is settled ("Stopped.", unless the platform shows it) and the turn completes with
  the outcome ``stopped``. Any other cancellation (a shutdown past its drain, a lost lease)
  settles the reply too, then propagates: the turn stays queued and runs again elsewhere.
- **Re-runs** (``turn.attempt > 1``): a run that had finished (only its completion was lost)
  is not repeated; the wing decides how to take back what the dead run posted. After
  ``max_attempts`` runs the asker is told plainly that the answer was interrupted.
- **Recording**: what the slot posts is recorded on the turn at once (by the wing's slot);
  what could not be recorded (a state outage) is kept here and recorded when the state is
  back (``bots.outage.Unrecorded``), and a re-run here starts from it.
- **Approvals**: a turn that waits for an approval finishes ("Waiting for approval"); the
  decision queues a turn of its own (a ``ResumedApproval``) that continues it, on whichever
  process picks it up (``bots.approvals``): its ``Answering.question`` is a ``Resume``, sent
  to the agent's one entry point (``send_message``) as a question is.
- **The turn's writes** (``turn.writes``, on Redis; ``agent_core.state.turn_writes``): the
  wing and the agent are handed them once each (``Wing.for_turn``, ``send_message(writes=)``)
  and hand them to the caches and stores the turn uses, whose reads then take what the
  turn's start read ahead and whose conversation commit and transcript marks are written
  with the turn's completion.
- **Shutdown** (``drain``): no new turns; the ones held finish (and complete) first.
- **Metrics** (``bots.metrics.ChannelMetrics``): ``turns{outcome}``, ``active_turns`` and
  ``turn_seconds``, from the acknowledgement (the turn recorded) to the reply's last post.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, Self

from pydantic import TypeAdapter, ValidationError

from adapters.files import SharedFile
from adapters.notices import INTERRUPTED, STOPPED
from adapters.stream import ReplyStream
from agent_core.clock import SYSTEM_CLOCK
from agent_core.components import UiComponent
from agent_core.errors import StateUnavailableError, log_failure
from agent_core.state.draining import DrainingTurnQueue
from agent_core.state.keyvalue import Flag
from agent_core.state.turn_writes import TurnWrites
from agent_core.state.turns import Turn, TurnQueue
from agent_core.tools.files import file_scope
from agent_core.turn.resuming import Resume
from agent_core.users import RequestContext
from bots.agents import ServedAgent
from bots.files import SharedFiles, take_files
from bots.legacy_turns import upgraded
from bots.metrics import ChannelMetrics
from bots.outage import Unrecorded
from bots.profiles import to_the_asker
from bots.turn_kinds import (
    Kind,
    Occurrence,
    Question,
    RemovedNotice,
    ResumedApproval,
    StepRun,
    TurnKind,
)

log = logging.getLogger(__name__)

Outcome = Literal["completed", "stopped", "failed", "cancelled", "interrupted", "dropped"]
Fetch = Callable[[SharedFile, "SharedFiles | None"], Awaitable[bytes]]
"""Download one shared file (the store says how large it may be)."""


class Posted(Protocol):
    """What a slot posted, as a turn's progress records it."""

    def as_progress(self) -> dict[str, Any]: ...


class Slot(Protocol):
    """Where one turn's answer goes and what it posted (``adapters.<channel>.slot``)."""

    unrecorded: bool

    @property
    def current(self) -> Posted | None: ...

    async def record_again(self) -> bool: ...

    async def settle(self, text: str) -> None: ...


@dataclass
class Answering:
    """What a wing makes of a turn: who asks what, where the answer streams, and the wing's
    own steps around the answer.

    ``shown_first`` are components the asker sees before the answer (what the thread said
    that the bot could not read); ``keep`` sees each component after it is shown (Slack
    keeps the queries behind "Show query"); ``done`` runs when the turn ends, with its
    outcome (Teams remembers which turn posted the answer, for feedback on it).

    >>> from agent_core.users import RequestContext
    >>> Answering(RequestContext(), "hi", None).files  # type: ignore[arg-type]
    []
    """

    context: RequestContext
    question: str | Resume
    """What the agent is sent: the question, or (a turn that continues one whose approval
    was decided) a ``Resume``, into the same entry point."""
    reply: ReplyStream
    conversation_id: str = ""
    files: list[SharedFile] = field(default_factory=list)
    fetch: Fetch | None = None
    shown_first: Sequence[UiComponent] = ()
    keep: Callable[[UiComponent], Awaitable[None]] | None = None
    done: Callable[[Outcome], Awaitable[None]] | None = None
    audience: Audience = "place"
    """Who reads the answer: the place (everyone in it), the asker alone (a place shared
    with another organisation: ``bots.places``), or nobody (only ``shown_first`` is shown;
    the agent is not asked)."""


Audience = Literal["place", "asker", "nobody"]
"""Who reads a turn's answer (``Answering.audience``)."""

Stop = Callable[..., None]
"""The platform stopped the answer (Teams' Stop on a stream): end the turn as stopped."""


@dataclass(frozen=True)
class Route:
    """How a wing answers one turn of one kind: ``slot`` says where its answer goes (what
    earlier runs posted; None to drop the turn: a workspace that is gone, logged by the
    wing), ``answer`` how it is answered, or an outcome instead when it is not (a re-run
    that told the asker it was interrupted, a thread the bot cannot post in)."""

    slot: Callable[[Turn], Awaitable[Slot | None]]
    answer: Callable[[Turn, Slot, Stop], Awaitable[Answering | Outcome]]


class Wing(Protocol):
    """A channel's part of the host: see the module docstring. Each method gives the route
    of one turn kind; None for a kind this channel does not answer (the turn is dropped)."""

    platform: str
    kinds: TypeAdapter[Any]
    """The channel's union of the turn kinds, with its own models (``bots.turn_kinds``)."""

    def for_turn(self, writes: TurnWrites | None) -> Self:
        """The wing as one running turn uses it: its caches the turn's ``for_turn`` views
        (``agent_core.state.turn_writes``)."""
        ...

    def question(self, asked: Any) -> Route: ...

    def resumed(self, approval: ResumedApproval[Any]) -> Route: ...

    def step(self, step: Any) -> Route | None: ...

    def scheduled(self, run: Occurrence) -> Route | None: ...

    def removed(self, notice: RemovedNotice) -> Route | None: ...


class TurnHost:
    """Accepts turns into ``queue`` and answers them on this process's worker through
    ``wing``; see the module docstring.

    >>> import asyncio
    >>> from agent_core.state import MemoryTurnQueue
    >>> host = TurnHost(None, MemoryTurnQueue(), None,  # type: ignore[arg-type]
    ...                 metrics=ChannelMetrics("console", measured=False))
    >>> host.running, asyncio.run(host.idle())
    (0, None)
    """

    def __init__(
        self,
        agent: ServedAgent,
        queue: TurnQueue,
        wing: Wing,
        *,
        metrics: ChannelMetrics,
        files: SharedFiles | None = None,
        concurrency: int = 64,
        per_person: int | None = 3,
        max_attempts: int = 3,
        dedupe_ttl: float = 3600.0,
    ) -> None:
        self.agent = agent
        self.queue = queue
        self.wing = wing
        self.metrics = metrics
        self.files = files
        self.concurrency = concurrency
        self.per_person = per_person
        self.max_attempts = max_attempts
        self.dedupe_ttl = dedupe_ttl
        self._running = 0
        self._finished = asyncio.Event()
        self._worker: asyncio.Task[None] | None = None
        self._intake: DrainingTurnQueue | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopped_by_platform: set[str] = set()
        self._unrecorded: Unrecorded[Posted] = Unrecorded(
            within=lambda: 60 * self.queue.claim_after, what=getattr(wing, "platform", "turns")
        )
        """What turns posted but the state could not record (an outage), by turn id."""

    # --- ingress ------------------------------------------------------------------------------

    async def accept(
        self,
        key: str,
        kind: Kind,
        *,
        owner: str | None,
        dedupe_key: str | None = None,
        flag: Flag | None = None,
        dedupe_ttl: float | None = None,
    ) -> str | None:
        """Record a turn of ``kind`` (``bots.turn_kinds``) before the platform's ack, with
        ``flag`` when given (a thread it joins, in the same step): its id, or None for a
        delivery seen before (within ``dedupe_ttl``, else the host's). Raises
        ``StateUnavailableError`` while the state is down."""
        ttl = self.dedupe_ttl if dedupe_ttl is None else dedupe_ttl
        turn_id = await self.queue.enqueue(
            key, kind.payload(), dedupe_key=dedupe_key, dedupe_ttl=ttl, owner=owner, flag=flag
        )
        if turn_id is None:
            self.metrics.duplicates.inc()
            log.info("%s: dropped a redelivered delivery (%s)", self._platform, dedupe_key)
        return turn_id

    async def request_stop(self, turn_id: str, *, by: str) -> None:
        """Stop a running turn on whichever process runs it (if ``by`` asked it)."""
        await self.queue.request_stop(turn_id, by=by)

    def background(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run ``work`` (a notice after the ack) as a tracked task: ``idle`` and ``drain``
        wait for it."""
        task = asyncio.create_task(work, name=f"{self._platform}-background")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    @property
    def _platform(self) -> str:
        return str(getattr(self.wing, "platform", "turns"))

    # --- the worker ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start answering queued turns in this process (call in the event loop)."""
        if self._worker is None or self._worker.done():
            self._intake = DrainingTurnQueue(self.queue)
            work = self._intake.run(
                self._answer,
                concurrency=self.concurrency,
                per_owner=self.per_person,
                max_attempts=self.max_attempts,
                give_up=self._give_up,
            )
            self._worker = asyncio.create_task(work, name=f"{self._platform}-turn-worker")

    @property
    def running(self) -> int:
        """Turns this process is answering now."""
        return self._running

    async def idle(self, *, timeout: float = 30.0) -> None:
        """Until no turn is queued or running anywhere and no background work is left
        (tests, benchmarks, shutdown)."""
        deadline = time.monotonic() + timeout
        while self._running or await self._pending():
            if time.monotonic() > deadline:
                raise TimeoutError("turns still running")
            self._finished.clear()
            with contextlib.suppress(TimeoutError):  # local ends wake at once; remote ones poll
                await asyncio.wait_for(self._finished.wait(), 0.01)
        await asyncio.gather(*set(self._tasks), return_exceptions=True)

    async def _pending(self) -> int:
        """Turns queued or running anywhere; none that can be waited for while the state is
        down."""
        try:
            return await self.queue.pending()
        except StateUnavailableError:
            return 0

    async def drain(self, *, timeout: float = 30.0) -> None:
        """Take no new turns, finish (and complete) the ones this process holds, up to
        ``timeout``; then stop working. A turn still running then is settled as stopped
        and stays queued: another process (or the next start) runs it again."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        if self._intake is not None and not await self._intake.drain(timeout=timeout):
            log.warning("%s: stopping with %d turns still running", self._platform, self._running)
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=max(0.0, deadline - loop.time()))
        self._unrecorded.cancel()
        worker, self._worker = self._worker, None
        pending = [*self._tasks, *([worker] if worker else [])]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    # --- one turn -----------------------------------------------------------------------------

    async def _answer(self, turn: Turn) -> None:
        """The queue's handler: answer one accepted turn (see the module docstring)."""
        if turn.progress.get("answered"):
            return  # an earlier run finished; only the queue's completion was lost
        route = self._route(turn)
        slot = None if route is None else await self._slot(turn, route)
        if route is None or slot is None:
            return
        if turn.is_retry:
            log.warning("%s: turn %s is run again (attempt %d)", self._platform, *_run(turn))
        self._running += 1
        self.metrics.active_turns.inc()
        outcome: Outcome = "failed"
        try:
            outcome = await self._serve(turn, route, slot)
        except asyncio.CancelledError:
            outcome = "stopped" if turn.stop_requested else "cancelled"
            raise
        finally:
            self._unrecorded.keep(turn.id, slot)
            self._running -= 1
            self._finished.set()
            self.metrics.active_turns.dec()
            self.metrics.turns.labels(outcome=outcome).inc()
            if outcome in ("completed", "stopped", "failed"):
                self.metrics.turn_seconds.observe(max(0.0, SYSTEM_CLOCK.now() - turn.enqueued_at))

    async def _give_up(self, turn: Turn) -> None:
        """The turn's runs kept dying: say so, in place of what they posted."""
        if turn.progress.get("answered") or turn.progress.get("gave_up"):
            return
        route = self._route(turn)
        slot = None if route is None else await self._slot(turn, route)
        if slot is None:
            return
        await slot.settle(INTERRUPTED)
        await _record(turn, at_end=True, gave_up=True, answered=True)
        self.metrics.turns.labels(outcome="interrupted").inc()

    def _route(self, turn: Turn) -> Route | None:
        """What ``turn`` is (its payload read once, as the wing's turn kinds) and the wing's
        route for that kind; None for a turn this process cannot answer (logged)."""
        try:
            kind: TurnKind = self.wing.kinds.validate_python(upgraded(turn.payload))
        except ValidationError as error:
            problem = error.errors(include_url=False, include_input=False)[0]
            where = ".".join(str(part) for part in problem["loc"])
            log.error("%s: dropped turn %s, unreadable (%s)", self._platform, turn.id, where)
            return None
        wing = self.wing.for_turn(turn.writes)  # its caches read and write as the turn's
        match kind:
            case Question():
                route: Route | None = wing.question(kind.asked)
            case ResumedApproval():
                route = wing.resumed(kind)
            case StepRun():
                route = wing.step(kind.step)
            case Occurrence():
                route = wing.scheduled(kind)
            case RemovedNotice():
                route = wing.removed(kind)
        if route is None:
            log.error("%s: dropped turn %s (a %s)", self._platform, turn.id, kind.kind)
        return route

    async def _slot(self, turn: Turn, route: Route) -> Slot | None:
        """The route's slot, starting from what a run here posted but could not record."""
        kept = self._unrecorded.get(turn.id)
        if kept is not None:
            turn.progress.update(kept.as_progress())
        return await route.slot(turn)

    async def _serve(self, turn: Turn, route: Route, slot: Slot) -> Outcome:
        answering = await route.answer(turn, slot, self._platform_stop(turn))
        if isinstance(answering, str):
            return answering
        outcome: Outcome = "completed"
        async with answering.reply as reply:
            try:
                await self._talk(answering, turn.writes)
            except asyncio.CancelledError:
                outcome = await self._cancelled(turn, reply)
            except Exception as error:
                outcome = "failed"
                log_failure(log, error, f"{self._platform}: turn {turn.id}, while replying")
            if outcome != "stopped":  # settled already
                await reply.finish()
        await _record(turn, at_end=True, answered=True)
        if answering.done is not None:
            await answering.done(outcome)
        return outcome

    async def _talk(self, answering: Answering, writes: TurnWrites | None) -> None:
        reply, context = answering.reply, answering.context
        for component in answering.shown_first:
            await reply.handle(component)
        if answering.audience == "nobody":
            return
        question = answering.question
        if answering.files and isinstance(question, str):
            question = await self._with_files(question, answering)
        key = answering.conversation_id or None
        answer = self.agent.send_message(context, question, conversation_id=key, writes=writes)
        if answering.audience == "asker":  # a shared place: everything to the asker alone
            answer = to_the_asker(answer)
        try:
            async for component in answer:
                await reply.handle(component)
                if answering.keep is not None:
                    await answering.keep(component)
        finally:  # a Stop inside an adapter call: the agent settles its turn now
            aclose = getattr(answer, "aclose", None)
            if aclose is not None:
                await aclose()

    async def _with_files(self, question: str, answering: Answering) -> str:
        """Load the files shared with the question into the asker's tables (telling the
        asker what could not be read); the question, with what the files became."""
        fetch, store = answering.fetch, self.files
        metadata: Mapping[str, Any] = answering.context.metadata

        async def download(file: SharedFile) -> bytes:
            if fetch is None:
                raise LookupError("this channel downloads no files")
            return await fetch(file, store)

        taken = await take_files(
            store,
            answering.files,
            asker=str(metadata.get("user_id") or ""),
            scope=file_scope(metadata),
            fetch=download,
        )
        if (notice := taken.notice()) is not None:
            await answering.reply.handle(notice)
        return taken.question(question)

    def _platform_stop(self, turn: Turn) -> Stop:
        """What the platform's own Stop calls: the turn ends as stopped (its reply already
        shows it, so it is not settled again)."""
        task = asyncio.current_task()

        def stop(*reason: object) -> None:
            self._stopped_by_platform.add(turn.id)
            turn.stop_requested = True
            if task is not None and not task.done():
                task.cancel()

        return stop

    async def _cancelled(self, turn: Turn, reply: ReplyStream) -> Outcome:
        """The turn was cancelled: settle its reply; a Stop ends the turn here (it then
        completes), anything else propagates (the turn stays queued and runs again)."""
        if turn.id not in self._stopped_by_platform:
            await reply.settle(STOPPED)
        self._stopped_by_platform.discard(turn.id)
        task = asyncio.current_task()
        if turn.stop_requested and task is not None and task.cancelling() <= 1:
            task.uncancel()  # the Stop is handled: only a further cancellation interrupts
            return "stopped"
        raise asyncio.CancelledError


def _run(turn: Turn) -> tuple[str, int]:
    return turn.id, turn.attempt


async def _record(turn: Turn, *, at_end: bool = False, **progress: Any) -> None:
    try:
        await (turn.record_at_end if at_end else turn.record)(**progress)
    except StateUnavailableError as error:  # keep going; a re-run may repeat a post
        log.warning("could not record progress of turn %s (%s)", turn.id, error)
