"""A thread's earlier messages within Slack's limits: the transcript of followed threads,
the pacing of reads shared by processes, and what a turn is told (``adapters.slack.history``,
``adapters.slack.threads``), against the fake Slack Web API enforcing the 2025 limits."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.history import HistoryGate, ThreadContext, bot_in_thread, read_thread
from adapters.slack.testing import NON_MARKETPLACE, FakeSlackApi, Reply
from adapters.slack.threads import ThreadTranscript, transcript_entry, ts_value, untold
from agent_core.state import MemoryKeyValueStore

WHERE = {"team": "T1", "channel": "C1", "thread_ts": "1.0"}


def thread(fake: FakeSlackApi, count: int) -> None:
    fake.replies[("C1", "1.0")] = [
        {"ts": f"{n}.0", "user": "U2", "text": f"m{n}"} for n in range(1, count + 1)
    ]


async def test_a_thread_is_read_once_even_when_its_join_is_run_again() -> None:
    """A re-run after a crash (or a re-join once the thread's flag expired) reads nothing
    from Slack: the first read is in the transcript."""
    async with FakeSlackApi(limits=NON_MARKETPLACE) as fake:
        thread(fake, 5)
        client = AsyncWebClient(token="xoxb-1", base_url=fake.base_url)
        cache = MemoryKeyValueStore()
        context = ThreadContext(ThreadTranscript(cache), HistoryGate(cache, interval=0))
        first = await context.before(client, **WHERE, before_ts="5.0", joins=True)
        again = await context.before(client, **WHERE, before_ts="5.0", joins=True)
        assert [m["text"] for m in first.messages] == ["m1", "m2", "m3", "m4"]
        assert again.messages == first.messages and not again.partial
        assert len(fake.calls_to("conversations.replies")) == 1


async def test_processes_sharing_a_cache_read_once_a_minute_per_workspace() -> None:
    clock = [0.0]
    cache = MemoryKeyValueStore(clock=lambda: clock[0])
    here, there = (HistoryGate(cache, clock=lambda: clock[0]) for _ in range(2))
    assert await here.claim("T1") and not await there.claim("T1")
    assert await there.claim("T2")  # Slack counts each workspace apart
    clock[0] = 61.0
    assert await there.claim("T1") and not await here.claim("T1")
    await here.pause("T1", 300)
    clock[0] = 200.0
    assert not await there.claim("T1")  # Retry-After outlasts the interval
    clock[0] = 362.0
    assert await there.claim("T1")


async def test_a_429_pauses_the_gate_and_the_client_does_not_wait() -> None:
    async with FakeSlackApi() as fake:
        thread(fake, 3)
        fake.script("conversations.replies", Reply(status=429, retry_after=120))
        client = AsyncWebClient(token="xoxb-1", base_url=fake.base_url)
        gate = HistoryGate(MemoryKeyValueStore(), interval=0)
        read = await read_thread(client, gate, **WHERE, before_ts="3.0")
        assert not read.read and read.messages == []
        assert not await gate.claim("T1")
        assert len(fake.calls_to("conversations.replies")) == 1


async def test_whether_the_bot_is_in_a_thread_is_asked_within_the_limits() -> None:
    """Regression guard: the outage path asked for 200 messages on every thread reply; now
    one read of 15 a minute, and "cannot tell" when it may not ask."""
    async with FakeSlackApi(limits=NON_MARKETPLACE) as fake:
        fake.replies[("C1", "1.0")] = [
            {"ts": "1.0", "user": "U1", "text": "q"},
            {"ts": "2.0", "user": "UBOT", "text": "a"},
        ]
        client = AsyncWebClient(token="xoxb-1", base_url=fake.base_url)
        gate = HistoryGate(MemoryKeyValueStore())
        ask = {**WHERE, "bot_user_id": "UBOT"}
        assert await bot_in_thread(client, gate, **ask)
        assert not await bot_in_thread(client, gate, **ask)  # paced: not asked
        [call] = fake.calls_to("conversations.replies")
        assert int(call.args["limit"]) == 15 and fake.rate_limited == []


async def test_what_other_apps_post_is_told_to_the_next_turn_only() -> None:
    transcript = ThreadTranscript(MemoryKeyValueStore(), keep=10)
    await transcript.record("T1", "C1", "1.0", [{"ts": "2.0", "bot_id": "B1", "text": "a"}])
    assert [m["text"] for m in await transcript.told(**WHERE, before_ts="3.0")] == ["a"]
    assert await transcript.told(**WHERE, before_ts="3.0") != []  # a re-run of that turn
    await transcript.record("T1", "C1", "1.0", [{"ts": "4.0", "bot_id": "B1", "text": "b"}])
    assert [m["text"] for m in await transcript.told(**WHERE, before_ts="5.0")] == ["b"]
    assert await transcript.told(**WHERE, before_ts="6.0") == []


async def test_a_transcript_keeps_only_what_it_needs_of_a_message() -> None:
    huge = {
        "ts": "2.0",
        "user": "U1",
        "text": "x" * 10_000,
        "blocks": [{"big": "y" * 5000}],
        "files": [{"url_private": "https://files.slack.com/secret"}],
    }
    entry = transcript_entry(huge)
    assert entry is not None and len(entry["text"]) == 1500 and set(entry) == {"ts", "text", "user"}
    assert transcript_entry({"ts": "2.0", "text": "   "}) is None
    assert transcript_entry({"ts": 2.0, "text": "number ts"}) is None
    alert = {
        "ts": "3.0",
        "bot_id": "B1",
        "text": "",
        "attachments": [
            {"fallback": "[FIRING] disk 91%"},
            {"text": 5},
            "junk",
            {"text": "on db-1"},
        ],
    }
    assert transcript_entry(alert) == {
        "ts": "3.0",
        "text": "[FIRING] disk 91%\non db-1",
        "bot_id": "B1",
    }


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)
FIELDS = st.sampled_from(
    ["ts", "text", "user", "bot_id", "username", "user_profile", "attachments", "blocks"]
)


@settings(max_examples=200, deadline=None)
@given(message=st.dictionaries(FIELDS, JSON, max_size=8))
def test_any_message_an_event_carries_is_kept_as_strings_or_not_at_all(
    message: dict[str, Any],
) -> None:
    """Bad input: whatever types an event's fields have, an entry holds strings only."""
    entry = transcript_entry(message)
    if entry is not None:
        assert isinstance(entry["ts"], str) and entry["text"].strip()
        assert all(isinstance(v, str) for k, v in entry.items() if k != "user_profile")


MESSAGE = st.fixed_dictionaries(
    {
        "ts": st.one_of(
            st.floats(0, 100).map(str), st.sampled_from(["1.0", "1.00", "nan"]), st.text(max_size=5)
        ),
        "text": st.one_of(st.text(max_size=10), st.none(), st.integers()),
    },
)
MARK = st.fixed_dictionaries({"told": st.one_of(st.floats(0, 100).map(str), st.text(max_size=3))})
LOG = st.lists(st.one_of(MESSAGE, MARK, st.integers(), st.none(), st.text()), max_size=30)


@settings(max_examples=200, deadline=None)
@given(log=LOG, before=st.one_of(st.floats(0, 100).map(str), st.text(max_size=5)))
def test_whatever_a_log_holds_a_turn_is_told_in_order_each_message_once(
    log: list[Any], before: str
) -> None:
    """Bad input: a transcript written by an older version, or by hand, never breaks a
    turn; what it is told is ordered, unique, before its message and after the last mark."""
    told = untold(log, before)
    stamps = [ts_value(m["ts"]) for m in told]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    assert all(isinstance(m["text"], str) for m in told)
    assert all(ts < ts_value(before) for ts in stamps)
    marks = [ts_value(i["told"]) for i in log if isinstance(i, dict) and "told" in i]
    since = max((m for m in marks if m < ts_value(before)), default=-math.inf)
    assert all(ts > since for ts in stamps)


async def test_a_paced_join_answers_with_the_last_messages_it_kept_and_says_so() -> None:
    """A thread followed before (its flag expired, its transcript not): the read of the
    re-join is paced, so the turn gets what was kept, told it sees only the last of it."""
    cache = MemoryKeyValueStore()
    gate = HistoryGate(cache)
    context = ThreadContext(ThreadTranscript(cache), gate)
    kept = [{"ts": f"{n}.0", "bot_id": "B1", "text": f"alert {n}"} for n in (7, 8)]
    await context.transcript.record("T1", "C1", "1.0", kept)
    assert await gate.claim("T1")  # another thread's read took this minute
    async with FakeSlackApi(limits=NON_MARKETPLACE) as fake:
        client = AsyncWebClient(token="xoxb-1", base_url=fake.base_url)
        view = await context.before(client, **WHERE, before_ts="9.0", joins=True)
        assert fake.calls_to("conversations.replies") == []
    assert [m["text"] for m in view.messages] == ["alert 7", "alert 8"]
    assert view.notice == (
        "I can only see the last 2 messages of this thread (Slack's limits on apps)."
    )
