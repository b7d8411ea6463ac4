"""A profile's ``answers = "private"`` (issue 24 item 4): its answers reach the asker alone,
through the real Slack and Teams bots: Slack an ephemeral message in the thread, Teams a
targeted message or a 1:1 chat; the same question elsewhere is answered for everyone."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_core.state_factory import StateSettings, build_state
from bots.serving import Config, agent_factory, load_config
from tests.bots.slack.harness import running_bot
from tests.bots.teams.harness import MEMBER, teams_bot

APP = """
from agent_core import Agent, ScriptedLlmService, ToolRegistry

def agent():
    return Agent(llm_service=ScriptedLlmService(then="the-secret-answer"),
                 tool_registry=ToolRegistry())
"""
HR_CHANNEL = "19:hr@thread.tacv2"


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Config]:
    monkeypatch.chdir(tmp_path)
    for name in ("THREADLINE_APP", "ANTHROPIC_API_KEY", "REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "private_bot.py").write_text(APP, encoding="utf-8")
    (tmp_path / "threadline.toml").write_text(
        f'app = "{tmp_path / "private_bot.py"}:agent"\n'
        f'[[profiles]]\nname = "hr"\nanswers = "private"\nslack_channels = ["CHR"]\n'
        f'teams_channels = ["{HR_CHANNEL}"]\n',
        encoding="utf-8",
    )
    yield load_config(argparse.Namespace(command="slack", config=None, app=None))
    sys.modules.pop("threadline_app_private_bot", None)


def mention(channel: str, ts: str) -> dict[str, Any]:
    return {
        "type": "app_mention",
        "user": "U1",
        "text": "<@UBOT> my salary?",
        "ts": ts,
        "channel": channel,
    }


async def test_slack_a_private_profile_answers_ephemerally_in_the_thread(
    config: Config, tmp_path: Path
) -> None:
    def build(resolver: Any, state: Any) -> Any:
        return agent_factory(config, "slack")(state, resolver)

    async with running_bot(tmp_path, [], agent_factory=build) as h:
        await h.event(mention("CHR", "10.000100"))
        await h.idle()
        private = [c for c in h.fake.calls if "the-secret-answer" in json.dumps(c.args)]
        assert private and all(c.method == "chat.postEphemeral" for c in private)
        assert {(c.args["user"], c.args.get("thread_ts")) for c in private} == {("U1", "10.000100")}
        await h.event(mention("C1", "20.000100"))  # the default profile: for everyone
        await h.idle()
        public = [c for c in h.fake.calls if "the-secret-answer" in json.dumps(c.args)]
        assert any(
            c.method != "chat.postEphemeral" and c.args.get("channel") == "C1" for c in public
        )


async def test_teams_a_private_profile_answers_the_asker_alone(
    config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    def build(resolver: Any, settings: Any) -> Any:
        return agent_factory(config, "teams")(build_state(StateSettings(ephemeral=True)), resolver)

    async with teams_bot(monkeypatch, agent_factory=build) as bot:
        asked = bot.message("my salary?", kind="channel", user=MEMBER)
        asked["channelData"]["channel"] = {"id": HR_CHANNEL}
        asked["conversation"]["id"] = f"{HR_CHANNEL};messageid=1700000000009"
        await bot.post(asked)
        await bot.fake.wait_for(lambda c: "the-secret-answer" in json.dumps(c.body))
        carrying = [c for c in bot.fake.calls if "the-secret-answer" in json.dumps(c.body)]
        room = asked["conversation"]["id"]
        assert carrying and all(
            c.operation == "send_targeted" or c.conversation_id != room for c in carrying
        ), [(c.operation, c.conversation_id) for c in carrying]


REFUNDING_APP = """
from pydantic import BaseModel
from agent_core import Agent, ScriptedLlmService, ScriptedResponse, Tool, ToolRegistry, ToolResult

class RefundArgs(BaseModel):
    order: int

class Refund(Tool[RefundArgs]):
    name = "refund"
    description = "Refund an order"
    approval = "always"

    def get_args_schema(self):
        return RefundArgs

    async def execute(self, context, args):
        return ToolResult(success=True, result_for_llm=f"order {args.order} refunded-secretly")

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


async def test_slack_a_private_profile_asks_and_answers_an_approval_privately(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The approval a private profile's turn asks for is shown to the asker alone, and the
    turn resumed after the click answers them alone too (it once answered the thread)."""
    monkeypatch.chdir(tmp_path)
    for name in ("THREADLINE_APP", "ANTHROPIC_API_KEY", "REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "refunding_private_bot.py").write_text(REFUNDING_APP, encoding="utf-8")
    (tmp_path / "threadline.toml").write_text(
        f'app = "{tmp_path / "refunding_private_bot.py"}:agent"\n'
        '[[profiles]]\nname = "hr"\nanswers = "private"\nslack_channels = ["CHR"]\n',
        encoding="utf-8",
    )
    config = load_config(argparse.Namespace(command="slack", config=None, app=None))

    def build(resolver: Any, state: Any) -> Any:
        return agent_factory(config, "slack")(state, resolver)

    try:
        async with running_bot(tmp_path, [], agent_factory=build) as h:
            await h.event(mention("CHR", "30.000100"))
            await h.idle()
            [asked] = [m for m in h.fake.messages if "threadline_approval" in json.dumps(m.blocks)]
            assert asked.ephemeral_to == "U1"
            approval_id = next(
                e["value"] for b in asked.blocks for e in b.get("elements") or [] if "value" in e
            )
            await h.action(
                "threadline_approval:approve",
                approval_id,
                user="U1",
                channel="CHR",
                message_ts=asked.ts,
                thread_ts="30.000100",
                ephemeral=True,
            )
            await h.idle()
            said = [c for c in h.fake.calls if "refunded-secretly" in json.dumps(c.args)]
            assert said and all(c.method == "chat.postEphemeral" for c in said), [
                c.method for c in said
            ]
    finally:
        sys.modules.pop("threadline_app_refunding_private_bot", None)
