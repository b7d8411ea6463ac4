"""Budgets (issue 28, item 4) through the real ``Agent`` and the real SDK against the fake
Messages API: each call recorded, a person over budget refused with when it resets, a
turn that crosses a budget mid-way finishing its call and stopping cleanly, a budget of
zero, admins exempt unless configured, group and profile budgets, a cost budget and a
model with no price."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator

import pytest

from agent_core import Agent, RequestContext, UiComponent, User
from agent_core.conversations import MemoryConversationStore
from agent_core.llm.anthropic import AnthropicLlmService
from agent_core.llm.testing import FakeAnthropic, Reply, Text, ToolUse
from agent_core.state.quotas import MemoryRateLimiter
from agent_core.usage.budget_settings import BudgetLimit, BudgetSettings
from agent_core.usage.budgets import Budgets, period_bounds
from agent_core.usage.ledger import MemoryUsageLedger
from agent_core.usage.recorder import BUDGET_STOP, BudgetHook, UsageRecorder
from tests.llm.test_anthropic_agent import build_agent, final_text

NOW = dt.datetime(2026, 11, 26, 15, 30, tzinfo=dt.UTC)
ANA = User(id="slack:T1:U1", group_memberships=["user", "analysts"])
ADMIN = User(id="slack:T1:U9", group_memberships=["user", "admin"])


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic() as server:
        yield server


@pytest.fixture
async def service(fake: FakeAnthropic) -> AsyncIterator[AnthropicLlmService]:
    async with AnthropicLlmService(
        model="claude-sonnet-5-5", api_key="sk-test", base_url=fake.base_url, timeout=5.0
    ) as llm:
        yield llm


def budgeted(
    service: AnthropicLlmService,
    limits: list[BudgetLimit],
    *,
    user: User = ANA,
    profile: str | None = None,
    admins_exempt: bool = True,
    ledger: MemoryUsageLedger | None = None,
    counters: MemoryRateLimiter | None = None,
) -> tuple[Agent, Budgets, MemoryUsageLedger]:
    from agent_core.users import StaticUserResolver

    ledger = ledger or MemoryUsageLedger()
    budgets = Budgets(
        limits,
        counters=counters or MemoryRateLimiter(),
        admins_exempt=admins_exempt,
        clock=lambda: NOW,
    )
    agent = build_agent(
        service,
        llm_middlewares=[
            UsageRecorder(
                ledger, model=service.model, profile=profile, budgets=budgets, clock=lambda: NOW
            )
        ],
        lifecycle_hooks=[BudgetHook(budgets, profile=profile)],
    )
    agent.user_resolver = StaticUserResolver(user)
    agent.conversation_store = MemoryConversationStore()
    return agent, budgets, ledger


async def ask(agent: Agent, text: str) -> list[UiComponent]:
    context = RequestContext(metadata={"platform": "slack", "workspace_id": "T1"})
    return [c async for c in agent.send_message(context, text, conversation_id="c1")]


def refusal(components: list[UiComponent]) -> str | None:
    cards = [c.rich_component for c in components if c.rich_component.type == "status_card"]
    return str(getattr(cards[-1], "description", "")) if cards else None


TOOL_TURN = (
    Reply([Text(["Let me look."]), ToolUse("lookup_customer", {"customer_id": 7})]),
    Reply.text("Customer 7 is Ada."),
)


async def test_every_call_of_a_turn_is_recorded(
    fake: FakeAnthropic, service: AnthropicLlmService
) -> None:
    fake.queue(*TOOL_TURN)
    agent, _, ledger = budgeted(service, [])
    assert final_text(await ask(agent, "Who is customer 7?")) == "Customer 7 is Ada."
    summary = await ledger.summary(NOW.date(), NOW.date())
    assert summary.total.calls == 2
    assert summary.total.tokens.input == 24 and summary.total.tokens.output == 14
    assert summary.by["person"][ANA.id].calls == 2
    assert summary.by["workspace"]["slack:T1"].calls == 2
    assert summary.total.cost_nano == 2 * (12 * 2000 + 7 * 10_000)  # Sonnet 5.5: $2 / $10


async def test_a_person_over_budget_is_refused_with_when_it_resets(
    fake: FakeAnthropic, service: AnthropicLlmService
) -> None:
    fake.queue(Reply.text("First."))
    day = BudgetLimit(scope="person", period="day", tokens=19)
    agent, _, _ = budgeted(service, [day])
    assert final_text(await ask(agent, "hello")) == "First."  # 19 tokens: used up
    told = refusal(await ask(agent, "again"))
    assert told == (
        "You have used your daily AI budget of 19 tokens; it resets at 00:00 UTC tomorrow "
        "(27 November)."
    )
    assert len(fake.requests) == 1  # the refused question never reached the model


async def test_a_turn_crossing_the_budget_finishes_its_call_and_stops(
    fake: FakeAnthropic, service: AnthropicLlmService
) -> None:
    """The first call (which asks for a tool) uses the budget up: its text is kept, the
    tool is not run, the second call is never made, and the stored turn is valid."""
    fake.queue(*TOOL_TURN)
    agent, _, _ = budgeted(service, [BudgetLimit(scope="person", period="day", tokens=10)])
    components = await ask(agent, "Who is customer 7?")
    text = final_text(components)
    assert text.startswith("Let me look.\n\nYou have used your daily AI budget of 10 tokens")
    assert len(fake.requests) == 1 and fake.pending == 1
    assert not [c for c in components if c.rich_component.type == "status_card"]
    stored = await agent.conversation_store.get_conversation("c1", ANA)
    assert stored is not None
    assert [m.role for m in stored.messages] == ["user", "assistant"]
    assert stored.messages[-1].tool_calls is None


async def test_a_budget_of_zero_refuses_at_once(
    fake: FakeAnthropic, service: AnthropicLlmService
) -> None:
    agent, _, _ = budgeted(service, [BudgetLimit(scope="person", period="month", cost=0)])
    told = refusal(await ask(agent, "hello"))
    assert told is not None and "is zero" in told and "[budgets]" in told
    assert fake.requests == []


async def test_admins_are_exempt_unless_configured(
    fake: FakeAnthropic, service: AnthropicLlmService
) -> None:
    zero = [BudgetLimit(scope="person", period="day", tokens=0)]
    fake.queue(Reply.text("Admins answered."))
    exempt, _, ledger = budgeted(service, zero, user=ADMIN)
    assert final_text(await ask(exempt, "hello")) == "Admins answered."
    assert (await ledger.summary(NOW.date(), NOW.date())).total.calls == 1  # still recorded
    counted, _, _ = budgeted(service, zero, user=ADMIN, admins_exempt=False)
    assert "is zero" in (refusal(await ask(counted, "hello")) or "")


async def test_a_group_budget_counts_its_members_together(
    fake: FakeAnthropic, service: AnthropicLlmService
) -> None:
    group = [BudgetLimit(scope="group", group="analysts", period="month", tokens=30)]
    counters = MemoryRateLimiter()
    bo = User(id="slack:T1:U2", group_memberships=["user", "analysts"])
    fake.queue(Reply.text("One."), Reply.text("Two."))
    for person in (ANA, bo):
        agent, _, _ = budgeted(service, group, user=person, counters=counters)
        await ask(agent, "hello")
    agent, _, _ = budgeted(service, group, user=ANA, counters=counters)
    assert refusal(await ask(agent, "more")) == (
        "Your group analysts has used its monthly AI budget of 30 tokens; it resets on "
        "1 December at 00:00 UTC."
    )
    outsider = User(id="slack:T1:U3", group_memberships=["user"])
    fake.queue(Reply.text("Not counted."))
    agent, _, _ = budgeted(service, group, user=outsider, counters=counters)
    assert final_text(await ask(agent, "hello")) == "Not counted."


async def test_a_profile_budget_covers_only_that_profile(
    fake: FakeAnthropic, service: AnthropicLlmService
) -> None:
    finance = [BudgetLimit(scope="profile", profile="finance", period="day", cost=0.0001)]
    counters = MemoryRateLimiter()
    fake.queue(Reply.text("Priced."), Reply.text("Elsewhere."))
    agent, _, _ = budgeted(service, finance, profile="finance", counters=counters)
    await ask(agent, "hello")  # 12 x $2 + 7 x $10 per million: $0.000094... then more
    await ask(agent, "hello")
    assert "The finance assistant has used its daily AI budget of $0.00" in (
        refusal(await ask(agent, "third")) or ""
    )


async def test_a_model_with_no_price_counts_tokens_not_cost(
    fake: FakeAnthropic, service: AnthropicLlmService
) -> None:
    fake.queue(Reply.text("Unpriced."), Reply.text("Still."))
    ledger = MemoryUsageLedger()
    budgets = Budgets(
        [BudgetLimit(scope="person", period="day", cost=0.01)],
        counters=MemoryRateLimiter(),
        clock=lambda: NOW,
    )
    recorder = UsageRecorder(ledger, model="in-house-claude", budgets=budgets, clock=lambda: NOW)
    agent = build_agent(service, llm_middlewares=[recorder], lifecycle_hooks=[BudgetHook(budgets)])
    await ask(agent, "hello")
    assert final_text(await ask(agent, "again")) == "Still."  # the cost budget could not count
    total = (await ledger.summary(NOW.date(), NOW.date())).total
    assert total.calls == 2 and total.unpriced_tokens == 38 and total.cost_nano == 0


def test_budget_settings_refuse_what_cannot_be_counted() -> None:
    from agent_core.settings import ConfigError

    for bad in (
        {"scope": "person", "tokens": 1, "cost": 1},
        {"scope": "person"},
        {"scope": "group", "tokens": 1},
        {"scope": "profile", "cost": 1},
        {"scope": "person", "tokens": -1},
        {"scope": "team", "tokens": 1},
    ):
        with pytest.raises(ConfigError):
            BudgetSettings.from_env({}, limits=[bad])


def test_periods_end_at_utc_midnight_and_month_ends() -> None:
    assert period_bounds("day", NOW) == ("day:2026-11-26", dt.datetime(2026, 11, 27, tzinfo=dt.UTC))
    assert period_bounds("month", NOW)[1] == dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
    assert BUDGET_STOP == "budget"


async def test_a_refusal_and_a_providers_refusal_are_logged_once_without_a_traceback(
    fake: FakeAnthropic, service: AnthropicLlmService, caplog: pytest.LogCaptureFixture
) -> None:
    from agent_core.llm.testing import StatusError

    fake.queue(StatusError(400, "invalid_request_error", "model: claude-nope is not available"))
    agent, _, _ = budgeted(service, [BudgetLimit(scope="person", period="day", tokens=0)])
    with caplog.at_level("INFO", logger="threadline.agent"):
        await ask(agent, "refused by the budget")
        plain, _, _ = budgeted(service, [])
        await ask(plain, "refused by the provider")
    said = [r for r in caplog.records if r.name == "threadline.agent"]
    # the bot doing its job at INFO, the provider's refusal at WARNING (agent_core.errors)
    assert [r.levelname for r in said] == ["INFO", "WARNING"]
    assert "is zero" in said[0].getMessage()
    assert "Anthropic API error 400: model: claude-nope is not available" in said[1].getMessage()
    assert all(r.exc_info is None for r in said)
