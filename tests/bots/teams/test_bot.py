"""The Teams bot end to end: signed activities into the real CloudAdapter over HTTP, exact
calls out to the fake Bot Connector."""

from __future__ import annotations

import itertools
import json

import pytest

from adapters.teams.testing import ConnectorCall
from agent_core.llm.scripted import ScriptedResponse
from tests.adapters.teams.payloads import TENANT
from tests.adapters.teams.schemas import assert_valid_card, cards_in
from tests.bots.teams.agents import FeedbackLog
from tests.bots.teams.harness import ADMIN, MEMBER, is_answer, teams_bot


def stream_kind(call: ConnectorCall) -> str | None:
    return call.stream_info.get("streamType") if call.stream_info else None


async def test_personal_chat_question(monkeypatch: pytest.MonkeyPatch) -> None:
    script = [ScriptedResponse(text="Sales rose **12%** last week.", latency=0.1, chunk_delay=0.03)]
    async with teams_bot(monkeypatch, script) as bot:
        activity = bot.message("How did sales do?")
        response = await bot.post(activity)
        assert response.status == 201
        final = await bot.final()
        calls = bot.fake.calls
        assert calls[0].operation == "get_conversation_member"
        assert calls[0].path.endswith("/members/29%3Aaad-ana") or calls[0].path.endswith(
            "/members/29:aad-ana"
        )
        replies = [c for c in calls if c.operation == "reply_to_activity"]
        assert all(c.activity_id == activity["id"] for c in replies)
        assert all(c.conversation_id == activity["conversation"]["id"] for c in replies)
        assert next(stream_kind(c) for c in replies) == "informative"
        assert stream_kind(replies[-1]) == "final" and replies[-1] is final
        assert {stream_kind(c) for c in replies[1:-1]} == {"streaming"}
        assert final.text == "Sales rose **12%** last week."
        assert final.body["channelData"]["feedbackLoop"] == {"type": "default"}
        assert any(
            e.get("additionalType") == ["AIGeneratedContent"] for e in final.body["entities"]
        )
        assert all(c.headers["Authorization"].startswith("Bearer ") for c in replies)
        assert bot.fake.token_requests[0]["kind"] == "managed_identity"
        request = bot.llm.requests[0]
        assert request.user.id == f"teams:{TENANT}:{MEMBER}"
        assert request.user.email == f"{MEMBER}@contoso.com"
        assert request.user.group_memberships == ["user"]
        assert request.messages[-1].content == "How did sales do?"


async def test_group_chat_mention(monkeypatch: pytest.MonkeyPatch) -> None:
    async with teams_bot(monkeypatch, ["Hi all."]) as bot:
        activity = bot.message("what's new?", kind="groupChat")
        assert (await bot.post(activity)).status == 201
        final = await bot.final()
        replies = [c for c in bot.fake.calls if c.operation == "reply_to_activity"]
        assert replies[0].activity_type == "typing" and replies[0].stream_info is None
        assert replies[-1] is final and final.stream_info is None
        assert final.text == "Hi all."
        assert bot.llm.requests[0].messages[-1].content == "what's new?"


async def test_channel_mention_replies_in_the_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    async with teams_bot(monkeypatch, ["Deploy is green."]) as bot:
        activity = bot.message("status of the deploy?", kind="channel")
        assert (await bot.post(activity)).status == 201
        final = await bot.final()
        assert final.conversation_id == "19:general@thread.tacv2;messageid=1700000000000"
        assert final.activity_id == activity["id"]
        assert final.text == "Deploy is green."
        context = bot.llm.requests[0]
        assert context.messages[-1].content == "status of the deploy?"


async def test_redelivered_activity_gets_one_reply(monkeypatch: pytest.MonkeyPatch) -> None:
    async with teams_bot(monkeypatch, ["First answer.", "Second answer."]) as bot:
        activity = bot.message("once please", kind="groupChat")
        assert (await bot.post(activity)).status == 201
        assert (await bot.post(activity)).status == 201  # Teams retried the delivery
        await bot.final()
        sentinel = bot.message("and now?", kind="groupChat")
        await bot.post(sentinel)
        await bot.final(count=2)
        assert [c.text for c in bot.answers()] == ["First answer.", "Second answer."]
        assert len(bot.llm.requests) == 2


