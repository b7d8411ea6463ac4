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
    port             PORT                   HTTP listener's port (default 3000)
    history_interval SLACK_HISTORY_INTERVAL seconds between thread reads per workspace (60;
                                            0 for a Marketplace app: only Retry-After waits)
    history_messages SLACK_HISTORY_MESSAGES messages one thread read asks for (15)
    token_refresh_margin  SLACK_TOKEN_REFRESH_MARGIN  seconds before a rotating bot token
                                            expires that it is renewed (7200: 2 of its 12 h)

and every channel's own (``bots.channel_settings``: ``host``, ``rate_limit``,
``turn_concurrency``, ``turns_per_person``, ``stream_interval``, ``stop_button_after``,
``dedupe_ttl``); ``flush_interval`` is the old name of ``stream_interval``.

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
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from adapters.slack.identity import usergroup_ids
from agent_core.settings import CommaList, env
from bots.channel_settings import ChannelSettings

Mode = Literal["http", "socket"]

BOT_SCOPES = [
    "app_mentions:read",
    "assistant:write",
    "channels:history",
    "channels:read",
    "chat:write",
    "commands",
    "files:read",
    "files:write",
    "groups:history",
    "groups:read",
    "im:history",
    "mpim:history",
    "mpim:read",
    "usergroups:read",
    "users:read",
    "users:read.email",
]
"""The bot scopes the app needs; ``bots.slack.manifest`` asks for exactly these."""


class SlackSettings(ChannelSettings):
    """Everything the Slack bot is configured with; see the module docstring."""

    table = "slack"
    renamed: ClassVar[Mapping[str, str]] = {"flush_interval": "stream_interval"}

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
    flush_chars: int = Field(1000, gt=0)
    """Characters of a streamed answer sent at once (sooner when ``stream_interval`` passed)."""
    identity_ttl: float = Field(300.0, gt=0)
    identity_local_ttl: float = Field(30.0, ge=0)
    """Seconds a process keeps identity lookups in front of the shared cache (0: off)."""
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
    token_refresh_margin: float = Field(
        7200.0, gt=0, validation_alias=env("token_refresh_margin", "SLACK_TOKEN_REFRESH_MARGIN")
    )
    """Seconds before a rotating bot token (token rotation on) expires that it is renewed:
    once per installation, by whichever process gets there first."""

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
    def _command_starts_with_a_slash(self) -> SlackSettings:
        if not self.command.startswith("/"):
            self.command = "/" + self.command
        return self

    def problems(self) -> list[str]:
        """Settings the bot needs together (see ``Section.problems``).

        >>> for problem in SlackSettings.partial_kind()().problems():
        ...     print(problem)
        set SLACK_BOT_TOKEN, or SLACK_CLIENT_ID + SLACK_CLIENT_SECRET
        HTTP mode needs SLACK_SIGNING_SECRET
        """
        problems = []
        if self.mode == "socket" and self.app_token is None:
            problems.append("Socket Mode needs SLACK_APP_TOKEN (xapp-...)")
        if self.bot_token is None and not self.oauth_enabled:
            problems.append("set SLACK_BOT_TOKEN, or SLACK_CLIENT_ID + SLACK_CLIENT_SECRET")
        if self.mode == "http" and self.signing_secret is None:
            problems.append("HTTP mode needs SLACK_SIGNING_SECRET")
        return problems

    @property
    def oauth_enabled(self) -> bool:
        return bool(self.client_id and self.client_secret)
