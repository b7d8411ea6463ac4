"""``KeyValueInstallationStore``: Slack installations (bot tokens) in Threadline's state.

slack_sdk's ``AsyncInstallationStore`` over any ``KeyValueStore``: memory for tests, the
SQLite ``state.records`` by default, Redis when several processes serve one app. Records
are the objects' own ``__dict__`` (as slack_sdk's ``FileInstallationStore`` writes them),
so ``Installation(**data)`` / ``Bot(**data)`` read them back. Pair it with bolt's own
``AsyncInstallationStoreAuthorize(..., cache_enabled=True)`` so ``auth.test`` runs once per
token per process, not once per event.

An installation whose refresh token Slack refused is *stopped* (``async_stop``, by
``adapters.slack.tokens``): its tokens are removed and it is listed in ``stopped()`` (for
``threadline doctor``) until the app is installed there again.

While the state backend is unavailable (``StateUnavailableError``), lookups answer from
the last copy this process read or wrote, so a Redis outage does not stop bolt from
authorizing (and acknowledging) events of workspaces it has seen; writes still fail.
"""

from __future__ import annotations

import logging
from logging import Logger
from typing import Any, Self

from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore
from slack_sdk.oauth.installation_store.models.bot import Bot
from slack_sdk.oauth.installation_store.models.installation import Installation

from agent_core.errors import StateUnavailableError
from agent_core.state import KeyValueStore
from agent_core.state.turn_writes import TurnWrites, turn_view

INDEX = "slack:install:index"
"""A log of every installation's key, as installed (read by ``installed()``)."""
STOPPED = "slack:install:stopped"
"""The record listing stopped installations (installation key -> why and when)."""


def installation_key(
    enterprise_id: str | None, team_id: str | None, is_enterprise_install: bool | None
) -> str:
    """Where an installation's records live: one per workspace, one per org-wide install.

    >>> installation_key("E1", "T1", True), installation_key(None, "T1", False)
    ('slack:install:E1:none', 'slack:install:none:T1')
    """
    team = "none" if is_enterprise_install else (team_id or "none")
    return f"slack:install:{enterprise_id or 'none'}:{team}"


