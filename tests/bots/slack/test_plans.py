"""Visible plans end to end (issue 13, item 1): a turn's steps through the real Slack bot,
as Slack's streamed task_update / plan_update chunks or, where streaming is refused, a plan
block; every shape checked with slack_sdk's models."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from slack_sdk.models.messages.chunk import Chunk

from adapters.slack.controls import STOP_ACTION
from adapters.slack.limits import MAX_PLAN_TASKS, validate_block
from adapters.slack.testing import Call, FakeSlackApi
from adapters.tasks import MORE_TASKS_ID
from agent_core import (
    Agent,
    InMemoryAgentMemory,
    ScriptedLlmService,
    ScriptedResponse,
    Tool,
    ToolContext,
    ToolRegistry,
    ToolResult,
    UserResolver,
)
from agent_core.state_factory import State
from agent_core.tools import PlanTool
from tests.agent_kind import agent_class
from tests.bots.slack.agents import DrawChart, RunSql
from tests.bots.slack.harness import running_bot
from tests.bots.slack.test_bot_entry_points import mention
from tests.bots.slack.test_bot_turns import assert_calls_within_limits

THREAD = "100.000100"


def chunks_of(calls: list[Call]) -> list[dict[str, Any]]:
    """Every non-text chunk sent, each parsed by slack_sdk (an unknown one would be None)."""
    sent = [c for call in calls for c in call.args.get("chunks") or []]
    for chunk in sent:
        parsed = Chunk.parse(chunk)
        assert parsed is not None and parsed.to_dict() == chunk
    return [c for c in sent if c["type"] != "markdown_text"]


def plan_calls(fake: FakeSlackApi) -> list[Call]:
    methods = ("chat.startStream", "chat.appendStream", "chat.stopStream")
    return [
        c
        for c in fake.calls
        if c.method in methods
        and c.args.get("chunks")
        and any(ch["type"] != "markdown_text" for ch in c.args["chunks"])
    ]


def latest(chunks: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each task as Slack shows it once every chunk arrived."""
    tasks: dict[str, dict[str, Any]] = {}
    for chunk in chunks:
        if chunk["type"] == "task_update":
            tasks[chunk["id"]] = {**tasks.get(chunk["id"], {}), **chunk}
    return tasks


async def test_two_steps_stream_as_a_plan_in_a_channel(tmp_path: Path) -> None:
    script = [
        ScriptedResponse.tool("run_sql", {"sql": "select 1"}),
        ScriptedResponse.tool("draw_chart", {"kind": "bar"}),
        "Sales rose.",
    ]
    async with running_bot(tmp_path, script) as h:
        await h.event(mention("<@UBOT> sales with a chart"))
        await h.idle()
        assert_calls_within_limits(h.fake.calls)
        [start] = [
            c for c in h.fake.calls_to("chat.startStream") if c.args.get("task_display_mode")
        ]
        assert start.args["task_display_mode"] == "plan"
        chunks = chunks_of(plan_calls(h.fake))
        titles = [c["title"] for c in chunks if c["type"] == "plan_update"]
        assert titles[0] == "Working: 1 of 2 steps done" and titles[-1] == "Finished 2 steps"
        tasks = latest(chunks)
        assert [(t["title"], t["status"]) for t in tasks.values()] == [
            ("run_sql", "complete"),
            ("draw_chart", "complete"),
        ]
        plan, *rest = h.fake.thread("C1", THREAD)
        assert plan.ts == start.response["ts"] and not plan.streaming  # type: ignore[index]
        assert any(m.text == "Sales rose." for m in rest)  # the answer follows the plan


async def test_a_dm_shows_the_steps_as_a_timeline(tmp_path: Path) -> None:
    script = [
        ScriptedResponse.tool("run_sql", {"sql": "select 1"}),
        ScriptedResponse.tool("run_sql", {"sql": "select 2"}),
        "Both done.",
    ]
    dm = {
        "type": "message",
        "channel_type": "im",
        "channel": "D1",
        "user": "U1",
        "text": "two queries",
        "ts": "200.000100",
        "event_ts": "200.000100",
    }
    async with running_bot(tmp_path, script) as h:
        await h.event(dm)
        await h.idle()
        [start] = [
            c for c in h.fake.calls_to("chat.startStream") if c.args.get("task_display_mode")
        ]
        assert start.args["task_display_mode"] == "timeline"
        chunks = chunks_of(plan_calls(h.fake))
        assert not [c for c in chunks if c["type"] == "plan_update"]  # a timeline has no title
        assert [t["status"] for t in latest(chunks).values()] == ["complete", "complete"]


