"""A Monday-morning burst, as people feel it: mentions from many people at once, answered by
the real ``threadline slack`` (HTTP mode) on 1 and on 2 processes sharing Redis.

Everything is the real command (``python -m bots.cli slack --mode http [--processes 2]``:
bolt, signature checks, the durable turn queue on a private ``redis-server``, the built-in
agent, Claude's client, Slack rendering and streaming) pointed at the shipped fakes, which
run in this process: ``FakeSlackApi`` (the Web API the bot answers through) and
``FakeAnthropic`` (the Messages API) answering every request with a ~300-character answer,
its first token after ``--first-token`` seconds (0.8) and the rest at ``--tokens-per-second``
(60), as Claude streams. This process plays Slack: each mention (a new thread) is signed and
posted at its moment of a seeded random schedule, on a new connection each (so the kernel
spreads them over the processes, as a load balancer would).

Per mention, from the moment its event is posted (one clock: the fakes run here):

- **ack**: the HTTP answer to the event (Slack retries after 3 s: goal, none over 3 s);
- **first visible sign**: the thread's first status (``assistant.threads.setStatus``) or
  answer text, whichever comes first (goal p95 <= 1.0 s);
- **first streamed text**: the first call carrying the answer's text (goal p95 <= the
  model's first-token latency + 0.5 s);
- **last post**: the call that finishes the answer (``chat.stopStream``);
- **lost / duplicated**: mentions with no answer when the run ends, or more than one.

The floor, measured in the same run: the same fake model asked directly with the
``anthropic`` client (first text, whole answer), as many requests at once as the burst's
busiest second. Sizes: ``--full`` is the issue's burst, 500 mentions from 200 people in 60 s
per run (about 2.5 minutes in all); the default ``--quick`` keeps its rate (8.3 mentions a
second, 2.5 per person) over 12 s, 100 mentions from 40 people, so the whole benchmark runs
in under a minute. The last line printed is one JSON object.

    .venv/bin/python benchmarks/burst.py [--quick | --full] [--seed 7]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _stats import result_line  # noqa: E402

from adapters.slack.testing import Call, FakeSlackApi  # noqa: E402
from agent_core.llm.testing import FakeAnthropic, Reply  # noqa: E402
from agent_core.state.testing import RedisServer, free_port  # noqa: E402
from bots.demo.data import ensure_demo_database  # noqa: E402

SIGNING_SECRET = "burst-signing-secret"
ANSWER = (
    "Revenue grew 12% last month to $1.84M, led by laptops (+18%) and monitors (+9%); "
    "services were flat. Enterprise customers placed 41% of orders. The top three "
    "customers were Acme Corp, Globex and Initech. Want it by country or by week?"
)
ANSWER_START = ANSWER[:12]
"""The model's first delta (``Reply.paced``: 3 tokens of 4 characters), which any first send
of the answer carries, however soon it goes out."""
CHANNELS = 20
ACK_LIMIT = 3.0
FIRST_SIGN_GOAL = 1.0
TEXT_MARGIN_GOAL = 0.5
SIZES = {
    "quick": {"mentions": 100, "people": 40, "window": 12.0},
    "full": {"mentions": 500, "people": 200, "window": 60.0},
}
TEXT_METHODS = {"chat.startStream", "chat.appendStream", "chat.postMessage", "chat.update"}


@dataclass
class Mention:
    """One scheduled mention and what became of it (seconds on this process's clock)."""

    number: int
    person: int
    at: float
    sent: float | None = None
    acked: float | None = None
    status: int | None = None
    first_sign: float | None = None
    first_text: float | None = None
    last_post: float | None = None
    answers: int = 0
    calls: int = 0
    """Web API calls made in the mention's thread (status, answer, feedback)."""
    methods: list[str] = field(default_factory=list)
    done: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def channel(self) -> str:
        return f"C{self.person % CHANNELS:02d}"

    @property
    def ts(self) -> str:
        return f"{1_600_000_000 + self.number}.{self.person:06d}"

    def event(self) -> bytes:
        event = {
            "type": "app_mention",
            "user": f"U{self.person:04d}",
            "text": f"<@UBOT> how did revenue do last month? ({self.number})",
            "ts": self.ts,
            "channel": self.channel,
            "event_ts": self.ts,
        }
        body = {
            "team_id": "T1",
            "api_app_id": "A1",
            "type": "event_callback",
            "event_id": f"EvBurst{self.number}",
            "event_time": int(time.time()),
            "event": event,
        }
        return json.dumps(body).encode()


def schedule(mentions: int, people: int, window: float, seed: int) -> list[Mention]:
    """``mentions`` at random moments of ``window`` seconds, from ``people`` people (each at
    least once when there are enough mentions), the same for every run of one seed."""
    rng = random.Random(seed)
    askers = [n % people for n in range(mentions)]
    rng.shuffle(askers)
    moments = sorted(rng.uniform(0, window) for _ in range(mentions))
    return [
        Mention(n, person, at) for n, (person, at) in enumerate(zip(askers, moments, strict=True))
    ]


class Observed:
    """What the fake Slack saw, by thread: each call marks the mention it belongs to."""

    def __init__(self, mentions: Sequence[Mention]) -> None:
        self.by_thread = {(m.channel, m.ts): m for m in mentions}
        self.by_message: dict[str, Mention] = {}
        self.fake: FakeSlackApi | None = None

    def __call__(self, call: Call) -> None:
        now = time.monotonic()
        args = call.args
        channel = str(args.get("channel") or args.get("channel_id") or "")
        thread = args.get("thread_ts")
        mention = self.by_thread.get((channel, str(thread))) if thread else None
        if mention is None:
            mention = self.by_message.get(str(args.get("ts", "")))
        if mention is None:
            return
        mention.calls += 1
        mention.methods.append(call.method)
        if call.method == "assistant.threads.setStatus" and args.get("status"):
            mention.first_sign = mention.first_sign or now
        if call.method in TEXT_METHODS and ANSWER_START in json.dumps(args):
            mention.first_sign = mention.first_sign or now
            mention.first_text = mention.first_text or now
            if call.method in ("chat.startStream", "chat.postMessage"):
                mention.answers += 1
                self._remember(mention, channel)
        if call.method == "chat.stopStream" or (
            call.method in ("chat.postMessage", "chat.update") and mention.first_text
        ):
            mention.last_post = now
            mention.done.set()

    def _remember(self, mention: Mention, channel: str) -> None:
        """The answer's message ts (later calls name it, not the thread)."""
        assert self.fake is not None
        for message in self.fake.thread(channel, mention.ts):
            if message.ts != mention.ts:
                self.by_message[message.ts] = mention


# -- the bot processes --------------------------------------------------------------------------


class SlackCommand:
    """``threadline slack --mode http [--processes N]`` as an operator runs it."""

    def __init__(self, processes: int, env: dict[str, str], cwd: Path) -> None:
        self.processes, self.env, self.cwd = processes, env, cwd
        self.port = free_port()
        self.process: asyncio.subprocess.Process | None = None
        self.log: list[str] = []
        self._reader: asyncio.Task[None] | None = None

    async def start(self) -> None:
        argv = ["slack", "--mode", "http", "--port", str(self.port)]
        if self.processes > 1:
            argv += ["--processes", str(self.processes)]
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bots.cli",
            *argv,
            cwd=self.cwd,
            env=self.env,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # its own process group: the N workers end with it
        )
        listening = asyncio.Event()
        self._reader = asyncio.create_task(self._read(listening))
        await asyncio.wait_for(listening.wait(), 60)
        if self.process.returncode is not None:
            raise RuntimeError("threadline slack stopped:\n" + "".join(self.log[-20:]))

    async def _read(self, listening: asyncio.Event) -> None:
        assert self.process is not None and self.process.stderr is not None
        ready = 0
        async for raw in self.process.stderr:
            line = raw.decode(errors="replace")
            self.log.append(line)
            ready += "listening on" in line
            if ready >= self.processes:
                listening.set()
        listening.set()

    async def stop(self) -> None:
        """End every process of the command at once: the figures are in, and a graceful
        drain (seconds) would only make the benchmark longer."""
        if self.process is not None and self.process.returncode is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            await asyncio.wait_for(self.process.wait(), 30)
        if self._reader is not None:
            await self._reader


