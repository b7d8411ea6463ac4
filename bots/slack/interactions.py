"""The bot's listeners for clicks and for events that are not questions.

    feedback buttons   -> ``agent.record_feedback`` (audit log + ``on_feedback`` hooks)
    Stop button        -> ``request_stop`` of the turn it carries (on whichever process runs
                          it; only the asker's click counts)
    suggestion buttons -> a turn asking the button's message on the clicker's behalf
    assistant_thread_started -> suggested prompts from the agent's starter UI
    app_home_opened (Messages tab, first visit) -> the agent's welcome, once
    user_change / subteam_* -> identity cache invalidation

``SlackBot`` mixes these in; they rely on its ``agent``, ``state``, ``metrics``,
``threads`` and turn accepting. Events that are not turns are deduplicated with
``state.dedupe``; while the state backend is down they are still acked.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.context import PRIVATE_THREAD, action_context, conversation_id, workspace_of
from adapters.slack.controls import feedback_turn
from adapters.slack.identity import SlackUserResolver
from adapters.slack.markdown import truncate
from adapters.slack.render import render
from adapters.slack.threads import ThreadMembership
from agent_core.agent import Agent
from agent_core.components import ButtonComponent, ButtonGroupComponent, UiComponent
from agent_core.errors import StateUnavailableError
from agent_core.feedback import Feedback
from agent_core.state import KeyValueStore, State
from agent_core.users import RequestContext
from bots.slack.metrics import SlackMetrics
from bots.slack.queued import QueuedTurn
from bots.slack.settings import SlackSettings

log = logging.getLogger(__name__)

WELCOME_TTL = 90 * 24 * 3600.0
Ack = Callable[..., Awaitable[Any]]


class InteractionListeners:
    """Listeners ``SlackBot`` registers for clicks and non-question events.

    >>> sorted(n for n in vars(InteractionListeners) if n.startswith("_on_"))[:2]
    ['_on_assistant_thread_started', '_on_button']
    """

    agent: Agent
    settings: SlackSettings
    state: State
    metrics: SlackMetrics
    cache: KeyValueStore
    threads: ThreadMembership

    async def _enqueue(self, queued: QueuedTurn, *, dedupe_key: str | None = None) -> bool:
        raise NotImplementedError

    def _tell_unavailable(
        self, client: AsyncWebClient, queued: QueuedTurn, error: StateUnavailableError
    ) -> None:
        raise NotImplementedError

    async def _first_event(self, body: Mapping[str, Any]) -> bool:
        """False for a redelivered event (same ``event_id``); True when unsure (outage)."""
        kind = str((body.get("event") or {}).get("type"))
        self.metrics.events.labels(kind=kind).inc()
        event_id = body.get("event_id")
        if not event_id:
            return True
        try:
            fresh = await self.state.dedupe.first_time(
                f"slack:event:{event_id}", ttl=self.settings.dedupe_ttl
            )
        except StateUnavailableError as error:
            log.warning("slack: event %s not deduplicated (%s)", event_id, error)
            return True
        if not fresh:
            self.metrics.duplicates.inc()
        return fresh

    async def _on_feedback(self, ack: Ack, body: dict[str, Any]) -> None:
        await ack()
        self.metrics.events.labels(kind="feedback").inc()
        action = (body.get("actions") or [{}])[0]
        ctx = action_context(body)
        container = body.get("container") or {}
        message_ts = container.get("message_ts") or (body.get("message") or {}).get("ts") or ""
        feedback = Feedback(
            conversation_id=conversation_id(ctx),
            message_id=str(message_ts),
            positive=action.get("value") == "positive",
            turn_id=feedback_turn(action.get("block_id")),
        )
        await self.agent.record_feedback(ctx, feedback)

    async def _on_stop(self, ack: Ack, body: dict[str, Any]) -> None:
        """The Stop button carries the turn id; the worker running it honours the asker's
        click only (``owner``), on whichever process that is."""
        await ack()
        self.metrics.events.labels(kind="stop").inc()
        action = (body.get("actions") or [{}])[0]
        team, _ = workspace_of(body)
        user = (body.get("user") or {}).get("id", "")
        try:
            await self.state.turns.request_stop(str(action.get("value")), by=f"{team}:{user}")
        except StateUnavailableError as error:
            log.warning("slack: stop request of %s not delivered (%s)", user, error)

    async def _on_button(self, ack: Ack, body: dict[str, Any], context: AsyncBoltContext) -> None:
        self.metrics.events.labels(kind="button").inc()
        action = (body.get("actions") or [{}])[0]
        meta = action_context(body).metadata
        queued = QueuedTurn(
            context=meta,
            text=str(action.get("value") or ""),
            private=meta.get("thread_id") == PRIVATE_THREAD,
            response_url=body.get("response_url"),
            enterprise_install=bool(context.is_enterprise_install),
        )
        try:
            if not queued.private:
                await self.threads.join(queued.team, meta["channel_id"], meta["thread_id"])
            await self._enqueue(queued)
        except StateUnavailableError as error:
            self._tell_unavailable(context.client, queued, error)
        await ack()

    # --- agent view, home, identity -------------------------------------------------------------

    async def _starter_buttons(self, context: RequestContext) -> list[tuple[str, str]]:
        buttons: list[tuple[str, str]] = []
        async for component in self.agent.send_message(context, ""):
            rich = component.rich_component
            if isinstance(rich, ButtonGroupComponent):
                buttons += [(b.label, b.action) for b in rich.buttons if not b.disabled]
            elif isinstance(rich, ButtonComponent):
                buttons.append((rich.label, rich.action))
        return buttons

    async def _on_assistant_thread_started(
        self, body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext
    ) -> None:
        if not await self._first_event(body):
            return
        thread = event.get("assistant_thread") or {}
        team, enterprise = workspace_of(body)
        ctx = RequestContext(
            metadata={
                "platform": "slack",
                "workspace_id": team,
                "enterprise_id": enterprise,
                "user_id": thread.get("user_id"),
                "channel_id": thread.get("channel_id"),
                "thread_id": thread.get("thread_ts"),
                "is_dm": True,
            }
        )
        prompts = [
            {"title": truncate(label, 75), "message": action}
            for label, action in (await self._starter_buttons(ctx))[:4]
        ]
        if prompts:
            await context.client.assistant_threads_setSuggestedPrompts(
                channel_id=thread["channel_id"], thread_ts=thread["thread_ts"], prompts=prompts
            )

    async def _on_home_opened(
        self, body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext
    ) -> None:
        """First visit to the Messages tab: post the agent's welcome (starter UI) once."""
        team, _ = workspace_of(body)
        user, channel = event.get("user"), event.get("channel")
        if event.get("tab") != "messages" or not user or not channel:
            return
        try:
            if not await self.cache.add(f"slack:welcome:{team}:{user}", ttl=WELCOME_TTL):
                return
        except StateUnavailableError as error:  # better no welcome than a repeated one
            log.warning("slack: welcome of %s skipped (%s)", user, error)
            return
        ctx = RequestContext(
            metadata={
                "platform": "slack",
                "workspace_id": team,
                "user_id": user,
                "channel_id": channel,
                "thread_id": "home",
                "is_dm": True,
            }
        )
        async for component in self.agent.send_message(ctx, ""):
            await self._post_top_level(context.client, channel, component)

    @staticmethod
    async def _post_top_level(client: AsyncWebClient, channel: str, component: UiComponent) -> None:
        for message in render(component):
            if message.blocks:
                await client.chat_postMessage(
                    channel=channel, text=message.text, blocks=message.blocks
                )

    async def _on_identity_event(self, body: dict[str, Any], event: dict[str, Any]) -> None:
        self.metrics.events.labels(kind=str(event.get("type"))).inc()
        resolver = self.agent.user_resolver
        if isinstance(resolver, SlackUserResolver):
            team, _ = workspace_of(body)
            try:
                await resolver.handle_event(team, event)
            except StateUnavailableError as error:  # the entry expires with its TTL anyway
                log.warning("slack: identity cache not invalidated (%s)", error)
