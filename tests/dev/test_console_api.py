"""The console's HTTP API: a turn's event stream carries the agent's components and what the
real Slack and Teams adapters delivered, with admin-only detail routed as each channel would.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from agent_core import InMemoryAgentMemory, ScriptedLlmService, ToolRegistry
from agent_core.agent import Agent
from agent_core.extensions.hooks import LifecycleHook
from agent_core.feedback import Feedback
from agent_core.state.testing import free_port
from agent_core.users import User
from bots.dev.app import ADAPTIVE_CARDS_JS, CONSOLE_KEY, MAX_MESSAGE, create_app
from bots.dev.identity import ConsoleUserResolver
from bots.dev.turns import ConsoleOptions
from tests.dev.conftest import ALEX, ANA, Console, demo_agent, persona
from tests.support.demo_shop import top_customer

QUESTION = "Who are our top customers by revenue?"
CARD = "application/vnd.microsoft.card.adaptive"


def card_texts(element: Any) -> str:
    """Every string inside a card (or an activity), for "does it show X" checks."""
    return json.dumps(element)


async def test_page_and_its_assets_are_served(console: Console) -> None:
    page = await console.client.get("/")
    assert page.status == 200
    assert "Threadline console" in await page.text()
    for name in ("app.js", "app.css", "blockkit.js", "teams.js", "markdown.js"):
        asset = await console.client.get(f"/static/{name}")
        assert asset.status == 200, name
    assert (await console.client.get("/static/..%2Fapp.py")).status == 404
    vendor = await console.client.get("/vendor/adaptivecards.js")
    assert vendor.status == 200  # Microsoft's renderer ships with the package
    assert await vendor.read() == ADAPTIVE_CARDS_JS.read_bytes()
    info = await (await console.client.get("/api/info")).json()
    assert info["scripted"] is True
    assert [p["user_id"] for p in info["personas"]] == ["U0ANA", "U0ALEX", "U0XE"]


async def test_an_answer_streams_to_slack_and_teams_in_a_dm(
    console: Console, data_dir: Path
) -> None:
    events = await console.ask(QUESTION)
    assert events.outcome == "done"
    texts = events.components("text")
    assert len(texts) > 5 and texts[0]["rich_component"]["streaming"] is True
    assert events.components("dataframe") and events.components("chart")

    slack_calls = [e["method"] for e in events.of("slack")]
    assert "chat.startStream" in slack_calls and "chat.stopStream" in slack_calls
    assert "assistant.threads.setStatus" in slack_calls
    messages = list(events.slack_messages().values())
    plan, answer = (m for m in messages if m["streamed"])  # the plan's stream comes first
    steps = {c["id"]: (c["title"], c["status"]) for c in plan["chunks"]}  # a DM: a timeline
    assert list(steps.values()) == [
        ("2 steps at once", "complete"),
        ("run_sql", "complete"),
        ("visualize_data", "complete"),
    ]
    assert plan["text"] == "" and not plan["streaming"]
    top, _ = top_customer(data_dir)  # the shop covers the two years before this month
    assert top in answer["text"] and answer["streaming"] is False
    # the sources line (issue 13: the tables the answer used), then the feedback buttons
    assert [b["type"] for b in answer["blocks"]] == ["section", "context_actions"]
    assert answer["blocks"][0]["text"]["text"].startswith(":bar_chart: Sources: `")
    assert any(b["type"] == "table" for m in messages for b in m["blocks"])
    [chart] = [b for m in messages for b in m["blocks"] if b["type"] == "data_visualization"]
    assert chart["title"] == "Top 10 customers by revenue"  # native, long names cut to fit
    kinds = [
        ("plan" if m is plan else "answer" if m["streamed"] else m["blocks"][-1]["type"])
        for m in sorted(messages, key=lambda m: float(m["ts"]))
    ]
    assert kinds[:4] == ["plan", "answer", "table", "data_visualization"]  # steps, text, data

    activities = [e["activity"] for e in events.teams_activities()]
    streamed = [a for a in activities if a["type"] == "typing" and a.get("entities")]
    kinds = [a["entities"][0]["streamType"] for a in streamed]
    assert kinds[0] == "informative" and "streaming" in kinds
    final = activities[-1]
    assert final["type"] == "message" and top in final["text"]
    assert final["channelData"]["feedbackLoop"] == {"type": "default"}
    cards = [a["content"] for a in final["attachments"] if a["contentType"] == CARD]
    assert "Table" in card_texts(cards) and "Image" in card_texts(cards)


async def test_admin_detail_is_private_in_a_channel(console: Console) -> None:
    events = await console.ask("Sales by category", persona(ALEX, "channel"))
    slack = list(events.slack_messages().values())
    private = [m for m in slack if m["ephemeral_to"]]
    assert private and {m["ephemeral_to"] for m in private} == {"U0ALEX"}
    assert all("arguments" in json.dumps(m["blocks"]) for m in private)
    assert not any("arguments" in json.dumps(m) for m in slack if not m["ephemeral_to"])

    teams = events.teams_activities()
    personal = [t for t in teams if t["route"] == "personal"]
    assert personal and all(t["private_to"] == "U0ALEX" for t in personal)
    assert "run_sql arguments" in card_texts(personal)
    public = [t for t in teams if t["route"] == "conversation"]
    assert not any("run_sql arguments" in card_texts(t) for t in public)
    assert {t["conversation_id"] for t in personal}.isdisjoint(
        {t["conversation_id"] for t in public}
    )


async def test_admin_detail_is_inline_in_a_dm(console: Console) -> None:
    events = await console.ask("Sales by category", persona(ALEX, "dm"))
    slack = list(events.slack_messages().values())
    assert not any(m["ephemeral_to"] for m in slack)
    assert any("run_sql arguments" in json.dumps(m["blocks"]) for m in slack)
    teams = events.teams_activities()
    assert all(t["route"] == "conversation" for t in teams)
    assert "run_sql arguments" in card_texts(teams[-1]["activity"])


async def test_a_user_in_a_channel_gets_no_admin_detail(console: Console) -> None:
    events = await console.ask("Sales by category", persona(ANA, "channel"))
    assert not [c for c in events.of("component") if c["audience"] == "requester"]
    assert not any(m["ephemeral_to"] for m in events.slack_messages().values())
    assert "arguments" not in json.dumps(events.teams_activities())
    teams_final = events.teams_activities()[-1]["activity"]
    assert "Laptops" in teams_final["text"]  # channels get the answer once, at the end


async def test_starter_ui_and_commands(console: Console) -> None:
    starter = await console.ask("")
    assert [c["rich_component"]["type"] for c in starter.of("component")] == [
        "text",
        "button_group",
    ]
    # in a DM (an assistant thread) Slack shows the questions as its suggested prompts
    [prompts] = [e for e in starter.of("slack") if e["op"] == "prompts"]
    assert prompts["prompts"][0] == {"title": QUESTION, "message": QUESTION}
    assert not any(
        b["type"] == "actions" for m in starter.slack_messages().values() for b in m["blocks"]
    )
    in_channel = await console.ask("", persona(ANA, "channel"), thread="1700000000.000200")
    buttons = [
        b
        for m in in_channel.slack_messages().values()
        for blk in m["blocks"]
        if blk["type"] == "actions"
        for b in blk["elements"]
    ]
    assert buttons[0]["value"] == QUESTION  # a channel has no suggested prompts: buttons
    assert not [e for e in in_channel.of("slack") if e["op"] == "prompts"]
    card = starter.teams_activities()[-1]["activity"]["attachments"][0]["content"]
    assert card["actions"][0]["data"] == {"threadline_action": QUESTION}

    user_help = await console.ask("/help")
    assert "Admin commands" not in json.dumps(user_help.of("component"))
    # a command's answer is not written by the model: no "AI generated" label (it had one)
    assert "AIGeneratedContent" not in json.dumps(user_help.teams_activities())
    answered = await console.ask(QUESTION, thread="1700000000.000300")
    assert "AIGeneratedContent" in json.dumps(answered.teams_activities()[-1])
    admin_help = await console.ask("/help", ALEX)
    assert "Admin commands" in json.dumps(admin_help.slack_messages())
    denied = await console.ask("/status")
    assert "Access Denied" in json.dumps(denied.teams_activities())


async def test_stop_cancels_the_running_turn(data_dir: Path) -> None:
    agent = demo_agent(data_dir, stream_delay=0.05)
    app = create_app(agent, options=ConsoleOptions(pace=0.02))
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        console = Console(client)
        started: list[str] = []
        stopped: list[Any] = []

        async def stop_once_text_streams(event: str, data: Any) -> None:
            if event == "turn" and data["state"] == "started":
                started.append(data["id"])
            answer_starts = (
                event == "slack"
                and data.get("method") == "chat.startStream"
                and (not data["args"].get("task_display_mode"))
            )  # the answer's, not the plan's
            if answer_starts and not stopped:
                response = await client.post(f"/api/turns/{started[0]}/stop")
                stopped.append(await response.json())

        events = await console.ask(QUESTION, on_event=stop_once_text_streams)
        assert stopped == [{"stopping": True, "state": "running"}]
        assert events.outcome == "stopped"
        plan, answer = (m for m in events.slack_messages().values() if m["streamed"])
        assert answer["text"].endswith("_(Stopped.)_") and not answer["streaming"]
        [block] = plan["blocks"]  # the plan was closed too, saying the turn was stopped
        assert block["title"] == "Stopped after 2 of 2 steps" and not plan["streaming"]
        full = "Together they account for"
        assert full not in answer["text"]
        # Teams too ends what it showed with the mark (it once kept the cut text unmarked)
        last = events.teams_activities()[-1]["activity"]
        assert last["type"] == "message" and last["text"].endswith("_(Stopped.)_")
        assert full not in last["text"]

        ana = User(id="console:local:U0ANA", group_memberships=["user"])
        stored = await agent.conversation_store.get_conversation(
            "console:local:D0CONSOLE:1700000000.000100", ana
        )
        assert stored is not None and "Stopped by the user" in stored.messages[-1].content
        again = await console.ask("Sales by category")
        assert again.outcome == "done"  # the conversation is still consistent
        assert (await client.post(f"/api/turns/{started[0]}/stop")).status == 200
        assert (await client.post("/api/turns/nope/stop")).status == 404


class FeedbackLog(LifecycleHook):
    def __init__(self) -> None:
        self.received: list[tuple[User, Feedback]] = []

    async def on_feedback(self, user: User, feedback: Feedback) -> None:
        self.received.append((user, feedback))


async def test_feedback_is_recorded_through_the_agent(agent: Agent, console: Console) -> None:
    log = FeedbackLog()
    agent.lifecycle_hooks.append(log)
    events = await console.ask(QUESTION)
    answer = next(m for m in events.slack_messages().values() if m["streamed"])
    response = await console.client.post(
        "/api/feedback",
        json={
            "message_id": answer["ts"],
            "positive": False,
            "channel": "slack",
            "thread_id": "1700000000.000100",
            "persona": ANA,
        },
    )
    assert response.status == 200
    [(user, feedback)] = log.received
    assert user.id == "console:local:U0ANA"
    assert feedback.conversation_id == "console:local:D0CONSOLE:1700000000.000100"
    assert (feedback.message_id, feedback.positive) == (answer["ts"], False)


async def test_a_failed_turn_shows_the_agents_error_card() -> None:
    agent = Agent(
        llm_service=ScriptedLlmService([RuntimeError("model exploded")]),
        tool_registry=ToolRegistry(),
        user_resolver=ConsoleUserResolver(),
        agent_memory=InMemoryAgentMemory(),
    )
    app = create_app(agent, options=ConsoleOptions(pace=0.02))
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        events = await Console(client).ask("hello", ALEX)
    assert events.outcome == "done"
    slack = json.dumps(list(events.slack_messages().values()))
    assert "Something went wrong while answering" in slack
    teams = events.teams_activities()[-1]["activity"]
    assert "Something went wrong while answering" in card_texts(teams)
    assert "model exploded" in card_texts(teams)  # the admin's detail, inline in a DM


async def test_a_page_that_goes_away_stops_its_turn_quietly(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A reader that leaves mid-answer stops the turn; the server logs no traceback for it
    (it once logged "Error handling request" with the connection's ``ClientConnectionResetError``).
    Served as ``threadline dev`` serves it: aiohttp's test server cancels handlers instead."""
    app = create_app(demo_agent(data_dir, stream_delay=0.05), options=ConsoleOptions(pace=0.02))
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        async with aiohttp.ClientSession() as session:
            response = await session.post(
                f"http://127.0.0.1:{port}/api/turns",
                json={"text": QUESTION, "thread_id": "1700000000.000700", "persona": ANA},
            )
            await response.content.readany()
            turn = app[CONSOLE_KEY].turns[response.headers["X-Turn-Id"]]
            response.close()
            assert turn.task is not None
            await asyncio.wait_for(asyncio.gather(turn.task, return_exceptions=True), 30)
        assert turn.state == "stopped"
    finally:
        await runner.cleanup()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


