"""``TeamsBot``: the handlers that turn authenticated activities into durable turns.

    message                 -> a turn (``bots.teams.turns``), answered by any process
    conversationUpdate      -> the starter UI, when the bot was just added to a personal chat
    invoke: feedback        -> ``agent.record_feedback`` (once per activity)
    invoke: Stop            -> ``request_stop`` of the turn it carries (only the asker's
                               click counts, on whichever process runs it)
    invoke: Approve / Deny  -> ``bots.approvals``: decided by the agent (the clicker resolved
      / Stop on an approval    from the signed invoke); the clicker gets the refreshed card
      card (Action.Execute)    (or, refused, a message to them alone), everyone the updated
                               message; the turn resumes on whichever process picks it up
    invoke: card refresh    -> the approval card as it now stands (universal actions)
    invoke: a card button   -> a turn asking the button's message on the clicker's behalf
    invoke: file consent    -> the offered file uploaded (in the background) and shown
    invoke: message action  -> "Ask Threadline about this" on a message: a turn as the asker,
      (composeExtension/       the message quoted as data, answered as a reply in its
       submitAction)           conversation (``bots.teams.message_action``)
    invoke: signin/*        -> Teams single sign-on (``bots.teams.sso``): a token exchange,
                               a magic code, a failure; the token kept, the question asked
                               again (``ask_again``); 412 falls back to the sign-in button
    an MCP sign-in finished -> the question that waited for it, a new turn (``ask_again``)
    /home (a message)       -> the person's home as one card (``bots.teams.home``); its
                               refresh (Teams asks when it is viewed): the home as it stands
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
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from adapters.approval import ApprovalClick
from adapters.notices import UNAVAILABLE
from adapters.teams.activities import ConversationRef
from adapters.teams.approval import (
    approval_click_of,
    approval_refresh_of,
    card_response,
)
from adapters.teams.context import (
    Wire,
    asker_id,
    conversation_id,
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
from adapters.teams.home_view import is_home_refresh
from adapters.teams.identity import ConnectorRoster, GraphDirectory, TeamsUserResolver
from adapters.teams.message_action import read_message_action
from adapters.teams.payloads import Activity, AnyActivity
from adapters.teams.places import TeamsPlaces
from adapters.teams.slot import AnswerSlot
from agent_core.clock import Clock
from agent_core.errors import AgentError, StateUnavailableError, log_failure
from agent_core.feedback import Feedback
from agent_core.mcp.hub import SignedIn
from agent_core.schedules.settings import ScheduleSettings
from agent_core.state import KeyValueStore
from agent_core.state_factory import State, StateSettings, build_state
from bots.agents import ServedAgent
from bots.files import SharedFiles
from bots.mcp import hub_of
from bots.metrics import ChannelMetrics
from bots.runtime import ChannelRuntime, Shared
from bots.teams.connector import ConnectorPool
from bots.teams.files import graph_token_provider, upload_offered_file
from bots.teams.home import TeamsHome
from bots.teams.ingress import TokenCheck
from bots.teams.kinds import TeamsAsked
from bots.teams.message_action import CLOSE_FORM, accept_message_action
from bots.teams.outbound import Outbound
from bots.teams.port import TeamsPort
from bots.teams.schedules import TeamsSchedules
from bots.teams.settings import TeamsSettings
from bots.teams.sso import INVOKES as SIGN_IN_INVOKES
from bots.teams.sso import SingleSignOn
from bots.teams.turns import TeamsWing

logger = logging.getLogger(__name__)

Answer = tuple[int, Any]
"""The HTTP status and JSON body (None: none) Teams is answered with."""
Handler = Callable[[Activity, Wire], Awaitable[Answer]]
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
        roster=ConnectorRoster(pool.get, timeout=settings.roster_timeout),
        directory=directory,
        cache=cache,
    )


def _tell_of_outsiders(agent: ServedAgent, places: TeamsPlaces) -> None:
    """Each Teams resolver the agent uses tells ``places`` of the outsiders it finds (a
    profile's resolver wraps the channel's: ``base``)."""
    for served in agent.served_agents():
        resolver: object = served.user_resolver
        while not isinstance(resolver, TeamsUserResolver) and hasattr(resolver, "base"):
            resolver = resolver.base
        if isinstance(resolver, TeamsUserResolver):
            resolver.places = places


def _single_sign_on(
    settings: TeamsSettings,
    outbound: Outbound,
    cache: KeyValueStore,
    agent: ServedAgent,
    ask_again: Callable[[SignedIn], Awaitable[None]],
) -> SingleSignOn | None:
    """Teams single sign-on, when configured: the hub's ``TEAMS_SSO_SERVERS`` get their
    people's tokens from it (``bots.teams.sso``)."""
    if not settings.sso_enabled:
        return None
    hub = hub_of(agent)
    sso = SingleSignOn(settings, outbound, cache, hub, on_signed_in=ask_again)
    if hub is not None:
        hub.issue_tokens_for(settings.sso_servers, renew=sso.renew)
    return sso


