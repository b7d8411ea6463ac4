"""A Threadline agent with a tool of your own, served everywhere Threadline runs.

    threadline dev --app examples/weather.py:agent --reload   # the console: Slack and Teams views
    threadline chat --app examples/weather.py:agent           # the terminal
    threadline slack --app examples/weather.py:agent          # your Slack workspace
    threadline teams --app examples/weather.py:agent          # your Teams tenant
    python examples/weather.py                                # one question, in plain Python

``agent`` receives the channel's ``Runtime``: in Slack and Teams your agent answers with the
workspace's identity and groups and keeps its conversations and memory in Threadline's state
(SQLite, or Redis), without wiring any of it here. With ``ANTHROPIC_API_KEY`` set, Claude
decides when to call the tool; without it, ``offline_model`` stands in for it.
"""

from __future__ import annotations

import asyncio
import re

from pydantic import BaseModel, Field

from agent_core import (
    Agent,
    LlmRequest,
    RequestContext,
    Runtime,
    ScriptedLlmService,
    ScriptedResponse,
    Tool,
    ToolContext,
    ToolRegistry,
    ToolResult,
)


class WeatherArgs(BaseModel):
    city: str = Field(description="The city, e.g. Lisbon")


class Weather(Tool[WeatherArgs]):
    name = "weather"
    description = "Today's weather in a city"

    def get_args_schema(self) -> type[WeatherArgs]:
        return WeatherArgs

    async def execute(self, context: ToolContext, args: WeatherArgs) -> ToolResult:
        return ToolResult(success=True, result_for_llm=f"{args.city}: 21°C, sunny")


def offline_model(request: LlmRequest) -> ScriptedResponse | str:
    """Stands in for Claude without a key: asks the tool about the city the question names,
    then says what the tool answered."""
    last = request.messages[-1]
    if last.role == "tool":
        return f"Today in {last.content.replace(':', ' it is')}."
    found = re.search(r"\bin ([A-Z][\w-]+)", last.content)
    if found is None:
        return "Ask me about the weather somewhere, for example: *Weather in Lisbon?*"
    return ScriptedResponse.tool("weather", {"city": found.group(1)})


def agent(runtime: Runtime | None = None) -> Agent:
    """The agent, on the channel's model when one is configured."""
    tools = ToolRegistry()
    tools.register_local_tool(Weather(), access_groups=["user"])
    model = runtime.llm_service if runtime is not None else None
    return Agent(llm_service=model or ScriptedLlmService(then=offline_model), tool_registry=tools)


async def main() -> None:
    async for component in agent().send_message(RequestContext(), "Weather in Lisbon?"):
        if component.rich_component.type == "text" and not component.rich_component.streaming:
            print(component.rich_component.content)  # type: ignore[attr-defined]


if __name__ == "__main__":
    asyncio.run(main())
