"""Scale-out on Redis state: turns/s with 1 vs 2 worker processes, Redis commands per turn,
p99 ack latency; first for the state layer alone, then for the whole Slack bot.

Each worker process runs ``RedisTurnQueue.run`` with the real ``Agent`` (scripted LLM,
200 ms latency; Redis conversations, Redis memory and a Redis ``RateLimitHook``). This
process is the ingress: 50 threads in a closed loop, each ``enqueue(..., dedupe_key=...)``
(the work done before a bot acks: that is the measured ack latency), then waits for the
answer (reported on the worker's stdout, not through Redis), then asks again. Rounds
alternate 1 and 2 processes; we quote medians and the ratio 2 processes / 1 process.
50 threads x 200 ms cap throughput at 250 turns/s whatever the process count, so the
same is also measured with no LLM latency ("saturated": CPU-bound, where a second
process has something to add; the driver and redis-server share the same cores).

Redis commands per turn = client commands Redis processed in the window (ingress + worker:
enqueue, reads, turn begin/complete, conversation, memory, quota; Lua scripts count once)
/ completed turns, from ``INFO stats``. The commands run inside those scripts are printed
for information.

Bot level (``--level bot``): the same measure through ``threadline slack`` processes (the
real wiring of ``bots.slack.app.serve``: bolt, signature checks, the turn queue, the agent
with Redis conversations / memory / quota, Slack rendering), a scripted LLM of 200 ms, 50
threads. This process plays Slack: it signs events and posts them over HTTP (a thread's
messages alternate between the processes, like a load balancer would send them), and runs
the fake Slack Web API the bots answer to; a thread asks again when its answer is posted
(``chat.postMessage`` in its thread). Ack latency = the HTTP round trip of the event.
Redis commands per turn as above, over everything the bots do (ingress, identity, queue,
progress records, agent), and round trips per turn (a script or a ``MULTI..EXEC`` block is
one); goals <= 6 commands and <= 4 round trips per turn, under the 50 threads at once.

Goals are printed with "met" or "NOT met" in the closing summary.

    .venv/bin/python benchmarks/scale.py [--seconds 3] [--rounds 2] [--level state|bot|both]
                                         [--redis-url URL] [--warmup 1.0]

Without ``--redis-url`` a private ``redis-server`` (loopback, persistence off) is started.
The saturated and command-counting windows are never longer than ``--seconds`` nor more
than ``--rounds``.
On 2 cores the driver (and the fake Slack), redis-server and the bot processes share the
same cores. The last line printed is one JSON object, with each goal's value, goal and
verdict.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _redis_monitor import Monitor  # noqa: E402
from _stats import Goals, result_line  # noqa: E402
from _subprocesses import ReadyProcesses  # noqa: E402

from agent_core import (  # noqa: E402
    Agent,
    RequestContext,
    ScriptedLlmService,
    ToolRegistry,
    User,
    UserResolver,
)
from agent_core.state import connect_redis  # noqa: E402
from agent_core.state.turns import Turn  # noqa: E402
from agent_core.state.turns_redis import RedisTurnQueue  # noqa: E402
from agent_core.state_factory import StateSettings, build_state  # noqa: E402

LLM_LATENCY = 0.2
THREADS = 50
WARMUP = 1.0
WARM_TURNS = 3


class PayloadUser(UserResolver):
    async def resolve_user(self, request_context: RequestContext) -> User:
        user = request_context.metadata["user_id"]
        return User(
            id=f"bench:T1:{user}", group_memberships=["user"], metadata={"workspace_id": "T1"}
        )


# -- worker process ------------------------------------------------------------------------


async def worker(url: str, prefix: str, latency: float) -> None:
    state = build_state(StateSettings(redis_url=url, key_prefix=prefix))
    agent = Agent(
        llm_service=ScriptedLlmService(then="Revenue grew 12% last month.", latency=latency),
        tool_registry=ToolRegistry(),
        user_resolver=PayloadUser(),
        agent_memory=state.memory,
        conversation_store=state.conversations,
        lifecycle_hooks=[state.rate_limit_hook(limit=1_000_000, window=3600)],
    )

    async def answer(turn: Turn) -> None:
        context = RequestContext(metadata=dict(turn.payload["metadata"]))
        async for _ in agent.send_message(
            context, turn.payload["text"], conversation_id=turn.thread_key
        ):
            pass
        sys.stdout.write(f"done {turn.payload['client']} {turn.payload['n']}\n")
        sys.stdout.flush()

    print("ready", flush=True)
    await state.turns.run(answer, concurrency=2 * THREADS)


# -- driver ----------------------------------------------------------------------------------


class Workers(ReadyProcesses):
    """N worker subprocesses; answers arrive as ``done <client> <n>`` lines."""

    def __init__(self) -> None:
        super().__init__(__file__, ROOT, self._answered)
        self.waiting: dict[tuple[int, int], asyncio.Future[None]] = {}

    async def start_count(self, count: int, url: str, prefix: str, latency: float) -> None:
        await self.start([["--worker", url, prefix, str(latency)]] * count)

    def _answered(self, line: bytes) -> None:
        _, client, n = line.decode().split()
        future = self.waiting.pop((int(client), int(n)), None)
        if future is not None and not future.done():
            future.set_result(None)

    def expect(self, client: int, n: int) -> asyncio.Future[None]:
        future = asyncio.get_running_loop().create_future()
        self.waiting[(client, n)] = future
        return future


class LoadWindow:
    """``THREADS`` closed-loop clients, measured over one window after a warm-up.

    Clients call ``acked(started)`` when their request was acknowledged and ``answered()``
    when its reply arrived; only what happens inside the window counts. The warm-up lasts
    ``WARMUP`` seconds and until the clients had ``WARM_TURNS`` answers each on average: on
    a loaded machine a second is one or two turns a thread, whose first turns (nothing read
    for them ahead yet, connection pools still growing) would otherwise fill the window.
    """

    def __init__(self) -> None:
        self.measuring = False
        self.acks: list[float] = []
        self.completed = 0
        self.warm_answers = 0
        self.warm = asyncio.Event()

    def acked(self, started: float) -> None:
        if self.measuring:
            self.acks.append(time.perf_counter() - started)

    def answered(self) -> None:
        if self.measuring:
            self.completed += 1
        self.warm_answers += 1
        if self.warm_answers >= THREADS * WARM_TURNS:
            self.warm.set()

    async def run(
        self,
        client: Callable[[int], Coroutine[Any, Any, None]],
        seconds: float,
        counter: Monitor | None,
    ) -> tuple[int, float]:
        """Turns completed in the window, and the window's length in seconds."""
        clients = [asyncio.create_task(client(i)) for i in range(THREADS)]
        try:
            await asyncio.sleep(WARMUP)  # the benchmark's own clock: warm-up, then the window
            with contextlib.suppress(TimeoutError):  # a machine too busy: as warm as it gets
                await asyncio.wait_for(self.warm.wait(), 60)
            if counter is not None:
                await counter.start()
            self.measuring, window_start = True, time.perf_counter()
            await asyncio.sleep(seconds)
            # a machine too busy to finish a turn in a short window (a smoke run beside a test
            # suite) gets a longer one, never a figure of nothing
            give_up = time.perf_counter() + 30
            while not (self.acks and self.completed) and time.perf_counter() < give_up:
                await asyncio.sleep(0.05)
            self.measuring = False
            elapsed, turns = time.perf_counter() - window_start, self.completed
            if counter is not None:
                await counter.stop()
        finally:
            for task in clients:
                task.cancel()
            await asyncio.gather(*clients, return_exceptions=True)
        return turns, elapsed

    def figures(self, turns: int, elapsed: float, counter: Monitor | None) -> dict[str, Any]:
        acks = sorted(self.acks)
        figures: dict[str, Any] = {
            "turns_per_s": turns / elapsed,
            "ack_p50_ms": statistics.median(acks) * 1000,
            "ack_p99_ms": acks[min(len(acks) - 1, int(len(acks) * 0.99))] * 1000,
        }
        if counter is not None:
            figures["commands_per_turn"] = counter.tally.commands.total() / max(turns, 1)
            figures["round_trips_per_turn"] = counter.tally.round_trips.total() / max(turns, 1)
            figures["script_commands_per_turn"] = counter.tally.in_scripts / max(turns, 1)
        return figures


