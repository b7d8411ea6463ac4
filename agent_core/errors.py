"""Threadline's one error hierarchy: every exception Threadline raises on purpose.

Vendor exceptions (anthropic, slack_sdk, botbuilder, redis) are translated into these at
one boundary each, so the agent, its recovery strategies and the bots only ever reason
about::

    ThreadlineError
    ├── AgentError                  a refusal: halts the turn; its message is shown to the user
    │   ├── PermissionDeniedError   the user may not use a tool / command
    │   ├── ToolNotFoundError
    │   ├── ToolExecutionError
    │   │   └── SqlError            a query failed (agent_core.tools.sql)
    │   ├── ValidationError         bad input (tool arguments, payloads)
    │   │   ├── FileLoadError       a shared file that cannot become a table (database)
    │   │   ├── FileRefused         a shared file that is not downloaded (adapters.files)
    │   │   └── ScheduleParseError  a schedule that cannot be read (agent_core.schedules)
    │   ├── FetchRefused            an outbound fetch the policy refuses (adapters.fetch)
    │   ├── InstallationStopped     Slack refused an installation's refresh token: it stopped
    │   ├── TokenRenewalPending     an expired bot token whose renewal has not finished yet
    │   │                           (both adapters.slack.tokens)
    │   ├── ScheduleLimitError      a person's or a workspace's schedules are at their cap
    │   ├── BudgetExceededError     a budget covering the asker is used up (agent_core.usage)
    │   ├── AlertAuthoringError     the model wrote no working check for an alert
    │   └── ConversationNotFoundError
    ├── LlmError                    the model could not answer (``retryable``, ``retry_after``)
    │   ├── LlmRateLimitError       429; honours Retry-After
    │   ├── LlmOverloadedError      529
    │   ├── LlmServerError          5xx
    │   ├── LlmTimeoutError
    │   ├── LlmConnectionError
    │   ├── LlmBadRequestError      400/404/413/422: retrying will not help
    │   └── LlmAuthenticationError  401/403
    ├── StateUnavailableError       the shared state backend (Redis) is unreachable
    ├── Unauthenticated             a request that did not prove its sender (a Slack signature,
    │                               a Bot Framework token): 401, and nothing else happens;
    │                               raised only before authentication
    ├── MalformedPayload            a verified payload whose shape no platform sends (also a
    │                               ValueError): acknowledged and dropped
    ├── PlatformCallFailed          a platform API call failed, read once at its boundary
    │   ├── SlackCallFailed         a Web API call (adapters.slack.errors: ``failure``)
    │   ├── ConnectorError          a Bot Connector call (adapters.teams.connector)
    │   └── MarkerRefused           a scheduled run's marker the channel refused, and whether
    │                               the place is gone for good (bots.schedules.run)
    ├── ConfigError                 the configuration, every problem listed (agent_core.settings;
    │                               also a ValueError)
    ├── DatabaseConfigError         the database URL cannot be used (agent_core.database.urls)
    ├── ChartError                  the data cannot make the chart (agent_core.tools.visualize)
    ├── McpError                    an MCP server failed one of its callers (unavailable, timed
    │                               out, refused, sign-in required: agent_core.mcp.errors)
    ├── SignInRefused               an OAuth callback that finishes no sign-in (forged, replayed,
    │                               expired, declined: agent_core.mcp.auth.signin)
    ├── AppError                    ``--app`` gives no agent (bots.apps)
    ├── FrameError                  a Bedrock event-stream frame that does not hold
    │                               (agent_core.llm.eventstream; also a ValueError)
    ├── SignatureError              a request AWS would refuse (agent_core.llm.sigv4, as the
    │                               Bedrock fake checks it; also a ValueError)
    ├── AddressRefused              a socket to an address the outbound policy refuses
    │                               (adapters.fetch; also an OSError, as aiohttp reports it)
    ├── AlertValueError             an alert's query gave no number to compare (also a
    │                               ValueError: agent_core.schedules.alerts)
    ├── AmbiguousZone               a time zone abbreviation several places share (also a
    │                               ValueError: agent_core.schedules.zones)
    ├── ScheduleIdTaken             a new schedule's id is another's (agent_core.schedules.store)
    ├── UnknownPerson               nobody the stores know is the person to erase (also a
    │                               LookupError: agent_core.forget)
    └── MissingExtra                a command's extra is not installed (bots.extras)

A *refusal* is the bot doing its job (a quota reached, a user it cannot identify, a
workspace that uninstalled the app): ``log_failure`` logs it once, at INFO, without a
traceback. A known outage (the model, the state, a platform) is a WARNING without one; only
an unexpected error is logged at ERROR with its traceback.

Cancellation (the user's Stop) is ``asyncio.CancelledError``: a control-flow signal, not an
error, so it is never caught as one.
"""

from __future__ import annotations

import logging


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


class BudgetExceededError(AgentError):
    """A budget covering the asker is used up; ``str(error)`` says which and when it resets."""


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


class Unauthenticated(ThreadlineError):
    """A request that did not prove who sent it; the message says what failed (never the
    token or signature itself)."""


class MalformedPayload(ThreadlineError, ValueError):
    """A payload whose shape is not one the platform sends (the reason names the field,
    never its value)."""


class PlatformCallFailed(ThreadlineError):
    """A call to a platform's API (Slack's Web API, the Bot Connector) failed; each
    channel's subclass carries what the platform said."""


def log_failure(logger: logging.Logger, error: BaseException, doing: str) -> None:
    """Log ``error`` that ended ``doing`` once, at the level it deserves (see the module
    docstring).

    >>> import logging, sys
    >>> logging.basicConfig(stream=sys.stdout, format="%(levelname)s %(message)s", force=True)
    >>> log_failure(logging.getLogger("doc"), AgentError("You have reached your limit."),
    ...             "turn 1")
    >>> logging.getLogger("doc").setLevel(logging.INFO)
    >>> log_failure(logging.getLogger("doc"), AgentError("You have reached your limit."),
    ...             "turn 1")
    INFO turn 1 refused: You have reached your limit.
    """
    if isinstance(error, AgentError):
        logger.info("%s refused: %s", doing, error)
    elif isinstance(error, ThreadlineError):
        logger.warning("%s failed: %s: %s", doing, type(error).__name__, error)
    else:
        logger.error("%s failed", doing, exc_info=error)
