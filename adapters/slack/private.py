"""Admin-only detail and private answers: only the person who asked ever sees them.

In a shared conversation every such component goes out as ``chat.postEphemeral`` to the
asker (in the thread, or top-level for a private slash command, falling back to the
command's ``response_url`` when the bot is not in the channel). Ephemeral messages cannot be
edited or deleted, so only final versions are sent, progress is skipped and files are never
attached (an upload would be visible to the whole channel).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from adapters.slack.context import ReplyTarget
from adapters.slack.controls import feedback_block
from adapters.slack.elements import context
from adapters.slack.errors import SlackCallFailed, web_client
from adapters.slack.limits import SlackMessage
from adapters.slack.render import render
from agent_core.components import (
    ComponentLifecycle,
    RichTextComponent,
    StatusBarUpdateComponent,
    StatusCardComponent,
    TaskListComponent,
    TaskTrackerUpdateComponent,
    ToolStatusComponent,
    UiComponent,
)

log = logging.getLogger(__name__)

PROGRESS_STATUSES = frozenset({"pending", "running"})
QUIET_WHEN_DONE = frozenset({"completed", "success"})


class PrivateDelivery:
    """Sends components to ``target.user_id`` only; see the module docstring.

    >>> client = AsyncWebClient(token="xoxb-test")
    >>> PrivateDelivery(client, ReplyTarget("C1", "1.0", "T1", "U1")).target.user_id
    'U1'
    """

    def __init__(
        self,
        client: AsyncWebClient,
        target: ReplyTarget,
        *,
        on_send: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._client = web_client(client)
        self.target = target
        self._on_send = on_send

    @property
    def inline(self) -> bool:
        """Whether admin-only detail may simply be part of the answer (the bot's own DM)."""
        return self.target.is_dm and not self.target.private

    async def deliver(self, component: UiComponent) -> None:
        """Only the asker sees it: ephemeral messages (which cannot be edited or deleted)."""
        rich = component.rich_component
        if rich.lifecycle is ComponentLifecycle.REMOVE or not rich.visible:
            return
        if isinstance(rich, StatusBarUpdateComponent | TaskTrackerUpdateComponent):
            return
        if isinstance(rich, TaskListComponent) and rich.as_plan:
            return  # the plan is progress: an ephemeral message could never tick it off
        if isinstance(rich, RichTextComponent) and rich.streaming:
            return  # only the final version of a private text is sent
        if (
            isinstance(rich, StatusCardComponent)
            and rich.status in PROGRESS_STATUSES | QUIET_WHEN_DONE
        ) or (isinstance(rich, ToolStatusComponent) and not rich.failed):
            return  # progress (a tool call running or done): nothing to show privately
        answer = isinstance(rich, RichTextComponent) and component.audience == "everyone"
        for message in render(component):
            blocks = [
                *message.blocks,
                *(context("_Attachments are not shared privately._") if message.files else []),
            ]
            if answer:
                blocks.append(feedback_block(self.target.turn_id))
            if blocks:
                await self._ephemeral(SlackMessage(text=message.text, blocks=blocks))
                if self._on_send is not None:
                    await self._on_send()

    async def _ephemeral(self, message: SlackMessage) -> None:
        target = self.target
        thread: dict[str, Any] = {} if target.private else {"thread_ts": target.thread_ts}
        try:
            await self._client.chat_postEphemeral(
                channel=target.channel,
                user=target.user_id,
                text=message.text,
                blocks=message.blocks,
                **thread,
            )
        except SlackCallFailed as error:
            if target.response_url is None:
                raise
            log.info("slack: ephemeral refused (%s); using the response_url", error.failure)
            await AsyncWebhookClient(target.response_url).send(
                text=message.text,
                blocks=message.blocks,
                response_type="ephemeral",
                replace_original=False,
            )
