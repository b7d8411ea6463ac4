"""A budget holds across two ``threadline slack`` processes sharing one Redis (issue 28).

Two real processes of the CLI itself (each its own port, the test plays the load balancer),
configured by one ``threadline.toml``: the built-in agent on the real Anthropic client
against the fake Messages API (in this process) and a daily budget per person. The answer
process A gives uses the asker's budget up; process B refuses the next question with the
budget's sentence, and the usage both see is the one Redis holds.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

import aiohttp
import pytest

from adapters.slack.testing import FakeSlackApi
from agent_core.llm.testing import FakeAnthropic, Reply
from agent_core.state.redis_client import connect_redis
from agent_core.usage.ledger_redis import RedisUsageLedger
from tests.bots.slack.harness import add_users
from tests.e2e.slack_cluster import BotProcess, Cluster, SlackSender, bot_env, mention

pytestmark = pytest.mark.redis

REFUSAL = "You have used your daily AI budget of"


def threadline_toml(folder: Path, llm: FakeAnthropic) -> Path:
    path = folder / "threadline.toml"
    path.write_text(
        f"""
[llm]
api_key = "sk-ant-test"
base_url = "{llm.base_url}"
model = "claude-sonnet-5-5"

[[budgets.limits]]
scope = "person"
period = "day"
tokens = 19
"""
    )
    return path


async def test_a_budget_used_up_on_one_process_is_refused_on_the_other(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    async with FakeSlackApi() as fake, FakeAnthropic() as llm:
        add_users(fake)
        config = threadline_toml(tmp_path, llm)
        command = [sys.executable, "-m", "bots.cli", "slack", "--config", str(config)]
        bots = [
            BotProcess(name, command, bot_env(name, fake, redis_url, key_prefix, tmp_path))
            for name in ("a", "b")
        ]
        llm.queue(Reply.text("Within budget."))
        try:
            for bot in bots:
                await bot.start()
            async with aiohttp.ClientSession() as session:
                cluster = Cluster(fake, bots, SlackSender(session))
                await cluster.send.event(bots[0].port, mention("first", ts="100.0"), event_id="E1")
                await cluster.wait_for(
                    lambda f: any(m.text == "Within budget." for m in f.thread("C1", "100.0")),
                    "process a's answer",
                )
                await cluster.send.event(bots[1].port, mention("second", ts="200.0"), event_id="E2")
                await cluster.wait_for(
                    lambda f: REFUSAL in json.dumps([m.blocks for m in f.thread("C1", "200.0")]),
                    "process b's refusal",
                )
        finally:
            for bot in bots:
                await bot.stop()
        assert len(llm.requests) == 1  # process b never asked the model
        answered = [c for c in fake.calls if c.token == "xoxb-a" and c.method == "chat.postMessage"]
        refused = [c for c in fake.calls if c.token == "xoxb-b" and "200.0" in json.dumps(c.args)]
        assert answered and refused, "each process answered its own delivery"

    client = connect_redis(redis_url)
    try:
        today = dt.datetime.now(dt.UTC).date()
        ledger = RedisUsageLedger(client, key_prefix=f"{key_prefix}usage:")
        summary = await ledger.summary(today, today)
    finally:
        await client.aclose()
    assert summary.total.calls == 1
    assert summary.by["person"]["slack:T1:U1"].tokens.output == 7
