"""``ToolContext``: what the turn hands every tool, hook, enricher and recovery strategy.

It sits just above ``users``, memory's contract and the observability contract, and below
everything that receives it, so none of those need the tools package to name it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agent_core.memory.base import AgentMemory
from agent_core.observability import ObservabilityProvider
from agent_core.users import User


class ToolContext(BaseModel):
    """Everything a tool may know about the call: who, which conversation, which request.

    ``metadata`` starts with ``ui_features_available`` and the channel's request metadata;
    ``ToolContextEnricher``s add more. It is also the ``MemoryContext`` the agent's memory
    is read and written with.

    >>> context = ToolContext(user=User(id="ana"), conversation_id="c1", request_id="r1")
    >>> context.user.id, context.agent_memory is None
    ('ana', True)
    """

    model_config = ConfigDict(defer_build=True, arbitrary_types_allowed=True)

    user: User
    conversation_id: str
    request_id: str
    agent_memory: AgentMemory | None = None
    observability_provider: ObservabilityProvider | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    question: str = ""
    """The user's message for this turn, so tools can save question -> arguments pairs."""

    @property
    def memory(self) -> AgentMemory:
        if self.agent_memory is None:
            raise RuntimeError("this ToolContext has no agent_memory")
        return self.agent_memory

    @property
    def observability(self) -> ObservabilityProvider | None:
        return self.observability_provider
