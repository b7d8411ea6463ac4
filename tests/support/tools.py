"""Small tools shared by the test suites."""

from __future__ import annotations

from pydantic import BaseModel

from agent_core import Tool, ToolContext, ToolResult


class EchoArgs(BaseModel):
    text: str


class EchoTool(Tool[EchoArgs]):
    """Returns its text; records each execution."""

    name = "echo"
    description = "Echo the text back"

    def __init__(self) -> None:
        self.executions: list[str] = []

    def get_args_schema(self) -> type[EchoArgs]:
        return EchoArgs

    async def execute(self, context: ToolContext, args: EchoArgs) -> ToolResult:
        self.executions.append(args.text)
        return ToolResult(success=True, result_for_llm=f"echo: {args.text}")