def bot_env(
    redis_url: str, slack: FakeSlackApi, claude: FakeAnthropic, data: Path, *, prefix: str
) -> dict[str, str]:
    """The configuration an operator gives ``threadline slack``, pointed at the fakes."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "ANTHROPIC_"))}
    return {
        **keep,
        "REDIS_URL": redis_url,
        "THREADLINE_REDIS_PREFIX": f"burst:{prefix}:",
        "THREADLINE_DATA_DIR": str(data),
        "SLACK_BOT_TOKEN": "xoxb-burst",
        "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "SLACK_API_URL": slack.base_url,
        "ANTHROPIC_API_KEY": "sk-burst",
        "ANTHROPIC_BASE_URL": claude.base_url,
        "PYTHONPATH": str(ROOT),
    }


def model_reply(args: argparse.Namespace) -> Reply:
    return Reply.paced(
        ANSWER, first_token_after=args.first_token, tokens_per_second=args.tokens_per_second
    )


# -- one burst --------------------------------------------------------------------------------


def signed(body: bytes) -> dict[str, str]:
    from slack_sdk.signature import SignatureVerifier

    ts = str(int(time.time()))
    signature = SignatureVerifier(SIGNING_SECRET).generate_signature(timestamp=ts, body=body)
    return {
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": signature,
        "Content-Type": "application/json",
    }


async def post_at(session: Any, url: str, mention: Mention, start: float) -> None:
    """Post the mention's event at its moment; note when it was sent and acknowledged."""
    await asyncio.sleep(max(0.0, start + mention.at - time.monotonic()))  # the schedule's clock
    body = mention.event()
    mention.sent = time.monotonic()
    try:
        async with session.post(url, data=body, headers=signed(body)) as response:
            await response.read()
            mention.status = response.status
    except OSError:
        mention.status = 0
    mention.acked = time.monotonic()


