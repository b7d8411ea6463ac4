"""Settings of the Slack bot, from the environment.

    SLACK_BOT_TOKEN        xoxb-... (single workspace; omit with OAuth)
    SLACK_SIGNING_SECRET   verifies HTTP requests (HTTP mode and OAuth)
    SLACK_APP_TOKEN        xapp-... switches to Socket Mode
    SLACK_CLIENT_ID / SLACK_CLIENT_SECRET   multi-workspace OAuth install
    SLACK_ADMIN_USERS      comma-separated user ids (U123) made ``admin``
    SLACK_ADMIN_GROUPS     comma-separated user-group handles whose members are ``admin``
    SLACK_WORKSPACE_ADMINS_ARE_ADMINS=1    workspace admins/owners are ``admin`` too
    SLACK_COMMAND          slash command name (default ``/ask``)
    SLACK_API_URL          Web API base URL (tests point it at a fake)
    PORT / HOST            HTTP listener (default 0.0.0.0:3000)
    THREADLINE_DATA_DIR    the demo database (and SQLite state without REDIS_URL)
    THREADLINE_RATE_LIMIT  per-user quota ``N/SECONDS`` or ``N/hour`` (``20/3600``: 20 an hour);
                           off when unset; admins are exempt
    THREADLINE_TURN_CONCURRENCY   turns one process answers at once (default 64)

State (conversations, memory, turns, installations, caches) is configured separately:
``agent_core.state.StateSettings.from_env`` (``REDIS_URL``, ``THREADLINE_DATA_DIR``).

Secrets are ``SecretStr`` so they never appear in a repr or a log line.

>>> s = SlackSettings.from_env({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s",
...                             "SLACK_ADMIN_USERS": "U1, U2"})
>>> (s.mode, s.admin_users, s.command, "xoxb" in repr(s))
('http', ['U1', 'U2'], '/ask', False)
>>> SlackSettings(bot_token="xoxb-1", signing_secret="s", rate_limit="20/3600").rate_limit
(20, 3600.0)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, SecretStr, field_validator, model_validator

Mode = Literal["http", "socket"]

BOT_SCOPES = [
    "app_mentions:read",
    "assistant:write",
    "channels:history",
    "chat:write",
    "commands",
    "files:write",
    "groups:history",
    "im:history",
    "usergroups:read",
    "users:read",
    "users:read.email",
]
"""The bot scopes the app needs; ``manifest.yml`` lists exactly these (a test checks)."""


def _split(value: str | None) -> list[str]:
    return [item.strip() for item in (value or "").split(",") if item.strip()]


def parse_rate_limit(value: object) -> tuple[int, float] | None:
    """A configured quota (a ``(messages, seconds)`` pair, or the environment's text)."""
    if isinstance(value, tuple | list):
        return int(value[0]), float(value[1])
    from agent_core.state.quotas import parse_rate_limit as parse_text

    return parse_text(None if value is None else str(value))


class SlackSettings(BaseModel):
    """Everything the Slack bot is configured with; see the module docstring."""

    bot_token: SecretStr | None = None
    signing_secret: SecretStr | None = None
    app_token: SecretStr | None = None
    client_id: str | None = None
    client_secret: SecretStr | None = None
    mode: Mode = "http"
    host: str = "0.0.0.0"
    port: int = Field(default=3000, ge=0, le=65535)
    command: str = "/ask"
    admin_users: list[str] = Field(default_factory=list)
    admin_groups: list[str] = Field(default_factory=list)
    workspace_admins_are_admins: bool = False
    api_url: str | None = None
    data_dir: Path = Field(default_factory=lambda: Path.home() / ".threadline")
    stop_button_after: float = Field(default=3.0, ge=0)
    """Seconds a turn runs before a Stop button is shown (short answers need none)."""
    flush_chars: int = Field(default=1000, gt=0)
    flush_interval: float = Field(default=1.0, ge=0)
    identity_ttl: float = Field(default=300.0, gt=0)
    identity_local_ttl: float = Field(default=30.0, ge=0)
    """Seconds a process keeps identity lookups in front of the shared cache (0: off)."""
    dedupe_ttl: float = Field(default=3600.0, gt=0)
    rate_limit: tuple[int, float] | None = None
    """``(messages, seconds)`` per user, from ``THREADLINE_RATE_LIMIT``; ``None``: no quota."""
    turn_concurrency: int = Field(default=64, ge=1)

    @field_validator("rate_limit", mode="before")
    @classmethod
    def _rate_limit(cls, value: object) -> tuple[int, float] | None:
        return parse_rate_limit(value)

    @model_validator(mode="after")
    def _check(self) -> SlackSettings:
        if not self.command.startswith("/"):
            self.command = "/" + self.command
        if self.mode == "socket" and self.app_token is None:
            raise ValueError("Socket Mode needs SLACK_APP_TOKEN (xapp-...)")
        if self.bot_token is None and not self.oauth_enabled:
            raise ValueError("set SLACK_BOT_TOKEN, or SLACK_CLIENT_ID + SLACK_CLIENT_SECRET")
        if self.mode == "http" and self.signing_secret is None:
            raise ValueError("HTTP mode needs SLACK_SIGNING_SECRET")
        return self

    @property
    def oauth_enabled(self) -> bool:
        return bool(self.client_id and self.client_secret)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> SlackSettings:
        """Read the environment; keyword arguments win. ``mode`` follows SLACK_APP_TOKEN."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {
            "bot_token": env.get("SLACK_BOT_TOKEN") or None,
            "signing_secret": env.get("SLACK_SIGNING_SECRET") or None,
            "app_token": env.get("SLACK_APP_TOKEN") or None,
            "client_id": env.get("SLACK_CLIENT_ID") or None,
            "client_secret": env.get("SLACK_CLIENT_SECRET") or None,
            "mode": "socket" if env.get("SLACK_APP_TOKEN") else "http",
            "admin_users": _split(env.get("SLACK_ADMIN_USERS")),
            "admin_groups": _split(env.get("SLACK_ADMIN_GROUPS")),
            "workspace_admins_are_admins": env.get("SLACK_WORKSPACE_ADMINS_ARE_ADMINS", "")
            in ("1", "true", "yes"),
            "command": env.get("SLACK_COMMAND") or "/ask",
            "api_url": env.get("SLACK_API_URL") or None,
        }
        for key, name in (
            ("port", "PORT"),
            ("host", "HOST"),
            ("data_dir", "THREADLINE_DATA_DIR"),
            ("rate_limit", "THREADLINE_RATE_LIMIT"),
            ("turn_concurrency", "THREADLINE_TURN_CONCURRENCY"),
        ):
            if env.get(name):
                values[key] = env[name]
        return cls(**{**values, **overrides})
