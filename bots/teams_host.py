"""The Teams host: aiohttp + botbuilder's ``CloudAdapter`` on ``/api/messages``.

Thin on purpose: botbuilder authenticates the request (with the fixes of
``bots.teams_botbuilder``), and everything Teams-specific about a turn lives in
``adapters.teams``. A message is recorded in the durable turn queue (deduplicated by
``activity.id`` in the same step) and answered ``201``; a worker on any process answers it
(``bots.teams_turns``). Invokes (card buttons, Stop, feedback) are answered within the
request. While the state backend (Redis) is down, Teams still gets its answer (so it does not
redeliver forever) and the user is told plainly; ``/healthz`` turns red until it is back.
Prometheus ``/metrics`` sits beside it.

>>> from bots.teams_settings import TeamsSettings
>>> host = TeamsHost(TeamsSettings())
>>> host.settings.auth_enabled
False
"""

from __future__ import annotations

import contextvars
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from azure.core.exceptions import DeserializationError
from botbuilder.core import TurnContext, serializer_helper
from botbuilder.integration.aiohttp import (
    CloudAdapter,
    ConfigurationBotFrameworkAuthentication,
)
from botbuilder.schema import Activity

from adapters.teams import activities
from adapters.teams.activities import ConversationRef
from adapters.teams.connector import ConnectorError, TeamsConnector
from adapters.teams.context import (
    Wire,
    asker_id,
    conversation_id,
    message_text,
    request_context,
    tenant_id,
    wire_activity,
)
from adapters.teams.files import (
    ConsentAnswer,
    FileOffers,
    consent_answer_of,
)
from adapters.teams.identity import ConnectorRoster, GraphDirectory, TeamsUserResolver
from adapters.teams.invokes import (
    card_action_of,
    card_action_response,
    feedback_of,
    stop_request_of,
)
from adapters.teams.state import MemoryTtlStore, TtlStore
from agent_core.errors import AgentError, StateUnavailableError
from agent_core.feedback import Feedback
from agent_core.state.health import StateHealth
from agent_core.state.turns import TurnQueue
from agent_core.state.turns_memory import MemoryTurnQueue
from agent_core.turn.failing import public_error_message
from bots.teams_botbuilder import (
    GuardedAuthentication,
    check_version,
    install_async_openid_metadata,
    metadata_urls,
    prefetch,
)
from bots.teams_connector import ConnectorPool
from bots.teams_files import graph_token_provider, upload_offered_file
from bots.teams_metrics import TeamsMetrics
from bots.teams_outbound import Outbound
from bots.teams_settings import TeamsSettings
from bots.teams_turns import TeamsAgent, TeamsTurns

logger = logging.getLogger(__name__)

UNAVAILABLE = public_error_message(StateUnavailableError("state down"), "")
"""What a user is told when their message could not be accepted (the state is down)."""


@dataclass
class _Exchange:
    """The request being handled: its parsed body and, for invokes, the answer to send."""

    body: dict[str, Any]
    status: int | None = None
    response: Any = None


HOST_KEY: web.AppKey[TeamsHost] = web.AppKey("teams_host")

_EXCHANGE: contextvars.ContextVar[_Exchange | None] = contextvars.ContextVar(
    "teams_exchange", default=None
)


