"""End to end: what a turn looks like in Slack (limits, tables, charts, privacy, Stop, feedback)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from adapters.slack.controls import FEEDBACK_ACTION, STOP_ACTION
from adapters.slack.limits import MAX_BLOCKS, MAX_MARKDOWN_TOTAL, validate_block
from agent_core import Feedback, InMemoryAuditLogger, LifecycleHook, ScriptedResponse, User
from tests.bots.slack.harness import running_bot
from tests.bots.slack.test_bot_entry_points import mention


def assert_calls_within_limits(calls: list[Any]) -> None:
    for call in calls:
        blocks = call.args.get("blocks") or []
        assert len(blocks) <= MAX_BLOCKS
        assert sum(len(b["text"]) for b in blocks if b["type"] == "markdown") <= MAX_MARKDOWN_TOTAL
        assert sum(b["type"] == "table" for b in blocks) <= 1
        assert len(call.args.get("text") or "") <= 4000
        for block in blocks:
            validate_block(block)
        streamed = call.args.get("markdown_text") or ""
        streamed += "".join(c.get("text", "") for c in call.args.get("chunks") or [])
        assert len(streamed) <= MAX_MARKDOWN_TOTAL


async def test_long_answer_respects_every_limit(tmp_path: Path) -> None:
    paragraph = "All work and no play makes a long answer. " * 40 + "\n\n"
    answer = paragraph * 20  # ~33,000 characters
    async with running_bot(tmp_path, [answer]) as h:
        await h.event(mention())
        await h.idle()
        assert_calls_within_limits(h.fake.calls)
        messages = h.fake.thread("C1", "100.000100")
        assert len(messages) >= 3
        assert "".join(m.text for m in messages) == answer
        assert [bool(m.blocks) for m in messages] == [False] * (len(messages) - 1) + [True]
        assert all(not m.streaming for m in messages)


async def test_500_row_table_shows_99_rows_and_attaches_a_csv(tmp_path: Path) -> None:
    script = [ScriptedResponse.tool("run_sql", {"sql": "select *", "rows": 500}), "500 rows."]
    async with running_bot(tmp_path, script) as h:
        await h.event(mention("<@UBOT> all rows"))
        await h.idle()
        assert_calls_within_limits(h.fake.calls)
        table_post = next(
            c
            for c in h.fake.calls_to("chat.postMessage")
            if any(b["type"] == "table" for b in c.args["blocks"])
        )
        table = next(b for b in table_post.args["blocks"] if b["type"] == "table")
        assert len(table["rows"]) == 100
        [complete] = h.fake.calls_to("files.completeUploadExternal")
        assert complete.args["thread_ts"] == "100.000100" and complete.args["channel_id"] == "C1"
        [csv_bytes] = h.fake.uploads.values()
        assert csv_bytes.count(b"\n") == 501
        texts = [m.text for m in h.fake.visible("C1")]
        assert texts.index("500 rows.") < texts.index(table_post.args["text"])  # answer first


async def test_bar_chart_is_native_and_scatter_chart_is_an_uploaded_png(tmp_path: Path) -> None:
    script = [
        ScriptedResponse.tool("draw_chart", {"kind": "bar"}),
        "Bar drawn.",
        ScriptedResponse.tool("draw_chart", {"kind": "scatter"}),
        "Scatter drawn.",
    ]
    async with running_bot(tmp_path, script) as h:
        await h.event(mention("<@UBOT> bar please"))
        await h.idle()
        await h.event(mention("<@UBOT> scatter please", ts="110.000100"))
        await h.idle()
        charts = [
            b
            for c in h.fake.calls_to("chat.postMessage")
            for b in c.args["blocks"]
            if b["type"] == "data_visualization"
        ]
        assert len(charts) == 1 and charts[0]["chart"]["type"] == "bar"
        [upload] = h.fake.calls_to("files.getUploadURLExternal")
        assert upload.args["filename"] == "signups.png"
        assert next(iter(h.fake.uploads.values())).startswith(b"\x89PNG")
        [complete] = h.fake.calls_to("files.completeUploadExternal")
        assert complete.args["thread_ts"] == "110.000100"
        assert "initial_comment" not in complete.args  # the file's title is the one title


async def test_tool_arguments_reach_only_the_asking_admin(tmp_path: Path) -> None:
    secret_sql = "select email from customers"

    def script() -> list[object]:
        return [ScriptedResponse.tool("run_sql", {"sql": secret_sql}), "Done."]

    async with running_bot(tmp_path, [*script(), *script()]) as h:
        await h.event({**mention("<@UBOT> emails"), "user": "U1"})
        await h.idle()
        assert h.fake.calls_to("chat.postEphemeral") == []
        assert secret_sql not in str([c.args for c in h.fake.calls])
        await h.event({**mention("<@UBOT> emails", ts="120.000100"), "user": "UADMIN"})
        await h.idle()
        private = h.fake.calls_to("chat.postEphemeral")
        assert private and all(c.args["user"] == "UADMIN" for c in private)
        assert all(c.args["thread_ts"] == "120.000100" for c in private)
        assert secret_sql in str([c.args for c in private])
        public = [c for c in h.fake.calls if c.method != "chat.postEphemeral"]
        assert secret_sql not in str([c.args for c in public])


async def test_stop_click_cancels_the_running_turn(tmp_path: Path) -> None:
    async with running_bot(tmp_path, ["never shown"], latency=60, stop_button_after=0) as h:
        await h.event(mention("<@UBOT> something slow"))
        await h.fake.wait_for(
            lambda f: any(b.get("type") == "actions" for m in f.visible("C1") for b in m.blocks)
        )
        stop_message = h.fake.visible("C1")[0]
        button = stop_message.blocks[-1]["elements"][0]
        assert button["action_id"] == STOP_ACTION
        other = await h.action(
            STOP_ACTION,
            button["value"],
            user="U2",
            message_ts=stop_message.ts,
            thread_ts="100.000100",
        )
        assert other.status == 200 and h.bot.turns.running == 1
        response = await h.action(
            STOP_ACTION,
            button["value"],
            user="U1",
            message_ts=stop_message.ts,
            thread_ts="100.000100",
        )
        assert response.status == 200
        await h.idle()
        assert h.fake.visible("C1") == []  # the Stop message is gone, nothing else posted
        assert "chat.delete" in h.fake.methods()
        metrics = await (await h.http.get("/metrics")).text()
        assert 'threadline_slack_turns_total{outcome="stopped"} 1.0' in metrics


class RecordFeedback(LifecycleHook):
    def __init__(self) -> None:
        self.received: list[tuple[str, Feedback]] = []
        self.changed = asyncio.Event()

    async def on_feedback(self, user: User, feedback: Feedback) -> None:
        self.received.append((user.id, feedback))
        self.changed.set()


async def test_feedback_clicks_are_recorded_through_the_hook_and_audit(tmp_path: Path) -> None:
    hook, audit = RecordFeedback(), InMemoryAuditLogger()
    async with running_bot(tmp_path, ["Rated answer"], hooks=[hook], audit=audit) as h:
        await h.event(mention())
        await h.idle()
        answer = h.fake.visible("C1")[0]
        assert answer.blocks[-1]["elements"][0]["action_id"] == FEEDBACK_ACTION
        for user, value in (("U1", "positive"), ("U2", "negative")):
            response = await h.action(
                FEEDBACK_ACTION, value, user=user, message_ts=answer.ts, thread_ts="100.000100"
            )
            assert response.status == 200
        assert [(u, f.positive) for u, f in hook.received] == [
            ("slack:T1:U1", True),
            ("slack:T1:U2", False),
        ]
        assert {f.conversation_id for _, f in hook.received} == {"slack:T1:C1:100.000100"}
        assert {f.message_id for _, f in hook.received} == {answer.ts}
        assert sum("feedback" in str(e.event_type).lower() for e in audit.events) == 2


async def test_suggestion_buttons_ask_on_the_clickers_behalf(tmp_path: Path) -> None:
    async with running_bot(tmp_path, ["Here you go"]) as h:
        response = await h.action(
            "threadline_button:0",
            "Top customers?",
            user="U2",
            message_ts="130.0",
            thread_ts="129.0",
        )
        assert response.status == 200
        await h.idle()
        assert h.llm_questions() == ["Top customers?"]
        assert h.fake.calls_to("chat.postMessage")[0].args["thread_ts"] == "129.0"


async def test_agent_view_thread_gets_suggested_prompts(tmp_path: Path) -> None:
    async with running_bot(tmp_path, []) as h:
        await h.event(
            {
                "type": "assistant_thread_started",
                "assistant_thread": {
                    "user_id": "U1",
                    "channel_id": "D1",
                    "thread_ts": "140.0",
                    "context": {},
                },
            }
        )
        [call] = h.fake.calls_to("assistant.threads.setSuggestedPrompts")
        assert call.args["channel_id"] == "D1" and call.args["thread_ts"] == "140.0"
        assert 1 <= len(call.args["prompts"]) <= 4
        assert all({"title", "message"} <= set(p) for p in call.args["prompts"])


async def test_messages_tab_welcome_is_posted_once(tmp_path: Path) -> None:
    async with running_bot(tmp_path, []) as h:
        opened = {"type": "app_home_opened", "user": "U1", "channel": "D1", "tab": "messages"}
        await h.event(opened)
        first = len(h.fake.calls_to("chat.postMessage"))
        await h.event(opened)
        await h.event({**opened, "tab": "home"})
        assert first >= 1 and len(h.fake.calls_to("chat.postMessage")) == first


async def test_identity_events_invalidate_cached_groups(tmp_path: Path) -> None:
    async with running_bot(tmp_path, ["one", "two", "three"]) as h:
        await h.event(mention())
        await h.idle()
        await h.event(mention(ts="150.0"))
        await h.idle()
        assert h.fake.methods().count("usergroups.list") == 1
        await h.event({"type": "subteam_members_changed", "subteam_id": "S1"})
        await h.event({"type": "user_change", "user": {"id": "U1"}})
        await h.event(mention(ts="151.0"))
        await h.idle()
        assert h.fake.methods().count("usergroups.list") == 2
        assert h.fake.methods().count("users.info") == 2


async def test_admin_detail_from_a_slash_command_in_a_dm_stays_ephemeral(tmp_path: Path) -> None:
    """Regression: a slash command in any D... channel (maybe a DM between two people) was
    treated as the bot's DM, so tool arguments rendered inline for everyone in it."""
    script = [ScriptedResponse.tool("run_sql", {"sql": "select secret"}), "Done."]
    async with running_bot(tmp_path, script) as h:
        await h.command("rows?", user="UADMIN", channel="D5")
        await h.idle()
        public = str([c.args for c in h.fake.calls_to("chat.postMessage")])
        assert "select secret" not in public
        assert "select secret" in str([c.args for c in h.fake.calls_to("chat.postEphemeral")])


async def test_double_stop_click_stops_once(tmp_path: Path) -> None:
    async with running_bot(tmp_path, ["never"], latency=60, stop_button_after=0) as h:
        await h.event(mention("<@UBOT> slow"))
        await h.fake.wait_for(
            lambda f: any(b.get("type") == "actions" for m in f.visible("C1") for b in m.blocks)
        )
        stop = h.fake.visible("C1")[0]
        value = stop.blocks[-1]["elements"][0]["value"]
        await asyncio.gather(
            *(
                h.action(STOP_ACTION, value, message_ts=stop.ts, thread_ts="100.000100")
                for _ in "ab"
            )
        )
        await h.idle()
        assert h.fake.visible("C1") == []
        metrics = await (await h.http.get("/metrics")).text()
        assert 'threadline_slack_turns_total{outcome="stopped"} 1.0' in metrics
