"""Memory over turns: the RSS of ``threadline slack --ephemeral`` as it answers mentions, each
in a new thread, against a bare bolt ``AsyncApp`` server acking the same events.

Every in-memory store has a cap (``THREADLINE_MEMORY_MAX_CONVERSATIONS``, 10,000 by default;
``THREADLINE_MEMORY_MAX_ENTRIES`` per cache and dedupe store, 100,000), so memory is bounded;
with the defaults a short run only fills them. The bot therefore runs twice: with the
defaults, and with caps small enough to be reached within the run (500 conversations, 1,000
entries), where its RSS must go flat after warm-up as bare bolt's does.

The real command (``threadline slack --ephemeral --app examples/weather.py:agent``: every
store in memory) and the anchor (a bolt ``AsyncApp`` on aiohttp whose listener only acks)
each run in their own process; this process signs the events, posts them over HTTP from 50
concurrent clients, and runs the fake Slack Web API (``adapters.slack.testing``) the bot
answers to. After every ``--step`` events (and the bot's turns finished: its ``/healthz``
reports none queued) the server's RSS is read from ``/proc/<pid>/status``. Growth is quoted
per turn over the second half of the run, after warm-up: a bounded process grows by ~0.

    .venv/bin/python benchmarks/slack_rss.py [--turns 3000] [--step 500]

Linux only (``/proc``). The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import aiohttp  # noqa: E402
from _stats import result_line  # noqa: E402
from slack_sdk.signature import SignatureVerifier  # noqa: E402

from adapters.slack.testing import FakeSlackApi  # noqa: E402
from agent_core.state.testing import free_port  # noqa: E402

SECRET = "bench-secret"
TOKEN = "xoxb-bench"
CLIENTS = 50


def mention(n: int) -> bytes:
    """A mention opening a new thread (its own ``ts``), asked by one of 20 people."""
    ts = f"{1_700_000_000 + n}.000100"
    event = {
        "type": "app_mention",
        "user": f"U{n % 20}",
        "text": "<@UBOT> hello there",
        "ts": ts,
        "channel": f"C{n % 7}",
        "event_ts": ts,
    }
    return json.dumps(
        {
            "team_id": "T1",
            "api_app_id": "A1",
            "type": "event_callback",
            "event_id": f"Ev{n}",
            "event_time": int(time.time()),
            "event": event,
        }
    ).encode()


def signed(body: bytes) -> dict[str, str]:
    ts = str(int(time.time()))
    return {
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": SignatureVerifier(SECRET).generate_signature(timestamp=ts, body=body),
        "Content-Type": "application/json",
    }


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


def bare_server(port: int, api_url: str) -> None:
    """The anchor (``--bare PORT API_URL``): bolt's ``AsyncApp`` acking every event."""
    from aiohttp import web
    from slack_bolt.app.async_app import AsyncApp
    from slack_sdk.web.async_client import AsyncWebClient

    app = AsyncApp(signing_secret=SECRET, client=AsyncWebClient(token=TOKEN, base_url=api_url))

    @app.event("app_mention")
    async def ack_only() -> None:
        return None

    web_app = app.web_app(path="/slack/events")

    async def healthz(request: web.Request) -> web.Response:
        return web.json_response({"queued_turns": 0, "running_turns": 0})

    web_app.router.add_get("/healthz", healthz)
    web.run_app(web_app, host="127.0.0.1", port=port, access_log=None, print=None)


