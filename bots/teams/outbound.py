"""Talking to Teams without an inbound request: any process can answer any conversation.

A durable turn may run on a process that never saw its HTTP request, and a proactive message
has no request at all. ``Outbound`` gets the connector for a service URL with the bot's own
credentials the way botbuilder's proactive ``continue_conversation`` does (botbuilder's
connector factory, for a claims identity naming the bot: single-tenant, multi-tenant,
managed identity, sovereign clouds), and keeps every conversation's reference in the shared
``records`` store (``teams:ref:{tenant}:{conversation}``), so a process can message a
conversation another process heard from::

    outbound = Outbound(settings, pool, state.records)
    await outbound.send("72f988bf-...", "19:abc@thread.v2", "The nightly report is ready.")
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import aiohttp

from adapters.teams.activities import ConversationRef, answer_key, reference_key
from adapters.teams.connector import TeamsConnector, send_text
from agent_core.state import KeyValueStore
from bots.teams.connector import ConnectorPool
from bots.teams.settings import TeamsSettings

logger = logging.getLogger(__name__)

ANSWER_TTL = 30 * 24 * 3600.0
"""Seconds feedback on an answer still reaches the memories its turn made."""

REMEMBERED = 10_000
"""References this process knows it saved (so a busy conversation costs no write per turn)."""


class Outbound:
    """Connectors without a ``TurnContext``, and the conversation references; see the module
    docstring.

    >>> from agent_core.state import MemoryKeyValueStore
    >>> records = MemoryKeyValueStore()
    >>> Outbound(TeamsSettings(), ConnectorPool(), records).remembered
    0
    """

    def __init__(
        self, settings: TeamsSettings, pool: ConnectorPool, records: KeyValueStore
    ) -> None:
        self._settings = settings
        self._authentication: Any = None
        self.credentials_built = 0
        """How many times botbuilder built credentials (once per service URL a process
        talks to: the connectors are kept in the pool)."""
        self._pool = pool
        self._records = records
        self._saved: OrderedDict[str, Mapping[str, Any]] = OrderedDict()

    @property
    def remembered(self) -> int:
        return len(self._saved)

    @property
    def session(self) -> aiohttp.ClientSession:
        """The connectors' HTTP session (file downloads share it)."""
        return self._pool.session

    async def connector(self, service_url: str) -> TeamsConnector:
        """The connector for ``service_url``, with the credentials botbuilder's connector
        factory gives the bot for it (none when authentication is off)."""
        existing = self._pool.lookup(service_url)
        if existing is not None:
            return existing
        return self._pool.get(service_url, await self.credentials(service_url))

    async def credentials(self, service_url: str) -> Any:
        """The bot's credentials for ``service_url`` (botbuilder's ``AppCredentials``), as
        its connector factory gives them; ``None`` when authentication is off."""
        if not self._settings.auth_enabled:
            return None
        from botbuilder.integration.aiohttp import ConfigurationBotFrameworkAuthentication
        from botframework.connector.auth import AuthenticationConstants, ClaimsIdentity

        if self._authentication is None:
            configuration = self._settings.botbuilder_configuration()
            self._authentication = ConfigurationBotFrameworkAuthentication(configuration)
        app_id = self._settings.app_id
        claims = ClaimsIdentity(
            {
                AuthenticationConstants.AUDIENCE_CLAIM: app_id,
                AuthenticationConstants.APP_ID_CLAIM: app_id,
            },
            True,
        )
        factory = self._authentication.create_connector_factory(claims)
        client = await factory.create(service_url, self._authentication.get_originating_audience())
        self.credentials_built += 1
        return client.config.credentials

    def remembers(self, ref: ConversationRef) -> bool:
        """Whether this process saved the conversation's reference as it is now."""
        key = ref.record_key
        if self._saved.get(key) != ref.to_record():
            return False
        self._saved.move_to_end(key)
        return True

    async def remember(self, ref: ConversationRef) -> None:
        """Save the conversation's reference in ``records`` (once per process while it is
        unchanged)."""
        if self.remembers(ref):
            return
        key, record = ref.record_key, ref.to_record()
        await self._records.set(key, record)
        self._saved[key] = record
        while len(self._saved) > REMEMBERED:
            self._saved.popitem(last=False)

    async def remember_answer(self, ref: ConversationRef, message_id: str, turn_id: str) -> None:
        """Note which turn posted the answer ``message_id`` (for feedback on it)."""
        key = answer_key(ref.tenant_id, ref.conversation_id, message_id)
        await self._records.set(key, turn_id, ttl=ANSWER_TTL)

    async def answering_turn(
        self, tenant_id: str, conversation_id: str, message_id: str
    ) -> str | None:
        """The turn that posted answer ``message_id``, while it is remembered."""
        found = await self._records.get(answer_key(tenant_id, conversation_id, message_id))
        return found if isinstance(found, str) else None

    async def reference(self, tenant_id: str, conversation_id: str) -> ConversationRef | None:
        """The saved reference of a conversation the bot has heard from, or None."""
        record = await self._records.get(reference_key(tenant_id, conversation_id))
        return ConversationRef.from_record(record) if isinstance(record, Mapping) else None

    async def send(self, tenant_id: str, conversation_id: str, text: str) -> str | None:
        """Post ``text`` (Teams markdown) to a conversation proactively, from any process;
        the new message's id, or None when the bot never heard from that conversation."""
        ref = await self.reference(tenant_id, conversation_id)
        if ref is None:
            logger.warning("no reference saved for conversation %s", conversation_id)
            return None
        connector = await self.connector(ref.service_url)
        return await send_text(connector, ref, text)
