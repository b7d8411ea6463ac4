"""The bots' side of approval in the thread, the same for every channel.

The agent decides (``agent_core.approvals``); a bot gives it the clicks, shows what was
decided, and queues the turn that resumes::

    click (signed) -> Approvals.click -> ``decide``: agent.decide_approval / cancel_approval
                        (the console's clicks are decided by ``decide`` too)
                        decided: the channel's ``resumed(record, hints)`` says what turn
                        continues it; it is queued on the turn queue, and answered by any
                        process's worker (a ``Resume`` -> agent.send_message)
    any decision this process makes (a click, a Stop, the sweep, a newer message)
                     -> the book tells its listeners (``listen``: subscribed when built,
                        until ``stop``; one per channel served here) -> the channel's
                        ``show(record)`` updates the approval message in place, where the
                        reply stream noted it (``note``; another channel's is left alone)
    an approval shown (``note``) or decided here
                     -> ``changed(approval_id)``, when the bot gives one: what homes list
                        changed (``bots.home.HomeChanges``); it only notes, never waits
    every ``every`` seconds -> agent.expire_approvals(platform), for the bot's channels:
                        each expiry resumed the same way

**Exactly once**: the decision is one atomic step (two clicks at once: one wins), and the
resuming turn is queued under the approval's own dedupe key (``resume_key``), remembered as
long as the approval is kept. A later click on a decided approval queues it again, which is
a no-op, unless the deciding process died between deciding and queueing: then that click
resumes the turn. Running an approved call is claimed once as well (``ApprovalBook``), so a
resumed turn re-run after a crash never runs a tool twice.

A decision that cannot be recorded (the state is down) raises ``StateUnavailableError`` to
the click's handler, which tells the clicker plainly: the approval is still pending, nothing
is lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, NamedTuple

from adapters.approval import ApprovalClick
from agent_core.approvals.book import KEEP_AFTER, ApprovalBook, DecisionListener
from agent_core.approvals.record import ApprovalRecord
from agent_core.components import ApprovalComponent
from agent_core.errors import StateUnavailableError, log_failure
from agent_core.state.turns import TurnQueue
from agent_core.turn.deciding import ApprovalAnswer
from agent_core.users import RequestContext
from bots.agents import ServedAgent
from bots.metrics import ChannelMetrics
from bots.turn_kinds import ResumedApproval

log = logging.getLogger(__name__)


class ResumedTurn(NamedTuple):
    """The turn that continues a decided approval, as the channel's turn host queues it."""

    key: str
    kind: ResumedApproval[Any]
    owner: str


Show = Callable[[ApprovalRecord], Awaitable[None]]
"""Update the approval message of a decided record in place (where it was noted)."""
Changed = Callable[[str], None]
"""Told the id of an approval just shown or decided (synchronous: it must not wait)."""
Resumed = Callable[[ApprovalRecord, Mapping[str, Any]], Awaitable[ResumedTurn | None]]
"""The turn that continues a decided record, with what the deciding click adds (a
channel's hints, e.g. where a private answer goes; empty for an expiry); None when it
cannot be answered in this channel (logged)."""

SWEEP_EVERY = 30.0
RESUME_KEEP = KEEP_AFTER
"""How long the queue remembers an approval's resuming turn (as long as the approval)."""


def resume_key(approval_id: str) -> str:
    """The turn queue's dedupe key of the turn that resumes ``approval_id``.

    >>> resume_key("a1")
    'approval:a1:resume'
    """
    return f"approval:{approval_id}:resume"


def listen(agent: ServedAgent, listener: DecisionListener) -> Callable[[], None]:
    """Subscribe ``listener`` to the books of the agents served (each book once: profiles
    may share one); the function returned unsubscribes it from all of them."""
    books = {id(served.approval_book): served.approval_book for served in agent.served_agents()}
    unsubscribes = [book.listen(listener) for book in books.values()]

    def unsubscribe() -> None:
        for each in unsubscribes:
            each()

    return unsubscribe


async def decide(
    agent: ServedAgent,
    context: RequestContext,
    click: ApprovalClick,
    *,
    conversation_id: str | None,
) -> ApprovalAnswer:
    """The agent's decision on a signed click on Approve, Deny or Stop (the clicker is
    resolved from ``context``, in ``conversation_id``: where the click happened; None for
    Approve or Deny on the clicker's home). Every channel's clicks, the console's too."""
    if click.decision != "stop":
        return await agent.decide_approval(
            context,
            click.approval_id,
            approve=click.decision == "approve",
            conversation_id=conversation_id,
        )
    if conversation_id is None:  # a home offers Approve and Deny only
        return ApprovalAnswer(
            decided=False, reason="elsewhere", message="Stop it in its conversation."
        )
    return await agent.cancel_approval(context, click.approval_id, conversation_id=conversation_id)


