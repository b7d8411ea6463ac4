"""``BotTokens``: each installation's bot token, renewed ahead of expiry, once for all processes.

With token rotation on, Slack's bot tokens expire (12 hours) and each refresh token may be
traded for a new pair exactly once (``oauth.v2.access``, ``grant_type=refresh_token``). Two
processes trading the same refresh token leave one of them with a token Slack refuses
(bolt-python and node-slack-sdk refresh while authorizing a request, with no lock). Here every
path that calls Slack (turns, schedules, resumed approvals, clicks, commands, identity
lookups) asks ``BotTokens.bot`` for the installation's bot, which decides once:

    more than ``margin`` left       the stored bot, nothing else read or written (the ack path)
    less than ``margin`` left       one caller of all processes takes the installation's lock
                                    in the state (``cache.add``: SQLite or Redis), reads the
                                    record again (another may just have renewed it), trades
                                    the refresh token, saves the new pair, releases the lock
    the lock is taken elsewhere     the current token while it has ``grace`` left; else wait
                                    (reading the record) for the new one, up to ``wait``
    refused (invalid_refresh_token) the installation stops: its tokens removed, listed as
                                    stopped (``threadline doctor``), one ERROR line; its
                                    workspace is then not installed, and nothing tries again
    any other failure               one WARNING; the lock is left to expire (``lock_ttl``), so
                                    at most one attempt a ``lock_ttl`` for all processes

"Now" is the injected ``Clock``: expiry is computed from it and from Slack's ``expires_in``.

>>> import asyncio
>>> from slack_sdk.oauth.installation_store.models.bot import Bot
>>> from slack_sdk.web.async_client import AsyncWebClient
>>> from agent_core.schedules.testing import ManualClock
>>> from agent_core.state import MemoryKeyValueStore
>>> from adapters.slack.installations import KeyValueInstallationStore
>>> store = KeyValueInstallationStore(MemoryKeyValueStore())
>>> tokens = BotTokens(store, MemoryKeyValueStore(), AsyncWebClient(), client_id="1.2",
...                    client_secret="s", clock=ManualClock(0.0))
>>> asyncio.run(store.async_save_bot(Bot(team_id="T1", bot_token="xoxe.xoxb-1", bot_id="B1",
...     bot_user_id="UB", bot_refresh_token="xoxe-1", bot_token_expires_at=43200,
...     installed_at=0.0)))
>>> asyncio.run(tokens.bot(enterprise_id=None, team_id="T1")).bot_token  # 12 h left: as is
'xoxe.xoxb-1'
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
from collections import defaultdict
from logging import Logger
from typing import Self

from slack_sdk.oauth.installation_store.models.bot import Bot
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.errors import SlackCallFailed, web_client
from adapters.slack.installations import KeyValueInstallationStore, installation_key
from agent_core.clock import Clock
from agent_core.errors import AgentError
from agent_core.state import KeyValueStore
from agent_core.state.turn_writes import TurnWrites, turn_view

REFUSED = frozenset({"invalid_refresh_token", "token_revoked", "app_uninstalled"})
"""Slack's answers that end an installation's refresh token for good (anything else, a
wrong client secret included, may pass: it is tried again, and nothing is removed)."""


class InstallationStopped(AgentError):
    """The installation's access ended (its refresh token refused): reinstall the app.

    >>> str(InstallationStopped(STOPPED_MESSAGE)).endswith("needs to reinstall it.")
    True
    """


class TokenRenewalPending(AgentError):
    """The bot token expired and its renewal did not finish in time (try again shortly).

    >>> isinstance(TokenRenewalPending(PENDING_MESSAGE), AgentError)
    True
    """


class BotTokens:
    """Each installation's bot, its token renewed ahead of expiry (the module docstring has
    the rules and an example): ``await tokens.bot(enterprise_id=..., team_id=...)``."""

    def __init__(
        self,
        store: KeyValueInstallationStore,
        locks: KeyValueStore,
        refresher: AsyncWebClient,
        *,
        client_id: str,
        client_secret: str,
        clock: Clock,
        margin: float = 7200.0,
        grace: float = 60.0,
        wait: float = 10.0,
        lock_ttl: float = 30.0,
        poll: float = 0.05,
        logger: Logger | None = None,
    ) -> None:
        self.store = store
        self._locks = locks
        self._refresher = web_client(refresher)
        credentials = f"{client_id}:{client_secret}".encode()
        self._basic = "Basic " + base64.b64encode(credentials).decode()  # never logged
        self._clock = clock
        self._margin, self._grace, self._wait = margin, grace, wait
        self._lock_ttl, self._poll = lock_ttl, poll
        self._log = logger or logging.getLogger(__name__)
        self._local: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)

    def for_turn(self, writes: TurnWrites | None) -> Self:
        """The tokens as the running turn reads their installations (``for_turn``)."""
        return turn_view(self, writes, "store")

    async def bot(
        self,
        *,
        enterprise_id: str | None,
        team_id: str | None,
        is_enterprise_install: bool | None = False,
    ) -> Bot | None:
        """The installation's bot with a token good for more than ``margin`` (renewed here
        when due), ``None`` when not installed; ``InstallationStopped`` when Slack refused
        its refresh token just now, ``TokenRenewalPending`` when it cannot be renewed yet
        and has expired."""
        bot = await self.store.async_find_bot(
            enterprise_id=enterprise_id,
            team_id=team_id,
            is_enterprise_install=is_enterprise_install,
        )
        if bot is None or not self._due(bot):
            return bot
        return await self._renewed(bot)

    def _left(self, bot: Bot) -> float:
        assert bot.bot_token_expires_at is not None
        return float(bot.bot_token_expires_at) - self._clock.now()

    def _due(self, bot: Bot) -> bool:
        if bot.bot_refresh_token is None or bot.bot_token_expires_at is None:
            return False  # a token that does not rotate
        return self._left(bot) <= self._margin

    def _usable(self, bot: Bot) -> bool:
        return self._left(bot) > self._grace

    async def _renewed(self, bot: Bot) -> Bot:
        key = installation_key(bot.enterprise_id, bot.team_id, bot.is_enterprise_install)
        local = self._local[key]
        if local.locked() and self._usable(bot):
            return bot  # being renewed in this process; the current token still works
        async with local:
            current = await self._reread(bot)
            if not self._due(current):
                return current  # renewed meanwhile (here or by another process)
            lock = f"slack:token-renewal:{key}"
            if await self._locks.add(lock, os.getpid(), ttl=self._lock_ttl):
                # read again under the lock: another process may have renewed it between
                # our read and our lock (its refresh token is then spent)
                held = await self._reread(current)
                if not self._due(held):
                    await self._locks.delete(lock)
                    return held
                return await self._refresh(key, lock, held)
            if self._usable(current):
                return current
            return await self._renewed_elsewhere(current)

    async def _reread(self, bot: Bot) -> Bot:
        current = await self.store.async_find_bot(
            enterprise_id=bot.enterprise_id,
            team_id=bot.team_id,
            is_enterprise_install=bot.is_enterprise_install,
        )
        if current is None:
            raise InstallationStopped(STOPPED_MESSAGE)
        return current

    async def _refresh(self, key: str, lock: str, bot: Bot) -> Bot:
        """Trade ``bot``'s refresh token (this caller holds the installation's lock)."""
        try:
            response = await self._refresher.api_call(
                "oauth.v2.access",
                data={"grant_type": "refresh_token", "refresh_token": bot.bot_refresh_token},
                headers={"Authorization": self._basic},  # the scheme Slack's docs prefer
            )
        except SlackCallFailed as failed:
            return await self._refused(key, lock, bot, failed)
        renewed = Bot(
            **{
                **bot.__dict__,
                "bot_token": response["access_token"],
                "bot_refresh_token": response["refresh_token"],
                "bot_token_expires_at": int(self._clock.now()) + int(response["expires_in"]),
            }
        )
        await self.store.async_save_bot(renewed)
        await self._locks.delete(lock)
        self._log.info(
            "slack: renewed the bot token of %s (good for %ss)", key, response["expires_in"]
        )
        return renewed

    async def _refused(self, key: str, lock: str, bot: Bot, failed: SlackCallFailed) -> Bot:
        code = failed.failure.code
        latest = await self._reread(bot)
        if latest.bot_token != bot.bot_token:  # renewed by a process whose lock had expired
            await self._locks.delete(lock)
            return latest
        if code in REFUSED:
            await self.store.async_stop(bot, code, at=self._clock.now())
            await self._locks.delete(lock)
            self._log.error(
                "slack: installation %s stopped: Slack refused its refresh token (%s); its "
                "tokens are removed; reinstall the app there",
                key,
                code,
            )
            raise InstallationStopped(STOPPED_MESSAGE) from None
        self._log.warning(
            "slack: could not renew the bot token of %s (%s); trying again in %.0fs",
            key,
            failed.failure,
            self._lock_ttl,
        )
        if self._usable(bot):
            return bot
        raise TokenRenewalPending(PENDING_MESSAGE) from None

    async def _renewed_elsewhere(self, bot: Bot) -> Bot:
        """Wait for the process renewing ``bot``'s token to save the new one."""
        deadline = asyncio.get_running_loop().time() + self._wait
        while asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(self._poll)  # another process's write: read, with a deadline
            current = await self._reread(bot)
            if current.bot_token != bot.bot_token:
                return current
        raise TokenRenewalPending(PENDING_MESSAGE)


STOPPED_MESSAGE = "The app's access to this workspace has ended; an admin needs to reinstall it."
PENDING_MESSAGE = "Slack is renewing this workspace's access; please try again in a minute."
