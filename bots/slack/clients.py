"""The Slack bot's clients of each workspace: Web API clients with 429 handling, the
workspace -> client lookup (single token or OAuth installations), the installation store on
Threadline's state, the bolt app that authorizes every request with them, and the
workspace-aware user resolver.

>>> build_client(SlackSettings(bot_token="xoxb-1", signing_secret="s"), "xoxb-1").base_url
'https://slack.com/api/'
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Self

import aiohttp
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_bolt.authorization.async_authorize import AsyncAuthorize
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.listener.async_builtins import AsyncTokenRevocationListeners
from slack_bolt.oauth.async_oauth_settings import AsyncOAuthSettings
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.errors import SLACK_FAILURES, SlackWebClient, slack_failure
from adapters.slack.identity import SlackUserResolver
from adapters.slack.installations import KeyValueInstallationStore
from adapters.slack.oauth_state import KeyValueOAuthStateStore
from adapters.slack.tokens import BotTokens
from agent_core.clock import SYSTEM_CLOCK, Clock
from agent_core.errors import AgentError
from agent_core.state import KeyValueStore
from agent_core.state.turn_writes import TurnWrites, turn_view
from agent_core.state_factory import State
from bots.slack.settings import BOT_SCOPES, SlackSettings

log = logging.getLogger(__name__)

DELIVERY = "threadline_delivery"
"""Where a request's ``adapters.slack.payloads.SlackDelivery`` waits for its listener in
bolt's context: read once, by ``bots.slack.ingress`` over HTTP, by the bot's first
middleware in Socket Mode (``bots.slack.bot``)."""


def build_client(
    settings: SlackSettings,
    token: str | None = None,
    *,
    session: aiohttp.ClientSession | None = None,
) -> AsyncWebClient:
    """A Web API client that honours 429 Retry-After (slack_sdk's async retry handler) and
    says how a call failed with one error (``adapters.slack.errors.SlackWebClient``)."""
    return SlackWebClient(
        token=token,
        base_url=settings.api_url or AsyncWebClient.BASE_URL,
        session=session,
        retry_handlers=[AsyncRateLimitErrorRetryHandler(max_retry_count=3)],
    )


def installation_store_for(
    settings: SlackSettings, records: KeyValueStore
) -> KeyValueInstallationStore | None:
    """The installation store of a multi-workspace (OAuth) app, on ``state.records``;
    ``None`` for a single-workspace app (its token comes from ``SLACK_BOT_TOKEN``)."""
    if not settings.oauth_enabled:
        return None
    return KeyValueInstallationStore(records)


@dataclass(frozen=True)
class Workspace:
    """Who the bot is where a delivery came from: the workspace's client and the bot's own
    ids there (its user id: mentions of it; its bot id: its own messages).

    >>> Workspace(AsyncWebClient(token="xoxb-1"), "UBOT", "B1").bot_user_id
    'UBOT'
    """

    client: AsyncWebClient
    bot_user_id: str | None
    bot_id: str | None
    enterprise_install: bool = False

    @classmethod
    def of(cls, context: AsyncBoltContext) -> Workspace:
        """What bolt's authorization found for a request (Socket Mode, clicks, commands)."""
        return cls(
            context.client,
            context.bot_user_id,
            context.bot_id,
            bool(context.is_enterprise_install),
        )


class WorkspaceClients:
    """The Web API client of each workspace: the bot token's client for a single-workspace
    app; for an OAuth app, a client per installed bot token (kept for reuse, all sharing
    one connection pool). Raises ``AgentError`` for a workspace without an installation.

    >>> import asyncio
    >>> settings = SlackSettings(bot_token="xoxb-1", signing_secret="s")
    >>> clients = WorkspaceClients(settings, build_client(settings, "xoxb-1"))
    >>> asyncio.run(clients.client_for("T1", None)).token
    'xoxb-1'
    """

    def __init__(
        self,
        settings: SlackSettings,
        default: AsyncWebClient,
        installation_store: KeyValueInstallationStore | None = None,
        *,
        tokens: BotTokens | None = None,
        keep: int = 1000,
    ) -> None:
        self.settings = settings
        self.default = default
        self.installation_store = installation_store
        self.tokens = tokens
        """Renews rotating bot tokens ahead of expiry (an OAuth app's installations)."""
        self._keep = keep
        self._clients: OrderedDict[str, AsyncWebClient] = OrderedDict()
        self._bots: OrderedDict[str, tuple[str | None, ...]] = OrderedDict()
        self._workspaces: set[tuple[str, str]] = set()

    def for_turn(self, writes: TurnWrites | None) -> Self:
        """The clients as the running turn finds them (its installations' ``for_turn``)."""
        return turn_view(turn_view(self, writes, "installation_store"), writes, "tokens")

    async def authorize(
        self, team_id: str, enterprise_id: str | None, *, enterprise_install: bool = False
    ) -> Workspace:
        """The workspace a delivery came from, as bolt's authorization would find it: its
        client (``AgentError`` when it has no installation) and the bot's ids there (its
        installation's, else one ``auth.test`` per token per process)."""
        store = self.installation_store
        if store is None:
            client = self.default
        else:
            client = await self.client_for(
                team_id, enterprise_id, enterprise_install=enterprise_install
            )
        ids = await self._auth_test(client)
        return Workspace(client, ids[0], ids[1], enterprise_install)

    async def _auth_test(self, client: AsyncWebClient) -> tuple[str | None, ...]:
        """``(bot user id, bot id, team id, enterprise id)`` of a token: ``auth.test`` once
        per token per process."""
        token = client.token or ""
        ids = self._bots.get(token)
        if ids is None:
            found = await client.auth_test()
            ids = tuple(
                found.get(key) or None for key in ("user_id", "bot_id", "team_id", "enterprise_id")
            )
            self._bots[token] = ids
            while len(self._bots) > self._keep:
                self._bots.popitem(last=False)
        return ids

    async def client_for(
        self, team_id: str, enterprise_id: str | None, *, enterprise_install: bool = False
    ) -> AsyncWebClient:
        store = self.installation_store
        if store is None:
            return self.default
        find = store.async_find_bot if self.tokens is None else self.tokens.bot
        bot = await find(
            enterprise_id=enterprise_id, team_id=team_id, is_enterprise_install=enterprise_install
        )
        if bot is None or not bot.bot_token:
            raise AgentError("This workspace has not installed the app.")
        if bot.is_enterprise_install and bot.enterprise_id and team_id:
            await self._note_workspace(store, str(bot.enterprise_id), team_id)
        client = self._clients.get(bot.bot_token)
        if client is None:
            client = build_client(self.settings, bot.bot_token, session=self.default.session)
            self._clients[bot.bot_token] = client
            while len(self._clients) > self._keep:
                self._clients.popitem(last=False)
        self._clients.move_to_end(bot.bot_token)
        return client

    async def _note_workspace(
        self, store: KeyValueInstallationStore, enterprise_id: str, team_id: str
    ) -> None:
        """An org-wide installation serves ``team_id``: noted once per process (doctor)."""
        if (enterprise_id, team_id) in self._workspaces:
            return
        self._workspaces.add((enterprise_id, team_id))
        await store.note_workspace(enterprise_id, team_id)

    async def home(self, team_id: str, enterprise_id: str | None) -> tuple[str, str | None] | None:
        """``(team_id, enterprise_id)`` of the installation serving ``team_id``: whose people
        are members (``adapters.slack.identity``). An OAuth app reads its installation; a
        single-workspace app its token's ``auth.test`` (once per process); None when
        unknown (then nobody is a member until it is known)."""
        store = self.installation_store
        if store is not None:
            bot = await store.async_find_bot(enterprise_id=enterprise_id, team_id=team_id)
            if bot is not None and bot.is_enterprise_install and bot.enterprise_id:
                # installed org-wide: it has no workspace of its own, and every workspace of
                # the organisation is home (people of another organisation still are not)
                return str(bot.team_id or ""), str(bot.enterprise_id)
            if bot is None or not bot.team_id:
                return None
            return str(bot.team_id), (str(bot.enterprise_id) if bot.enterprise_id else None)
        try:
            _, _, team, enterprise = await self._auth_test(self.default)
        except SLACK_FAILURES as error:
            log.warning(
                "slack: auth.test failed (%s); nobody is a member until it answers",
                slack_failure(error),
            )
            return None
        return (team, enterprise) if team else None

    def known_home(self) -> str:
        """The installing workspace as far as this process knows it (``/status``)."""
        if self.installation_store is not None:
            return "each installing workspace (and its Grid organisation)" + self._served()
        ids = self._bots.get(self.default.token or "")
        if ids is None or not ids[2]:
            return "the bot token's workspace (not looked up yet)"
        return f"workspace {ids[2]}" + (f", Grid organisation {ids[3]}" if ids[3] else "")

    def _served(self) -> str:
        """The Grid organisations installed org-wide and the workspaces this process has
        served for them (``threadline doctor`` lists every process's, from the state)."""
        organisations: dict[str, list[str]] = {}
        for enterprise, team in sorted(self._workspaces):
            organisations.setdefault(enterprise, []).append(team)
        said = [f"org {e}: workspaces {', '.join(t)}" for e, t in organisations.items()]
        return f"; served here: {'; '.join(said)}" if said else ""

    def share_session(self, session: aiohttp.ClientSession | None) -> None:
        """Point every client at ``session`` (the bot's pool, opened in the event loop)."""
        self.default.session = session
        for client in self._clients.values():
            client.session = session


def default_clients(
    settings: SlackSettings, state: State, *, clock: Clock | None = None
) -> WorkspaceClients:
    """The bot token's client, or installed workspaces' clients from ``state.records``,
    their rotating tokens renewed ahead of expiry by ``clock`` (one lock per installation
    in ``state.cache``, shared by every process on Redis)."""
    token = settings.bot_token.get_secret_value() if settings.bot_token else None
    client = build_client(settings, None if settings.oauth_enabled else token)
    store = installation_store_for(settings, state.records)
    tokens = None
    if store is not None and settings.client_id and settings.client_secret:
        tokens = BotTokens(
            store,
            state.cache,
            client,  # no token of its own: oauth.v2.access authenticates the app
            client_id=settings.client_id,
            client_secret=settings.client_secret.get_secret_value(),
            clock=clock or SYSTEM_CLOCK,
            margin=settings.token_refresh_margin,
        )
    return WorkspaceClients(settings, client, store, tokens=tokens)


class WorkspaceAuthorize(AsyncAuthorize):
    """bolt's authorization of clicks, commands and other events, through the same lookup a
    turn uses (``WorkspaceClients.authorize``): one renewal of a rotating token for every
    path, never bolt's own, which refreshes per request with no lock between processes.

    >>> settings = SlackSettings(bot_token="xoxb-1", signing_secret="s")
    >>> WorkspaceAuthorize(WorkspaceClients(settings, build_client(settings, "xoxb-1"))).bot_only
    True
    """

    def __init__(self, clients: WorkspaceClients) -> None:
        self.clients = clients
        self.bot_only = True  # bolt sets these two on whichever authorize it is given
        self.token_rotation_expiration_minutes = 120

    async def __call__(
        self,
        *,
        context: AsyncBoltContext,
        enterprise_id: str | None,
        team_id: str | None,
        user_id: str | None,
        actor_enterprise_id: str | None = None,
        actor_team_id: str | None = None,
        actor_user_id: str | None = None,
    ) -> AuthorizeResult | None:
        try:
            workspace = await self.clients.authorize(
                team_id or "", enterprise_id, enterprise_install=bool(context.is_enterprise_install)
            )
        except AgentError as refused:  # not installed, or stopped: bolt says so, once
            log.info("slack: no installation for %s/%s (%s)", enterprise_id, team_id, refused)
            return None
        return AuthorizeResult(
            enterprise_id=enterprise_id,
            team_id=team_id,
            bot_token=workspace.client.token,
            bot_id=workspace.bot_id,
            bot_user_id=workspace.bot_user_id,
            user_id=user_id,
        )


Removed = Callable[[AsyncBoltContext, str], Awaitable[None]]
"""Called after an installation's tokens are removed, with bolt's context and the event's
type (``app_uninstalled``; ``tokens_revoked`` naming the bot's token)."""


def build_bolt_app(
    settings: SlackSettings,
    clients: WorkspaceClients,
    cache: KeyValueStore,
    *,
    on_removed: Removed | None = None,
) -> AsyncApp:
    """The bolt app the listeners register on: it verifies signatures (HTTP mode) and, for
    an OAuth app, runs "Add to Slack" and authorizes each request with its installation.
    ``app_uninstalled`` / ``tokens_revoked`` remove the installation's tokens (bolt's own
    revocation handlers), then call ``on_removed`` (``bots.uninstall``)."""
    secret = settings.signing_secret.get_secret_value() if settings.signing_secret else None
    common: dict[str, Any] = {
        # bolt names its logger after the app and sets that logger's level: a child of
        # Threadline's own "threadline" logger, never that logger itself
        "name": "threadline.slack.bolt",
        "client": clients.default,
        "signing_secret": secret,
        # verified once, by bots.slack.ingress, before bolt sees the request (Socket Mode
        # deliveries come over Slack's own authenticated WebSocket)
        "request_verification_enabled": False,
        # the ack is sent when the listener returns, so every accepted turn is recorded
        # before Slack hears back (and its retries then find it deduplicated)
        "process_before_response": True,
    }
    store = clients.installation_store
    if not settings.oauth_enabled or store is None:
        return AsyncApp(**common)
    assert settings.client_secret is not None
    client_secret = settings.client_secret.get_secret_value()
    oauth = AsyncOAuthSettings(
        client_id=settings.client_id,
        client_secret=client_secret,
        scopes=BOT_SCOPES,
        installation_store=store,
        state_store=KeyValueOAuthStateStore(cache, expiration_seconds=600),
    )
    authorize = WorkspaceAuthorize(clients)  # auth.test once per token per process
    # bolt takes an AsyncAuthorize instance here (its hint names only callables)
    app = AsyncApp(oauth_settings=oauth, authorize=authorize, **common)  # type: ignore[arg-type]
    revocation = AsyncTokenRevocationListeners(store)

    # bolt runs the first listener that matches an event: these replace its own
    # (enable_token_revocation_listeners), which nothing could follow
    async def tokens_revoked(event: dict[str, Any], context: AsyncBoltContext) -> None:
        await revocation.handle_tokens_revoked_events(event, context)
        if event.get("tokens", {}).get("bot") and on_removed is not None:
            await on_removed(context, "tokens_revoked")

    async def app_uninstalled(context: AsyncBoltContext) -> None:
        await revocation.handle_app_uninstalled_events(context)
        if on_removed is not None:
            await on_removed(context, "app_uninstalled")

    app.event("tokens_revoked")(tokens_revoked)
    app.event("app_uninstalled")(app_uninstalled)
    return app


def build_user_resolver(
    settings: SlackSettings, clients: WorkspaceClients, cache: KeyValueStore | None = None
) -> SlackUserResolver:
    """A ``SlackUserResolver`` with the workspace's token and the configured admins, its
    lookups in ``cache`` (``state.cache``: shared by every process on Redis)."""

    async def provider(team_id: str, enterprise_id: str | None) -> AsyncWebClient:
        return await clients.client_for(team_id, enterprise_id)

    return SlackUserResolver(
        provider,
        home=clients.home,
        admin_users=settings.admin_users,
        admin_groups=settings.admin_groups,
        group_map=settings.group_map,
        workspace_admins_are_admins=settings.workspace_admins_are_admins,
        external_groups=settings.external_groups,
        cache=cache,
        ttl=settings.identity_ttl,
        local_ttl=settings.identity_local_ttl,
    )