class ThreadlineTeamsBot:
    """What botbuilder calls for each authenticated activity (``on_turn``): messages become
    durable turns, invokes are answered in the request, a personal install is welcomed.

    >>> ThreadlineTeamsBot._welcomes({"recipient": {"id": "28:b"}, "membersAdded": [
    ...     {"id": "28:b"}], "conversation": {"conversationType": "personal"}})
    True
    """

    def __init__(self, host: TeamsHost, agent: TeamsAgent) -> None:
        self._host = host
        self._agent = agent

    async def on_turn(self, turn_context: TurnContext) -> None:
        exchange = _EXCHANGE.get()
        activity: Wire = exchange.body if exchange else wire_activity(turn_context.activity)
        kind = str(activity.get("type") or "")
        self._host.metrics.activities.labels(type=kind).inc()
        try:
            if kind == "message":
                await self._accept(turn_context, activity, message_text(activity))
            elif kind == "invoke":
                await self._invoke(turn_context, activity, exchange)
            elif kind == "conversationUpdate" and self._welcomes(activity):
                await self._accept(turn_context, activity, "")
        except StateUnavailableError as error:
            self._host.unavailable(turn_context, activity, error, exchange)

    async def _accept(self, turn_context: TurnContext, activity: Wire, text: str) -> None:
        self._host.connector(turn_context)  # this process now knows the service URL's creds
        await self._host.turns.accept(activity, text)

    @staticmethod
    def _welcomes(activity: Wire) -> bool:
        """The bot was just added to a personal chat: show the starter UI."""
        bot_id = (activity.get("recipient") or {}).get("id")
        added = activity.get("membersAdded") or []
        personal = (activity.get("conversation") or {}).get("conversationType") == "personal"
        return personal and any(isinstance(m, dict) and m.get("id") == bot_id for m in added)

    async def _record(self, activity: Wire, feedback: Feedback) -> None:
        try:
            await self._agent.record_feedback(request_context(activity), feedback)
        except AgentError as refusal:  # e.g. the resolver does not know this user
            logger.info("feedback not recorded: %s", refusal)
            return
        reaction = "like" if feedback.positive else "dislike"
        self._host.metrics.feedback.labels(reaction=reaction).inc()

    async def _invoke(
        self, turn_context: TurnContext, activity: Wire, exchange: _Exchange | None
    ) -> None:
        status, body = 501, None
        feedback = feedback_of(activity)
        if feedback is not None:
            if await self._host.first_delivery(activity):
                answering = await self._host.outbound.answering_turn(
                    tenant_id(activity), conversation_id(activity), feedback.message_id
                )
                await self._record(activity, feedback.model_copy(update={"turn_id": answering}))
            status = 200
        elif (turn_id := stop_request_of(activity)) is not None:
            await self._host.turns.request_stop(turn_id, by=asker_id(activity))
            status, body = 200, card_action_response("Stopping.")
        elif (text := card_action_of(activity)) is not None:
            await self._accept(turn_context, activity, text)
            status, body = 200, card_action_response()
        elif (answer := consent_answer_of(activity)) is not None:
            await self._host.answer_file_consent(
                activity, answer, self._host.connector(turn_context)
            )
            status = 200
        if exchange is not None:
            exchange.status, exchange.response = status, body