async def test_one_step_is_only_the_status_line(tmp_path: Path) -> None:
    script = [ScriptedResponse.tool("run_sql", {"sql": "select 1"}), "One row."]
    async with running_bot(tmp_path, script) as h:
        await h.event(mention())
        await h.idle()
        assert plan_calls(h.fake) == []
        statuses = [c.args["status"] for c in h.fake.calls_to("assistant.threads.setStatus")]
        assert "is running run_sql…" in statuses


async def test_parallel_calls_are_a_group_task_with_their_steps(tmp_path: Path) -> None:
    script = [ScriptedResponse.tools(("run_sql", {"sql": "a"}), ("draw_chart", {})), "Done."]
    async with running_bot(tmp_path, script) as h:
        await h.event(mention())
        await h.idle()
        tasks = list(latest(chunks_of(plan_calls(h.fake))).values())
        assert [(t["title"], t["status"]) for t in tasks] == [
            ("2 steps at once", "complete"),
            ("run_sql", "complete"),
            ("draw_chart", "complete"),
        ]
        assert tasks[0]["output"] == "2 done"


async def test_a_plan_with_50_steps_stays_within_slacks_limits(tmp_path: Path) -> None:
    """Bad input: 50 steps at once. The plan keeps 40 cards, the last standing for the rest,
    streamed and (streaming refused) as a plan block."""
    calls = [("run_sql", {"sql": f"select {i}"}) for i in range(50)]
    for refused in (False, True):
        async with running_bot(tmp_path, [ScriptedResponse.tools(*calls), "All 50."]) as h:
            if refused:
                h.fake.errors["chat.startStream"] = "not_allowed"
            await h.event(mention())
            await h.idle()
            assert_calls_within_limits(h.fake.calls)
            if not refused:
                tasks = latest(chunks_of(plan_calls(h.fake)))
                assert len(tasks) == MAX_PLAN_TASKS
                more = tasks[MORE_TASKS_ID]
                assert (more["title"], more["status"]) == ("12 more steps", "complete")
                continue
            [plan] = [m for m in h.fake.visible("C1") if m.blocks and m.blocks[0]["type"] == "plan"]
            block = validate_block(plan.blocks[0])
            assert len(block["tasks"]) == MAX_PLAN_TASKS
            assert block["title"] == "Finished 50 steps"
            assert block["tasks"][-1]["title"] == "12 more steps"
            assert {t["status"] for t in block["tasks"]} == {"complete"}
            refused_calls = [c.response["ok"] for c in plan_calls(h.fake)]  # type: ignore[index]
            assert refused_calls == [False]  # tried once, then the plan block


class HangArgs(BaseModel):
    pass


class Hang(Tool[HangArgs]):
    """A step that runs until the turn is stopped."""

    name = "hang"
    description = "Wait forever"

    def get_args_schema(self) -> type[HangArgs]:
        return HangArgs

    async def execute(self, context: ToolContext, args: HangArgs) -> ToolResult:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


def hanging_agent(resolver: UserResolver, state: State) -> Agent:
    registry = ToolRegistry()
    for tool in (RunSql(), DrawChart(), Hang()):
        registry.register_local_tool(tool, access_groups=["user"])
    script = [
        ScriptedResponse.tool("run_sql", {"sql": "select 1"}),
        ScriptedResponse.tools(("hang", {}), ("draw_chart", {})),
        "never",
    ]
    return agent_class()(
        llm_service=ScriptedLlmService(script),
        tool_registry=registry,
        user_resolver=resolver,
        agent_memory=InMemoryAgentMemory(),
        conversation_store=state.conversations,
    )


