"""The ``act`` stage: run the LLM's tool calls (steps 15-17).

Calls run in sequential groups of parallel calls: consecutive ``parallel_safe`` tools run
concurrently, a tool with ``parallel_safe = False`` runs alone. Each call is one
``ToolStatusComponent``, a task of the turn's plan updated in place (in progress, then
completed or error), and a group of parallel calls is a task too
(``TaskTrackerUpdateComponent``), whose calls name it as their ``parent_id``; the channels
show them as Slack's plan and status line, Teams' progress and task list. When the model
stated a plan (``agent_core.tools.plan``), the calls made while one of its steps is in
progress are shown under that step. Components stream as each call produces them; results
enter the conversation in call order, group by group, so a Stop never leaves a finished
call unrecorded.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agent_core.components import (
    CardComponent,
    ComponentStream,
    NotificationComponent,
    Task,
    TaskListComponent,
    TaskTrackerUpdateComponent,
    ToolRefusedComponent,
    ToolStatusComponent,
    UiComponent,
)
from agent_core.config import UiFeature
from agent_core.conversations import Message
from agent_core.extensions.recovery import RecoveryActionType
from agent_core.tool_contract import Tool, ToolCall, ToolResult
from agent_core.turn.approving import apply_decision, hold
from agent_core.turn.deps import TurnDeps
from agent_core.turn.state import TurnState


def next_step(deps: TurnDeps, state: TurnState) -> str:
    """The router after ``think`` (and ``act``): ``"act"`` on tool calls within the limit,
    else ``"finish"`` (also when the turn now waits for approval)."""
    if state.awaiting is not None or not state.pending_tool_calls:
        return "finish"
    if state.tool_iterations >= deps.config.max_tool_iterations:
        state.hit_tool_limit = True
        return "finish"
    return "act"


def _groups(deps: TurnDeps, calls: list[ToolCall]) -> list[list[tuple[int, ToolCall]]]:
    """Sequential groups of parallel calls: a ``parallel_safe = False`` tool runs alone."""
    groups: list[list[tuple[int, ToolCall]]] = []
    last_was_parallel = False
    for index, call in enumerate(calls):
        tool = deps.tool_registry.peek(call.name)
        parallel = tool is None or tool.parallel_safe
        if parallel and last_was_parallel:
            groups[-1].append((index, call))
        else:
            groups.append([(index, call)])
        last_was_parallel = parallel
    return groups


async def act(deps: TurnDeps, state: TurnState) -> ComponentStream:
    """Steps 15-17 for one round of tool calls: each group runs, then its results enter the
    conversation in call order. A round with a call that needs approval waits instead
    (``agent_core.approvals.gate``): nothing of it runs until someone decides."""
    if state.approval is not None:
        await apply_decision(deps, state)
    elif (held := await hold(deps, state)) is not None:
        for component in held:
            yield component
        return
    calls = state.pending_tool_calls
    state.tool_iterations += 1
    results: list[ToolResult | None] = [None] * len(calls)
    conversation = state.require_conversation()
    for group in _groups(deps, calls):
        if len(group) == 1:  # the common case, without a generator per call
            index, call = group[0]
            shown = _Shown(deps, state, call)
            for component in shown.before():
                yield component
            result = results[index] = await _execute(deps, state, call)
            for component in shown.after(result):
                yield component
        else:
            async for component in _run_group(deps, state, group, results):
                yield component
        for index, call in group:
            done = results[index]
            assert done is not None
            conversation.add_message(
                Message(
                    role="tool",
                    content=done.result_for_llm,
                    tool_call_id=call.id,
                    metadata={"success": done.success, "tool": call.name},
                )
            )
            if done.success:
                state.sources.extend(done.sources)


async def _run_group(
    deps: TurnDeps,
    state: TurnState,
    group: list[tuple[int, ToolCall]],
    results: list[ToolResult | None],
) -> ComponentStream:
    """A group of parallel calls: one task for the group (its calls are its subtasks), the
    calls run at once, and the group's task ends complete, or error if one call failed."""
    task = None
    if state.can(UiFeature.TOOL_NAMES) and all(_shown_as_step(deps, c) for _, c in group):
        task = Task(
            title=f"{len(group)} steps at once", status="in_progress", parent_id=state.plan_step
        )
        yield UiComponent.of(TaskTrackerUpdateComponent.add_task(task))
    parent = task.id if task is not None else state.plan_step
    pipelines = [_run_call(deps, state, call, index, results, parent) for index, call in group]
    async for component in _merge(pipelines):
        yield component
    if task is not None:
        failed = sum(not (r and r.success) for r in (results[index] for index, _ in group))
        detail = f"{failed} of {len(group)} failed" if failed else f"{len(group)} done"
        yield UiComponent.of(
            TaskTrackerUpdateComponent.update_task(
                task.id,
                status="error" if failed else "completed",
                detail=detail,
            )
        )


