"""``Runtime``: what the channel serving an agent provides it.

A command that serves your agent (``threadline slack --app mybot:build``) hands its factory
one ``Runtime``: the state-backed conversation store and agent memory (SQLite or Redis, as
configured), the workspace's user resolver (Slack user groups, Teams identity, with the
channel's admin rules), the configured LLM service and observability provider::

    def build(runtime: Runtime) -> Agent:
        return Agent(llm_service=runtime.llm_service or ScriptedLlmService(["No key."]),
                     tool_registry=my_tools())

An ``Agent`` that leaves out its resolver, memory or conversation store gets the runtime's
(``attach``); one that brings its own keeps it.

>>> from agent_core import InMemoryAgentMemory, MemoryConversationStore, StaticUserResolver, User
>>> runtime = Runtime(channel="console", conversation_store=MemoryConversationStore(),
...                   agent_memory=InMemoryAgentMemory(),
...                   user_resolver=StaticUserResolver(User(id="u")))
>>> runtime.llm_service is None
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from agent_core.approvals.book import ApprovalBook
from agent_core.approvals.policy import ApprovalPolicy
from agent_core.conversations import ConversationStore
from agent_core.llm.base import LlmService
from agent_core.memory.base import AgentMemory
from agent_core.observability import ObservabilityProvider
from agent_core.users import UserResolver

if TYPE_CHECKING:
    from agent_core.agent import Agent

Channel = Literal["slack", "teams", "console", "chat"]
PARTS = ("conversation_store", "agent_memory", "user_resolver", "approval_book")


@dataclass(frozen=True, kw_only=True)
class Runtime:
    """What a channel provides the agent it serves; see the module docstring."""

    channel: Channel
    conversation_store: ConversationStore
    agent_memory: AgentMemory
    user_resolver: UserResolver
    llm_service: LlmService | None = None
    """The configured model (Claude when ``ANTHROPIC_API_KEY`` is set); ``None`` without one."""
    observability_provider: ObservabilityProvider | None = None
    profile: str | None = None
    """The profile this agent serves (``[[profiles]]`` in ``threadline.toml``), if any."""
    approval_book: ApprovalBook | None = None
    """Where approvals wait (the state store: any process decides and resumes them);
    ``None``: the agent keeps its own."""
    approvals: ApprovalPolicy | None = None
    """The configuration's approval policy (``[approvals]``, ``[tools.<name>]``), laid over
    the agent's own (``ApprovalPolicy.configured``)."""


def attach(agent: Agent, runtime: Runtime) -> list[str]:
    """Give ``agent`` the runtime's parts it left out; returns the parts it kept its own.

    >>> from agent_core import (Agent, InMemoryAgentMemory, MemoryConversationStore,
    ...                         ScriptedLlmService, StaticUserResolver, ToolRegistry, User)
    >>> runtime = Runtime(channel="slack", conversation_store=MemoryConversationStore(),
    ...                   agent_memory=InMemoryAgentMemory(),
    ...                   user_resolver=StaticUserResolver(User(id="slack:T1:U1")))
    >>> agent = Agent(llm_service=ScriptedLlmService(), tool_registry=ToolRegistry(),
    ...               agent_memory=InMemoryAgentMemory())
    >>> attach(agent, runtime), agent.user_resolver is runtime.user_resolver
    (['agent_memory'], True)
    """
    kept = []
    for part in PARTS:
        given = getattr(runtime, part)
        if part in agent.left_to_channel and given is not None:
            setattr(agent, part, given)
        elif part not in agent.left_to_channel:
            kept.append(part)
    if agent.observability_provider is None and runtime.observability_provider is not None:
        agent.observability_provider = runtime.observability_provider
    if runtime.approvals is not None:
        policy = agent.config.approvals.configured(runtime.approvals)
        agent.config = agent.config.model_copy(update={"approvals": policy})
    return kept
