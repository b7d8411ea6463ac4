"""``TeamsBot``: the handlers that turn authenticated activities into durable turns.

    message                 -> a turn (``bots.teams.turns``), answered by any process
    conversationUpdate      -> the starter UI, when the bot was just added to a personal chat
    invoke: feedback        -> ``agent.record_feedback`` (once per activity)
    invoke: Stop            -> ``request_stop`` of the turn it carries (only the asker's
                               click counts, on whichever process runs it)
    invoke: a card button   -> a turn asking the button's message on the clicker's behalf
    invoke: file consent    -> the offered file uploaded (in the background) and shown
    /schedule ... (a message) -> a turn answered by the schedule commands
                               (``bots.teams.schedules``); this process also dispatches due
                               schedules (``BotSchedules``) beside its turn worker

``bots.teams.ingress`` verifies each request before ``handle`` sees it; everything
Teams-specific about reading and answering lives in ``adapters.teams``. A message is
recorded with ``turns.accept`` (deduplicated by ``activity.id`` in the same step) before
Teams gets its ``201``. Invokes are answered within the request. While the state backend
(Redis) is down, Teams still gets its answer (so it does not redeliver forever) and the
user is told plainly (``adapters.notices``), once per activity however often it is
redelivered.

The bot is built like the Slack bot: its agent, settings and ``State`` (the defaults keep
everything in this process); ``bots.teams.app`` serves it over HTTP::

    pool = ConnectorPool()
    agent = build_agent(user_resolver(settings, pool, state.cache), ...)
    bot = TeamsBot(agent, settings, state=state, pool=pool)
    status, body = await bots.teams.ingress.receive(bot, activity_json, authorization)
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from adapters.notices import UNAVAILABLE
from adapters.teams.activities import ConversationRef
from adapters.teams.context import (
    Wire,
    asker_id,
    delivery_key,
    message_text,
    request_context,
    teams_conversation_id,
    tenant_id,
    turn_key,
)
from adapters.teams.controls import (
    button_message_of,
    card_action_response,
    feedback_of,
    stop_request_of,
)
from adapters.teams.files import ConsentAnswer, FileOffers, consent_answer_of
from adapters.teams.identity import ConnectorRoster, GraphDirectory, TeamsUserResolver
from adapters.teams.slot import AnswerSlot
from agent_core.errors import AgentError, StateUnavailableError, log_failure
from agent_core.feedback import Feedback
from agent_core.schedules.clock import Clock
from agent_core.schedules.settings import ScheduleSettings
from agent_core.state import KeyValueStore, State, StateSettings, build_state
from bots.agents import ServedAgent
from bots.files import SharedFiles
from bots.metrics import ChannelMetrics
from bots.outage import RecentDeliveries
from bots.schedules.service import BotSchedules
from bots.teams.connector import ConnectorPool
from bots.teams.files import graph_token_provider, upload_offered_file
from bots.teams.ingress import TokenCheck
from bots.teams.outbound import Outbound
from bots.teams.schedules import TeamsSchedules
from bots.teams.settings import TeamsSettings
from bots.teams.turns import TeamsWing, turn_payload
from bots.turns import TurnHost

logger = logging.getLogger(__name__)

Answer = tuple[int, Any]
"""The HTTP status and JSON body (None: none) Teams is answered with."""
Handler = Callable[[Wire], Awaitable[Answer]]
ACCEPTED: Answer = (201, None)
DONE: Answer = (200, None)


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


class TeamsBot:
    """An ``Agent`` and a ``State`` behind ``/api/messages``; see the module docstring.
    ``await bot.open()`` starts this process's turn worker, ``close()`` drains it.

    ``file_offers`` keeps the files offered for download until the user consents (Teams'
    file consent flow, which Slack has no counterpart of); by default in ``state.cache``.

    >>> TeamsBot._welcomes({"recipient": {"id": "28:b"}, "membersAdded": [
    ...     {"id": "28:b"}], "conversation": {"conversationType": "personal"}})
    True
    >>> bot = TeamsBot(None, TeamsSettings())  # type: ignore[arg-type]
    >>> bot.settings.auth_enabled, bot.state.backend
    (False, 'memory')
    """

    def __init__(
        self,
        agent: ServedAgent,
        settings: TeamsSettings,
        *,
        state: State | None = None,
        pool: ConnectorPool | None = None,
        metrics: ChannelMetrics | None = None,
        files: SharedFiles | None = None,
        file_offers: FileOffers | None = None,
        schedules: ScheduleSettings | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.agent = agent
        self.settings = settings
        self.state = state or build_state(StateSettings(ephemeral=True))
        self.metrics = metrics or ChannelMetrics("teams")
        self.pool = pool if pool is not None else ConnectorPool()
        self.file_offers = file_offers or FileOffers(self.state.cache)
        self.authentication = TokenCheck(settings)
        self.outbound = Outbound(settings, self.pool, self.state.records)
        self.schedules = BotSchedules(self.state, agent, schedules, clock=clock)
        wing = TeamsWing(
            self.outbound,
            options=settings.reply_options(),
            files=self.file_offers,
            stop_button_after=settings.stop_button_after,
            schedules=TeamsSchedules(
                self.schedules,
                self.outbound,
                options=settings.reply_options(),
                stop_button_after=settings.stop_button_after,
            ),
        )
        self.turns = TurnHost(
            agent,
            self.state.turns,
            wing,
            metrics=self.metrics,
            files=files,
            concurrency=settings.turn_concurrency,
            per_person=settings.turns_per_person,
            dedupe_ttl=settings.dedupe_ttl,
        )
        if files is not None:
            files.serve(agent)
        self.told_unavailable = RecentDeliveries(ttl=settings.dedupe_ttl)
        """Activities told "temporarily unavailable" lately (a redelivery is not told twice)."""
        self._handlers: dict[str, Handler] = {
            "message": self._on_message,
            "invoke": self._on_invoke,
            "conversationUpdate": self._on_conversation_update,
        }

    # ------------------------------------------------------------------ lifecycle

    async def open(self) -> None:
        """At startup: fetch the token signing keys, start this process's turn worker."""
        if self.settings.auth_enabled:
            logger.info("Teams bot %s (%s) starting", self.settings.app_id, self.settings.app_type)
            await self.authentication.prefetch()
        else:
            logger.warning(
                "!!! AUTHENTICATION IS OFF: MicrosoftAppId is not set, so /api/messages "
                "accepts unsigned requests, and anyone who reaches it can claim to be anyone. "
                "Use this only for local testing (Bot Framework Emulator, a tunnel). !!!"
            )
        self.turns.start()
        self.schedules.start()

    async def close(self, *, timeout: float = 30.0) -> None:
        """Let running turns finish (up to ``timeout`` s), stop the worker, release the pool."""
        await self.schedules.drain()
        await self.turns.drain(timeout=timeout)
        await self.pool.close()

    async def idle(self, *, timeout: float = 30.0) -> None:
        """Until every queued turn is answered (tests, benchmarks)."""
        await self.turns.idle(timeout=timeout)

    # ------------------------------------------------------------------ ingress

    async def handle(self, activity: Wire) -> Answer:
        """One authenticated activity (of a shape ``read_activity`` accepts): the status and
        JSON body to answer Teams with. Never raises: an activity that cannot be served is
        answered 200 and dropped (logged once, no connector call)."""
        kind = str(activity.get("type") or "")
        self.metrics.events.labels(kind=kind).inc()
        handler = self._handlers.get(kind)
        if handler is None:
            return ACCEPTED
        try:
            return await handler(activity)
        except StateUnavailableError as error:
            return self._unavailable(activity, error)
        except Exception as error:
            log_failure(logger, error, f"teams: a {kind} activity")
            self.metrics.dropped.labels(reason="failed").inc()
            return DONE

    # ------------------------------------------------------------------ handlers

    async def _on_message(self, activity: Wire) -> Answer:
        await self._accept(activity, message_text(activity))
        return ACCEPTED

    async def _on_conversation_update(self, activity: Wire) -> Answer:
        if self._welcomes(activity):
            await self._accept(activity, "")
        return ACCEPTED

    async def _on_invoke(self, activity: Wire) -> Answer:
        """An invoke the bot does not offer is acknowledged (never a 5xx)."""
        if (feedback := feedback_of(activity)) is not None:
            if await self._first_delivery(activity):
                await self._record(activity, feedback)
            return DONE
        if (turn_id := stop_request_of(activity)) is not None:
            await self.turns.request_stop(turn_id, by=asker_id(activity))
            return 200, card_action_response("Stopping.")
        if (text := button_message_of(activity)) is not None:
            await self._accept(activity, text)
            return 200, card_action_response()
        if (answer := consent_answer_of(activity)) is not None:
            await self._answer_file_consent(activity, answer)
        return DONE

    async def _accept(self, activity: Wire, text: str) -> None:
        await self.turns.accept(
            turn_key(activity),
            turn_payload(activity, text),
            owner=asker_id(activity) or None,
            dedupe_key=delivery_key(activity),
        )

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
            log_failure(logger, refusal, "teams: feedback")
            return
        reaction = "like" if feedback.positive else "dislike"
        self.metrics.feedback.labels(reaction=reaction).inc()

    def _unavailable(self, activity: Wire, error: StateUnavailableError) -> Answer:
        """The state is down: Teams still gets its answer (no endless redelivery), the user
        is told plainly (an invoke in its response, a message by a reply)."""
        logger.warning("teams: could not accept a %s activity (%s)", activity.get("type"), error)
        invoke = activity.get("type") == "invoke"
        key = delivery_key(activity)
        if key is not None and not self.told_unavailable.first(key):
            self.metrics.duplicates.inc()  # a redelivery of an activity already told
            return (200, card_action_response(UNAVAILABLE)) if invoke else ACCEPTED
        self.metrics.unavailable.inc()
        if invoke:
            return 200, card_action_response(UNAVAILABLE)
        self.turns.background(self._tell_unavailable(ConversationRef.from_activity(activity)))
        return ACCEPTED

    async def _tell_unavailable(self, ref: ConversationRef) -> None:
        connector = await self.outbound.connector(ref.service_url)
        await AnswerSlot(connector, ref).settle(UNAVAILABLE)

    async def _first_delivery(self, activity: Wire) -> bool:
        """False (and counted) when this activity was already delivered (``state.dedupe``,
        as the Slack bot deduplicates the events that are not turns)."""
        key = delivery_key(activity)
        if key is None:
            return True
        if await self.state.dedupe.first_time(key, ttl=self.settings.dedupe_ttl):
            return True
        self.metrics.duplicates.inc()
        logger.info("teams: dropped a redelivered activity %s", activity.get("id"))
        return False

    async def _answer_file_consent(self, activity: Wire, answer: ConsentAnswer) -> None:
        """The user answered a file consent card: on accept, upload in the background and
        show the file; the offer is used up either way."""
        offered = await self.file_offers.take(activity, answer)
        url = self.file_offers.upload_url(answer)
        if answer.accepted and offered is not None and url and answer.upload_info:
            ref = ConversationRef.from_activity(activity)
            connector = await self.outbound.connector(ref.service_url)
            self.turns.background(
                upload_offered_file(
                    self.pool.session, connector, ref, url, offered, dict(answer.upload_info)
                )
            )
