"""``/usage`` (issue 28, item 3): admins see today and the week, with the top spenders and
the cost (or "unknown" for unpriced models); anyone else is told it is for admins; an
admin's ``/help`` lists it; every other message goes to the agent's own handler."""

from __future__ import annotations

import datetime as dt

from agent_core.conversations import Conversation
from agent_core.usage.command import UsageCommand
from agent_core.usage.counts import TokenCounts
from agent_core.usage.ledger import MemoryUsageLedger, UsageRecord
from agent_core.users import User
from agent_core.workflow import DefaultWorkflowHandler

NOW = dt.datetime(2026, 11, 26, 12, tzinfo=dt.UTC)
ADMIN = User(id="slack:T1:UA", group_memberships=["user", "admin"])
ANA = User(id="slack:T1:U1", group_memberships=["user"])


def record(person: str, model: str, cost: int | None, days_ago: int = 0) -> UsageRecord:
    return UsageRecord(
        at=NOW - dt.timedelta(days=days_ago),
        turn_id=f"t-{person}-{days_ago}",
        person=person,
        profile="finance",
        workspace="slack:T1",
        model=model,
        tokens=TokenCounts(input=1000, output=100),
        cost_nano=cost,
    )


def texts(result: object) -> list[str]:
    components = getattr(result, "components", [])
    return [str(getattr(c.rich_component, "content", "")) for c in components]


async def test_admins_see_today_the_week_and_who_spent_it() -> None:
    ledger = MemoryUsageLedger()
    await ledger.record(record("slack:T1:U1", "claude-sonnet-5-5", 3_000_000))
    await ledger.record(record("slack:T1:U2", "in-house", None, days_ago=3))
    command = UsageCommand(ledger, DefaultWorkflowHandler(), clock=lambda: NOW)
    result = await command.try_handle(None, ADMIN, Conversation(id="c", user=ADMIN), "/usage")
    [report] = texts(result)
    assert "Today (2026-11-26): 1,100 tokens" in report and "cost $0.0030" in report
    assert "Last 7 days (2026-11-20 to 2026-11-26): 2,200 tokens" in report
    assert "cost $0.0030 + unknown" in report
    assert "1. `slack:T1:U1`" in report and "`slack:T1:U2`: 1,100 tokens, unknown" in report
    assert "1,100 tokens were for models with no price" in report
    assert result.components[0].audience == "requester"


async def test_others_are_refused_and_other_messages_pass_through() -> None:
    command = UsageCommand(MemoryUsageLedger(), DefaultWorkflowHandler(), clock=lambda: NOW)
    conversation = Conversation(id="c", user=ANA)
    refused = await command.try_handle(None, ANA, conversation, "/USAGE")
    assert "only available to administrators" in texts(refused)[0]
    passed = await command.try_handle(None, ANA, conversation, "how much revenue?")
    assert not passed.should_skip_llm
    helped = await command.try_handle(None, ANA, conversation, "/help")
    assert not any("/usage" in text for text in texts(helped))
    admin_help = await command.try_handle(None, ADMIN, conversation, "/help")
    assert any("/usage" in text for text in texts(admin_help))
