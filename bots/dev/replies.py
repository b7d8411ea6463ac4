"""``BothChannels``: the console's reply stream, the same turn shown in the developer pane
and through both channel adapters at once (``bots.dev.turns`` answers it).

    component -> the developer pane (the feed)
              -> SlackReplyStream.handle()   -> the fake Slack Web API   -> the feed
              -> TeamsReplyStream.handle()   -> the fake Bot Connector   -> the feed

A failing adapter call is shown in its pane; the turn goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Protocol, Self

import aiohttp
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.context import ReplyTarget
from adapters.slack.sources import QueryRecords
from adapters.slack.stream import SlackReplyStream
from adapters.teams.stream import ReplyOptions, TeamsReplyStream
from agent_core.components import SourcesComponent, UiComponent
from bots.dev.events import TurnFeed
from bots.dev.slack_view import TEAM_ID, SlackView
from bots.dev.teams_view import TeamsView, conversation_ref
from bots.turns import Stop

if TYPE_CHECKING:
    from bots.dev.approvals import ConsoleApprovals

log = logging.getLogger("threadline.dev")

Channel = Literal["slack", "teams"]


class Options(Protocol):
    """The console's options the replies read (``bots.dev.turns.ConsoleOptions``)."""

    @property
    def pace(self) -> float: ...

    @property
    def stop_button_after(self) -> float: ...

    @property
    def teams_targeted(self) -> bool: ...


class Channels(Protocol):
    """What the replies use of the console (``bots.dev.turns.Console``)."""

    slack: SlackView
    teams: TeamsView
    http: aiohttp.ClientSession | None
    queries: QueryRecords
    approvals: ConsoleApprovals

    @property
    def options(self) -> Options: ...


def component_json(component: UiComponent) -> dict[str, Any]:
    """The component for the developer pane; the SQL of sources the asker may not see is
    left out, as every channel leaves it out."""
    data = component.model_dump(mode="json")
    rich = component.rich_component
    if isinstance(rich, SourcesComponent) and not (rich.queries_public or rich.asker_sees_queries):
        for source in data["rich_component"]["sources"]:
            source["query"] = "(withheld: admin-only)"
    return data


class BothChannels:
    """The console's ``ReplyStream``: each component in the developer pane, then through the
    Slack and the Teams adapters (a failing adapter is shown in its pane; the turn goes on).
    ``Turn`` is the page's (``bots.dev.turns.Turn``): its persona, thread and feed; ``first``
    is shown as the stream opens (a scheduled run's marker)."""

    def __init__(
        self, console: Channels, turn: Any, stop: Stop, first: Sequence[UiComponent] = ()
    ) -> None:
        self.console = console
        self.turn = turn
        self.first = first
        self.tokens = (
            console.slack.open(turn.feed),
            console.teams.open(turn.feed, private_to=turn.persona.user_id),
        )
        self.slack = self._slack_reply(self.tokens[0])
        self.teams = self._teams_reply(self.tokens[1], stop)

    def _slack_reply(self, token: str) -> SlackReplyStream:
        turn, pace, options = self.turn, self.console.options.pace, self.console.options
        persona = turn.persona
        client = AsyncWebClient(
            token=token, base_url=f"{turn.base_url}/slack/api/", session=self.console.http
        )
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
            stop_button_after=options.stop_button_after,
            flush_interval=pace,
            update_interval=pace,
            on_approval=self.console.approvals.noting("slack", turn.base_url),
        )

    def _teams_reply(self, token: str, stop: Stop) -> TeamsReplyStream:
        console, turn = self.console, self.turn
        assert console.http is not None, "open() the console first"
        service_url = f"{turn.base_url}/teams/"
        connector = console.teams.connector(console.http, service_url, token)
        options = ReplyOptions(
            pace=console.options.pace,
            targeted_messages=console.options.teams_targeted,
            # as the bot resumes an approval's turn: not streamed, nothing said when empty
            stream=turn.resume is None,
            say_when_empty=turn.resume is None,
        )
        ref = conversation_ref(turn.persona, turn.thread_id, f"in-{turn.id}", service_url)
        return TeamsReplyStream(
            connector,
            ref,
            options=options,
            on_stop=stop,
            on_approval=self.console.approvals.noting("teams", turn.base_url),
        )

    async def __aenter__(self) -> Self:
        await self.teams.__aenter__()
        await self.slack.__aenter__()
        for component in self.first:
            await self.handle(component)
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            await self.slack.__aexit__(kind, error, traceback)
            await self.teams.__aexit__(kind, error, traceback)
        finally:
            self.console.slack.close(self.tokens[0])
            self.console.teams.close(self.tokens[1])

    async def handle(self, component: UiComponent) -> None:
        """One component: in the developer pane, then through both channels' adapters."""
        turn = self.turn
        turn.components += 1
        turn.feed.emit("component", component_json(component))
        if isinstance(component.rich_component, SourcesComponent):
            await self.console.queries.save(
                TEAM_ID, turn.persona.channel_id, turn.thread_id, turn.id, component.rich_component
            )
        await _guarded(turn.feed, "slack", self.slack.handle(component))
        await _guarded(turn.feed, "teams", self.teams.handle(component))

    async def finish(self) -> None:
        await _guarded(self.turn.feed, "slack", self.slack.finish())
        await _guarded(self.turn.feed, "teams", self.teams.finish())

    async def settle(self, note: str) -> None:
        await _guarded(self.turn.feed, "slack", self.slack.settle(note))
        await _guarded(self.turn.feed, "teams", self.teams.settle(note))

    async def aclose(self) -> None:
        await self.slack.aclose()
        await self.teams.aclose()


async def _guarded(feed: TurnFeed, channel: Channel, call: Awaitable[Any]) -> None:
    """Run one adapter call; an adapter failure is shown in its pane, the turn goes on."""
    try:
        await call
    except Exception as error:
        log.exception("%s adapter failed", channel)
        feed.emit(channel, {"op": "error", "error": f"{type(error).__name__}: {error}"})