class TeamsHost:
    """Builds the aiohttp application of the Teams bot and owns what its turns share: the
    turn queue, connector pool, delivery ids (invokes), identity cache, conversation
    references (``records``), file offers and metrics. Pass a ``State``'s stores to share them
    with other processes; the defaults keep everything in this process.

    >>> TeamsHost(TeamsSettings()).user_resolver().mapping.default_groups
    []
    """

    def __init__(
        self,
        settings: TeamsSettings,
        *,
        metrics: TeamsMetrics | None = None,
        deliveries: TtlStore | None = None,
        identity_cache: TtlStore | None = None,
        files: FileOffers | None = None,
        health: Callable[[], Awaitable[StateHealth]] | None = None,
        turn_queue: TurnQueue | None = None,
        records: TtlStore | None = None,
        concurrency: int = 32,
    ) -> None:
        self.settings = settings
        self.metrics = metrics or TeamsMetrics()
        # (explicit None checks: an empty store is falsy, it has a length)
        self.deliveries = deliveries if deliveries is not None else MemoryTtlStore()
        self.identity_cache = (
            identity_cache if identity_cache is not None else MemoryTtlStore(max_entries=10_000)
        )
        self.pool = ConnectorPool()
        self.files = files if files is not None else FileOffers()
        self._health = health
        self.turn_queue = turn_queue if turn_queue is not None else MemoryTurnQueue()
        self.records = records if records is not None else MemoryTtlStore()
        self.concurrency = concurrency
        self.turns: TeamsTurns
        self._bot: ThreadlineTeamsBot
        configuration = settings.botbuilder_configuration()
        self.authentication = GuardedAuthentication(
            ConfigurationBotFrameworkAuthentication(configuration)
        )
        self.adapter = CloudAdapter(self.authentication)
        self.outbound = Outbound(settings, self.authentication, self.pool, self.records)
        self._metadata = (
            install_async_openid_metadata(metadata_urls(configuration))
            if settings.auth_enabled
            else []
        )

    # ------------------------------------------------------------------ wiring

    def user_resolver(self) -> TeamsUserResolver:
        """The resolver to give the agent: roster through this host's connectors, Graph
        when ``TEAMS_GRAPH=1``, cached in ``identity_cache``."""
        directory = None
        if self.settings.graph:
            directory = GraphDirectory(
                graph_token_provider(self.settings),
                session=self.pool.session,
                base_url=self.settings.graph_url,
            )
        return TeamsUserResolver(
            self.settings.group_mapping(),
            roster=ConnectorRoster(self.pool.get),
            directory=directory,
            cache=self.identity_cache,
        )

    def connector(self, turn_context: TurnContext) -> TeamsConnector:
        """The outbound connector for this activity's service URL, with the credentials
        botbuilder chose for it."""
        client = turn_context.turn_state.get(turn_context.adapter.BOT_CONNECTOR_CLIENT_KEY)
        credentials = getattr(getattr(client, "config", None), "credentials", None)
        return self.pool.get(turn_context.activity.service_url, credentials)

    def unavailable(self, turn_context: TurnContext, activity: Wire,
                    error: StateUnavailableError, exchange: _Exchange | None) -> None:
        """The state is down: Teams still gets its answer (no endless redelivery), the user
        is told plainly (an invoke in its response, a message by a reply)."""
        logger.error("could not accept a %s activity: %s", activity.get("type"), error)
        self.metrics.unavailable.inc()
        if activity.get("type") == "invoke":
            if exchange is not None:
                exchange.status, exchange.response = 200, card_action_response(UNAVAILABLE)
            return
        ref = ConversationRef.from_activity(activity)
        self.turns.background(_tell(self.connector(turn_context), ref, UNAVAILABLE))

    async def first_delivery(self, activity: Wire) -> bool:
        """False (and counted) when this activity id was already delivered."""
        conversation = activity.get("conversation") or {}
        key = f"teams:delivery:{conversation.get('id')}:{activity.get('id')}"
        if not activity.get("id") or await self.deliveries.add(key, ttl=self.settings.dedupe_ttl):
            return True
        self.metrics.duplicates.inc()
        logger.info("dropped a redelivered activity %s", activity.get("id"))
        return False

    async def answer_file_consent(
        self, activity: Wire, answer: ConsentAnswer, connector: TeamsConnector
    ) -> None:
        """The user answered a file consent card: on accept, upload in the background and
        show the file; the offer is used up either way."""
        offered = await self.files.take(activity, answer)
        url = self.files.upload_url(answer)
        if answer.accepted and offered is not None and url and answer.upload_info:
            ref = ConversationRef.from_activity(activity)
            self.turns.background(upload_offered_file(
                self.pool.session, connector, ref, url, offered, dict(answer.upload_info)
            ))

    def app(self, agent: TeamsAgent) -> web.Application:
        """The aiohttp application answering for ``agent``."""
        check_version()
        self.turns = TeamsTurns(
            agent, queue=self.turn_queue, outbound=self.outbound,
            options=self.settings.reply_options(), metrics=self.metrics, files=self.files,
            concurrency=self.concurrency, dedupe_ttl=self.settings.dedupe_ttl,
        )  # fmt: skip
        self._bot = ThreadlineTeamsBot(self, agent)
        app = web.Application()
        app[HOST_KEY] = self
        app.router.add_post("/api/messages", self._messages)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/metrics", self._metrics)
        app.on_startup.append(self._startup)
        app.on_cleanup.append(self._cleanup)
        return app

    async def process_activity(self, body: dict[str, Any], auth_header: str) -> tuple[int, Any]:
        """One parsed activity through botbuilder (authentication, turn context) and the bot.

        Returns the HTTP status and JSON body to answer with; raises ``PermissionError`` when
        the request is not authenticated. Transport-free, so any web framework can host it.
        """
        exchange = _Exchange(body)
        token = _EXCHANGE.set(exchange)
        try:
            activity = Activity().deserialize(body)
            invoke = await self.adapter.process_activity(auth_header, activity,
                                                         self._bot.on_turn)
        finally:
            _EXCHANGE.reset(token)
        if exchange.status is not None:
            return exchange.status, exchange.response
        if invoke is not None:
            return int(invoke.status), serializer_helper(invoke.body)
        return 201, None

    # ------------------------------------------------------------------ handlers

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        started = time.perf_counter()
        try:
            body = await _parse(request)
            status, answer = await self.process_activity(
                body, request.headers.get("Authorization", "")
            )
        except web.HTTPException as refusal:
            self.metrics.refused.labels(status=str(refusal.status)).inc()
            raise
        except PermissionError as error:
            self.metrics.refused.labels(status="401").inc()
            raise web.HTTPUnauthorized() from error
        except DeserializationError as error:
            self.metrics.refused.labels(status="400").inc()
            raise web.HTTPBadRequest(text="malformed activity") from error
        finally:
            self.metrics.ack_seconds.observe(time.perf_counter() - started)
        if answer is None and status == 201:
            return web.Response(status=201)
        return web.json_response(answer, status=status)

    async def _healthz(self, request: web.Request) -> web.Response:
        """200 when turns can be accepted; 503 while the state backend (Redis) is down."""
        state = await self._health() if self._health is not None else None
        ok = state is None or state.ok
        body: dict[str, Any] = {"status": "ok" if ok else "unavailable",
                                "auth": self.settings.auth_enabled, "pid": os.getpid()}
        if state is not None:
            body["state"] = {"backend": state.backend, "detail": state.detail}
        return web.json_response(body, status=200 if ok else 503)

    async def _metrics(self, request: web.Request) -> web.Response:
        return web.Response(body=self.metrics.render(), content_type="text/plain", charset="utf-8")

    async def _startup(self, app: web.Application) -> None:
        if not self.settings.auth_enabled:
            logger.warning(
                "!!! AUTHENTICATION IS OFF: MicrosoftAppId is not set, so /api/messages "
                "accepts unsigned requests from anyone who can reach it. Use this only for "
                "local testing (Bot Framework Emulator, Teams Toolkit tunnel). !!!"
            )
        else:
            logger.info("Teams bot %s (%s) starting", self.settings.app_id, self.settings.app_type)
            await prefetch(self._metadata)
        self.turns.start()

    async def _cleanup(self, app: web.Application) -> None:
        await self.turns.drain()
        await self.pool.close()


async def _tell(connector: TeamsConnector, ref: ConversationRef, text: str) -> None:
    try:
        await connector.reply(ref.conversation_id, ref.activity_id or "",
                              activities.message(ref, text))
    except ConnectorError as error:
        logger.warning("could not tell the user: %s", error)


async def _parse(request: web.Request) -> dict[str, Any]:
    if "application/json" not in request.headers.get("Content-Type", ""):
        raise web.HTTPUnsupportedMediaType(text="expected application/json")
    try:
        body = await request.json()
    except ValueError as error:
        raise web.HTTPBadRequest(text="body is not JSON") from error
    if not isinstance(body, dict) or not isinstance(body.get("type"), str):
        raise web.HTTPBadRequest(text="not an activity")
    return body