async def test_bad_requests_are_refused_in_words_the_page_shows(
    console: Console, caplog: pytest.LogCaptureFixture
) -> None:
    """A refused request says what is wrong, and the terminal logs it (it once answered
    ``bad request: String should have ...`` and logged nothing)."""
    client = console.client
    too_long = "x" * (MAX_MESSAGE + 1)
    cases: list[tuple[str, Any, dict[str, str], int, str]] = [
        ("/api/turns", "not json", {}, 400, "the request body is not JSON"),
        ("/api/turns", {"text": "hi", "thread_id": "../x"}, {}, 400, "thread_id:"),
        (
            "/api/turns",
            {"text": "hi", "thread_id": "t1", "persona": {"user_id": "<b>"}},
            {},
            400,
            "persona.user_id:",
        ),
        (
            "/api/turns",
            {"text": too_long, "thread_id": "t1"},
            {},
            400,
            f"the message is {MAX_MESSAGE + 1:,} characters long; the console takes at most",
        ),
        ("/api/feedback", {"message_id": "1", "thread_id": "t1"}, {}, 400, "positive:"),
        (
            "/api/turns",
            {"text": "hi", "thread_id": "t1"},
            {"Origin": "http://evil.example"},
            403,
            "cross-origin requests are refused",
        ),
        (
            "/api/turns",
            {"text": "hi", "thread_id": "t1"},
            {"Host": "evil.example"},
            403,
            "the console only answers on 127.0.0.1",
        ),
    ]
    for path, body, headers, status, words in cases:
        caplog.clear()
        kwargs: dict[str, Any] = {"data": body} if isinstance(body, str) else {"json": body}
        response = await client.post(path, headers=headers, **kwargs)
        assert response.status == status, (path, headers)
        assert (await response.json())["error"].startswith(words)
        assert [r.getMessage() for r in caplog.records] == [
            f"POST {path} refused ({status}): {(await response.json())['error']}"
        ]
    long_but_fine = await console.ask("y" * 9000)  # a pasted log: Slack takes 40,000
    assert long_but_fine.outcome == "done"
    forged = await client.post(
        "/slack/api/chat.postMessage",
        json={"channel": "C1", "text": "x"},
        headers={"Authorization": "Bearer xoxb-guess"},
    )
    assert (await forged.json()) == {"ok": False, "error": "invalid_auth"}


