"""The four places Claude runs, each a fake server and the real SDK client pointed at it.

``Platform`` bundles one provider's fake and a factory for the real service over it, so a
test parametrized over ``PROVIDERS`` runs the same steps against every wire protocol.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from agent_core.llm.anthropic import AnthropicLlmService
from agent_core.llm.platforms import bedrock_service, foundry_service, vertex_service
from agent_core.llm.testing import FakeAnthropic
from agent_core.llm.testing_bedrock import FakeBedrock
from agent_core.llm.testing_foundry import FakeFoundry
from agent_core.llm.testing_vertex import FakeVertex

PROVIDERS = ("anthropic", "bedrock", "vertex", "foundry")

MODELS = {
    "anthropic": "claude-test-model",
    "bedrock": "us.anthropic.claude-test-model-v1:0",
    "vertex": "claude-test-model@20261001",
    "foundry": "claude-test-model",
}

THROTTLED = {
    "anthropic": ("rate_limit_error", "Number of request tokens has exceeded your rate limit."),
    "bedrock": ("ThrottlingException", "Too many requests, please wait before trying again."),
    "vertex": ("RESOURCE_EXHAUSTED", "Resource exhausted, please try again later."),
    "foundry": ("rate_limit_error", "Requests to the Messages API have exceeded the limit."),
}
"""Each platform's own throttling error (type, message)."""


@dataclass
class Platform:
    """One provider's fake and the services built over it (closed with the platform)."""

    name: str
    fake: FakeAnthropic
    services: list[AnthropicLlmService] = field(default_factory=list)

    @property
    def model(self) -> str:
        return MODELS[self.name]

    def service(self, *, wrong_credentials: bool = False, **options: Any) -> AnthropicLlmService:
        options.setdefault("timeout", 5.0)
        built = _build(self.name, self.fake, wrong_credentials, options)
        self.services.append(built)
        return built


def _build(
    name: str, fake: FakeAnthropic, wrong: bool, options: dict[str, Any]
) -> AnthropicLlmService:
    model = MODELS[name]
    match fake:
        case FakeBedrock():
            secret = "not-the-secret" if wrong else fake.key.secret_access_key
            return bedrock_service(
                model=model,
                aws_region=fake.region,
                aws_access_key=fake.key.access_key_id,
                aws_secret_key=secret,
                base_url=fake.base_url,
                **options,
            )
        case FakeVertex():
            return vertex_service(
                model=model,
                project=fake.project,
                region=fake.region,
                access_token="ya29.expired" if wrong else fake.token,
                base_url=fake.base_url,
                **options,
            )
        case FakeFoundry():
            return foundry_service(
                model=model,
                api_key="wrong-key" if wrong else fake.api_key,
                base_url=fake.base_url,
                **options,
            )
        case _:
            fake.api_keys = {"sk-ant-test"}
            return AnthropicLlmService(
                model=model,
                api_key="sk-ant-wrong" if wrong else "sk-ant-test",
                base_url=fake.base_url,
                **options,
            )


def fake_for(name: str) -> FakeAnthropic:
    return {
        "anthropic": FakeAnthropic,
        "bedrock": FakeBedrock,
        "vertex": FakeVertex,
        "foundry": FakeFoundry,
    }[name]()


@asynccontextmanager
async def running(name: str) -> AsyncIterator[Platform]:
    async with fake_for(name) as fake:
        platform = Platform(name, fake)
        try:
            yield platform
        finally:
            for service in platform.services:
                await service.aclose()
