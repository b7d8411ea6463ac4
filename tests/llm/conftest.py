"""Fixtures: the fake Messages API and the real service (real SDK) pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from agent_core.llm.anthropic import AnthropicLlmService
from agent_core.llm.testing import FakeAnthropic
from tests.llm.support import TEST_MODEL

ServiceFactory = Callable[..., AnthropicLlmService]


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic() as server:
        yield server


@pytest.fixture
async def make_service(fake: FakeAnthropic) -> AsyncIterator[ServiceFactory]:
    """Builds services on the fake (closed at teardown); keyword arguments override."""
    services: list[AnthropicLlmService] = []

    def build(**options: Any) -> AnthropicLlmService:
        settings: dict[str, Any] = {
            "model": TEST_MODEL,
            "api_key": "sk-ant-test",
            "base_url": fake.base_url,
            "timeout": 5.0,
        }
        settings.update(options)
        services.append(AnthropicLlmService(**settings))
        return services[-1]

    yield build
    for service in services:
        await service.aclose()


@pytest.fixture
def service(make_service: ServiceFactory) -> AnthropicLlmService:
    return make_service()
