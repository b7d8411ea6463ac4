"""End to end through the real bolt app over HTTP: the ways people ask the bot."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.bots.slack.harness import SECRET, SlackHarness, running_bot, sign

IDENTITY = ("auth.test", "users.info", "usergroups.list", "conversations.info")


def mention(text: str = "<@UBOT> hello", ts: str = "100.000100", **extra: Any) -> dict[str, Any]:
    return {
        "type": "app_mention",
        "user": "U1",
        "text": text,
        "ts": ts,
        "channel": "C1",
        "event_ts": ts,
        **extra,
    }


def replies(h: SlackHarness) -> list[str]:
    return h.fake.methods(ignore=IDENTITY)


async def test_mention_is_answered_in_its_thread_with_the_mention_stripped(
    tmp_path: Path,
) -> None:
    async with running_bot(tmp_path, ["Hello **Ana**!"]) as h:
        response = await h.event(mention())
        assert response.status == 200
        await h.idle()
        assert replies(h) == ["assistant.threads.setStatus", "chat.postMessage"]
        post = h.fake.calls_to("chat.postMessage")[0].args
        assert (post["channel"], post["thread_ts"]) == ("C1", "100.000100")
        assert post["blocks"][0] == {"type": "markdown", "text": "Hello **Ana**!"}
        assert post["blocks"][1]["type"] == "context_actions"
        assert h.llm_questions() == ["hello"]


async def test_dm_is_answered_in_the_dm_thread(tmp_path: Path) -> None:
    async with running_bot(tmp_path, ["Hi there"]) as h:
        await h.event(
            {
                "type": "message",
                "channel_type": "im",
                "channel": "D1",
                "user": "U1",
                "text": "what can you do?",
                "ts": "200.000100",
                "client_msg_id": "m1",
            }
        )
        await h.idle()
        post = h.fake.calls_to("chat.postMessage")[0].args
        assert (post["channel"], post["thread_ts"]) == ("D1", "200.000100")
        assert h.llm_questions() == ["what can you do?"]


async def test_bot_messages_edits_and_own_messages_are_ignored(tmp_path: Path) -> None:
    async with running_bot(tmp_path, []) as h:
        base = {"type": "message", "channel_type": "im", "channel": "D1", "text": "x"}
        await h.event({**base, "user": "U9", "bot_id": "B9", "ts": "1.1"})
        await h.event({**base, "user": "UBOT", "ts": "1.2"})
        await h.event(
            {
                **base,
                "subtype": "message_changed",
                "ts": "1.3",
                "message": {"user": "U1", "text": "edited"},
            }
        )
        await h.event({**base, "subtype": "bot_message", "ts": "1.4"})
        await h.idle()
        assert replies(h) == []


async def test_slash_command_acks_at_once_and_answers_in_a_thread_it_starts(
    tmp_path: Path,
) -> None:
    async with running_bot(tmp_path, ["42 orders"]) as h:
        started = time.monotonic()
        response = await h.command("how many orders?")
        assert response.status == 200 and await response.text() == ""
        assert time.monotonic() - started < 1.0
        await h.idle()
        opener, answer = h.fake.calls_to("chat.postMessage")
        assert opener.args["text"] == "<@U1> asked: how many orders?"
        assert "thread_ts" not in opener.args
        opener_ts = h.fake.visible("C1")[0].ts
        assert answer.args["thread_ts"] == opener_ts
        assert h.bot.turns.running == 0


async def test_private_slash_command_answers_only_the_asker(tmp_path: Path) -> None:
    async with running_bot(tmp_path, ["Just for you"]) as h:
        response = await h.command("private how many orders?")
        assert json.loads(await response.text())["response_type"] == "ephemeral"
        await h.idle()
        assert replies(h) == ["chat.postEphemeral"]
        assert h.fake.calls_to("chat.postEphemeral")[0].args["user"] == "U1"
        assert h.llm_questions() == ["how many orders?"]


async def test_slash_command_in_a_channel_without_the_bot_explains_privately(
    tmp_path: Path,
) -> None:
    async with running_bot(tmp_path, []) as h:
        h.fake.errors["chat.postMessage"] = "not_in_channel"
        await h.command("hello?")
        await h.idle()
        [hook] = h.fake.calls_to("response_url")
        assert hook.args["response_type"] == "ephemeral" and "/ask private" in hook.args["text"]


async def test_empty_slash_command_shows_the_starter_ui_privately(tmp_path: Path) -> None:
    async with running_bot(tmp_path, []) as h:
        await h.command("")
        await h.idle()
        assert set(replies(h)) == {"chat.postEphemeral"}
        sent = str([c.args for c in h.fake.calls_to("chat.postEphemeral")])
        assert "threadline_button:0" in sent


async def test_follow_up_in_a_bot_thread_continues_the_conversation(tmp_path: Path) -> None:
    async with running_bot(tmp_path, ["First answer", "Second answer"]) as h:
        await h.event(mention("<@UBOT> first question"))
        await h.idle()
        await h.event(
            {
                "type": "message",
                "channel_type": "channel",
                "channel": "C1",
                "user": "U1",
                "text": "and a follow-up",
                "ts": "101.000100",
                "thread_ts": "100.000100",
            }
        )
        await h.idle()
        posts = h.fake.calls_to("chat.postMessage")
        assert [p.args["thread_ts"] for p in posts] == ["100.000100", "100.000100"]
        second = h.agent.llm_service.requests[1]  # type: ignore[attr-defined]
        assert [m.content for m in second.messages] == [
            "first question",
            "First answer",
            "and a follow-up",
        ]


async def test_messages_in_threads_without_the_bot_are_left_alone(tmp_path: Path) -> None:
    async with running_bot(tmp_path, []) as h:
        await h.event(
            {
                "type": "message",
                "channel_type": "channel",
                "channel": "C1",
                "user": "U1",
                "text": "chatting",
                "ts": "301.0",
                "thread_ts": "300.0",
            }
        )
        await h.event(
            {
                "type": "message",
                "channel_type": "channel",
                "channel": "C1",
                "user": "U1",
                "text": "top level chatter",
                "ts": "302.0",
            }
        )
        await h.idle()
        assert replies(h) == []


async def test_first_mention_in_a_human_thread_reads_the_thread(tmp_path: Path) -> None:
    async with running_bot(tmp_path, ["Looks like a cache issue."]) as h:
        h.fake.replies[("C1", "400.0")] = [
            {"ts": "400.0", "user": "U2", "text": "The dashboard is slow since Monday"},
            {
                "ts": "401.0",
                "user": "U1",
                "text": "Only for EU users",
                "user_profile": {"display_name": "Ana"},
            },
            {"ts": "402.0", "user": "U1", "text": "<@UBOT> what do you make of this?"},
        ]
        await h.event(mention("<@UBOT> what do you make of this?", ts="402.0", thread_ts="400.0"))
        await h.idle()
        assert "conversations.replies" in replies(h)
        [question] = h.llm_questions()
        assert "<@U2>: The dashboard is slow since Monday" in question
        assert "<@U1> (Ana): Only for EU users" in question
        assert question.endswith("My question: what do you make of this?")
        assert question.count("what do you make of this") == 1


async def test_retry_storm_and_duplicate_deliveries_get_exactly_one_reply(
    tmp_path: Path,
) -> None:
    async with running_bot(tmp_path, ["Only once"]) as h:
        event = mention(client_msg_id="cm-1")
        deliveries = [h.event(event, event_id="EvSame", retry=n or None) for n in range(5)]
        as_message = {**event, "type": "message", "channel_type": "channel"}
        deliveries.append(h.event(as_message, event_id="EvOther"))
        responses = await asyncio.gather(*deliveries)
        assert all(r.status == 200 for r in responses)
        await h.idle()
        assert replies(h) == ["assistant.threads.setStatus", "chat.postMessage"]
        assert len(h.agent.llm_service.requests) == 1  # type: ignore[attr-defined]
        metrics = await (await h.http.get("/metrics")).text()
        assert "threadline_slack_duplicates_total 4.0" in metrics  # the 4 retries


async def test_rate_limited_post_is_retried_after_retry_after(tmp_path: Path) -> None:
    from adapters.slack.testing import Reply

    async with running_bot(tmp_path, ["Patience"]) as h:
        h.fake.script("chat.postMessage", Reply(status=429, retry_after=0))
        await h.event(mention())
        await h.idle()
        assert replies(h) == ["assistant.threads.setStatus", "chat.postMessage", "chat.postMessage"]
        assert len(h.fake.visible("C1")) == 1


# --- bad input -------------------------------------------------------------------------------


def event_body(**extra: Any) -> bytes:
    return json.dumps(
        {
            "team_id": "T1",
            "type": "event_callback",
            "event_id": "EvBad",
            "event": mention(),
            **extra,
        }
    ).encode()


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param(sign(event_body(), secret="forged-secret"), id="forged"),
        pytest.param(sign(event_body(), timestamp=int(time.time()) - 3600), id="stale"),
        pytest.param({}, id="unsigned"),
        pytest.param(
            {"X-Slack-Request-Timestamp": "nope", "X-Slack-Signature": "v0=00"},
            id="unparseable-timestamp",
        ),
    ],
)
async def test_requests_without_a_valid_signature_are_refused(
    tmp_path: Path, headers: dict[str, str]
) -> None:
    """Regression (unparseable-timestamp): bolt raised on a non-numeric timestamp -> 500."""
    async with running_bot(tmp_path, []) as h:
        response = await h.post(event_body(), headers, "application/json")
        assert response.status == 401
        await h.idle()
        assert h.fake.calls == []


async def test_malformed_json_with_a_valid_signature_does_nothing(tmp_path: Path) -> None:
    """Regression: a body that is not JSON made the endpoint answer 500 (Slack retries).
    Issue 17: a signed delivery that cannot be read is acknowledged (200: Slack would retry
    a 400 too) and dropped, with no Web API call."""
    async with running_bot(tmp_path, []) as h:
        body = b'{"type": "event_callback", "event": {'
        response = await h.post(body, sign(body), "application/json")
        assert response.status == 200
        await h.idle()
        assert h.fake.calls == []


async def test_unknown_event_types_are_acked_and_ignored(tmp_path: Path) -> None:
    async with running_bot(tmp_path, []) as h:
        response = await h.event({"type": "emoji_changed", "subtype": "add", "name": "x"})
        assert response.status == 200
        await h.idle()
        assert h.fake.methods() == []


async def test_url_verification_challenge_is_answered(tmp_path: Path) -> None:
    async with running_bot(tmp_path, []) as h:
        body = json.dumps({"type": "url_verification", "challenge": "abc", "token": "t"}).encode()
        response = await h.post(body, sign(body), "application/json")
        assert response.status == 200 and "abc" in await response.text()


async def test_signature_uses_the_configured_secret() -> None:
    """The harness signs like Slack; a different secret must not verify."""
    assert sign(b"x", timestamp=1) != sign(b"x", timestamp=1, secret=SECRET + "x")


async def test_slash_command_name_is_configurable(tmp_path: Path) -> None:
    async with running_bot(tmp_path, ["Configured"], command="/data") as h:
        assert (await h.command("hello", command="/ask")).status == 404
        response = await h.command("hello", command="/data")
        assert response.status == 200
        await h.idle()
        assert h.llm_questions() == ["hello"]


async def test_an_integrations_mention_without_a_user_is_acked_and_ignored(
    tmp_path: Path,
) -> None:
    """Regression (issue 17): an ``app_mention`` without ``user``, as integrations send it,
    answered 500 and Slack retried it three times."""
    async with running_bot(tmp_path, ["never"]) as h:
        mention = {
            "type": "app_mention",
            "bot_id": "B9",
            "text": "<@UBOT> report",
            "ts": "30.0",
            "channel": "C1",
        }
        response = await h.event(mention)
        assert response.status == 200
        await h.idle()
        assert h.fake.methods() == [] and h.llm_questions() == []
