"""The Home tab in the Slack bot: a person's home (``bots.home``) published when they open
it, and again after each of its buttons.

    app_home_opened (tab "home") -> views.publish of the person's home
    a click on a Home button     -> its command, answered as the clicker typed it in chat
                                    (``Home.run``; the clicker is the signed click's user),
                                    then the home published again with the reply on top;
                                    a suggested question becomes a turn in the person's DM
                                    with the bot, in a thread of its own

The Home view keeps the person's DM channel (from the event) in ``private_metadata``: a
click on a view carries no channel, and that is where a question's answer goes.

**Refreshed when what it shows changes**, for people who have opened it before (the state
remembers who did, with their DM channel, for ``HOME_TTL``; a home never opened is built when
it is)::

    a schedule made, paused, resumed, removed or run (by its owner or an admin, typed or
    clicked; a run at its time, a run that paused it)     -> its owner's home
    an MCP server connected or disconnected                -> that person's home
    an approval opened or decided (a click, Stop, expiry)  -> the home of everyone of its
                                                              workspace who opened Home and
                                                              may decide it (resolved now)

What changed is noted (no I/O) in ``bots.home_changes.HomeChanges``: a turn never waits
for a Home. This process's refresher publishes ``REFRESH_AFTER`` seconds later, once per
person however many changes came meanwhile (debounced), one person at a time; at most
``MAX_WAITING`` people wait (more are dropped, logged: their home is right again when they
open it). A Home button
publishes at once (the reply on top), which stands for any refresh its own command asked
for. Whichever process made the change publishes; the state only says who opened Home.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack import reach
from adapters.slack.context import user_key
from adapters.slack.controls import button_message_of
from adapters.slack.errors import SlackCallFailed
from adapters.slack.escape import escape
from adapters.slack.home_view import home_view, publish_home
from adapters.slack.payloads import BlockActions
from agent_core.channel import ChannelMetadata
from agent_core.components import SimpleTextComponent, UiComponent
from agent_core.errors import AgentError, StateUnavailableError, log_failure
from agent_core.schedules.model import Place
from agent_core.state import KeyValueStore
from agent_core.users import RequestContext
from bots.home import Home, home_context
from bots.home_changes import HomeChanges

log = logging.getLogger(__name__)

HOME_TTL = 30 * 24 * 3600.0
"""How long the state remembers that someone opened their home (and their DM channel)."""
REFRESH_AFTER = 1.0
"""Seconds a refresh waits for more changes of the same home (debounce)."""
PEOPLE_KEPT = 200
"""People of a workspace remembered as having opened Home (the newest): an approval's
deciders are looked for among them."""

ClientFor = Callable[[str, str | None], Awaitable[AsyncWebClient]]
"""The Web API client of a workspace (team, enterprise): ``WorkspaceClients.client_for``."""


@dataclass(frozen=True)
class Opened:
    """A person who opened their Home tab: where it is published, where its questions go.

    >>> Opened("T1", "U1", "D1", None).key
    'slack:T1:U1'
    """

    team: str
    user: str
    channel: str
    enterprise: str | None

    @property
    def key(self) -> str:
        """Their ``User.id`` (``user_key``): what a schedule's owner and a sign-in name."""
        return user_key(self.team, self.user, self.enterprise)

    def context(self) -> RequestContext:
        return _context(self.team, self.user, self.channel, self.enterprise)


def is_home_click(click: BlockActions) -> bool:
    """Whether ``click`` happened on the Home tab (a view, not a message)."""
    container, view = click.container, click.view or {}
    return bool(container and container.type == "view") and view.get("type") == "home"


