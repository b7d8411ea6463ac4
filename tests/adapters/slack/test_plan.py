"""adapters.slack.plan.SlackPlan through the real slack_sdk client against the fake Web API:
a stream that expires midway, coalesced plan block updates, chunk shapes."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from slack_sdk.models.messages.chunk import Chunk
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.context import ReplyTarget
from adapters.slack.limits import validate_block
from adapters.slack.plan import SlackPlan, task_update_chunk
from adapters.slack.testing import FakeSlackApi, Reply
from adapters.tasks import PlanTask
from agent_core.components import Task, TaskTrackerUpdateComponent

CHANNEL = ReplyTarget(channel="C1", thread_ts="1.0", team_id="T1", user_id="U1")
Update = TaskTrackerUpdateComponent


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlackApi]:
    async with FakeSlackApi() as fake:
        yield fake


def plan_for(fake: FakeSlackApi, **options: float) -> SlackPlan:
    return SlackPlan(AsyncWebClient(token="xoxb-1", base_url=fake.base_url), CHANNEL, **options)


async def test_an_expired_stream_continues_as_the_plan_block_of_the_same_message(
    fake: FakeSlackApi,
) -> None:
    plan = plan_for(fake, update_interval=0)
    steps = [Task(title=f"step {i}", status="in_progress") for i in range(4)]
    assert [await plan.update(Update.add_task(step)) for step in steps[:2]] == [False, True]
    assert plan.started and not plan.fallback
    fake.script("chat.appendStream", Reply(error="message_not_in_streaming_state"))
    for step in steps[2:]:
        await plan.update(Update.add_task(step))
    for step in steps:
        await plan.update(Update.update_task(step.id, status="completed"))
    await plan.close()
    [message] = fake.visible("C1")
    assert message.ts == plan.ts and plan.fallback
    [block] = message.blocks
    assert validate_block(block)["title"] == "Finished 4 steps"
    assert [t["status"] for t in block["tasks"]] == ["complete"] * 4
    assert fake.calls_to("chat.postMessage") == []


async def test_fifty_quick_steps_cost_two_calls_within_the_update_interval(
    fake: FakeSlackApi,
) -> None:
    """Bad input: 50 steps in a burst. Slack hears of the plan once when it appears and
    once when it ends, not 100 times (chat.appendStream has a rate limit too)."""
    plan = plan_for(fake, update_interval=3600)
    steps = [Task(title=f"step {i}", status="in_progress") for i in range(50)]
    for step in steps:
        await plan.update(Update.add_task(step))
    for step in steps:
        await plan.update(Update.update_task(step.id, status="completed"))
    await plan.close()
    assert fake.methods() == ["chat.startStream", "chat.stopStream"]
    [message] = fake.visible("C1")
    tasks = {c["id"]: c for c in message.chunks if c["type"] == "task_update"}
    assert len(tasks) == 40 and {t["status"] for t in tasks.values()} == {"complete"}
    assert [c["title"] for c in message.chunks if c["type"] == "plan_update"][-1] == (
        "Finished 50 steps"
    )


async def test_a_pending_update_is_sent_once_the_interval_passes(fake: FakeSlackApi) -> None:
    plan = plan_for(fake, update_interval=0.05)
    first, second = Task(title="a", status="in_progress"), Task(title="b", status="in_progress")
    await plan.update(Update.add_task(first))
    await plan.update(Update.add_task(second))
    await plan.update(Update.update_task(first.id, status="completed"))
    await fake.wait_for_call("chat.appendStream")  # the timer's send, no later update needed
    [message] = fake.visible("C1")
    assert [c["status"] for c in message.chunks if c["type"] == "task_update"][-1] == "complete"
    await plan.close()


async def test_a_plan_closed_before_its_second_step_costs_no_call(fake: FakeSlackApi) -> None:
    plan = plan_for(fake)
    assert not await plan.update(Update.add_task(Task(title="run_sql", status="in_progress")))
    await plan.close(stopped=True)
    assert fake.calls == []


@pytest.mark.parametrize("status", ["pending", "in_progress", "completed", "error", "stopped"])
def test_each_status_is_a_task_update_slack_sdk_parses(status: str) -> None:
    chunk = task_update_chunk(PlanTask("t1", "x" * 400, status, "d" * 900))  # type: ignore[arg-type]
    parsed = Chunk.parse(chunk)
    assert parsed is not None and parsed.to_dict() == chunk
    assert len(chunk["title"]) <= 150
    assert len(chunk.get("details") or chunk.get("output") or "") <= 500
