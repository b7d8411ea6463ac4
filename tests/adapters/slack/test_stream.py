"""SlackReplyStream: a real agent's turn rendered into the fake Slack API."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from adapters.notices import STOPPED
from adapters.slack.context import ReplyTarget
from adapters.slack.errors import SlackCallFailed
from adapters.slack.limits import validate_block
from adapters.slack.stream import SlackReplyStream
from adapters.slack.testing import FakeSlackApi
from agent_core import RequestContext, ScriptedResponse, StaticUserResolver, User
from agent_core.components import (
    ComponentLifecycle,
    NotificationComponent,
    ProgressBarComponent,
    RichTextComponent,
    StatusCardComponent,
    Task,
    TaskTrackerUpdateComponent,
    ToolStatusComponent,
    UiComponent,
)
from tests.bots.slack.agents import build_agent

CHANNEL = ReplyTarget(channel="C1", thread_ts="1.0", team_id="T1", user_id="U1")
DM = ReplyTarget(channel="D1", thread_ts="1.0", team_id="T1", user_id="U1", is_dm=True)
ADMIN = User(id="slack:T1:U1", group_memberships=["user", "admin"])
MEMBER = User(id="slack:T1:U1", group_memberships=["user"])


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlackApi]:
    async with FakeSlackApi() as fake:
        yield fake


def reply(fake: FakeSlackApi, target: ReplyTarget = CHANNEL, **options: Any) -> SlackReplyStream:
    client = AsyncWebClient(token="xoxb-1", base_url=fake.base_url)
    return SlackReplyStream(client, target, **options)


async def run_turn(stream: SlackReplyStream, user: User, script: list[object], text: str) -> None:
    agent = build_agent(script, StaticUserResolver(user))  # type: ignore[arg-type]
    async with stream:
        async for component in agent.send_message(RequestContext(), text, conversation_id="c1"):
            await stream.handle(component)
        await stream.finish()


async def test_plain_answer_is_status_then_one_message_with_feedback(fake: FakeSlackApi) -> None:
    stream = reply(fake)
    await run_turn(stream, MEMBER, ["Hello **world**"], "hi")
    assert fake.methods() == ["assistant.threads.setStatus", "chat.postMessage"]
    status = fake.calls_to("assistant.threads.setStatus")[0].args
    assert (status["channel_id"], status["thread_ts"]) == ("C1", "1.0")
    assert status["status"].startswith("is working")
    [message] = fake.visible("C1")
    assert [b["type"] for b in message.blocks] == ["markdown", "context_actions"]
    assert stream.answer_ts == message.ts


async def test_tool_turn_for_admin_in_channel_sends_arguments_only_ephemerally(
    fake: FakeSlackApi,
) -> None:
    script = [
        ScriptedResponse.tool("run_sql", {"sql": "select 1", "rows": 3}, text="Let me look."),
        "There are 3 rows.",
    ]
    await run_turn(reply(fake), ADMIN, script, "how many?")
    posted = fake.calls_to("chat.postMessage")
    ephemeral = fake.calls_to("chat.postEphemeral")
    assert all(c.args["user"] == "U1" and c.args["thread_ts"] == "1.0" for c in ephemeral)
    private_text = " ".join(str(c.args) for c in ephemeral)
    assert "select 1" in private_text and "Let me look." in private_text
    public_text = " ".join(str(c.args) for c in posted)
    assert "select 1" not in public_text and "Let me look." not in public_text
    # the answer first, then its table, as in Teams (the table once came first)
    assert posted[0].args["blocks"][0]["text"] == "There are 3 rows."
    assert [b["type"] for b in posted[-1].args["blocks"]] == ["section", "table"]
    assert any(
        "is running run_sql" in c.args["status"]
        for c in fake.calls_to("assistant.threads.setStatus")
    )


async def test_tool_turn_for_member_sends_nothing_private(fake: FakeSlackApi) -> None:
    script = [ScriptedResponse.tool("run_sql", {"sql": "select 1"}), "Done."]
    await run_turn(reply(fake), MEMBER, script, "how many?")
    assert fake.calls_to("chat.postEphemeral") == []
    assert "select 1" not in str([c.args for c in fake.calls])


async def test_private_components_render_inline_in_a_dm(fake: FakeSlackApi) -> None:
    script = [ScriptedResponse.tool("run_sql", {"sql": "select 1"}), "Done."]
    await run_turn(reply(fake, DM), ADMIN, script, "how many?")
    assert fake.calls_to("chat.postEphemeral") == []
    assert "select 1" in str([c.args for c in fake.calls_to("chat.postMessage")])


def ui(rich: object, audience: str = "everyone") -> UiComponent:
    return UiComponent(rich_component=rich, audience=audience)  # type: ignore[arg-type]


async def test_updates_are_coalesced_and_removes_delete(fake: FakeSlackApi) -> None:
    stream = reply(fake, update_interval=60)
    bar = ProgressBarComponent(value=0.0, label="Load")
    await stream.handle(ui(bar))
    for step in range(1, 11):
        await stream.handle(ui(bar.update(value=step / 10)))
    assert fake.methods() == ["chat.postMessage"]
    await stream.finish()
    assert fake.methods() == ["chat.postMessage", "chat.update"]
    assert "100%" in fake.visible("C1")[0].blocks[0]["text"]["text"]
    await stream.handle(ui(bar.remove()))
    assert fake.methods()[-1] == "chat.delete" and fake.visible("C1") == []


async def test_update_after_the_interval_is_sent_at_once(fake: FakeSlackApi) -> None:
    stream = reply(fake, update_interval=0)
    note = NotificationComponent(message="one")
    await stream.handle(ui(note))
    await stream.handle(ui(note.update(message="two")))
    assert fake.methods() == ["chat.postMessage", "chat.update"]


async def test_tool_progress_is_status_only_and_failures_are_posted(fake: FakeSlackApi) -> None:
    stream = reply(fake)
    ok = StatusCardComponent(title="run_sql", status="running")
    await stream.handle(ui(ok))
    await stream.handle(ui(ok.set_status("completed", "3 rows")))
    bad = StatusCardComponent(title="draw_chart", status="running")
    await stream.handle(ui(bad))
    await stream.handle(ui(bad.set_status("failed", "boom")))
    await stream.handle(ui(StatusCardComponent(title="Error", status="error", description="x")))
    assert fake.methods() == [
        "assistant.threads.setStatus",
        "assistant.threads.setStatus",
        "chat.postMessage",
        "chat.postMessage",
    ]


async def test_a_tool_calls_one_component_is_status_line_plan_step_and_failure_message(
    fake: FakeSlackApi,
) -> None:
    """Issue 37: a tool call is one component, updated in place; it shows what its task and
    status card did: the status line while it runs, a step of the plan from the second,
    a message when it failed (a call that completed is only ticked off)."""
    stream = reply(fake, update_interval=60)
    ok = ToolStatusComponent(tool="run_sql")
    await stream.handle(ui(ok))
    await stream.handle(ui(ok.finished(success=True, detail="completed in 3 ms")))
    assert fake.methods() == ["assistant.threads.setStatus"]
    bad = ToolStatusComponent(tool="draw_chart")
    await stream.handle(ui(bad))
    await stream.handle(ui(bad.finished(success=False, detail="failed in 2 ms")))
    await stream.finish()
    statuses = [c.args["status"] for c in fake.calls_to("assistant.threads.setStatus")]
    assert statuses[:2] == ["is running run_sql…", "is running draw_chart…"]
    [failure] = [m for m in fake.visible("C1") if m.blocks and not m.chunks]
    assert failure.blocks[0]["text"]["text"] == ":x: *draw_chart* · failed\nfailed in 2 ms"
    shown = {c["id"]: c for m in fake.visible("C1") for c in m.chunks if c["type"] == "task_update"}
    assert [(c["title"], c["status"]) for c in shown.values()] == [
        ("run_sql", "complete"),
        ("draw_chart", "error"),
    ]


async def test_one_step_shows_in_the_status_line_and_a_second_starts_the_plan(
    fake: FakeSlackApi,
) -> None:
    """Issue 13 changes this on purpose: task updates no longer join the streaming answer;
    they are the plan's own message once the turn runs a second step, a plan block updated
    in place while the answer holds the thread's stream."""
    stream = reply(fake, flush_chars=5)
    text = RichTextComponent(content="Working", delta="Working", markdown=True, streaming=True)
    await stream.handle(ui(text))
    first = Task(title="run_sql", status="in_progress")
    await stream.handle(ui(TaskTrackerUpdateComponent.add_task(first)))
    assert fake.calls_to("assistant.threads.setStatus")[-1].args["status"] == (
        "is running run_sql…"
    )
    await stream.handle(ui(TaskTrackerUpdateComponent.update_task(first.id, status="completed")))
    second = Task(title="draw_chart", status="in_progress")
    await stream.handle(ui(TaskTrackerUpdateComponent.add_task(second)))
    await stream.handle(ui(TaskTrackerUpdateComponent.update_task(second.id, status="completed")))
    await stream.handle(ui(text.update(content="Working done", delta=" done", streaming=False)))
    await stream.finish()
    answer, plan = fake.visible("C1")
    assert answer.text == "Working done" and answer.chunks == []
    assert [c.args.get("task_display_mode") for c in fake.calls_to("chat.startStream")] == [None]
    [block] = plan.blocks
    assert validate_block(block)["title"] == "Finished 2 steps"
    assert [(t["title"], t["status"]) for t in block["tasks"]] == [
        ("run_sql", "complete"),
        ("draw_chart", "complete"),
    ]


