"""``validate_tools``: what Anthropic would reject is reported before a request is sent."""

from __future__ import annotations

import doctest
from typing import Any

import pytest
from pydantic import BaseModel

import agent_core.llm.anthropic
import agent_core.llm.anthropic_convert
import agent_core.llm.anthropic_stream
from agent_core.context import ToolContext
from agent_core.llm.anthropic import AnthropicLlmService
from agent_core.tool_contract import Tool, ToolResult, ToolSchema

OBJECT = {"type": "object", "properties": {}}


def schema(name: str, parameters: Any = OBJECT) -> ToolSchema:
    return ToolSchema.model_construct(name=name, description="d", parameters=parameters)


class LookupArgs(BaseModel):
    customer_id: int
    fields: list[str] = []


class LookupTool(Tool[LookupArgs]):
    name = "lookup_customer"
    description = "Find a customer"

    def get_args_schema(self) -> type[LookupArgs]:
        return LookupArgs

    async def execute(self, context: ToolContext, args: LookupArgs) -> ToolResult:
        return ToolResult(success=True, result_for_llm="ok")


async def test_real_tool_schemas_are_accepted(service: AnthropicLlmService) -> None:
    tools = [LookupTool().get_schema(), schema("a-b_C9"), schema("x" * 64)]
    assert await service.validate_tools(tools) == []


@pytest.mark.parametrize(
    ("tools", "problem"),
    [
        ([schema("run sql")], "'run sql' must match"),
        ([schema("")], "'' must match"),
        ([schema("x" * 65)], "must match"),
        ([schema("naïve")], "must match"),
        ([schema("dup"), schema("ok"), schema("dup")], "'dup' is used more than once"),
        ([schema("arr", {"type": "array"})], "'arr': input_schema must be"),
        ([schema("untyped", {"properties": {}})], "'untyped': input_schema must be"),
        ([schema("notdict", ["type", "object"])], "'notdict': input_schema must be"),
    ],
)
async def test_problems_are_reported(
    service: AnthropicLlmService, tools: list[ToolSchema], problem: str
) -> None:
    problems = await service.validate_tools(tools)
    assert len(problems) == 1
    assert problem in problems[0]


@pytest.mark.parametrize(
    "module",
    [agent_core.llm.anthropic, agent_core.llm.anthropic_convert, agent_core.llm.anthropic_stream],
)
def test_docstring_examples_run(module: Any) -> None:
    result = doctest.testmod(module)
    assert result.attempted and not result.failed
