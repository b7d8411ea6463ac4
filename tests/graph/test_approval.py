"""A tool with ``requires_approval = True`` pauses the turn (LangGraph ``interrupt``) until
the asker answers with the Approve / Deny buttons; the turn then resumes where it stopped."""

from __future__ import annotations

import asyncio
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from agent_core import MemoryConversationStore, ScriptedLlmService, ScriptedResponse, UiComponent
from agent_core.graph import GraphAgent
from agent_core.graph.approval import DENIED_NOTE
from tests.support.tools import EchoTool as Echo

from .conftest import (
    ADMIN,
    ANA,
    BOB,
    DropTable,
    MetadataUserResolver,
    as_user,
    assert_valid,
    collect,
    graph_agent,
    of_type,
    stored,
)


def script(then: str = "Dropped the orders table.") -> ScriptedLlmService:
    """The LLM calls ``drop_table``; its next answer is ``then``."""
    return ScriptedLlmService(
        [
            ScriptedResponse.tool("drop_table", {"table": "orders"}, text="I'll drop it."),
            then,
        ]
    )


def buttons(components: list[UiComponent]) -> tuple[str, str]:
    (group,) = of_type(components, "button_group")
    approve, deny = group.buttons
    assert (approve.label, deny.label) == ("Approve", "Deny")
    return approve.action, deny.action


def paused_agent(
    saver: InMemorySaver, llm: ScriptedLlmService | None = None, **options: Any
) -> tuple[GraphAgent, DropTable]:
    tool = DropTable()
    options.setdefault("user_resolver", MetadataUserResolver())
    agent = graph_agent(llm or script(), tools=[tool], checkpointer=saver, **options)
    return agent, tool


async def test_the_turn_pauses_before_the_tool_runs(saver: InMemorySaver) -> None:
    agent, tool = paused_agent(saver)
    out = await collect(agent, "drop the orders table")
    approve, deny = buttons(out)
    approval_id = approve.removeprefix("/approve ")
    assert deny == f"/deny {approval_id}"
    (card,) = of_type(out, "card")
    assert "`drop_table`" in card.content and card.status == "warning"
    assert of_type(out, "status_bar_update")[-1].status == "warning"
    assert of_type(out, "chat_input_update")[-1].disabled is False
    assert tool.executions == []
    assert await stored(agent) == []  # nothing is committed while the turn waits
    checkpoint = await agent.get_state("conv-1")
    assert checkpoint is not None and checkpoint.pending_approval is not None
    assert checkpoint.next_nodes == ["tools"]
    assert checkpoint.pending_approval.id == approval_id
    assert [c.name for c in checkpoint.pending_approval.request.calls] == ["drop_table"]
    assert checkpoint.pending_approval.request.calls[0].arguments == {"table": "orders"}


async def test_approve_runs_the_tool_and_finishes_the_turn(saver: InMemorySaver) -> None:
    agent, tool = paused_agent(saver)
    approve, _ = buttons(await collect(agent, "drop the orders table"))
    out = await collect(agent, approve)
    assert tool.executions == ["orders"]
    assert of_type(out, "status_card")[-1].status == "completed"
    assert of_type(out, "text")[-1].content == "Dropped the orders table."
    messages = await stored(agent)
    assert_valid(messages)
    assert [(m.role, m.content) for m in messages] == [
        ("user", "drop the orders table"),
        ("assistant", "I'll drop it."),
        ("tool", "dropped orders"),
        ("assistant", "Dropped the orders table."),
    ]
    checkpoint = await agent.get_state("conv-1")
    assert checkpoint is not None and checkpoint.next_nodes == []
    assert checkpoint.pending_approval is None


async def test_deny_answers_the_call_without_running_it(saver: InMemorySaver) -> None:
    agent, tool = paused_agent(saver)
    _, deny = buttons(await collect(agent, "drop the orders table"))
    out = await collect(agent, deny)
    assert tool.executions == []
    assert "you denied `drop_table`" in of_type(out, "notification")[0].message
    llm = agent.llm_service
    assert isinstance(llm, ScriptedLlmService)
    assert llm.requests[-1].messages[-1].content == DENIED_NOTE
    messages = await stored(agent)
    assert_valid(messages)
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]


async def test_resume_answers_the_pending_approval(saver: InMemorySaver) -> None:
    agent, tool = paused_agent(saver)
    await collect(agent, "drop the orders table")
    out = [c async for c in agent.resume(as_user(ANA), "conv-1", approved=True)]
    assert tool.executions == ["orders"]
    assert of_type(out, "text")[-1].content == "Dropped the orders table."


