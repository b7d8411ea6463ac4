"""Durable Teams turns in one process: a turn a dead process held is answered in place of
what it posted, the Stop card, proactive messages from another host, the per-user quota."""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from adapters.notices import INTERRUPTED, STOPPED
from adapters.teams import activities
from adapters.teams.activities import ConversationRef
from adapters.teams.context import asker_id, delivery_key, message_text, turn_key
from adapters.teams.payloads import Activity
from adapters.teams.testing import ConnectorCall, FakeBotConnector
from agent_core.llm.scripted import ScriptedResponse
from agent_core.state import MemoryTurnQueue
from agent_core.state.keyvalue import MemoryKeyValueStore
from agent_core.state_factory import StateSettings, build_state
from agent_core.users import UserResolver
from bots.serving import add_quota, agent_factory, load_config
from bots.teams.bot import TeamsBot
from bots.teams.connector import ConnectorPool
from bots.teams.settings import TeamsSettings
from tests.adapters.teams import payloads
from tests.bots.teams.harness import settings_for, teams_bot

Seed = Callable[[FakeBotConnector], Awaitable[None]]


class DeadProcesses:
    """Turns left behind by processes that died mid-answer, made through the queue's own
    API (the same calls a worker makes), on a clock the test moves."""

    def __init__(self) -> None:
        self.now = 0.0
        self.queue = MemoryTurnQueue(claim_after=30, clock=lambda: self.now)
        self.activity: dict[str, Any] = {}
        self.answer_id = ""

    def seed(self, kind: str, *, runs: int = 1, posted: str | None = None) -> Seed:
        """A turn for a question in a ``kind`` chat that ``runs`` workers started and
        abandoned; ``posted`` = what the last one had posted: ``"card"`` or ``"stream"``."""

        async def seed(fake: FakeBotConnector) -> None:
            self.activity = payloads.message("how many orders?", kind=kind, service_url=fake.url)
            await self.queue.enqueue(
                turn_key(self.activity),
                {"activity": self.activity, "text": message_text(self.activity)},
                dedupe_key=delivery_key(self.activity),
                owner=asker_id(self.activity),
            )
            (delivery,) = await self.queue.fetch("dead-1", 1, 0.1)
            await self.queue.begin(delivery, "dead-1")
            for run in range(2, runs + 1):
                self.now += 31
                (delivery,) = await self.queue.claim(f"dead-{run}", 1)
                await self.queue.begin(delivery, f"dead-{run}")
            if posted is not None:
                self.answer_id = await self._post(fake, posted)
                kind_of = "stream" if posted == "stream" else "message"
                await self.queue.save_progress(
                    delivery, {"answer_id": self.answer_id, "answer_kind": kind_of}
                )
            self.now += 31  # its lease ran out: the bot's worker claims it at start

        return seed

    async def _post(self, fake: FakeBotConnector, posted: str) -> str:
        ref = ConversationRef.from_activity(Activity.model_validate(self.activity))
        if posted == "stream":
            activity = activities.stream_informative(ref, "Working on it…", 1)
        else:
            activity = activities.message(ref, "Working on it…")
        async with ConnectorPool() as pool:
            return await pool.get(fake.url).reply(
                ref.conversation_id, ref.activity_id or "", activity
            )


def replies_to(calls: list[ConnectorCall], activity_id: str) -> list[ConnectorCall]:
    return [
        c
        for c in calls
        if c.operation == "reply_to_activity"
        and c.activity_id == activity_id
        and c.activity_type == "message"
    ]


