"""Prompt caching: every request marks the tools, the system prompt and the conversation so
far, so the second LLM call of a turn is served from the cache, as the fake Messages API
accounts it (the way the API does)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from agent_core import (
    Agent,
    InMemoryAgentMemory,
    LlmMiddleware,
    LlmRequest,
    LlmResponse,
    RequestContext,
    StaticUserResolver,
    Tool,
    ToolContext,
    ToolRegistry,
    ToolResult,
    User,
)
from agent_core.llm.anthropic import AnthropicLlmService
from agent_core.llm.testing import CacheUsage, FakeAnthropic, PromptCache, Reply, Text, ToolUse
from agent_core.prompts import DefaultSystemPromptBuilder

RULES = "Answer from the data; show the numbers first, then one sentence. " * 80  # ~1,300 tokens


class LookupArgs(BaseModel):
    customer_id: int


class Lookup(Tool[LookupArgs]):
    name = "lookup_customer"
    description = "Look a customer up by id"

    def get_args_schema(self) -> type[LookupArgs]:
        return LookupArgs

    async def execute(self, context: ToolContext, args: LookupArgs) -> ToolResult:
        return ToolResult(success=True, result_for_llm=f"customer {args.customer_id}: Ada")


class Usage(LlmMiddleware):
    """Keeps the usage the API reported for each call."""

    def __init__(self) -> None:
        self.calls: list[dict[str, int]] = []

    async def after_llm_response(self, request: LlmRequest, response: LlmResponse) -> LlmResponse:
        self.calls.append(dict(response.usage or {}))
        return response


def prompt_tokens(body: dict[str, Any]) -> int:
    """The whole prompt's size as the fake counts it (its last block is a breakpoint)."""
    return PromptCache(minimum_tokens=0).usage(body).creation


async def test_the_second_call_of_a_turn_reads_its_prompt_from_the_cache(
    fake: FakeAnthropic, service: AnthropicLlmService
) -> None:
    tools, usage = ToolRegistry(), Usage()
    tools.register_local_tool(Lookup(), access_groups=[])
    agent = Agent(
        llm_service=service,
        tool_registry=tools,
        llm_middlewares=[usage],
        system_prompt_builder=DefaultSystemPromptBuilder(RULES),
        user_resolver=StaticUserResolver(User(id="ana")),
        agent_memory=InMemoryAgentMemory(),
    )
    fake.queue(
        Reply([Text(["Let me look."]), ToolUse("lookup_customer", {"customer_id": 7})]),
        Reply.text("Customer 7 is Ada."),
    )
    [_ async for _ in agent.send_message(RequestContext(), "Who is customer 7?")]
    first, second = (r.body for r in fake.requests)
    assert first["tools"][-1]["cache_control"] == second["system"][0]["cache_control"]
    assert usage.calls[0]["cache_read_input_tokens"] == 0
    assert usage.calls[0]["cache_creation_input_tokens"] == prompt_tokens(first)
    read = usage.calls[1]["cache_read_input_tokens"]
    assert read == prompt_tokens(first) and read >= 0.8 * prompt_tokens(second)


def test_a_prompt_under_the_minimum_is_not_cached() -> None:
    """As the API does: a breakpoint on a prefix shorter than 1,024 tokens caches nothing."""
    cache, marked = PromptCache(), {"cache_control": {"type": "ephemeral"}}
    short = {"model": "m", "system": [{"type": "text", "text": "Be brief.", **marked}]}
    long = {"model": "m", "system": [{"type": "text", "text": RULES, **marked}]}
    assert [cache.usage(short), cache.usage(short)] == [CacheUsage(), CacheUsage()]
    assert [cache.usage(long).read, cache.usage(long).read] == [0, prompt_tokens(long)]
