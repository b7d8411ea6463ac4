"""The Teams bot's listeners: ``ThreadlineTeamsBot``, what botbuilder calls for each activity.

botbuilder's ``CloudAdapter`` authenticates the request (with the fixes of
``bots.teams.botbuilder``), and everything Teams-specific about a turn lives in
``adapters.teams``. A message is recorded in the durable turn queue (deduplicated by
``activity.id`` in the same step) and answered ``201``; a worker on any process answers it
(``bots.teams.turns``). Invokes (card buttons, Stop, feedback, file consent) are answered
within the request. While the state backend (Redis) is down, Teams still gets its answer (so
it does not redeliver forever) and the user is told plainly (``adapters.notices``), once per
activity however often it is redelivered.

The bot is handed its agent, settings and the stores it shares with other processes (the
defaults keep everything in this process); ``bots.teams.app`` serves it over HTTP::

    pool = ConnectorPool()
    agent = build_agent(user_resolver(settings, pool, state.cache), ...)
    bot = ThreadlineTeamsBot(agent, settings, pool=pool, turn_queue=state.turns, ...)
    status, body = await bot.process_activity(activity_json, authorization_header)
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from azure.core.exceptions import DeserializationError
from botbuilder.core import TurnContext, serializer_helper
from botbuilder.integration.aiohttp import (
    CloudAdapter,
    ConfigurationBotFrameworkAuthentication,
)
from botbuilder.schema import Activity

from adapters.notices import UNAVAILABLE
from adapters.teams.activities import ConversationRef
from adapters.teams.connector import TeamsConnector
from adapters.teams.context import (
    Wire,
    asker_id,
    delivery_key,
    message_text,
    request_context,
    teams_conversation_id,
    tenant_id,
    wire_activity,
)
from adapters.teams.controls import (
    button_message_of,
    card_action_response,
    feedback_of,
    stop_request_of,
)
from adapters.teams.files import ConsentAnswer, FileOffers, consent_answer_of
from adapters.teams.identity import ConnectorRoster, GraphDirectory, TeamsUserResolver
from adapters.teams.payloads import MalformedPayload, read_activity
from adapters.teams.slot import AnswerSlot
from agent_core.errors import AgentError, StateUnavailableError
from agent_core.feedback import Feedback
from agent_core.state import KeyValueStore, MemoryKeyValueStore
from agent_core.state.health import StateHealth
from agent_core.state.turns import TurnQueue
from agent_core.state.turns_memory import MemoryTurnQueue
from bots.agents import ServedAgent
from bots.files import SharedFiles
from bots.outage import RecentDeliveries
from bots.teams.botbuilder import (
    GuardedAuthentication,
    check_version,
    install_async_openid_metadata,
    metadata_urls,
    prefetch,
)
from bots.teams.connector import ConnectorPool
from bots.teams.files import graph_token_provider, upload_offered_file
from bots.teams.metrics import TeamsMetrics
from bots.teams.outbound import Outbound
from bots.teams.settings import TeamsSettings
from bots.teams.turns import TeamsTurns

logger = logging.getLogger(__name__)


class MalformedActivity(MalformedPayload):
    """The request body is JSON but not an activity botbuilder can read (HTTP 400)."""


@dataclass
class _Exchange:
    """The request being handled: its parsed body and, for invokes, the answer to send;
    ``authenticated`` once botbuilder has let it through."""

    body: dict[str, Any]
    status: int | None = None
    response: Any = None
    authenticated: bool = False


_EXCHANGE: contextvars.ContextVar[_Exchange | None] = contextvars.ContextVar(
    "teams_exchange", default=None
)

Handler = Callable[[TurnContext, Wire, "_Exchange | None"], Awaitable[None]]


def user_resolver(
    settings: TeamsSettings, pool: ConnectorPool, cache: KeyValueStore | None = None
) -> TeamsUserResolver:
    """The resolver to give the agent: the roster through ``pool``'s connectors, Graph when
    ``TEAMS_GRAPH=1``, cached in ``cache``.

    >>> user_resolver(TeamsSettings(), ConnectorPool()).mapping.default_groups
    []
    """
    directory = None
    if settings.graph:
        directory = GraphDirectory(
            graph_token_provider(settings), session=pool.session, base_url=settings.graph_url
        )
    return TeamsUserResolver(
        settings.group_mapping(),
        roster=ConnectorRoster(pool.get),
        directory=directory,
        cache=cache,
    )


class ThreadlineTeamsBot:
    """Turns each authenticated activity into a durable turn or an invoke's answer; see the
    module docstring. ``open()`` starts this process's turn worker, ``close()`` drains it.

    >>> ThreadlineTeamsBot._welcomes({"recipient": {"id": "28:b"}, "membersAdded": [
    ...     {"id": "28:b"}], "conversation": {"conversationType": "personal"}})
    True
    >>> ThreadlineTeamsBot(None, TeamsSettings()).settings.auth_enabled  # type: ignore[arg-type]
    False
    """

    def __init__(
        self,
        agent: ServedAgent,
        settings: TeamsSettings,
        *,
        pool: ConnectorPool | None = None,
        metrics: TeamsMetrics | None = None,
        deliveries: KeyValueStore | None = None,
        files: FileOffers | None = None,
        shared_files: SharedFiles | None = None,
        health: Callable[[], Awaitable[StateHealth]] | None = None,
        turn_queue: TurnQueue | None = None,
        records: KeyValueStore | None = None,
        concurrency: int = 32,
    ) -> None:
        check_version()
        self.agent = agent
        self.settings = settings
        self.metrics = metrics or TeamsMetrics()
        # (explicit None checks: an empty store is falsy, it has a length)
        self.pool = pool if pool is not None else ConnectorPool()
        self.deliveries = deliveries if deliveries is not None else MemoryKeyValueStore()
        self.files = files if files is not None else FileOffers()
        self.told_unavailable = RecentDeliveries(ttl=settings.dedupe_ttl)
        """Activities told "temporarily unavailable" lately (a redelivery is not told twice)."""
        self._health = health
        configuration = settings.botbuilder_configuration()
        self.authentication = GuardedAuthentication(
            ConfigurationBotFrameworkAuthentication(configuration)
        )
        self.adapter = CloudAdapter(self.authentication)
        self.turn_queue = turn_queue if turn_queue is not None else MemoryTurnQueue()
        self.records = records if records is not None else MemoryKeyValueStore()
        self.outbound = Outbound(settings, self.authentication, self.pool, self.records)
        self.turns = TeamsTurns(
            agent,
            queue=self.turn_queue,
            outbound=self.outbound,
            options=settings.reply_options(),
            metrics=self.metrics,
            files=self.files,
            shared_files=shared_files,
            concurrency=concurrency,
            dedupe_ttl=settings.dedupe_ttl,
            stop_button_after=settings.stop_button_after,
        )
        if shared_files is not None:
            shared_files.serve(agent)
        self._metadata = (
            install_async_openid_metadata(metadata_urls(configuration))
            if settings.auth_enabled
            else []
        )
        self._handlers: dict[str, Handler] = {
            "message": self._on_message,
            "invoke": self._on_invoke,
            "conversationUpdate": self._on_conversation_update,
        }

    # ------------------------------------------------------------------ lifecycle

    async def open(self) -> None:
        """At startup: fetch the token signing keys, start this process's turn worker."""
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

    async def close(self) -> None:
        """At shutdown: let the turns taken finish (``TeamsTurns.drain``), release the pool."""
        await self.turns.drain()
        await self.pool.close()

    async def health(self) -> StateHealth | None:
        """The state backend's health, or None when the bot keeps its state in memory."""
        return await self._health() if self._health is not None else None

    # ------------------------------------------------------------------ ingress

    async def process_activity(self, body: dict[str, Any], auth_header: str) -> tuple[int, Any]:
        """One parsed activity through botbuilder (authentication, turn context) and the bot.

        Returns the HTTP status and JSON body to answer with; raises ``PermissionError`` when
        the request is not authenticated, ``MalformedActivity`` when it is not an activity.
        Once authenticated, nothing raises: an activity that cannot be served is answered
        200 and dropped (logged once, no connector call). Transport-free, so any web
        framework can host it.
        """
        exchange = _Exchange(body)
        token = _EXCHANGE.set(exchange)
        try:
            try:
                activity = Activity().deserialize(body)
            except (DeserializationError, ValueError, TypeError, AttributeError) as error:
                raise MalformedActivity("malformed activity") from error
            invoke = await self.adapter.process_activity(auth_header, activity, self.on_turn)
        except PermissionError:
            raise
        except Exception as error:
            if not exchange.authenticated:  # botbuilder could not read it: refused, no effect
                raise MalformedActivity(f"unreadable activity ({type(error).__name__})") from error
            logger.error("dropped an activity: its handler failed", exc_info=error)
            self.metrics.dropped.labels(reason="failed").inc()
            return 200, None
        finally:
            _EXCHANGE.reset(token)
        if exchange.status is not None:
            return exchange.status, exchange.response
        if invoke is not None:
            return int(invoke.status), serializer_helper(invoke.body)
        return 201, None

    async def on_turn(self, turn_context: TurnContext) -> None:
        """What botbuilder calls for each authenticated activity: the handler of its type."""
        exchange = _EXCHANGE.get()
        if exchange is not None:
            exchange.authenticated = True
        activity: Wire = exchange.body if exchange else wire_activity(turn_context.activity)
        kind = str(activity.get("type") or "")
        self.metrics.activities.labels(type=kind).inc()
        handler = self._handlers.get(kind)
        if handler is None:
            return
        try:
            read_activity(activity)
        except MalformedPayload as problem:  # authenticated, but nothing to act on
            logger.warning("dropped a malformed activity (%s)", str(problem)[:200])
            self.metrics.dropped.labels(reason="malformed").inc()
            if exchange is not None:
                exchange.status, exchange.response = 200, None
            return
        try:
            await handler(turn_context, activity, exchange)
        except StateUnavailableError as error:
            self._unavailable(turn_context, activity, error, exchange)

    def connector(self, turn_context: TurnContext) -> TeamsConnector:
        """The outbound connector for this activity's service URL, with the credentials
        botbuilder chose for it."""
        client = turn_context.turn_state.get(turn_context.adapter.BOT_CONNECTOR_CLIENT_KEY)
        credentials = getattr(getattr(client, "config", None), "credentials", None)
        return self.pool.get(turn_context.activity.service_url, credentials)

    # ------------------------------------------------------------------ handlers

    async def _on_message(
        self, turn_context: TurnContext, activity: Wire, exchange: _Exchange | None
    ) -> None:
        await self._accept(turn_context, activity, message_text(activity))

    async def _on_conversation_update(
        self, turn_context: TurnContext, activity: Wire, exchange: _Exchange | None
    ) -> None:
        if self._welcomes(activity):
            await self._accept(turn_context, activity, "")

    async def _on_invoke(
        self, turn_context: TurnContext, activity: Wire, exchange: _Exchange | None
    ) -> None:
        status, body = 200, None  # an invoke the bot does not offer: acknowledged, not a 5xx
        if (feedback := feedback_of(activity)) is not None:
            if await self._first_delivery(activity):
                await self._record(activity, feedback)
            status = 200
        elif (turn_id := stop_request_of(activity)) is not None:
            await self.turns.request_stop(turn_id, by=asker_id(activity))
            status, body = 200, card_action_response("Stopping.")
        elif (text := button_message_of(activity)) is not None:
            await self._accept(turn_context, activity, text)
            status, body = 200, card_action_response()
        elif (answer := consent_answer_of(activity)) is not None:
            await self._answer_file_consent(activity, answer, self.connector(turn_context))
            status = 200
        if exchange is not None:
            exchange.status, exchange.response = status, body

    async def _accept(self, turn_context: TurnContext, activity: Wire, text: str) -> None:
        self.connector(turn_context)  # this process now knows the service URL's credentials
        await self.turns.accept(activity, text)

    @staticmethod
    def _welcomes(activity: Wire) -> bool:
        """The bot was just added to a personal chat: show the starter UI."""
        bot_id = (activity.get("recipient") or {}).get("id")
        added = activity.get("membersAdded") or []
        personal = (activity.get("conversation") or {}).get("conversationType") == "personal"
        return personal and any(isinstance(m, dict) and m.get("id") == bot_id for m in added)

    async def _record(self, activity: Wire, feedback: Feedback) -> None:
        """Record feedback on an answer, for the turn that posted it (while remembered)."""
        answering = await self.outbound.answering_turn(
            tenant_id(activity), teams_conversation_id(activity), feedback.message_id
        )
        try:
            await self.agent.record_feedback(
                request_context(activity), feedback.model_copy(update={"turn_id": answering})
            )
        except AgentError as refusal:  # e.g. the resolver does not know this user
            logger.info("feedback not recorded: %s", refusal)
            return
        reaction = "like" if feedback.positive else "dislike"
        self.metrics.feedback.labels(reaction=reaction).inc()

    def _unavailable(
        self,
        turn_context: TurnContext,
        activity: Wire,
        error: StateUnavailableError,
        exchange: _Exchange | None,
    ) -> None:
        """The state is down: Teams still gets its answer (no endless redelivery), the user
        is told plainly (an invoke in its response, a message by a reply)."""
        logger.error("could not accept a %s activity: %s", activity.get("type"), error)
        key = delivery_key(activity)
        if key is not None and not self.told_unavailable.first(key):
            self.metrics.duplicates.inc()  # a redelivery of an activity already told
            if exchange is not None and activity.get("type") == "invoke":
                exchange.status, exchange.response = 200, card_action_response(UNAVAILABLE)
            return
        self.metrics.unavailable.inc()
        if activity.get("type") == "invoke":
            if exchange is not None:
                exchange.status, exchange.response = 200, card_action_response(UNAVAILABLE)
            return
        slot = AnswerSlot(self.connector(turn_context), ConversationRef.from_activity(activity))
        self.turns.background(slot.settle(UNAVAILABLE))

    async def _first_delivery(self, activity: Wire) -> bool:
        """False (and counted) when this activity id was already delivered."""
        conversation = activity.get("conversation") or {}
        key = f"teams:delivery:{conversation.get('id')}:{activity.get('id')}"
        if not activity.get("id") or await self.deliveries.add(key, ttl=self.settings.dedupe_ttl):
            return True
        self.metrics.duplicates.inc()
        logger.info("dropped a redelivered activity %s", activity.get("id"))
        return False

    async def _answer_file_consent(
        self, activity: Wire, answer: ConsentAnswer, connector: TeamsConnector
    ) -> None:
        """The user answered a file consent card: on accept, upload in the background and
        show the file; the offer is used up either way."""
        offered = await self.files.take(activity, answer)
        url = self.files.upload_url(answer)
        if answer.accepted and offered is not None and url and answer.upload_info:
            ref = ConversationRef.from_activity(activity)
            self.turns.background(
                upload_offered_file(
                    self.files.policy, connector, ref, url, offered, dict(answer.upload_info)
                )
            )
