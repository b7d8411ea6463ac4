"""LLM context enhancers: add memory / RAG context to the prompt."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from agent_core.context import ToolContext

if TYPE_CHECKING:
    from agent_core.llm.base import LlmMessage
    from agent_core.memory.base import AgentMemory
    from agent_core.users import User

logger = logging.getLogger(__name__)


class LlmContextEnhancer:
    """``enhance_system_prompt`` runs once per turn; ``enhance_user_messages`` before every
    LLM call (so it must not add the same context twice).

    The agent calls ``enhance_system_prompt_for`` with the turn's ``ToolContext`` (who asks,
    where, with which UI features); by default it hands on to ``enhance_system_prompt``.
    Override it when what you add depends on where the question was asked.
    """

    async def enhance_system_prompt(self, system_prompt: str, user_message: str, user: User) -> str:
        return system_prompt

    async def enhance_system_prompt_for(
        self, context: ToolContext, system_prompt: str, user_message: str
    ) -> str:
        return await self.enhance_system_prompt(system_prompt, user_message, context.user)

    async def enhance_user_messages(
        self, messages: list[LlmMessage], user: User
    ) -> list[LlmMessage]:
        return messages


class DefaultLlmContextEnhancer(LlmContextEnhancer):
    """Appends the text memories most relevant to the message under
    ``## Relevant Context from Memory``; a failing memory never fails the turn.

    Only memories the asker may be offered there are added (``agent_core.memory.access``):
    their own, and those shared with the workspace. Called without the turn's context
    (``enhance_system_prompt``), it offers as if the asker were in a shared conversation
    with no UI features. With no ``agent_memory`` of its own it searches the turn's
    (``context.agent_memory``), so it follows whatever memory the agent is given.
    """

    def __init__(self, agent_memory: AgentMemory | None = None, *, limit: int = 5) -> None:
        self.agent_memory = agent_memory
        self.limit = limit

    async def enhance_system_prompt(self, system_prompt: str, user_message: str, user: User) -> str:
        context = ToolContext(user=user, conversation_id="", request_id="")
        return await self.enhance_system_prompt_for(context, system_prompt, user_message)

    async def enhance_system_prompt_for(
        self, context: ToolContext, system_prompt: str, user_message: str
    ) -> str:
        memory = self.agent_memory or context.agent_memory
        if memory is None or not user_message.strip():
            return system_prompt
        try:
            found = await memory.search_text_memories(
                query=user_message, context=context, limit=self.limit
            )
        except Exception:
            logger.warning("memory search failed; prompt left unchanged", exc_info=True)
            return system_prompt
        if not found:
            return system_prompt
        bullets = "\n".join(f"- {hit.memory.content}" for hit in found)
        return f"{system_prompt}\n\n## Relevant Context from Memory\n\n{bullets}"
