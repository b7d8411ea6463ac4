"""Web API calls per mention in busy Slack threads, within the limits Slack sets since 2025.

The fake Slack Web API (``adapters.slack.testing``) enforces what Slack enforces on apps
outside the Marketplace (``NON_MARKETPLACE``): one ``conversations.replies`` a minute per
workspace, 15 messages a read, 429 with ``Retry-After`` beyond. Three parts, each
against the anchor in the same run, a bare bolt ``AsyncApp`` that reads the thread on
every mention before it answers (as Slack's AI app templates do):

1. **A busy thread**: 40 messages by people, then ``--mentions`` mentions of the bot, each
   after a message another app posted there (an alert). Per mention: thread reads, 429s,
   all Web API calls (identity and place lookups and the status line not counted). Goal: 0 reads
   for a thread the bot already follows.
2. **A busy workspace**: ``--threads`` new threads, each 40 messages long, mention the bot
   within the same minute. Reads, 429s, and answers given with a partial view (told so).
3. **The ack of thread messages**, dispatched in process (signature check to bolt's ack),
   p50 over ``--dispatches`` against a bare bolt app's ack, with the state in memory and in
   Redis (a private ``redis-server``): a person's reply in a thread the bot does not follow
   (what ``message.channels`` delivers all day), another app's post there, and another app's
   post in a thread the bot follows. Redis round trips before the ack and in all, medians
   (``INFO commandstats``, read with a blocking client right after the ack, so nothing the
   bot does after the ack runs in between; a ``MULTI ... EXEC`` block is one round trip).

    .venv/bin/python benchmarks/slack_thread_calls.py [--mentions 10] [--threads 10]
                                                      [--dispatches 1000]

The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import redis as sync_redis  # noqa: E402
from _stats import result_line, summary_us  # noqa: E402
from slack_bolt.app.async_app import AsyncApp  # noqa: E402
from slack_bolt.request.async_request import AsyncBoltRequest  # noqa: E402
from slack_sdk.errors import SlackApiError  # noqa: E402
from slack_sdk.signature import SignatureVerifier  # noqa: E402
from slack_sdk.web.async_client import AsyncWebClient  # noqa: E402

from adapters.slack.testing import NON_MARKETPLACE, FakeSlackApi  # noqa: E402
from agent_core import (  # noqa: E402
    Agent,
    ScriptedLlmService,
    StaticUserResolver,
    ToolRegistry,
    User,
)
from agent_core.state.testing import RedisServer  # noqa: E402
from agent_core.state_factory import StateSettings, build_state  # noqa: E402
from bots.slack.bot import SlackBot  # noqa: E402
from bots.slack.settings import SlackSettings  # noqa: E402

SECRET = "bench-secret"
TOKEN = "xoxb-bench"
READS = "conversations.replies"
NOT_COUNTED = {
    "auth.test",
    "users.info",
    "usergroups.list",
    "conversations.info",  # is the channel shared with another organisation? (cached)
    "assistant.threads.setStatus",
}
EARLIER = 40
INSIDE_MULTI = {"multi", "rpush", "ltrim", "pexpire", "persist", "lrange"}


def signed(event: dict[str, Any], n: int) -> AsyncBoltRequest:
    body = json.dumps(
        {
            "team_id": "T1",
            "api_app_id": "A1",
            "type": "event_callback",
            "event_id": f"Ev{uuid.uuid4().hex}",
            "event_time": 1,
            "event": event,
        }
    )
    ts = str(int(time.time()))
    signature = SignatureVerifier(SECRET).generate_signature(timestamp=ts, body=body)
    headers = {
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": signature,
        "Content-Type": "application/json",
    }
    return AsyncBoltRequest(body=body, headers=headers)


def mention(ts: float, thread: float) -> dict[str, Any]:
    return {
        "type": "app_mention",
        "user": "U1",
        "text": "<@UBOT> what now?",
        "ts": f"{ts:.6f}",
        "thread_ts": f"{thread:.6f}",
        "channel": "C1",
    }


def person(ts: float, thread: float) -> dict[str, Any]:
    return {
        "type": "message",
        "channel_type": "channel",
        "channel": "C1",
        "user": "U2",
        "text": "lunch anyone?",
        "ts": f"{ts:.6f}",
        "thread_ts": f"{thread:.6f}",
    }


def app_post(ts: float, thread: float) -> dict[str, Any]:
    return {
        "type": "message",
        "subtype": "bot_message",
        "channel_type": "channel",
        "channel": "C1",
        "bot_id": "BPAGER",
        "username": "pager",
        "text": "ALERT: p99 2s",
        "ts": f"{ts:.6f}",
        "thread_ts": f"{thread:.6f}",
    }


def human_thread(fake: FakeSlackApi, thread: float) -> None:
    fake.replies[("C1", f"{thread:.6f}")] = [
        {"ts": f"{thread + n:.6f}", "user": "U2", "text": f"message {n}"} for n in range(EARLIER)
    ]


def build_bot(api_url: str, state_settings: StateSettings) -> SlackBot:
    agent = Agent(
        llm_service=ScriptedLlmService(then="Noted."),
        tool_registry=ToolRegistry(),
        user_resolver=StaticUserResolver(User(id="U1", group_memberships=["user"])),
    )
    settings = SlackSettings(
        bot_token=TOKEN,
        signing_secret=SECRET,
        api_url=api_url,
        stop_button_after=600,
        flush_interval=0,
    )
    return SlackBot(agent, settings, state=build_state(state_settings))


def build_reader(api_url: str) -> tuple[AsyncApp, list[str]]:
    """The anchor: reads the thread on every mention, then answers (429s are counted)."""
    app = AsyncApp(signing_secret=SECRET, client=AsyncWebClient(token=TOKEN, base_url=api_url))
    outcomes: list[str] = []

    @app.event("app_mention")
    async def answer(event: dict[str, Any], client: AsyncWebClient) -> None:
        thread = event.get("thread_ts") or event["ts"]
        try:
            await client.conversations_replies(channel=event["channel"], ts=thread, limit=200)
            outcomes.append("read")
        except SlackApiError:
            outcomes.append("429")
        await client.chat_postMessage(channel=event["channel"], thread_ts=thread, text="Noted.")

    @app.event("message")
    async def ignore() -> None:
        return None

    return app, outcomes


def counted(fake: FakeSlackApi) -> dict[str, int]:
    methods = Counter(c.method for c in fake.calls if c.method not in NOT_COUNTED)
    return {
        "reads": methods[READS],
        "rate_limited": len(fake.rate_limited),
        "web_api_calls": sum(methods.values()),
    }


async def dispatch(app: AsyncApp, event: dict[str, Any], n: int) -> int:
    started = time.perf_counter_ns()
    response = await app.async_dispatch(signed(event, n))
    took = time.perf_counter_ns() - started
    if response.status != 200:
        raise RuntimeError(f"dispatch failed: {response.status} {response.body}")
    return took


# --- 1 and 2: calls per mention -------------------------------------------------------------


async def busy_thread(mentions: int, ours: bool) -> dict[str, Any]:
    async with FakeSlackApi(limits=NON_MARKETPLACE) as fake:
        thread = 1_700_000_000.0
        human_thread(fake, thread)
        bot = build_bot(fake.base_url, StateSettings(ephemeral=True)) if ours else None
        app = bot.app if bot is not None else build_reader(fake.base_url)[0]
        if bot is not None:
            await bot.open()
        ts = thread + EARLIER
        reads_by_first = 0
        for n in range(mentions):
            await dispatch(app, app_post(ts, thread), n)
            await dispatch(app, mention(ts + 0.5, thread), n)
            ts += 1
            if bot is not None:
                await bot.idle()
            else:
                await fake.wait_for_call("chat.postMessage", n + 1, timeout=30)
            if n == 0:
                reads_by_first = len(fake.calls_to(READS))
        if bot is not None:
            await bot.close(timeout=5)
            await bot.state.aclose()
        figures = counted(fake)
        per_mention = {k: round(v / mentions, 2) for k, v in figures.items()}
        later = (figures["reads"] - reads_by_first) / max(mentions - 1, 1)
        return {**figures, "per_mention": per_mention, "reads_per_later_mention": round(later, 2)}


async def busy_workspace(threads: int, ours: bool) -> dict[str, Any]:
    async with FakeSlackApi(limits=NON_MARKETPLACE) as fake:
        starts = [1_700_000_000.0 + 1000 * n for n in range(threads)]
        for thread in starts:
            human_thread(fake, thread)
        bot = build_bot(fake.base_url, StateSettings(ephemeral=True)) if ours else None
        app = bot.app if bot is not None else build_reader(fake.base_url)[0]
        if bot is not None:
            await bot.open()
        for n, thread in enumerate(starts):
            await dispatch(app, mention(thread + EARLIER, thread), n)
        if bot is not None:
            await bot.idle()
            await bot.close(timeout=5)
            await bot.state.aclose()
        else:
            await fake.wait_for_call("chat.postMessage", threads, timeout=30)
        told = sum(
            any("I can" in (m.text or "") for m in fake.thread("C1", f"{t:.6f}")) for t in starts
        )
        return {**counted(fake), "answers": threads, "told_partial_view": told}


# --- 3. the ack ------------------------------------------------------------------------------


class RoundTrips:
    """Round trips Redis served, from ``INFO commandstats`` (a blocking client: nothing else
    in this process runs while it reads)."""

    def __init__(self, url: str) -> None:
        self._redis = sync_redis.Redis.from_url(url)

    def now(self) -> int:
        stats = self._redis.info("commandstats")
        calls = {name.removeprefix("cmdstat_"): s["calls"] for name, s in stats.items()}
        inside = sum(calls.get(name, 0) for name in INSIDE_MULTI)
        return sum(calls.values()) - calls.get("info", 0) - inside


async def ack_costs(
    dispatches: int, state_settings: StateSettings, redis_url: str | None
) -> dict[str, Any]:
    async with FakeSlackApi() as fake:
        bot = build_bot(fake.base_url, state_settings)
        bare, _ = build_reader(fake.base_url)
        await bot.open()
        followed = 1_650_000_000.0
        await dispatch(bot.app, mention(followed + 0.5, followed), 0)
        await bot.idle()
        trips = RoundTrips(redis_url) if redis_url else None
        idle_cost = 0  # waiting for the bot to be idle asks the queue once
        if trips is not None:
            start = trips.now()
            await bot.idle()
            idle_cost = trips.now() - start
        kinds: dict[str, Callable[[float], dict[str, Any]]] = {
            "person_unfollowed": lambda ts: person(ts, 1_600_000_000.0),
            "app_unfollowed": lambda ts: app_post(ts, 1_600_000_000.0),
            "app_followed": lambda ts: app_post(ts, followed),
        }
        samples: dict[str, list[int]] = {kind: [] for kind in [*kinds, "bare_bolt"]}
        trips_before: dict[str, list[int]] = {kind: [] for kind in kinds}
        trips_all: dict[str, list[int]] = {kind: [] for kind in kinds}
        ts = 1_700_000_000.0
        for n in range(-20, dispatches):  # the first 20 warm up
            for kind, event in kinds.items():
                ts += 0.001
                start = trips.now() if trips else 0
                took = await dispatch(bot.app, event(ts), n)
                acked = trips.now() if trips else 0
                await bot.idle()
                done = trips.now() if trips else 0
                if n >= 0:
                    samples[kind].append(took)
                    trips_before[kind].append(acked - start)
                    trips_all[kind].append(done - start - idle_cost)
            bare_took = await dispatch(bare, person(ts, 1_600_000_000.0), n)
            await asyncio.sleep(0)
            if n >= 0:
                samples["bare_bolt"].append(bare_took)
        kept = await bot.transcript.told("T1", "C1", f"{followed:.6f}", before_ts="9e12")
        await bot.close(timeout=5)
        await bot.state.aclose()
        result: dict[str, Any] = {kind: summary_us(ns) for kind, ns in samples.items()}
        bare_p50 = result["bare_bolt"]["p50_us"]
        for kind in kinds:
            result[kind]["ratio_to_bare_bolt"] = round(result[kind]["p50_us"] / bare_p50, 3)
            if trips is not None:
                # the median: the idle worker's own blocking read of the queue may land in
                # a dispatch's window now and then
                result[kind]["redis_round_trips_before_ack"] = statistics.median(trips_before[kind])
                result[kind]["redis_round_trips_in_all"] = round(
                    sum(trips_all[kind]) / len(trips_all[kind]), 2
                )
        result["app_posts_kept_in_followed_thread"] = len(kept)
        return result


def report(args: argparse.Namespace, results: dict[str, Any]) -> None:
    for part, label in (
        ("busy_thread", "mention in a busy thread"),
        ("busy_workspace", f"{args.threads} new threads in a minute"),
    ):
        ours, anchor = results[part]["threadline"], results[part]["reads_every_mention"]
        for name, figures in (("reads on every mention", anchor), ("Threadline", ours)):
            per = figures.get("per_mention", figures)
            extra = (
                f"  answers that said what they could not see {figures['told_partial_view']}"
                if "told_partial_view" in figures
                else f"  reads per mention once followed {figures['reads_per_later_mention']}"
            )
            print(
                f"{label:<26} {name:<23} reads {per['reads']:>5}  429s "
                f"{per['rate_limited']:>5}  Web API calls {per['web_api_calls']:>5}{extra}"
            )
    for backend, figures in results["ack"].items():
        bare = figures["bare_bolt"]["p50_us"]
        for kind in ("person_unfollowed", "app_unfollowed", "app_followed"):
            f = figures[kind]
            trips = (
                f" Redis round trips before ack {f['redis_round_trips_before_ack']},"
                f" in all {f['redis_round_trips_in_all']}"
                if "redis_round_trips_before_ack" in f
                else ""
            )
            print(
                f"ack p50, {backend:<6} {kind:<18} {f['p50_us']:>7} us (bare bolt {bare} us,"
                f" ratio {f['ratio_to_bare_bolt']}){trips}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mentions", type=int, default=10)
    parser.add_argument("--threads", type=int, default=10)
    parser.add_argument("--dispatches", type=int, default=1000)
    args = parser.parse_args()
    results: dict[str, Any] = {
        "busy_thread": {
            "reads_every_mention": asyncio.run(busy_thread(args.mentions, ours=False)),
            "threadline": asyncio.run(busy_thread(args.mentions, ours=True)),
        },
        "busy_workspace": {
            "reads_every_mention": asyncio.run(busy_workspace(args.threads, ours=False)),
            "threadline": asyncio.run(busy_workspace(args.threads, ours=True)),
        },
    }
    with tempfile.TemporaryDirectory() as directory:
        server = RedisServer(Path(directory))
        server.start()
        try:
            redis_settings = StateSettings(redis_url=server.url, key_prefix="bench:")
            results["ack"] = {
                "memory": asyncio.run(
                    ack_costs(args.dispatches, StateSettings(ephemeral=True), None)
                ),
                "redis": asyncio.run(ack_costs(args.dispatches, redis_settings, server.url)),
            }
        finally:
            server.stop()
    report(args, results)
    print(result_line("slack_thread_calls", **results))


if __name__ == "__main__":
    main()
