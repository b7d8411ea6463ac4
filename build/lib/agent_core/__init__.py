"""Threadline's channel-free agent framework.

Everything a user of the framework needs is importable from here; heavy optional pieces
(the Anthropic service, LangGraph, Redis state) live in submodules imported on use.
"""

from agent_core.agent import Agent
from agent_core.audit import AuditEvent, AuditEventType, AuditLogger, InMemoryAuditLogger
from agent_core.components import *  # noqa: F403 - the component catalogue is public API
from agent_core.components import __all__ as _components
from agent_core.config import AgentConfig, AuditConfig, UiFeature, UiFeatures
from agent_core.context import ToolContext
from agent_core.conversations import (
    Conversation,
    ConversationStore,
    MemoryConversationStore,
    Message,
)
from agent_core.errors import (
    AgentError,
    LlmError,
    PermissionDeniedError,
    StateUnavailableError,
    ThreadlineError,
)
from agent_core.extensions.enhancer import DefaultLlmContextEnhancer, LlmContextEnhancer
from agent_core.extensions.enricher import ToolContextEnricher
from agent_core.extensions.filters import ConversationFilter, RecentMessagesFilter
from agent_core.extensions.hooks import LifecycleHook
from agent_core.extensions.middleware import LlmMiddleware
from agent_core.extensions.observability import (
    LoggingObservabilityProvider,
    Metric,
    ObservabilityProvider,
    Span,
)
from agent_core.extensions.otel import OpenTelemetryObservabilityProvider
from agent_core.extensions.query_logging import (
    QueryLoggingHook,
    analyze_query_log,
    export_successful_queries,
)
from agent_core.extensions.recovery import (
    BackoffRecoveryStrategy,
    ErrorRecoveryStrategy,
    RecoveryAction,
    RecoveryActionType,
)
from agent_core.feedback import Feedback
from agent_core.llm import (
    LlmMessage,
    LlmRequest,
    LlmResponse,
    LlmService,
    LlmStreamChunk,
    ScriptedLlmService,
    ScriptedResponse,
)
from agent_core.memory.base import AgentMemory, TextMemory, ToolMemory
from agent_core.memory.in_memory import InMemoryAgentMemory
from agent_core.prompts import DefaultSystemPromptBuilder, SystemPromptBuilder
from agent_core.runtime import Runtime, attach
from agent_core.tools.base import Tool, ToolCall, ToolRejection, ToolResult, ToolSchema
from agent_core.tools.registry import ToolRegistry
from agent_core.users import RequestContext, StaticUserResolver, User, UserResolver
from agent_core.workflow import DefaultWorkflowHandler, WorkflowHandler, WorkflowResult

__all__ = [
    "Agent",
    "AgentConfig",
    "AgentError",
    "AgentMemory",
    "AuditConfig",
    "AuditEvent",
    "AuditEventType",
    "AuditLogger",
    "BackoffRecoveryStrategy",
    "Conversation",
    "ConversationFilter",
    "ConversationStore",
    "DefaultLlmContextEnhancer",
    "DefaultSystemPromptBuilder",
    "DefaultWorkflowHandler",
    "ErrorRecoveryStrategy",
    "Feedback",
    "InMemoryAgentMemory",
    "InMemoryAuditLogger",
    "LifecycleHook",
    "LlmContextEnhancer",
    "LlmError",
    "LlmMessage",
    "LlmMiddleware",
    "LlmRequest",
    "LlmResponse",
    "LlmService",
    "LlmStreamChunk",
    "LoggingObservabilityProvider",
    "MemoryConversationStore",
    "Message",
    "Metric",
    "ObservabilityProvider",
    "OpenTelemetryObservabilityProvider",
    "PermissionDeniedError",
    "QueryLoggingHook",
    "RecentMessagesFilter",
    "RecoveryAction",
    "RecoveryActionType",
    "RequestContext",
    "Runtime",
    "ScriptedLlmService",
    "ScriptedResponse",
    "Span",
    "StateUnavailableError",
    "StaticUserResolver",
    "SystemPromptBuilder",
    "TextMemory",
    "ThreadlineError",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolContextEnricher",
    "ToolMemory",
    "ToolRegistry",
    "ToolRejection",
    "ToolResult",
    "ToolSchema",
    "UiFeature",
    "UiFeatures",
    "User",
    "UserResolver",
    "WorkflowHandler",
    "WorkflowResult",
    "analyze_query_log",
    "attach",
    "export_successful_queries",
    *_components,
]