async def test_long_answer_is_split(monkeypatch: pytest.MonkeyPatch) -> None:
    answer = "\n\n".join(f"Section {i}. " + "detail " * 400 for i in range(12))
    async with teams_bot(monkeypatch, [answer], latency=0.1) as bot:
        await bot.post(bot.message("tell me everything"))
        await bot.final(count=2)
        await bot.fake.wait_for(
            lambda c: is_answer(c) and c.text is not None and "Section 11." in c.text
        )
        answers = bot.answers()
        assert stream_kind(answers[0]) == "final"
        assert all(len(json.dumps(c.body).encode("utf-16-le")) < 40_000 for c in answers)
        streamed = [c for c in bot.fake.calls if stream_kind(c) == "streaming"]
        assert all(len(c.text or "") <= 16_000 for c in streamed)
        assert " ".join(" ".join(c.text or "" for c in answers).split()) == " ".join(answer.split())


async def test_300_row_table(monkeypatch: pytest.MonkeyPatch) -> None:
    script = [
        ScriptedResponse.tool("run_sql", {"sql": "select * from customers", "rows": 300}),
        "Here are the customers.",
    ]
    async with teams_bot(monkeypatch, script) as bot:
        await bot.post(bot.message("list customers", kind="groupChat"))
        final = await bot.final()
        (card,) = cards_in(final.body)
        assert_valid_card(card)
        table = next(e for e in card["body"] if e["type"] == "Table")
        shown = len(table["rows"]) - 1
        assert 40 <= shown <= 50
        assert card["body"][-1]["text"] == f"Showing {shown} of 300 rows."
        assert len(json.dumps(final.body).encode("utf-16-le")) < 40_000
        assert final.text == "Here are the customers."


async def test_chart(monkeypatch: pytest.MonkeyPatch) -> None:
    script = [ScriptedResponse.tool("draw_chart", {"kind": "bar"}), "Signups peaked Tuesday."]
    async with teams_bot(monkeypatch, script, latency=0.1) as bot:
        await bot.post(bot.message("chart signups"))
        final = await bot.final()
        (card,) = cards_in(final.body)
        assert_valid_card(card)
        chart = next(e for e in card["body"] if e["type"].startswith("Chart."))
        assert chart["type"] == "Chart.VerticalBar"  # Teams' own chart
        assert {"x": "Tue", "y": 5.0} in chart["data"]
        assert chart["fallback"]["type"] == "Image"  # the PNG, for clients without charts
        assert chart["fallback"]["url"].startswith("data:image/png;base64,")
        informative = [c.text for c in bot.fake.calls if stream_kind(c) == "informative"]
        assert informative[0] == "Working..."
        assert any("draw_chart" in (text or "") for text in informative[1:])


async def test_streaming_is_paced(monkeypatch: pytest.MonkeyPatch) -> None:
    words = " ".join(f"word{i}" for i in range(40))
    script = [ScriptedResponse(text=words, chunk_delay=0.005)]
    async with teams_bot(monkeypatch, script, stream_interval=0.1) as bot:
        await bot.post(bot.message("stream please"))
        await bot.final()
        stream = [c for c in bot.fake.calls if c.stream_info is not None]
        assert len(stream) >= 3
        gaps = [b.at - a.at for a, b in itertools.pairwise(stream)]
        assert min(gaps) >= 0.1 * 0.95
        sequences = [
            c.stream_info["streamSequence"]
            for c in stream  # type: ignore[index]
            if stream_kind(c) != "final"
        ]
        assert sequences == list(range(1, len(sequences) + 1))


async def test_streaming_refused_falls_back_to_updates(monkeypatch: pytest.MonkeyPatch) -> None:
    script = [ScriptedResponse(text="one two three four five six", chunk_delay=0.02)]
    async with teams_bot(monkeypatch, script) as bot:
        bot.fake.fail("stream_informative", 403, code="ContentStreamNotAllowed")
        await bot.post(bot.message("hello"))
        await bot.fake.wait_for(
            lambda c: c.operation == "update_activity" and c.text == "one two three four five six"
        )
        posted = next(c for c in bot.fake.calls if c.activity_type == "message")
        assert posted.operation == "reply_to_activity" and posted.stream_info is None
        updates = [c for c in bot.fake.calls if c.operation == "update_activity"]
        assert {u.activity_id for u in updates} == {bot.fake.calls[-1].activity_id}


