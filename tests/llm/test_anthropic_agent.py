"""End to end: the real ``Agent`` with the real service (real SDK) against the fake API."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from agent_core import (
    Agent,
    BackoffRecoveryStrategy,
    InMemoryAgentMemory,
    RequestContext,
    StaticUserResolver,
    Tool,
    ToolContext,
    ToolRegistry,
    ToolResult,
    UiComponent,
    User,
)
from agent_core.llm.anthropic import AnthropicLlmService
from agent_core.llm.testing import FakeAnthropic, Reply, StatusError, Text, ToolUse


class LookupArgs(BaseModel):
    customer_id: int


class LookupCustomer(Tool[LookupArgs]):
    name = "lookup_customer"
    description = "Find a customer by id"

    def get_args_schema(self) -> type[LookupArgs]:
        return LookupArgs

    async def execute(self, context: ToolContext, args: LookupArgs) -> ToolResult:
        return ToolResult(success=True, result_for_llm=f"Customer {args.customer_id}: Ada")


def build_agent(service: AnthropicLlmService, **options: Any) -> Agent:
    registry = ToolRegistry()
    registry.register_local_tool(LookupCustomer(), access_groups=["user"])
    return Agent(
        llm_service=service,
        tool_registry=registry,
        user_resolver=StaticUserResolver(User(id="u1", group_memberships=["user"])),
        agent_memory=InMemoryAgentMemory(),
        **options,
    )


async def run(agent: Agent, text: str) -> list[UiComponent]:
    return [c async for c in agent.send_message(RequestContext(), text, conversation_id="c1")]


def final_text(components: list[UiComponent]) -> str:
    texts = [c.rich_component for c in components if c.rich_component.type == "text"]
    return str(getattr(texts[-1], "content", ""))


async def test_a_tool_round_trip_through_the_agent(
    fake: FakeAnthropic, service: AnthropicLlmService
) -> None:
    fake.queue(
        Reply([Text(["Let me look."]), ToolUse("lookup_customer", {"customer_id": 7}, id="tu_7")]),
        Reply.text("Customer 7 ", "is Ada."),
    )
    components = await run(build_agent(service), "Who is customer 7?")
    assert final_text(components) == "Customer 7 is Ada."
    first, second = (r.body for r in fake.requests)
    assert first["tools"][0]["name"] == "lookup_customer"
    assert first["tools"][0]["input_schema"]["type"] == "object"
    assert first["messages"] == [
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": "Who is customer 7?",
                    "cache_control": {"type": "ephemeral"},
                }
            ],
        }
    ]
    assert second["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me look."},
            {
                "type": "tool_use",
                "id": "tu_7",
                "name": "lookup_customer",
                "input": {"customer_id": 7},
            },
        ],
    }
    [result] = second["messages"][2]["content"]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "tu_7"
    assert "Ada" in result["content"]


async def test_the_agent_retries_a_rate_limit_with_backoff(
    fake: FakeAnthropic, service: AnthropicLlmService
) -> None:
    fake.queue(
        StatusError(429, "rate_limit_error", headers={"retry-after": "0.05"}),
        Reply.text("Hello ", "again."),
    )
    agent = build_agent(service, error_recovery_strategy=BackoffRecoveryStrategy())
    components = await run(agent, "Hi")
    assert final_text(components) == "Hello again."
    first, second = fake.requests
    assert second.received_at - first.received_at >= 0.049  # retry-after: 0.05