async def measure(
    processes: int,
    url: str,
    seconds: float,
    *,
    latency: float = LLM_LATENCY,
    count_commands: bool = False,
) -> dict[str, Any]:
    prefix = f"bench:{uuid.uuid4().hex[:8]}:"
    redis = connect_redis(url)
    queue = RedisTurnQueue(redis, key_prefix=prefix)
    workers = Workers()
    await workers.start_count(processes, url, prefix, latency)
    window = LoadWindow()

    async def client(number: int) -> None:
        thread = f"slack:T1:C{number}:{prefix}"
        for n in range(1_000_000):
            payload = {
                "client": number,
                "n": n,
                "text": f"revenue last month, take {n}",
                "metadata": {"platform": "slack", "workspace_id": "T1", "user_id": f"U{number}"},
            }
            answered = workers.expect(number, n)
            started = time.perf_counter()
            await queue.enqueue(thread, payload, dedupe_key=f"Ev{number}-{n}")
            window.acked(started)
            await answered
            window.answered()

    counter = Monitor(url) if count_commands else None
    try:
        turns, elapsed = await window.run(client, seconds, counter)
    finally:
        await workers.stop()
        await redis.aclose()
    return window.figures(turns, elapsed, counter)


# -- bot level: the Slack bot's processes ------------------------------------------------------

