"""Settings of the Slack bot: the ``[slack]`` table of ``threadline.toml``, or the environment.

    bot_token        SLACK_BOT_TOKEN        xoxb-... (single workspace; omit with OAuth)
    signing_secret   SLACK_SIGNING_SECRET   verifies HTTP requests (HTTP mode and OAuth)
    app_token        SLACK_APP_TOKEN        xapp-... switches to Socket Mode
    client_id, client_secret   SLACK_CLIENT_ID / SLACK_CLIENT_SECRET   multi-workspace install
    admin_users      SLACK_ADMIN_USERS      user ids (U123) made ``admin``
    admin_groups     SLACK_ADMIN_GROUPS     user-group *ids* (S0123) whose members are ``admin``
    group_map        SLACK_GROUP_MAP        user-group id -> Threadline groups (JSON in the
                                            environment: ``{"S0123": ["finance"]}``)
    workspace_admins_are_admins   SLACK_WORKSPACE_ADMINS_ARE_ADMINS   owners/admins too

Groups are granted by configuration, never taken from a user group's handle (anyone who may
edit user groups could name one ``admin``): a handle in ``admin_groups`` or ``group_map``
stops the bot at start, saying to use the id.
    command          SLACK_COMMAND          slash command name (default ``/ask``)
    api_url          SLACK_API_URL          Web API base URL (tests point it at a fake)
    host, port       HOST / PORT            HTTP listener (default 0.0.0.0:3000)
    rate_limit       THREADLINE_RATE_LIMIT  per-user quota (``20/3600``, ``120/hour``, off)
    turn_concurrency THREADLINE_TURN_CONCURRENCY   turns one process answers at once
    history_interval SLACK_HISTORY_INTERVAL seconds between thread reads per workspace (60;
                                            0 for a Marketplace app: only Retry-After waits)
    history_messages SLACK_HISTORY_MESSAGES messages one thread read asks for (15)

Secrets are ``SecretStr``: never in a repr, a log line or ``threadline config``.

>>> s = SlackSettings.from_env({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s",
...                             "SLACK_ADMIN_USERS": "U1, U2"})
>>> (s.mode, s.admin_users, s.command, "xoxb" in repr(s))
('http', ['U1', 'U2'], '/ask', False)
>>> SlackSettings(bot_token="xoxb-1", signing_secret="s", rate_limit="20/3600").rate_limit
(20, 3600.0)
>>> SlackSettings.from_env({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s",
...                         "SLACK_GROUP_MAP": '{"S0FIN": "finance"}'}).group_map
{'S0FIN': ['finance']}
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from adapters.slack.identity import usergroup_ids
from agent_core.settings import CommaList, Section, env
from agent_core.state.quotas import RateLimit

Mode = Literal["http", "socket"]

BOT_SCOPES = [
    "app_mentions:read",
    "assistant:write",
    "channels:history",
    "chat:write",
    "commands",
    "files:read",
    "files:write",
    "groups:history",
    "im:history",
    "mpim:history",
    "usergroups:read",
    "users:read",
    "users:read.email",
]
"""The bot scopes the app needs; ``bots.slack.manifest`` asks for exactly these."""


class SlackSettings(Section):
    """Everything the Slack bot is configured with; see the module docstring."""

    table = "slack"

    bot_token: SecretStr | None = Field(None, validation_alias=env("bot_token", "SLACK_BOT_TOKEN"))
    signing_secret: SecretStr | None = Field(
        None, validation_alias=env("signing_secret", "SLACK_SIGNING_SECRET")
    )
    app_token: SecretStr | None = Field(None, validation_alias=env("app_token", "SLACK_APP_TOKEN"))
    client_id: str | None = Field(None, validation_alias=env("client_id", "SLACK_CLIENT_ID"))
    client_secret: SecretStr | None = Field(
        None, validation_alias=env("client_secret", "SLACK_CLIENT_SECRET")
    )
    mode: Mode = Field("http", validation_alias=env("mode", "SLACK_MODE"))
    """``socket`` when an app token is set (unless ``mode`` says otherwise), else ``http``."""
    host: str = Field("0.0.0.0", validation_alias=env("host", "HOST"))
    port: int = Field(3000, ge=0, le=65535, validation_alias=env("port", "PORT"))
    command: str = Field("/ask", validation_alias=env("command", "SLACK_COMMAND"))
    admin_users: CommaList = Field(
        default_factory=list, validation_alias=env("admin_users", "SLACK_ADMIN_USERS")
    )
    admin_groups: CommaList = Field(
        default_factory=list, validation_alias=env("admin_groups", "SLACK_ADMIN_GROUPS")
    )
    """User-group ids (``S0123``) whose members are ``admin``; never handles."""
    group_map: dict[str, list[str]] = Field(
        default_factory=dict, validation_alias=env("group_map", "SLACK_GROUP_MAP")
    )
    """User-group id -> the Threadline groups its members get (a group name alone is a
    one-group list)."""
    workspace_admins_are_admins: bool = Field(
        False,
        validation_alias=env("workspace_admins_are_admins", "SLACK_WORKSPACE_ADMINS_ARE_ADMINS"),
    )
    api_url: str | None = Field(None, validation_alias=env("api_url", "SLACK_API_URL"))
    stop_button_after: float = Field(3.0, ge=0)
    """Seconds a turn runs before a Stop button is shown (short answers need none)."""
    flush_chars: int = Field(1000, gt=0)
    flush_interval: float = Field(1.0, ge=0)
    identity_ttl: float = Field(300.0, gt=0)
    identity_local_ttl: float = Field(30.0, ge=0)
    """Seconds a process keeps identity lookups in front of the shared cache (0: off)."""
    dedupe_ttl: float = Field(3600.0, gt=0)
    rate_limit: RateLimit = Field(None, validation_alias=env("rate_limit", "THREADLINE_RATE_LIMIT"))
    """``(messages, seconds)`` per user; ``None``: no quota. Admins are exempt."""
    turn_concurrency: int = Field(
        64, ge=1, validation_alias=env("turn_concurrency", "THREADLINE_TURN_CONCURRENCY")
    )
    history_interval: float = Field(
        60.0, ge=0, validation_alias=env("history_interval", "SLACK_HISTORY_INTERVAL")
    )
    """Seconds between two reads of a thread (``conversations.replies``) in a workspace,
    by all processes together: Slack allows apps outside the Marketplace one a minute."""
    history_messages: int = Field(
        15, ge=1, le=1000, validation_alias=env("history_messages", "SLACK_HISTORY_MESSAGES")
    )
    """Messages one read of a thread asks for: 15 is the most Slack gives apps outside the
    Marketplace (a Marketplace app may ask for up to 1,000)."""

    @model_validator(mode="before")
    @classmethod
    def _mode_follows_the_app_token(cls, values: Any) -> Any:
        if isinstance(values, dict) and not values.get("mode"):
            token = values.get("app_token") or values.get("SLACK_APP_TOKEN")
            return {**values, "mode": "socket" if token else "http"}
        return values

    @field_validator("admin_groups")
    @classmethod
    def _admin_group_ids(cls, value: list[str]) -> list[str]:
        return usergroup_ids(value, "admin_groups")

    @field_validator("group_map", mode="before")
    @classmethod
    def _group_map(cls, value: object) -> object:
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError as error:
                raise ValueError(f"SLACK_GROUP_MAP is not valid JSON: {error}") from None
        if isinstance(value, dict):
            usergroup_ids(value, "group_map")
            return {k: [v] if isinstance(v, str) else v for k, v in value.items()}
        return value

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
