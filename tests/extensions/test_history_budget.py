"""The default history budget (``AgentConfig.history_tokens`` -> ``TokenBudgetFilter``): a long
thread stays within the budget, whole turns leave first, and no tool call loses its result."""

from __future__ import annotations

import itertools
import random

from agent_core import (
    Agent,
    AgentConfig,
    InMemoryAgentMemory,
    LlmRequest,
    MemoryConversationStore,
    RequestContext,
    ScriptedLlmService,
    StaticUserResolver,
    TokenBudgetFilter,
    ToolCall,
    ToolRegistry,
    User,
)
from agent_core.conversations import Message
from agent_core.extensions.filters import estimated_tokens

ANA = User(id="ana", group_memberships=["user"])


def a_turn(n: int, *, tools: int, size: int) -> list[Message]:
    """A question, ``tools`` tool exchanges, then an answer; each text ``size`` characters."""
    turn = [Message(role="user", content=f"q{n} " + "x" * size)]
    for t in range(tools):
        call = ToolCall(id=f"c{n}-{t}", name="run_sql", arguments={"sql": "y" * size})
        turn.append(Message(role="assistant", content="", tool_calls=[call]))
        turn.append(Message(role="tool", content="z" * size, tool_call_id=call.id))
    turn.append(Message(role="assistant", content="a" * size))
    return turn


def tokens(messages: list[Message]) -> int:
    return sum(estimated_tokens(m) for m in messages)


def tool_exchanges_whole(messages: list[Message]) -> bool:
    calls = {c.id for m in messages for c in m.tool_calls or ()}
    results = {m.tool_call_id for m in messages if m.role == "tool"}
    return calls == results


async def test_a_200_message_thread_stays_within_the_budget_in_whole_turns() -> None:
    thread = [m for n in range(34) for m in a_turn(n, tools=2, size=400)]
    assert len(thread) == 204 and tokens(thread) > 20_000
    kept = await TokenBudgetFilter(8_000).filter_messages(thread)
    assert tokens(kept) <= 8_000
    assert kept[0].role == "user" and kept == thread[len(thread) - len(kept) :]
    assert tool_exchanges_whole(kept)


async def test_the_latest_turn_is_kept_whole_even_over_the_budget() -> None:
    latest = a_turn(2, tools=3, size=4_000)
    kept = await TokenBudgetFilter(1_000).filter_messages(a_turn(1, tools=1, size=100) + latest)
    assert kept == latest


async def test_any_history_is_cut_only_at_a_turn() -> None:
    """200 random threads (seeded): turns of 0-3 tool exchanges and texts of 1-800 characters,
    budgets of 200-6,000 tokens."""
    rng = random.Random(16)
    for _ in range(200):
        turns = [(rng.randint(0, 3), rng.randint(1, 800)) for _ in range(rng.randint(1, 30))]
        budget = rng.randint(200, 6_000)
        thread = [m for n, (t, size) in enumerate(turns) for m in a_turn(n, tools=t, size=size)]
        kept = await TokenBudgetFilter(budget).filter_messages(thread)
        assert kept == thread[len(thread) - len(kept) :] and kept[0].role == "user"
        assert tool_exchanges_whole(kept)
        latest = max(i for i, m in enumerate(thread) if m.role == "user")
        assert tokens(kept) <= budget or len(thread) - len(kept) == latest


async def test_the_kept_history_starts_at_the_same_message_for_many_turns() -> None:
    """What is left out grows in steps, so the model's prompt cache keeps serving the same
    beginning: while a thread grows by a quarter of the budget, the first kept message stays."""
    budget, firsts = TokenBudgetFilter(8_000), []
    thread: list[Message] = []
    for n in range(60):
        thread += a_turn(n, tools=1, size=200)  # about 200 tokens a turn
        kept = await budget.filter_messages(thread)
        firsts.append(kept[0].content[:4])
    changes = sum(1 for a, b in itertools.pairwise(firsts) if a != b)
    assert firsts[-1] != "q0 x" and changes <= 60 * 200 // 2_000 + 1


def recorder() -> tuple[ScriptedLlmService, list[LlmRequest]]:
    seen: list[LlmRequest] = []

    def answer(request: LlmRequest) -> str:
        seen.append(request)
        return "ok"

    return ScriptedLlmService(then=answer), seen


async def ask_in_a_long_thread(config: AgentConfig) -> LlmRequest:
    store = MemoryConversationStore()
    conversation = await store.create_conversation("t1", ANA, "")
    for n in range(50):
        for message in a_turn(n, tools=1, size=2_000):
            conversation.add_message(message)
    await store.update_conversation(conversation)
    llm, seen = recorder()
    agent = Agent(
        llm_service=llm,
        tool_registry=ToolRegistry(),
        config=config,
        user_resolver=StaticUserResolver(ANA),
        agent_memory=InMemoryAgentMemory(),
        conversation_store=store,
    )
    [_ async for _ in agent.send_message(RequestContext(), "and now?", conversation_id="t1")]
    return seen[-1]


async def test_the_agent_sends_a_long_thread_within_its_budget_by_default() -> None:
    request = await ask_in_a_long_thread(AgentConfig(history_tokens=10_000))
    assert sum(len(m.content) for m in request.messages) <= 10_000 * 4
    assert request.messages[0].role == "user" and request.messages[-1].content == "and now?"
    whole = await ask_in_a_long_thread(AgentConfig(history_tokens=None))
    assert len(whole.messages) == 50 * 4 + 1
    assert AgentConfig().history_tokens == 100_000
