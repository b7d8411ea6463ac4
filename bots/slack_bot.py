"""``SlackBot``: a bolt ``AsyncApp`` whose listeners turn Slack events into agent turns.

    app_mention            -> a turn in the mention's thread (first mention inside a human
                              thread reads the thread for context)
    message (DM)           -> a turn in the DM thread
    message (in a thread)  -> a follow-up, when the bot is already part of that thread
    slash command          -> ack at once; a thread the bot starts, or a private answer
    clicks and other events -> ``bots.slack_interactions`` (mixed in)

Every delivery is acked before its turn runs (bolt acks events itself; commands and actions
call ``ack()`` first) and retries / duplicates are dropped, so each message gets one reply.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import aiohttp
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.oauth.async_oauth_settings import AsyncOAuthSettings
from slack_sdk.errors import SlackApiError
from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore
from slack_sdk.oauth.state_store.file import FileOAuthStateStore
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.cache import MemoryTtlCache, TtlCache
from adapters.slack.context import (
    PRIVATE_THREAD,
    command_context,
    conversation_id,
    event_context,
    is_dm_event,
    strip_mention,
    thread_key,
    workspace_of,
)
from adapters.slack.controls import FEEDBACK_ACTION, STOP_ACTION
from adapters.slack.elements import ACTION_BUTTON
from adapters.slack.identity import INVALIDATING_EVENTS
from adapters.slack.markdown import escape_mrkdwn, truncate
from adapters.slack.reply import ReplyTarget
from agent_core.agent import Agent
from agent_core.users import RequestContext
from bots.slack_interactions import InteractionListeners
from bots.slack_metrics import SlackMetrics
from bots.slack_settings import BOT_SCOPES, SlackSettings
from bots.slack_turns import TurnManager, TurnRequest
from bots.slack_wiring import build_client, installation_store_for

log = logging.getLogger(__name__)

USER_SUBTYPES = frozenset({None, "file_share", "thread_broadcast"})
PRIVATE_FLAGS = ("private", "-p", "--private")
THREAD_TTL = 14 * 24 * 3600.0
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


class SlackBot(InteractionListeners):
    """Wires an ``Agent`` into a bolt ``AsyncApp`` (``bot.app``); see the module docstring.

    >>> from agent_core import (Agent, InMemoryAgentMemory, ScriptedLlmService,
    ...                         StaticUserResolver, ToolRegistry, User)
    >>> agent = Agent(llm_service=ScriptedLlmService(["hi"]), tool_registry=ToolRegistry(),
    ...               user_resolver=StaticUserResolver(User(id="u")),
    ...               agent_memory=InMemoryAgentMemory())
    >>> bot = SlackBot(agent, SlackSettings(bot_token="xoxb-1", signing_secret="s"))
    >>> bot.app.name
    'threadline'
    """

    def __init__(
        self,
        agent: Agent,
        settings: SlackSettings,
        *,
        client: AsyncWebClient | None = None,
        cache: TtlCache | None = None,
        installation_store: AsyncInstallationStore | None = None,
        metrics: SlackMetrics | None = None,
    ) -> None:
        self.agent = agent
        self.settings = settings
        self.cache = cache if cache is not None else MemoryTtlCache()
        self.metrics = metrics or SlackMetrics()
        token = settings.bot_token.get_secret_value() if settings.bot_token else None
        self.client = client or build_client(settings, None if settings.oauth_enabled else token)
        self.installation_store = installation_store
        self._own_session = False
        self.app = self._build_app()
        self.turns = TurnManager(
            agent,
            metrics=self.metrics,
            stop_button_after=settings.stop_button_after,
            flush_chars=settings.flush_chars,
            flush_interval=settings.flush_interval,
        )
        self._register()

    async def open(self) -> None:
        """Share one HTTP connection pool among all Web API calls (call in the event loop)."""
        if self.client.session is None:
            self.client.session = aiohttp.ClientSession()
            self._own_session = True

    async def close(self, *, timeout: float = 30.0) -> None:
        """Let running turns finish (up to ``timeout`` s; then Stop them), release the pool."""
        await self.turns.wait_idle(timeout=timeout)
        await self.turns.stop_all()
        if self._own_session and self.client.session is not None:
            await self.client.session.close()
            self.client.session = None
            self._own_session = False

    # --- construction -------------------------------------------------------------------------

    def _build_app(self) -> AsyncApp:
        settings = self.settings
        secret = settings.signing_secret.get_secret_value() if settings.signing_secret else None
        common: dict[str, Any] = {
            "name": "threadline",
            "client": self.client,
            "signing_secret": secret,
            "request_verification_enabled": settings.mode == "http",
            # listeners only start background turns, so Slack's response waits for them and
            # every turn exists once the request is acked (retries then find it deduped)
            "process_before_response": True,
        }
        if not settings.oauth_enabled:
            return AsyncApp(**common)
        assert settings.client_secret is not None
        directory = settings.installation_dir
        self.installation_store = self.installation_store or installation_store_for(settings)
        oauth = AsyncOAuthSettings(
            client_id=settings.client_id,
            client_secret=settings.client_secret.get_secret_value(),
            scopes=BOT_SCOPES,
            installation_store=self.installation_store,
            state_store=FileOAuthStateStore(
                expiration_seconds=600, base_dir=str(directory / "states")
            ),
        )
        app = AsyncApp(oauth_settings=oauth, **common)
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

    # --- delivery guards ----------------------------------------------------------------------

    async def _first_delivery(self, team: str, event: Mapping[str, Any]) -> bool:
        """False for a message already answered: a retry (``x-slack-retry-num``, same
        ``event_id``), the same message again (``client_msg_id``), or a mention that Slack
        also delivered as a plain ``message`` event (a different ``event_id``, same ts)."""
        self.metrics.events.labels(kind=str(event.get("type"))).inc()
        fresh = await self.cache.add(
            f"slack:message:{team}:{event.get('channel')}:{event.get('ts')}",
            ttl=self.settings.dedupe_ttl,
        )
        if fresh and event.get("client_msg_id"):
            fresh = await self.cache.add(
                f"slack:client_msg:{team}:{event['client_msg_id']}", ttl=self.settings.dedupe_ttl
            )
        if not fresh:
            self.metrics.duplicates.inc()
        return fresh

    async def _first_event(self, body: Mapping[str, Any]) -> bool:
        """False for a redelivered event (same ``event_id``) that does not carry a message."""
        kind = str((body.get("event") or {}).get("type"))
        self.metrics.events.labels(kind=kind).inc()
        event_id = body.get("event_id")
        if event_id and not await self.cache.add(
            f"slack:event:{event_id}", ttl=self.settings.dedupe_ttl
        ):
            self.metrics.duplicates.inc()
            return False
        return True

    async def _in_thread(self, team: str, channel: str, thread_ts: str) -> bool:
        return (
            await self.cache.get(f"slack:thread:{thread_key(team, channel, thread_ts)}") is not None
        )

    async def _join_thread(self, team: str, channel: str, thread_ts: str) -> None:
        key = f"slack:thread:{thread_key(team, channel, thread_ts)}"
        await self.cache.set(key, True, ttl=THREAD_TTL)

    # --- turns ----------------------------------------------------------------------------------

    async def _request(
        self,
        context: RequestContext,
        text: str,
        client: AsyncWebClient,
        *,
        private: bool = False,
        response_url: str | None = None,
        history_before_ts: str | None = None,
        bot_user_id: str | None = None,
    ) -> TurnRequest:
        meta = context.metadata
        target = ReplyTarget(
            channel=meta["channel_id"],
            thread_ts=meta["thread_id"],
            team_id=meta["workspace_id"],
            user_id=meta["user_id"],
            is_dm=bool(meta.get("is_dm")),
            private=private,
            response_url=response_url,
        )
        if not private:
            await self._join_thread(target.team_id, target.channel, target.thread_ts)
        return TurnRequest(
            context=context,
            text=text,
            target=target,
            client=client,
            conversation_id=conversation_id(context),
            history_before_ts=history_before_ts,
            bot_user_id=bot_user_id,
        )

    async def _start(
        self, context: RequestContext, text: str, client: AsyncWebClient, **options: Any
    ) -> str:
        return self.turns.start(await self._request(context, text, client, **options))

    async def _on_mention(
        self, body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext
    ) -> None:
        team, _ = workspace_of(body)
        if not await self._first_delivery(team, event):
            return
        client, bot_user_id = context.client, context.bot_user_id

        async def prepare() -> TurnRequest:  # after the ack
            ctx = event_context(body)
            thread_ts = ctx.metadata["thread_id"]
            first_in_thread = bool(event.get("thread_ts")) and not await self._in_thread(
                team, event["channel"], thread_ts
            )
            return await self._request(
                ctx,
                strip_mention(event.get("text") or "", bot_user_id),
                client,
                history_before_ts=event.get("ts") if first_in_thread else None,
                bot_user_id=bot_user_id,
            )

        self.turns.start(prepare, user_id=str(event.get("user")))

    async def _on_message(
        self, body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext
    ) -> None:
        if event.get("subtype") not in USER_SUBTYPES or event.get("bot_id"):
            return
        user, bot = event.get("user"), context.bot_user_id
        if user is None or user == bot:
            return
        text = event.get("text") or ""
        team, _ = workspace_of(body)
        if not is_dm_event(event):
            thread_ts = event.get("thread_ts")
            if not thread_ts or (bot and f"<@{bot}" in text):
                return  # not a follow-up, or a mention (answered through app_mention)
            if not await self._in_thread(team, event["channel"], thread_ts):
                return
        if not await self._first_delivery(team, event):
            return
        client = context.client

        async def prepare() -> TurnRequest:  # after the ack
            return await self._request(event_context(body), strip_mention(text, bot), client)

        self.turns.start(prepare, user_id=str(user))

    async def _on_command(
        self, ack: Ack, body: dict[str, Any], respond: Ack, context: AsyncBoltContext
    ) -> None:
        private, question = split_private(body.get("text") or "")
        if private or not question:
            await ack(response_type="ephemeral", text=":hourglass_flowing_sand: On it…")
            ctx = command_context(body, thread_ts=PRIVATE_THREAD)
            await self._start(
                ctx, question, context.client, private=True, response_url=body.get("response_url")
            )
            return
        await ack()
        client = context.client

        async def open_thread() -> TurnRequest | None:
            """Post "<@user> asked: ..." and answer in its thread (inside the turn, after ack)."""
            channel, user = body.get("channel_id", ""), body.get("user_id", "")
            opener = f"<@{user}> asked: {escape_mrkdwn(truncate(question, 2900))}"
            try:
                posted = await client.chat_postMessage(channel=channel, text=opener)
            except SlackApiError as error:
                log.info("slack: cannot post in %s (%s)", channel, error.response.get("error"))
                await respond(
                    response_type="ephemeral",
                    text="I can't post in this conversation. Invite me with `/invite`, or ask "
                    f"privately: `{self.settings.command} private {question}`",
                )
                return None
            ctx = command_context(body, thread_ts=str(posted["ts"]))
            return await self._request(ctx, question, client)

        self.turns.start(open_thread, user_id=body.get("user_id", ""))

    async def _ignore(self) -> None:
        return None

    async def _on_error(self, error: Exception, body: dict[str, Any]) -> None:
        log.error("slack: listener failed for %s", body.get("type"), exc_info=error)
