"""A recording harness: one of every extension point, each appending to one shared log.

``Recorder.calls`` is the exact order in which the agent invoked them, e.g.
``["resolve_user", "before_message", "load", ...]``.
"""

from __future__ import annotations

from typing import Any

from agent_core import (
    ConversationFilter,
    ErrorRecoveryStrategy,
    LifecycleHook,
    LlmContextEnhancer,
    LlmMiddleware,
    MemoryConversationStore,
    ObservabilityProvider,
    RecoveryAction,
    RecoveryActionType,
    Span,
    ToolContextEnricher,
    User,
    UserResolver,
    WorkflowHandler,
    WorkflowResult,
)
from agent_core.conversations import Conversation
from agent_core.prompts import DefaultSystemPromptBuilder


class Recorder:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, name: str) -> None:
        self.calls.append(name)


class RecordingResolver(UserResolver):
    def __init__(self, log: Recorder, user: User) -> None:
        self.log, self.user = log, user

    async def resolve_user(self, request_context: Any) -> User:
        self.log("resolve_user")
        return self.user


class RecordingStore(MemoryConversationStore):
    def __init__(self, log: Recorder) -> None:
        super().__init__()
        self.log = log

    async def get_conversation(self, conversation_id: str, user: User) -> Conversation | None:
        self.log("load")
        return await super().get_conversation(conversation_id, user)

    async def update_conversation(self, conversation: Conversation) -> None:
        self.log("save")
        await super().update_conversation(conversation)


class RecordingWorkflow(WorkflowHandler):
    def __init__(self, log: Recorder, handles: str | None = None) -> None:
        self.log, self.handles = log, handles

    async def try_handle(self, agent: Any, user: User, conversation: Any, message: str) -> Any:
        self.log("try_handle")
        return WorkflowResult(should_skip_llm=message == self.handles)

    async def get_starter_ui(self, agent: Any, user: User, conversation: Any) -> Any:
        self.log("starter_ui")
        return []


class RecordingHook(LifecycleHook):
    def __init__(self, log: Recorder, name: str = "hook") -> None:
        self.log, self.name = log, name

    async def before_message(self, user: User, message: str) -> str | None:
        self.log(f"{self.name}.before_message")
        return None

    async def after_message(self, result: Any) -> None:
        self.log(f"{self.name}.after_message")

    async def before_tool(self, tool: Any, context: Any) -> None:
        self.log(f"{self.name}.before_tool:{tool.name}")

    async def after_tool(self, result: Any, before: object) -> Any:
        self.log(f"{self.name}.after_tool")
        return None


class RecordingMiddleware(LlmMiddleware):
    def __init__(self, log: Recorder) -> None:
        self.log = log

    async def before_llm_request(self, request: Any) -> Any:
        self.log("before_llm")
        return request

    async def after_llm_response(self, request: Any, response: Any) -> Any:
        self.log("after_llm")
        return response


class RecordingEnhancer(LlmContextEnhancer):
    def __init__(self, log: Recorder) -> None:
        self.log = log

    async def enhance_system_prompt(self, system_prompt: str, user_message: str, user: User) -> str:
        self.log("enhance_system_prompt")
        return system_prompt

    async def enhance_user_messages(self, messages: list[Any], user: User) -> list[Any]:
        self.log("enhance_user_messages")
        return messages


class RecordingEnricher(ToolContextEnricher):
    def __init__(self, log: Recorder) -> None:
        self.log = log

    async def enrich_context(self, context: Any) -> Any:
        self.log("enrich")
        context.metadata["enriched"] = True
        return context


class RecordingFilter(ConversationFilter):
    def __init__(self, log: Recorder) -> None:
        self.log = log

    async def filter_messages(self, messages: list[Any]) -> list[Any]:
        self.log("filter")
        return messages


class RecordingPromptBuilder(DefaultSystemPromptBuilder):
    def __init__(self, log: Recorder) -> None:
        super().__init__()
        self.log = log

    async def build_system_prompt(self, user: User, tools: list[Any]) -> str | None:
        self.log("system_prompt")
        return await super().build_system_prompt(user, tools)


class ScriptedRecovery(ErrorRecoveryStrategy):
    """Plays back a list of actions for LLM errors and another for tool errors."""

    def __init__(
        self,
        llm: list[RecoveryAction] | None = None,
        tool: list[RecoveryAction] | None = None,
    ) -> None:
        self.llm, self.tool = list(llm or []), list(tool or [])
        self.llm_attempts: list[int] = []
        self.tool_attempts: list[int] = []

    async def handle_llm_error(self, error: Exception, request: Any, attempt: int = 1) -> Any:
        self.llm_attempts.append(attempt)
        return self.llm.pop(0) if self.llm else RecoveryAction(action=RecoveryActionType.FAIL)

    async def handle_tool_error(self, error: Exception, context: Any, attempt: int = 1) -> Any:
        self.tool_attempts.append(attempt)
        return self.tool.pop(0) if self.tool else RecoveryAction(action=RecoveryActionType.FAIL)


class RecordingObservability(ObservabilityProvider):
    """Keeps every span and metric; ``open_spans`` must be empty after any turn."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.metrics: list[tuple[str, float, str, dict[str, str]]] = []
        self.open_spans: set[str] = set()

    async def create_span(self, name: str, attributes: dict[str, Any] | None = None) -> Span:
        span = Span(name=name, attributes=dict(attributes or {}))
        self.open_spans.add(span.id)
        return span

    async def end_span(self, span: Span) -> None:
        span.end()
        self.open_spans.discard(span.id)
        self.spans.append(span)

    async def record_metric(
        self, name: str, value: float, unit: str = "", tags: dict[str, str] | None = None
    ) -> None:
        self.metrics.append((name, value, unit, dict(tags or {})))

    def span_names(self) -> list[str]:
        return [s.name for s in self.spans]

    def named(self, name: str) -> list[Span]:
        return [s for s in self.spans if s.name == name]
