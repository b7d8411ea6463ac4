"""One suite for every place Claude runs: Anthropic's API, Amazon Bedrock, Google Vertex AI
and Microsoft Foundry, each through the real SDK client against its shipped fake (issue 28).

Streaming (text reaches us before the answer is complete), tool use through a real ``Agent``
turn (streamed and not), prompt-cache usage, errors in the platform's own words (refused
model, wrong credentials), and throttling retried by the agent's default recovery exactly
as Anthropic's 429 is.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from agent_core import AgentConfig
from agent_core.errors import LlmAuthenticationError, LlmBadRequestError, LlmRateLimitError
from agent_core.llm.base import LlmStreamChunk
from agent_core.llm.testing import Reply, StatusError, Text, ToolUse
from tests.llm.platforms import PROVIDERS, THROTTLED, Platform, running
from tests.llm.support import ask
from tests.llm.test_anthropic_agent import build_agent, final_text, run


@pytest.fixture(params=PROVIDERS)
async def platform(request: pytest.FixtureRequest) -> AsyncIterator[Platform]:
    async with running(request.param) as started:
        yield started


async def test_text_streams_before_the_answer_is_complete(platform: Platform) -> None:
    resume = asyncio.Event()
    platform.fake.queue(Reply.text("Hel", "lo", " there", hold_after=1, resume=resume))
    stream = platform.service().stream_request(ask(stream=True))
    first = await anext(stream)
    assert first.content == "Hel"  # the rest is still held by the fake
    resume.set()
    rest: list[LlmStreamChunk] = [chunk async for chunk in stream]
    assert "".join(c.content or "" for c in rest) == "lo there"
    assert rest[-1].finish_reason == "end_turn"
    assert rest[-1].usage is not None and rest[-1].usage["output_tokens"] == 7


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "unstreamed"])
async def test_a_tool_turn_through_the_agent(platform: Platform, streamed: bool) -> None:
    platform.fake.queue(
        Reply([Text(["Let me look."]), ToolUse("lookup_customer", {"customer_id": 7})]),
        Reply.text("Customer 7 ", "is Ada."),
    )
    agent = build_agent(platform.service(), config=AgentConfig(stream_responses=streamed))
    components = await run(agent, "Who is customer 7?")
    assert final_text(components) == "Customer 7 is Ada."
    first, second = (r.body for r in platform.fake.requests)
    assert first["tools"][-1]["name"] == "lookup_customer"
    assert first["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert first.get("stream", False) is streamed or platform.name == "bedrock"
    result = second["messages"][-1]["content"][0]
    assert result["type"] == "tool_result"
    assert result["content"] == "Customer 7: Ada"


async def test_prompt_cache_usage_is_reported(platform: Platform) -> None:
    rules = "Answer in one sentence. " * 200  # past the minimum cacheable length
    platform.fake.queue(Reply.text("One."), Reply.text("Two."))
    service = platform.service()
    first = await service.send_request(ask("a", system_prompt=rules))
    second = await service.send_request(ask("a", system_prompt=rules))
    assert first.usage is not None and second.usage is not None
    assert first.usage["cache_creation_input_tokens"] > 0
    assert second.usage["cache_read_input_tokens"] == first.usage["cache_creation_input_tokens"]


async def test_throttling_is_retried_like_anthropics_429(platform: Platform) -> None:
    """The platform's own throttling (Bedrock's ThrottlingException, Vertex's
    RESOURCE_EXHAUSTED) is retried by the agent's default recovery, then answered."""
    kind, message = THROTTLED[platform.name]
    platform.fake.queue(StatusError(429, kind, message), Reply.text("Fine ", "now."))
    components = await run(build_agent(platform.service()), "hello?")
    assert final_text(components) == "Fine now."
    assert len(platform.fake.requests) == 2


async def test_throttling_says_so_in_the_platforms_words(platform: Platform) -> None:
    kind, message = THROTTLED[platform.name]
    platform.fake.queue(StatusError(429, kind, message))
    with pytest.raises(LlmRateLimitError) as raised:
        await platform.service().send_request(ask())
    assert message in str(raised.value)


async def test_an_error_in_the_middle_of_a_stream_is_retried(platform: Platform) -> None:
    """Bedrock sends it as an exception frame, the others as an SSE ``error`` event."""
    platform.fake.queue(
        Reply.text("Par", "tial", error_after=1, error_type="overloaded_error"),
        Reply.text("Whole."),
    )
    components = await run(build_agent(platform.service()), "hello?")
    assert final_text(components) == "Whole."


async def test_a_refused_model_is_the_platforms_message(platform: Platform) -> None:
    refusal = "The provided model identifier is invalid."
    platform.fake.queue(StatusError(400, "invalid_request_error", refusal))
    with pytest.raises(LlmBadRequestError) as raised:
        await platform.service().send_request(ask())
    assert refusal in str(raised.value)
    assert raised.value.__cause__ is not None  # translated at the boundary, not a traceback


async def test_wrong_credentials_are_an_authentication_error(platform: Platform) -> None:
    platform.fake.queue(Reply.text("never sent"))
    with pytest.raises(LlmAuthenticationError):
        await platform.service(wrong_credentials=True).send_request(ask())
    assert platform.fake.pending == 1  # refused before the model was asked