async def _merge(pipelines: list[ComponentStream]) -> ComponentStream:
    """Interleave several component streams, yielding each item as it is produced."""
    queue: asyncio.Queue[UiComponent | None] = asyncio.Queue()

    async def pump(pipeline: ComponentStream) -> None:
        try:
            async for item in pipeline:
                queue.put_nowait(item)
        finally:
            queue.put_nowait(None)

    tasks = [asyncio.create_task(pump(p)) for p in pipelines]
    try:
        running = len(tasks)
        while running:
            item = await queue.get()
            if item is None:
                running -= 1
            else:
                yield item
        for task in tasks:
            task.result()  # surface a pipeline's unexpected exception
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _run_call(
    deps: TurnDeps,
    state: TurnState,
    call: ToolCall,
    index: int,
    results: list[ToolResult | None],
    parent: str | None,
) -> ComponentStream:
    """One call of a parallel group, as ``act`` runs a call alone."""
    shown = _Shown(deps, state, call, parent)
    for component in shown.before():
        yield component
    result = results[index] = await _execute(deps, state, call)
    for component in shown.after(result):
        yield component


def _shown_as_step(deps: TurnDeps, call: ToolCall) -> bool:
    tool = deps.tool_registry.peek(call.name)
    return tool is None or tool.shown_as_step


def _plan_step(result: ToolResult, current: str | None) -> str | None:
    """The step of the model's plan in progress once ``result`` is in: a new version of the
    plan names it, any other result leaves it as it was."""
    rich = result.ui_component.rich_component if result.ui_component else None
    if not isinstance(rich, TaskListComponent) or not rich.as_plan:
        return current
    return next((t.id for t in rich.tasks if t.status == "in_progress"), None)


class _Shown:
    """What one call shows: its status to those who may see tool names (one component,
    updated when the call ends), its arguments privately, then the tool's own component,
    and error detail privately."""

    __slots__ = ("call", "deps", "parent", "state", "status")

    def __init__(
        self, deps: TurnDeps, state: TurnState, call: ToolCall, parent: str | None = None
    ) -> None:
        self.deps, self.state, self.call = deps, state, call
        self.parent = parent or state.plan_step
        self.status: ToolStatusComponent | None = None

    def before(self) -> list[UiComponent]:
        deps, state, call = self.deps, self.state, self.call
        if not deps.tool_registry.can_use(call.name, state.require_user()):
            return []
        shown = []
        if state.can(UiFeature.TOOL_NAMES) and _shown_as_step(deps, call):
            self.status = ToolStatusComponent(tool=call.name, parent_id=self.parent)
            shown.append(UiComponent.of(self.status))  # its plain form: built if needed
        if state.can(UiFeature.TOOL_ARGUMENTS):
            shown.append(
                _private(
                    deps,
                    UiFeature.TOOL_ARGUMENTS,
                    CardComponent(
                        title=f"{call.name} arguments",
                        markdown=True,
                        content="```json\n"
                        + json.dumps(call.arguments, indent=2, default=str)
                        + "\n```",
                    ),
                )
            )
        return shown

    def after(self, result: ToolResult) -> list[UiComponent]:
        shown, name = [], self.call.name
        self.state.plan_step = _plan_step(result, self.state.plan_step)
        if self.status is not None:
            outcome = "completed" if result.success else "failed"
            took = result.metadata.get("execution_time_ms")
            detail = f"{outcome} in {took:.0f} ms" if isinstance(took, float) else outcome
            done = self.status.finished(success=result.success, detail=detail)
            shown.append(UiComponent.of(done))
        if result.ui_component is not None:
            shown.append(result.ui_component)
        if result.refusal is not None:  # a signal the channel may end on (a workflow step)
            shown.append(UiComponent.of(ToolRefusedComponent(tool=name, kind=result.refusal)))
        if not result.success and self.state.can(UiFeature.TOOL_ERROR):
            shown.append(
                _private(
                    self.deps,
                    UiFeature.TOOL_ERROR,
                    NotificationComponent(
                        title=f"{name} failed",
                        message=result.error or "unknown error",
                        level="error",
                    ),
                )
            )
        return shown


