"""What the Slack bot records for each accepted message, and how it answers outside a turn.

``QueuedTurn`` is the payload a listener ``enqueue``-s before the ack: the signed request's
context and what to answer, enough for any process to run it. ``reply_target`` says
where its answer goes; ``tell`` posts a plain notice there (temporarily unavailable,
interrupted) without running the agent.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from slack_sdk.errors import SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.context import PRIVATE_THREAD, conversation_id
from adapters.slack.stream import ReplyStream, ReplyTarget
from agent_core.components import NotificationComponent, UiComponent
from agent_core.users import RequestContext

log = logging.getLogger(__name__)

INTERRUPTED = (
    "I was interrupted while answering this (a Threadline server stopped). Please ask again."
)
UNAVAILABLE = "Threadline is temporarily unavailable. Please try again shortly."


class QueuedTurn(BaseModel):
    """What a listener records before the ack: enough to answer on any process.

    ``context`` is the ``RequestContext`` metadata built from the *signed* request;
    ``open_thread`` marks a public slash command, whose worker first posts
    "<@user> asked: ..." and answers in that message's thread.

    >>> turn = QueuedTurn(context={"workspace_id": "T1", "channel_id": "C1",
    ...                            "thread_id": "1.0", "user_id": "U1"}, text="hi")
    >>> turn.owner, turn.thread_key
    ('T1:U1', 'slack:T1:C1:1.0')
    """

    context: dict[str, Any]
    text: str
    private: bool = False
    response_url: str | None = None
    open_thread: bool = False
    history_before_ts: str | None = None
    """Set on a first mention inside a human thread: read the thread up to this message."""
    bot_user_id: str | None = None
    enterprise_install: bool = False

    @property
    def team(self) -> str:
        return str(self.context["workspace_id"])

    @property
    def user(self) -> str:
        return str(self.context["user_id"])

    @property
    def owner(self) -> str:
        """Who may stop the turn (``request_stop(by=...)``)."""
        return f"{self.team}:{self.user}"

    @property
    def thread_key(self) -> str:
        """The queue's ordering key: the conversation (a private one is per asker; public
        slash commands, each opening a thread of its own, in order per asker and channel)."""
        if self.open_thread:
            return f"slack:{self.team}:{self.context['channel_id']}:commands:{self.user}"
        key = conversation_id(RequestContext(metadata=self.context))
        return f"{key}:{self.user}" if self.private else key

    def payload(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_defaults=True)


@dataclass
class TurnRequest:
    """One question to answer: who asked (signed context), what, and where to answer.

    >>> from adapters.slack.context import event_context
    >>> event = {"user": "U1", "channel": "C1", "ts": "1.0"}
    >>> ctx = event_context({"team_id": "T1", "event": event})
    >>> target = ReplyTarget("C1", "1.0", "T1", "U1")
    >>> TurnRequest(ctx, "hi", target, AsyncWebClient(), "slack:T1:C1:1.0").text
    'hi'
    """

    context: RequestContext
    text: str
    target: ReplyTarget
    client: AsyncWebClient
    conversation_id: str
    history_before_ts: str | None = None
    bot_user_id: str | None = None


def notice(text: str) -> UiComponent:
    """A plain warning message (interrupted, unavailable) as the channel renders it."""
    return UiComponent(rich_component=NotificationComponent(message=text, level="warning"))


def reply_target(queued: QueuedTurn, thread_ts: str | None) -> ReplyTarget:
    """Where ``queued`` is answered; privately when it is private or has no thread yet
    (a slash command whose thread was never opened).

    >>> queued = QueuedTurn(context={"workspace_id": "T1", "channel_id": "C1",
    ...                              "thread_id": "", "user_id": "U1"}, text="hi")
    >>> reply_target(queued, None).private, reply_target(queued, "5.0").private
    (True, False)
    """
    meta = queued.context
    thread = thread_ts or str(meta.get("thread_id") or "")
    return ReplyTarget(
        channel=str(meta["channel_id"]),
        thread_ts=thread or PRIVATE_THREAD,
        team_id=queued.team,
        user_id=queued.user,
        is_dm=bool(meta.get("is_dm")),
        private=queued.private or not thread,
        response_url=queued.response_url,
    )


async def tell(client: AsyncWebClient, target: ReplyTarget, text: str) -> None:
    """Post ``text`` as a warning where ``target`` says (failures are logged only)."""
    try:
        reply = ReplyStream(client, target, flush_interval=0)
        await reply.handle(notice(text))
        await reply.close()
    except SlackClientError as error:
        log.warning("slack: could not tell %s (%s)", target.user_id, error)