class SlackHome:
    """See the module docstring. ``changes`` are what the runtime's pieces noted;
    ``client_for`` finds a workspace's client for a refresh (``None``: refreshes are
    published by nobody; tests of the view alone)."""

    def __init__(
        self,
        home: Home,
        cache: KeyValueStore,
        changes: HomeChanges,
        client_for: ClientFor | None = None,
        *,
        delay: float = REFRESH_AFTER,
    ) -> None:
        self.home = home
        self.cache = cache
        self.changes = changes
        self.client_for = client_for
        self.delay = delay
        self._task: asyncio.Task[None] | None = None

    async def opened(
        self, client: AsyncWebClient, team: str, user: str, channel: str, enterprise: str | None
    ) -> None:
        """The person opened their Home tab: publish it (and remember they have one)."""
        person = Opened(team, user, channel, enterprise)
        try:
            await self.cache.set(_opened_key(person.key), person.__dict__, ttl=HOME_TTL)
            await self.cache.append(_people_key(team), [person.key], keep=PEOPLE_KEPT, ttl=HOME_TTL)
        except StateUnavailableError as error:  # it is not refreshed on changes, that is all
            log.warning("slack: home of %s not remembered (%s)", user, error)
        await self._publish(client, person.context())

    # --- refreshed when what it shows changes -----------------------------------------------

    def start(self) -> None:
        """Start this process's refresher (call in the event loop)."""
        if self.client_for is not None and (self._task is None or self._task.done()):
            self._task = asyncio.create_task(self._refresh_forever(), name="slack-home-refresh")

    async def stop(self) -> None:
        """Stop the refresher (what waits is dropped: a home is built again when opened)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _refresh_forever(self) -> None:
        while True:
            await self.changes.settled(self.delay)
            try:
                await self.refresh_waiting()
            except Exception as error:  # the next change tries again
                log_failure(log, error, "slack: refreshing homes")

    async def refresh_waiting(self) -> int:
        """Publish every home waiting for a refresh (approvals first turned into the people
        who may decide them); how many were published."""
        for approval_id in self.changes.take_approvals():
            try:
                deciders = await self._deciders(approval_id)
            except StateUnavailableError as error:  # they see it when they open Home
                log.warning("slack: deciders of %s not refreshed (%s)", approval_id, error)
                continue
            for key in deciders:
                self.changes.person_changed(key)
        published = 0
        for key in sorted(self.changes.take_people()):
            published += await self._refresh(key)
        return published

    async def _deciders(self, approval_id: str) -> set[str]:
        """Who opened Home in the approval's workspace and may decide it (resolved now)."""
        record = await self.home.agent.approval_book.get(approval_id)
        if record is None or record.request.get("platform") != "slack":
            return set()
        team = str(record.request.get("workspace_id") or "")
        found: set[str] = set()
        for key in dict.fromkeys(await self.cache.append(_people_key(team), [], keep=PEOPLE_KEPT)):
            person = await self._opened(str(key))
            if person is not None and await self.home.may_decide(person.context(), record):
                found.add(person.key)
        return found

    async def _opened(self, key: str) -> Opened | None:
        stored = await self.cache.get(_opened_key(key))
        if not isinstance(stored, dict):
            return None
        return Opened(
            str(stored.get("team") or ""),
            str(stored.get("user") or ""),
            str(stored.get("channel") or ""),
            stored.get("enterprise") or None,
        )

    async def _refresh(self, key: str) -> int:
        """Publish ``key``'s home again, if they ever opened it; 1 when published."""
        if self.client_for is None:
            return 0
        try:
            person = await self._opened(key)
            if person is None:
                return 0
            client = await self.client_for(person.team, person.enterprise)
        except (StateUnavailableError, AgentError) as error:
            log.warning("slack: home of %s not refreshed (%s)", key, error)
            return 0
        return await self._publish(client, person.context())

    # --- decisions typed ----------------------------------------------------------------------

    async def typed(self, context: RequestContext, text: str) -> str:
        """``/approve <id>`` / ``/deny <id>`` typed in any chat (a slash command): the Home's
        Approve or Deny (``Home.decide``, checked again for the signed typist), its answer
        as mrkdwn for them alone. Teams' twin is the same text typed in the 1:1 chat; a
        Slack slash command's answer is ephemeral, so any chat is private enough here."""
        decided = await self.home.decide(context, text)
        if decided is None:
            return "Say `/approve <id>` or `/deny <id>`: the id is on the request and on your Home."
        plain = decided.simple_component
        return escape(plain.text if isinstance(plain, SimpleTextComponent) else "")

    # --- its buttons ------------------------------------------------------------------------

    async def clicked(self, client: AsyncWebClient, click: BlockActions) -> RequestContext | None:
        """A Home button: its command answered and the home published again; the context
        of a question to ask as a turn (None when the click was a command)."""
        text = button_message_of(click) or ""
        team = (click.team and click.team.id) or click.user.team_id or ""
        enterprise = click.enterprise.id if click.enterprise else None
        channel = str((click.view or {}).get("private_metadata") or "")
        context = _context(team, click.user.id, channel, enterprise)
        timezone = await _timezone(client, click.user.id)
        place = Place(
            thread_key=f"slack:{team}:{channel}:commands:{click.user.id}",
            context={**context.metadata, "thread_id": ""},
        )
        said = await self.home.run(
            context, text, place=place, workspace=f"slack:{team}", timezone=timezone
        )
        if said is None:
            return context
        await self._publish(client, context, said=said, timezone=timezone)
        return None

    async def _publish(
        self,
        client: AsyncWebClient,
        context: RequestContext,
        *,
        said: list[UiComponent] | None = None,
        timezone: str | None = None,
    ) -> int:
        meta = context.metadata
        key = user_key(meta["workspace_id"], meta["user_id"], meta.get("slack_enterprise_id"))
        self.changes.shown(key)  # this shows what its waiting refresh would (the reply too)
        zone = timezone or await _timezone(client, meta["user_id"])
        shown = await self.home.components(context, timezone=zone, said=said or [])
        view = home_view(shown, private_metadata=meta["channel_id"])
        try:
            await publish_home(client, meta["user_id"], view)
        except SlackCallFailed as error:
            log.warning("slack: home of %s not published (%s)", meta["user_id"], error.failure)
            return 0
        return 1


def _opened_key(key: str) -> str:
    return f"slack:home:{key}"


def _people_key(team: str) -> str:
    return f"slack:home:people:{team}"


def _context(team: str, user: str, channel: str, enterprise: str | None) -> RequestContext:
    extra = ChannelMetadata(slack_enterprise_id=enterprise) if enterprise else None
    return home_context("slack", team, user, channel, extra)


async def _timezone(client: AsyncWebClient, user: str) -> str:
    person = await reach.person(client, user)
    return person.timezone or "UTC"
