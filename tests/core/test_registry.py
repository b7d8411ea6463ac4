"""ToolRegistry: registration, schemas, validation, transform_args, audit, timing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel, Field

from agent_core import (
    Agent,
    AgentConfig,
    AuditConfig,
    InMemoryAuditLogger,
    ScriptedLlmService,
    ScriptedResponse,
    Tool,
    ToolCall,
    ToolContext,
    ToolRegistry,
    ToolRejection,
    ToolResult,
    User,
)
from agent_core.audit import AuditEventType
from tests.support.tools import EchoTool

from .conftest import ADMIN, USER, collect

CONTEXT = ToolContext(user=USER, conversation_id="c", request_id="r")


class ConnectArgs(BaseModel):
    host: str
    password: str
    port: int = Field(ge=1, le=65535)


class Connect(Tool[ConnectArgs]):
    name = "connect"
    description = "Connect to a database"

    def __init__(self) -> None:
        self.schema_builds = 0

    def get_args_schema(self) -> type[ConnectArgs]:
        self.schema_builds += 1
        return ConnectArgs

    async def execute(self, context: ToolContext, args: ConnectArgs) -> ToolResult:
        return ToolResult(success=True, result_for_llm=f"connected to {args.host}")


def test_duplicate_names_are_refused() -> None:
    registry = ToolRegistry()
    registry.register_local_tool(EchoTool(), [])
    with pytest.raises(ValueError, match="already registered"):
        registry.register_local_tool(EchoTool(), ["admin"])


async def test_schema_is_computed_once_per_tool(make_agent: Callable[..., Agent]) -> None:
    tool = Connect()
    agent = make_agent(ScriptedLlmService(["a", "b", "c"]), tools=[(tool, [])])
    for _ in range(3):
        await collect(agent, "hi")
    assert tool.schema_builds == 1
    schema = (await agent.tool_registry.get_schemas(USER))[0]
    assert schema.parameters["required"] == ["host", "password", "port"]
    assert "title" not in schema.parameters


async def test_validation_errors_are_explained() -> None:
    registry = ToolRegistry()
    registry.register_local_tool(Connect(), [])
    call = ToolCall(id="1", name="connect", arguments={"host": "db", "port": 0})
    result = await registry.execute(call, CONTEXT)
    assert not result.success and result.metadata["error_type"] == "invalid_arguments"
    assert "password: Field required" in result.result_for_llm
    assert "port: Input should be greater than or equal to 1" in result.result_for_llm


async def test_unknown_tool() -> None:
    result = await ToolRegistry().execute(ToolCall(id="1", name="nope"), CONTEXT)
    assert not result.success and "Tool 'nope' not found" in result.result_for_llm


async def test_transform_args_can_rewrite_or_reject() -> None:
    class TenantRegistry(ToolRegistry):
        async def transform_args(self, tool: Any, args: Any, user: User, context: Any) -> Any:
            if args.host == "prod":
                return ToolRejection(reason="production is off limits")
            return args.model_copy(update={"host": f"{user.id}.{args.host}"})

    registry = TenantRegistry()
    registry.register_local_tool(Connect(), [])
    ok = await registry.execute(
        ToolCall(id="1", name="connect", arguments={"host": "db", "password": "p", "port": 5}),
        CONTEXT,
    )
    assert ok.result_for_llm == "connected to u-user.db"
    assert "execution_time_ms" in ok.metadata
    refused = await registry.execute(
        ToolCall(id="2", name="connect", arguments={"host": "prod", "password": "p", "port": 5}),
        CONTEXT,
    )
    assert "production is off limits" in refused.result_for_llm


async def test_audit_events_with_redacted_parameters(make_agent: Callable[..., Agent]) -> None:
    audit = InMemoryAuditLogger()
    llm = ScriptedLlmService(
        [
            ScriptedResponse.tool("connect", {"host": "db", "password": "hunter2", "port": 5432}),
            "connected",
        ]
    )
    agent = make_agent(llm, tools=[(Connect(), [])], user=ADMIN, audit_logger=audit)
    await collect(agent, "connect me")
    kinds = [e.event_type for e in audit.events]
    assert kinds == [
        AuditEventType.QUESTION,
        AuditEventType.TOOL_ACCESS_CHECK,
        AuditEventType.TOOL_INVOCATION,
        AuditEventType.TOOL_RESULT,
        AuditEventType.AI_RESPONSE_GENERATED,
    ]
    invocation = audit.events[2]
    assert invocation.details["parameters"]["password"] == "[REDACTED]"
    assert invocation.redacted_fields == ["password"]
    assert "hunter2" not in "".join(e.model_dump_json() for e in audit.events)
    assert audit.events[4].details.get("response_text") is None  # full text is opt-in


async def test_audit_disabled_records_nothing(make_agent: Callable[..., Agent]) -> None:
    audit = InMemoryAuditLogger()
    llm = ScriptedLlmService([ScriptedResponse.tool("echo", {"text": "x"}), "ok"])
    agent = make_agent(
        llm,
        tools=[(EchoTool(), [])],
        audit_logger=audit,
        config=AgentConfig(audit_config=AuditConfig(enabled=False)),
    )
    await collect(agent, "hi")
    assert audit.events == []
