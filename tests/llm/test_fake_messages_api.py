"""The shipped fake Messages API (``agent_core.llm.testing``) reports prompt-cache usage the
way the API does, as the real SDK reads it."""

from __future__ import annotations

import time
from typing import Any

import anthropic
import pytest

from agent_core.llm.testing import FakeAnthropic, Reply

CACHED = {"type": "ephemeral"}
RULES = "Answer in one sentence. " * 200  # 4,800 characters: 1,200 tokens at 4 characters each


def system(*, cached: bool) -> list[dict[str, Any]]:
    block: dict[str, Any] = {"type": "text", "text": RULES}
    return [{**block, "cache_control": CACHED}] if cached else [block]


def user(text: str, *, cached: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text}
    return {"role": "user", "content": [{**block, "cache_control": CACHED} if cached else block]}


def cache_counts(usage: Any) -> tuple[int, int]:
    return usage.cache_creation_input_tokens, usage.cache_read_input_tokens


async def test_no_breakpoint_reports_zero_cache_tokens(fake: FakeAnthropic) -> None:
    fake.queue(Reply.text("a"), Reply.text("b"))
    async with anthropic.AsyncAnthropic(api_key="sk-test", base_url=fake.base_url) as client:
        for _ in range(2):
            message = await client.messages.create(
                model="m", max_tokens=10, system=system(cached=False), messages=[user("hi")]
            )
            assert cache_counts(message.usage) == (0, 0)
            assert message.usage.input_tokens == 12


async def test_a_prefix_is_written_once_then_read(fake: FakeAnthropic) -> None:
    fake.queue(Reply.text("a"), Reply.text("b"), Reply.text("c"))
    async with anthropic.AsyncAnthropic(api_key="sk-test", base_url=fake.base_url) as client:
        seen = []
        for model in ("m", "m", "other-model"):
            message = await client.messages.create(
                model=model, max_tokens=10, system=system(cached=True), messages=[user("hi")]
            )
            seen.append(cache_counts(message.usage))
    assert seen == [(1200, 0), (0, 1200), (1200, 0)]  # caches are per model


async def test_a_moved_breakpoint_reads_the_prefix_written_before(fake: FakeAnthropic) -> None:
    """A conversation caching its latest message: each turn reads what the last one wrote."""
    fake.queue(Reply.text("one"), Reply.text("two"))
    first = [user("x" * 400, cached=True)]
    second = [
        user("x" * 400),
        {"role": "assistant", "content": [{"type": "text", "text": "one"}]},
        user("y" * 397, cached=True),
    ]
    async with anthropic.AsyncAnthropic(api_key="sk-test", base_url=fake.base_url) as client:
        opening = await client.messages.create(
            model="m", max_tokens=10, system=system(cached=True), messages=first
        )
        stream = await client.messages.create(
            model="m", max_tokens=10, system=system(cached=True), messages=second, stream=True
        )
        async with stream:
            events = [event async for event in stream]
    assert cache_counts(opening.usage) == (1300, 0)
    start = events[0]
    assert start.type == "message_start"
    assert cache_counts(start.message.usage) == (100, 1300)  # "one" + 397 characters: 100 tokens


async def test_unknown_paths_answer_not_found(fake: FakeAnthropic) -> None:
    async with anthropic.AsyncAnthropic(
        api_key="sk-test", base_url=fake.base_url, max_retries=0
    ) as client:
        with pytest.raises(anthropic.NotFoundError) as missing:
            await client.models.list()
    assert missing.value.body == {
        "type": "error",
        "error": {"type": "not_found_error", "message": "GET /v1/models"},
    }
    assert fake.requests == []


async def test_a_paced_reply_streams_at_the_models_speed(fake: FakeAnthropic) -> None:
    """``Reply.paced``: the first text no sooner than the model's first-token latency, the
    rest at its speed, all of it delivered (the burst benchmark's model)."""
    text = "The revenue grew 12% last month, led by laptops. " * 2
    fake.queue(Reply.paced(text, first_token_after=0.3, tokens_per_second=120))
    pieces: list[tuple[float, str]] = []
    async with anthropic.AsyncAnthropic(api_key="sk-test", base_url=fake.base_url) as client:
        started = time.monotonic()
        async with client.messages.stream(
            model="m", max_tokens=200, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            async for piece in stream.text_stream:
                pieces.append((time.monotonic() - started, piece))
            final = await stream.get_final_message()
    assert "".join(p for _, p in pieces) == text
    assert pieces[0][0] >= 0.3
    assert pieces[-1][0] - pieces[0][0] >= (len(pieces) - 1) * 3 / 120
    assert final.usage.output_tokens == len(text) // 4 + (len(text) % 4 > 0)
