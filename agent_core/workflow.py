"""Deterministic commands handled before the LLM (``/help``, ``/status``...) and the starter UI.

``try_handle`` returning ``should_skip_llm=True`` ends the turn with its components; the LLM
never sees the command.

A handler is given the agent that runs the turn (the spec's contract). Its parameter is
typed ``Any`` so that an override may annotate it as the class it works with (``Agent``,
``GraphAgent``, a subclass), and so that this module, whose ``DefaultWorkflowHandler`` every
``Agent`` starts with, does not import the ``Agent`` back. ``WorkflowAgent`` is what the
default handler uses of it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent_core.components import (
    ButtonGroupComponent,
    ButtonSpec,
    CardComponent,
    RichTextComponent,
    SimpleTextComponent,
    UiComponent,
)
from agent_core.components.text import StatusLevel
from agent_core.config import AgentConfig
from agent_core.context import ToolContext
from agent_core.conversations import Conversation
from agent_core.llm.base import LlmService
from agent_core.memory.access import MemoryReader
from agent_core.memory.base import AgentMemory, MemoryOwnership
from agent_core.tools.registry import ToolRegistry
from agent_core.users import User


class WorkflowAgent(Protocol):
    """The agent as ``DefaultWorkflowHandler`` uses it; every ``Agent`` is one."""

    @property
    def llm_service(self) -> LlmService: ...

    @property
    def tool_registry(self) -> ToolRegistry: ...

    @property
    def agent_memory(self) -> AgentMemory: ...

    @property
    def config(self) -> AgentConfig: ...

    def tool_context(
        self,
        user: User,
        *,
        conversation_id: str,
        request_id: str,
        request: Mapping[str, Any],
        question: str = "",
    ) -> ToolContext: ...


@dataclass
class WorkflowResult:
    """What a workflow did: ``components`` to show, and an optional ``conversation_mutation``
    the agent applies (and saves) before returning."""

    should_skip_llm: bool
    components: list[UiComponent] = field(default_factory=list)
    conversation_mutation: Callable[[Conversation], Awaitable[None]] | None = None


NOT_HANDLED = WorkflowResult(should_skip_llm=False)


class WorkflowHandler:
    """Override ``try_handle`` for commands and ``get_starter_ui`` for the empty-message view;
    ``agent`` is the agent running the turn (see the module docstring).

    >>> import asyncio
    >>> asyncio.run(WorkflowHandler().try_handle(None, User(id="u1"), None, "hi")).should_skip_llm
    False
    """

    async def try_handle(
        self, agent: Any, user: User, conversation: Conversation, message: str
    ) -> WorkflowResult:
        return NOT_HANDLED

    async def get_starter_ui(
        self, agent: Any, user: User, conversation: Conversation
    ) -> list[UiComponent] | None:
        return None


def _markdown(text: str) -> UiComponent:
    return UiComponent(
        rich_component=RichTextComponent(content=text, markdown=True, generated=False),
        simple_component=SimpleTextComponent(text=text),
    )


def _card(
    title: str, text: str, status: StatusLevel = "info", *, private: bool = False
) -> UiComponent:
    return UiComponent(
        rich_component=CardComponent(title=title, content=text, status=status, markdown=True),
        simple_component=SimpleTextComponent(text=f"{title}\n{text}"),
        audience="requester" if private else "everyone",
    )


def _marks(memory: MemoryOwnership, reader: MemoryReader) -> str:
    """How a listed memory stands: whose, who is offered it, how it was rated."""
    marks = ["yours" if reader.owns(memory) else "shared"]
    if reader.owns(memory):
        marks.append(
            "private"
            if memory.is_private
            else ("offered to everyone" if memory.audience == "scope" else "only you")
        )
    if memory.verdict != "unrated":
        marks.append(f"rated {memory.verdict}")
    return "(" + ", ".join(marks) + ")"


def _access_denied(command: str) -> WorkflowResult:
    return WorkflowResult(
        should_skip_llm=True,
        components=[
            _card(
                "Access Denied",
                f"`{command}` is only available to administrators. "
                "Ask your workspace admin if you need it.",
                "error",
            )
        ],
    )


DEFAULT_SUGGESTIONS = (
    "What can you do?",
    "Who are our top 5 customers by revenue?",
    "Show monthly revenue for the last year",
)


class DefaultWorkflowHandler(WorkflowHandler):
    """``/help``, ``/memories``, ``/delete <id>`` for everyone; ``/status`` and
    ``/share <id>`` for admins ("Access Denied" otherwise); unknown ``/commands`` get a clear
    error. The starter UI is a welcome card with suggested prompts as buttons.

    ``/memories`` lists what the asker may be offered (their own memories and those shared
    with the workspace, ``agent_core.memory.access``) and is shown to the asker alone;
    ``/delete`` removes the asker's own memories (an admin's: any); ``/share`` offers one
    memory to the whole workspace. ``status``: more lines for ``/status`` (the built-in
    agent's data mapping: which group runs as which database role).

    >>> DefaultWorkflowHandler(suggestions=["Hi"]).suggestions
    ['Hi']
    """

    MEMORY_COMMANDS = ("/memories", "/delete")
    ADMIN_COMMANDS = ("/status", "/share")
    ADMIN_TOOL_COMMANDS = ("/forget",)
    """Admin commands the model carries out with a tool (``/forget @person``: the
    ``forget_person`` tool of ``bots.forget_tool``, which waits for an admin's approval);
    anyone else is refused here, before the model."""

    def __init__(
        self,
        welcome_message: str | None = None,
        *,
        suggestions: Sequence[str] = DEFAULT_SUGGESTIONS,
        status: Sequence[Callable[[], list[str]]] = (),
    ) -> None:
        self.status = list(status)
        self.welcome_message = welcome_message or (
            "Hi! Ask me a question about your data in plain language and I'll query it, "
            "show the results and chart them. Type `/help` for commands."
        )
        self.suggestions = list(suggestions)

    async def try_handle(
        self, agent: Any, user: User, conversation: Conversation, message: str
    ) -> WorkflowResult:
        text = message.strip()
        if not text.startswith("/"):
            return NOT_HANDLED
        command, _, argument = text.partition(" ")
        command = command.lower()
        if command in ("/help", "/h"):
            return WorkflowResult(True, [_markdown(self._help_text(user))])
        if command in self.ADMIN_TOOL_COMMANDS:
            return NOT_HANDLED if user.is_admin else _access_denied(command)
        if command not in (*self.MEMORY_COMMANDS, *self.ADMIN_COMMANDS):
            return WorkflowResult(
                True,
                [
                    _card(
                        "Unknown command",
                        f"`{command}` is not a command I know. Type `/help`.",
                        "warning",
                    )
                ],
            )
        if command in self.ADMIN_COMMANDS and not user.is_admin:
            return _access_denied(command)
        # what these commands show reaches the asker alone, so the asker's private memories
        # may be listed too
        context: ToolContext = agent.tool_context(
            user,
            conversation_id=conversation.id,
            request_id="workflow",
            request={"is_private": True},
        )
        match command:
            case "/status":
                return WorkflowResult(True, [await self._status(agent, user)])
            case "/memories":
                return WorkflowResult(True, await self._memories(agent, context))
            case "/share":
                return WorkflowResult(True, [await self._share(agent, context, argument.strip())])
            case _:
                return WorkflowResult(True, [await self._delete(agent, context, argument.strip())])

    def _help_text(self, user: User) -> str:
        lines = [
            "**Threadline commands**",
            "- `/help` - show this help",
            "- `/memories` - what I remember for you (only you see the list)",
            "- `/delete <id>` - forget one of your memories",
            "- Ask anything in plain language, e.g. _" + self.suggestions[-1] + "_",
        ]
        if user.is_admin:
            lines += [
                "",
                "**Admin commands**",
                "- `/status` - model, tools and memory status",
                "- `/share <id>` - offer a memory to everyone in the workspace",
                "- `/forget @person` - erase a person's data (an admin approves it first)",
                "- `/delete <id>` works on anyone's memory",
            ]
        return "\n".join(lines)

    async def _status(self, agent: WorkflowAgent, user: User) -> UiComponent:
        tools = (await agent.tool_registry.offer(user)).schemas
        names = ", ".join(f"`{t.name}`" for t in tools) or "none"
        text = (
            f"- Model: `{agent.llm_service.model_name}`\n"
            f"- Tools available to you: {names}\n"
            f"- Max tool iterations: {agent.config.max_tool_iterations}\n"
            f"- Streaming: {'on' if agent.config.stream_responses else 'off'}"
        )
        for more in self.status:
            text += "\n\n" + "\n".join(more())
        return _card("Status", text, "success")

    async def _memories(self, agent: WorkflowAgent, context: ToolContext) -> list[UiComponent]:
        tool_memories = await agent.agent_memory.get_recent_memories(context, limit=10)
        text_memories = await agent.agent_memory.get_recent_text_memories(context, limit=10)
        if not tool_memories and not text_memories:
            return [_card("Memories", "No memories saved yet.", private=True)]
        reader = MemoryReader.of(context)
        lines = [
            f"- `{m.memory_id}` {m.tool_name}: _{m.question}_ {_marks(m, reader)}"
            for m in tool_memories
        ]
        lines += [f"- `{m.memory_id}` note: {m.content} {_marks(m, reader)}" for m in text_memories]
        ids = [m.memory_id for m in tool_memories] + [m.memory_id for m in text_memories]
        buttons = ButtonGroupComponent(
            buttons=[
                ButtonSpec(label=f"Delete {memory_id}", action=f"/delete {memory_id}")
                for memory_id in ids[:5]
                if memory_id
            ]
        )
        return [
            _card("Recent memories", "\n".join(lines), private=True),
            UiComponent(rich_component=buttons, audience="requester"),
        ]

    async def _delete(
        self, agent: WorkflowAgent, context: ToolContext, memory_id: str
    ) -> UiComponent:
        if not memory_id:
            return _card("Delete memory", "Usage: `/delete <memory id>`", "warning")
        memory = agent.agent_memory
        deleted = await memory.delete_by_id(context, memory_id) or await memory.delete_text_memory(
            context, memory_id
        )
        if deleted:
            return _card("Memory deleted", f"Deleted memory `{memory_id}`.", "success")
        return _card(
            "Memory not found", f"No memory with id `{memory_id}` that you may delete.", "warning"
        )

    async def _share(
        self, agent: WorkflowAgent, context: ToolContext, memory_id: str
    ) -> UiComponent:
        if not memory_id:
            return _card("Share memory", "Usage: `/share <memory id>`", "warning")
        if await agent.agent_memory.share(context, memory_id):
            return _card(
                "Memory shared", f"Memory `{memory_id}` is now offered to everyone.", "success"
            )
        return _card(
            "Memory not shared",
            f"No shareable memory with id `{memory_id}` (memories from direct messages and "
            "private answers stay with their owner).",
            "warning",
        )

    async def get_starter_ui(
        self, agent: Any, user: User, conversation: Conversation
    ) -> list[UiComponent] | None:
        buttons = ButtonGroupComponent(
            buttons=[ButtonSpec(label=s, action=s) for s in self.suggestions]
        )
        return [
            _markdown(self.welcome_message),
            UiComponent(
                rich_component=buttons,
                simple_component=SimpleTextComponent(text="Try: " + " | ".join(self.suggestions)),
            ),
        ]