async def burst(
    processes: int, args: argparse.Namespace, redis_url: str, data: Path
) -> list[Mention]:
    """One run: the schedule posted to ``processes`` bot processes; every mention as it ended.
    ``data`` is the bots' data directory (the demo database, built once before the runs)."""
    import aiohttp

    size = sizes(args)
    mentions = schedule(size["mentions"], size["people"], size["window"], args.seed)
    observed = Observed(mentions)
    async with FakeSlackApi(on_call=observed) as slack, FakeAnthropic() as claude:
        observed.fake = slack
        slack.users.update(
            {f"U{n:04d}": {"id": f"U{n:04d}", "team_id": "T1"} for n in range(size["people"])}
        )
        claude.queue(*(model_reply(args) for _ in range(2 * len(mentions))))
        with tempfile.TemporaryDirectory(prefix="burst-") as directory:
            env = bot_env(redis_url, slack, claude, data, prefix=Path(directory).name)
            if args.stream_interval is not None:  # threadline.toml where the command runs
                config = f"[slack]\nstream_interval = {args.stream_interval}\n"
                (Path(directory) / "threadline.toml").write_text(config)
            bot = SlackCommand(processes, env, Path(directory))
            await bot.start()
            connector = aiohttp.TCPConnector(force_close=True, limit=0)
            try:
                async with aiohttp.ClientSession(connector=connector) as session:
                    url = f"http://127.0.0.1:{bot.port}/slack/events"
                    start = time.monotonic()
                    await asyncio.gather(*(post_at(session, url, m, start) for m in mentions))
                    ends = [asyncio.wait_for(m.done.wait(), args.patience) for m in mentions]
                    await asyncio.gather(*ends, return_exceptions=True)
            finally:
                await bot.stop()
        if any(m.status != 200 for m in mentions):
            print("".join(bot.log[-10:]), file=sys.stderr)
        for m in mentions:
            if m.answers != 1:  # lost or duplicated: what its thread saw
                print(f"mention {m.number}: {m.answers} answers, {m.methods}", file=sys.stderr)
    return mentions


# -- figures ----------------------------------------------------------------------------------


def percentile(values: Sequence[float], share: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))], 3)


def spread(values: Sequence[float]) -> dict[str, float | None]:
    return {
        "p50": round(statistics.median(values), 3) if values else None,
        "p95": percentile(values, 0.95),
    }


def figures(mentions: Sequence[Mention]) -> dict[str, Any]:
    def since_sent(moment: str) -> list[float]:
        return [getattr(m, moment) - m.sent for m in mentions if getattr(m, moment) and m.sent]

    acks = since_sent("acked")
    return {
        "mentions": len(mentions),
        "ack_s": spread(acks),
        "acks_over_3s": sum(a > ACK_LIMIT for a in acks),
        "acks_not_200": sum(m.status != 200 for m in mentions),
        "first_visible_sign_s": spread(since_sent("first_sign")),
        "first_streamed_text_s": spread(since_sent("first_text")),
        "last_post_s": spread(since_sent("last_post")),
        "slack_calls_per_mention": round(sum(m.calls for m in mentions) / len(mentions), 2),
        "lost": sum(m.answers == 0 for m in mentions),
        "duplicated": sum(m.answers > 1 for m in mentions),
    }


