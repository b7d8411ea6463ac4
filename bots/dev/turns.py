"""``Console``: runs each turn through the agent and both channel adapters at once.

A turn reads like this::

    components = agent.send_message(context, text, conversation_id=key)
    for each component:  feed <- component (raw)       the developer pane
                         SlackReplyStream.handle()     -> fake Slack Web API    -> feed
                         TeamsReplyStream.handle()     -> fake Bot Connector    -> feed
    Slack finish() + Teams finish()

Both fakes are the shipped ones (``adapters.*.testing``), mounted in the console's own app
and reached over HTTP by the clients the bots use (see ``slack_view``, ``teams_view``).

Stop cancels the turn's task, as the channel hosts do (``bots.slack.turns``,
``bots.teams.turns``): the agent commits a consistent partial turn and both replies are
settled: what was shown ends with "_(Stopped.)_". Each turn ends with one line in the
terminal (``turnlog``): who asked what, the outcome, how long, the tools, the tokens.

Files attached to a question (``uploads``) are loaded by ``bots.files.take_files`` before
the agent runs, as the bots load the files shared in Slack and Teams: the asker's tables of
this conversation, a warning in both channels for what could not be read, and the question
as the LLM gets it (with what the files became) for ``query_files``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, Literal

import aiohttp
from slack_sdk.web.async_client import AsyncWebClient

from adapters.files import SharedFile
from adapters.notices import STOPPED
from adapters.slack.context import ReplyTarget
from adapters.slack.limits import SlackMessage
from adapters.slack.render import query_messages
from adapters.slack.sources import GONE, NOT_ALLOWED, QueryRecords
from adapters.slack.stream import SlackReplyStream
from adapters.teams.stream import ReplyOptions, TeamsReplyStream
from agent_core.components import SourcesComponent, UiComponent
from agent_core.config import UiFeature
from agent_core.database.file_tables import FileLimits
from agent_core.feedback import Feedback
from agent_core.state import MemoryKeyValueStore
from agent_core.tools.files import file_scope
from bots.agents import ServedAgent
from bots.dev.events import TurnFeed
from bots.dev.identity import Persona
from bots.dev.slack_view import TEAM_ID, SlackView
from bots.dev.teams_view import TeamsView, conversation_ref
from bots.dev.turnlog import TurnRecord, UsageMeter, recording
from bots.dev.uploads import ConsoleUploads
from bots.files import SharedFiles, take_files

log = logging.getLogger("threadline.dev")

TurnState = Literal["running", "done", "stopped", "error"]
Channel = Literal["slack", "teams"]


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


@dataclass
class Turn:
    """One question being answered; ``feed`` carries its events to the page."""

    id: str
    persona: Persona
    thread_id: str
    text: str
    feed: TurnFeed = field(default_factory=TurnFeed)
    state: TurnState = "running"
    started: float = field(default_factory=time.perf_counter)
    task: asyncio.Task[None] | None = None
    stop_requested: bool = False
    components: int = 0
    files: list[SharedFile] = field(default_factory=list)

    @property
    def conversation_id(self) -> str:
        return self.persona.conversation_id(self.thread_id)

    def stop(self) -> bool:
        """Cancel the turn (once); False when it already ended."""
        if self.task is None or self.task.done() or self.stop_requested:
            return False
        self.stop_requested = True
        self.task.cancel()
        return True


@dataclass(frozen=True)
class Tokens:
    """A turn's tokens: its calls to each channel's fake are reported to its feed."""

    slack: str
    teams: str


def component_json(component: UiComponent) -> dict[str, Any]:
    """The component for the developer pane; the SQL of sources the asker may not see is
    left out, as every channel leaves it out."""
    data = component.model_dump(mode="json")
    rich = component.rich_component
    if isinstance(rich, SourcesComponent) and not (rich.queries_public or rich.asker_sees_queries):
        for source in data["rich_component"]["sources"]:
            source["query"] = "(withheld: admin-only)"
    return data


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
        meter = UsageMeter()
        for served in agent.served_agents():
            served.llm_middlewares.append(meter)
        if files is not None:
            files.serve(agent)

    @property
    def max_file_bytes(self) -> int:
        """The most an attached file may hold (the bots' ``[database] files_max_mb``)."""
        return self.files.max_bytes if self.files is not None else FileLimits().max_bytes

    async def open(self) -> None:
        if self.http is None:
            self.http = aiohttp.ClientSession()

    async def close(self) -> None:
        for turn in list(self.turns.values()):
            turn.stop()
            if turn.task is not None:
                with contextlib.suppress(BaseException):
                    await turn.task
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
    ) -> Turn:
        """Start answering ``text`` with the attached ``files`` (upload ids); iterate
        ``turn.feed`` for its events. ``base_url`` is the console's own address, where the
        channel fakes are mounted."""
        turn = Turn(
            id=os.urandom(6).hex(),
            persona=persona,
            thread_id=thread_id,
            text=text,
            files=self.uploads.shared(files or []),
        )
        self._forget_old_turns()
        self.turns[turn.id] = turn
        turn.task = asyncio.create_task(self._run(turn, base_url), name=f"turn-{turn.id}")
        return turn

    def _forget_old_turns(self) -> None:
        finished = [t for t in self.turns.values() if t.state != "running"]
        for turn in finished[: max(0, len(finished) - self.options.keep_turns)]:
            del self.turns[turn.id]

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

    # --- one turn ---------------------------------------------------------------------------

    async def _run(self, turn: Turn, base_url: str) -> None:
        feed = turn.feed
        record = TurnRecord(who=turn.persona.describe(), text=turn.text)
        recording(record)
        feed.emit(
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
        private_to = turn.persona.user_id
        tokens = Tokens(self.slack.open(feed), self.teams.open(feed, private_to=private_to))
        try:
            turn.state = await self._drive(turn, tokens, base_url)
        except asyncio.CancelledError:  # stopped while the replies were being closed
            turn.state = "stopped"
            if not turn.stop_requested:
                raise
            _uncancel()
        except Exception as error:  # the console's own failure: say so in the page
            log.exception("console turn %s failed", turn.id)
            turn.state = "error"
            feed.emit("turn", {"state": "error", "id": turn.id, "error": repr(error)})
        finally:
            self.slack.close(tokens.slack)
            self.teams.close(tokens.teams)
            elapsed = round(time.perf_counter() - turn.started, 3)
            log.info("%s", record.line(turn.state, elapsed))
            feed.emit(
                "turn",
                {
                    "state": turn.state,
                    "id": turn.id,
                    "seconds": elapsed,
                    "components": turn.components,
                },
            )
            feed.close()

    def _slack_reply(self, turn: Turn, token: str, base_url: str) -> SlackReplyStream:
        persona, pace = turn.persona, self.options.pace
        client = AsyncWebClient(token=token, base_url=f"{base_url}/slack/api/", session=self.http)
        target = ReplyTarget(
            channel=persona.channel_id,
            thread_ts=turn.thread_id,
            team_id=TEAM_ID,
            user_id=persona.user_id,
            is_dm=persona.is_dm,
            turn_id=turn.id,
        )
        return SlackReplyStream(
            client,
            target,
            stop_turn=turn.id,
            stop_button_after=self.options.stop_button_after,
            flush_interval=pace,
            update_interval=pace,
        )

    def _teams_reply(self, turn: Turn, token: str, base_url: str) -> TeamsReplyStream:
        assert self.http is not None, "open() the console first"
        service_url = f"{base_url}/teams/"
        connector = self.teams.connector(self.http, service_url, token)
        options = ReplyOptions(
            pace=self.options.pace, targeted_messages=self.options.teams_targeted
        )
        ref = conversation_ref(turn.persona, turn.thread_id, f"in-{turn.id}", service_url)

        def stopped_by_teams(reason: str) -> None:
            turn.stop()

        return TeamsReplyStream(connector, ref, options=options, on_stop=stopped_by_teams)

    async def _drive(self, turn: Turn, tokens: Tokens, base_url: str) -> TurnState:
        slack = self._slack_reply(turn, tokens.slack, base_url)
        teams = self._teams_reply(turn, tokens.teams, base_url)
        state: TurnState = "done"
        async with teams, slack:
            try:
                await self._stream(turn, slack, teams)
            except asyncio.CancelledError:
                if not turn.stop_requested:
                    raise
                _uncancel()  # the Stop is handled: the replies may still be closed
                state = "stopped"
            stopped = state == "stopped"
            await _guarded(turn.feed, "slack", slack.settle(STOPPED) if stopped else slack.finish())
            await _guarded(turn.feed, "teams", teams.settle(STOPPED) if stopped else teams.finish())
        return state

    async def _stream(self, turn: Turn, slack: SlackReplyStream, teams: TeamsReplyStream) -> None:
        persona = turn.persona
        context = persona.request_context(turn.thread_id)
        context.metadata["turn_id"] = turn.id
        text = turn.text
        if turn.files:
            taken = await take_files(
                self.files,
                turn.files,
                asker=persona.user_id,
                scope=file_scope(context.metadata),
                fetch=self.uploads.fetch,
            )
            if (notice := taken.notice()) is not None:
                await self._show(turn, slack, teams, notice)
            text = taken.question(text)
        answer = self.agent.send_message(context, text, conversation_id=turn.conversation_id)
        try:
            async for component in answer:
                await self._show(turn, slack, teams, component)
        finally:  # a Stop inside an adapter call: let the agent settle the turn now
            aclose = getattr(answer, "aclose", None)
            if aclose is not None:
                await aclose()

    async def _show(
        self,
        turn: Turn,
        slack: SlackReplyStream,
        teams: TeamsReplyStream,
        component: UiComponent,
    ) -> None:
        """One component: in the developer pane, then through both channels' adapters."""
        turn.components += 1
        turn.feed.emit("component", component_json(component))
        if isinstance(component.rich_component, SourcesComponent):
            await self.queries.save(
                TEAM_ID, turn.persona.channel_id, turn.thread_id, turn.id, component.rich_component
            )
        await _guarded(turn.feed, "slack", slack.handle(component))
        await _guarded(turn.feed, "teams", teams.handle(component))


def _uncancel() -> None:
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()


async def _guarded(feed: TurnFeed, channel: Channel, call: Awaitable[Any]) -> None:
    """Run one adapter call; an adapter failure is shown in its pane, the turn goes on."""
    try:
        await call
    except Exception as error:
        log.exception("%s adapter failed", channel)
        feed.emit(channel, {"op": "error", "error": f"{type(error).__name__}: {error}"})