class KeyValueInstallationStore(AsyncInstallationStore):
    """Bot and installer records per workspace (and per installing user).

    >>> import asyncio
    >>> from agent_core.state import MemoryKeyValueStore
    >>> store = KeyValueInstallationStore(MemoryKeyValueStore())
    >>> asyncio.run(store.async_save(Installation(team_id="T1", user_id="U1", bot_token="xoxb-1",
    ...                                           bot_id="B1", bot_user_id="UB1")))
    >>> asyncio.run(store.async_find_bot(enterprise_id=None, team_id="T1")).bot_token
    'xoxb-1'
    """

    def __init__(self, records: KeyValueStore, *, logger: Logger | None = None) -> None:
        self._records = records
        self._logger = logger or logging.getLogger(__name__)
        self._last: dict[str, Any] = {}  # last copies, served while the backend is down

    def for_turn(self, writes: TurnWrites | None) -> Self:
        """The installations as the running turn reads them (its records' ``for_turn``)."""
        return turn_view(self, writes, "_records")

    @property
    def logger(self) -> Logger:
        return self._logger

    # --- records, with the outage fallback ---------------------------------------------------

    async def _get(self, key: str) -> Any | None:
        try:
            value = await self._records.get(key)
        except StateUnavailableError:
            if key not in self._last:
                raise
            self._logger.warning("state unavailable: using this process's copy of %s", key)
            return self._last[key]
        self._last[key] = value
        return value

    async def _set(self, key: str, value: Any) -> None:
        await self._records.set(key, value)
        self._last[key] = value

    async def _delete(self, key: str) -> None:
        self._last.pop(key, None)
        await self._records.delete(key)

    # --- AsyncInstallationStore --------------------------------------------------------------

    async def async_save(self, installation: Installation) -> None:
        base = installation_key(
            installation.enterprise_id, installation.team_id, installation.is_enterprise_install
        )
        await self.async_save_bot(installation.to_bot())
        await self._records.append(INDEX, [base], keep=100_000)
        stopped = await self.stopped()
        if base in stopped:  # installed again: no longer stopped
            await self._set(STOPPED, {k: v for k, v in stopped.items() if k != base})
        record = dict(installation.__dict__)
        await self._set(f"{base}:installer", record)
        user = installation.user_id or "none"
        await self._set(f"{base}:installer:{user}", record)
        users: list[str] = await self._get(f"{base}:users") or []
        if user not in users:  # read-modify-write: only used to find records to delete
            await self._set(f"{base}:users", [*users, user])

    async def async_save_bot(self, bot: Bot) -> None:
        if bot.bot_token is None:
            return
        base = installation_key(bot.enterprise_id, bot.team_id, bot.is_enterprise_install)
        await self._set(f"{base}:bot", dict(bot.__dict__))

    async def async_find_bot(
        self,
        *,
        enterprise_id: str | None,
        team_id: str | None,
        is_enterprise_install: bool | None = False,
    ) -> Bot | None:
        data = await self._get(
            f"{installation_key(enterprise_id, team_id, is_enterprise_install)}:bot"
        )
        if data is None and enterprise_id and not is_enterprise_install:
            # a workspace of an Enterprise Grid organisation whose app is installed org-wide
            # (one installation for every workspace, those added later too)
            data = await self._get(f"{installation_key(enterprise_id, None, True)}:bot")
        return None if data is None else Bot(**data)

    async def async_find_installation(
        self,
        *,
        enterprise_id: str | None,
        team_id: str | None,
        user_id: str | None = None,
        is_enterprise_install: bool | None = False,
    ) -> Installation | None:
        base = installation_key(enterprise_id, team_id, is_enterprise_install)
        key = f"{base}:installer" if user_id is None else f"{base}:installer:{user_id}"
        data: dict[str, Any] | None = await self._get(key)
        if data is None:
            return None
        installation = Installation(**data)
        latest = await self.async_find_bot(
            enterprise_id=enterprise_id,
            team_id=team_id,
            is_enterprise_install=is_enterprise_install,
        )
        if latest is not None and installation.bot_token != latest.bot_token:
            # the workspace's bot token may be newer than this user's record (bolt #664)
            installation.bot_id, installation.bot_user_id = latest.bot_id, latest.bot_user_id
            installation.bot_token, installation.bot_scopes = latest.bot_token, latest.bot_scopes
            installation.bot_refresh_token = latest.bot_refresh_token
            installation.bot_token_expires_at = latest.bot_token_expires_at
        return installation

    async def async_delete_bot(self, *, enterprise_id: str | None, team_id: str | None) -> None:
        await self._delete(f"{installation_key(enterprise_id, team_id, False)}:bot")

    async def async_delete_installation(
        self, *, enterprise_id: str | None, team_id: str | None, user_id: str | None = None
    ) -> None:
        base = installation_key(enterprise_id, team_id, False)
        users: list[str] = await self._get(f"{base}:users") or []
        doomed = users if user_id is None else [user_id]
        for user in doomed:
            await self._delete(f"{base}:installer:{user}")
        remaining = [u for u in users if u not in doomed]
        if remaining:
            await self._set(f"{base}:users", remaining)
        else:
            await self._delete(f"{base}:users")
            await self._delete(f"{base}:installer")

    # --- stopped installations ---------------------------------------------------------------

    async def stopped(self) -> dict[str, dict[str, Any]]:
        """Installations stopped since their last install: key -> team, enterprise, reason."""
        found: dict[str, dict[str, Any]] = await self._get(STOPPED) or {}
        return found

    async def async_stop(self, bot: Bot, reason: str, *, at: float) -> None:
        """Remove ``bot``'s installation's tokens and list it as stopped (``reason``: Slack's
        error code, never a token)."""
        base = installation_key(bot.enterprise_id, bot.team_id, bot.is_enterprise_install)
        entry = {
            "enterprise_id": bot.enterprise_id,
            "team_id": None if bot.is_enterprise_install else bot.team_id,
            "team_name": bot.team_name,
            "reason": reason,
            "at": at,
        }
        await self._set(STOPPED, {**await self.stopped(), base: entry})
        await self._delete(f"{base}:bot")
        users: list[str] = await self._get(f"{base}:users") or []
        for user in users:
            await self._delete(f"{base}:installer:{user}")
        await self._delete(f"{base}:users")
        await self._delete(f"{base}:installer")

    # --- what is installed, for threadline doctor ---------------------------------------------

    async def installed(self) -> list[Bot]:
        """Every installation's bot, as installed (not those since removed)."""
        found = []
        for base in dict.fromkeys(await self._records.append(INDEX, [], keep=100_000)):
            data = await self._get(f"{base}:bot")
            if data is not None:
                found.append(Bot(**data))
        return found

    async def note_workspace(self, enterprise_id: str, team_id: str) -> None:
        """``team_id`` is served by its organisation's org-wide installation."""
        base = installation_key(enterprise_id, None, True)
        await self._records.append(f"{base}:workspaces", [team_id], keep=10_000)

    async def workspaces(self, enterprise_id: str) -> list[str]:
        """The workspaces an org-wide installation has served, in the order first seen."""
        base = installation_key(enterprise_id, None, True)
        seen = await self._records.append(f"{base}:workspaces", [], keep=10_000)
        return list(dict.fromkeys(str(team) for team in seen))
