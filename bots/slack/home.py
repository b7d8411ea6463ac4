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

**Refreshed when what it shows changes**: a schedule command typed in chat (``/schedule
pause ...``) publishes the asker's home again, when they have opened it before (the state
remembers who did, and their DM channel, for ``HOME_TTL``); a home never opened is built
when it is.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack import reach
from adapters.slack.controls import button_message_of
from adapters.slack.errors import SlackCallFailed
from adapters.slack.home_view import home_view, publish_home
from adapters.slack.payloads import BlockActions
from agent_core.components import UiComponent
from agent_core.errors import StateUnavailableError
from agent_core.schedules.model import Place
from agent_core.state import KeyValueStore
from agent_core.users import RequestContext
from bots.home import Home, home_context

log = logging.getLogger(__name__)

HOME_TTL = 30 * 24 * 3600.0
"""How long the state remembers that someone opened their home (and their DM channel)."""


def is_home_click(click: BlockActions) -> bool:
    """Whether ``click`` happened on the Home tab (a view, not a message)."""
    container, view = click.container, click.view or {}
    return bool(container and container.type == "view") and view.get("type") == "home"


class SlackHome:
    """See the module docstring."""

    def __init__(self, home: Home, cache: KeyValueStore) -> None:
        self.home = home
        self.cache = cache

    async def opened(
        self, client: AsyncWebClient, team: str, user: str, channel: str, enterprise: str | None
    ) -> None:
        """The person opened their Home tab: publish it (and remember they have one)."""
        try:
            await self.cache.set(_opened_key(team, user), channel, ttl=HOME_TTL)
        except StateUnavailableError as error:  # it is not refreshed on changes, that is all
            log.warning("slack: home of %s not remembered (%s)", user, error)
        await self._publish(client, _context(team, user, channel, enterprise))

    async def refresh(self, client: AsyncWebClient, metadata: Mapping[str, Any]) -> None:
        """Something the home of the person of ``metadata`` shows changed: publish it again,
        if they ever opened it."""
        team, user = str(metadata.get("workspace_id") or ""), str(metadata.get("user_id") or "")
        try:
            channel = await self.cache.get(_opened_key(team, user))
        except StateUnavailableError as error:
            log.warning("slack: home of %s not refreshed (%s)", user, error)
            return
        if isinstance(channel, str):
            enterprise = metadata.get("slack_enterprise_id")
            await self._publish(client, _context(team, user, channel, enterprise))

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
    ) -> None:
        meta = context.metadata
        zone = timezone or await _timezone(client, meta["user_id"])
        shown = await self.home.components(context, timezone=zone, said=said or [])
        view = home_view(shown, private_metadata=meta["channel_id"])
        try:
            await publish_home(client, meta["user_id"], view)
        except SlackCallFailed as error:
            log.warning("slack: home of %s not published (%s)", meta["user_id"], error.failure)


def _opened_key(team: str, user: str) -> str:
    return f"slack:home:{team}:{user}"


def _context(team: str, user: str, channel: str, enterprise: str | None) -> RequestContext:
    extra = {"slack_enterprise_id": enterprise} if enterprise else {}
    return home_context("slack", team, user, channel, **extra)


async def _timezone(client: AsyncWebClient, user: str) -> str:
    person = await reach.person(client, user)
    return person.timezone or "UTC"