class TeamsBot:
    """An ``Agent`` and a ``State`` behind ``/api/messages``; see the module docstring.
    ``await bot.open()`` starts this process's turn worker, ``close()`` drains it.

    ``file_offers`` keeps the files offered for download until the user consents (Teams'
    file consent flow, which Slack has no counterpart of); by default in ``state.cache``.

    >>> TeamsBot._welcomes({"recipient": {"id": "28:b"}, "membersAdded": [
    ...     {"id": "28:b"}], "conversation": {"conversationType": "personal"}})
    True
    >>> from agent_core import Agent, ScriptedLlmService, ToolRegistry
    >>> agent = Agent(llm_service=ScriptedLlmService(["hi"]), tool_registry=ToolRegistry())
    >>> bot = TeamsBot(agent, TeamsSettings())
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
        state = state or build_state(StateSettings(ephemeral=True))
        self.pool = pool if pool is not None else ConnectorPool()
        self.file_offers = file_offers or FileOffers(state.cache)
        self.authentication = TokenCheck(settings)
        self.outbound = Outbound(settings, self.pool, state.records)
        self.places = TeamsPlaces(
            state.cache,
            home_tenants=settings.home_tenants,
            connector_for=self.pool.get,
            timeout=settings.roster_timeout,
            max_pages=settings.roster_pages,
        )
        _tell_of_outsiders(agent, self.places)
        self.sso = _single_sign_on(settings, self.outbound, state.cache, agent, self.ask_again)
        self.runtime = ChannelRuntime(
            agent,
            TeamsPort(self.outbound, settings.home_tenants),
            settings,
            self._wing,
            state=state,
            metrics=metrics,
            files=files,
            schedules=schedules,
            clock=clock,
        )
        self.state, self.metrics, self.turns = state, self.runtime.metrics, self.runtime.turns
        self.approvals, self.schedules = self.runtime.approvals, self.runtime.schedules
        self.home = TeamsHome(self.runtime.home)
        self._handlers: dict[str, Handler] = {
            "message": self._on_message,
            "invoke": self._on_invoke,
            "conversationUpdate": self._on_conversation_update,
        }

    def _wing(self, shared: Shared) -> TeamsWing:
        """Teams' part of answering turns (``bots.teams.turns``), of the runtime's pieces."""
        settings = self.settings
        return TeamsWing(
            self.outbound,
            options=settings.reply_options(),
            files=self.file_offers,
            stop_button_after=settings.stop_button_after,
            on_approval=shared.approvals.note,
            places=self.places,
            place_policy=shared.place_policy,
            schedules=TeamsSchedules(
                shared.schedules,
                self.outbound,
                options=settings.reply_options(),
                stop_button_after=settings.stop_button_after,
                privately=self._answer_privately,
            ),
            home=TeamsHome(shared.home),
            sign_in_cards=self.sso.card if self.sso is not None else None,
        )

    # ------------------------------------------------------------------ lifecycle

    async def open(self) -> None:
        """At startup: fetch the token signing keys, start the runtime (this process's turn
        worker, the approval sweep, the schedule dispatcher)."""
        if self.settings.auth_enabled:
            logger.info("Teams bot %s (%s) starting", self.settings.app_id, self.settings.app_type)
            await self.authentication.prefetch()
        else:
            logger.warning(
                "!!! AUTHENTICATION IS OFF: MicrosoftAppId is not set, so /api/messages "
                "accepts unsigned requests, and anyone who reaches it can claim to be anyone. "
                "Use this only for local testing (Bot Framework Emulator, a tunnel). !!!"
            )
        self.runtime.open()

    async def close(self, *, timeout: float = 30.0) -> None:
        """Stop the runtime (running turns finish, up to ``timeout`` s), release the pool."""
        await self.runtime.close(timeout=timeout)
        await self.pool.close()

    async def idle(self, *, timeout: float = 30.0) -> None:
        """Until every queued turn is answered (tests, benchmarks)."""
        await self.runtime.idle(timeout=timeout)

    # ------------------------------------------------------------------ ingress

    async def handle(self, activity: AnyActivity, wire: Wire) -> Answer:
        """One authenticated activity, as ``read_activity`` checked it (``activity``) and as
        Teams sent it (``wire``; the small readers read it, the turn records the model): the
        status and JSON body to answer Teams with. Never raises: an activity that cannot be
        served is answered 200 and dropped (logged once, no connector call)."""
        kind = activity.type
        self.metrics.events.labels(kind=kind).inc()
        handler = self._handlers.get(kind)
        if handler is None or not isinstance(activity, Activity):
            return ACCEPTED
        try:
            return await handler(activity, wire)
        except StateUnavailableError as error:
            return self._unavailable(activity, wire, error)
        except Exception as error:
            log_failure(logger, error, f"teams: a {kind} activity")
            self.metrics.dropped.labels(reason="failed").inc()
            return DONE

    # ------------------------------------------------------------------ handlers

    async def _on_message(self, activity: Activity, wire: Wire) -> Answer:
        await self._accept(activity, wire, message_text(wire))
        return ACCEPTED

    async def _answer_privately(self, metadata: Mapping[str, Any]) -> bool:
        """Whether a place (a schedule's) is now read by another organisation and the
        policy does not allow answering there."""
        shared = await self.places.is_shared(metadata)
        return shared and self.runtime.place_policy.for_place(metadata) != "allow"

    async def _on_conversation_update(self, activity: Activity, wire: Wire) -> Answer:
        try:  # who reads the place may have changed
            await self.places.handle_event(tenant_id(wire), wire)
        except StateUnavailableError as error:  # the cached answer expires on its own
            logger.warning("teams: a change of members not noted (%s)", error)
        if self._welcomes(wire):
            await self._accept(activity, wire, "")
        return ACCEPTED

    async def _on_invoke(self, activity: Activity, wire: Wire) -> Answer:
        """An invoke the bot does not offer is acknowledged (never a 5xx)."""
        if self.sso is not None and activity.name in SIGN_IN_INVOKES:
            return await self.sso.invoke(activity, wire)
        if (feedback := feedback_of(wire)) is not None:
            if await self._first_delivery(wire):
                await self._record(wire, feedback)
            return DONE
        if (click := approval_click_of(wire)) is not None:
            return await self._on_approval(wire, click)
        if (action := read_message_action(wire)) is not None:
            await accept_message_action(self.turns, wire, action)
            return 200, CLOSE_FORM
        if (approval_id := approval_refresh_of(wire)) is not None:
            return await self._refresh_approval(wire, approval_id)
        if is_home_refresh(wire):
            return 200, await self.home.refreshed(activity)
        if (turn_id := stop_request_of(wire)) is not None:
            await self.turns.request_stop(turn_id, by=asker_id(wire))
            return 200, card_action_response("Stopping.")
        if (text := button_message_of(wire)) is not None:
            await self._accept(activity, wire, text)
            return 200, card_action_response()
        if (answer := consent_answer_of(wire)) is not None:
            await self._answer_file_consent(activity, wire, answer)
        return DONE

    async def _on_approval(self, activity: Wire, click: ApprovalClick) -> Answer:
        """Approve / Deny / Stop on an approval card: decided by the agent (who may decide
        is checked now, for the clicker of the signed invoke, in the conversation clicked).
        The clicker gets the card as it now stands; a refusal ("only Ana may approve this")
        is a message to the clicker alone."""
        self.metrics.events.labels(kind="approval").inc()
        context = request_context(activity)
        try:
            answer = await self.approvals.click(
                context, click, conversation_id=conversation_id(context)
            )
        except StateUnavailableError as error:
            logger.warning(
                "teams: approval click of %s not recorded (%s)", asker_id(activity), error
            )
            return 200, card_action_response(UNAVAILABLE)
        record = answer.record
        if record is not None and (answer.decided or answer.reason == "already"):
            return 200, card_response(record.component())
        return 200, card_action_response(answer.message)

    async def _refresh_approval(self, activity: Wire, approval_id: str) -> Answer:
        """A card's refresh: the approval as it now stands, to a client in the conversation
        it was asked in (nothing for an unknown approval, or one of another conversation)."""
        record = await self.agent.approval_book.get(approval_id)
        context = request_context(activity).metadata
        if record is None or (
            record.request.get("workspace_id"),
            record.request.get("thread_id"),
        ) != (context.get("workspace_id"), context.get("thread_id")):
            return DONE
        return 200, card_response(record.component())

    async def _accept(self, activity: Activity, wire: Wire, text: str) -> None:
        await self.turns.accept(
            turn_key(wire),
            TeamsAsked.of(activity, text),
            owner=asker_id(wire) or None,
            dedupe_key=delivery_key(wire),
        )

    async def ask_again(self, signed: SignedIn) -> None:
        """Someone connected an MCP server (``/oauth/mcp/callback``): the question that waited
        for it is a new turn in its conversation, asked as them (the metadata is the
        authenticated request's, kept sealed with the sign-in, and must be the signer's own;
        the bot's side of the conversation is its remembered reference)."""
        waiting = signed.waiting
        request = waiting.request if waiting is not None else {}
        tenant, aad = str(request.get("workspace_id") or ""), str(request.get("user_id") or "")
        if waiting is None or request.get("platform") != "teams":
            return
        if f"teams:{tenant}:{aad}" != signed.person:
            logger.warning("teams: a sign-in's waiting question is not its signer's; not asked")
            return
        ref = await self.outbound.reference(tenant, str(request.get("channel_id") or ""))
        if ref is None:
            logger.info("teams: no conversation to ask a signed-in person's question again in")
            return
        activity = _asked_again(ref, request, waiting.question)
        asked = TeamsAsked.of(Activity.model_validate(activity), waiting.question)
        await self.turns.accept(turn_key(activity), asked, owner=asker_id(activity) or None)

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

    def _unavailable(self, activity: Activity, wire: Wire, error: StateUnavailableError) -> Answer:
        """The state is down: Teams still gets its answer (no endless redelivery), the user
        is told plainly (an invoke in its response, a message by a reply)."""
        logger.warning("teams: could not accept a %s activity (%s)", activity.type, error)
        tell = self.runtime.tell_unavailable(delivery_key(wire))  # a redelivery: told once
        if activity.type == "invoke":
            return 200, card_action_response(UNAVAILABLE)
        if tell:
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
        if await self.runtime.first_delivery(key):
            return True
        logger.info("teams: dropped a redelivered activity %s", activity.get("id"))
        return False

    async def _answer_file_consent(
        self, activity: Activity, wire: Wire, answer: ConsentAnswer
    ) -> None:
        """The user answered a file consent card: on accept, upload in the background and
        show the file; the offer is used up either way."""
        offered = await self.file_offers.take(wire, answer)
        url = self.file_offers.upload_url(answer)
        if answer.accepted and offered is not None and url and answer.upload_info:
            ref = ConversationRef.from_activity(activity)
            connector = await self.outbound.connector(ref.service_url)
            self.turns.background(
                upload_offered_file(
                    self.file_offers.policy, connector, ref, url, offered, dict(answer.upload_info)
                )
            )


def _asked_again(ref: ConversationRef, request: Mapping[str, Any], question: str) -> Wire:
    """The message a signed-in person's waiting question is asked again as: in its
    conversation (no activity to reply to), from them (as the kept request says), to the bot
    (as the conversation's reference says)."""
    tenant = ref.tenant_id
    channel_data: dict[str, Any] = {"tenant": {"id": tenant}}
    if request.get("teams_team_id"):
        channel_data["team"] = {"id": request["teams_team_id"]}
    if request.get("teams_channel_id"):
        channel_data["channel"] = {"id": request["teams_channel_id"]}
    sender = {
        "id": str(request.get("teams_user_id") or ""),
        "aadObjectId": str(request.get("teams_aad_object_id") or request.get("user_id") or ""),
        "name": str(request.get("user_name") or ""),
    }
    return {
        "type": "message",
        "serviceUrl": ref.service_url,
        "channelId": ref.channel_id,
        "from": sender,
        "recipient": ref.bot,
        "conversation": {
            "id": ref.conversation_id,
            "conversationType": ref.conversation_type,
            "tenantId": tenant,
        },
        "channelData": channel_data,
        "text": question,
    }
