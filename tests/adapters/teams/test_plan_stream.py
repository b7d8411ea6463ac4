"""The plan in TeamsReplyStream: a Stop leaves the unfinished steps stopped in the card the
stopped answer ends with (real HTTP connector client, fake connector)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from adapters.notices import STOPPED
from adapters.teams.activities import ConversationRef
from adapters.teams.payloads import Activity
from adapters.teams.stream import ReplyOptions, TeamsReplyStream
from adapters.teams.testing import FakeBotConnector
from agent_core.components import (
    Task,
    TaskTrackerUpdateComponent,
    ToolStatusComponent,
    UiComponent,
)
from bots.teams.connector import ConnectorPool
from tests.adapters.teams.payloads import message
from tests.adapters.teams.schemas import assert_valid_card, cards_in

FAST = ReplyOptions(pace=0.02, typing_interval=0.05)


@pytest.fixture
async def connector() -> AsyncIterator[FakeBotConnector]:
    async with FakeBotConnector() as fake:
        yield fake


@pytest.fixture
async def pool() -> AsyncIterator[ConnectorPool]:
    async with ConnectorPool() as connectors:
        yield connectors


def ui(update: TaskTrackerUpdateComponent | ToolStatusComponent) -> UiComponent:
    return UiComponent(rich_component=update)


async def test_stop_ends_the_answer_with_the_plan_and_its_stopped_steps(
    connector: FakeBotConnector, pool: ConnectorPool
) -> None:
    ref = ConversationRef.from_activity(
        Activity.model_validate(message("q", kind="groupChat", service_url=connector.url))
    )
    reply = TeamsReplyStream(pool.get(connector.url), ref, options=FAST, stop_button_after=None)
    done = Task(title="run_sql", status="in_progress")
    running = Task(title="draw_chart", status="in_progress")
    async with reply:
        await reply.handle(ui(TaskTrackerUpdateComponent.add_task(done)))
        await reply.handle(ui(TaskTrackerUpdateComponent.update_task(done.id, status="completed")))
        await reply.handle(ui(TaskTrackerUpdateComponent.add_task(running)))
        await reply.settle(STOPPED)
    [answer] = [c for c in connector.calls if c.activity_type == "message"]
    [card] = cards_in(answer.body)
    assert_valid_card(card)
    lines = [b.get("text") or "".join(r["text"] for r in b["inlines"]) for b in card["body"]]
    assert lines == ["Stopped after 1 of 2 steps", "✅ run_sql", "⏹️ draw_chart · Stopped"]
    assert answer.text == STOPPED


async def test_a_stop_before_any_step_or_text_posts_nothing(
    connector: FakeBotConnector, pool: ConnectorPool
) -> None:
    """What was true before plans stays true: nothing shown, nothing posted on Stop."""
    ref = ConversationRef.from_activity(
        Activity.model_validate(message("q", kind="groupChat", service_url=connector.url))
    )
    reply = TeamsReplyStream(pool.get(connector.url), ref, options=FAST, stop_button_after=None)
    async with reply:
        await reply.handle(ui(TaskTrackerUpdateComponent.add_task(Task(title="run_sql"))))
        await reply.settle(STOPPED)
    assert [c for c in connector.calls if c.activity_type == "message"] == []


async def test_tool_calls_statuses_are_the_steps_and_a_failure_is_a_card_of_the_answer(
    connector: FakeBotConnector, pool: ConnectorPool
) -> None:
    """Issue 37: a tool call is one component updated in place; the answer's task list reads
    as from task updates, and the failed call is a card of the answer, as its status card was."""
    ref = ConversationRef.from_activity(
        Activity.model_validate(message("q", kind="groupChat", service_url=connector.url))
    )
    reply = TeamsReplyStream(pool.get(connector.url), ref, options=FAST, stop_button_after=None)
    ok, bad = ToolStatusComponent(tool="run_sql"), ToolStatusComponent(tool="draw_chart")
    async with reply:
        for call, success in ((ok, True), (bad, False)):
            await reply.handle(ui(call))
            outcome = "completed" if success else "failed"
            await reply.handle(ui(call.finished(success=success, detail=f"{outcome} in 3 ms")))
        await reply.finish()
    [answer] = [c for c in connector.calls if c.activity_type == "message"]
    cards = cards_in(answer.body)
    for card in cards:
        assert_valid_card(card)
    [plan] = [c for c in cards if "Finished 2 steps" in str(c)]
    lines = [b.get("text") or "".join(r["text"] for r in b["inlines"]) for b in plan["body"]]
    assert lines == [
        "Finished 2 steps, 1 with an error",
        "✅ run_sql · completed in 3 ms",
        "❌ draw_chart · failed in 3 ms",
    ]
    [failure] = [c for c in cards if c is not plan]
    assert "draw_chart" in str(failure) and "failed in 3 ms" in str(failure)
