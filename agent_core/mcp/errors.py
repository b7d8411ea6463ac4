"""What can go wrong with an MCP server, as Threadline errors.

The ``mcp`` SDK, ``httpx2`` and the operating system each raise their own exceptions;
``translate`` turns them into these at one boundary (``McpConnection``), so the tools and
the turn only ever reason about::

    ThreadlineError
    └── McpError                 an MCP server failed one of its callers
        ├── McpNotInstalled      the ``mcp`` extra is missing
        ├── McpUnavailable       the server cannot be reached, is restarting or crashed
        ├── McpTimeout           a call took longer than the server's ``call_timeout``
        ├── McpCallError         the server refused the call or answered something invalid
        └── SignInRequired       the person has not connected their account (``auth = "user"``)

Every message is safe to show: it names the server, never a secret (passwords in URLs are
masked; tokens never reach an exception).

>>> print(McpUnavailable("tickets", "connection refused"))
MCP server 'tickets' is unavailable: connection refused
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_core.errors import ThreadlineError
from agent_core.settings import masked

if TYPE_CHECKING:
    from collections.abc import Iterator

INSTALL_HINT = "pip install 'threadline[mcp]'"


class McpError(ThreadlineError):
    """Base of the MCP errors; ``server`` names the ``[[mcp]]`` server concerned.

    >>> McpError("tickets", "oops").server
    'tickets'
    """

    def __init__(self, server: str, message: str) -> None:
        self.server = server
        self.detail = masked(message)
        super().__init__(self.describe())

    def describe(self) -> str:
        return f"MCP server {self.server!r}: {self.detail}"


class McpNotInstalled(McpError):
    """MCP servers are configured but the SDK is not installed.

    >>> print(McpNotInstalled())
    MCP servers need the 'mcp' extra (missing: mcp): pip install 'threadline[mcp]'
    """

    def __init__(self, missing: str = "mcp") -> None:
        self.missing = missing
        super().__init__("", missing)

    def describe(self) -> str:
        return f"MCP servers need the 'mcp' extra (missing: {self.missing}): {INSTALL_HINT}"


class McpUnavailable(McpError):
    """The server cannot be reached (refused, crashed, restarting, its process would not
    start); ``retry_in`` is how long until the next attempt, when one is planned.

    >>> McpUnavailable("tickets", "refused", retry_in=2.0).retry_in
    2.0
    """

    def __init__(self, server: str, message: str, *, retry_in: float | None = None) -> None:
        self.retry_in = retry_in
        super().__init__(server, message)

    def describe(self) -> str:
        return f"MCP server {self.server!r} is unavailable: {self.detail}"


class McpTimeout(McpError):
    """A call (or opening the session) took longer than allowed.

    >>> print(McpTimeout("tickets", "the call timed out"))
    MCP server 'tickets' did not answer in time: the call timed out
    """

    def describe(self) -> str:
        return f"MCP server {self.server!r} did not answer in time: {self.detail}"


class McpCallError(McpError):
    """The server answered, but with a protocol error or a result that is not valid.

    >>> print(McpCallError("tickets", "an invalid result"))
    MCP server 'tickets': an invalid result
    """


class SignInRequired(McpError):
    """The person must connect their own account to this server first.

    ``url`` is where they sign in (the authorization server's page) and ``state`` names the
    sign-in it started; both are theirs alone. ``single_sign_on``: the channel issues the
    person's token itself (Teams single sign-on), so ``url`` is empty and ``state`` is what
    the channel's exchange finishes.

    >>> print(SignInRequired("tickets", "https://auth.example/authorize?x=1"))
    MCP server 'tickets' needs you to connect your account
    """

    def __init__(
        self,
        server: str,
        url: str | None = None,
        *,
        state: str | None = None,
        reason: str = "",
        expires_at: float | None = None,
        single_sign_on: bool = False,
    ) -> None:
        self.url = url
        self.state = state
        self.single_sign_on = single_sign_on
        self.expires_at = expires_at
        """When the sign-in ``url`` stops working (``time.time()``); None: it does not."""
        super().__init__(server, reason or "sign-in required")

    def usable(self, now: float) -> bool:
        """Whether the person may still be sent to ``url`` (its sign-in has not expired).

        >>> SignInRequired("t", "https://a.example/x", expires_at=100.0).usable(99.0)
        True
        """
        return self.expires_at is None or now < self.expires_at

    def describe(self) -> str:
        return f"MCP server {self.server!r} needs you to connect your account"


def require_sdk() -> None:
    """Raise ``McpNotInstalled`` unless the ``mcp`` SDK (and ``cryptography``) import."""
    import importlib.util

    for module in ("mcp", "httpx2", "cryptography"):
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # a missing parent package
            found = False
        if not found:
            raise McpNotInstalled(module)


def _leaves(error: BaseException) -> Iterator[BaseException]:
    """The exceptions inside (nested) exception groups, depth first; ``error`` otherwise."""
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            yield from _leaves(inner)
    else:
        yield error


def _first_meaningful(error: BaseException) -> BaseException:
    """What a task group's failure was about: one of ours first, else the first leaf that is
    not a cancellation (a task group cancels its siblings when one fails)."""
    import asyncio

    leaves = list(_leaves(error))
    for leaf in leaves:
        if isinstance(leaf, McpError):
            return leaf
    for leaf in leaves:
        if not isinstance(leaf, asyncio.CancelledError):
            return leaf
    return error


def translate(server: str, error: BaseException) -> McpError:
    """The ``McpError`` for anything the SDK, the HTTP client or the OS raised about
    ``server``; the one place vendor exceptions are read.

    >>> translate("t", FileNotFoundError(2, "No such file", "tickets-mcp")).detail
    "cannot start the server's command: [Errno 2] No such file: 'tickets-mcp'"
    >>> type(translate("t", TimeoutError())).__name__
    'McpTimeout'
    """
    import httpx2
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
    from pydantic import ValidationError

    error = _first_meaningful(error)
    match error:
        case McpError():
            return error
        case MCPError(code=code) if code == CONNECTION_CLOSED and "SSE stream" in str(error):
            return McpCallError(server, f"the server's reply could not be read ({error})")
        case MCPError(code=code) if code == CONNECTION_CLOSED:
            return McpUnavailable(server, "the connection closed")
        case MCPError(code=code) if code == REQUEST_TIMEOUT:
            return McpTimeout(server, "the call timed out")
        case MCPError():
            return McpCallError(server, f"the server refused the request: {error.error.message}")
        case TimeoutError():
            return McpTimeout(server, "the server took too long")
        case httpx2.HTTPStatusError():
            return McpUnavailable(server, f"HTTP {error.response.status_code}")
        case httpx2.TransportError():
            return McpUnavailable(server, f"cannot reach the server ({type(error).__name__})")
        case OSError():
            return McpUnavailable(server, f"cannot start the server's command: {error}")
        case ValidationError():
            return McpCallError(server, "the server answered with an invalid result")
        case RuntimeError() if "structured content" in str(error) or "schema" in str(error):
            return McpCallError(server, f"the server answered with an invalid result: {error}")
    return McpUnavailable(server, f"{type(error).__name__}: {error}")