async def floor(args: argparse.Namespace, at_once: int) -> dict[str, Any]:
    """The fake model alone: first text and whole answer, ``at_once`` requests together."""
    import anthropic

    async with FakeAnthropic() as claude:
        claude.queue(*(model_reply(args) for _ in range(at_once)))
        async with anthropic.AsyncAnthropic(api_key="sk-floor", base_url=claude.base_url) as client:

            async def ask() -> tuple[float, float]:
                started = time.monotonic()
                first = None
                request = {"role": "user", "content": "how did revenue do last month?"}
                async with client.messages.stream(
                    model="claude-floor", max_tokens=400, messages=[request]
                ) as stream:
                    async for _ in stream.text_stream:
                        first = first or time.monotonic() - started
                return first or 0.0, time.monotonic() - started

            timings = await asyncio.gather(*(ask() for _ in range(at_once)))
    return {
        "first_text_s": spread([t[0] for t in timings]),
        "whole_answer_s": spread([t[1] for t in timings]),
    }


def sizes(args: argparse.Namespace) -> dict[str, Any]:
    """The run's size: ``--quick`` or ``--full``, with any of its numbers given."""
    given = {"mentions": args.mentions, "people": args.people, "window": args.window}
    return {**SIZES[args.size], **{k: v for k, v in given.items() if v is not None}}


def busiest_second(args: argparse.Namespace) -> int:
    size = sizes(args)
    moments = [m.at for m in schedule(size["mentions"], size["people"], size["window"], args.seed)]
    return max(sum(1 for t in moments if s <= t < s + 1) for s in range(int(size["window"]) + 1))


def line(label: str, found: dict[str, Any]) -> str:
    def show(key: str) -> str:
        return f"{found[key]['p50']}/{found[key]['p95']}"

    return (
        f"{label:<12} ack p50/p95 {show('ack_s')} s (over 3 s: {found['acks_over_3s']})  "
        f"first sign {show('first_visible_sign_s')}  first text {show('first_streamed_text_s')}  "
        f"last post {show('last_post_s')}  lost {found['lost']}  duplicated {found['duplicated']}"
    )


async def run(args: argparse.Namespace, redis_url: str, data: Path) -> dict[str, Any]:
    began = time.monotonic()
    ensure_demo_database(data)  # what the built-in agent answers from, built once
    results: dict[str, Any] = {"floor": await floor(args, busiest_second(args))}
    print(
        f"{'floor':<12} model alone: first text {results['floor']['first_text_s']}, "
        f"whole answer {results['floor']['whole_answer_s']}"
    )
    for processes in (1, 2):
        found = figures(await burst(processes, args, redis_url, data))
        results[f"processes_{processes}"] = found
        print(line(f"{processes} process{'es' if processes > 1 else ''}", found))
    results["seconds"] = round(time.monotonic() - began, 1)
    return results


def goals(results: dict[str, Any], first_token: float) -> dict[str, bool]:
    met = {}
    for key in ("processes_1", "processes_2"):
        found = results[key]
        sign, text = found["first_visible_sign_s"]["p95"], found["first_streamed_text_s"]["p95"]
        met[f"{key}_first_sign"] = sign is not None and sign <= FIRST_SIGN_GOAL
        met[f"{key}_first_text"] = text is not None and text <= first_token + TEXT_MARGIN_GOAL
        met[f"{key}_acks"] = found["acks_over_3s"] == 0 and found["acks_not_200"] == 0
        met[f"{key}_answers"] = found["lost"] == 0 and found["duplicated"] == 0
    return met


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    size_group = parser.add_mutually_exclusive_group()
    size_group.add_argument("--quick", dest="size", action="store_const", const="quick")
    size_group.add_argument("--full", dest="size", action="store_const", const="full")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--first-token", type=float, default=0.8, help="the model's seconds to first token"
    )
    parser.add_argument("--tokens-per-second", type=float, default=60.0)
    parser.add_argument("--patience", type=float, default=30.0, help="seconds an answer may take")
    parser.add_argument("--mentions", type=int, help="instead of the size's")
    parser.add_argument("--people", type=int, help="instead of the size's")
    parser.add_argument("--window", type=float, help="seconds, instead of the size's")
    parser.add_argument(
        "--stream-interval",
        "--flush-interval",  # the setting's old name
        dest="stream_interval",
        type=float,
        help="[slack] stream_interval for the bots (default: theirs, 1.0 s)",
    )
    parser.set_defaults(size="quick")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="burst-redis-") as directory:
        with RedisServer(Path(directory) / "redis") as redis:
            results = asyncio.run(run(args, redis.url, Path(directory) / "data"))
    met = goals(results, args.first_token)
    print("goals: " + ", ".join(f"{k} {'met' if v else 'MISSED'}" for k, v in met.items()))
    print(
        result_line(
            "burst",
            size=args.size,
            seed=args.seed,
            **sizes(args),
            stream_interval=args.stream_interval,
            first_token_s=args.first_token,
            tokens_per_second=args.tokens_per_second,
            goals=met,
            **results,
        )
    )


if __name__ == "__main__":
    main()
