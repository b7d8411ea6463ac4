"""``SlackBot``: a bolt ``AsyncApp`` whose listeners turn Slack events into durable turns.

    app_mention            -> a turn in the mention's thread (first mention inside a human
                              thread reads the thread for context)
    message (DM)           -> a turn in the DM thread
    message (in a thread)  -> a follow-up, when the bot is already part of that thread
    slash command          -> a thread the bot starts, or a private answer
    clicks and other events -> ``bots.slack.interactions`` (mixed in)

Each accepted message is recorded with ``state.turns.enqueue`` *before* Slack gets its
ack (bolt acks when the listener returns: ``process_before_response``). The delivery key
(team, channel, message ts) is recorded with the turn in one atomic step, so Slack's
retries, and a mention Slack also delivers as a plain ``message``, are dropped on any
process. Workers (``bots.slack.turns``) answer the turns, on this process or another.

When the state backend is down the delivery is still acked and the asker is told plainly
that Threadline is temporarily unavailable; nothing else changes, and the next delivery
after the backend returns is answered as usual.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.authorization.async_authorize import AsyncInstallationStoreAuthorize
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.oauth.async_oauth_settings import AsyncOAuthSettings
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.context import (
    PRIVATE_THREAD,
    command_context,
    event_context,
    is_dm_event,
    strip_mention,
    workspace_of,
)
from adapters.slack.controls import FEEDBACK_ACTION, STOP_ACTION
from adapters.slack.elements import ACTION_BUTTON
from adapters.slack.identity import INVALIDATING_EVENTS
from adapters.slack.oauth_state import KeyValueOAuthStateStore
from adapters.slack.threads import ThreadMembership
from agent_core.agent import Agent
from agent_core.errors import StateUnavailableError
from agent_core.state import State, StateSettings, build_state
from bots.slack.clients import WorkspaceClients, build_client, installation_store_for
from bots.slack.interactions import InteractionListeners
from bots.slack.metrics import SlackMetrics
from bots.slack.queued import UNAVAILABLE, QueuedTurn, reply_target, tell
from bots.slack.settings import BOT_SCOPES, SlackSettings
from bots.slack.turns import SlackTurns

log = logging.getLogger(__name__)

USER_SUBTYPES = frozenset({None, "file_share", "thread_broadcast"})
PRIVATE_FLAGS = ("private", "-p", "--private")
ON_IT = ":hourglass_flowing_sand: On it…"
Ack = Callable[..., Awaitable[Any]]


def split_private(text: str) -> tuple[bool, str]:
    """``"/ask private how many?"`` -> ``(True, "how many?")``.

    >>> split_private("private how many?"), split_private("how private is it?")
    ((True, 'how many?'), (False, 'how private is it?'))
    """
    first, _, rest = text.strip().partition(" ")
    if first.lower() in PRIVATE_FLAGS:
        return True, rest.strip()
    return False, text.strip()


def message_key(team: str, event: dict[str, Any]) -> str:
    """The delivery key of a message: retries and its ``app_mention`` twin share it.

    >>> message_key("T1", {"channel": "C1", "ts": "1.5"})
    'slack:message:T1:C1:1.5'
    """
    return f"slack:message:{team}:{event.get('channel')}:{event.get('ts')}"


class SlackBot(InteractionListeners):
    """Wires an ``Agent`` and a ``State`` into a bolt ``AsyncApp`` (``bot.app``); see the
    module docstring. ``await bot.open()`` starts this process's turn worker.

    >>> from agent_core import (Agent, InMemoryAgentMemory, ScriptedLlmService,
    ...                         StaticUserResolver, ToolRegistry, User)
    >>> agent = Agent(llm_service=ScriptedLlmService(["hi"]), tool_registry=ToolRegistry(),
    ...               user_resolver=StaticUserResolver(User(id="u")),
    ...               agent_memory=InMemoryAgentMemory())
    >>> bot = SlackBot(agent, SlackSettings(bot_token="xoxb-1", signing_secret="s"))
    >>> bot.app.name, bot.state.backend
    ('threadline', 'memory')
    """

    def __init__(
        self,
        agent: Agent,
        settings: SlackSettings,
        *,
        state: State | None = None,
        clients: WorkspaceClients | None = None,
        metrics: SlackMetrics | None = None,
    ) -> None:
        self.agent = agent
        self.settings = settings
        self.state = state or build_state(StateSettings(ephemeral=True))
        self.cache = self.state.cache
        self.metrics = metrics or SlackMetrics()
        self.clients = clients or default_clients(settings, self.state)
        self.client = self.clients.default
        self.installation_store = self.clients.installation_store
        self.threads = ThreadMembership(self.cache, shared=self.state.backend == "redis")
        self._own_session = False
        self._notices: set[asyncio.Task[None]] = set()
        self.app = self._build_app()
        self.turns = SlackTurns(
            agent,
            self.state.turns,
            self._client_for,
            self.threads,
            metrics=self.metrics,
            concurrency=settings.turn_concurrency,
            stop_button_after=settings.stop_button_after,
            flush_chars=settings.flush_chars,
            flush_interval=settings.flush_interval,
        )
        self._register()

    async def open(self) -> None:
        """Share one HTTP connection pool among all Web API calls and start the turn
        worker (call in the event loop)."""
        if self.client.session is None:
            self.client.session = aiohttp.ClientSession()
            self._own_session = True
        self.clients.share_session(self.client.session)
        self.turns.start()

    async def close(self, *, timeout: float = 30.0) -> None:
        """Let running turns finish (up to ``timeout`` s), stop the worker, release the pool."""
        await self.turns.stop(timeout=timeout)
        await asyncio.gather(*self._notices, return_exceptions=True)
        if self._own_session and self.client.session is not None:
            await self.client.session.close()
            self.clients.share_session(None)
            self._own_session = False

    async def wait_idle(self, *, timeout: float = 30.0) -> None:
        """Until every queued turn is answered (tests, benchmarks)."""
        await self.turns.wait_idle(timeout=timeout)
        await asyncio.gather(*self._notices, return_exceptions=True)

    # --- construction -------------------------------------------------------------------------

    def _build_app(self) -> AsyncApp:
        settings = self.settings
        secret = settings.signing_secret.get_secret_value() if settings.signing_secret else None
        common: dict[str, Any] = {
            "name": "threadline",
            "client": self.client,
            "signing_secret": secret,
            "request_verification_enabled": settings.mode == "http",
            # the ack is sent when the listener returns, so every accepted turn is recorded
            # before Slack hears back (and its retries then find it deduplicated)
            "process_before_response": True,
        }
        store = self.installation_store
        if not settings.oauth_enabled or store is None:
            return AsyncApp(**common)
        assert settings.client_secret is not None
        client_secret = settings.client_secret.get_secret_value()
        oauth = AsyncOAuthSettings(
            client_id=settings.client_id,
            client_secret=client_secret,
            scopes=BOT_SCOPES,
            installation_store=store,
            state_store=KeyValueOAuthStateStore(self.cache, expiration_seconds=600),
        )
        authorize = AsyncInstallationStoreAuthorize(  # auth.test once per token per process
            logger=log,
            installation_store=store,
            client_id=settings.client_id,
            client_secret=client_secret,
            cache_enabled=True,
            client=self.client,
        )
        # bolt takes an AsyncAuthorize instance here (its hint names only callables)
        app = AsyncApp(oauth_settings=oauth, authorize=authorize, **common)  # type: ignore[arg-type]
        app.enable_token_revocation_listeners()
        return app

    def _register(self) -> None:
        app = self.app
        app.event("app_mention")(self._on_mention)
        app.event("message")(self._on_message)
        app.command(self.settings.command)(self._on_command)
        app.action(FEEDBACK_ACTION)(self._on_feedback)
        app.action(STOP_ACTION)(self._on_stop)
        app.action(re.compile(f"^{ACTION_BUTTON}:"))(self._on_button)
        app.event("assistant_thread_started")(self._on_assistant_thread_started)
        app.event("app_home_opened")(self._on_home_opened)
        for kind in sorted(INVALIDATING_EVENTS):
            app.event(kind)(self._on_identity_event)
        app.event(re.compile(".*"))(self._ignore)  # other events: acked and dropped
        app.error(self._on_error)

    async def _client_for(
        self, team: str, enterprise: str | None, enterprise_install: bool
    ) -> AsyncWebClient:
        return await self.clients.client_for(
            team, enterprise, enterprise_install=enterprise_install
        )

    # --- accepting turns --------------------------------------------------------------------

    async def _enqueue(self, queued: QueuedTurn, *, dedupe_key: str | None = None) -> bool:
        """Record the turn (before the ack); False when the delivery was seen before."""
        turn_id = await self.state.turns.enqueue(
            queued.thread_key,
            queued.payload(),
            dedupe_key=dedupe_key,
            dedupe_ttl=self.settings.dedupe_ttl,
            owner=queued.owner,
        )
        if turn_id is None:
            self.metrics.duplicates.inc()
        return turn_id is not None

    def _tell_unavailable(
        self, client: AsyncWebClient, queued: QueuedTurn, error: StateUnavailableError
    ) -> None:
        """Ack anyway; tell the asker plainly (after the ack: the post is not on its path)."""
        log.warning("slack: could not accept a turn from %s: %s", queued.owner, error)
        self.metrics.turns.labels(outcome="unavailable").inc()
        target = reply_target(queued, None if queued.open_thread else queued.context["thread_id"])
        task = asyncio.create_task(tell(client, target, UNAVAILABLE))
        self._notices.add(task)
        task.add_done_callback(self._notices.discard)

    async def _on_mention(
        self, body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext
    ) -> None:
        self.metrics.events.labels(kind="app_mention").inc()
        meta = event_context(body).metadata
        queued = QueuedTurn(
            context=meta,
            text=strip_mention(event.get("text") or "", context.bot_user_id),
            bot_user_id=context.bot_user_id,
            enterprise_install=bool(context.is_enterprise_install),
        )
        try:
            joined = await self.threads.join(
                queued.team, str(meta["channel_id"]), str(meta["thread_id"])
            )
            if joined and event.get("thread_ts"):  # first mention inside a human thread
                queued.history_before_ts = str(event.get("ts"))
            await self._enqueue(queued, dedupe_key=message_key(queued.team, event))
        except StateUnavailableError as error:
            self._tell_unavailable(context.client, queued, error)

    async def _on_message(
        self, body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext
    ) -> None:
        if event.get("subtype") not in USER_SUBTYPES or event.get("bot_id"):
            return
        user, bot = event.get("user"), context.bot_user_id
        if user is None or user == bot:
            return
        self.metrics.events.labels(kind="message").inc()
        text = event.get("text") or ""
        team, _ = workspace_of(body)
        if not is_dm_event(event) and not await self._is_follow_up(team, event, bot):
            return
        queued = QueuedTurn(
            context=event_context(body).metadata,
            text=strip_mention(text, bot),
            bot_user_id=bot,
            enterprise_install=bool(context.is_enterprise_install),
        )
        try:
            await self._enqueue(queued, dedupe_key=message_key(team, event))
        except StateUnavailableError as error:
            self._tell_unavailable(context.client, queued, error)

    async def _is_follow_up(self, team: str, event: dict[str, Any], bot: str | None) -> bool:
        """A message in a thread the bot takes part in (a mention is answered as one)."""
        thread_ts = event.get("thread_ts")
        if not thread_ts or (bot and f"<@{bot}" in (event.get("text") or "")):
            return False
        try:
            return await self.threads.contains(team, event["channel"], thread_ts)
        except StateUnavailableError as error:  # cannot tell whether it is for us: stay quiet
            log.warning("slack: thread message not checked (%s)", error)
            return False

    async def _on_command(self, ack: Ack, body: dict[str, Any], context: AsyncBoltContext) -> None:
        self.metrics.events.labels(kind="command").inc()
        private, question = split_private(body.get("text") or "")
        options: dict[str, Any] = {
            "text": question,
            "response_url": body.get("response_url"),
            "enterprise_install": bool(context.is_enterprise_install),
        }
        if private or not question:
            ctx = command_context(body, thread_ts=PRIVATE_THREAD)
            queued = QueuedTurn(context=ctx.metadata, private=True, **options)
        else:  # the worker opens the thread: "<@user> asked: ..."
            ctx = command_context(body, thread_ts="")
            queued = QueuedTurn(context=ctx.metadata, open_thread=True, **options)
        try:
            await self._enqueue(queued)
        except StateUnavailableError as error:
            log.warning("slack: could not accept a command from %s: %s", queued.owner, error)
            self.metrics.turns.labels(outcome="unavailable").inc()
            await ack(response_type="ephemeral", text=f":warning: {UNAVAILABLE}")
            return
        if queued.private:
            await ack(response_type="ephemeral", text=ON_IT)
        else:
            await ack()

    async def _ignore(self) -> None:
        return None

    async def _on_error(self, error: Exception, body: dict[str, Any]) -> None:
        log.error("slack: listener failed for %s", body.get("type"), exc_info=error)


def default_clients(settings: SlackSettings, state: State) -> WorkspaceClients:
    """The bot token's client, or installed workspaces' clients from ``state.records``."""
    token = settings.bot_token.get_secret_value() if settings.bot_token else None
    client = build_client(settings, None if settings.oauth_enabled else token)
    return WorkspaceClients(settings, client, installation_store_for(settings, state.records))
