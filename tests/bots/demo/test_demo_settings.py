"""Demo settings, the LLM choice and the demo's users and groups."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from agent_core.conversations import MemoryConversationStore
from agent_core.users import RequestContext
from bots.demo.agent import DemoSettings, DemoUserResolver, build_demo_agent, build_llm_service
from bots.demo.model import DemoLlmService
from bots.serving import load_config


def test_the_built_in_agent_follows_the_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model settings (``[llm]``) reach the built-in agent; a key is never shown."""
    for name, value in {
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "ANTHROPIC_MODEL": "claude-test",
        "THREADLINE_DATA_DIR": str(tmp_path),
    }.items():
        monkeypatch.setenv(name, value)
    config = load_config(argparse.Namespace(command="dev"))
    assert config.model.uses_claude and config.state.data_dir == tmp_path
    assert "sk-ant-test" not in repr(config.model)
    monkeypatch.setenv("THREADLINE_SCRIPTED", "1")
    assert not load_config(argparse.Namespace(command="dev")).model.uses_claude


def test_without_a_key_the_scripted_model_is_used(tmp_path: Path) -> None:
    assert isinstance(build_llm_service(DemoSettings(data_dir=tmp_path)), DemoLlmService)


async def test_with_a_key_claude_is_used(tmp_path: Path) -> None:
    settings = DemoSettings(
        data_dir=tmp_path,
        anthropic_api_key="sk-ant-test",  # type: ignore[arg-type]
        anthropic_model="claude-test",
        anthropic_base_url="http://127.0.0.1:9",
    )
    service = build_llm_service(settings)
    assert type(service).__name__ == "AnthropicLlmService"
    assert service.model_name == "claude-test"


def test_stores_and_resolver_can_be_passed_in(tmp_path: Path) -> None:
    store = MemoryConversationStore()
    resolver = DemoUserResolver(DemoSettings())
    agent = build_demo_agent(
        DemoSettings(
            data_dir=tmp_path,
            use_scripted_model=True,
            conversation_store=store,
            user_resolver=resolver,
        )
    )
    assert agent.conversation_store is store and agent.user_resolver is resolver


async def test_registered_tools_by_group(tmp_path: Path) -> None:
    agent = build_demo_agent(DemoSettings(data_dir=tmp_path, use_scripted_model=True))
    resolver = DemoUserResolver(DemoSettings(admin_user_ids=["UA"]))

    async def tools_for(user_id: str) -> set[str]:
        ctx = RequestContext(
            metadata={"platform": "slack", "workspace_id": "T1", "user_id": user_id}
        )
        user = await resolver.resolve_user(ctx)
        return {s.name for s in await agent.tool_registry.get_schemas(user)}

    query_tools = {"run_sql", "visualize_data", "search_saved_correct_tool_uses", "refund_order"}
    assert await tools_for("U1") == query_tools
    assert await tools_for("UA") == query_tools | {"save_question_tool_args", "save_text_memory"}


async def test_resolver_scopes_users_by_workspace() -> None:
    resolver = DemoUserResolver(DemoSettings(admin_user_ids=["teams:tenant:AAD1"]))
    teams = RequestContext(
        metadata={
            "platform": "teams",
            "workspace_id": "tenant",
            "user_id": "AAD1",
            "user_name": "Ana",
        }
    )
    user = await resolver.resolve_user(teams)
    assert user.id == "teams:tenant:AAD1" and user.username == "Ana"
    assert user.metadata == {"workspace_id": "tenant"} and user.is_admin
    anonymous = await resolver.resolve_user(RequestContext())
    assert anonymous.id == "demo:local:demo-user" and anonymous.group_memberships == ["user"]
