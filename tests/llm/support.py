"""Helpers shared by the LLM tests."""

from __future__ import annotations

from typing import Any

from agent_core.llm.base import LlmMessage, LlmRequest
from agent_core.users import User

TEST_MODEL = "claude-test-model"


def ask(text: str = "Hello", **options: Any) -> LlmRequest:
    """A one-message request from a test user."""
    return LlmRequest(
        messages=[LlmMessage(role="user", content=text)], user=User(id="u1"), **options
    )


UNCACHED = {"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
"""The cache counts the Messages API reports for a request without ``cache_control``."""
