"""Memory tools: let the LLM look up and save what worked before.

* ``search_saved_correct_tool_uses``: past questions similar to this one and the tool
  arguments that answered them (few-shot examples for writing SQL).
* ``save_question_tool_args``: remember a question -> tool -> arguments that worked.
* ``save_text_memory``: remember a fact (business rule, schema hint).

Users with the ``memory_detailed_results`` UI feature see what was found or saved in a card
marked ``audience="requester"`` (delivered only to them); everyone else gets a one-line
status update.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from agent_core.components import (
    CardComponent,
    SimpleTextComponent,
    StatusBarUpdateComponent,
    UiComponent,
)
from agent_core.config import UiFeature
from agent_core.context import ToolContext
from agent_core.memory.base import ToolMemorySearchResult
from agent_core.tool_contract import Tool, ToolResult

DETAIL_FEATURE = UiFeature.MEMORY_DETAILED_RESULTS.value


def _sees_details(context: ToolContext) -> bool:
    return DETAIL_FEATURE in context.metadata.get("ui_features_available", ())


def memory_component(context: ToolContext, summary: str, title: str, detail: str) -> UiComponent:
    """A detail card for users with ``memory_detailed_results``, else a status line."""
    if _sees_details(context):
        return UiComponent(
            rich_component=CardComponent(title=title, content=detail, markdown=True),
            simple_component=SimpleTextComponent(text=f"{title}\n{detail}"),
            audience="requester",
            ui_feature=DETAIL_FEATURE,
        )
    return UiComponent(
        rich_component=StatusBarUpdateComponent(status="success", message=summary),
        simple_component=SimpleTextComponent(text=summary),
    )


def _no_memory() -> ToolResult:
    return ToolResult(
        success=False,
        result_for_llm="Agent memory is not configured, so nothing can be searched or saved.",
        error="no agent memory",
        metadata={"error_type": "no_memory"},
    )


def _args_text(args: dict[str, Any]) -> str:
    return json.dumps(args, ensure_ascii=False, default=str)


class SearchSavedCorrectToolUsesArgs(BaseModel):
    question: str = Field(min_length=1, description="The question to find similar ones for.")
    limit: int = Field(default=5, ge=1, le=20, description="How many results at most.")
    similarity_threshold: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="Minimum similarity in [0, 1]: 0.7 close paraphrases, 0.5 related ones.",
    )
    tool_name_filter: str | None = Field(default=None, description="Only this tool's uses.")


class SearchSavedCorrectToolUsesTool(Tool[SearchSavedCorrectToolUsesArgs]):
    """``search_saved_correct_tool_uses``: similar past questions and the arguments that
    answered them, best first.

    >>> SearchSavedCorrectToolUsesTool().get_schema().name
    'search_saved_correct_tool_uses'
    """

    name = "search_saved_correct_tool_uses"
    description = (
        "Search memory for past questions similar to this one and the tool arguments (e.g. "
        "SQL) that answered them correctly. Use before writing a new query."
    )

    def get_args_schema(self) -> type[SearchSavedCorrectToolUsesArgs]:
        return SearchSavedCorrectToolUsesArgs

    async def execute(
        self, context: ToolContext, args: SearchSavedCorrectToolUsesArgs
    ) -> ToolResult:
        if context.agent_memory is None:
            return _no_memory()
        hits = await context.memory.search_similar_usage(
            args.question,
            context,
            limit=args.limit,
            similarity_threshold=args.similarity_threshold,
            tool_name_filter=args.tool_name_filter,
        )
        summary = f"Memory: {len(hits)} similar past tool use{'' if len(hits) == 1 else 's'}"
        return ToolResult(
            success=True,
            result_for_llm=_hits_for_llm(hits),
            ui_component=memory_component(context, summary, summary, _hits_markdown(hits)),
            metadata={"results": len(hits)},
        )


def _hits_for_llm(hits: list[ToolMemorySearchResult]) -> str:
    if not hits:
        return "No similar past tool uses found."
    lines = [f"Found {len(hits)} similar past tool use(s), best first:"]
    for hit in hits:
        memory = hit.memory
        verified = ", verified by a thumbs-up" if memory.verdict == "good" else ""
        lines.append(
            f"{hit.rank}. (similarity {hit.similarity_score:.2f}{verified}) question: "
            f"{memory.question}\n"
            f"   tool: {memory.tool_name}; args: {_args_text(memory.args)}"
        )
    return "\n".join(lines)


def _hits_markdown(hits: list[ToolMemorySearchResult]) -> str:
    if not hits:
        return "_Nothing similar found._"
    return "\n".join(
        f"{h.rank}. **{h.memory.question}** ({h.similarity_score:.2f}) -> `{h.memory.tool_name}`"
        f"\n```\n{_args_text(h.memory.args)}\n```"
        for h in hits
    )


class SaveQuestionToolArgsArgs(BaseModel):
    question: str = Field(min_length=1, description="The question that was answered.")
    tool_name: str = Field(min_length=1, description="The tool that answered it.")
    args: dict[str, Any] = Field(description="The arguments that produced the right answer.")


class SaveQuestionToolArgsTool(Tool[SaveQuestionToolArgsArgs]):
    """``save_question_tool_args``: remember that ``tool_name(args)`` answered ``question``.

    >>> SaveQuestionToolArgsTool().get_schema().parameters["required"]
    ['question', 'tool_name', 'args']
    """

    name = "save_question_tool_args"
    description = (
        "Remember a question together with the tool and arguments that answered it correctly, "
        "so similar questions later can reuse them."
    )

    def get_args_schema(self) -> type[SaveQuestionToolArgsArgs]:
        return SaveQuestionToolArgsArgs

    async def execute(self, context: ToolContext, args: SaveQuestionToolArgsArgs) -> ToolResult:
        if context.agent_memory is None:
            return _no_memory()
        await context.memory.save_tool_usage(args.question, args.tool_name, args.args, context)
        detail = f"**{args.question}** -> `{args.tool_name}`\n```\n{_args_text(args.args)}\n```"
        return ToolResult(
            success=True,
            result_for_llm=f"Saved: {args.tool_name} answers {args.question!r}.",
            ui_component=memory_component(
                context, "Saved to memory", "Memory: saved a tool use", detail
            ),
        )


class SaveTextMemoryArgs(BaseModel):
    content: str = Field(
        min_length=1, max_length=4000, description="The fact to remember, in one or two lines."
    )


class SaveTextMemoryTool(Tool[SaveTextMemoryArgs]):
    """``save_text_memory``: remember a fact (business rule, schema hint, definition).

    >>> SaveTextMemoryTool().get_schema().name
    'save_text_memory'
    """

    name = "save_text_memory"
    description = (
        "Remember a fact for future conversations, such as a business rule, "
        "a definition or a hint about the data."
    )

    def get_args_schema(self) -> type[SaveTextMemoryArgs]:
        return SaveTextMemoryArgs

    async def execute(self, context: ToolContext, args: SaveTextMemoryArgs) -> ToolResult:
        if context.agent_memory is None:
            return _no_memory()
        saved = await context.memory.save_text_memory(args.content, context)
        return ToolResult(
            success=True,
            result_for_llm=f"Saved text memory {saved.memory_id}.",
            ui_component=memory_component(
                context, "Saved to memory", "Memory: saved a note", f"> {args.content}"
            ),
            metadata={"memory_id": saved.memory_id},
        )
