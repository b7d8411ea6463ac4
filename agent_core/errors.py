"""Threadline's one error hierarchy.

Vendor exceptions (anthropic, slack_sdk, botbuilder, redis) are translated into these at
one boundary each, so the agent and its recovery strategies only ever reason about::

    ThreadlineError
    ├── AgentError                  halts the turn; its message is shown to the user
    │   ├── PermissionDeniedError   the user may not use a tool / command
    │   ├── ToolNotFoundError
    │   ├── ToolExecutionError
    │   │   └── SqlError            a query failed (invalid, read_only, timeout, unavailable)
    │   ├── ValidationError         bad input (tool arguments, payloads)
    │   │   └── FileLoadError       a shared file that cannot become a table
    │   └── ConversationNotFoundError
    ├── LlmError                    the model could not answer (``retryable``, ``retry_after``)
    │   ├── LlmRateLimitError       429; honours Retry-After
    │   ├── LlmOverloadedError      529
    │   ├── LlmServerError          5xx
    │   ├── LlmTimeoutError
    │   ├── LlmConnectionError
    │   ├── LlmBadRequestError      400/404/413/422: retrying will not help
    │   └── LlmAuthenticationError  401/403
    └── StateUnavailableError       the shared state backend (Redis) is unreachable

Cancellation (the user's Stop) is ``asyncio.CancelledError``: a control-flow signal, not an
error, so it is never caught as one.
"""

from __future__ import annotations


class ThreadlineError(Exception):
    """Base of every error Threadline raises on purpose."""


class AgentError(ThreadlineError):
    """Stops the current turn; ``str(error)`` is shown to the user.

    Lifecycle hooks raise it to refuse a message (a quota, a banned user)::

        raise AgentError("You have used your 20 questions for this hour.")
    """


class PermissionDeniedError(AgentError):
    """The user's groups do not grant access to the requested tool or command."""


class ToolNotFoundError(AgentError):
    """The LLM asked for a tool that is not registered."""


class ToolExecutionError(AgentError):
    """A tool failed while running."""


class ValidationError(AgentError):
    """Input failed validation (tool arguments, payloads)."""


class ConversationNotFoundError(AgentError):
    """No conversation with that id exists for this user."""


class LlmError(ThreadlineError):
    """The LLM provider failed; ``retryable`` tells recovery strategies whether to try again."""

    retryable: bool = False

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class LlmRateLimitError(LlmError):
    retryable = True


class LlmOverloadedError(LlmError):
    retryable = True


class LlmServerError(LlmError):
    retryable = True


class LlmTimeoutError(LlmError):
    retryable = True


class LlmConnectionError(LlmError):
    retryable = True


class LlmBadRequestError(LlmError):
    retryable = False


class LlmAuthenticationError(LlmError):
    retryable = False


class StateUnavailableError(ThreadlineError):
    """The shared state backend cannot be reached; the turn cannot be accepted safely."""

    public_message = "Threadline is temporarily unavailable. Please try again shortly."
    """What the asker is told, in every channel."""
