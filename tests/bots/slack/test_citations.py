"""Answers with sources in Slack (issue 13, item 3), end to end through the real bot: the
built-in ``run_sql`` tool on a real SQLite file, the answer's sources line (its tables, for
everyone) and "Show query", checked at the click from the signed payload's user."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from slack_sdk.models.blocks import Block

from adapters.slack.controls import SHOW_QUERY_ACTION
from adapters.slack.sources import GONE, NOT_ALLOWED
from agent_core import Agent, ScriptedLlmService, ToolRegistry, UserResolver
from agent_core.database import SqlAlchemyRunner
from agent_core.llm.scripted import ScriptedResponse
from agent_core.state_factory import State
from agent_core.tools.sql import RunSqlTool
from tests.agent_kind import agent_class
from tests.bots.slack.harness import AgentFactory, SlackHarness, running_bot

SQL = (
    "SELECT r.name, sum(s.revenue) AS revenue FROM sales s JOIN regions r ON r.id = s.region "
    "WHERE s.note = 'secret-filter' GROUP BY r.name"
)


def shop(tmp_path: Path) -> Path:
    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE regions (id INTEGER, name TEXT)")
        db.execute("CREATE TABLE sales (region INTEGER, revenue REAL, note TEXT)")
        db.executemany("INSERT INTO regions VALUES (?, ?)", [(1, "North"), (2, "South")])
        db.executemany(
            "INSERT INTO sales VALUES (?, ?, ?)",
            [(1, 10.0, "secret-filter"), (2, 5.0, "secret-filter")],
        )
    return path


def sql_agent(db: Path, *answers: str) -> AgentFactory:
    def build(resolver: UserResolver, state: State) -> Agent:
        tools = ToolRegistry()
        tools.register_local_tool(RunSqlTool(SqlAlchemyRunner.sqlite(db)), access_groups=["user"])
        script = []
        for answer in answers:
            script += [ScriptedResponse.tool("run_sql", {"sql": SQL}), answer]
        return agent_class()(
            llm_service=ScriptedLlmService(script),
            tool_registry=tools,
            user_resolver=resolver,
            agent_memory=state.memory,
            conversation_store=state.conversations,
        )

    return build


def mention(ts: str, user: str = "U1") -> dict[str, Any]:
    return {
        "type": "app_mention",
        "user": user,
        "text": "<@UBOT> revenue by region?",
        "ts": ts,
        "channel": "C1",
        "event_ts": ts,
    }


def dm(ts: str, user: str) -> dict[str, Any]:
    return {
        "type": "message",
        "channel_type": "im",
        "channel": "D1",
        "user": user,
        "text": "revenue by region?",
        "ts": ts,
        "client_msg_id": f"m{ts}",
    }


def answer_blocks(h: SlackHarness) -> list[dict[str, Any]]:
    """The final blocks of the latest answer (the call that carried its feedback buttons)."""
    finals = [
        call.args["blocks"]
        for call in h.fake.calls
        if "context_actions" in json.dumps(call.args.get("blocks") or [])
    ]
    blocks: list[dict[str, Any]] = json.loads(json.dumps(finals[-1]))
    return blocks


def sources_of(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    [block] = [b for b in blocks if "Sources" in json.dumps(b)]
    assert Block.parse(block).to_dict() == block  # a valid Block Kit block, as slack_sdk reads it
    return block


def ephemerals(h: SlackHarness, user: str) -> list[str]:
    return [
        json.dumps(call.args)
        for call in h.fake.calls_to("chat.postEphemeral")
        if call.args.get("user") == user
    ]


async def test_a_channel_answer_cites_its_tables_and_shows_the_query_only_to_an_admin(
    tmp_path: Path,
) -> None:
    async with running_bot(tmp_path, [], agent_factory=sql_agent(shop(tmp_path), "North.")) as h:
        await h.event(mention("100.000100"))
        await h.idle()
        blocks = answer_blocks(h)
        cited = sources_of(blocks)
        assert cited["type"] == "section"
        assert cited["text"]["text"] == ":bar_chart: Sources: `sales`, `regions` · 1 query · 2 rows"
        button = cited["accessory"]
        assert (button["action_id"], button["text"]["text"]) == (SHOW_QUERY_ACTION, "Show query")
        assert blocks[-1]["type"] == "context_actions"  # the feedback buttons stay last
        # the asker is not an admin: the SQL reached nobody, in no call
        assert "secret-filter" not in json.dumps([c.args for c in h.fake.calls])

        turn_id = button["value"]
        await h.action(
            SHOW_QUERY_ACTION, turn_id, user="U1", thread_ts="100.000100", message_ts="100.000200"
        )
        await h.idle()
        [refused] = ephemerals(h, "U1")
        assert NOT_ALLOWED.split(".")[0] in refused and "secret-filter" not in refused

        await h.action(
            SHOW_QUERY_ACTION,
            turn_id,
            user="UADMIN",
            thread_ts="100.000100",
            message_ts="100.000200",
        )
        await h.idle()
        [shown] = ephemerals(h, "UADMIN")
        assert "secret-filter" in shown and "```" in shown
        assert json.loads(shown)["thread_ts"] == "100.000100"
        for block in json.loads(shown)["blocks"]:
            assert Block.parse(block).to_dict() == block


async def test_a_forged_click_elsewhere_reaches_no_query(tmp_path: Path) -> None:
    """The button's value is readable by the whole channel: reusing it from another channel
    or thread (even as an admin) reads nothing, since the key comes from where the click is."""
    async with running_bot(tmp_path, [], agent_factory=sql_agent(shop(tmp_path), "North.")) as h:
        await h.event(mention("100.000100"))
        await h.idle()
        turn_id = sources_of(answer_blocks(h))["accessory"]["value"]
        for channel, thread in (("C2", "100.000100"), ("C1", "999.000100")):
            await h.action(
                SHOW_QUERY_ACTION,
                turn_id,
                user="UADMIN",
                channel=channel,
                thread_ts=thread,
                message_ts="1.0",
            )
        await h.action(
            SHOW_QUERY_ACTION, "not-a-turn", user="UADMIN", thread_ts="100.000100", message_ts="1.0"
        )
        await h.idle()
        told = ephemerals(h, "UADMIN")
        assert len(told) == 3 and all(GONE.split(".")[0] in t for t in told)
        assert "secret-filter" not in json.dumps([c.args for c in h.fake.calls])


async def test_in_a_dm_the_button_is_offered_to_an_admin_only(tmp_path: Path) -> None:
    factory = sql_agent(shop(tmp_path), "North.", "North again.")
    async with running_bot(tmp_path, [], agent_factory=factory) as h:
        await h.event(dm("200.000100", "U1"))
        await h.idle()
        plain = sources_of(answer_blocks(h))
        assert "accessory" not in plain and "`sales`" in plain["text"]["text"]

        await h.event(dm("300.000100", "UADMIN"))
        await h.idle()
        assert sources_of(answer_blocks(h))["accessory"]["action_id"] == SHOW_QUERY_ACTION


async def test_an_answer_without_data_has_no_sources_line(tmp_path: Path) -> None:
    async with running_bot(tmp_path, ["Hello!"]) as h:
        await h.event(mention("100.000100"))
        await h.idle()
        assert "Sources" not in json.dumps([c.args for c in h.fake.calls])


async def test_a_private_answer_cites_its_tables_after_its_text_to_the_asker_alone(
    tmp_path: Path,
) -> None:
    async with running_bot(tmp_path, [], agent_factory=sql_agent(shop(tmp_path), "North.")) as h:
        await h.command("private revenue by region?")
        await h.idle()
        private = [c.args for c in h.fake.calls_to("chat.postEphemeral")]
        assert {p["user"] for p in private} == {"U1"}
        texts = [json.dumps(p.get("blocks")) for p in private]
        answer = next(i for i, t in enumerate(texts) if "North." in t)
        line = next(i for i, t in enumerate(texts) if "Sources" in t)
        assert answer < line and "threadline_show_query" not in texts[line]
        assert not h.fake.calls_to("chat.postMessage")
        assert "secret-filter" not in json.dumps([c.args for c in h.fake.calls])
