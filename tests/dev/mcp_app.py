"""The agent the console's MCP sign-in test serves (``--app tests/dev/mcp_app.py:agent``):
its tools are the configured ``[[mcp]]`` servers' alone, and its model calls the one the
question names (``tests.bots.slack.test_mcp.model``)."""

from __future__ import annotations

from agent_core import Agent, Runtime, ScriptedLlmService, ToolRegistry
from tests.bots.slack.test_mcp import model


def agent(runtime: Runtime) -> Agent:
    return Agent(llm_service=ScriptedLlmService(then=model), tool_registry=ToolRegistry())
