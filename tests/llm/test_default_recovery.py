"""Issue 17: LLM defaults that ride out transient faults.

``Agent(llm_service=AnthropicLlmService())`` with no recovery strategy failed the turn on a
single 429 / 529 (the SDK's own retries are off); a hung API kept the asker waiting for the
whole request timeout, which had no setting; and the failed question was forgotten. The
real ``Agent`` and the real SDK, against the fake Messages API.
"""

from __future__ import annotations

import argparse

import pytest

from agent_core import ErrorRecoveryStrategy, UiComponent
from agent_core.llm.anthropic import AnthropicLlmService
from agent_core.llm.testing import Drop, FakeAnthropic, Hang, Reply, StatusError
from bots.serving import ModelSettings, load_config, model_service
from tests.llm.conftest import ServiceFactory
from tests.llm.test_anthropic_agent import build_agent, final_text, run

SOON = {"retry-after-ms": "1"}


def error_card(components: list[UiComponent]) -> str:
    cards = [c.rich_component for c in components if c.rich_component.type == "status_card"]
    return str(getattr(cards[-1], "description", "")) if cards else ""


async def test_without_a_strategy_429_and_529_are_retried(
    fake: FakeAnthropic, make_service: ServiceFactory
) -> None:
    fake.queue(
        StatusError(429, "rate_limit_error", headers=SOON),
        StatusError(529, "overloaded_error", headers=SOON),
        Reply.text("Fine ", "now."),
    )
    components = await run(build_agent(make_service()), "hello?")
    assert final_text(components) == "Fine now."
    assert len(fake.requests) == 3


async def test_without_a_strategy_5xx_and_a_reset_connection_are_retried(
    fake: FakeAnthropic, make_service: ServiceFactory
) -> None:
    fake.queue(StatusError(503, "api_error", headers=SOON), Drop(), Reply.text("Back."))
    components = await run(build_agent(make_service()), "hello?")
    assert final_text(components) == "Back."
    assert len(fake.requests) == 3


async def test_a_hung_api_fails_at_the_first_byte_timeout_and_is_retried(
    fake: FakeAnthropic, make_service: ServiceFactory
) -> None:
    """The first request is accepted and never answered: it fails after the short
    first-byte timeout (not the 120 s request timeout), and the retry answers."""
    fake.queue(Hang(), Reply.text("Answered."))
    service = make_service(timeout=120.0, first_byte_timeout=0.2)
    components = await run(build_agent(service), "hello?")
    assert final_text(components) == "Answered."
    assert len(fake.requests) == 2


async def test_retries_are_bounded(fake: FakeAnthropic, make_service: ServiceFactory) -> None:
    fake.queue(*[StatusError(529, "overloaded_error", headers=SOON)] * 5)
    components = await run(build_agent(make_service()), "hello?")
    assert "AI service could not answer" in error_card(components)
    assert len(fake.requests) == 3


async def test_a_retry_after_longer_than_the_bound_is_not_waited_for(
    fake: FakeAnthropic, make_service: ServiceFactory
) -> None:
    """Retrying sooner than the API asks only earns another 429: the asker is told now."""
    fake.queue(StatusError(429, "rate_limit_error", headers={"retry-after": "300"}))
    components = await run(build_agent(make_service()), "hello?")
    assert "AI service could not answer" in error_card(components)
    assert len(fake.requests) == 1


async def test_a_configured_strategy_stays_in_charge(
    fake: FakeAnthropic, make_service: ServiceFactory
) -> None:
    fake.queue(StatusError(429, "rate_limit_error", headers=SOON), Reply.text("unused"))
    agent = build_agent(make_service(), error_recovery_strategy=ErrorRecoveryStrategy())
    components = await run(agent, "hello?")
    assert "AI service could not answer" in error_card(components)
    assert len(fake.requests) == 1


async def test_try_again_after_a_failed_turn_reaches_the_model_with_the_question(
    fake: FakeAnthropic, make_service: ServiceFactory
) -> None:
    fake.queue(StatusError(400, "invalid_request_error"), Reply.text("Q3 revenue was 1.2M."))
    agent = build_agent(make_service())
    await run(agent, "What was Q3 revenue?")
    components = await run(agent, "try again")
    assert final_text(components) == "Q3 revenue was 1.2M."
    sent = fake.requests[-1].body["messages"]
    said = [
        block.get("text") if isinstance(block, dict) else block
        for message in sent
        for block in (
            message["content"] if isinstance(message["content"], list) else [message["content"]]
        )
    ]
    assert "What was Q3 revenue?" in said and said[-1] == "try again"


def test_the_timeouts_are_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-x")
    monkeypatch.setenv("THREADLINE_LLM_TIMEOUT", "45")
    monkeypatch.setenv("THREADLINE_LLM_FIRST_BYTE_TIMEOUT", "4.5")
    config = load_config(argparse.Namespace(command="chat", config=None, app=None))
    assert (config.model.timeout, config.model.first_byte_timeout) == (45.0, 4.5)
    service = model_service(config.model)
    assert isinstance(service, AnthropicLlmService)
    assert (service.timeout, service.first_byte_timeout) == (45.0, 4.5)
    with pytest.raises(ValueError):
        ModelSettings(timeout=0)