async def test_the_plans_stream_ends_when_the_answer_starts(fake: FakeSlackApi) -> None:
    """One stream at a time in a thread: the plan stands complete above the answer."""
    stream = reply(fake, flush_chars=5, update_interval=0)
    steps = [Task(title=f"step {i}", status="completed") for i in range(2)]
    for step in steps:
        await stream.handle(ui(TaskTrackerUpdateComponent.add_task(step)))
    text = RichTextComponent(content="Answer", delta="Answer", markdown=True, streaming=True)
    await stream.handle(ui(text))
    plan_ts = stream.plan.ts
    stops = [c.args["ts"] for c in fake.calls_to("chat.stopStream")]
    starts = [c for c in fake.calls_to("chat.startStream") if c.args.get("task_display_mode")]
    assert stops == [plan_ts] and len(starts) == 1
    calls = fake.calls
    answer_start = next(
        i
        for i, c in enumerate(calls)
        if c.method == "chat.startStream" and not c.args.get("task_display_mode")
    )
    plan_stop = next(i for i, c in enumerate(calls) if c.method == "chat.stopStream")
    assert plan_stop < answer_start  # the plan's stream ended before the answer's began
    await stream.handle(ui(text.update(content="Answer.", delta=".", streaming=False)))
    await stream.finish()
    plan, answer = fake.visible("C1")
    assert plan.ts == plan_ts and not plan.streaming and answer.text == "Answer."
    assert fake.calls_to("chat.update") == []  # nothing changed after: no update


