"""``Console``: each turn answered by the agent through both channel adapters at once.

The console's turns go through the same turn host as the bots' (``bots.turns``: the queue,
the per-person cap, Stop, files, recording), with an in-memory queue; ``ConsoleWing`` is the
console's hook. A turn reads like this::

    components = agent.send_message(context, text, conversation_id=key)
    for each component:  feed <- component (raw)       the developer pane
                         SlackReplyStream.handle()     -> fake Slack Web API    -> feed
                         TeamsReplyStream.handle()     -> fake Bot Connector    -> feed
    Slack finish() + Teams finish()

Both fakes are the shipped ones (``adapters.*.testing``), mounted in the console's own app
and reached over HTTP by the clients the bots use (see ``slack_view``, ``teams_view``).

Stop asks the host to stop the turn, as the bots' Stop buttons do: the agent commits a
consistent partial turn and both replies are settled: what was shown ends with
"_(Stopped.)_". Each turn ends with one line in the terminal (``turnlog``): who asked what,
the outcome, how long, the tools, the tokens.

A tool that waits for approval shows both channels' approval messages; a click on one is
answered like a turn (``bots.dev.approvals``): the messages updated in place, and the turn
resumed here (``Turn.resume``) as the asker.

Files attached to a question (``uploads``) are loaded by the host before the agent runs, as
the bots load the files shared in Slack and Teams: the asker's tables of this conversation,
a warning in both channels for what could not be read, and the question as the LLM gets it
(with what the files became) for ``query_files``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, Literal, Self

import aiohttp
from pydantic import BaseModel, Field, TypeAdapter

from adapters.approval import ApprovalClick, Decision
from adapters.files import SharedFile
from adapters.notices import SHARED_PRIVATELY
from adapters.slack.limits import SlackMessage
from adapters.slack.render import query_messages
from adapters.slack.sources import GONE, NOT_ALLOWED, QueryRecords
from agent_core.components import NotificationComponent, UiComponent
from agent_core.config import UiFeature
from agent_core.database.file_tables import FileLimits
from agent_core.feedback import Feedback
from agent_core.state import MemoryKeyValueStore, MemoryTurnQueue
from agent_core.state.turn_writes import TurnWrites
from agent_core.state.turns import Turn as QueuedTurn
from agent_core.turn.resuming import Resume
from bots.agents import ServedAgent
from bots.approvals import RESUME_KEEP, decide, resume_key
from bots.dev.approvals import ConsoleApprovals, persona_of
from bots.dev.events import TurnFeed
from bots.dev.identity import Persona
from bots.dev.replies import BothChannels
from bots.dev.schedules import ConsoleSchedules
from bots.dev.slack_view import TEAM_ID, SlackView
from bots.dev.slots import NoSlot
from bots.dev.teams_view import TeamsView
from bots.dev.turnlog import TurnRecord, UsageMeter
from bots.dev.uploads import ConsoleUploads
from bots.files import SharedFiles
from bots.metrics import ChannelMetrics
from bots.turn_kinds import Occurrence, Question, RemovedNotice, ResumedApproval
from bots.turns import Answering, Audience, Outcome, Route, Slot, Stop, TurnHost

log = logging.getLogger("threadline.dev")

TurnState = Literal["running", "done", "stopped", "error"]
Channel = Literal["slack", "teams"]
STATES: dict[str, TurnState] = {"completed": "done", "stopped": "stopped", "cancelled": "stopped"}


@dataclass(frozen=True)
class ConsoleOptions:
    """How the console drives the adapters.

    ``pace`` replaces the channels' one-second batching (Slack ``flush_interval`` /
    ``update_interval``, Teams' streaming pace) so answers visibly stream; ``--real-pace``
    restores 1.0 s. ``stop_button_after``: seconds before Slack's "Working… Stop" message
    appears (the Slack bot's default).
    """

    pace: float = 0.2
    stop_button_after: float = 3.0
    teams_targeted: bool = False
    keep_turns: int = 20
    turns_per_person: int = 3
    """Turns of one persona answered at once (the bots' ``turns_per_person``)."""


@dataclass
class Turn:
    """One question being answered; ``feed`` carries its events to the page, ``task``
    waits for its end (the host answers it)."""

    id: str
    persona: Persona
    thread_id: str
    text: str
    base_url: str = ""
    feed: TurnFeed = field(default_factory=TurnFeed)
    state: TurnState = "running"
    started: float = field(default_factory=time.perf_counter)
    task: asyncio.Task[None] | None = None
    stop_requested: bool = False
    components: int = 0
    files: list[SharedFile] = field(default_factory=list)
    queued_id: str | None = None
    """The host's id of the turn, once it is accepted."""
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    stopper: Any = None
    """Asks the host to stop the turn (set by the console)."""
    resume: str | None = None
    """An approval's id: this turn continues the turn that waited for it."""
    timezone: str | None = None
    """The asker's time zone (the browser's), for schedules."""

    @property
    def conversation_id(self) -> str:
        return self.persona.conversation_id(self.thread_id)

    def stop(self) -> bool:
        """Stop the turn (once); False when it already ended."""
        if self.state != "running" or self.stop_requested:
            return False
        self.stop_requested = True
        if self.stopper is not None:
            self.stopper(self)
        return True


class Console:
    """The agent, the channel emulations and the turns in flight.

    >>> from bots.dev.identity import ConsoleUserResolver
    >>> from agent_core import Agent, ScriptedLlmService, ToolRegistry, InMemoryAgentMemory
    >>> agent = Agent(llm_service=ScriptedLlmService(["hi"]), tool_registry=ToolRegistry(),
    ...               user_resolver=ConsoleUserResolver(), agent_memory=InMemoryAgentMemory())
    >>> Console(agent).options.pace
    0.2
    """

    def __init__(
        self,
        agent: ServedAgent,
        *,
        options: ConsoleOptions | None = None,
        files: SharedFiles | None = None,
    ) -> None:
        self.agent = agent
        self.options = options or ConsoleOptions()
        self.files = files
        """Where attached files become tables (None: the ``files`` extra is missing or
        ``THREADLINE_FILES=0``; an attached file is then told it cannot be read)."""
        self.uploads = ConsoleUploads()
        self.slack = SlackView()
        self.teams = TeamsView()
        self.turns: dict[str, Turn] = {}
        self.queries = QueryRecords(MemoryKeyValueStore())
        """The queries behind Slack answers, for "Show query" (as the Slack bot keeps them)."""
        self.http: aiohttp.ClientSession | None = None
        self.meter = UsageMeter()
        for served in agent.served_agents():
            served.llm_middlewares.append(self.meter)
        if files is not None:
            files.serve(agent)
        self.base_url = ""
        """The console's own address (where the channel fakes are), as the page last used it."""
        self.queue = MemoryTurnQueue()
        self.host = TurnHost(
            agent,
            self.queue,
            ConsoleWing(self),
            metrics=ChannelMetrics("console", measured=False),
            files=files,
            per_person=self.options.turns_per_person,
        )
        self.approvals = ConsoleApprovals(self)
        self.schedules = ConsoleSchedules(self)
        """Schedules made in the console, run by its host (``bots.dev.schedules``)."""

    @property
    def max_file_bytes(self) -> int:
        """The most an attached file may hold (the bots' ``[database] files_max_mb``)."""
        return self.files.max_bytes if self.files is not None else FileLimits().max_bytes

    async def open(self) -> None:
        if self.http is None:
            self.http = aiohttp.ClientSession()
        self.host.start()
        self.schedules.schedules.start()

    async def close(self) -> None:
        for turn in list(self.turns.values()):
            turn.stop()
        tasks = [turn.task for turn in self.turns.values() if turn.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=10)
        await self.schedules.schedules.drain()
        await self.host.drain(timeout=1)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.approvals.close()
        if self.http is not None:
            await self.http.close()
            self.http = None

    def start_turn(
        self,
        persona: Persona,
        thread_id: str,
        text: str,
        base_url: str,
        files: list[str] | None = None,
        *,
        timezone: str | None = None,
    ) -> Turn:
        """Start answering ``text`` with the attached ``files`` (upload ids); iterate
        ``turn.feed`` for its events. ``base_url`` is the console's own address, where the
        channel fakes are mounted."""
        turn = Turn(
            id=os.urandom(6).hex(),
            persona=persona,
            thread_id=thread_id,
            text=text,
            base_url=base_url,
            files=self.uploads.shared(files or []),
            stopper=self._stop,
            timezone=timezone,
        )
        self.base_url = base_url
        self._forget_old_turns()
        self.turns[turn.id] = turn
        turn.task = asyncio.create_task(self._run(turn), name=f"turn-{turn.id}")
        return turn

    def page_turn(self, persona: Persona, thread_id: str, text: str, base_url: str) -> Turn:
        """A turn the page shows with no question of its own behind it (a scheduled run):
        registered like one, its start already told."""
        turn = Turn(
            id=os.urandom(6).hex(),
            persona=persona,
            thread_id=thread_id,
            text=text,
            base_url=base_url or self.base_url,
            stopper=self._stop,
        )
        self._forget_old_turns()
        self.turns[turn.id] = turn
        self._started(turn)
        return turn

    def reply(self, turn: Turn, stop: Stop, first: Sequence[UiComponent] = ()) -> BothChannels:
        return BothChannels(self, turn, stop, first)

    async def show(self, turn: Turn, component: UiComponent) -> None:
        """One component in the turn's panes, outside any answer (a schedule command's
        reply, a notice)."""

        def no_stop(*reason: object) -> None:
            return None

        async with BothChannels(self, turn, no_stop) as reply:
            await reply.handle(component)
            await reply.finish()

    def _forget_old_turns(self) -> None:
        finished = [t for t in self.turns.values() if t.state != "running"]
        for turn in finished[: max(0, len(finished) - self.options.keep_turns)]:
            del self.turns[turn.id]

    def _stop(self, turn: Turn) -> None:
        if turn.queued_id is not None:
            stop = self.host.request_stop(turn.queued_id, by=turn.persona.user_id)
            self.host.background(stop)

    def click_approval(
        self,
        persona: Persona,
        thread_id: str,
        approval_id: str,
        decision: Decision,
        channel: Channel,
        base_url: str,
    ) -> Turn:
        """A click on an approval message's Approve / Deny / Stop, by ``persona`` (the page's
        switch decides who clicks), answered as a turn: iterate ``turn.feed``."""
        turn = Turn(
            id=os.urandom(6).hex(),
            persona=persona,
            thread_id=thread_id,
            text=f"({decision}: clicked in {channel.capitalize()})",
            base_url=base_url,
            stopper=self._stop,
        )
        self._forget_old_turns()
        self.turns[turn.id] = turn
        click = ApprovalClick(approval_id, decision)
        turn.task = asyncio.create_task(self._click(turn, click, channel), name=f"click-{turn.id}")
        return turn

    async def _click(self, turn: Turn, click: ApprovalClick, channel: Channel) -> None:
        """Decide (as the clicker, by the bots' own ``bots.approvals.decide``), show it, and
        resume the waiting turn when decided."""
        feed, persona = turn.feed, turn.persona
        self.meter.recording(turn.id, TurnRecord(who=persona.describe(), text=turn.text))
        feed.emit(
            "turn",
            {
                "state": "started",
                "id": turn.id,
                "persona": persona.model_dump(),
                "text": turn.text,
                "thread_id": turn.thread_id,
                "conversation_id": turn.conversation_id,
                "files": [],
            },
        )
        try:
            context = persona.request_context(turn.thread_id)
            self.approvals.clicking[click.approval_id] = feed
            try:
                answer = await decide(
                    self.agent, context, click, conversation_id=turn.conversation_id
                )
            finally:
                self.approvals.clicking.pop(click.approval_id, None)
            feed.emit(
                "approval",
                {
                    "decided": answer.decided,
                    "reason": answer.reason,
                    "message": answer.message,
                    "channel": channel,
                    "clicker": persona.model_dump(),
                },
            )
            record = answer.record
            if not answer.decided and channel == "slack":
                await self.approvals.tell_clicker(feed, turn.base_url, persona, answer.message)
            if not (answer.resume and record is not None):
                self.ended(turn, "done")
                return
            turn.persona, turn.resume = persona_of(record.request), record.id
            turn.queued_id = await self.host.accept(
                f"console:{turn.conversation_id}",
                ResumedApproval(approval_id=record.id, where=ConsoleAsked(turn=turn.id)),
                owner=turn.persona.user_id,
                dedupe_key=resume_key(record.id),
                dedupe_ttl=RESUME_KEEP,
            )
            if turn.queued_id is None:  # resumed already (a click raced this one)
                self.ended(turn, "done")
            await turn.ended.wait()
        except Exception as error:  # the console's own failure: say so in the page
            log.exception("console click %s failed", turn.id)
            self.ended(turn, "error", error)

    async def record_feedback(
        self,
        persona: Persona,
        thread_id: str,
        message_id: str,
        positive: bool,
        *,
        turn_id: str | None = None,
    ) -> Feedback:
        feedback = Feedback(
            conversation_id=persona.conversation_id(thread_id),
            message_id=message_id,
            positive=positive,
            turn_id=turn_id,
        )
        await self.agent.record_feedback(persona.request_context(thread_id), feedback)
        return feedback

    async def show_queries(
        self, persona: Persona, thread_id: str, turn_id: str
    ) -> list[SlackMessage]:
        """What Slack's "Show query" shows ``persona`` (checked now, as the Slack bot checks
        the clicker): the queries behind the answer, or why not."""
        context = persona.request_context(thread_id)
        if not await self.agent.may_see(context, UiFeature.TOOL_ARGUMENTS.value):
            return [SlackMessage(text=NOT_ALLOWED)]
        sources = await self.queries.load(TEAM_ID, persona.channel_id, thread_id, turn_id)
        return query_messages(sources) if sources else [SlackMessage(text=GONE)]

    # --- one turn: the page's side (the host answers it through ``ConsoleWing``) ------------

    async def _run(self, turn: Turn) -> None:
        """Tell the page the turn started, hand it to the host, and wait for its end."""
        self._started(turn)
        try:
            turn.queued_id = await self.host.accept(
                f"console:{turn.conversation_id}",
                Question(asked=ConsoleAsked(turn=turn.id)),
                owner=turn.persona.user_id,
            )
            if turn.stop_requested:
                self._stop(turn)
            await turn.ended.wait()
        except Exception as error:  # the console's own failure: say so in the page
            log.exception("console turn %s failed", turn.id)
            self.ended(turn, "error", error)

    def _started(self, turn: Turn) -> None:
        """Tell the page (and the terminal's turn log) that ``turn`` started."""
        self.meter.recording(turn.id, TurnRecord(who=turn.persona.describe(), text=turn.text))
        turn.feed.emit(
            "turn",
            {
                "state": "started",
                "id": turn.id,
                "conversation_id": turn.conversation_id,
                "thread_id": turn.thread_id,
                "persona": turn.persona.model_dump(),
                "text": turn.text,
                "files": [{"name": f.name, "size": f.size} for f in turn.files],
            },
        )

    def ended(self, turn: Turn, state: TurnState, error: BaseException | None = None) -> None:
        """The turn is over: its last events, its line in the terminal."""
        if turn.ended.is_set():
            return
        turn.state = state
        if error is not None:
            turn.feed.emit("turn", {"state": "error", "id": turn.id, "error": repr(error)})
        elapsed = round(time.perf_counter() - turn.started, 3)
        record = self.meter.done(turn.id)
        if record is not None:
            log.info("%s", record.line(state, elapsed))
        turn.feed.emit(
            "turn",
            {"state": state, "id": turn.id, "seconds": elapsed, "components": turn.components},
        )
        turn.feed.close()
        turn.ended.set()


class ConsoleAsked(BaseModel):
    """A console turn's delivery: the page's turn (the queue is in memory, so the page
    turn itself holds the question, the persona and the files).

    >>> ConsoleAsked(turn="t1").turn
    't1'
    """

    turn: str


ConsoleKind = Annotated[
    Question[ConsoleAsked] | ResumedApproval[ConsoleAsked] | Occurrence,
    Field(discriminator="kind"),
]
"""The kinds of a console turn (``bots.turn_kinds``): no workflow steps, and no removed
schedule's line (``threadline forget`` never reaches the console's in-memory queue)."""


class ConsoleWing:
    """The console's hook in the turn host: a queued turn -> its persona's context, and one
    reply stream that shows each component in the developer pane and both channels."""

    platform = "console"
    kinds: TypeAdapter[ConsoleKind] = TypeAdapter(ConsoleKind)

    def __init__(self, console: Console) -> None:
        self.console = console

    def for_turn(self, writes: TurnWrites | None) -> Self:
        """Itself: the console's queue is in this process and writes nothing with its
        records (``writes`` is None)."""
        return self

    # --- the route of each kind ----------------------------------------------------------

    def question(self, asked: ConsoleAsked) -> Route:
        async def answer(turn: QueuedTurn, slot: Slot, stop: Stop) -> Answering | Outcome:
            return await self._question(turn, self.console.turns[asked.turn], stop)

        return Route(lambda turn: self._slot(asked), answer)

    def resumed(self, approval: ResumedApproval[ConsoleAsked]) -> Route:
        where = approval.where

        async def answer(turn: QueuedTurn, slot: Slot, stop: Stop) -> Answering | Outcome:
            page = self.console.turns[where.turn]
            return self._resumed(page, approval.approval_id, stop)

        return Route(lambda turn: self._slot(where), answer)

    def step(self, step: Any) -> None:
        return None  # the console shows no workflows (its kinds have none)

    def scheduled(self, run: Occurrence) -> Route:
        return self.console.schedules.route(run)

    def removed(self, notice: RemovedNotice) -> None:
        return None  # never queued here (its kinds have none)

    # --- a page's turn ------------------------------------------------------------------

    async def _slot(self, asked: ConsoleAsked) -> Slot | None:
        found = self.console.turns.get(asked.turn)
        if found is None or found.ended.is_set():
            return None  # forgotten, or ended already
        if found.stop_requested:  # stopped (the page went away) before it started
            self.console.ended(found, "stopped")
            return None
        return NoSlot()

    async def _question(self, turn: QueuedTurn, page: Turn, stop: Stop) -> Answering | Outcome:
        console = self.console
        if (handled := await console.schedules.command(page, turn.id)) is not None:
            console.ended(page, "done")
            return handled
        answering = self._answering(page, stop)

        async def fetch(file: SharedFile, store: SharedFiles | None) -> bytes:
            return await console.uploads.fetch(file)

        # a channel shared with another organisation: as a served bot's default policy
        # ("private"), the answer goes to the asker alone and the place reads one line
        told = [_told(SHARED_PRIVATELY)] if answering.audience == "asker" else []
        return replace(
            answering, question=page.text, files=page.files, fetch=fetch, shown_first=told
        )

    def _resumed(self, page: Turn, approval_id: str, stop: Stop) -> Answering:
        return replace(self._answering(page, stop), question=Resume(approval_id))

    def _answering(self, page: Turn, stop: Stop) -> Answering:
        """The page's persona asking in its place, both channels' replies, and the page
        told when the turn ends."""
        console = self.console
        context = page.persona.request_context(page.thread_id)
        context.metadata["turn_id"] = page.id
        shared = page.persona.place == "shared"
        audience: Audience = "asker" if shared else "place"
        if shared:
            context.metadata["is_private"] = True

        async def done(outcome: Outcome) -> None:
            console.ended(page, STATES.get(outcome, "error"))

        reply = BothChannels(console, page, stop)
        return Answering(
            context,
            "",
            reply,
            conversation_id=page.conversation_id,
            done=done,
            audience=audience,
        )


def _told(text: str) -> UiComponent:
    """One line everyone in the place reads."""
    return UiComponent.of(NotificationComponent(message=text, level="info"), text)
