"""Visible plans in Teams end to end (issue 13, item 1): the steps as informative updates of
the stream, then a task list card in the answer, valid Adaptive Card 1.5 and within Teams'
message size, through the real bot and the fake Bot Connector."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from adapters.teams.limits import MESSAGE_LIMIT, payload_size
from adapters.teams.plan import MAX_PLAN_TASKS
from agent_core import Agent, InMemoryAgentMemory, ScriptedLlmService, ToolRegistry, UserResolver
from agent_core.llm.scripted import ScriptedResponse
from agent_core.tools import PlanTool
from bots.teams.settings import TeamsSettings
from tests.adapters.teams.schemas import assert_valid_card, cards_in
from tests.agent_kind import agent_class
from tests.bots.teams.agents import DrawChart, RunSql
from tests.bots.teams.harness import teams_bot


def texts(card: dict[str, Any]) -> list[str]:
    """Each line of a card as it reads: a TextBlock's text, a RichTextBlock's runs."""
    return [
        b["text"] if b["type"] == "TextBlock" else "".join(r["text"] for r in b["inlines"])
        for b in card["body"]
        if b["type"] in ("TextBlock", "RichTextBlock")
    ]


async def test_steps_stream_as_progress_then_a_task_list_in_the_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = [
        ScriptedResponse.tool("run_sql", {"sql": "select 1"}),
        ScriptedResponse(
            tool_calls=ScriptedResponse.tools(
                ("run_sql", {"sql": "select 2"}), ("draw_chart", {})
            ).tool_calls,
            latency=0.5,
        ),  # a progress line has time to show
        "Spend and signups are up.",
    ]
    async with teams_bot(monkeypatch, script) as bot:
        await bot.post(bot.message("spend and signups?"))
        final = await bot.final()
        informative = [
            c.text
            for c in bot.fake.calls
            if c.stream_info and c.stream_info.get("streamType") == "informative"
        ]
        assert informative  # progress lines while the steps ran (the model's 0.5 s pause)
        cards = cards_in(final.body)
        for card in cards:
            assert_valid_card(card)
        plan = texts(cards[0])
        assert plan[0] == "Finished 3 steps"
        assert plan[1].startswith("✅ run_sql")
        assert plan[2].startswith("✅ 2 steps at once · 2 done")
        steps = [line.split(" · ")[0] for line in plan[3:]]
        assert steps == ["↳ ✅ run_sql", "↳ ✅ draw_chart"]
        assert final.text == "Spend and signups are up."


async def test_one_step_has_no_task_list(monkeypatch: pytest.MonkeyPatch) -> None:
    script = [ScriptedResponse.tool("run_sql", {"sql": "select 1"}), "Three rows."]
    async with teams_bot(monkeypatch, script) as bot:
        await bot.post(bot.message("rows?"))
        final = await bot.final()
        assert all(
            not texts(c)[0].startswith(("Finished", "Working")) for c in cards_in(final.body)
        )


async def test_a_plan_with_50_steps_fits_one_valid_card(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bad input: 50 steps at once, titled at length. The card keeps 40 lines, the last
    standing for the rest, and the answer stays inside Teams' message size."""
    calls = [("run_sql", {"sql": f"select {i} -- " + "x" * 400}) for i in range(50)]
    script = [ScriptedResponse.tools(*calls), "All fifty."]
    async with teams_bot(monkeypatch, script) as bot:
        await bot.post(bot.message("fifty queries", kind="groupChat"))
        final = await bot.final()
        plan = cards_in(final.body)[0]
        assert_valid_card(plan)
        lines = texts(plan)
        assert lines[0] == "Finished 50 steps" and len(lines) == 1 + MAX_PLAN_TASKS
        assert lines[-1] == "✅ 12 more steps · 12 of 12 done"
        assert all(payload_size(c.body) <= MESSAGE_LIMIT for c in bot.answers())


def planning_agent(script: list[object]) -> Callable[[UserResolver, TeamsSettings], Agent]:
    def build(resolver: UserResolver, settings: TeamsSettings) -> Agent:
        registry = ToolRegistry()
        for tool in (RunSql(), DrawChart(), PlanTool()):
            registry.register_local_tool(tool, access_groups=["user", "admin"])
        return agent_class()(
            llm_service=ScriptedLlmService(script),
            tool_registry=registry,  # type: ignore[arg-type]
            user_resolver=resolver,
            agent_memory=InMemoryAgentMemory(),
        )

    return build


def plan_call(*steps: tuple[str, str]) -> ScriptedResponse:
    return ScriptedResponse.tool("plan", {"steps": [{"title": t, "status": s} for t, s in steps]})


async def test_the_models_stated_plan_lists_each_steps_tool_calls_under_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = [
        plan_call(("Query revenue", "in_progress"), ("Draw the trend", "pending")),
        ScriptedResponse.tool("run_sql", {"sql": "select 1"}, latency=0.5),  # time to show it
        plan_call(("Query revenue", "completed"), ("Draw the trend", "in_progress")),
        ScriptedResponse.tool("draw_chart", {}),
        plan_call(("Query revenue", "completed"), ("Draw the trend", "completed")),
        "Revenue rose.",
    ]
    async with teams_bot(monkeypatch, agent_factory=planning_agent(script)) as bot:
        await bot.post(bot.message("revenue trend"))
        final = await bot.final()
        informative = [
            c.text
            for c in bot.fake.calls
            if c.stream_info and c.stream_info.get("streamType") == "informative"
        ]
        assert "Step 1 of 2: Query revenue…" in informative
        plan = cards_in(final.body)[0]
        assert_valid_card(plan)
        lines = [line.split(" · ")[0] for line in texts(plan)]
        assert lines == [
            "Finished 2 steps",
            "✅ Query revenue",
            "↳ ✅ run_sql",
            "✅ Draw the trend",
            "↳ ✅ draw_chart",
        ]
        assert "plan" not in " ".join(lines)  # bookkeeping, not a step