SIGNING_SECRET = "bench-signing-secret"
BOT_TOKEN = "xoxb-bench"


async def slack_bot(url: str, prefix: str, api_url: str, port: int, latency: float) -> None:
    """One ``threadline slack`` process: the real wiring, a scripted LLM (``--slack-bot``)."""
    from agent_core.state_factory import State
    from bots.slack.app import serve
    from bots.slack.settings import SlackSettings

    def build(state: State, resolver: UserResolver) -> Agent:
        return Agent(
            llm_service=ScriptedLlmService(then="Revenue grew 12% last month.", latency=latency),
            tool_registry=ToolRegistry(),
            user_resolver=resolver,
            agent_memory=state.memory,
            conversation_store=state.conversations,
        )

    class Ready(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "listening on" in record.getMessage():
                print("ready", flush=True)

    logging.basicConfig(level=logging.WARNING)
    server_log = logging.getLogger("bots.slack.app")
    server_log.setLevel(logging.INFO)
    server_log.propagate = False
    server_log.addHandler(Ready())
    settings = SlackSettings(
        bot_token=BOT_TOKEN,
        signing_secret=SIGNING_SECRET,
        api_url=api_url,
        host="127.0.0.1",
        port=port,
        stop_button_after=600,
        turn_concurrency=2 * THREADS,
        rate_limit=(1_000_000, 3600),
    )
    await serve(settings, StateSettings(redis_url=url, key_prefix=prefix), build)


def signed(body: bytes) -> dict[str, str]:
    from slack_sdk.signature import SignatureVerifier

    ts = str(int(time.time()))
    signature = SignatureVerifier(SIGNING_SECRET).generate_signature(timestamp=ts, body=body)
    return {
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": signature,
        "Content-Type": "application/json",
    }


def slack_event(client: int, n: int) -> bytes:
    """Client ``client``'s ``n``-th message: a mention opens its thread, then follow-ups."""
    root = f"{1_600_000_000 + client}.000100"
    ts = root if n == 0 else f"{1_700_000_000 + n}.{client:06d}"
    event: dict[str, Any] = {
        "type": "app_mention" if n == 0 else "message",
        "user": f"U{client}",
        "text": f"<@UBOT> revenue last month, take {n}" if n == 0 else f"and take {n}?",
        "ts": ts,
        "channel": f"C{client}",
        "event_ts": ts,
    }
    if n:
        event |= {"channel_type": "channel", "thread_ts": root}
    body = {
        "team_id": "T1",
        "api_app_id": "A1",
        "type": "event_callback",
        "event_id": f"Ev{client}-{n}",
        "event_time": int(time.time()),
        "event": event,
    }
    return json.dumps(body).encode()


class SlackBots:
    """N bot processes on their own ports, and the fake Slack Web API they answer to (in
    this process: an answer posted in a channel wakes the thread waiting there)."""

    def __init__(self) -> None:
        self.processes: list[asyncio.subprocess.Process] = []
        self.ports: list[int] = []
        self.waiting: dict[str, asyncio.Future[None]] = {}
        self.fake: Any = None

    async def start(self, count: int, url: str, prefix: str, latency: float) -> None:
        from adapters.slack.testing import Call, FakeSlackApi
        from agent_core.state.testing import free_port

        def wake_the_thread(call: Call) -> None:
            """An answer posted in a thread wakes the client waiting in that channel."""
            if call.method != "chat.postMessage":
                return
            future = self.waiting.pop(str(call.args.get("channel")), None)
            if future is not None and not future.done() and call.args.get("thread_ts"):
                future.set_result(None)

        self.fake = FakeSlackApi(on_call=wake_the_thread)
        await self.fake.start()
        for client in range(THREADS):
            self.fake.users[f"U{client}"] = {"id": f"U{client}", "team_id": "T1"}

        async def one(port: int) -> asyncio.subprocess.Process:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                __file__,
                "--slack-bot",
                url,
                prefix,
                self.fake.base_url,
                str(port),
                str(latency),
                stdout=asyncio.subprocess.PIPE,
                cwd=ROOT,
            )
            assert process.stdout is not None
            line = await asyncio.wait_for(process.stdout.readline(), 30)
            assert line.strip() == b"ready", line
            return process

        self.ports = [free_port() for _ in range(count)]
        self.processes = list(await asyncio.gather(*(one(port) for port in self.ports)))

    def expect(self, client: int) -> asyncio.Future[None]:
        future = asyncio.get_running_loop().create_future()
        self.waiting[f"C{client}"] = future
        return future

    async def stop(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            await process.wait()
        if self.fake is not None:
            await self.fake.close()


async def measure_bot(
    processes: int, url: str, seconds: float, *, count_commands: bool = False
) -> dict[str, Any]:
    import aiohttp

    prefix = f"bench:{uuid.uuid4().hex[:8]}:"
    bots = SlackBots()
    await bots.start(processes, url, prefix, LLM_LATENCY)
    window = LoadWindow()
    failures = 0
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=THREADS))

    async def client(number: int) -> None:
        nonlocal failures
        for n in range(1_000_000):
            port = bots.ports[(number + n) % len(bots.ports)]
            body = slack_event(number, n)
            answered = bots.expect(number)
            started = time.perf_counter()
            url = f"http://127.0.0.1:{port}/slack/events"
            async with session.post(url, data=body, headers=signed(body)) as response:
                await response.read()
                failures += response.status != 200
            window.acked(started)
            await answered
            window.answered()

    counter = Monitor(url) if count_commands else None
    try:
        turns, elapsed = await window.run(client, seconds, counter)
    finally:
        await session.close()
        await bots.stop()
    figures = window.figures(turns, elapsed, counter)
    figures["failures"] = failures
    if counter is not None:
        figures["commands"] = {
            name: round(n / max(turns, 1), 2) for name, n in counter.tally.commands.most_common(12)
        }
    return figures


