"""Per-channel profiles through the real Slack bot: the channel chooses the agent, a denied
asker gets one refusal and nothing runs, and conversations never cross profiles."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_core.database.file_tables import FileTables
from agent_core.settings import ConfigError
from agent_core.state_factory import State, StateSettings, build_state
from agent_core.users import StaticUserResolver, User, UserResolver
from bots.files import SharedFiles
from bots.profiles import ProfileRouter
from bots.serving import agent_factory, load_config
from tests.bots.slack.harness import running_bot

APP = """
from agent_core import Agent, ScriptedLlmService, ToolRegistry

prompts = []

def answer(request):
    prompts.append(request.system_prompt or "")
    return "answered"

def agent():
    return Agent(llm_service=ScriptedLlmService(then=answer), tool_registry=ToolRegistry())
"""

CONFIG = """
app = "{app}:agent"

[[profiles]]
name = "finance"
slack_channels = ["C9"]
allowed_groups = ["analysts"]
instructions = "Amounts are in EUR."
"""


def args() -> argparse.Namespace:
    return argparse.Namespace(command="slack", config=None, app=None)


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    for name in ("THREADLINE_APP", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "profiled_bot.py").write_text(APP, encoding="utf-8")
    (tmp_path / "threadline.toml").write_text(
        CONFIG.format(app=tmp_path / "profiled_bot.py"), encoding="utf-8"
    )
    yield tmp_path
    sys.modules.pop("threadline_app_profiled_bot", None)


def mention(channel: str, user: str, text: str, ts: str) -> dict[str, Any]:
    return {
        "type": "app_mention",
        "user": user,
        "text": f"<@UBOT> {text}",
        "ts": ts,
        "channel": channel,
        "event_ts": ts,
    }


async def test_the_channel_chooses_the_profile_and_a_denied_asker_runs_nothing(
    folder: Path,
) -> None:
    config = load_config(args())

    def build(resolver: UserResolver, state: State) -> Any:
        return agent_factory(config, "slack")(state, resolver)

    async with running_bot(folder, [], agent_factory=build) as bot:
        prompts: list[str] = sys.modules["threadline_app_profiled_bot"].prompts
        assert isinstance(bot.agent, ProfileRouter)
        await bot.event(mention("C9", "U2", "revenue?", "1.0"))  # Bo is no analyst
        await bot.idle()
        [refusal] = bot.fake.thread("C9", "1.0")
        assert "not available to you here" in refusal.text and prompts == []

        await bot.event(mention("C9", "U1", "revenue?", "2.0"))  # Ana is an analyst
        await bot.event(mention("C1", "U1", "revenue?", "3.0"))  # the default profile
        await bot.idle()
        assert [m.text for m in bot.fake.thread("C9", "2.0")][-1] == "answered"
        assert [m.text for m in bot.fake.thread("C1", "3.0")] == ["answered"]
        assert "Amounts are in EUR." in prompts[0] and "Amounts are in EUR." not in prompts[1]

        ana = User(id="slack:T1:U1")
        state = bot.bot.state
        assert await state.conversations.get_conversation("slack:T1:C1:3.0", ana)
        assert await state.conversations.get_conversation("slack:T1:C9:2.0", ana) is None
        assert await state.conversations.get_conversation("profile:finance:slack:T1:C9:2.0", ana)


def test_two_profiles_claiming_one_channel_are_refused_at_start(
    folder: Path,
) -> None:
    (folder / "threadline.toml").write_text(
        textwrap.dedent("""
        [[profiles]]
        name = "finance"
        slack_channels = ["C9"]
        direct_messages = true
        [[profiles]]
        name = "sales"
        slack_channels = ["C9", "C7"]
        direct_messages = true
        [[profiles]]
        name = "sales"
    """),
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as raised:
        load_config(args())
    text = str(raised.value)
    assert "Slack channel C9 is claimed by profiles 'finance' and 'sales'" in text
    assert "direct messages is claimed by profiles 'finance' and 'sales'" in text
    assert "the name 'sales' is claimed by profiles 'sales' and 'sales'" in text


def test_a_profile_naming_a_tool_the_agent_lacks_stops_at_start(folder: Path) -> None:
    with (folder / "threadline.toml").open("a", encoding="utf-8") as file:
        file.write('tools = ["run_sql"]\n')
    config = load_config(args())
    state = build_state(StateSettings(ephemeral=True))
    with pytest.raises(ValueError, match="no tool named 'run_sql'"):
        agent_factory(config, "slack")(state, StaticUserResolver(User(id="u")))


def test_shared_files_add_query_files_only_where_tools_were_not_named(
    folder: Path, tmp_path: Path
) -> None:
    """A profile whose ``tools`` the configuration names gets no ``query_files`` on top
    (it once did: files reached a profile narrowed to other tools)."""
    with (folder / "threadline.toml").open("a", encoding="utf-8") as file:
        file.write("tools = []\n")
    config = load_config(args())
    state = build_state(StateSettings(ephemeral=True))
    router = agent_factory(config, "slack")(state, StaticUserResolver(User(id="u")))
    SharedFiles(FileTables(tmp_path / "files")).serve(router)
    default, finance = router.served_agents()
    # forget_person (admins' /forget, bots.forget_tool) is added where query_files is
    assert default.tool_registry.list_tool_names() == ["forget_person", "query_files"]
    assert finance.tool_registry.list_tool_names() == []


REFUNDING_APP = """
from pydantic import BaseModel
from agent_core import Agent, ScriptedLlmService, ScriptedResponse, Tool, ToolRegistry, ToolResult