async def test_the_console_keeps_only_recent_turns(data_dir: Path) -> None:
    app = create_app(demo_agent(data_dir), options=ConsoleOptions(pace=0.0, keep_turns=2))
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        console = Console(client)
        for n in range(5):
            await console.ask("/help", thread=f"t{n}")
        assert len(app[CONSOLE_KEY].turns) <= 3


async def test_teams_targeted_messages_stay_in_the_conversation(data_dir: Path) -> None:
    options = ConsoleOptions(pace=0.02, teams_targeted=True)
    app = create_app(demo_agent(data_dir), options=options)
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        events = await Console(client).ask("Sales by category", persona(ALEX, "channel"))
    teams = events.teams_activities()
    targeted = [t for t in teams if t["route"] == "targeted"]
    assert targeted and all(t["private_to"] == "U0ALEX" for t in targeted)
    assert {t["conversation_id"] for t in teams} == {
        "19:console-channel@thread.tacv2;messageid=1700000000.000100"
    }
    assert "run_sql arguments" in card_texts(targeted)


async def test_custom_groups_decide_what_the_asker_may_do(console: Console) -> None:
    analyst = {"user_id": "U0SAM", "name": "Sam", "groups": ["analyst"], "place": "dm"}
    events = await console.ask(QUESTION, analyst)
    assert not events.components("dataframe")
    answer = events.components("text")[-1]["rich_component"]["content"]
    assert "don't have access to the `run_sql` tool" in answer


