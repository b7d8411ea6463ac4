"""``McpServerConfig``: one ``[[mcp]]`` table of ``threadline.toml``.

A server is reached over stdio (``command`` + ``args``, started and supervised by the bot)
or streamable HTTP (``url``), and signs its callers in one of three ways: ``none``, one
bearer ``token`` for everyone allowed (``auth = "service"``), or each person's own account
(``auth = "user"``, OAuth 2.1)::

    [[mcp]]
    name = "tickets"
    url = "https://tickets.example.com/mcp"
    auth = "user"
    description = "The support team's tickets: search, read and file them."
    tools = ["search_tickets", "get_ticket", "file_ticket"]   # allow list (unset: all)
    exclude = ["delete_ticket"]
    allowed_groups = ["support"]                              # who may use the server
    tool_groups = { file_ticket = ["support-leads"] }         # narrower, per tool
    approval = { get_ticket = "never" }                       # else from the server's hints
    call_timeout = 30

Secrets (``token``, ``headers``, ``env`` values) are never shown: ``threadline config``
lists servers by name, and the model never sees them (``McpMasker``). A tool's own
``tool_groups`` may only narrow its server's ``allowed_groups``, so being allowed a tool
always means being allowed its server.

>>> server = McpServerConfig(name="files", command="files-mcp", args=["--root", "/srv"])
>>> server.transport, server.auth
('stdio', 'none')
>>> McpServerConfig(name="x", url="http://example.com/mcp")
Traceback (most recent call last):
pydantic_core._pydantic_core.ValidationError: 1 validation error for McpServerConfig
  Value error, url must be https (http only on this machine: 127.0.0.1, localhost) ...
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from agent_core.tool_contract import ApprovalMode

Auth = Literal["none", "service", "user"]
Protocol = Literal["auto", "legacy"]
Transport = Literal["stdio", "http"]

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
"""Hosts a plain-http MCP URL may name: this machine only."""


def secure_url(url: str) -> bool:
    """Whether ``url`` is https, or plain http to this machine (``LOOPBACK_HOSTS``).

    >>> secure_url("https://auth.example/authorize"), secure_url("http://auth.example/x")
    (True, False)
    >>> secure_url("http://127.0.0.1:9000/authorize"), secure_url("javascript:alert(1)")
    (True, False)
    """
    parts = urlsplit(url)
    if not parts.hostname:
        return False
    return parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS)


NAME_PATTERN = r"^[a-z][a-z0-9_]{0,23}$"
"""A server's name prefixes its tools' names where they collide, so it is short and plain."""


class McpServerConfig(BaseModel):
    """One MCP server; see the module docstring.

    >>> McpServerConfig(name="tickets", url="https://t.example/mcp", auth="user").transport
    'http'
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=NAME_PATTERN)
    description: str = Field("", max_length=500)
    """What the server is for: the model reads it where a person must connect first."""
    command: str | None = None
    """stdio: the program to start (``args`` follow it)."""
    args: list[str] = Field(default_factory=list)
    env: dict[str, SecretStr] = Field(default_factory=dict)
    """stdio: variables for the server's process (it inherits only HOME, PATH and a few more)."""
    env_from: list[str] = Field(default_factory=list)
    """stdio: names of the bot's own environment variables passed on to the server."""
    url: str | None = None
    """Streamable HTTP: the server's endpoint (https; plain http only on this machine)."""
    headers: dict[str, SecretStr] = Field(default_factory=dict)
    auth: Auth = "none"
    token: SecretStr | None = None
    """``auth = "service"``: the bearer token every allowed person's calls carry."""
    token_env: str | None = None
    """``auth = "service"``: the environment variable holding that token instead."""
    scopes: list[str] = Field(default_factory=list)
    """``auth = "user"``: the scopes to ask for (unset: what the server asks for)."""
    tools: list[str] | None = None
    """Only these tools of the server (unset: all of them)."""
    exclude: list[str] = Field(default_factory=list)
    allowed_groups: list[str] = Field(default_factory=list)
    """Who may use the server's tools (empty: everyone the workspace resolves)."""
    tool_groups: dict[str, list[str]] = Field(default_factory=dict)
    """Per tool, who may use it: a subset of ``allowed_groups`` (it can only narrow)."""
    approval: dict[str, ApprovalMode] = Field(default_factory=dict)
    """Per tool: ``never``, ``always`` or ``ask_once`` (else from the server's hints)."""
    connect_timeout: float = Field(10.0, gt=0, le=300)
    call_timeout: float = Field(60.0, gt=0, le=3600)
    max_result_chars: int = Field(20_000, ge=200, le=1_000_000)
    """The most characters of one result the model reads; longer ones are cut, and it says so."""
    max_response_mb: float = Field(16.0, gt=0, le=512)
    """HTTP: the largest single message accepted from the server; larger ones are refused."""
    protocol: Protocol = "auto"
    """``auto`` (the newest protocol the server speaks) or ``legacy`` (the initialize handshake)."""

    @property
    def transport(self) -> Transport:
        return "stdio" if self.command is not None else "http"

    @model_validator(mode="after")
    def _check(self) -> McpServerConfig:
        problems = [
            *self._transport_problems(),
            *self._auth_problems(),
            *self._tool_problems(),
        ]
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def _transport_problems(self) -> list[str]:
        if (self.command is None) == (self.url is None):
            return ["set either command (stdio) or url (streamable HTTP), not both"]
        if self.command is not None:
            return ["headers are for url servers (give a stdio server env)"] if self.headers else []
        problems = ["env and env_from are for stdio servers"] if self.env or self.env_from else []
        assert self.url is not None
        parts = urlsplit(self.url)
        if not secure_url(self.url):
            problems.append(
                "url must be https (http only on this machine: 127.0.0.1, localhost) "
                f"[{parts.scheme or 'no'} scheme given]"
            )
        if parts.username or parts.password:
            problems.append("url must not carry credentials (use auth = 'service' and token)")
        return problems

    def _auth_problems(self) -> list[str]:
        problems = []
        bearer = self.token is not None or self.token_env is not None
        if self.auth != "none" and self.transport == "stdio":
            problems.append("auth is for url servers (give a stdio server its secrets in env)")
        if self.auth == "service" and not bearer:
            problems.append("auth = 'service' needs token (or token_env)")
        if self.auth != "service" and bearer:
            problems.append("token and token_env are for auth = 'service'")
        if self.token is not None and self.token_env is not None:
            problems.append("set token or token_env, not both")
        if self.auth != "none" and any(h.lower() == "authorization" for h in self.headers):
            problems.append("an Authorization header conflicts with auth (remove it)")
        if self.scopes and self.auth != "user":
            problems.append("scopes are for auth = 'user'")
        return problems

    def _tool_problems(self) -> list[str]:
        problems = []
        both = sorted(set(self.tools or ()) & set(self.exclude))
        if both:
            problems.append(f"tools and exclude both name {', '.join(both)}")
        allowed = set(self.allowed_groups)
        for tool, groups in self.tool_groups.items():
            if not groups:
                problems.append(f"tool_groups.{tool} is empty (remove it to use the server's)")
            wider = sorted(set(groups) - allowed) if allowed else []
            if wider:
                problems.append(
                    f"tool_groups.{tool} names {', '.join(wider)}, not in allowed_groups "
                    "(a tool's groups can only narrow its server's)"
                )
        for table in ("tool_groups", "approval"):
            keys: Mapping[str, object] = getattr(self, table)
            for tool in keys:
                if tool in self.exclude or (self.tools is not None and tool not in self.tools):
                    problems.append(f"{table}.{tool} names a tool that is not offered")
        return problems

    def offers(self, tool: str) -> bool:
        """Whether the configuration lets the server's ``tool`` through (allow list, exclude).

        >>> McpServerConfig(name="t", command="x", tools=["a", "b"], exclude=["c"]).offers("b")
        True
        """
        if tool in self.exclude:
            return False
        return self.tools is None or tool in self.tools

    def groups_for(self, tool: str) -> tuple[str, ...]:
        """Who may use ``tool``: its own ``tool_groups`` when set, else the server's."""
        return tuple(self.tool_groups.get(tool) or self.allowed_groups)

    def bearer_token(self, environ: Mapping[str, str] | None = None) -> str | None:
        """``auth = "service"``: the token, from ``token`` or the variable ``token_env``."""
        if self.token is not None:
            return self.token.get_secret_value()
        if self.token_env is not None:
            return (os.environ if environ is None else environ).get(self.token_env) or None
        return None

    def secrets(self, environ: Mapping[str, str] | None = None) -> list[str]:
        """Every secret value this server is configured with (masked wherever text from or
        about the server is shown)."""
        variables = os.environ if environ is None else environ
        values = [v.get_secret_value() for v in (*self.env.values(), *self.headers.values())]
        values += [variables[name] for name in self.env_from if variables.get(name)]
        token = self.bearer_token(variables)
        return [value for value in [*values, token] if value]
