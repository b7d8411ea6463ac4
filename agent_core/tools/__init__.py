"""Tools: the registry, the built-in tools, and the contract they implement (``Tool``,
``ToolCall``... from ``agent_core.tool_contract``) handed on.

The built-ins load on first use (PEP 562), so ``import agent_core`` does not pay for them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from agent_core.context import ToolContext
from agent_core.tool_contract import Tool, ToolCall, ToolRejection, ToolResult, ToolSchema
from agent_core.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from agent_core.tools.memory_tools import (
        SaveQuestionToolArgsTool,
        SaveTextMemoryTool,
        SearchSavedCorrectToolUsesTool,
    )
    from agent_core.tools.plan import PlanArgs, PlanStep, PlanTool
    from agent_core.tools.sql import RunSqlArgs, RunSqlTool, SqlError, SqlResult, SqlRunner
    from agent_core.tools.visualize import (
        ChartError,
        VisualizeDataArgs,
        VisualizeDataTool,
        plan_chart,
    )

_BUILT_INS = {
    "SqlRunner": "sql",
    "SqlResult": "sql",
    "SqlError": "sql",
    "RunSqlTool": "sql",
    "RunSqlArgs": "sql",
    "VisualizeDataTool": "visualize",
    "VisualizeDataArgs": "visualize",
    "ChartError": "visualize",
    "plan_chart": "visualize",
    "SearchSavedCorrectToolUsesTool": "memory_tools",
    "SaveQuestionToolArgsTool": "memory_tools",
    "SaveTextMemoryTool": "memory_tools",
    "PlanTool": "plan",
    "PlanArgs": "plan",
    "PlanStep": "plan",
}

__all__ = [
    "ChartError",
    "PlanArgs",
    "PlanStep",
    "PlanTool",
    "RunSqlArgs",
    "RunSqlTool",
    "SaveQuestionToolArgsTool",
    "SaveTextMemoryTool",
    "SearchSavedCorrectToolUsesTool",
    "SqlError",
    "SqlResult",
    "SqlRunner",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolRegistry",
    "ToolRejection",
    "ToolResult",
    "ToolSchema",
    "VisualizeDataArgs",
    "VisualizeDataTool",
    "plan_chart",
]


def __getattr__(name: str) -> Any:
    module = _BUILT_INS.get(name)
    if module is None:
        raise AttributeError(f"module 'agent_core.tools' has no attribute {name!r}")
    return getattr(importlib.import_module(f"agent_core.tools.{module}"), name)