async def test_slacks_stop_message_appears_on_long_turns_and_goes_away(data_dir: Path) -> None:
    options = ConsoleOptions(pace=0.02, stop_button_after=0.0)
    app = create_app(demo_agent(data_dir, stream_delay=0.01), options=options)
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        events = await Console(client).ask(QUESTION)
    posts = [e for e in events.of("slack") if e["op"] in ("post", "delete")]
    stop = next(e for e in posts if "threadline_stop" in json.dumps(e["message"]["blocks"]))
    [button] = [
        el for b in stop["message"]["blocks"] if b["type"] == "actions" for el in b["elements"]
    ]
    assert button["value"] == events.turn_id
    deleted = [e["message"]["ts"] for e in posts if e["op"] == "delete"]
    assert stop["message"]["ts"] in deleted


async def test_only_the_pages_own_files_are_served(console: Console) -> None:
    """The page's files sit beside the Python modules: only .html/.js/.css are served."""
    for name in ("app.py", "package.json", "__init__.py", "node_modules"):
        assert (await console.client.get(f"/static/{name}")).status == 404, name


async def test_sources_show_their_query_to_an_admin_only(console: Console) -> None:
    """Issue 13: Slack's "Show query" asks the console (as the clicker now selected), the
    Teams citation carries the SQL only for an admin in a personal chat, and the developer
    pane never holds SQL its asker may not see."""
    thread = "1700000000.000300"
    events = await console.ask(QUESTION, persona(ANA, "channel"), thread=thread)
    _, answer = (m for m in events.slack_messages().values() if m["streamed"])  # plan, answer
    button = answer["blocks"][0]["accessory"]
    assert button["action_id"] == "threadline_show_query"
    [sources] = events.components("sources")
    assert all("SELECT" not in s["query"] for s in sources["rich_component"]["sources"])
    final = events.teams_activities()[-1]["activity"]
    [entity] = [e for e in final["entities"] if e.get("@type") == "Message"]
    assert entity["citation"] and "SELECT" not in json.dumps(entity)

    async def show(who: dict[str, Any]) -> str:
        response = await console.client.post(
            "/api/queries", json={"turn_id": button["value"], "thread_id": thread, "persona": who}
        )
        assert response.status == 200
        return json.dumps(await response.json())

    assert "SELECT" not in await show(persona(ANA, "channel"))
    assert "SELECT" in await show(persona(ALEX, "channel"))
    elsewhere = await console.client.post(
        "/api/queries",
        json={
            "turn_id": button["value"],
            "thread_id": "1700000000.000999",
            "persona": persona(ALEX, "channel"),
        },
    )
    assert "SELECT" not in json.dumps(await elsewhere.json())

    admin = await console.ask(QUESTION, ALEX, thread="1700000000.000400")
    final = admin.teams_activities()[-1]["activity"]
    [entity] = [e for e in final["entities"] if e.get("@type") == "Message"]
    assert "SELECT" in entity["citation"][0]["appearance"]["text"]


async def test_a_page_elsewhere_cannot_open_the_consoles_websocket(console: Console) -> None:
    """Regression (issue 22): the console's WebSocket endpoint (``/slack/socket``, the fake
    Slack's Socket Mode) skipped the Origin check the HTTP endpoints make: a browser page on
    any site could connect to it (a WebSocket upgrade is a GET, and browsers do not apply
    CORS to WebSockets)."""
    client = console.client
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        await client.ws_connect("/slack/socket", headers={"Origin": "http://evil.example"})
    assert refused.value.status == 403
    own = f"http://127.0.0.1:{client.port}"
    socket = await client.ws_connect("/slack/socket", headers={"Origin": own})
    assert (await socket.receive_json())["type"] == "hello"
    await socket.close()