runs = []

class RefundArgs(BaseModel):
    order: int

class Refund(Tool[RefundArgs]):
    name = "refund"
    description = "Refund an order"

    def get_args_schema(self):
        return RefundArgs

    async def execute(self, context, args):
        runs.append(args.order)
        return ToolResult(success=True, result_for_llm=f"order {args.order} refunded")

def answer(request):
    last = request.messages[-1]
    if last.role == "tool":
        return ScriptedResponse(text=f"Refund: {last.content}")
    return ScriptedResponse.tool("refund", {"order": 42})

def agent():
    registry = ToolRegistry()
    registry.register_local_tool(Refund(), access_groups=["user"])
    return Agent(llm_service=ScriptedLlmService(then=answer), tool_registry=registry)
"""

REFUNDING_CONFIG = """
app = "{app}:agent"

[tools.refund]
approval = "always"

[[profiles]]
name = "finance"
slack_channels = ["C9"]

[profiles.approvals.refund]
approval = "never"
"""


async def test_the_configuration_and_a_profile_decide_which_tools_wait(folder: Path) -> None:
    """``[tools.refund] approval = "always"`` makes a tool that never asked wait for a click;
    ``[profiles.approvals.refund]`` says otherwise in that profile's channel."""
    (folder / "refunding_bot.py").write_text(REFUNDING_APP, encoding="utf-8")
    (folder / "threadline.toml").write_text(
        REFUNDING_CONFIG.format(app=folder / "refunding_bot.py"), encoding="utf-8"
    )
    config = load_config(args())

    def build(resolver: UserResolver, state: State) -> Any:
        return agent_factory(config, "slack")(state, resolver)

    try:
        async with running_bot(folder, [], agent_factory=build) as bot:
            runs: list[int] = sys.modules["threadline_app_refunding_bot"].runs
            await bot.event(mention("C1", "U1", "refund order 42", "1.0"))
            await bot.idle()
            shown = json.dumps([m.blocks for m in bot.fake.thread("C1", "1.0")])
            assert "threadline_approval:approve" in shown and runs == []

            await bot.event(mention("C9", "U1", "refund order 42", "2.0"))
            await bot.idle()
            assert runs == [42]
            said = [m.text for m in bot.fake.thread("C9", "2.0")]
            assert said[-1] == "Refund: order 42 refunded"
            assert "threadline_approval" not in json.dumps(
                [m.blocks for m in bot.fake.thread("C9", "2.0")]
            )
    finally:
        sys.modules.pop("threadline_app_refunding_bot", None)
