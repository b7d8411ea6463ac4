"""``ServedAgent``: what the bots need of the agent they serve, in every channel.

``agent_core.agent.Agent`` is one, and so is ``bots.profiles.ProfileRouter`` (a different
agent per channel)::

    async for component in agent.send_message(context, text, conversation_id=key): ...
    await agent.record_feedback(context, feedback)
    await agent.may_see(context, "tool_arguments")   # a click asking for admin-only detail
    answer = await agent.decide_approval(context, approval_id, approve=True,
                                         conversation_id=key)    # a click on Approve
    async for component in agent.send_message(context, Resume(approval_id)): ...  # then,
                                                           # on any process (resumed)
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Protocol

from agent_core.components import UiComponent
from agent_core.feedback import Feedback
from agent_core.llm.base import LlmService
from agent_core.users import RequestContext, UserResolver

if TYPE_CHECKING:
    from agent_core.agent import Agent
    from agent_core.approvals.book import ApprovalBook
    from agent_core.state.turn_writes import TurnWrites
    from agent_core.turn.deciding import ApprovalAnswer
    from agent_core.turn.resuming import Resume


class ServedAgent(Protocol):
    """See the module docstring."""

    @property
    def user_resolver(self) -> UserResolver: ...

    @property
    def llm_service(self) -> LlmService: ...

    @property
    def approval_book(self) -> ApprovalBook: ...

    def send_message(
        self,
        request_context: RequestContext,
        message: str | Resume,
        *,
        conversation_id: str | None = None,
        writes: TurnWrites | None = None,
    ) -> AsyncIterator[UiComponent]: ...

    async def record_feedback(
        self, request_context: RequestContext, feedback: Feedback
    ) -> None: ...

    async def may_see(self, request_context: RequestContext, feature: str) -> bool: ...

    async def decide_approval(
        self,
        request_context: RequestContext,
        approval_id: str,
        *,
        approve: bool,
        conversation_id: str | None,
    ) -> ApprovalAnswer: ...

    async def cancel_approval(
        self, request_context: RequestContext, approval_id: str, *, conversation_id: str
    ) -> ApprovalAnswer: ...

    async def expire_approvals(self, platform: str | None = None) -> list[ApprovalAnswer]: ...

    def served_agents(self) -> list[Agent]: ...
