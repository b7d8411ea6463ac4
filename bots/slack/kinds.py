"""The kinds of a Slack turn (``bots.turn_kinds``) and what a Slack listener records in
them: ``SlackAsked``, a question's delivery read from the signed request, which is also
where a resumed approval answers (with no text), and the Workflow Builder step's
``StepTurn`` (``bots.slack.workflow``).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field

from adapters.files import SharedFile
from adapters.slack.context import ReplyTarget, asker_id, reply_target, turn_key
from agent_core.channel import ChannelMetadata
from agent_core.users import RequestContext
from bots.slack.workflow import StepTurn
from bots.turn_kinds import Occurrence, Question, RemovedNotice, ResumedApproval, StepRun


class SlackAsked(BaseModel):
    """What a listener records before the ack, as a question (``question()``) or the
    place a resumed approval answers in: enough to answer on any process.

    ``context`` is the ``RequestContext`` metadata built from the *signed* request;
    ``open_thread`` marks a public slash command, whose worker first posts
    "<@user> asked: ..." and answers in that message's thread.

    >>> turn = SlackAsked(context={"workspace_id": "T1", "channel_id": "C1",
    ...                            "thread_id": "1.0", "user_id": "U1"}, text="hi")
    >>> turn.owner, turn.turn_key
    ('T1:U1', 'slack:T1:C1:1.0')
    """

    context: ChannelMetadata
    text: str
    private: bool = False
    response_url: str | None = None
    open_thread: bool = False
    history_before_ts: str | None = None
    """Set on a first mention inside a human thread: read the thread up to this message."""
    message_ts: str | None = None
    """The message's ``ts`` when it replies in a channel thread: the turn is given what the
    thread said before it that its conversation lacks."""
    bot_user_id: str | None = None
    enterprise_install: bool = False
    files: list[SharedFile] = []
    """The files shared with the message (read from the signed event; downloaded by the
    worker)."""

    @property
    def team(self) -> str:
        return str(self.context["workspace_id"])

    @property
    def owner(self) -> str:
        """Who may stop the turn (``request_stop(by=...)``)."""
        return asker_id(self.context)

    @property
    def turn_key(self) -> str:
        """The queue's ordering key (see ``adapters.slack.context.turn_key``)."""
        return turn_key(self.context, private=self.private, opens_thread=self.open_thread)

    def target(self, *, thread_ts: str | None = None, turn_id: str | None = None) -> ReplyTarget:
        """Where the answer goes (privately while a slash command has no thread yet)."""
        return reply_target(
            RequestContext(metadata=dict(self.context)),
            thread_ts=thread_ts,
            private=self.private,
            response_url=self.response_url,
            turn_id=turn_id,
        )

    def request_context(self, target: ReplyTarget, turn_id: str) -> RequestContext:
        """The context the agent answers in: the signed one, in the thread answered in."""
        metadata: ChannelMetadata = {
            **self.context,
            "thread_id": target.thread_ts,
            "turn_id": turn_id,
        }
        if self.enterprise_install:
            metadata["slack_enterprise_install"] = True
        return RequestContext(metadata=metadata)

    def question(self, **changes: Any) -> Question[SlackAsked]:
        """The turn kind the queue records (with ``changes`` applied)."""
        return Question(asked=self.model_copy(update=changes) if changes else self)


SlackKind = Annotated[
    Question[SlackAsked]
    | ResumedApproval[SlackAsked]
    | StepRun[StepTurn]
    | Occurrence
    | RemovedNotice,
    Field(discriminator="kind"),
]
"""The kinds of a Slack turn (``bots.turn_kinds``): a resumed approval answers in the
place its question was asked (a ``SlackAsked`` with no text)."""