async def run_bot_level(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[int, list[dict[str, Any]]] = {1: [], 2: []}
    for _ in range(args.rounds):
        for processes in (1, 2):
            figures = await measure_bot(processes, args.redis_url, args.seconds)
            results[processes].append(figures)
            print(
                f"Slack bot, {processes} process{'es' if processes > 1 else '  '}: "
                f"{figures['turns_per_s']:7.1f} turns/s  ack p50 {figures['ack_p50_ms']:5.2f} ms  "
                f"p99 {figures['ack_p99_ms']:6.2f} ms"
            )
    counted = await measure_bot(2, args.redis_url, min(2.0, args.seconds), count_commands=True)
    print(
        f"Slack bot, Redis commands per turn (2 processes, MONITOR on): "
        f"{counted['commands_per_turn']:.2f} sent in {counted['round_trips_per_turn']:.2f} "
        f"round trips, {counted['script_commands_per_turn']:.2f} more inside Lua scripts; "
        f"sent, by command: {counted['commands']}"
    )

    def median(processes: int, key: str) -> float:
        return float(statistics.median(r[key] for r in results[processes]))

    one, two = median(1, "turns_per_s"), median(2, "turns_per_s")
    return {
        "bot_turns_per_s_1_process": round(one, 1),
        "bot_turns_per_s_2_processes": round(two, 1),
        "bot_ratio_2_vs_1": _ratio(two, one),
        "bot_redis_commands_per_turn": round(counted["commands_per_turn"], 2),
        "bot_redis_round_trips_per_turn": round(counted["round_trips_per_turn"], 2),
        "bot_redis_commands_in_scripts_per_turn": round(counted["script_commands_per_turn"], 2),
        "bot_redis_commands_by_name": counted["commands"],
        "bot_ack_p99_ms": round(max(median(1, "ack_p99_ms"), median(2, "ack_p99_ms")), 2),
        "bot_ack_p50_ms": round(median(2, "ack_p50_ms"), 2),
        "bot_failed_acks": sum(r["failures"] for rs in results.values() for r in rs),
    }


def _ratio(two: float, one: float) -> float | None:
    """``two / one``, or None when the one-process run completed nothing (a short smoke run
    on a loaded machine): no ratio rather than a ZeroDivisionError."""
    return round(two / one, 3) if one else None


def _start_redis(directory: str) -> Any:
    from agent_core.state.testing import RedisServer

    server = RedisServer(Path(directory))
    server.start()
    return server


async def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[int, list[dict[str, float]]] = {1: [], 2: []}
    for _ in range(args.rounds):
        for processes in (1, 2):
            figures = await measure(processes, args.redis_url, args.seconds)
            results[processes].append(figures)
            print(
                f"{processes} process{'es' if processes > 1 else '  '}: "
                f"{figures['turns_per_s']:7.1f} turns/s  "
                f"ack p50 {figures['ack_p50_ms']:5.2f} ms  p99 {figures['ack_p99_ms']:5.2f} ms"
            )
    saturated: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(min(2, args.rounds)):
        for processes in (1, 2):
            figures = await measure(processes, args.redis_url, min(1.5, args.seconds), latency=0.0)
            saturated[processes].append(figures["turns_per_s"])
            print(
                f"{processes} process{'es' if processes > 1 else '  '}, no LLM latency: "
                f"{figures['turns_per_s']:7.1f} turns/s (CPU-bound: agent + state + Redis)"
            )
    counted = await measure(2, args.redis_url, min(2.0, args.seconds), count_commands=True)
    print(
        f"Redis commands per turn (2 processes, MONITOR on): {counted['commands_per_turn']:.2f} "
        f"sent in {counted['round_trips_per_turn']:.2f} round trips, "
        f"{counted['script_commands_per_turn']:.2f} more run inside Lua scripts"
    )

    def median(processes: int, key: str) -> float:
        return statistics.median(r[key] for r in results[processes])

    one, two = median(1, "turns_per_s"), median(2, "turns_per_s")
    return {
        "turns_per_s_1_process": round(one, 1),
        "turns_per_s_2_processes": round(two, 1),
        "ratio_2_vs_1": _ratio(two, one),
        "saturated_turns_per_s_1_process": round(statistics.median(saturated[1]), 1),
        "saturated_turns_per_s_2_processes": round(statistics.median(saturated[2]), 1),
        "saturated_ratio_2_vs_1": _ratio(
            statistics.median(saturated[2]), statistics.median(saturated[1])
        ),
        "redis_commands_per_turn": round(counted["commands_per_turn"], 2),
        "redis_round_trips_per_turn": round(counted["round_trips_per_turn"], 2),
        "redis_commands_in_scripts_per_turn": round(counted["script_commands_per_turn"], 2),
        "ack_p99_ms": round(max(median(1, "ack_p99_ms"), median(2, "ack_p99_ms")), 2),
        "ack_p50_ms": round(median(2, "ack_p50_ms"), 2),
    }


async def run_levels(args: argparse.Namespace) -> dict[str, Any]:
    figures: dict[str, Any] = {
        "threads": THREADS,
        "llm_latency_s": LLM_LATENCY,
        "cpus": os.cpu_count(),
        "ceiling_turns_per_s": THREADS / LLM_LATENCY,
    }
    if args.level in ("state", "both"):
        figures |= await run(args)
    if args.level in ("bot", "both"):
        figures |= await run_bot_level(args)
    return figures


def _summary(figures: dict[str, Any], goals: Goals) -> None:
    if "turns_per_s_1_process" in figures:
        ratio, commands = figures["ratio_2_vs_1"], figures["redis_commands_per_turn"]
        print(
            f"state level, turns/s: 1 process {figures['turns_per_s_1_process']}, 2 processes "
            f"{figures['turns_per_s_2_processes']} (ratio {ratio} "
            f"{goals.check('ratio_2_vs_1', ratio, '>=', 1.7)} on 2 cores); Redis commands/turn "
            f"{commands} {goals.check('redis_commands_per_turn', commands, '<=', 8)} in "
            f"{figures['redis_round_trips_per_turn']} round trips; "
            f"ack p99 {figures['ack_p99_ms']} ms"
        )
    if "bot_turns_per_s_1_process" in figures:
        ratio, commands = figures["bot_ratio_2_vs_1"], figures["bot_redis_commands_per_turn"]
        round_trips = figures["bot_redis_round_trips_per_turn"]
        print(
            f"Slack bot level, turns/s: 1 process {figures['bot_turns_per_s_1_process']}, "
            f"2 processes {figures['bot_turns_per_s_2_processes']} (ratio {ratio} "
            f"{goals.check('bot_ratio_2_vs_1', ratio, '>=', 1.7)} on 2 cores); Redis "
            f"commands/turn {commands} sent "
            f"{goals.check('bot_redis_commands_per_turn', commands, '<=', 6)} in {round_trips} "
            f"round trips {goals.check('bot_redis_round_trips_per_turn', round_trips, '<=', 4)}"
            f", + {figures['bot_redis_commands_in_scripts_per_turn']} in scripts; "
            f"ack p99 {figures['bot_ack_p99_ms']} ms"
        )


def main() -> None:
    global WARMUP
    if len(sys.argv) == 5 and sys.argv[1] == "--worker":
        asyncio.run(worker(sys.argv[2], sys.argv[3], float(sys.argv[4])))
        return
    if len(sys.argv) == 7 and sys.argv[1] == "--slack-bot":
        url, prefix, api_url, port, latency = sys.argv[2:]
        asyncio.run(slack_bot(url, prefix, api_url, int(port), float(latency)))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=2.5)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--level", choices=["state", "bot", "both"], default="both")
    parser.add_argument("--redis-url")
    parser.add_argument("--warmup", type=float, default=WARMUP, help="seconds before each window")
    args = parser.parse_args()
    WARMUP = args.warmup
    server = None
    with tempfile.TemporaryDirectory() as directory:
        if args.redis_url is None:
            server = _start_redis(directory)
            args.redis_url = server.url
        try:
            figures = asyncio.run(run_levels(args))
        finally:
            if server is not None:
                server.stop()
    goals = Goals()
    _summary(figures, goals)
    print(result_line("scale", goals, **figures))


if __name__ == "__main__":
    main()
