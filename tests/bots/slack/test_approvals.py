"""Approval in the thread, through the real Slack bot (issue 25): a tool that changes things
waits for the right person's click on a Block Kit message, which then says who decided and
when; the turn resumes in the thread, and the tool runs at most once.

Each "bad input" of the issue is here: a non-approver's click, one from another thread or
workspace, a forged or stale click, an unknown id, a double click, a click after expiry or
after Stop, arguments that fail validation, arguments carrying mrkdwn, a state outage while
waiting. ``THREADLINE_TEST_AGENT=graph`` runs all of it against ``GraphAgent``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from slack_sdk.models.blocks import Block

from adapters.slack.testing import FakeSlackApi, Message
from agent_core import InMemoryAuditLogger, ScriptedResponse
from agent_core.audit import AuditEventType
from agent_core.llm.scripted import ScriptEntry
from agent_core.state.testing import RedisServer, redis_available
from agent_core.state_factory import StateSettings, build_state
from tests.adapters.inert import slack_problems
from tests.bots.approval_kit import Refund, approval_agent, refund_script
from tests.bots.slack.harness import SlackHarness, running_bot

ATTACK = "<!channel> <@U0123> <https://evil.example|click here>"


@asynccontextmanager
async def approving_bot(
    tmp_path: Path,
    script: Sequence[ScriptEntry] | None = None,
    *,
    refund: Refund | None = None,
    approvers: list[str] | None = None,
    expires_after: float | None = None,
    **options: Any,
) -> AsyncIterator[tuple[SlackHarness, Refund]]:
    refund = refund or Refund()

    def factory(resolver: Any, state: Any) -> Any:
        return approval_agent(
            script if script is not None else refund_script(),
            resolver,
            state,
            refund=refund,
            approvers=approvers,
            expires_after=expires_after,
        )

    async with running_bot(tmp_path, [], agent_factory=factory, **options) as h:
        yield h, refund


async def ask(h: SlackHarness, *, user: str = "U1", ts: str = "100.000100") -> Message:
    """A mention asking for a refund; the approval message the turn posted."""
    await h.event(
        {
            "type": "app_mention",
            "user": user,
            "text": "<@UBOT> refund order 42",
            "ts": ts,
            "channel": "C1",
            "event_ts": ts,
        }
    )
    await h.idle()
    return approval_message(h)


def approval_message(h: SlackHarness) -> Message:
    [message] = [m for m in h.fake.messages if approval_id_of(m) and not m.ephemeral_to]
    return message


def approval_id_of(message: Message) -> str | None:
    for block in message.blocks:
        for element in block.get("elements") or []:
            if str(element.get("action_id", "")).startswith("threadline_approval:"):
                return str(element["value"])
    return None


def ever_approval_id(h: SlackHarness) -> str:
    """The approval id of the (first) approval message posted, even once it was updated."""
    for call in h.fake.calls_to("chat.postMessage"):
        for block in call.args.get("blocks") or []:
            for element in block.get("elements") or []:
                if str(element.get("action_id", "")).startswith("threadline_approval:"):
                    return str(element["value"])
    raise AssertionError("no approval message was posted")


async def click(
    h: SlackHarness, decision: str, message: Message, *, user: str = "U1", **options: Any
) -> Any:
    approval_id = options.pop("approval_id", None) or ever_approval_id(h)
    response = await h.action(
        f"threadline_approval:{decision}",
        approval_id,
        user=user,
        message_ts=message.ts,
        thread_ts=options.pop("thread_ts", message.thread_ts),
        block_id="threadline_approval",
        **options,
    )
    await h.idle()
    return response


def told(h: SlackHarness, user: str) -> list[str]:
    """What was shown to ``user`` alone (ephemeral)."""
    return [c.args["text"] for c in h.fake.calls_to("chat.postEphemeral") if c.args["user"] == user]


def thread_text(h: SlackHarness, message: Message) -> str:
    """Everything the thread shows now (streamed answers included)."""
    shown = h.fake.thread("C1", message.thread_ts or "")
    return json.dumps([(m.text, m.blocks, m.chunks) for m in shown if not m.deleted])


def llm_saw(h: SlackHarness) -> str:
    return json.dumps(
        [m.content for r in h.agent.llm_service.requests for m in r.messages],  # type: ignore[attr-defined]
        default=str,
    )


# --- what the thread shows, and who may decide ------------------------------------------------


async def test_the_approval_message_is_valid_block_kit_and_nothing_runs_before_a_click(
    tmp_path: Path,
) -> None:
    async with approving_bot(tmp_path) as (h, refund):
        message = await ask(h)
        assert refund.runs == []
        assert message.thread_ts == "100.000100"
        for block in message.blocks:  # slack_sdk's Block Kit models read it back unchanged
            parsed = Block.parse(block)
            assert parsed is not None and parsed.to_dict() == block
        shown = json.dumps(message.blocks)
        assert "Waiting for approval" in shown and "refund" in shown and "42" in shown
        buttons = [e for b in message.blocks for e in b.get("elements") or []]
        assert [e["text"]["text"] for e in buttons if e["type"] == "button"] == [
            "Approve",
            "Deny",
            "Stop",
        ]
        assert "Waiting for approval" in json.dumps([c.args for c in h.fake.calls])


@pytest.mark.parametrize(
    ("asker", "approver", "who"),
    [("U1", "U1", "Ana"), ("U2", "UADMIN", "Alex"), ("U2", "U1", "Ana")],
    ids=["the asker", "an admin", "a group member"],
)
async def test_an_approver_approves_the_message_updates_and_the_tool_runs_once(
    tmp_path: Path, asker: str, approver: str, who: str
) -> None:
    audit = InMemoryAuditLogger()
    async with approving_bot(tmp_path, audit=audit) as (h, refund):
        message = await ask(h, user=asker)
        await click(h, "approve", message, user=approver)
        assert refund.runs == [42]
        assert approval_id_of(message) is None  # updated in place: no buttons left
        assert f"Approved by {who}" in json.dumps(message.blocks)
        assert "Refunded." in thread_text(h, message)
        await click(h, "approve", message, user=approver)  # a double click
        assert refund.runs == [42]
        assert any("Already decided: Approved by" in text for text in told(h, approver)), told(
            h, approver
        )
    kinds = [event.event_type for event in audit.events]
    assert AuditEventType.APPROVAL_REQUESTED in kinds and AuditEventType.APPROVAL_DECIDED in kinds
    decided = next(e for e in audit.events if e.event_type == AuditEventType.APPROVAL_DECIDED)
    assert decided.details["state"] == "approved" and decided.timestamp is not None


async def test_a_non_approver_is_told_privately_and_nothing_changes(tmp_path: Path) -> None:
    async with approving_bot(tmp_path, approvers=["asker"]) as (h, refund):
        message = await ask(h, user="U1")
        before = list(message.blocks)
        await click(h, "approve", message, user="U2")
        assert refund.runs == []
        assert message.blocks == before
        assert told(h, "U2") == ["Only Ana may approve this."]
        await click(h, "approve", message, user="U1")  # the asker still can
        assert refund.runs == [42]


async def test_deny_answers_the_model_not_run_and_the_turn_goes_on(tmp_path: Path) -> None:
    script = refund_script(then="I did not refund it.")
    async with approving_bot(tmp_path, script) as (h, refund):
        message = await ask(h)
        await click(h, "deny", message)
        assert refund.runs == []
        assert "Denied by Ana" in json.dumps(message.blocks)
        assert "Not run: Ana denied this tool call." in llm_saw(h)
        assert "I did not refund it." in thread_text(h, message)


async def test_an_expired_approval_is_a_denial_that_says_so(tmp_path: Path) -> None:
    async with approving_bot(tmp_path, expires_after=0.05) as (h, refund):
        message = await ask(h)
        await asyncio.sleep(0.1)
        assert await h.bot.approvals.sweep() == 1
        await h.idle()
        assert refund.runs == []
        assert "Expired" in json.dumps(message.blocks)
        assert "expired" in llm_saw(h)
        await click(h, "approve", message)  # a click after expiry
        assert refund.runs == []
        assert any("Already decided: Expired" in text for text in told(h, "U1"))
        assert await h.bot.approvals.sweep() == 0


async def test_stop_while_waiting_cancels_it_and_the_message_says_so(tmp_path: Path) -> None:
    async with approving_bot(tmp_path) as (h, refund):
        message = await ask(h)
        asked = len(h.agent.llm_service.requests)  # type: ignore[attr-defined]
        await click(h, "stop", message, user="U2")  # only the asker may stop it
        assert approval_id_of(message) is not None
        assert told(h, "U2")
        await click(h, "stop", message, user="U1")
        assert "Stopped by Ana" in json.dumps(message.blocks)
        assert len(h.agent.llm_service.requests) == asked  # type: ignore[attr-defined]
        await click(h, "approve", message, user="U1")  # a click after Stop
        assert refund.runs == []
        assert any("Already decided: Stopped" in text for text in told(h, "U1"))


async def test_concurrent_clicks_run_the_tool_once(tmp_path: Path) -> None:
    async with approving_bot(tmp_path) as (h, refund):
        message = await ask(h)
        approval_id = ever_approval_id(h)
        await asyncio.gather(
            *(
                h.action(
                    "threadline_approval:approve",
                    approval_id,
                    user=user,
                    message_ts=message.ts,
                    thread_ts=message.thread_ts,
                )
                for user in ("U1", "UADMIN", "U1", "UADMIN")
            )
        )
        await h.idle()
        assert refund.runs == [42]
        updates = [c for c in h.fake.calls_to("chat.update") if c.args.get("ts") == message.ts]
        assert len(updates) == 1
        answers = h.fake.thread("C1", message.thread_ts or "")
        assert [m.text for m in answers if "Refunded." in m.text] == ["Refunded."]


# --- forged, replayed and misplaced clicks ----------------------------------------------------


async def test_forged_stale_and_misplaced_clicks_decide_nothing(tmp_path: Path) -> None:
    async with approving_bot(tmp_path) as (h, refund):
        message = await ask(h)
        forged = await click(h, "approve", message, secret="another-app's-secret")
        stale = await click(h, "approve", message, timestamp=1_000_000)
        assert (forged.status, stale.status) == (401, 401)
        await click(h, "approve", message, team="T2")  # the same app in another workspace
        await click(h, "approve", message, thread_ts="999.000100")  # another thread
        await click(h, "approve", message, channel="C2")  # another channel
        await click(h, "approve", message, approval_id="a-unknown")
        assert refund.runs == []
        assert approval_id_of(message) is not None
        refusals = told(h, "U1")
        assert len(refusals) == 4, refusals
        assert all("approv" in text.lower() for text in refusals)
        await click(h, "approve", message)
        assert refund.runs == [42]


async def test_arguments_that_fail_validation_are_never_shown_for_approval(
    tmp_path: Path,
) -> None:
    script = [ScriptedResponse.tool("refund", {"order": "forty-two"}), "It failed."]
    async with approving_bot(tmp_path, script) as (h, refund):
        await h.event(
            {
                "type": "app_mention",
                "user": "U1",
                "text": "<@UBOT> refund",
                "ts": "100.000100",
                "channel": "C1",
                "event_ts": "100.000100",
            }
        )
        await h.idle()
        assert not [m for m in h.fake.messages if approval_id_of(m)]
        assert refund.runs == []
        assert "It failed." in [m.text for m in h.fake.messages]


async def test_arguments_carrying_mrkdwn_are_shown_inert(tmp_path: Path) -> None:
    async with approving_bot(tmp_path, refund_script(note=ATTACK)) as (h, refund):
        message = await ask(h)
        await click(h, "approve", message)
        sent = [c for c in h.fake.calls if c.method.startswith("chat.")]
        assert [p for c in sent for p in slack_problems(c.args)] == []
        assert "&lt;!channel&gt;" in json.dumps(message.blocks)
        assert refund.runs == [42]


async def test_a_private_answer_asks_privately_and_the_click_replaces_it(tmp_path: Path) -> None:
    async with approving_bot(tmp_path) as (h, refund):
        await h.command("private refund order 42")
        await h.idle()
        [asked] = [m for m in h.fake.messages if approval_id_of(m)]
        assert asked.ephemeral_to == "U1"
        approval_id = approval_id_of(asked)
        await h.action(
            "threadline_approval:approve",
            approval_id or "",
            user="U1",
            message_ts=asked.ts,
            ephemeral=True,
        )
        await h.idle()
        assert refund.runs == [42]
        [replaced] = [c for c in h.fake.calls_to("response_url") if c.args.get("replace_original")]
        assert "Approved by Ana" in json.dumps(replaced.args)


# --- the state goes away while it waits -------------------------------------------------------


@pytest.mark.redis
@pytest.mark.skipif(not redis_available(), reason="redis-server not installed")
async def test_a_state_outage_while_waiting_loses_no_decision(tmp_path: Path) -> None:
    """Redis stops while the approval waits: a click is told plainly that nothing could be
    recorded (the approval stays pending); once Redis is back the same click decides it."""
    server = RedisServer(tmp_path / "redis", persistent=True)
    server.start()
    state = build_state(StateSettings(redis_url=server.url))
    try:
        async with approving_bot(tmp_path, state=state) as (h, refund):
            message = await ask(h)
            server.stop()
            await click(h, "approve", message)
            assert refund.runs == []
            assert any("temporarily unavailable" in text for text in told(h, "U1"))
            server.start()
            await click(h, "approve", message)
            assert refund.runs == [42]
            assert "Approved by Ana" in json.dumps(message.blocks)
    finally:
        await state.aclose()
        server.stop()


async def test_a_restart_while_waiting_resumes_the_turn_once_on_sqlite(tmp_path: Path) -> None:
    """The bot stops (a restart) while the approval waits in its SQLite state; the click
    reaches the new process, which decides it, updates the message and finishes the turn
    once; a click replayed after that runs nothing."""
    refund = Refund()
    settings = StateSettings(data_dir=tmp_path / "state")
    async with FakeSlackApi() as fake:
        state = build_state(settings)
        try:
            async with approving_bot(tmp_path, refund=refund, state=state, fake=fake) as (h, _):
                message = await ask(h)
        finally:
            await state.aclose()
        assert refund.runs == [] and approval_id_of(message) is not None

        state = build_state(settings)
        try:
            async with approving_bot(
                tmp_path, ["Refunded."], refund=refund, state=state, fake=fake
            ) as (h, _):
                await click(h, "approve", message)
                assert refund.runs == [42]
                assert "Approved by Ana" in json.dumps(message.blocks)
                assert [m.text for m in fake.thread("C1", message.thread_ts or "")].count(
                    "Refunded."
                ) == 1
                await click(h, "approve", message)  # replayed after the decision
                assert refund.runs == [42]
                assert any(t.startswith("Already decided") for t in told(h, "U1"))
        finally:
            await state.aclose()