async def test_a_turn_its_dead_process_started_is_answered_in_place_of_its_card(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dead = DeadProcesses()
    async with teams_bot(
        monkeypatch,
        ["There were 42 orders."],
        turn_queue=dead.queue,
        seed=dead.seed("groupChat", posted="card"),
    ) as bot:
        (card,) = replies_to(bot.fake.calls, dead.activity["id"])  # the dead run's
        final = await bot.final(count=2)
        assert final.operation == "update_activity" and final.activity_id == dead.answer_id
        assert final.text == "There were 42 orders."
        assert replies_to(bot.fake.calls, dead.activity["id"]) == [card]  # nothing new posted


async def test_a_turn_whose_dead_process_was_streaming_is_closed_with_the_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dead = DeadProcesses()
    async with teams_bot(
        monkeypatch,
        ["There were 42 orders."],
        turn_queue=dead.queue,
        seed=dead.seed("personal", posted="stream"),
    ) as bot:
        final = await bot.final()
        started = next(c for c in bot.fake.calls if c.stream_info)
        assert final.stream_info == {
            "type": "streaminfo",
            "streamType": "final",
            "streamId": dead.answer_id,
        }
        assert final.text == "There were 42 orders."
        created = [
            c
            for c in bot.fake.calls
            if c.operation == "reply_to_activity"
            and c.activity_type == "message"
            and not c.stream_info
        ]
        assert not created and started.status == 201


async def test_a_turn_that_never_started_posting_is_simply_answered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dead = DeadProcesses()
    async with teams_bot(
        monkeypatch, ["There were 42 orders."], turn_queue=dead.queue, seed=dead.seed("groupChat")
    ) as bot:
        final = await bot.final()
        assert final.operation == "reply_to_activity" and final.text == "There were 42 orders."
        assert bot.llm.requests[0].messages[-1].content == "how many orders?"


async def test_a_turn_that_keeps_killing_its_process_tells_the_user_in_place(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dead = DeadProcesses()
    async with teams_bot(
        monkeypatch,
        ["never sent"],
        turn_queue=dead.queue,
        seed=dead.seed("groupChat", runs=3, posted="card"),
    ) as bot:
        told = await bot.fake.wait_for(lambda c: c.operation == "update_activity")
        assert told.text == INTERRUPTED and told.activity_id == dead.answer_id
        await bot.host.turns.idle()
        assert not bot.llm.requests  # the fourth run does not try again
        assert bot.host.metrics.turns.labels(outcome="interrupted")._value.get() == 1


def stop_card(call: ConnectorCall) -> str | None:
    """The turn id of the Stop button in a message, if it carries one."""
    for attachment in (call.body or {}).get("attachments", []) if call.body else []:
        for action in attachment.get("content", {}).get("actions", []):
            if action.get("verb") == "threadline.stop":
                return str(action["data"]["threadline_stop"])
    return None


async def test_a_slow_group_answer_replaces_its_stop_card(monkeypatch: pytest.MonkeyPatch) -> None:
    async with teams_bot(
        monkeypatch, [ScriptedResponse(text="Done.", latency=0.4)], stop_button_after=0.05
    ) as bot:
        asked = bot.message("slow one", kind="groupChat")
        await bot.post(asked)
        card = await bot.fake.wait_for(lambda c: stop_card(c) is not None)
        assert card.activity_id == asked["id"]
        final = await bot.final(count=2)
        assert final.operation == "update_activity" and final.text == "Done."
        assert final.body["channelData"]["feedbackLoop"] == {"type": "default"}
        assert stop_card(final) is None
        assert len(replies_to(bot.fake.calls, asked["id"])) == 1  # the card, then in place


async def test_only_the_asker_can_stop_an_answer_with_its_stop_card(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    long = ScriptedResponse(text=" ".join(["word"] * 400), chunk_delay=0.02)
    async with teams_bot(monkeypatch, [long], stop_button_after=0.05) as bot:
        await bot.post(bot.message("a long one", kind="groupChat"))
        card = await bot.fake.wait_for(lambda c: stop_card(c) is not None)
        turn_id = stop_card(card)
        value = {
            "action": {
                "type": "Action.Execute",
                "verb": "threadline.stop",
                "data": {"threadline_stop": turn_id},
            }
        }
        other = await bot.post(
            bot.invoke(
                "adaptiveCard/action", value, kind="groupChat", user="aad-bo", user_name="Bo"
            )
        )
        assert other.status == 200
        response = await bot.post(bot.invoke("adaptiveCard/action", value, kind="groupChat"))
        assert response.status == 200 and (await response.json())["value"] == "Stopping."
        stopped = await bot.fake.wait_for(lambda c: c.operation == "update_activity")
        assert stopped.text == STOPPED
        await bot.host.turns.idle()
        assert bot.host.metrics.turns.labels(outcome="stopped")._value.get() == 1
        assert not [c for c in bot.fake.calls if c.text and "word word" in c.text]


async def test_another_host_messages_a_conversation_proactively(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Any process can message a conversation: its reference is in the shared records and
    the connector comes from botbuilder's factory, with no inbound request."""
    state = build_state(StateSettings(ephemeral=True))
    async with teams_bot(monkeypatch, ["Hello."], state=state) as bot:
        asked = bot.message("hi", kind="groupChat")
        await bot.post(asked)
        await bot.final()
        other = TeamsBot(bot.agent, settings_for(bot.fake), state=state)
        try:
            conversation = asked["conversation"]["id"]
            sent = await other.outbound.send(payloads.TENANT, conversation, "Report ready.")
            assert await other.outbound.send(payloads.TENANT, "19:unknown", "x") is None
        finally:
            await other.pool.close()
        call = await bot.fake.wait_for(lambda c: c.operation == "send_to_conversation")
        assert sent and call.conversation_id == conversation and call.text == "Report ready."
        assert call.headers["Authorization"].startswith("Bearer ")
        assert "replyToId" not in call.body and call.body["from"]["id"] == payloads.BOT_ID


class HeldReferences(MemoryKeyValueStore):
    """Records whose conversation references are saved only once ``release`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()

    async def set(self, key: str, value: Any, *, ttl: float | None = None) -> None:
        if key.startswith("teams:ref:"):
            await self.release.wait()
        await super().set(key, value, ttl=ttl)


async def test_the_reply_does_not_wait_for_the_conversation_reference(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A conversation heard from for the first time has its reference saved beside the
    reply: the answer is posted while the save is under way, and the turn records the
    message it posted (its first durable step) only once the reference is saved."""
    state = build_state(StateSettings(ephemeral=True))
    records = state.records = HeldReferences()
    async with teams_bot(monkeypatch, ["Hello."], state=state) as bot:
        asked = bot.message("hi", kind="personal")
        await bot.post(asked)
        # the reply's first post (its progress, a streamed chunk or the message) goes out
        # while the reference is not saved; the rest of it follows once it is
        posted = await bot.fake.wait_for(lambda c: c.operation == "reply_to_activity")
        assert posted.status in (200, 201)
        reference = f"teams:ref:{payloads.TENANT}:{asked['conversation']['id']}"
        assert await records.get(reference) is None
        records.release.set()
        await bot.final()
        await bot.host.turns.idle()  # the turn recorded its message: the reference is saved
        assert (await records.get(reference))["conversation_id"] == asked["conversation"]["id"]


async def test_redis_down_at_ingress_every_request_is_answered_and_the_user_told(
    monkeypatch: pytest.MonkeyPatch, private_redis: Any, key_prefix: str
) -> None:
    state = build_state(StateSettings(redis_url=private_redis.url, key_prefix=key_prefix))
    try:
        async with teams_bot(monkeypatch, ["fine"], state=state) as bot:
            private_redis.stop()
            asked = bot.message("anyone there?", kind="groupChat")
            assert (await bot.post(asked)).status == 201
            told = await bot.fake.wait_for(lambda c: c.activity_id == asked["id"])
            assert told.text == "Threadline is temporarily unavailable. Please try again shortly."
            value = {
                "action": {
                    "type": "Action.Execute",
                    "verb": "threadline.action",
                    "data": {"threadline_action": "weekly report"},
                }
            }
            click = await bot.post(bot.invoke("adaptiveCard/action", value))
            assert click.status == 200 and (await click.json())["value"] == told.text
            health = await bot.http.get("/healthz")
            assert health.status == 503 and (await health.json())["ok"] is False
            await bot.host.turns.idle()
            assert not bot.llm.requests
            assert bot.host.metrics.unavailable._value.get() == 2
    finally:
        await state.aclose()


async def test_the_per_user_quota_of_threadline_teams(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``threadline teams`` wiring: the demo agent on the state, with the quota hook."""
    monkeypatch.setenv("THREADLINE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("THREADLINE_SCRIPTED", "1")
    state = build_state(StateSettings(ephemeral=True))
    config = load_config(argparse.Namespace(command="teams"))

    def demo(resolver: UserResolver, settings: TeamsSettings) -> Any:
        agent = agent_factory(config, "teams")(state, resolver)
        add_quota(agent, state, settings.rate_limit)
        return agent

    async with teams_bot(monkeypatch, state=state, agent_factory=demo, rate_limit=1) as bot:
        for text in ("help", "help again"):
            await bot.post(bot.message(text, kind="groupChat"))
        first, second = await bot.final(), await bot.final(count=2)
        assert "sample shop database" in (first.text or "")
        refusal = json.dumps(second.body)
        assert "You have reached your limit of 1 messages per hour" in refusal


async def test_a_graceful_stop_completes_the_turns_it_answered(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Regression: shutting down right after a turn was answered left it pending (its
    completion was cancelled), so its conversation waited ``claim_after`` (30 s) elsewhere."""
    state = build_state(StateSettings(data_dir=tmp_path))
    try:
        async with teams_bot(monkeypatch, ["one", "two"], state=state) as bot:
            for text in ("first", "second"):
                await bot.post(bot.message(text, kind="groupChat"))
            await bot.final(count=2)
            await bot.host.turns.drain()  # as the app's shutdown does, the moment it is asked
            assert await state.turns.pending() == 0
    finally:
        await state.aclose()
