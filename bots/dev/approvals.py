"""Approval in the console: both channels' approval messages, and the persona switch
deciding who clicks.

A turn that calls a tool waiting for approval posts the Slack approval message and the
Teams approval card (the adapters' own, through the fakes) and ends, waiting. Each reply
stream tells ``ConsoleApprovals.note`` where its message went. A click (Slack's buttons or
the card's ``Action.Execute``) is ``POST /api/approvals``, answered as a turn of its own
(Server-Sent Events, as ``/api/turns``)::

    click as the persona selected -> agent.decide_approval / cancel_approval
      refused ("only Ana may approve this") -> Slack: an ephemeral message to the clicker
                                              (chat.postEphemeral); Teams: what the invoke
                                              response tells the clicker (an ``approval``
                                              event the page shows in the Teams pane)
      decided -> both messages updated in place (chat.update; the connector's update),
                 then the waiting turn resumed on the console's turn host, in the same
                 thread, as the asker

A decision made while another turn runs (a newer message supersedes a pending approval)
updates both messages through that turn's feed: the console listens to the agent's book
(``bots.approvals.listen``) from its start to its ``close``. The console runs no expiry sweep: an
approval whose time is up expires at its next click (and the turn then goes on).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import aiohttp
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.approval import update_approval as update_slack
from adapters.slack.errors import SlackCallFailed
from adapters.slack.escape import escape
from adapters.slack.limits import SlackMessage
from adapters.slack.sources import show_privately
from adapters.teams.activities import ConversationRef
from adapters.teams.approval import update_approval as update_teams
from agent_core.approvals.record import ApprovalRecord
from bots.approvals import listen
from bots.dev.events import TurnFeed
from bots.dev.identity import CHANNEL_IDS, Persona

if TYPE_CHECKING:
    from bots.agents import ServedAgent
    from bots.dev.slack_view import SlackView
    from bots.dev.teams_view import TeamsView


class RunningTurn(Protocol):
    """What the approvals read of a console turn (``bots.dev.turns.Turn``)."""

    @property
    def state(self) -> str: ...

    @property
    def conversation_id(self) -> str: ...

    @property
    def feed(self) -> TurnFeed: ...


class Console(Protocol):
    """What the approvals use of the console (``bots.dev.turns.Console``, which owns them:
    named here, not imported, so the two modules do not import each other)."""

    agent: ServedAgent
    slack: SlackView
    teams: TeamsView
    http: aiohttp.ClientSession | None

    @property
    def turns(self) -> Mapping[str, RunningTurn]: ...


log = logging.getLogger("threadline.dev")

KEEP = 200
"""Approval messages the console remembers (a long session stays small)."""

OnApproval = Callable[[str, dict[str, Any]], Awaitable[None]]


@dataclass
class Shown:
    """Where both channels showed one approval (the console's own address with it)."""

    base_url: str
    slack: dict[str, Any] = field(default_factory=dict)
    teams: dict[str, Any] = field(default_factory=dict)


def persona_of(request: dict[str, Any]) -> Persona:
    """The persona who asked, from the request an approval kept.

    >>> persona_of({"user_id": "U0BO", "user_name": "Bo", "console_groups": ["user"],
    ...             "channel_id": "C0CONSOLE"}).describe()
    'Bo (user, channel)'
    """
    groups = request.get("console_groups")
    return Persona(
        user_id=str(request.get("user_id") or "U0ANA"),
        name=str(request.get("user_name") or "Ana"),
        groups=list(groups) if isinstance(groups, list) else ["user"],
        place=next(
            (
                place
                for place, channel in CHANNEL_IDS.items()
                if channel == request.get("channel_id")
            ),
            "dm",
        ),
    )


class ConsoleApprovals:
    """See the module docstring.

    >>> from agent_core import Agent, ScriptedLlmService, ToolRegistry
    >>> from bots.dev.turns import Console
    >>> console = Console(Agent(llm_service=ScriptedLlmService(), tool_registry=ToolRegistry()))
    >>> console.approvals.shown
    OrderedDict()
    """

    def __init__(self, console: Console) -> None:
        self.console = console
        self.shown: OrderedDict[str, Shown] = OrderedDict()
        self.clicking: dict[str, TurnFeed] = {}
        """The feed of the click deciding an approval now (its updates go there)."""
        self._unlisten = listen(console.agent, self._decided)

    def close(self) -> None:
        """Hear of no more decisions (the console closes)."""
        self._unlisten()

    def noting(self, channel: str, base_url: str) -> OnApproval:
        """The ``on_approval`` of one channel's reply stream."""

        async def note(approval_id: str, where: dict[str, Any]) -> None:
            shown = self.shown.setdefault(approval_id, Shown(base_url))
            setattr(shown, channel, where)
            while len(self.shown) > KEEP:
                self.shown.popitem(last=False)

        return note

    async def tell_clicker(
        self, feed: TurnFeed, base_url: str, persona: Persona, text: str
    ) -> None:
        """Slack's refusal: an ephemeral message to the clicker, through the fake."""
        console = self.console
        token = console.slack.open(feed)
        try:
            client = AsyncWebClient(
                token=token, base_url=f"{base_url}/slack/api/", session=console.http
            )
            await show_privately(
                client,
                channel=persona.channel_id,
                user=persona.user_id,
                thread_ts=None,
                messages=[SlackMessage(text=escape(text))],
            )
        finally:
            console.slack.close(token)

    async def _decided(self, record: ApprovalRecord) -> None:
        feed = self.clicking.get(record.id) or self._running_feed(record.conversation_id)
        shown = self.shown.get(record.id)
        if feed is None or shown is None:
            return
        await self.show(record, shown, feed)

    def _running_feed(self, conversation_id: str) -> TurnFeed | None:
        running = [
            turn
            for turn in self.console.turns.values()
            if turn.state == "running" and turn.conversation_id == conversation_id
        ]
        return running[-1].feed if running else None

    async def show(self, record: ApprovalRecord, shown: Shown, feed: TurnFeed) -> None:
        """The decision, in place of both approval messages (reported to ``feed``)."""
        console, view = self.console, record.component()
        slack_token = console.slack.open(feed)
        teams_token = console.teams.open(feed, private_to=str(record.request.get("user_id")))
        try:
            if shown.slack:
                client = AsyncWebClient(
                    token=slack_token, base_url=f"{shown.base_url}/slack/api/", session=console.http
                )
                try:
                    await update_slack(client, shown.slack, view)
                except SlackCallFailed as error:
                    log.info("slack approval message not updated (%s)", error.failure)
            if shown.teams and console.http is not None:
                ref = ConversationRef.from_record(shown.teams["conversation"])
                connector = console.teams.connector(console.http, ref.service_url, teams_token)
                await update_teams(connector, shown.teams, view)
        finally:
            console.slack.close(slack_token)
            console.teams.close(teams_token)
