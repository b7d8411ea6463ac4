"""Lifecycle hooks: before/after each message and each tool call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    from agent_core.context import ToolContext
    from agent_core.conversations import Conversation
    from agent_core.feedback import Feedback
    from agent_core.state.turn_writes import TurnWrites
    from agent_core.tool_contract import Tool, ToolResult
    from agent_core.users import User


class LifecycleHook:
    """Subclass and override what you need; hooks run in list order.

    - ``before_message``: return a new message to replace it; raise ``AgentError`` to refuse.
    - ``after_message``: observe the saved ``Conversation``.
    - ``before_tool``: runs only after the permission check passed; raise ``AgentError`` to
      block the call (the LLM is told why). What it returns is the hook's handle on this
      call: the agent hands it back to the same hook's ``after_tool`` for the same call
      (concurrent calls each get their own).
    - ``after_tool``: given the result and ``before_tool``'s handle; return a ``ToolResult``
      to replace the result.
    - ``on_feedback``: a user rated an answer (channels' thumbs up / down).
    - ``for_turn``: the hook as a queued turn uses it (a hook holding a state store gives
      the turn's view of it, ``agent_core.state.turn_writes``); itself by default.

    >>> class Shout(LifecycleHook):
    ...     async def before_message(self, user, message):
    ...         return message.upper()
    """

    def for_turn(self, writes: TurnWrites | None) -> Self:
        return self

    async def before_message(self, user: User, message: str) -> str | None:
        return None

    async def after_message(self, result: Conversation) -> None:
        return None

    async def before_tool(self, tool: Tool[Any], context: ToolContext) -> object:
        return None

    async def after_tool(self, result: ToolResult, before: object) -> ToolResult | None:
        return None

    async def on_feedback(self, user: User, feedback: Feedback) -> None:
        return None