class Approvals:
    """One bot's approvals; see the module docstring. The turns that resume decided
    approvals go on ``queue`` (the bot's turn queue, which its turn host works).

    >>> from agent_core import (Agent, InMemoryAgentMemory, ScriptedLlmService,
    ...                         StaticUserResolver, ToolRegistry, User)
    >>> from agent_core.state import MemoryTurnQueue
    >>> agent = Agent(llm_service=ScriptedLlmService(), tool_registry=ToolRegistry(),
    ...               user_resolver=StaticUserResolver(User(id="u")),
    ...               agent_memory=InMemoryAgentMemory())
    >>> import asyncio
    >>> from agent_core.approvals.record import ApprovalRecord
    >>> shown = []
    >>> async def show(record): shown.append(record.id)
    >>> async def resumed(record, hints): ...
    >>> approvals = Approvals(agent, MemoryTurnQueue(), show=show, resumed=resumed)
    >>> async def decide(approval_id):
    ...     await agent.approval_book.open(ApprovalRecord.example(id=approval_id))
    ...     await approvals.note(approval_id, {"platform": "example"})
    ...     await agent.approval_book.decide(approval_id, "denied", by=None)
    >>> asyncio.run(decide("a1")); asyncio.run(approvals.stop()); asyncio.run(decide("a2"))
    >>> shown  # a2 was decided after ``stop``: no longer shown by this bot
    ['a1']
    """

    def __init__(
        self,
        agent: ServedAgent,
        queue: TurnQueue,
        *,
        show: Show,
        resumed: Resumed,
        metrics: ChannelMetrics | None = None,
        changed: Changed | None = None,
        platforms: tuple[str, ...] = (),
        every: float = SWEEP_EVERY,
    ) -> None:
        self.agent = agent
        self.platforms = platforms
        """The channels whose approvals this bot's sweep expires (and resumes)."""
        self.queue = queue
        self.metrics = metrics
        """Counts a resuming turn queued before (a second click) as a duplicate."""
        self._show = show
        self._resumed = resumed
        self.every = every
        self._sweeper: asyncio.Task[None] | None = None
        self.changed = changed
        """Told of each approval shown or decided here (a channel's homes; see above)."""
        self._unlisten: Callable[[], None] | None = listen(agent, self._decided)

    async def note(self, approval_id: str, where: dict[str, Any]) -> None:
        """Where a reply stream showed an approval (its decision updates it there)."""
        if self.changed is not None:
            self.changed(approval_id)
        try:
            await self.agent.approval_book.note_message(approval_id, where)
        except StateUnavailableError as error:  # the message then stays as it was
            log.warning("approval %s: where it was shown is not kept (%s)", approval_id, error)

    async def click(
        self,
        context: RequestContext,
        click: ApprovalClick,
        *,
        conversation_id: str | None,
        hints: Mapping[str, Any] | None = None,
    ) -> ApprovalAnswer:
        """A signed click on Approve, Deny or Stop, decided by the agent (the clicker is
        resolved from ``context``, in ``conversation_id``: where the click happened; None
        for Approve or Deny on the clicker's home); the turn is queued to resume (given
        ``hints``) once decided. Raises ``StateUnavailableError`` when the decision cannot
        be recorded."""
        answer = await decide(self.agent, context, click, conversation_id=conversation_id)
        if answer.record is not None and (answer.resume or answer.reason == "already"):
            await self.resume(answer.record, hints or {})
        return answer

    async def resume(self, record: ApprovalRecord, hints: Mapping[str, Any]) -> None:
        """Queue the turn that continues ``record`` (once: see the module docstring)."""
        turn = await self._resumed(record, hints)
        if turn is None:
            return
        try:
            queued = await self.queue.enqueue(
                turn.key,
                turn.kind.payload(),
                owner=turn.owner,
                dedupe_key=resume_key(record.id),
                dedupe_ttl=RESUME_KEEP,
            )
        except StateUnavailableError as error:  # the next click on it queues it
            log.error("approval %s: decided, its turn not queued yet (%s)", record.id, error)
            return
        if queued is None and self.metrics is not None:  # queued already: a second click
            self.metrics.duplicates.inc()

    async def _decided(self, record: ApprovalRecord) -> None:
        if self.changed is not None:
            self.changed(record.id)
        if record.message is not None:
            try:
                await self._show(record)
            except Exception as error:  # the decision stands; its message stays as it was
                log_failure(log, error, f"approval {record.id}: showing the decision")

    # --- the expiry sweep ---------------------------------------------------------------------

    def start(self) -> None:
        """Start the expiry sweep of this process (every process may run one: each expiry
        is decided once), and show decisions again after a ``stop``."""
        if self._unlisten is None:
            self._unlisten = listen(self.agent, self._decided)
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.create_task(self._sweep_forever(), name="approval-sweep")

    async def stop(self) -> None:
        """Stop the expiry sweep and showing decisions (the books forget ``_decided``)."""
        unlisten, self._unlisten = self._unlisten, None
        if unlisten is not None:
            unlisten()
        sweeper, self._sweeper = self._sweeper, None
        if sweeper is not None:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper

    async def sweep(self) -> int:
        """Expire what is due now and queue those turns; how many expired here."""
        answers = [
            answer
            for platform in self.platforms
            for answer in await self.agent.expire_approvals(platform)
        ]
        for answer in answers:
            if answer.record is not None:
                await self.resume(answer.record, {})
        return len(answers)

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            try:
                await self.sweep()
            except StateUnavailableError as error:  # the next sweep tries again
                log.warning("approvals: the expiry sweep could not run (%s)", error)
            except Exception as error:
                log_failure(log, error, "approvals: the expiry sweep")


UNCLICKABLE = "a workflow step cannot wait for approval"


async def cancel_unclickable(book: ApprovalBook, approvals: Iterable[ApprovalComponent]) -> None:
    """The approvals a turn nobody can click in asked for (a workflow step's, in Slack or the
    console) end now, cancelled, instead of waiting to expire."""
    for approval in approvals:
        try:
            await book.decide(approval.approval_id, "cancelled", by=None, note=UNCLICKABLE)
        except StateUnavailableError as error:  # it expires on its own
            log.warning("approval %s not cancelled (%s)", approval.approval_id, error)