async def test_only_the_asker_can_answer(saver: InMemorySaver) -> None:
    """Everyone in a shared thread sees the buttons; only the asker's click counts."""
    agent, tool = paused_agent(saver)
    approve, _ = buttons(await collect(agent, "drop the orders table", context=as_user(ANA)))
    refused = await collect(agent, approve, context=as_user(BOB))
    assert "Only the person who asked" in of_type(refused, "card")[0].content
    assert tool.executions == []
    await collect(agent, approve, context=as_user(ANA))
    assert tool.executions == ["orders"]


async def test_a_new_agent_process_resumes_from_the_checkpoint(saver: InMemorySaver) -> None:
    """The paused turn lives in the checkpoint, not in the agent that paused it."""
    store = MemoryConversationStore()
    first, _ = paused_agent(saver, conversation_store=store)
    approve, _ = buttons(await collect(first, "drop the orders table"))
    tool = DropTable()
    llm = ScriptedLlmService(["Dropped the orders table."])
    second = graph_agent(
        llm,
        tools=[tool],
        checkpointer=saver,
        conversation_store=store,
        user_resolver=MetadataUserResolver(),
    )
    out = await collect(second, approve)
    assert tool.executions == ["orders"]
    assert of_type(out, "text")[-1].content == "Dropped the orders table."
    assert [m.content for m in llm.requests[0].messages] == [
        "drop the orders table",
        "I'll drop it.",
        "dropped orders",
    ]
    assert_valid(await stored(second))


async def test_an_answered_approval_cannot_be_replayed(saver: InMemorySaver) -> None:
    agent, tool = paused_agent(saver)
    approve, _ = buttons(await collect(agent, "drop the orders table"))
    await collect(agent, approve)
    again = await collect(agent, approve)
    assert "no pending approval" in of_type(again, "card")[0].content
    assert tool.executions == ["orders"]


async def test_a_double_click_while_the_tool_runs_is_refused(saver: InMemorySaver) -> None:
    agent, tool = paused_agent(saver)
    tool.release = asyncio.Event()
    approve, _ = buttons(await collect(agent, "drop the orders table"))
    first = asyncio.create_task(collect(agent, approve))
    await asyncio.wait_for(tool.started.wait(), timeout=5)
    second = await collect(agent, approve)
    assert "already being handled" in of_type(second, "card")[0].content
    tool.release.set()
    await asyncio.wait_for(first, timeout=5)
    assert tool.executions == ["orders"]


async def test_an_approval_expires_when_the_conversation_moves_on(
    saver: InMemorySaver,
) -> None:
    """A new question replaces the paused turn; approving the old one afterwards must not
    run the tool or overwrite the newer history."""
    agent, tool = paused_agent(saver, script(then="Sure, here is the weather."))
    approve, _ = buttons(await collect(agent, "drop the orders table"))
    await collect(agent, "what's the weather?")
    refused = await collect(agent, approve)
    assert "no pending approval" in of_type(refused, "card")[0].content
    assert tool.executions == []
    messages = await stored(agent)
    assert [m.content for m in messages] == ["what's the weather?", "Sure, here is the weather."]


async def test_an_approval_by_another_user_in_the_thread_is_not_overwritten_silently(
    saver: InMemorySaver,
) -> None:
    """Ana and Bob share a thread key; Bob's new turn ends Ana's pending approval (the
    thread holds one turn at a time) and Ana's click then says so instead of acting."""
    agent, tool = paused_agent(saver, script(then="Hi Bob."))
    approve, _ = buttons(await collect(agent, "drop the orders table", context=as_user(ANA)))
    await collect(agent, "hello", context=as_user(BOB))
    refused = await collect(agent, approve, context=as_user(ANA))
    assert "no pending approval" in of_type(refused, "card")[0].content
    assert tool.executions == []


async def test_approval_without_a_checkpointer_fails_clearly() -> None:
    tool = DropTable()
    agent = graph_agent(script(), tools=[tool])
    out = await collect(agent, "drop the orders table")
    error = of_type(out, "status_card")[-1]
    assert error.status == "error" and "checkpointer" in error.description
    assert tool.executions == []
    kept = await stored(agent)  # issue 17: only the question, marked unanswered, and a note
    assert [(m.role, m.metadata.get("unanswered")) for m in kept] == [
        ("user", True),
        ("assistant", None),
    ]


async def test_a_tool_the_user_may_not_use_is_refused_not_offered_for_approval(
    saver: InMemorySaver,
) -> None:
    tool = DropTable()
    llm = script()
    agent = graph_agent(llm, tools=[tool], groups={"drop_table": ["admin"]}, checkpointer=saver)
    out = await collect(agent, "drop the orders table")
    assert of_type(out, "button_group") == []
    assert tool.executions == []
    assert "Permission denied" in llm.requests[-1].messages[-1].content