def _private(
    deps: TurnDeps, feature: UiFeature, rich: CardComponent | NotificationComponent
) -> UiComponent:
    text = rich.content if isinstance(rich, CardComponent) else rich.message
    return UiComponent.of(
        rich,
        f"{rich.title}\n{text}",
        audience=deps.config.ui_features.audience_of(feature),
        ui_feature=feature.value,
    )


async def _execute(deps: TurnDeps, state: TurnState, call: ToolCall) -> ToolResult:
    """Registry execution with before/after hooks and the recovery strategy."""
    context = state.require_tool_context()
    strategy = deps.error_recovery_strategy
    attempt = 1
    handles: list[object] | None = None  # the hooks' handles on this call, once they ran
    while True:
        handles = None

        async def before_tool(tool: Tool[Any]) -> None:
            nonlocal handles
            handles = await _before_tool_hooks(deps, tool, context)

        async with deps.tracer.span(
            "agent.tool.execute",
            metric="agent.tool.duration",
            tag_attributes=("tool", "success"),
            tool=call.name,
            arg_count=len(call.arguments),
        ) as span:
            result = await deps.tool_registry.execute(call, context, before_execute=before_tool)
            span.set_attribute("success", result.success)
            span.set_attribute("error", result.error)
        if result.exception is None or strategy is None:
            break
        if not isinstance(result.exception, Exception):
            break
        action = await strategy.handle_tool_error(result.exception, context, attempt)
        if action.action is RecoveryActionType.RETRY:
            await asyncio.sleep((action.retry_delay_ms or 0) / 1000)
            attempt += 1
            continue
        if action.action is RecoveryActionType.FALLBACK:
            value = action.fallback_value
            result = (
                value
                if isinstance(value, ToolResult)
                else ToolResult(
                    success=True,
                    result_for_llm=str(value),
                    metadata={**result.metadata, "recovered": "fallback"},
                )
            )
        elif action.action is RecoveryActionType.SKIP:
            result = ToolResult(
                success=False,
                error=result.error,
                metadata={**result.metadata, "recovered": "skip"},
                result_for_llm=f"Tool call skipped: {action.message or result.error}",
            )
        break
    return result if handles is None else await _after_tool_hooks(deps, call, result, handles)


async def _before_tool_hooks(deps: TurnDeps, tool: Tool[Any], context: Any) -> list[object]:
    """Each hook's ``before_tool``, in order: their handles on the call."""
    handles: list[object] = []
    for hook in deps.lifecycle_hooks:
        async with deps.tracer.span(
            "agent.hook.before_tool",
            metric="agent.hook.duration",
            tags={"phase": "before_tool"},
            tag_attributes=("hook",),
            hook=type(hook).__name__,
            tool=tool.name,
        ):
            handles.append(await hook.before_tool(tool, context))
    return handles


async def _after_tool_hooks(
    deps: TurnDeps, call: ToolCall, result: ToolResult, handles: list[object]
) -> ToolResult:
    """Each hook's ``after_tool``, given its own ``before_tool``'s handle on the call."""
    for hook, handle in zip(deps.lifecycle_hooks, handles, strict=True):
        async with deps.tracer.span(
            "agent.hook.after_tool",
            metric="agent.hook.duration",
            tags={"phase": "after_tool"},
            tag_attributes=("hook",),
            hook=type(hook).__name__,
            tool=call.name,
        ) as span:
            replacement = await hook.after_tool(result, handle)
            span.set_attribute("modified_result", replacement is not None)
        if replacement is not None:
            result = replacement
    return result
