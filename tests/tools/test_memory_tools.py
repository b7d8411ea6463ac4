"""Memory tools: search and save, with detail only for ``memory_detailed_results`` users."""

from __future__ import annotations

from agent_core.components import CardComponent, StatusBarUpdateComponent
from agent_core.context import ToolContext
from agent_core.memory.in_memory import InMemoryAgentMemory
from agent_core.tools.memory_tools import (
    SaveQuestionToolArgsArgs,
    SaveQuestionToolArgsTool,
    SaveTextMemoryArgs,
    SaveTextMemoryTool,
    SearchSavedCorrectToolUsesArgs,
    SearchSavedCorrectToolUsesTool,
)
from agent_core.users import User
from tests.tools.conftest import ContextFactory

TOP_SQL = "SELECT name, SUM(total) FROM orders GROUP BY 1 ORDER BY 2 DESC LIMIT 5"


async def _seed(memory: InMemoryAgentMemory, context: ToolContext) -> None:
    await memory.save_tool_usage("top 5 customers by revenue", "run_sql", {"sql": TOP_SQL}, context)
    await memory.save_tool_usage("monthly revenue trend", "run_sql", {"sql": "SELECT 2"}, context)


async def test_search_finds_paraphrases_and_gives_the_llm_the_arguments(
    make_context: ContextFactory, memory: InMemoryAgentMemory
) -> None:
    context = make_context()
    await _seed(memory, context)
    result = await SearchSavedCorrectToolUsesTool().execute(
        context,
        SearchSavedCorrectToolUsesArgs(question="which customers brought in the most revenue"),
    )
    assert result.success and result.metadata == {"results": 1}
    lines = result.result_for_llm.splitlines()
    assert lines[0] == "Found 1 similar past tool use(s), best first:"
    assert lines[1].startswith("1. (similarity 0.") and lines[1].endswith(
        "question: top 5 customers by revenue"
    )
    assert TOP_SQL in lines[2]


async def test_search_detail_is_private_to_users_with_the_feature(
    make_context: ContextFactory, memory: InMemoryAgentMemory
) -> None:
    admin = make_context(features=("memory_detailed_results",), groups=("admin",))
    await _seed(memory, admin)
    args = SearchSavedCorrectToolUsesArgs(question="top customers by revenue")

    detailed = await SearchSavedCorrectToolUsesTool().execute(admin, args)
    assert detailed.ui_component is not None
    assert detailed.ui_component.audience == "requester"
    assert detailed.ui_component.ui_feature == "memory_detailed_results"
    card = detailed.ui_component.rich_component
    assert isinstance(card, CardComponent)
    assert "top 5 customers by revenue" in card.content and TOP_SQL in card.content

    plain = await SearchSavedCorrectToolUsesTool().execute(make_context(), args)
    assert plain.ui_component is not None
    assert plain.ui_component.audience == "everyone" and plain.ui_component.ui_feature is None
    status = plain.ui_component.rich_component
    assert isinstance(status, StatusBarUpdateComponent)
    assert status.message == "Memory: 1 similar past tool use"
    assert TOP_SQL not in plain.ui_component.model_dump_json()


async def test_search_without_matches_says_so(make_context: ContextFactory) -> None:
    result = await SearchSavedCorrectToolUsesTool().execute(
        make_context(), SearchSavedCorrectToolUsesArgs(question="anything at all")
    )
    assert result.success and result.result_for_llm == "No similar past tool uses found."


async def test_search_can_filter_by_tool_and_threshold(
    make_context: ContextFactory, memory: InMemoryAgentMemory
) -> None:
    context = make_context()
    await _seed(memory, context)
    strict = await SearchSavedCorrectToolUsesTool().execute(
        context,
        SearchSavedCorrectToolUsesArgs(question="customers by revenue", similarity_threshold=1.0),
    )
    assert strict.metadata == {"results": 0}
    other_tool = await SearchSavedCorrectToolUsesTool().execute(
        context,
        SearchSavedCorrectToolUsesArgs(
            question="top 5 customers by revenue", tool_name_filter="visualize_data"
        ),
    )
    assert other_tool.metadata == {"results": 0}


async def test_save_question_tool_args_then_find_it(
    make_context: ContextFactory, memory: InMemoryAgentMemory
) -> None:
    context = make_context(features=("memory_detailed_results",))
    args = SaveQuestionToolArgsArgs(
        question="orders by status", tool_name="run_sql", args={"sql": "SELECT status"}
    )
    result = await SaveQuestionToolArgsTool().execute(context, args)
    assert result.success
    assert result.result_for_llm == "Saved: run_sql answers 'orders by status'."
    assert result.ui_component is not None and result.ui_component.audience == "requester"
    [hit] = await memory.search_similar_usage("orders by status", context)
    assert hit.memory.args == {"sql": "SELECT status"}


async def test_save_text_memory(make_context: ContextFactory, memory: InMemoryAgentMemory) -> None:
    context = make_context()
    result = await SaveTextMemoryTool().execute(
        context, SaveTextMemoryArgs(content="Revenue excludes cancelled orders.")
    )
    assert result.success
    [note] = await memory.get_recent_text_memories(context)
    assert result.metadata == {"memory_id": note.memory_id}
    assert result.ui_component is not None
    assert isinstance(result.ui_component.rich_component, StatusBarUpdateComponent)


async def test_tools_fail_cleanly_without_memory() -> None:
    context = ToolContext(user=User(id="u"), conversation_id="c", request_id="r")
    for tool, args in [
        (SearchSavedCorrectToolUsesTool(), SearchSavedCorrectToolUsesArgs(question="q")),
        (SaveTextMemoryTool(), SaveTextMemoryArgs(content="x")),
        (
            SaveQuestionToolArgsTool(),
            SaveQuestionToolArgsArgs(question="q", tool_name="t", args={}),
        ),
    ]:
        result = await tool.execute(context, args)  # type: ignore[attr-defined]
        assert result.success is False and result.metadata["error_type"] == "no_memory"
