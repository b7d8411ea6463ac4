"""``PlanTool``: the LLM states its plan up front, then ticks its steps off.

The model calls ``plan`` with the steps it will take (short titles, in order, at most 50)
before a question that needs several, and again, with the same steps, as it moves on:
``in_progress`` for the step it starts, ``completed`` for those done. Each call yields the
whole plan as one ``TaskListComponent`` with ``as_plan=True`` (the same component id and
step ids for the whole turn), which the channels merge into the plan they show: Slack's
streamed plan, Teams' task list. The tool calls the model makes while a step is in progress
are shown under that step (the ``act`` stage names it their parent).

The tool is bookkeeping, not work: it shows no step of its own (``shown_as_step = False``)
and touches nothing. Register it to offer it::

    registry.register_local_tool(PlanTool(), access_groups=["user"])

>>> import asyncio
>>> from agent_core.context import ToolContext
>>> from agent_core.users import User
>>> context = ToolContext(user=User(id="ana"), conversation_id="c1", request_id="r1")
>>> args = PlanArgs(steps=[PlanStep(title="Query revenue", status="completed"),
...                        PlanStep(title="Draw the trend", status="in_progress")])
>>> result = asyncio.run(PlanTool().execute(context, args))
>>> result.result_for_llm
'Plan shown: 1 of 2 steps completed; in progress: Draw the trend.'
>>> [t.id for t in result.ui_component.rich_component.tasks]
['plan-r1-1', 'plan-r1-2']
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_core.components import Task, TaskListComponent, UiComponent
from agent_core.context import ToolContext
from agent_core.tool_contract import Tool, ToolResult

MAX_PLAN_STEPS = 50


class PlanStep(BaseModel):
    """One step of the plan, as the model states it."""

    model_config = ConfigDict(defer_build=True)

    title: str = Field(
        min_length=1, max_length=150, description="A few words, e.g. 'Query monthly revenue'"
    )
    status: Literal["pending", "in_progress", "completed"] = Field(
        default="pending", description="pending, in_progress (the one you work on) or completed"
    )


class PlanArgs(BaseModel):
    model_config = ConfigDict(defer_build=True)

    steps: list[PlanStep] = Field(
        min_length=1, max_length=MAX_PLAN_STEPS, description="Every step, in order, with its status"
    )


def plan_step_id(request_id: str, number: int) -> str:
    """The id of step ``number`` (from 1) of the plan of turn ``request_id``."""
    return f"plan-{request_id}-{number}"


class PlanTool(Tool[PlanArgs]):
    """Shows the model's plan in the thread; see the module docstring."""

    name = "plan"
    description = (
        "Before answering a question that needs several steps, list the steps (a few words "
        "each, in order) so the person sees your plan. Call it again with the same steps as "
        "you work: mark the step you start in_progress and the steps you finished completed "
        "(call it alongside the step's own tool calls, in the same response). Skip it for "
        "questions one tool call answers."
    )
    shown_as_step = False

    def get_args_schema(self) -> type[PlanArgs]:
        return PlanArgs

    async def execute(self, context: ToolContext, args: PlanArgs) -> ToolResult:
        request = context.request_id
        tasks = [
            Task(id=plan_step_id(request, number), title=step.title, status=step.status)
            for number, step in enumerate(args.steps, 1)
        ]
        plan = TaskListComponent(
            id=f"plan-{context.request_id}", title="Plan", tasks=tasks, as_plan=True
        )
        done = sum(step.status == "completed" for step in args.steps)
        working = [step.title for step in args.steps if step.status == "in_progress"]
        summary = f"Plan shown: {done} of {len(args.steps)} steps completed"
        summary += f"; in progress: {', '.join(working)}." if working else "."
        return ToolResult(
            success=True, result_for_llm=summary, ui_component=UiComponent(rich_component=plan)
        )