async def test_deny_skips_only_the_calls_that_needed_approval(saver: InMemorySaver) -> None:
    drop, echo = DropTable(), Echo()
    llm = ScriptedLlmService(
        [
            ScriptedResponse.tools(("echo", {"text": "hi"}), ("drop_table", {"table": "orders"})),
            "Echoed, did not drop.",
        ]
    )
    agent = graph_agent(llm, tools=[echo, drop], checkpointer=saver)
    out = await collect(agent, "echo and drop")
    checkpoint = await agent.get_state("conv-1")
    assert checkpoint is not None and checkpoint.pending_approval is not None
    assert [c.name for c in checkpoint.pending_approval.request.calls] == ["drop_table"]
    assert echo.executions == []  # nothing of the batch runs before the decision
    _, deny = buttons(out)
    await collect(agent, deny)
    assert echo.executions == ["hi"] and drop.executions == []
    messages = await stored(agent)
    assert_valid(messages)
    results = {m.tool_call_id: m.content for m in messages if m.role == "tool"}
    assert sorted(results.values()) == sorted([DENIED_NOTE, "echo: hi"])


async def test_a_turn_can_pause_twice(saver: InMemorySaver) -> None:
    tool = DropTable()
    llm = ScriptedLlmService(
        [
            ScriptedResponse.tool("drop_table", {"table": "orders"}),
            ScriptedResponse.tool("drop_table", {"table": "invoices"}),
            "Both dropped.",
        ]
    )
    agent = graph_agent(llm, tools=[tool], checkpointer=saver)
    first, _ = buttons(await collect(agent, "drop both"))
    second, _ = buttons(await collect(agent, first))
    assert second != first and tool.executions == ["orders"]
    assert await stored(agent) == []  # still one turn, still open
    out = await collect(agent, second)
    assert tool.executions == ["orders", "invoices"]
    assert of_type(out, "text")[-1].content == "Both dropped."
    assert [m.role for m in await stored(agent)] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]


class ChangingGroups(MetadataUserResolver):
    """Ana loses the "user" group after she asked."""

    def __init__(self) -> None:
        self.demoted = False

    async def resolve_user(self, request_context: Any) -> Any:
        user = await super().resolve_user(request_context)
        return user.model_copy(update={"group_memberships": []}) if self.demoted else user


async def test_the_approving_request_is_checked_with_current_permissions(
    saver: InMemorySaver,
) -> None:
    """Identity and groups come from the request that approves, not from the checkpoint."""
    resolver = ChangingGroups()
    tool = DropTable()
    llm = script()
    agent = graph_agent(
        llm,
        tools=[tool],
        groups={"drop_table": ["user"]},
        checkpointer=saver,
        user_resolver=resolver,
    )
    approve, _ = buttons(await collect(agent, "drop the orders table"))
    resolver.demoted = True
    await collect(agent, approve)
    assert tool.executions == []
    assert "Permission denied" in llm.requests[-1].messages[-1].content


async def test_a_resumed_turn_sees_the_whole_conversation(saver: InMemorySaver) -> None:
    tool = DropTable()
    llm = ScriptedLlmService(
        [
            "Hello!",
            ScriptedResponse.tool("drop_table", {"table": "orders"}),
            "Dropped.",
        ]
    )
    agent = graph_agent(llm, tools=[tool], checkpointer=saver)
    await collect(agent, "hi")
    approve, _ = buttons(await collect(agent, "drop orders"))
    await collect(agent, approve)
    assert [m.content for m in llm.requests[-1].messages] == [
        "hi",
        "Hello!",
        "drop orders",
        "",
        "dropped orders",
    ]
    messages = await stored(agent)
    assert_valid(messages)
    assert [m.content for m in messages] == [
        "hi",
        "Hello!",
        "drop orders",
        "",
        "dropped orders",
        "Dropped.",
    ]


async def test_arguments_are_shown_only_to_an_admin_asker_privately(
    saver: InMemorySaver,
) -> None:
    agent, _ = paused_agent(saver)
    as_member = await collect(agent, "drop the orders table", context=as_user(ANA))
    assert [c.title for c in of_type(as_member, "card")] == ["Approval needed"]
    admin_agent, _ = paused_agent(InMemorySaver())
    as_admin = await collect(admin_agent, "drop the orders table", context=as_user(ADMIN))
    (arguments,) = [c for c in as_admin if getattr(c.rich_component, "title", "") == "Arguments"]
    assert arguments.audience == "requester"
    assert '"table": "orders"' in arguments.rich_component.content  # type: ignore[attr-defined]
