"""``McpSettings``: the ``[[mcp]]`` servers of ``threadline.toml`` and what their sign-ins need.

::

    mcp_token_key = "..."          # THREADLINE_MCP_TOKEN_KEY: encrypts people's tokens at rest
    mcp_callback_url = "https://bot.example.com/oauth/mcp/callback"   # THREADLINE_MCP_CALLBACK_URL

    [[mcp]]
    name = "tickets"
    url = "https://tickets.example.com/mcp"
    auth = "user"

A server with ``auth = "user"`` keeps each person's tokens, encrypted with
``mcp_token_key`` (a Fernet key; several, comma-separated, to rotate: the first encrypts,
all decrypt), so the bot refuses to start without one, and the sign-in's redirect needs
``mcp_callback_url`` (the bot's own ``/oauth/mcp/callback`` as the internet reaches it).
``[[profiles]]`` may have servers of their own (``[[profiles.mcp]]``); every server's name
is unique across the file.

>>> settings = McpSettings(mcp=[{"name": "t", "url": "https://t.example/mcp", "auth": "user"}])
>>> [str(problem) for problem in check_mcp(settings.mcp, settings)][0]
'[[mcp]] t: auth = "user" keeps people\\'s tokens encrypted, so it needs mcp_token_key (...)'
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field, SecretStr, field_validator

from agent_core.mcp.config import McpServerConfig
from agent_core.settings import ConfigProblem, Section, env

CALLBACK_PATH = "/oauth/mcp/callback"
"""Where an authorization server sends a person back, on the bot's own HTTP server."""

KEY_HINT = (
    "set THREADLINE_MCP_TOKEN_KEY to a Fernet key: "
    'python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())"'
)


class McpSettings(Section):
    """The top-level MCP settings; see the module docstring.

    >>> McpSettings().mcp, McpSettings().mcp_token_key is None
    ([], True)
    """

    mcp: list[McpServerConfig] = Field(default_factory=list)
    """``[[mcp]]``: the MCP servers every agent uses (a profile may add its own)."""
    mcp_token_key: SecretStr | None = Field(
        None, validation_alias=env("mcp_token_key", "THREADLINE_MCP_TOKEN_KEY")
    )
    """Fernet key(s) encrypting people's MCP tokens at rest (comma-separated to rotate)."""
    mcp_callback_url: str | None = Field(
        None, validation_alias=env("mcp_callback_url", "THREADLINE_MCP_CALLBACK_URL")
    )
    """The bot's ``/oauth/mcp/callback`` as browsers reach it (https)."""

    @field_validator("mcp_callback_url")
    @classmethod
    def _callback(cls, url: str | None) -> str | None:
        from urllib.parse import urlsplit

        from agent_core.mcp.config import LOOPBACK_HOSTS

        if url is None:
            return None
        parts = urlsplit(url)
        if parts.scheme != "https" and parts.hostname not in LOOPBACK_HOSTS:
            raise ValueError("mcp_callback_url must be https (http only on this machine)")
        if not parts.path.endswith(CALLBACK_PATH):
            raise ValueError(f"mcp_callback_url must end with {CALLBACK_PATH}")
        return url


def check_mcp(
    servers: Sequence[McpServerConfig],
    settings: McpSettings,
    *,
    where: str = "[[mcp]]",
    local: bool = False,
) -> list[ConfigProblem]:
    """What stops the configured servers from working: a name used twice, people's sign-ins
    without a key to keep their tokens or a callback URL to come back to, a key that is not
    one.

    ``servers`` is every server of the file (top level and profiles'). ``local`` (the
    console, the chat): sign-ins come back to this machine, tokens are sealed with a key of
    the process's own, so neither setting is required (a key given must still be one)."""
    problems: list[ConfigProblem] = []
    seen: set[str] = set()
    for server in servers:
        if server.name in seen:
            problems.append(
                ConfigProblem(f"{where} {server.name}", "the name is used twice", "rename one")
            )
        seen.add(server.name)
    personal = [server for server in servers if server.auth == "user" and not local]
    if personal and settings.mcp_token_key is None:
        problems.append(
            ConfigProblem(
                f"{where} {personal[0].name}",
                'auth = "user" keeps people\'s tokens encrypted, so it needs mcp_token_key',
                KEY_HINT,
            )
        )
    if personal and settings.mcp_callback_url is None:
        problems.append(
            ConfigProblem(
                f"{where} {personal[0].name}",
                'auth = "user" needs mcp_callback_url, where sign-ins come back',
                f"set THREADLINE_MCP_CALLBACK_URL to https://<the bot's host>{CALLBACK_PATH}",
            )
        )
    if settings.mcp_token_key is not None:
        from agent_core.mcp.auth.crypto import key_problem

        problem = key_problem(settings.mcp_token_key.get_secret_value())
        if problem is not None:
            problems.append(ConfigProblem("mcp_token_key", problem, KEY_HINT))
    return problems