async def test_stop_marks_the_unfinished_steps_stopped(tmp_path: Path) -> None:
    async with running_bot(tmp_path, [], agent_factory=hanging_agent, stop_button_after=0) as h:
        await h.event(mention("<@UBOT> slow"))

        def hanging(fake: FakeSlackApi) -> bool:
            shown = {t["title"]: t["status"] for t in latest(chunks_of(plan_calls(fake))).values()}
            return shown.get("hang") == "in_progress" and shown.get("draw_chart") == "complete"

        await h.fake.wait_for(hanging)
        stop = next(
            m for m in h.fake.visible("C1") if any(b.get("type") == "actions" for b in m.blocks)
        )
        button = stop.blocks[-1]["elements"][0]
        assert button["action_id"] == STOP_ACTION
        await h.action(
            STOP_ACTION, button["value"], user="U1", message_ts=stop.ts, thread_ts=THREAD
        )
        await h.idle()
        chunks = chunks_of(plan_calls(h.fake))
        tasks = {t["title"]: t for t in latest(chunks).values()}
        assert tasks["run_sql"]["status"] == "complete"
        assert (tasks["hang"]["status"], tasks["hang"]["details"]) == ("error", "Stopped")
        assert tasks["2 steps at once"]["details"] == "Stopped"
        assert [c["title"] for c in chunks if c["type"] == "plan_update"][-1] == (
            "Stopped after 2 of 3 steps"
        )
        [start] = [
            c for c in h.fake.calls_to("chat.startStream") if c.args.get("task_display_mode")
        ]
        plan_ts = start.response["ts"]  # type: ignore[index]
        [stop_stream] = [c for c in h.fake.calls_to("chat.stopStream") if c.args["ts"] == plan_ts]
        assert stop_stream.response["ok"]  # type: ignore[index]


def plan_call(*steps: tuple[str, str]) -> ScriptedResponse:
    return ScriptedResponse.tool("plan", {"steps": [{"title": t, "status": s} for t, s in steps]})


def planning_agent(script: list[object]) -> Callable[[UserResolver, State], Agent]:
    def build(resolver: UserResolver, state: State) -> Agent:
        registry = ToolRegistry()
        for tool in (RunSql(), DrawChart(), PlanTool()):
            registry.register_local_tool(tool, access_groups=["user"])
        return agent_class()(
            llm_service=ScriptedLlmService(script),
            tool_registry=registry,  # type: ignore[arg-type]
            user_resolver=resolver,
            agent_memory=InMemoryAgentMemory(),
            conversation_store=state.conversations,
        )

    return build


async def test_the_models_stated_plan_shows_first_and_its_steps_tick_off(tmp_path: Path) -> None:
    script = [
        plan_call(("Query revenue", "in_progress"), ("Draw the trend", "pending")),
        ScriptedResponse.tool("run_sql", {"sql": "select 1"}),
        plan_call(("Query revenue", "completed"), ("Draw the trend", "in_progress")),
        ScriptedResponse.tool("draw_chart", {}),
        plan_call(("Query revenue", "completed"), ("Draw the trend", "completed")),
        "Revenue rose.",
    ]
    async with running_bot(tmp_path, [], agent_factory=planning_agent(script)) as h:
        await h.event(mention("<@UBOT> revenue trend"))
        await h.idle()
        assert_calls_within_limits(h.fake.calls)
        [start, *_] = plan_calls(h.fake)
        first = [c for c in start.args["chunks"] if c["type"] == "task_update"]
        assert [(c["title"], c["status"]) for c in first] == [
            ("Query revenue", "in_progress"),
            ("Draw the trend", "pending"),
        ]  # stated up front
        chunks = chunks_of(plan_calls(h.fake))
        tasks = [(t["title"], t["status"]) for t in latest(chunks).values()]
        assert tasks == [
            ("Query revenue", "complete"),
            ("Draw the trend", "complete"),
            ("run_sql", "complete"),
            ("draw_chart", "complete"),
        ]
        titles = [c["title"] for c in chunks if c["type"] == "plan_update"]
        assert titles[0] == "Working: 0 of 2 steps done" and titles[-1] == "Finished 2 steps"
        statuses = [c.args["status"] for c in h.fake.calls_to("assistant.threads.setStatus")]
        assert "is running plan…" not in statuses  # bookkeeping, not a step


async def test_a_plan_of_51_steps_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    """Bad input: more steps than a plan may have. The model is told why; nothing shows."""
    steps = [(f"step {i}", "pending") for i in range(51)]
    script = [plan_call(*steps), "Without a plan, then."]
    async with running_bot(tmp_path, [], agent_factory=planning_agent(script)) as h:
        await h.event(mention())
        await h.idle()
        assert plan_calls(h.fake) == []
        llm = h.agent.llm_service
        tool_answer = llm.requests[-1].messages[-1]  # type: ignore[attr-defined]
        assert tool_answer.role == "tool" and "50" in (tool_answer.content or "")
