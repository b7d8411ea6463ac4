"""Improvement 3: the error recovery strategy is honoured, and validate_tools is called."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from agent_core import (
    Agent,
    LlmResponse,
    RecoveryAction,
    RecoveryActionType,
    ScriptedLlmService,
    ScriptedResponse,
    ToolResult,
)
from agent_core.errors import LlmRateLimitError, LlmServerError
from tests.support.tools import EchoTool

from .conftest import ADMIN, collect, content, final_text
from .harness import ScriptedRecovery

RETRY = RecoveryAction(action=RecoveryActionType.RETRY, retry_delay_ms=50)
SKIP = RecoveryAction(action=RecoveryActionType.SKIP, message="not needed")


def fallback(value: Any) -> RecoveryAction:
    return RecoveryAction(action=RecoveryActionType.FALLBACK, fallback_value=value)


async def test_llm_retry_waits_then_succeeds(make_agent: Callable[..., Agent]) -> None:
    recovery = ScriptedRecovery(llm=[RETRY])
    llm = ScriptedLlmService([LlmServerError("500"), "recovered"])
    started = time.monotonic()
    out = await collect(make_agent(llm, error_recovery_strategy=recovery), "hi")
    assert time.monotonic() - started >= 0.05
    assert recovery.llm_attempts == [1] and final_text(out) == "recovered"


async def test_llm_retry_attempts_increase_until_fail(make_agent: Callable[..., Agent]) -> None:
    recovery = ScriptedRecovery(llm=[RETRY, RETRY])
    llm = ScriptedLlmService([LlmRateLimitError("429")] * 3)
    out = await collect(make_agent(llm, error_recovery_strategy=recovery), "hi")
    assert recovery.llm_attempts == [1, 2, 3]
    assert content(out)[-1].rich_component.status == "error"  # type: ignore[attr-defined]


async def test_streamed_partial_text_is_cleared_before_retry(
    make_agent: Callable[..., Agent],
) -> None:
    class BreaksMidStream(ScriptedLlmService):
        async def stream_request(self, request: Any) -> Any:
            if not self.requests:
                self.requests.append(request)
                yield __import__("agent_core").LlmStreamChunk(content="partial ")
                raise LlmServerError("connection reset")
            async for chunk in super().stream_request(request):
                yield chunk

    recovery = ScriptedRecovery(llm=[RecoveryAction(action=RecoveryActionType.RETRY)])
    out = await collect(
        make_agent(BreaksMidStream(["complete"]), error_recovery_strategy=recovery), "hi"
    )
    texts = [c.rich_component for c in out if c.rich_component.type.value == "text"]
    assert [t.lifecycle.value for t in texts][:2] == ["create", "replace"]
    assert texts[1].content == ""  # type: ignore[attr-defined]
    assert final_text(out) == "complete"


async def test_llm_fallback_and_skip(make_agent: Callable[..., Agent]) -> None:
    out = await collect(
        make_agent(
            ScriptedLlmService([LlmServerError("x")]),
            error_recovery_strategy=ScriptedRecovery(llm=[fallback("cached answer")]),
        ),
        "hi",
    )
    assert final_text(out) == "cached answer"
    out = await collect(
        make_agent(
            ScriptedLlmService([LlmServerError("x")]),
            error_recovery_strategy=ScriptedRecovery(llm=[fallback(LlmResponse(content="obj"))]),
        ),
        "hi",
    )
    assert final_text(out) == "obj"
    out = await collect(
        make_agent(
            ScriptedLlmService([LlmServerError("x")]),
            error_recovery_strategy=ScriptedRecovery(llm=[SKIP]),
        ),
        "hi",
    )
    assert not [c for c in out if c.rich_component.type.value in ("text", "status_card")]
    assert out[-2].rich_component.status == "idle"  # type: ignore[attr-defined]


class Flaky(EchoTool):
    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    async def execute(self, context: Any, args: Any) -> ToolResult:
        self.executions.append(args.text)
        if len(self.executions) <= self.failures:
            raise ConnectionError("database went away")
        return ToolResult(success=True, result_for_llm="fresh rows")


def _tool_llm() -> ScriptedLlmService:
    return ScriptedLlmService([ScriptedResponse.tool("echo", {"text": "q"}), "done"])


async def test_tool_retry_fallback_skip_fail(make_agent: Callable[..., Agent]) -> None:
    cases: list[tuple[list[RecoveryAction], str, int]] = [
        ([RETRY], "fresh rows", 2),
        ([fallback("rows from cache")], "rows from cache", 1),
        ([SKIP], "Tool call skipped: not needed", 1),
        ([], "database went away", 1),
    ]
    for actions, expected, executions in cases:
        tool, llm = Flaky(failures=1), _tool_llm()
        recovery = ScriptedRecovery(tool=actions)
        await collect(make_agent(llm, tools=[(tool, [])], error_recovery_strategy=recovery), "q")
        result = next(m for m in llm.requests[1].messages if m.role == "tool")
        assert expected in result.content, (actions, result.content)
        assert len(tool.executions) == executions


async def test_validate_tools_is_called_and_can_refuse(make_agent: Callable[..., Agent]) -> None:
    llm = ScriptedLlmService(["hi"])
    await collect(make_agent(llm, tools=[(EchoTool(), [])]), "hello")
    assert [[t.name for t in tools] for tools in llm.validated_tools] == [["echo"]]

    class Picky(ScriptedLlmService):
        async def validate_tools(self, tools: Any) -> list[str]:
            return ["tool 'echo': name is reserved"]

    out = await collect(make_agent(Picky(["hi"]), tools=[(EchoTool(), [])], user=ADMIN), "hello")
    card = content(out)[0].rich_component
    assert card.status == "error" and "reserved" in card.description  # type: ignore[attr-defined]
