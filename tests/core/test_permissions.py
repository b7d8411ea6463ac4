"""Group-based permissions: tool access, UI features and who sees admin-only detail."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agent_core import (
    Agent,
    AgentConfig,
    InMemoryAuditLogger,
    ScriptedLlmService,
    ScriptedResponse,
    ToolRegistry,
    UiFeatures,
    User,
)
from agent_core.audit import AuditEventType
from tests.support.tools import EchoTool

from .conftest import ADMIN, OUTSIDER, USER, collect
from .harness import Recorder, RecordingHook


@pytest.mark.parametrize(
    ("groups", "user", "allowed"),
    [
        ([], OUTSIDER, True),  # empty list: everyone
        (["user"], USER, True),
        (["user"], ADMIN, True),
        (["admin"], USER, False),
        (["admin"], ADMIN, True),
        (["user"], OUTSIDER, False),
        (["finance", "admin"], User(id="f", group_memberships=["finance"]), True),
    ],
)
async def test_permission_matrix(groups: list[str], user: User, allowed: bool) -> None:
    registry = ToolRegistry()
    registry.register_local_tool(EchoTool(), groups)
    assert [s.name for s in await registry.get_schemas(user)] == (["echo"] if allowed else [])
    assert registry.can_use("echo", user) is allowed


async def test_denied_tool_never_runs_and_no_hook_sees_it(
    make_agent: Callable[..., Agent],
) -> None:
    """Regression: the reference ran before_tool hooks before the permission check."""
    log, tool, audit = Recorder(), EchoTool(), InMemoryAuditLogger()
    llm = ScriptedLlmService([ScriptedResponse.tool("echo", {"text": "secret"}), "ok"])
    agent = make_agent(
        llm,
        tools=[(tool, ["admin"])],
        user=USER,
        lifecycle_hooks=[RecordingHook(log)],
        audit_logger=audit,
    )
    components = await collect(agent, "run echo")
    assert tool.executions == []
    assert not [c for c in log.calls if "tool" in c]
    tool_message = llm.requests[1].messages[-1]
    assert tool_message.role == "tool" and "Permission denied" in tool_message.content
    assert not [c for c in components if c.rich_component.type.value == "status_card"]
    check = audit.of_type(AuditEventType.TOOL_ACCESS_CHECK)[0]
    assert check.details["access_granted"] is False


async def test_schemas_sent_to_llm_are_filtered(make_agent: Callable[..., Agent]) -> None:
    llm = ScriptedLlmService(["hi"])

    class AdminTool(EchoTool):
        name = "admin_echo"

    agent = make_agent(llm, tools=[(EchoTool(), ["user"]), (AdminTool(), ["admin"])], user=USER)
    await collect(agent, "hello")
    assert [t.name for t in llm.requests[0].tools or []] == ["echo"]


def _tool_turn() -> ScriptedLlmService:
    return ScriptedLlmService(
        [
            ScriptedResponse.tool("echo", {"text": "x"}, text="Let me check."),
            "All done.",
        ]
    )


async def test_admin_gets_private_detail_user_does_not(make_agent: Callable[..., Agent]) -> None:
    admin_view = await collect(make_agent(_tool_turn(), tools=[(EchoTool(), [])], user=ADMIN), "q")
    user_view = await collect(make_agent(_tool_turn(), tools=[(EchoTool(), [])], user=USER), "q")

    private = [c for c in admin_view if c.audience == "requester"]
    assert {c.ui_feature for c in private} == {"tool_arguments", "tool_invocation_message_in_chat"}
    assert not [c for c in user_view if c.audience == "requester"]
    assert not [c for c in user_view if c.ui_feature is not None]
    # the invocation text streamed to the user is taken back once it turns out to be one
    user_texts = [c.rich_component for c in user_view if c.rich_component.type.value == "text"]
    removed = [t for t in user_texts if t.lifecycle.value == "remove"]
    assert removed and removed[0].content == "Let me check."  # type: ignore[attr-defined]


async def test_tool_error_detail_is_private_to_admins(make_agent: Callable[..., Agent]) -> None:
    class Broken(EchoTool):
        async def execute(self, context: Any, args: Any) -> Any:
            raise RuntimeError("db password expired")

    def run(user: User) -> Any:
        llm = ScriptedLlmService([ScriptedResponse.tool("echo", {"text": "x"}), "sorry"])
        return collect(make_agent(llm, tools=[(Broken(), [])], user=user), "q")

    admin_view, user_view = await run(ADMIN), await run(USER)
    errors = [c for c in admin_view if c.ui_feature == "tool_error"]
    assert len(errors) == 1 and errors[0].audience == "requester"
    assert "db password expired" in errors[0].rich_component.message  # type: ignore[attr-defined]
    assert all("db password expired" not in c.model_dump_json() for c in user_view)


async def test_public_custom_feature_is_not_private(make_agent: Callable[..., Agent]) -> None:
    features = UiFeatures()
    features.register_feature("tool_arguments", [])  # everyone, so nothing private about it
    agent = make_agent(
        _tool_turn(),
        tools=[(EchoTool(), [])],
        user=USER,
        config=AgentConfig(ui_features=features),
    )
    args = [c for c in await collect(agent, "q") if c.ui_feature == "tool_arguments"]
    assert len(args) == 1 and args[0].audience == "everyone"


def test_ui_features_rules() -> None:
    features = UiFeatures()
    assert features.can_user_access_feature("tool_names", USER)
    assert not features.can_user_access_feature("tool_arguments", USER)
    assert features.can_user_access_feature("tool_arguments", ADMIN)
    assert not features.can_user_access_feature("no_such_feature", ADMIN)  # unknown: denied
    features.register_feature("beta", ["beta"])
    assert features.audience_of("beta") == "requester"
    assert not features.can_user_access_feature("beta", ADMIN)
    assert UiFeatures().feature_group_access is not features.feature_group_access
