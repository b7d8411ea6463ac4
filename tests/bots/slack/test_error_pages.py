"""Issue 17: a Slack Web API error whose body is not JSON breaks no turn.

An HTML or plain-text 5xx page (a proxy in front of Slack during an incident), a 405 with no
body, or a page mislabelled ``application/json``: every ``except SlackApiError`` handler read
``error.response.get("error")`` and raised ``AttributeError`` instead, so the asker got
"Something went wrong" (identity), no reply at all (the status line) or lost the text answer
(uploads). Each degraded path, through the whole bot, with the fake answering with pages.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.errors import slack_failure
from adapters.slack.testing import FakeSlackApi, Reply
from agent_core import ScriptedResponse
from agent_core.users import OUTSIDER_REFUSAL
from tests.bots.slack.harness import running_bot

PAGES = {
    "html 503": Reply.page(503),
    "plain 502": Reply.page(502, "text/plain"),
    "empty 405": Reply.page(405, ""),
    "html labelled json": Reply.page(500, "application/json"),
}


def mention(ts: str, text: str = "<@UBOT> how many?", user: str = "U1") -> dict[str, str]:
    return {"type": "app_mention", "user": user, "text": text, "ts": ts, "channel": "C1"}


def answers(fake: FakeSlackApi, thread: str) -> list[str]:
    return [m.text for m in fake.thread("C1", thread) if m.text]


@pytest.mark.parametrize("page", PAGES.values(), ids=PAGES.keys())
async def test_every_page_reads_as_a_failure_with_a_code(page: Reply) -> None:
    async with FakeSlackApi() as fake:
        fake.errors["chat.postMessage"] = page
        client = AsyncWebClient(token="xoxb-1", base_url=fake.base_url)
        with pytest.raises(SlackApiError) as caught:
            await client.chat_postMessage(channel="C1", text="hi")
        failure = slack_failure(caught.value)
        assert failure.status == page.status and failure.server_fault == (page.status >= 500)
        assert failure.code in (f"http_{page.status}", "unreadable_response")
        assert "\n" not in failure.detail and len(failure.detail) <= 200


@pytest.mark.parametrize("page", PAGES.values(), ids=PAGES.keys())
async def test_identity_lookups_failing_with_a_page_still_answer(
    tmp_path: Path, page: Reply
) -> None:
    """The user groups failing with a page: the person is answered with fewer groups; their
    ``users.info`` failing too (issue 35: fail closed): one sentence, nothing runs."""
    async with running_bot(tmp_path, ["Forty-two."]) as h:
        h.fake.errors["usergroups.list"] = page
        await h.event(mention("10.0"))
        await h.idle()
        assert answers(h.fake, "10.0") == ["Forty-two."]
        h.fake.errors["users.info"] = page
        await h.event(mention("10.5", user="U2"))
        await h.idle()
        assert answers(h.fake, "10.5") == [OUTSIDER_REFUSAL]
        assert len(h.agent.llm_service.requests) == 1  # type: ignore[attr-defined]


async def test_the_status_line_failing_with_a_page_still_answers(tmp_path: Path) -> None:
    async with running_bot(tmp_path, ["Forty-two."]) as h:
        h.fake.errors["assistant.threads.setStatus"] = Reply.page(503)
        await h.event(mention("11.0"))
        await h.idle()
        assert h.fake.calls_to("assistant.threads.setStatus")
        assert answers(h.fake, "11.0") == ["Forty-two."]


async def test_an_upload_failing_with_a_page_keeps_the_table_and_the_text(
    tmp_path: Path,
) -> None:
    script = [ScriptedResponse.tool("run_sql", {"sql": "select *", "rows": 300}), "Here."]
    async with running_bot(tmp_path, script) as h:
        h.fake.errors["files.getUploadURLExternal"] = Reply.page(502, "text/plain")
        await h.event(mention("12.0"))
        await h.idle()
        thread = h.fake.thread("C1", "12.0")
        assert any(b["type"] == "table" for m in thread for b in m.blocks)
        # the answer comes first in the thread, then its table (issue 15's order)
        assert [m.text for m in thread].count("Here.") == 1 and not h.fake.uploads


async def test_streaming_failing_with_a_page_answers_with_post_and_update(
    tmp_path: Path,
) -> None:
    async with running_bot(tmp_path, ["A streamed answer."]) as h:
        h.fake.errors["chat.startStream"] = Reply.page(500, "application/json")
        await h.event(mention("13.0"))
        await h.idle()
        assert answers(h.fake, "13.0") == ["A streamed answer."]
        assert h.fake.calls_to("chat.postMessage")


async def test_an_ephemeral_failing_with_a_page_goes_through_the_response_url(
    tmp_path: Path,
) -> None:
    async with running_bot(tmp_path, ["Just for you."]) as h:
        h.fake.errors["chat.postEphemeral"] = Reply.page(405, "")
        await h.command("private how many orders?")
        await h.idle()
        [hook] = [
            c
            for c in h.fake.calls_to("response_url")
            if c.args["hook"] == "cmd"
            and "Just for you." in str(c.args.get("blocks") or c.args.get("text"))
        ]
        assert hook.args["response_type"] == "ephemeral"


async def test_a_delete_failing_with_a_page_does_not_stop_the_answer(tmp_path: Path) -> None:
    """The "Working on it… Stop" message cannot be deleted: the answer still completes."""
    async with running_bot(tmp_path, ["Slow answer."], latency=0.3, stop_button_after=0.01) as h:
        h.fake.errors["chat.delete"] = Reply.page(503)
        await h.event(mention("14.0"))
        await h.idle()
        assert h.fake.calls_to("chat.delete")
        assert "Slow answer." in answers(h.fake, "14.0")
