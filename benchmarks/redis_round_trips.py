"""Redis round trips per turn of a real ``threadline slack`` process, counted by the server.

The real command (``threadline slack --app examples/weather.py:agent``, its state on a
private ``redis-server``) answers signed Slack events sent over HTTP by this process, which
also runs the fake Slack Web API (``adapters.slack.testing``) the bot replies to. Redis
``MONITOR`` sees every command: a command a client sends is one round trip (a Lua script
is one, a ``MULTI ... EXEC`` block is one), the commands a script runs are counted apart.

Turns run one at a time (each after the previous one completed: nothing is amortised over
concurrent turns); a turn ends when its entry leaves the turn stream (the ``XDEL`` its
completion script runs). Each kind is measured twice, on two bots:

* ``warm``: the defaults, turns back to back, so the caches in front of Redis (the asker's
  identity, kept 30 s in the process; memory's change log, followed at most every 0.5 s)
  answer most reads;
* ``cold``: the same bot with those caches off (``[slack] identity_local_ttl = 0``,
  ``[state] memory_refresh_interval = 0``): what a turn costs in a quiet workspace, where a
  person's turns are minutes apart and every such cache has expired.

Three kinds of turn:

* ``mention``: an ``app_mention`` opening a new thread, answered with text;
* ``follow_up``: a plain message in a thread the bot is in, answered with text;
* ``tool``: a mention asking for the weather: one tool call, then the answer.

Also: the round trips before the ack (from the request sent to Slack's ``200``), and the
anchor, a bare bolt ``AsyncApp`` server (which records nothing: 0). The figures are
medians over ``--rounds`` rounds of ``--turns`` turns of each kind.

    .venv/bin/python benchmarks/redis_round_trips.py [--turns 20] [--rounds 3]

The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import aiohttp  # noqa: E402
from _redis_monitor import Monitor  # noqa: E402
from _stats import result_line  # noqa: E402
from slack_sdk.signature import SignatureVerifier  # noqa: E402

from adapters.slack.testing import Call, FakeSlackApi  # noqa: E402
from agent_core.state.testing import RedisServer, free_port  # noqa: E402

SECRET = "bench-secret"
TOKEN = "xoxb-bench"
GOAL = 4
KINDS = ("mention", "follow_up", "tool")


def signed(body: bytes) -> dict[str, str]:
    ts = str(int(time.time()))
    return {
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": SignatureVerifier(SECRET).generate_signature(timestamp=ts, body=body),
        "Content-Type": "application/json",
    }


def event(n: int, kind: str, thread: str) -> bytes:
    """The ``n``-th event: a mention opening thread ``thread``, or a follow-up in it."""
    ts = f"{1_700_000_000 + n}.000100"
    text = {
        "mention": "<@UBOT> hello",
        "follow_up": "and then?",
        "tool": "<@UBOT> Weather in Lisbon?",
    }[kind]
    body: dict[str, Any] = {
        "type": "app_mention" if kind != "follow_up" else "message",
        "user": "U1",
        "text": text,
        "ts": ts,
        "channel": "C1",
        "event_ts": ts,
    }
    if kind == "follow_up":
        body |= {"channel_type": "channel", "thread_ts": thread}
    return json.dumps(
        {
            "team_id": "T1",
            "api_app_id": "A1",
            "type": "event_callback",
            "event_id": f"Ev{n}",
            "event_time": int(time.time()),
            "event": body,
        }
    ).encode()


COLD = """
[slack]
identity_local_ttl = 0

