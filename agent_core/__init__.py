"""Threadline's channel-free agent framework.

Everything a user of the framework needs is importable from here. Names load on first use
(module ``__getattr__``): ``import agent_core`` costs almost nothing, ``from agent_core import
Agent`` loads the agent and what it runs on, and the component catalogue, audit, query
logging, observability and the LLM services load only when asked for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, tuple[str, ...]] = {
    "agent_core.agent": ("Agent",),
    "agent_core.audit": (
        "AuditEvent",
        "AuditEventType",
        "AuditLogger",
        "InMemoryAuditLogger",
    ),
    "agent_core.components": (
        "ArtifactComponent",
        "Audience",
        "BadgeComponent",
        "ButtonComponent",
        "ButtonGroupComponent",
        "ButtonSpec",
        "CardComponent",
        "ChartComponent",
        "ChartSeries",
        "ChartType",
        "ChatInputUpdateComponent",
        "ComponentLifecycle",
        "ComponentStream",
        "ComponentType",
        "DataFrameComponent",
        "IconTextComponent",
        "LogEntry",
        "LogViewerComponent",
        "new_component_id",
        "NotificationComponent",
        "ProgressBarComponent",
        "ProgressDisplayComponent",
        "RichComponent",
        "RichTextComponent",
        "SimpleComponent",
        "SimpleComponentType",
        "SimpleImageComponent",
        "SimpleLinkComponent",
        "SimpleTextComponent",
        "StatusBarUpdateComponent",
        "StatusCardComponent",
        "StatusIndicatorComponent",
        "Task",
        "TaskListComponent",
        "TaskOperation",
        "TaskTrackerUpdateComponent",
        "UiComponent",
    ),
    "agent_core.config": (
        "AgentConfig",
        "AuditConfig",
        "UiFeature",
        "UiFeatures",
    ),
    "agent_core.context": ("ToolContext",),
    "agent_core.conversations": (
        "Conversation",
        "ConversationStore",
        "MemoryConversationStore",
        "Message",
    ),
    "agent_core.errors": (
        "AgentError",
        "LlmError",
        "PermissionDeniedError",
        "StateUnavailableError",
        "ThreadlineError",
    ),
    "agent_core.extensions.enhancer": (
        "DefaultLlmContextEnhancer",
        "LlmContextEnhancer",
    ),
    "agent_core.extensions.enricher": ("ToolContextEnricher",),
    "agent_core.extensions.filters": (
        "ConversationFilter",
        "RecentMessagesFilter",
        "TokenBudgetFilter",
    ),
    "agent_core.extensions.hooks": ("LifecycleHook",),
    "agent_core.extensions.middleware": ("LlmMiddleware",),
    "agent_core.observability": (
        "LoggingObservabilityProvider",
        "Metric",
        "ObservabilityProvider",
        "Span",
    ),
    "agent_core.extensions.otel": ("OpenTelemetryObservabilityProvider",),
    "agent_core.extensions.query_logging": (
        "analyze_query_log",
        "export_successful_queries",
        "QueryLoggingHook",
    ),
    "agent_core.extensions.recovery": (
        "BackoffRecoveryStrategy",
        "ErrorRecoveryStrategy",
        "RecoveryAction",
        "RecoveryActionType",
    ),
    "agent_core.feedback": ("Feedback",),
    "agent_core.llm": (
        "LlmMessage",
        "LlmRequest",
        "LlmResponse",
        "LlmService",
        "LlmStreamChunk",
        "ScriptedLlmService",
        "ScriptedResponse",
    ),
    "agent_core.memory.base": (
        "AgentMemory",
        "TextMemory",
        "ToolMemory",
    ),
    "agent_core.memory.in_memory": ("InMemoryAgentMemory",),
    "agent_core.prompts": (
        "DefaultSystemPromptBuilder",
        "SystemPromptBuilder",
    ),
    "agent_core.runtime": (
        "attach",
        "Runtime",
    ),
    "agent_core.tool_contract": (
        "ApprovalMode",
        "Tool",
        "ToolCall",
        "ToolRejection",
        "ToolResult",
        "ToolSchema",
    ),
    "agent_core.tools.registry": ("ToolRegistry",),
    "agent_core.users": (
        "RequestContext",
        "StaticUserResolver",
        "User",
        "UserResolver",
    ),
    "agent_core.workflow": (
        "DefaultWorkflowHandler",
        "WorkflowHandler",
        "WorkflowResult",
    ),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [
    "Agent",
    "AgentConfig",
    "AgentError",
    "AgentMemory",
    "ApprovalMode",
    "ArtifactComponent",
    "Audience",
    "AuditConfig",
    "AuditEvent",
    "AuditEventType",
    "AuditLogger",
    "BackoffRecoveryStrategy",
    "BadgeComponent",
    "ButtonComponent",
    "ButtonGroupComponent",
    "ButtonSpec",
    "CardComponent",
    "ChartComponent",
    "ChartSeries",
    "ChartType",
    "ChatInputUpdateComponent",
    "ComponentLifecycle",
    "ComponentStream",
    "ComponentType",
    "Conversation",
    "ConversationFilter",
    "ConversationStore",
    "DataFrameComponent",
    "DefaultLlmContextEnhancer",
    "DefaultSystemPromptBuilder",
    "DefaultWorkflowHandler",
    "ErrorRecoveryStrategy",
    "Feedback",
    "IconTextComponent",
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
    "LogEntry",
    "LogViewerComponent",
    "LoggingObservabilityProvider",
    "MemoryConversationStore",
    "Message",
    "Metric",
    "NotificationComponent",
    "ObservabilityProvider",
    "OpenTelemetryObservabilityProvider",
    "PermissionDeniedError",
    "ProgressBarComponent",
    "ProgressDisplayComponent",
    "QueryLoggingHook",
    "RecentMessagesFilter",
    "RecoveryAction",
    "RecoveryActionType",
    "RequestContext",
    "RichComponent",
    "RichTextComponent",
    "Runtime",
    "ScriptedLlmService",
    "ScriptedResponse",
    "SimpleComponent",
    "SimpleComponentType",
    "SimpleImageComponent",
    "SimpleLinkComponent",
    "SimpleTextComponent",
    "Span",
    "StateUnavailableError",
    "StaticUserResolver",
    "StatusBarUpdateComponent",
    "StatusCardComponent",
    "StatusIndicatorComponent",
    "SystemPromptBuilder",
    "Task",
    "TaskListComponent",
    "TaskOperation",
    "TaskTrackerUpdateComponent",
    "TextMemory",
    "ThreadlineError",
    "TokenBudgetFilter",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolContextEnricher",
    "ToolMemory",
    "ToolRegistry",
    "ToolRejection",
    "ToolResult",
    "ToolSchema",
    "UiComponent",
    "UiFeature",
    "UiFeatures",
    "User",
    "UserResolver",
    "WorkflowHandler",
    "WorkflowResult",
    "analyze_query_log",
    "attach",
    "export_successful_queries",
    "new_component_id",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'agent_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # loaded once: the next lookup is a plain global
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # what type checkers and IDEs see: every name, imported as usual
    from agent_core.agent import (
        Agent,
    )
    from agent_core.audit import (
        AuditEvent,
        AuditEventType,
        AuditLogger,
        InMemoryAuditLogger,
    )
    from agent_core.components import (
        ArtifactComponent,
        Audience,
        BadgeComponent,
        ButtonComponent,
        ButtonGroupComponent,
        ButtonSpec,
        CardComponent,
        ChartComponent,
        ChartSeries,
        ChartType,
        ChatInputUpdateComponent,
        ComponentLifecycle,
        ComponentStream,
        ComponentType,
        DataFrameComponent,
        IconTextComponent,
        LogEntry,
        LogViewerComponent,
        NotificationComponent,
        ProgressBarComponent,
        ProgressDisplayComponent,
        RichComponent,
        RichTextComponent,
        SimpleComponent,
        SimpleComponentType,
        SimpleImageComponent,
        SimpleLinkComponent,
        SimpleTextComponent,
        StatusBarUpdateComponent,
        StatusCardComponent,
        StatusIndicatorComponent,
        Task,
        TaskListComponent,
        TaskOperation,
        TaskTrackerUpdateComponent,
        UiComponent,
        new_component_id,
    )
    from agent_core.config import (
        AgentConfig,
        AuditConfig,
        UiFeature,
        UiFeatures,
    )
    from agent_core.context import (
        ToolContext,
    )
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
    from agent_core.extensions.enhancer import (
        DefaultLlmContextEnhancer,
        LlmContextEnhancer,
    )
    from agent_core.extensions.enricher import (
        ToolContextEnricher,
    )
    from agent_core.extensions.filters import (
        ConversationFilter,
        RecentMessagesFilter,
        TokenBudgetFilter,
    )
    from agent_core.extensions.hooks import (
        LifecycleHook,
    )
    from agent_core.extensions.middleware import (
        LlmMiddleware,
    )
    from agent_core.extensions.otel import (
        OpenTelemetryObservabilityProvider,
    )
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
    from agent_core.feedback import (
        Feedback,
    )
    from agent_core.llm import (
        LlmMessage,
        LlmRequest,
        LlmResponse,
        LlmService,
        LlmStreamChunk,
        ScriptedLlmService,
        ScriptedResponse,
    )
    from agent_core.memory.base import (
        AgentMemory,
        TextMemory,
        ToolMemory,
    )
    from agent_core.memory.in_memory import (
        InMemoryAgentMemory,
    )
    from agent_core.observability import (
        LoggingObservabilityProvider,
        Metric,
        ObservabilityProvider,
        Span,
    )
    from agent_core.prompts import (
        DefaultSystemPromptBuilder,
        SystemPromptBuilder,
    )
    from agent_core.runtime import (
        Runtime,
        attach,
    )
    from agent_core.tool_contract import (
        ApprovalMode,
        Tool,
        ToolCall,
        ToolRejection,
        ToolResult,
        ToolSchema,
    )
    from agent_core.tools.registry import (
        ToolRegistry,
    )
    from agent_core.users import (
        RequestContext,
        StaticUserResolver,
        User,
        UserResolver,
    )
    from agent_core.workflow import (
        DefaultWorkflowHandler,
        WorkflowHandler,
        WorkflowResult,
    )
