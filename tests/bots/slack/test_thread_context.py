"""Thread context within Slack's limits, end to end: signed events into the real bot, the
fake Slack Web API enforcing what Slack enforces on apps outside the Marketplace (one read
of a thread a minute per workspace, 15 messages a read, 429 with ``Retry-After``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from slack_sdk.models.blocks import AlertBlock, Block

from adapters.slack.testing import NON_MARKETPLACE, FakeSlackApi, Reply
from agent_core.state_factory import StateSettings, build_state
from tests.bots.slack.harness import SlackHarness, running_bot

READS = "conversations.replies"
CANNOT_SEE = "I can't see this thread's earlier messages right now"


def mention(ts: str, thread_ts: str | None = None, text: str = "<@UBOT> so?") -> dict[str, Any]:
    event = {"type": "app_mention", "user": "U1", "text": text, "ts": ts, "channel": "C1"}
    return event | ({"thread_ts": thread_ts} if thread_ts else {})


def reply(ts: str, thread_ts: str, text: str, user: str = "U2") -> dict[str, Any]:
    return {
        "type": "message",
        "channel_type": "channel",
        "channel": "C1",
        "user": user,
        "text": text,
        "ts": ts,
        "thread_ts": thread_ts,
    }


def app_post(ts: str, thread_ts: str, text: str, bot_id: str = "BPAGER") -> dict[str, Any]:
    return {
        "type": "message",
        "subtype": "bot_message",
        "channel_type": "channel",
        "channel": "C1",
        "bot_id": bot_id,
        "username": "pager",
        "text": text,
        "ts": ts,
        "thread_ts": thread_ts,
    }


def human_thread(fake: FakeSlackApi, thread_ts: str, count: int) -> None:
    """A thread people wrote before the bot was mentioned (``count`` messages, the parent
    first), then the mention at ``thread_ts + count``."""
    start = float(thread_ts)
    fake.replies[("C1", thread_ts)] = [
        {"ts": f"{start + n:.6f}", "user": "U2", "text": f"message {n}"} for n in range(count)
    ]


def notices(h: SlackHarness, thread_ts: str) -> list[str]:
    """What the asker was told the answer could not see: Block Kit alerts, as slack_sdk's
    models read them."""
    told = [m for m in h.fake.thread("C1", thread_ts) if (m.text or "").startswith("I can")]
    for message in told:
        [alert] = Block.parse_all(message.blocks)
        assert isinstance(alert, AlertBlock) and alert.level == "info"
        alert.validate_json()
        assert alert.text is not None and message.text in alert.text.text
    return [m.text for m in told]


async def test_a_followed_thread_is_never_read_again_and_hears_other_apps(tmp_path: Path) -> None:
    """Goal of issue 13: 0 history calls for a thread the bot follows; what another app
    posts there reaches the next turn once."""
    async with FakeSlackApi(limits=NON_MARKETPLACE) as fake:
        human_thread(fake, "400.000000", 3)
        script = ["Looks like the cache.", "The pager says so too.", "Fine."]
        async with running_bot(tmp_path, script, fake=fake) as h:
            await h.event(mention("403.000000", "400.000000"))
            await h.idle()
            await h.event(app_post("404.000000", "400.000000", "ALERT: cache hit rate 3%"))
            await h.event(reply("405.000000", "400.000000", "and now?", user="U1"))
            await h.idle()
            await h.event(mention("406.000000", "400.000000", "<@UBOT> anything else?"))
            await h.idle()
        first, second, third = h.llm_questions()
        assert "message 2" in first and "ALERT" not in first
        assert "a bot (pager): ALERT: cache hit rate 3%" in second and "message 2" not in second
        assert second.endswith("My question: and now?")
        assert third == "anything else?"  # nothing new: told once
        assert len(fake.calls_to(READS)) == 1 and fake.rate_limited == []
        assert notices(h, "400.000000") == []


async def test_mentions_in_many_new_threads_stay_within_one_read_a_minute(tmp_path: Path) -> None:
    """A busy workspace: three threads mention the bot within a minute. One read; the
    others are answered at once with what the bot can see, and say so; Slack never
    answers 429."""
    async with FakeSlackApi(limits=NON_MARKETPLACE) as fake:
        for thread in ("500.000000", "600.000000", "700.000000"):
            human_thread(fake, thread, 4)
        async with running_bot(tmp_path, ["One.", "Two.", "Three."], fake=fake) as h:
            for thread in ("500.000000", "600.000000", "700.000000"):
                await h.event(mention(f"{float(thread) + 4:.6f}", thread))
            await h.idle()
        assert len(fake.calls_to(READS)) == 1 and fake.rate_limited == []
        read, *unread = ("500.000000", "600.000000", "700.000000")
        assert notices(h, read) == []
        for thread in unread:
            [notice] = notices(h, thread)
            assert notice.startswith(CANNOT_SEE)
            assert any(m.text and m.text.endswith(".") for m in fake.thread("C1", thread))
        questions = h.llm_questions()
        assert sum("message 3" in q for q in questions) == 1
        assert sum(CANNOT_SEE in q for q in questions) == 2  # the model knows, too


async def test_a_429_pauses_every_read_for_its_retry_after_and_no_turn_waits(
    tmp_path: Path,
) -> None:
    """A Marketplace app (no pacing of its own) still honours Retry-After: the turn that
    got the 429 answers without waiting, and no read is tried while it runs."""
    async with FakeSlackApi() as fake:
        human_thread(fake, "800.000000", 2)
        human_thread(fake, "900.000000", 2)
        fake.script(READS, Reply(status=429, retry_after=30))
        async with running_bot(tmp_path, ["A.", "B."], fake=fake, history_interval=0) as h:
            await h.event(mention("802.000000", "800.000000"))
            await h.idle()
            await h.event(mention("902.000000", "900.000000"))
            await h.idle()
            paused = await h.bot.state.cache.get("slack:history:T1:conversations.replies")
        assert len(fake.calls_to(READS)) == 1  # not retried after 30 s, not tried again
        assert paused is not None
        assert [n[: len(CANNOT_SEE)] for n in notices(h, "800.000000")] == [CANNOT_SEE]
        assert [n[: len(CANNOT_SEE)] for n in notices(h, "900.000000")] == [CANNOT_SEE]


async def test_a_long_thread_is_read_in_one_request_of_fifteen(tmp_path: Path) -> None:
    """A 40-message thread: one read of 15 messages (Slack's most), and the answer says it
    saw only the first of them."""
    async with FakeSlackApi(limits=NON_MARKETPLACE) as fake:
        human_thread(fake, "1000.000000", 40)
        async with running_bot(tmp_path, ["Long."], fake=fake) as h:
            await h.event(mention("1040.000000", "1000.000000"))
            await h.idle()
        [read] = fake.calls_to(READS)
        assert int(read.args["limit"]) == 15
        [notice] = notices(h, "1000.000000")
        assert notice.startswith("I can only see the first 15 messages of this thread")
        [question] = h.llm_questions()
        assert "message 14" in question and "message 15" not in question


async def test_what_another_app_posts_in_a_thread_the_bot_does_not_follow_is_not_kept(
    tmp_path: Path,
) -> None:
    async with running_bot(tmp_path, ["Hi."]) as h:
        await h.event(app_post("1101.000000", "1100.000000", "deploy done"))
        await h.event(app_post("1102.000000", "1102.000000", "top level, not a reply"))
        await h.idle()
        log = await h.bot.state.cache.append(
            "slack:thread-messages:slack:T1:C1:1100.000000", [], keep=10
        )
        assert log == [] and h.fake.methods(ignore=("auth.test",)) == []


@pytest.mark.parametrize(
    "event",
    [
        {"text": ["not", "text"]},
        {"ts": None},
        {"thread_ts": 5},
        {"channel": {"id": "C1"}},
        {"bot_id": ""},
        {"subtype": "message_changed"},
    ],
    ids=["text-list", "no-ts", "thread-number", "channel-object", "no-bot", "an-edit"],
)
async def test_a_malformed_app_message_is_acked_and_kept_nowhere(
    tmp_path: Path, event: dict[str, Any]
) -> None:
    """Bad input: an app's message with fields of the wrong type changes nothing."""
    async with running_bot(tmp_path, ["Noted.", "Fine."]) as h:
        await h.event(mention("1200.000000"))
        await h.idle()
        response = await h.event(app_post("1201.000000", "1200.000000", "x") | event)
        assert response.status == 200
        await h.event(reply("1202.000000", "1200.000000", "and?", user="U1"))
        await h.idle()
        assert h.llm_questions()[-1] == "and?"


async def test_on_redis_a_second_process_hears_what_the_first_kept(
    tmp_path: Path, redis_url: str, key_prefix: str
) -> None:
    """Two bots sharing Redis (either answers any turn): an app's message delivered to one
    process reaches the next turn wherever it runs; the read and its pacing are shared."""
    settings = StateSettings(redis_url=redis_url, key_prefix=key_prefix)
    async with FakeSlackApi(limits=NON_MARKETPLACE) as fake:
        human_thread(fake, "1300.000000", 2)
        human_thread(fake, "1400.000000", 2)
        first_state, second_state = build_state(settings), build_state(settings)
        try:
            async with (
                running_bot(tmp_path, ["Ok."] * 3, fake=fake, state=first_state) as a,
                running_bot(tmp_path, ["Ok."] * 3, fake=fake, state=second_state) as b,
            ):
                await a.event(mention("1302.000000", "1300.000000"))
                await a.idle()
                await b.event(app_post("1303.000000", "1300.000000", "disk 91%"))
                await b.idle()
                await b.event(mention("1402.000000", "1400.000000"))  # paced: no read
                await b.idle()
                await a.event(reply("1304.000000", "1300.000000", "why?", user="U1"))
                await a.idle()
        finally:
            await first_state.aclose()
            await second_state.aclose()
    questions = a.llm_questions() + b.llm_questions()
    [told] = [q for q in questions if "a bot (pager): disk 91%" in q]
    assert told.endswith("My question: why?")
    assert len(fake.calls_to(READS)) == 1 and fake.rate_limited == []
    assert sum(CANNOT_SEE in q for q in questions) == 1