async def test_user_stop_cancels_the_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    script = [ScriptedResponse(text=" ".join(["token"] * 200), chunk_delay=0.01)]
    async with teams_bot(monkeypatch, script) as bot:
        bot.fake.fail(
            "stream",
            403,
            code="ContentStreamNotAllowed",
            message="Message streaming has been stopped by the user",
        )
        await bot.post(bot.message("go"))
        await bot.fake.wait_for(lambda c: c.status == 403)
        await bot.host.turns.idle()
        assert bot.host.metrics.turns.labels(outcome="stopped")._value.get() == 1
        assert not [c for c in bot.fake.calls if stream_kind(c) == "final"]


TOOL_SCRIPT = [
    ScriptedResponse.tool("run_sql", {"sql": "select secret from vault", "rows": 2}),
    "Two rows.",
]


async def test_admin_gets_tool_arguments_privately_in_a_group(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with teams_bot(monkeypatch, TOOL_SCRIPT, targeted_messages=True) as bot:
        await bot.post(
            bot.message("query it", kind="groupChat", user=ADMIN, user_name="Alex Admin")
        )
        final = await bot.final()
        assert "select secret" not in json.dumps(final.body)
        private = await bot.fake.wait_for(lambda c: c.query.get("isTargetedActivity") == "true")
        assert private.body["recipient"]["id"] == f"29:{ADMIN}"
        assert "select secret from vault" in json.dumps(private.body)
        for card in cards_in(private.body):
            assert_valid_card(card)
        public = [c for c in bot.fake.calls if not c.query]
        assert "select secret" not in json.dumps([c.body for c in public])


async def test_admin_gets_tool_arguments_inline_in_a_personal_chat(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with teams_bot(monkeypatch, TOOL_SCRIPT) as bot:
        await bot.post(bot.message("query it", user=ADMIN, user_name="Alex Admin"))
        final = await bot.final()
        assert "select secret from vault" in json.dumps(cards_in(final.body))


async def test_non_admin_never_receives_tool_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    async with teams_bot(monkeypatch, TOOL_SCRIPT, targeted_messages=True) as bot:
        await bot.post(bot.message("query it", kind="groupChat", user=MEMBER))
        final = await bot.final()
        assert final.text == "Two rows."
        everything = json.dumps([c.body for c in bot.fake.calls])
        assert "select secret" not in everything
        private = [
            c
            for c in bot.fake.calls
            if c.query.get("isTargetedActivity") or c.operation == "create_conversation"
        ]
        assert not private  # the roster read (pagedmembers) has a query too: not a message


async def test_feedback_invoke_is_answered_and_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    log = FeedbackLog()
    async with teams_bot(monkeypatch, [], hooks=[log]) as bot:
        value = {
            "actionName": "feedback",
            "actionValue": {
                "reaction": "like",
                "feedback": json.dumps({"feedbackText": "spot on"}),
            },
        }
        invoke = bot.invoke("message/submitAction", value)
        invoke["replyToId"] = "1700000000042"
        response = await bot.post(invoke)
        assert response.status == 200
        assert (await bot.post(invoke)).status == 200  # redelivered: recorded once
        ((user, feedback),) = log.entries
        assert user.id == f"teams:{TENANT}:{MEMBER}"
        assert (
            feedback.conversation_id,
            feedback.message_id,
            feedback.positive,
            feedback.comment,
        ) == (f"teams:{TENANT}:a:1personal-{MEMBER}", "1700000000042", True, "spot on")
        assert not [c for c in bot.fake.calls if c.operation != "get_conversation_member"]


async def test_card_action_invoke_runs_a_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    async with teams_bot(monkeypatch, ["Here is the help."]) as bot:
        value = {
            "action": {
                "type": "Action.Execute",
                "verb": "threadline.action",
                "data": {"threadline_action": "Show the weekly report"},
            }
        }
        response = await bot.post(bot.invoke("adaptiveCard/action", value, kind="groupChat"))
        assert response.status == 200
        assert await response.json() == {
            "statusCode": 200,
            "type": "application/vnd.microsoft.activity.message",
            "value": "On it.",
        }
        final = await bot.final()
        assert final.text == "Here is the help."
        assert bot.llm.requests[0].messages[-1].content == "Show the weekly report"


async def test_unknown_invoke_is_acknowledged_and_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 17 (was 501): no request gets a 5xx; an invoke the bot does not offer is
    acknowledged and nothing is sent."""
    async with teams_bot(monkeypatch) as bot:
        response = await bot.post(bot.invoke("composeExtension/query", {"q": 1}))
        assert response.status == 200
        await bot.host.turns.idle()
        assert bot.fake.calls == []


async def test_cut_table_is_offered_as_csv_in_a_personal_chat(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = [
        ScriptedResponse.tool("run_sql", {"sql": "select * from customers", "rows": 300}),
        "Here are the customers.",
    ]
    async with teams_bot(monkeypatch, script) as bot:
        activity = bot.message("list customers")
        await bot.post(activity)
        final = await bot.final()
        consent = next(
            a
            for a in final.body["attachments"]
            if a["contentType"] == "application/vnd.microsoft.teams.card.file.consent"
        )
        assert consent["name"] == "Query_result.csv"
        offer = consent["content"]["acceptContext"]

        def answer(action: str) -> dict:
            value = {
                "type": "fileUpload",
                "action": action,
                "context": offer,
                "uploadInfo": bot.fake.upload_info("Query_result.csv"),
            }
            return bot.invoke("fileConsent/invoke", value)

        assert (await bot.post(answer("accept"))).status == 200
        shown = await bot.fake.wait_for(
            lambda c: (
                c.activity_type == "message"
                and any(
                    a["contentType"] == "application/vnd.microsoft.teams.card.file.info"
                    for a in c.body.get("attachments", [])
                )
            )
        )
        assert shown.conversation_id == activity["conversation"]["id"]
        rows = bot.fake.uploads["Query_result.csv"].decode("utf-8-sig").splitlines()
        assert rows[0] == "id,name,spend" and len(rows) == 301
        upload = next(c for c in bot.fake.calls if c.operation == "upload")
        assert upload.headers["Content-Range"] == f"bytes 0-{upload.body - 1}/{upload.body}"

        uploads = len([c for c in bot.fake.calls if c.operation == "upload"])
        assert (await bot.post(answer("accept"))).status == 200  # the offer is used up
        await bot.host.turns.idle()
        assert len([c for c in bot.fake.calls if c.operation == "upload"]) == uploads


async def test_declined_or_foreign_file_offers_upload_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = [ScriptedResponse.tool("run_sql", {"sql": "select 1", "rows": 120}), "Rows."]
    async with teams_bot(monkeypatch, script) as bot:
        await bot.post(bot.message("list"))
        final = await bot.final()
        offer = next(a for a in final.body["attachments"] if "file.consent" in a["contentType"])
        context = offer["content"]["acceptContext"]
        info = bot.fake.upload_info("x.csv")
        other_chat = bot.invoke(
            "fileConsent/invoke",
            {"type": "fileUpload", "action": "accept", "context": context, "uploadInfo": info},
            user="aad-bo",
        )
        assert (await bot.post(other_chat)).status == 200
        decline = bot.invoke(
            "fileConsent/invoke", {"type": "fileUpload", "action": "decline", "context": context}
        )
        assert (await bot.post(decline)).status == 200
        await bot.host.turns.idle()
        assert not bot.fake.uploads


async def test_group_chats_get_no_file_offers(monkeypatch: pytest.MonkeyPatch) -> None:
    script = [ScriptedResponse.tool("run_sql", {"sql": "select 1", "rows": 120}), "Rows."]
    async with teams_bot(monkeypatch, script) as bot:
        await bot.post(bot.message("list", kind="groupChat"))
        final = await bot.final()
        assert {a["contentType"] for a in final.body["attachments"]} == {
            "application/vnd.microsoft.card.adaptive"
        }


async def test_questions_in_one_thread_are_answered_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = [ScriptedResponse(text="first", latency=0.2), ScriptedResponse(text="second")]
    async with teams_bot(monkeypatch, script) as bot:
        await bot.post(bot.message("one", kind="groupChat"))
        await bot.post(bot.message("two", kind="groupChat"))
        await bot.final(count=2)
        assert [c.text for c in bot.answers()] == ["first", "second"]
        assert [r.messages[-1].content for r in bot.llm.requests] == ["one", "two"]


async def test_installing_the_bot_in_a_personal_chat_shows_the_starter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with teams_bot(monkeypatch) as bot:
        update = bot.message("", mention_bot=False)
        update.update(type="conversationUpdate", membersAdded=[update["recipient"]])
        del update["text"]
        assert (await bot.post(update)).status == 201
        final = await bot.final()
        assert final.text or final.body.get("attachments")
        assert not bot.llm.requests  # the starter UI needs no model call
        group = bot.message("", kind="groupChat", mention_bot=False)
        group.update(type="conversationUpdate", membersAdded=[group["recipient"]])
        assert (await bot.post(group)).status == 201
        await bot.host.turns.idle()
        assert len(bot.answers()) == 1
