"""LLM context enhancers: add memory / RAG context to the prompt."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_core.llm.base import LlmMessage
    from agent_core.memory.base import AgentMemory
    from agent_core.users import User

logger = logging.getLogger(__name__)


class LlmContextEnhancer:
    """``enhance_system_prompt`` runs once per turn; ``enhance_user_messages`` before every
    LLM call (so it must not add the same context twice)."""

    async def enhance_system_prompt(self, system_prompt: str, user_message: str, user: User) -> str:
        return system_prompt

    async def enhance_user_messages(
        self, messages: list[LlmMessage], user: User
    ) -> list[LlmMessage]:
        return messages


class DefaultLlmContextEnhancer(LlmContextEnhancer):
    """Appends the text memories most relevant to the message under
    ``## Relevant Context from Memory``; a failing memory never fails the turn."""

    def __init__(self, agent_memory: AgentMemory | None, *, limit: int = 5) -> None:
        self.agent_memory = agent_memory
        self.limit = limit

    async def enhance_system_prompt(self, system_prompt: str, user_message: str, user: User) -> str:
        if self.agent_memory is None or not user_message.strip():
            return system_prompt
        from agent_core.tools.base import ToolContext

        context = ToolContext(
            user=user, conversation_id="temp", request_id="temp", agent_memory=self.agent_memory
        )
        try:
            found = await self.agent_memory.search_text_memories(
                query=user_message, context=context, limit=self.limit
            )
        except Exception:
            logger.warning("memory search failed; prompt left unchanged", exc_info=True)
            return system_prompt
        if not found:
            return system_prompt
        bullets = "\n".join(f"- {hit.memory.content}" for hit in found)
        return f"{system_prompt}\n\n## Relevant Context from Memory\n\n{bullets}"
