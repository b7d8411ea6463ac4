"""On Redis a turn's reads come with its start: the keys the asker's previous turn read (its
conversation, with this turn's thread in place of that one's; cached identity; the memory's
change counter) are read by the script that starts the turn, whether the enqueue handed it
over or a fetched turn's ``begin`` started it. Counted with ``MONITOR``: inside the turn,
no command is sent for them. And never a stale or foreign value: what changed before the
turn started is seen, a key the turn wrote is read again, another asker (or another name
for the asker) gets only their own."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from agent_core.conversations import Message
from agent_core.state.quotas_redis import RedisRateLimiter
from agent_core.state.redis_client import connect_redis
from agent_core.state.turns import Turn
from agent_core.state.turns_redis import RedisTurnQueue
from agent_core.state_factory import State, StateSettings, build_state
from agent_core.users import User
from tests.memory.contract import tool_context
from tests.state.turn_contract import DEADLINE, drained, working

if TYPE_CHECKING:
    from redis.asyncio import Redis

pytestmark = pytest.mark.redis

ANA, BO = User(id="slack:T1:ANA"), User(id="slack:T1:BO")


class Sent:
    """Every command clients send Redis (``MONITOR``; commands scripts run are not sent)."""

    def __init__(self, url: str) -> None:
        self._client = connect_redis(url)
        self.commands: list[str] = []
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Sent:
        listening = asyncio.Event()

        async def listen() -> None:
            async with self._client.monitor() as monitor:
                listening.set()
                async for command in monitor.listen():
                    if command.get("client_type") != "lua":
                        self.commands.append(str(command.get("command", "")))

        self._task = asyncio.create_task(listen())
        await asyncio.wait_for(listening.wait(), DEADLINE)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        await self._client.aclose()

    async def between(self, start: str, end: str) -> list[str]:
        """The commands sent between ``ECHO start`` and ``ECHO end`` (both included)."""
        async with asyncio.timeout(DEADLINE):
            while f"ECHO {end}" not in self.commands:
                await asyncio.sleep(0.005)  # MONITOR's stream catching up, with a deadline
        first = self.commands.index(f"ECHO {start}")
        return self.commands[first : self.commands.index(f"ECHO {end}") + 1]


@dataclass
class Reading:
    """A handler that reads what a turn reads (the asker's conversation in the thread,
    their cached identity, a memory search) between two markers, then saves the turn."""

    state: State
    redis: Redis
    seen: dict[str, dict[str, Any]] = field(default_factory=dict)
    during: Callable[[Turn], Awaitable[None]] | None = None

    async def __call__(self, turn: Turn) -> None:
        user = User(id=turn.payload["user"])
        name = turn.payload["name"]
        await self.redis.echo(f"start-{name}")
        if self.during is not None:
            await self.during(turn)
        conversations = self.state.conversations.for_turn(turn.writes)  # the turn's views
        cache, memory = (
            self.state.cache.for_turn(turn.writes),
            self.state.memory.for_turn(turn.writes),
        )
        conversation = await conversations.get_conversation(turn.thread_key, user)
        identity = await cache.get(f"identity:{user.id}")
        hits = await memory.search_text_memories(
            "revenue", tool_context(), limit=5, similarity_threshold=0.01
        )
        await self.redis.echo(f"end-{name}")
        self.seen[name] = {
            "messages": [m.content for m in conversation.messages] if conversation else None,
            "identity": identity,
            "memories": [hit.memory.content for hit in hits],
        }
        if conversation is None:
            conversation = await conversations.create_conversation(turn.thread_key, user, "")
        conversation.add_message(Message(role="user", content=name))
        await conversations.update_conversation(conversation)


@pytest.fixture
async def state(redis_url: str, key_prefix: str) -> AsyncIterator[State]:
    settings = StateSettings(redis_url=redis_url, key_prefix=key_prefix, claim_after=5)
    built = build_state(settings.model_copy(update={"memory_refresh_interval": 0}))
    yield built
    await built.aclose()


@pytest.fixture
async def elsewhere(redis_url: str, key_prefix: str) -> AsyncIterator[State]:
    """The same state as another process sees it."""
    settings = StateSettings(redis_url=redis_url, key_prefix=key_prefix, claim_after=5)
    built = build_state(settings.model_copy(update={"memory_refresh_interval": 0}))
    yield built
    await built.aclose()


@contextlib.asynccontextmanager
async def answering(
    state: State, handler: Callable[[Turn], Awaitable[None]]
) -> AsyncIterator[None]:
    queue = state.turns
    assert isinstance(queue, RedisTurnQueue)
    async with working(queue, handler, consumer="here"):
        async with asyncio.timeout(DEADLINE):
            while not await queue._redis.exists(queue.stream_key):
                await asyncio.sleep(0.005)  # the worker's first fetch creates the group
        yield


async def turn(
    state: State, thread: str, name: str, *, user: User = ANA, owner: str = "T1:ANA"
) -> None:
    await state.turns.enqueue(thread, {"user": user.id, "name": name}, owner=owner)
    await drained(state.turns)


def reads(commands: list[str]) -> list[str]:
    """The reads a turn sent: ``GET key``, or ``EVALSHA`` (the memory's change log) named by
    its last key (connection set-up, a script's first load and idle fetches aside)."""
    return sorted(
        {
            f"GET {c.split(' ')[1]}" if c.startswith("GET ") else f"script {c.split(' ')[11]}"
            for c in commands
            if c.startswith(("GET ", "EVALSHA "))
        }
    )


@pytest.mark.parametrize("recorded", ["here", "elsewhere"])
async def test_the_askers_next_turn_sends_nothing_for_its_reads(
    state: State, elsewhere: State, redis: Redis, redis_url: str, recorded: str
) -> None:
    """Recorded here (handed over) or by another process (fetched, then ``begin``): from the
    asker's second turn on, even in a new thread, the reads cost no round trip; the values
    are the right ones."""
    await state.cache.set(f"identity:{ANA.id}", {"groups": ["ops"]})
    recorder = state if recorded == "here" else elsewhere
    handler = Reading(state, redis)
    async with Sent(redis_url) as sent, answering(state, handler):
        await turn(recorder, "slack:T1:C1:1.0", "first")
        await turn(recorder, "slack:T1:C1:2.0", "new-thread")
        await turn(recorder, "slack:T1:C1:1.0", "back-again")
        first = reads(await sent.between("start-first", "end-first"))
        new_thread = reads(await sent.between("start-new-thread", "end-new-thread"))
        back = reads(await sent.between("start-back-again", "end-back-again"))
    assert [read.split(":")[-1] for read in first] == ["ANA", "1.0", "log"]
    assert new_thread == [] and back == []
    assert handler.seen == {
        "first": {"messages": None, "identity": {"groups": ["ops"]}, "memories": []},
        "new-thread": {"messages": None, "identity": {"groups": ["ops"]}, "memories": []},
        "back-again": {"messages": ["first"], "identity": {"groups": ["ops"]}, "memories": []},
    }


async def test_what_changed_before_the_turn_started_is_what_it_reads(
    state: State, elsewhere: State, redis: Redis
) -> None:
    """Another process changed the conversation, the identity and the memory between two
    turns: the second turn reads the new values (read as it started)."""
    handler = Reading(state, redis)
    async with answering(state, handler):
        await turn(state, "slack:T1:C1:1.0", "first")
        conversation = await elsewhere.conversations.get_conversation("slack:T1:C1:1.0", ANA)
        assert conversation is not None
        conversation.add_message(Message(role="user", content="from elsewhere"))
        await elsewhere.conversations.update_conversation(conversation)
        await elsewhere.cache.set(f"identity:{ANA.id}", {"groups": ["admins"]})
        await elsewhere.memory.save_text_memory("revenue excludes refunds", tool_context())
        await turn(state, "slack:T1:C1:1.0", "second")
    assert handler.seen["second"] == {
        "messages": ["first", "from elsewhere"],
        "identity": {"groups": ["admins"]},
        "memories": ["revenue excludes refunds"],
    }


async def test_a_key_the_turn_wrote_is_read_again(state: State, redis: Redis) -> None:
    """Regression guard: what was read as the turn started is stale once the turn wrote the
    key (a cache entry, a memory) itself; the turn reads its own writes."""

    async def write_first(turn: Turn) -> None:
        if turn.payload["name"] == "second":
            cache, memory = state.cache.for_turn(turn.writes), state.memory.for_turn(turn.writes)
            await cache.set(f"identity:{ANA.id}", {"groups": ["written"]})
            await memory.save_text_memory("revenue is in euros", tool_context())

    handler = Reading(state, redis, during=write_first)
    await state.cache.set(f"identity:{ANA.id}", {"groups": ["old"]})
    async with answering(state, handler):
        await turn(state, "slack:T1:C1:1.0", "first")
        await turn(state, "slack:T1:C1:1.0", "second")
    assert handler.seen["second"]["identity"] == {"groups": ["written"]}
    assert handler.seen["second"]["memories"] == ["revenue is in euros"]


async def test_another_asker_or_another_name_reads_only_their_own(
    state: State, redis: Redis, redis_url: str
) -> None:
    """Bo's turn in Ana's thread gets Bo's conversation (none), not Ana's; a turn of Ana's
    whose resolver names her differently reads its own key (a round trip), not the one
    Ana's last turn read."""
    handler = Reading(state, redis)
    async with Sent(redis_url) as sent, answering(state, handler):
        await turn(state, "slack:T1:C1:1.0", "ana")
        await turn(state, "slack:T1:C1:1.0", "bo", user=BO, owner="T1:BO")
        renamed = User(id="slack:E1:ANA")
        await turn(state, "slack:T1:C1:1.0", "renamed", user=renamed, owner="T1:ANA")
        by_other_name = reads(await sent.between("start-renamed", "end-renamed"))
    assert handler.seen["bo"]["messages"] is None
    assert handler.seen["renamed"]["messages"] is None
    assert [read.split(":", 2)[-1] for read in by_other_name] == [
        "cache:identity:slack:E1:ANA",  # its own identity and conversation
        "conv:{slack%3AE1%3AANA}:slack:T1:C1:1.0",
    ]


async def test_a_logs_append_is_written_with_the_turns_completion(
    state: State, elsewhere: State, redis: Redis, redis_url: str
) -> None:
    """A bounded log read as the turn started (a Slack thread's transcript): the turn's
    append costs no round trip and reaches Redis with the turn's completion, after what
    others appended meanwhile; the turn sees the log as it now is."""
    seen: dict[str, list[Any]] = {}
    in_redis: dict[str, list[Any]] = {}

    async def mark(turn: Turn) -> None:
        key, name = f"transcript:{turn.thread_key}", turn.payload["name"]
        await redis.echo(f"start-{name}")
        cache = state.cache.for_turn(turn.writes)
        seen[name] = await cache.append(key, [{"told": name}], keep=3)
        await redis.echo(f"end-{name}")
        in_redis[name] = await elsewhere.cache.append(key, [], keep=3)

    async with Sent(redis_url) as sent, answering(state, mark):
        await turn(state, "slack:T1:C1:1.0", "first")
        await elsewhere.cache.append("transcript:slack:T1:C1:1.0", [{"app": "alert"}], keep=3)
        await turn(state, "slack:T1:C1:1.0", "second")
        await turn(state, "slack:T1:C1:1.0", "third")
        second = await sent.between("start-second", "end-second")
    assert [c for c in second if not c.startswith(("ECHO", "XREADGROUP"))] == []
    assert seen["second"] == [{"told": "first"}, {"app": "alert"}, {"told": "second"}]
    assert in_redis["second"] == [{"told": "first"}, {"app": "alert"}]  # not yet: staged
    assert seen["third"] == [{"app": "alert"}, {"told": "second"}, {"told": "third"}]
    stored = await elsewhere.cache.append("transcript:slack:T1:C1:1.0", [], keep=3)
    assert stored == seen["third"]


async def test_the_askers_quota_hit_is_made_by_the_start_of_their_next_turn(
    state: State, redis: Redis, redis_url: str
) -> None:
    """The asker's quota (``RateLimitHook``) costs their next turn no round trip: the script
    that starts it makes the hit their last turn made, counted once. A turn that does not
    hit the quota (a resumed approval, an exempt asker) has that hit taken back as it
    completes (issue 37: the quota's script was a round trip per turn)."""
    hook = state.rate_limit_hook(limit=10, window=3600)
    limiter = state.rate_limiter
    assert isinstance(limiter, RedisRateLimiter)
    counted = f"{limiter.key_prefix}quota:{ANA.id}"
    hits: dict[str, int] = {}

    async def ask(turn: Turn) -> None:
        name = turn.payload["name"]
        await redis.echo(f"start-{name}")
        if name != "resumed":
            await hook.for_turn(turn.writes).before_message(ANA, name)
        await redis.echo(f"end-{name}")
        hits[name] = await redis.zcard(counted)

    async with Sent(redis_url) as sent, answering(state, ask):
        for name in ("first", "second", "resumed", "fourth"):
            await turn(state, "slack:T1:C1:1.0", name)
        second = await sent.between("start-second", "end-second")
    assert [command for command in second if command.startswith("EVALSHA")] == []
    assert hits == {"first": 1, "second": 2, "resumed": 3, "fourth": 3}
    assert await redis.zcard(counted) == 3  # the resumed turn's hit was taken back