[state]
memory_refresh_interval = 0
"""


class Bot:
    """``threadline slack`` in a subprocess, on a free port, with its state on Redis (its
    configuration ``config``, a ``threadline.toml``, when given)."""

    def __init__(self, redis_url: str, api_url: str, config: Path | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
        env |= {
            "REDIS_URL": redis_url,
            "SLACK_BOT_TOKEN": TOKEN,
            "SLACK_SIGNING_SECRET": SECRET,
            "SLACK_API_URL": api_url,
            "THREADLINE_DATA_DIR": tempfile.mkdtemp(),
        }
        self.env = env
        self.config = config
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        threadline = Path(sys.executable).parent / "threadline"
        self.process = await asyncio.create_subprocess_exec(
            str(threadline),
            "slack",
            "--app",
            "examples/weather.py:agent",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            *(["--config", str(self.config)] if self.config else []),
            cwd=ROOT,
            env=self.env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        async with aiohttp.ClientSession() as session:
            while True:  # a bounded poll of another process's readiness
                try:
                    async with session.get(f"{self.url}/healthz") as response:
                        if response.status == 200:
                            return
                except aiohttp.ClientError:
                    pass
                if self.process.returncode is not None or time.monotonic() > deadline:
                    raise RuntimeError("threadline slack did not start")
                await asyncio.sleep(0.1)

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.terminate()
            await self.process.wait()


async def run_turns(
    bot: Bot, monitor: Monitor, session: aiohttp.ClientSession, kind: str, start: int, turns: int
) -> dict[str, Any]:
    """``turns`` turns of ``kind``, one at a time; round trips per turn, by command."""
    thread = f"{1_700_000_000 + start}.000100"
    if kind == "follow_up":  # the thread they follow up in, opened before counting
        await post(bot, monitor, session, event(start, "mention", thread))
    before, scripts_before, _ = monitor.tally.snapshot()
    at_ack: list[int] = []
    for n in range(start + 1, start + 1 + turns):
        body = event(n, kind, thread)
        at_ack.append(await post(bot, monitor, session, body))
    after, scripts_after, _ = monitor.tally.snapshot()
    by_command = after - before
    return {
        "round_trips": sum(by_command.values()) / turns,
        "in_scripts": (scripts_after - scripts_before) / turns,
        "before_ack": statistics.median(at_ack),
        "by_command": {name: round(n / turns, 2) for name, n in by_command.most_common()},
    }


async def post(bot: Bot, monitor: Monitor, session: aiohttp.ClientSession, body: bytes) -> int:
    """One event; returns the round trips made before its ack, once its turn completed."""
    expected = monitor.tally.completed + 1
    before = sum(monitor.tally.round_trips.values())
    headers = signed(body)
    async with session.post(f"{bot.url}/slack/events", data=body, headers=headers) as response:
        await response.read()
        if response.status != 200:
            raise RuntimeError(f"the bot answered {response.status}")
    await monitor.until_completed(expected)
    return monitor.tally.enqueued_at[-1] - before  # the turn is recorded before the ack


async def measure(
    turns: int, rounds: int, redis_url: str, config: Path | None = None
) -> dict[str, Any]:
    answered: list[Call] = []
    async with FakeSlackApi(on_call=answered.append, keep=2000) as fake:
        fake.users["U1"] = {"id": "U1", "team_id": "T1", "profile": {"display_name": "Ana"}}
        bot = Bot(redis_url, fake.base_url, config)
        await bot.start()
        monitor = Monitor(redis_url)
        await monitor.start()
        runs: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
        try:
            async with aiohttp.ClientSession() as session:
                n = 0
                for kind in KINDS:  # warm-up: identity, scripts loaded, connections open
                    await run_turns(bot, monitor, session, kind, n, 2)
                    n += 100
                for _ in range(rounds):
                    for kind in KINDS:
                        runs[kind].append(await run_turns(bot, monitor, session, kind, n, turns))
                        n += turns + 100
        finally:
            await monitor.stop()
            await bot.stop()
    figures: dict[str, Any] = {}
    for kind, results in runs.items():
        trips = [r["round_trips"] for r in results]
        figures[kind] = {
            "round_trips": round(statistics.median(trips), 2),
            "round_trips_min": round(min(trips), 2),
            "round_trips_max": round(max(trips), 2),
            "in_scripts": round(statistics.median(r["in_scripts"] for r in results), 2),
            "before_ack": statistics.median(r["before_ack"] for r in results),
            "by_command": results[len(results) // 2]["by_command"],
        }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=20, help="turns of each kind per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    figures: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as directory:
        cold = Path(directory) / "cold.toml"
        cold.write_text(COLD)
        for name, config in (("warm", None), ("cold", cold)):
            with RedisServer(Path(directory) / f"redis-{name}") as server:
                figures[name] = asyncio.run(measure(args.turns, args.rounds, server.url, config))
    print("anchor: bare bolt AsyncApp records nothing: 0 Redis round trips per event")
    for name, measured in figures.items():
        for kind in KINDS:
            f = measured[kind]
            print(
                f"{name} {kind:9} turn: {f['round_trips']:5.2f} round trips "
                f"[{f['round_trips_min']}..{f['round_trips_max']}] (goal <= {GOAL}; "
                f"{f['before_ack']} before the ack) + {f['in_scripts']:.1f} commands inside "
                f"scripts; by command: {f['by_command']}"
            )
    worst = max(m[kind]["round_trips"] for m in figures.values() for kind in KINDS)
    print(
        result_line(
            "redis_round_trips",
            goal=GOAL,
            worst_round_trips=worst,
            turns=args.turns,
            rounds=args.rounds,
            **figures,
        )
    )


if __name__ == "__main__":
    main()
