"""LangGraph is the optional extra ``threadline[graph]``: agent_core works without it and
GraphAgent says how to get it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_agent_core_does_not_import_langgraph() -> None:
    result = run("""
        import sys
        import agent_core
        import agent_core.graph
        assert "langgraph" not in sys.modules, "langgraph imported eagerly"
        assert "langchain_core" not in sys.modules, "langchain_core imported eagerly"
    """)
    assert result.returncode == 0, result.stderr


def test_without_langgraph_agent_core_works_and_graph_agent_names_the_extra() -> None:
    result = run("""
        import sys
        sys.modules["langgraph"] = None  # as if the extra were not installed
        import asyncio
        from agent_core import (Agent, InMemoryAgentMemory, RequestContext, ScriptedLlmService,
                                StaticUserResolver, ToolRegistry, User)
        from agent_core.graph import GraphAgent

        options = dict(llm_service=ScriptedLlmService(["Hello!"]), tool_registry=ToolRegistry(),
                       user_resolver=StaticUserResolver(User(id="u1")),
                       agent_memory=InMemoryAgentMemory())

        async def ask():
            return [c async for c in Agent(**options).send_message(RequestContext(), "hi")]

        assert asyncio.run(ask())
        try:
            GraphAgent(**options)
        except ImportError as error:
            print(error)
        else:
            raise SystemExit("GraphAgent was built without langgraph")
    """)
    assert result.returncode == 0, result.stderr
    assert "pip install 'threadline[graph]'" in result.stdout
