"""Built-in commands and the starter UI."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agent_core import Agent, InMemoryAgentMemory, ScriptedLlmService, ToolContext

from .conftest import ADMIN, USER, collect, content, types_of


def _text(components: list) -> str:  # type: ignore[type-arg]
    return "\n".join(c.model_dump_json() for c in components)


async def test_help_for_user_and_admin(make_agent: Callable[..., Agent]) -> None:
    llm = ScriptedLlmService()
    user_help = _text(await collect(make_agent(llm, user=USER), "/help"))
    admin_help = _text(await collect(make_agent(llm, user=ADMIN), "/help"))
    assert "/help" in user_help and "/status" not in user_help
    assert "/status" in admin_help and "/delete" in admin_help
    assert llm.requests == []  # the LLM never sees commands


@pytest.mark.parametrize("command", ["/status", "/share abc"])
async def test_admin_commands_denied_to_users(
    make_agent: Callable[..., Agent], command: str
) -> None:
    out = await collect(make_agent(ScriptedLlmService(), user=USER), command)
    assert content(out)[-1].rich_component.title == "Access Denied"  # type: ignore[attr-defined]


async def test_status_for_admin(make_agent: Callable[..., Agent]) -> None:
    out = await collect(make_agent(ScriptedLlmService(name="claude-x"), user=ADMIN), "/status")
    assert "claude-x" in content(out)[-1].rich_component.content  # type: ignore[attr-defined]


async def test_memories_and_delete(make_agent: Callable[..., Agent]) -> None:
    memory = InMemoryAgentMemory()
    context = ToolContext(user=ADMIN, conversation_id="c", request_id="r", agent_memory=memory)
    await memory.save_tool_usage("top customers", "run_sql", {"sql": "select 1"}, context)
    note = await memory.save_text_memory("fiscal year starts in April", context)
    agent = make_agent(ScriptedLlmService(), user=ADMIN, agent_memory=memory)

    listing = _text(await collect(agent, "/memories"))
    assert "top customers" in listing and "fiscal year" in listing
    deleted = await collect(agent, f"/delete {note.memory_id}")
    assert content(deleted)[-1].rich_component.title == "Memory deleted"  # type: ignore[attr-defined]
    assert await memory.get_recent_text_memories(context) == []
    missing = await collect(agent, "/delete nope")
    assert content(missing)[-1].rich_component.title == "Memory not found"  # type: ignore[attr-defined]


async def test_unknown_command_is_a_clear_error(make_agent: Callable[..., Agent]) -> None:
    out = await collect(make_agent(ScriptedLlmService(), user=USER), "/frobnicate now")
    card = content(out)[-1].rich_component
    assert card.title == "Unknown command" and "/frobnicate" in card.content  # type: ignore[attr-defined]


async def test_starter_ui_for_empty_message(make_agent: Callable[..., Agent]) -> None:
    llm = ScriptedLlmService()
    out = await collect(make_agent(llm), "")
    assert types_of(out) == ["text", "button_group"]  # no status noise for the starter UI
    assert out[1].rich_component.buttons[0].action  # type: ignore[attr-defined]
    assert llm.requests == []