class Server:
    """The bot (``threadline slack --ephemeral``) or the anchor, in its own process."""

    def __init__(self, kind: str, api_url: str, env: dict[str, str] | None = None) -> None:
        self.kind = kind
        self.extra_env = env or {}
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.api_url = api_url
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
        env |= {
            "SLACK_BOT_TOKEN": TOKEN,
            "SLACK_SIGNING_SECRET": SECRET,
            "SLACK_API_URL": self.api_url,
            "THREADLINE_DATA_DIR": tempfile.mkdtemp(),
            **self.extra_env,
        }
        if self.kind.startswith("bot"):
            command = [
                str(Path(sys.executable).parent / "threadline"),
                "slack",
                "--ephemeral",
                "--app",
                "examples/weather.py:agent",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
            ]
        else:
            command = [sys.executable, __file__, "--bare", str(self.port), self.api_url]
        self.process = await asyncio.create_subprocess_exec(
            *command,
            cwd=ROOT,
            env=env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while await self.in_flight() is None:  # a bounded poll of another process's readiness
            if self.process.returncode is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the {self.kind} server did not start")
            await asyncio.sleep(0.1)

    async def in_flight(self) -> int | None:
        """Turns queued or running (None while the server does not answer)."""
        try:
            async with (
                aiohttp.ClientSession() as session,
                session.get(f"{self.url}/healthz") as response,
            ):
                health = await response.json()
                return int(health.get("queued_turns") or 0) + int(health["running_turns"])
        except (aiohttp.ClientError, ValueError):
            return None

    async def settled(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while await self.in_flight():  # a bounded poll of another process's queue
            if time.monotonic() > deadline:
                raise TimeoutError(f"the {self.kind} server still has turns in flight")
            await asyncio.sleep(0.05)

    @property
    def rss_kb(self) -> int:
        assert self.process is not None
        return rss_kb(self.process.pid)

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.terminate()
            await self.process.wait()


async def load(server: Server, start: int, count: int) -> None:
    counter = iter(range(start, start + count))
    connector = aiohttp.TCPConnector(limit=CLIENTS)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def client() -> None:
            for n in counter:
                body = mention(n)
                url = f"{server.url}/slack/events"
                async with session.post(url, data=body, headers=signed(body)) as response:
                    await response.read()
                    if response.status != 200:
                        raise RuntimeError(f"the {server.kind} server answered {response.status}")

        await asyncio.gather(*(client() for _ in range(CLIENTS)))


SMALL_CAPS = {"THREADLINE_MEMORY_MAX_CONVERSATIONS": "500", "THREADLINE_MEMORY_MAX_ENTRIES": "1000"}


async def curve(
    kind: str, api_url: str, turns: int, step: int, env: dict[str, str] | None = None
) -> list[tuple[int, int]]:
    """``(events, RSS KB)`` after every ``step`` events, starting with the idle server."""
    server = Server(kind, api_url, env)
    await server.start()
    try:
        points = [(0, server.rss_kb)]
        for done in range(step, turns + 1, step):
            await load(server, done - step, step)
            await server.settled()
            points.append((done, server.rss_kb))
    finally:
        await server.stop()
    return points


def growth_per_turn(points: list[tuple[int, int]]) -> float:
    """KB per turn from the middle of the run to its end (after warm-up)."""
    middle = points[len(points) // 2]
    last = points[-1]
    return (last[1] - middle[1]) / max(last[0] - middle[0], 1)


async def measure(turns: int, step: int) -> dict[str, Any]:
    async with FakeSlackApi(keep=1000) as fake:
        for n in range(20):
            fake.users[f"U{n}"] = {"id": f"U{n}", "team_id": "T1", "profile": {"display_name": "A"}}
        bare = await curve("bare", fake.base_url, turns, step)
        bot = await curve("bot", fake.base_url, turns, step)
        capped = await curve("bot_small_caps", fake.base_url, turns, step, SMALL_CAPS)
    return {"bare_bolt": bare, "bot": bot, "bot_small_caps": capped}


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--bare":
        bare_server(int(sys.argv[2]), sys.argv[3])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=3000)
    parser.add_argument("--step", type=int, default=500)
    args = parser.parse_args()
    curves = asyncio.run(measure(args.turns, max(1, min(args.step, args.turns))))
    figures: dict[str, Any] = {"turns": args.turns}
    for label, points in curves.items():
        per_turn = growth_per_turn(points)
        figures[label] = {
            "rss_mb": [[n, round(kb / 1024, 1)] for n, kb in points],
            "kb_per_turn_after_warmup": round(per_turn, 2),
        }
        shown = ", ".join(f"{n}: {kb / 1024:.1f}" for n, kb in points)
        print(
            f"{label:14} RSS MB after N events ({shown}); growth after warm-up "
            f"{per_turn:+.2f} KB per turn"
        )
    print(result_line("slack_rss", **figures))


if __name__ == "__main__":
    main()
