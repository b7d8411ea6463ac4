"""An agent whose tools come from an MCP server: the tickets server of
``examples/mcp_tickets.py``, started over stdio and stopped with the agent.

    python examples/mcp_agent.py     # one question, in plain Python

With ``ANTHROPIC_API_KEY`` set, give the agent Claude (``AnthropicLlmService``) instead of
``offline_model``; the server's tools are offered to it like any tool.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path

from agent_core import (
    Agent,
    LlmRequest,
    RequestContext,
    ScriptedLlmService,
    ScriptedResponse,
    StaticUserResolver,
    ToolRegistry,
    User,
)
from agent_core.mcp import McpHub, McpServerConfig, attach

TICKETS = McpServerConfig(
    name="tickets",
    command=sys.executable,
    args=[str(Path(__file__).with_name("mcp_tickets.py"))],
    allowed_groups=["support"],  # who may use its tools
    approval={"get_ticket": "never"},  # else from the server's hints
)


def offline_model(request: LlmRequest) -> ScriptedResponse | str:
    """Stands in for Claude without a key: reads the ticket the question names."""
    last = request.messages[-1]
    if last.role == "tool":
        ticket = json.loads(last.content or "{}")
        return f"Ticket {ticket['id']}: {ticket['title']} ({ticket['status']})."
    found = re.search(r"ticket (\d+)", last.content or "")
    if found is None:
        return "Ask me about a ticket, for example: *What is ticket 2 about?*"
    return ScriptedResponse.tool("get_ticket", {"ticket_id": int(found.group(1))})


async def main() -> None:
    hub = McpHub([TICKETS])  # the process's sessions: one per server, opened on first use
    agent = Agent(
        llm_service=ScriptedLlmService(then=offline_model),
        tool_registry=ToolRegistry(),
        user_resolver=StaticUserResolver(User(id="ana", group_memberships=["support"])),
    )
    attach(agent, hub)  # the server's tools join the agent's, for every turn
    try:
        async for component in agent.send_message(RequestContext(), "What is ticket 2 about?"):
            rich = component.rich_component
            if rich.type == "text" and not rich.streaming:  # type: ignore[attr-defined]
                print(rich.content)  # type: ignore[attr-defined]
    finally:
        await hub.aclose()  # the server's process is stopped


if __name__ == "__main__":
    asyncio.run(main())
