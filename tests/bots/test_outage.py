"""``bots.outage``: what a process keeps while Redis is down, with both channels' answer
slots on their shipped fakes, and a real ``TurnQueue`` on a Redis the test stops."""

from __future__ import annotations

from pathlib import Path

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.context import ReplyTarget
from adapters.slack.slot import AnswerSlot as SlackSlot
from adapters.slack.slot import PostedMessages
from adapters.slack.testing import FakeSlackApi
from adapters.teams import activities
from adapters.teams.activities import ConversationRef
from adapters.teams.payloads import Activity
from adapters.teams.slot import AnswerSlot as TeamsSlot
from adapters.teams.slot import PostedMessage
from adapters.teams.testing import FakeBotConnector
from agent_core.state.testing import RedisServer
from agent_core.state_factory import StateSettings, build_state
from bots.outage import RecentDeliveries, record_when_back
from bots.teams.connector import ConnectorPool
from tests.adapters.teams.payloads import message

pytestmark = pytest.mark.redis


def test_recent_deliveries_forget_after_their_ttl_and_beyond_their_size() -> None:
    now = [0.0]
    recent = RecentDeliveries(ttl=10, keep=2, clock=lambda: now[0])
    assert [recent.first(k) for k in ("a", "a", "b")] == [True, False, True]
    now[0] = 11.0
    assert recent.first("a")  # expired
    recent.first("c"), recent.first("d")
    assert recent.first("a")  # pushed out by size


async def test_posts_made_while_redis_is_down_are_recorded_once_it_is_back(
    key_prefix: str, tmp_path: Path
) -> None:
    """The Slack slot and the Teams slot, recording into a real turn on a real Redis that
    stops and comes back with its data."""
    private_redis = RedisServer(tmp_path / "redis", persistent=True)
    private_redis.start()
    state = build_state(StateSettings(redis_url=private_redis.url, redis_prefix=key_prefix))
    try:
        await state.turns.enqueue("t", {"text": "q"})
        [delivery] = await state.turns.fetch("worker", 1, 1.0)

        async def record(progress: dict[str, object]) -> None:
            await state.turns.save_progress(delivery, progress)

        async with FakeSlackApi() as slack, FakeBotConnector() as teams:
            client = AsyncWebClient(token="xoxb-1", base_url=slack.base_url)
            slack_slot = SlackSlot(
                client,
                ReplyTarget("C1", "1.0", "T1", "U1"),
                on_posted=lambda p: record(p.as_progress()),
            )
            async with ConnectorPool() as pool:
                ref = ConversationRef.from_activity(
                    Activity.model_validate(message("q", service_url=teams.url))
                )
                teams_slot = TeamsSlot(
                    pool.get(teams.url), ref, on_posted=lambda m: record(m.as_progress())
                )
                private_redis.stop()
                posted = await client.chat_postMessage(channel="C1", thread_ts="1.0", text="x")
                await slack_slot.posted(str(posted["ts"]))
                await teams_slot.fill(activities.message(ref, "The answer."))
                assert slack_slot.unrecorded and teams_slot.unrecorded
                assert not await slack_slot.record_again()
                private_redis.start()
                assert await record_when_back(slack_slot, within=30, what="slack")
                assert await record_when_back(teams_slot, within=30, what="teams")
        start = await state.turns.begin(delivery, "worker")
        assert PostedMessages.from_progress(start.progress).ts == (str(posted["ts"]),)
        assert PostedMessage.from_progress(start.progress) == teams_slot.current
    finally:
        await state.aclose()
        private_redis.stop()
