"""What reaches the Messages API: the exact request body, headers, and the non-streamed call."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from agent_core.errors import LlmBadRequestError
from agent_core.llm.anthropic import DEFAULT_MODEL, AnthropicLlmService
from agent_core.llm.base import LlmMessage, LlmRequest
from agent_core.llm.testing import FakeAnthropic, Reply, Text, ToolUse
from agent_core.observability import ObservabilityProvider
from agent_core.tool_contract import ToolCall, ToolSchema
from agent_core.users import User
from tests.llm.conftest import ServiceFactory
from tests.llm.support import TEST_MODEL, UNCACHED, ask

EPHEMERAL = {"type": "ephemeral"}
SQL_TOOL = ToolSchema(
    name="run_sql",
    description="Run a read-only SQL query",
    parameters={"type": "object", "properties": {"sql": {"type": "string"}}, "required": ["sql"]},
)


def tool_round_trip() -> LlmRequest:
    """A conversation after the model called two tools and got both results."""
    calls = [
        ToolCall(id="toolu_1", name="run_sql", arguments={"sql": "SELECT 1"}),
        ToolCall(id="toolu_2", name="run_sql", arguments={}),
    ]
    return LlmRequest(
        user=User(id="u1"),
        system_prompt="You are a data analyst.",
        temperature=0.2,
        max_tokens=512,
        tools=[SQL_TOOL],
        messages=[
            LlmMessage(role="system", content="Workspace: T1"),
            LlmMessage(role="user", content="How many users?"),
            LlmMessage(role="user", content="  "),
            LlmMessage(role="assistant", content="Let me check.", tool_calls=calls),
            LlmMessage(role="tool", content="1", tool_call_id="toolu_1"),
            LlmMessage(role="tool", content="", tool_call_id="toolu_2"),
            LlmMessage(role="user", content="And admins?"),
            LlmMessage(role="assistant", content=""),
        ],
    )


async def test_the_request_body_is_exactly_what_the_api_expects(
    fake: FakeAnthropic, service: AnthropicLlmService
) -> None:
    """Cache breakpoints mark the tools, the system prompt and the conversation so far."""
    fake.queue(Reply.text("ok"))
    await service.send_request(tool_round_trip())
    assert fake.requests[0].path == "/v1/messages"
    assert fake.requests[0].body == {
        "model": TEST_MODEL,
        "max_tokens": 512,
        "system": [
            {
                "type": "text",
                "text": "You are a data analyst.\n\nWorkspace: T1",
                "cache_control": EPHEMERAL,
            }
        ],
        "tools": [
            {
                "name": "run_sql",
                "description": "Run a read-only SQL query",
                "input_schema": SQL_TOOL.parameters,
                "cache_control": EPHEMERAL,
            }
        ],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "How many users?"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Let me check."},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "run_sql",
                        "input": {"sql": "SELECT 1"},
                    },
                    {"type": "tool_use", "id": "toolu_2", "name": "run_sql", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "1"},
                    {"type": "tool_result", "tool_use_id": "toolu_2"},
                    {"type": "text", "text": "And admins?", "cache_control": EPHEMERAL},
                ],
            },
        ],
    }


async def test_streaming_sends_the_same_body_with_stream_true(
    fake: FakeAnthropic, service: AnthropicLlmService
) -> None:
    fake.queue(Reply.text("ok"), Reply.text("ok"))
    await service.send_request(tool_round_trip())
    [_ async for _ in service.stream_request(tool_round_trip())]
    plain, streamed = (r.body for r in fake.requests)
    assert streamed.pop("stream") is True
    assert "stream" not in plain
    assert streamed == plain


async def test_temperature_is_left_out_unless_enabled(
    fake: FakeAnthropic, make_service: ServiceFactory
) -> None:
    """Regression: API version 2026-10-21 (SDK 2.x) answers 400 to any ``temperature``."""
    fake.queue(Reply.text("a"), Reply.text("b"))
    await make_service().send_request(ask(temperature=0.3))
    await make_service(send_temperature=True).send_request(ask(temperature=0.3))
    assert "temperature" not in fake.requests[0].body
    assert fake.requests[1].body["temperature"] == 0.3


async def test_max_tokens_default_and_headers(
    fake: FakeAnthropic, make_service: ServiceFactory
) -> None:
    fake.queue(Reply.text("a"), Reply.text("b"))
    await make_service(max_tokens=1000).send_request(ask())
    await make_service(default_headers={"anthropic-version": "2023-06-01"}).send_request(ask())
    first, second = fake.requests
    assert first.body["max_tokens"] == 1000
    assert "system" not in first.body and "tools" not in first.body
    assert first.headers["Authorization"] == "Bearer sk-ant-test"
    assert second.body["max_tokens"] == 4096
    assert second.headers["anthropic-version"] == "2023-06-01"


async def test_model_key_and_base_url_come_from_the_environment(
    fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_MODEL", "claude-from-env")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    fake.queue(Reply.text("a"))
    async with AnthropicLlmService() as service:
        assert service.model_name == "claude-from-env"
        await service.send_request(ask())
    assert fake.requests[0].body["model"] == "claude-from-env"
    assert fake.requests[0].headers["Authorization"] == "Bearer sk-ant-env"


async def test_default_model_when_nothing_is_configured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ANTHROPIC_MODEL", raising=False)
    async with AnthropicLlmService(api_key="sk-ant-test") as service:
        assert service.model_name == DEFAULT_MODEL


async def test_send_request_returns_text_tool_calls_and_usage(
    fake: FakeAnthropic, service: AnthropicLlmService
) -> None:
    fake.queue(
        Reply(
            [
                Text(["Checking", "..."]),
                ToolUse("run_sql", {"sql": "x"}, id="t1"),
                ToolUse("list_tables", id="t2"),
            ],
            input_tokens=30,
            output_tokens=9,
        )
    )
    response = await service.send_request(ask())
    assert response.content == "Checking..."
    assert response.tool_calls == [
        ToolCall(id="t1", name="run_sql", arguments={"sql": "x"}),
        ToolCall(id="t2", name="list_tables", arguments={}),
    ]
    assert response.finish_reason == "tool_use"
    assert response.usage == {"input_tokens": 30, "output_tokens": 9, **UNCACHED}


class RecordingProvider(ObservabilityProvider):
    def __init__(self) -> None:
        self.metrics: list[tuple[str, float, str, dict[str, str]]] = []

    async def record_metric(
        self, name: str, value: float, unit: str = "", tags: dict[str, str] | None = None
    ) -> None:
        self.metrics.append((name, value, unit, tags or {}))


async def test_token_usage_is_recorded_as_metrics(
    fake: FakeAnthropic, make_service: ServiceFactory
) -> None:
    provider = RecordingProvider()
    service = make_service(observability_provider=provider)
    fake.queue(
        Reply.text("a", input_tokens=11, output_tokens=3),
        Reply.text("b", input_tokens=20, output_tokens=5),
    )
    await service.send_request(ask())
    [_ async for _ in service.stream_request(ask())]
    tags = {"model": TEST_MODEL, "provider": "anthropic"}
    assert provider.metrics == [
        ("llm.tokens.input", 11, "tokens", tags),
        ("llm.tokens.output", 3, "tokens", tags),
        ("llm.tokens.input", 20, "tokens", tags),
        ("llm.tokens.output", 5, "tokens", tags),
    ]


def test_importing_agent_core_llm_does_not_import_the_sdk() -> None:
    code = "import sys, agent_core.llm; print('anthropic' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
    )
    assert result.stdout.strip() == "False"


async def test_tool_calls_without_text_and_text_after_results(
    fake: FakeAnthropic, service: AnthropicLlmService
) -> None:
    """Tool results lead their user turn even when the history put text first."""
    fake.queue(Reply.text("ok"))
    call = ToolCall(id="toolu_9", name="list_tables")
    await service.send_request(
        LlmRequest(
            user=User(id="u1"),
            messages=[
                LlmMessage(role="assistant", content="", tool_calls=[call]),
                LlmMessage(role="user", content="hurry"),
                LlmMessage(role="tool", content="users, orders", tool_call_id="toolu_9"),
            ],
        )
    )
    assert fake.requests[0].body["messages"] == [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_9", "name": "list_tables", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_9", "content": "users, orders"},
                {"type": "text", "text": "hurry", "cache_control": EPHEMERAL},
            ],
        },
    ]


async def test_a_tool_result_without_its_call_id_is_refused(
    fake: FakeAnthropic, service: AnthropicLlmService
) -> None:
    request = LlmRequest(user=User(id="u1"), messages=[LlmMessage(role="tool", content="1")])
    with pytest.raises(LlmBadRequestError, match="tool_call_id"):
        await service.send_request(request)
    assert fake.requests == []