async def test_rewritten_final_text_replaces_the_streamed_one(fake: FakeSlackApi) -> None:
    stream = reply(fake, flush_chars=3)
    text = RichTextComponent(content="Draft", delta="Draft", markdown=True, streaming=True)
    await stream.handle(ui(text))
    await stream.handle(ui(text.replace(content="Final", delta=None, streaming=False)))
    [message] = fake.visible("C1")
    assert (message.text, message.blocks[0]["type"]) == ("Final", "context_actions")


async def test_stop_message_is_removed_and_stopped_answers_say_so(fake: FakeSlackApi) -> None:
    async with reply(fake, flush_chars=3, stop_turn="turn-1", stop_button_after=0) as stream:
        await fake.wait_for(lambda f: bool(f.visible("C1")))
        stop_ts = fake.visible("C1")[0].ts
        text = RichTextComponent(content="Partial", delta="Partial", markdown=True, streaming=True)
        await stream.handle(ui(text))
        await stream.settle(STOPPED)
    [message] = fake.visible("C1")
    assert message.ts != stop_ts and message.text == "Partial\n\n_(Stopped.)_"
    assert message.blocks == []


async def test_private_slash_command_answers_only_the_asker(fake: FakeSlackApi) -> None:
    target = ReplyTarget("C1", "private", "T1", "U1", private=True)
    await run_turn(reply(fake, target), MEMBER, ["Only for you."], "secret?")
    assert fake.methods() == ["chat.postEphemeral"]
    args = fake.calls_to("chat.postEphemeral")[0].args
    assert args["user"] == "U1" and "thread_ts" not in args
    assert [b["type"] for b in args["blocks"]] == ["markdown", "context_actions"]


async def test_private_answer_falls_back_to_the_response_url(fake: FakeSlackApi) -> None:
    fake.errors["chat.postEphemeral"] = "not_in_channel"
    target = ReplyTarget(
        "C1", "private", "T1", "U1", private=True, response_url=fake.response_url()
    )
    await run_turn(reply(fake, target), MEMBER, ["Only for you."], "secret?")
    [hook] = fake.calls_to("response_url")
    assert hook.args["response_type"] == "ephemeral" and hook.args["replace_original"] is False
    fake.errors["chat.postEphemeral"] = "not_in_channel"
    with pytest.raises(SlackCallFailed):  # read once, at the client
        await run_turn(
            reply(fake, ReplyTarget("C1", "p", "T1", "U1", private=True)), MEMBER, ["x"], "y"
        )


async def test_attachments_are_never_shared_privately(fake: FakeSlackApi) -> None:
    from agent_core.components import DataFrameComponent

    table = DataFrameComponent.from_records([{"n": i} for i in range(300)])
    await reply(fake).handle(ui(table, audience="requester"))
    assert fake.methods() == ["chat.postEphemeral"]
    blocks = fake.calls_to("chat.postEphemeral")[0].args["blocks"]
    assert "not shared privately" in blocks[-1]["elements"][0]["text"]


async def test_removed_private_component_is_ignored(fake: FakeSlackApi) -> None:
    note = NotificationComponent(message="secret")
    note = note.model_copy(update={"lifecycle": ComponentLifecycle.REMOVE})
    await reply(fake).handle(ui(note, audience="requester"))
    assert fake.calls == []


async def test_private_slash_command_with_a_tool_shows_results_not_progress(
    fake: FakeSlackApi,
) -> None:
    target = ReplyTarget("C1", "private", "T1", "U1", private=True)
    script = [ScriptedResponse.tool("run_sql", {"sql": "select 1"}), "3 rows."]
    await run_turn(reply(fake, target), MEMBER, script, "rows?")
    assert set(fake.methods()) == {"chat.postEphemeral"}
    sent = [c.args for c in fake.calls]
    assert [b["type"] for b in sent[0]["blocks"]] == ["section", "table"]
    assert sent[-1]["blocks"][0]["text"] == "3 rows."
    assert "completed" not in str(sent)
