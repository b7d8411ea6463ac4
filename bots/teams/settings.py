"""Settings of the Teams bot, from the environment (the names Bot Framework tooling uses).

Identity of the bot (Azure Bot registration)::

    MicrosoftAppType        MultiTenant (default) | SingleTenant | UserAssignedMSI
    MicrosoftAppId          the app (client) id; unset = auth OFF (local testing only)
    MicrosoftAppPassword    client secret (MultiTenant / SingleTenant)
    MicrosoftAppTenantId    the app's tenant (SingleTenant / UserAssignedMSI)

Bot Framework endpoints, passed to botbuilder's own configuration attributes (sovereign
clouds, or local fakes in tests)::

    CHANNEL_SERVICE                          https://botframework.azure.us for US Gov
    TO_BOT_FROM_CHANNEL_OPENID_METADATA_URL  where inbound token signing keys are published
    TO_BOT_FROM_CHANNEL_TOKEN_ISSUER         the issuer inbound tokens must carry
    TO_CHANNEL_FROM_BOT_LOGIN_URL            where outbound tokens are requested
    TO_CHANNEL_FROM_BOT_OAUTH_SCOPE          the audience of outbound tokens
    OAUTH_URL, TO_BOT_FROM_EMULATOR_OPENID_METADATA_URL, VALIDATE_AUTHORITY

Who gets which groups (unknown users get none)::

    TEAMS_ADMIN_USERS       comma-separated Entra object ids made ``admin``
    TEAMS_ADMIN_EMAILS      comma-separated emails / UPNs made ``admin``
    TEAMS_ADMIN_GROUPS      comma-separated Entra group ids whose members are ``admin`` (Graph)
    TEAMS_DEFAULT_GROUPS    groups every user of an allowed tenant gets (e.g. ``user``)
    TEAMS_ALLOWED_TENANTS   comma-separated tenant ids; others get no groups
    TEAMS_GROUP_MAP         JSON of a full ``GroupMapping`` (users/emails/aad_groups/app_roles)
    TEAMS_GRAPH=1           look up Entra groups / app roles in Microsoft Graph (app-only)
    GRAPH_URL               Graph base URL (default https://graph.microsoft.com/v1.0)

Behaviour::

    TEAMS_STREAM_INTERVAL   seconds between streaming updates (default 1.0; Teams' minimum)
    TEAMS_TARGETED_MESSAGES=1   send admin-only detail as targeted messages (preview)
    TEAMS_FEEDBACK=0        no thumbs up/down under answers
    TEAMS_DEDUPE_TTL        seconds a delivered activity id is remembered (default 3600)
    TEAMS_STOP_BUTTON_AFTER seconds before a group chat sees a Stop button (default 3; off)
    TEAMS_CONCURRENCY       turns one process answers at once (default 32)
    THREADLINE_RATE_LIMIT   messages per user: ``120/hour`` (default), ``30/minute``,
                            ``500/86400`` (seconds), or ``off``; shared by every process
    HOST / PORT             listener (default 0.0.0.0:3978)

>>> s = TeamsSettings.from_env({"MicrosoftAppId": "a", "MicrosoftAppPassword": "s3cr3t",
...                             "TEAMS_ADMIN_USERS": "o1, o2"})
>>> (s.app_type, s.auth_enabled, s.group_mapping().users, "s3cr3t" in repr(s))
('MultiTenant', True, {'o1': ['admin'], 'o2': ['admin']}, False)
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any, Literal

from pydantic import BaseModel, Field, SecretStr, ValidationError, model_validator

from adapters.teams.identity import GroupMapping
from adapters.teams.stream import ReplyOptions

AppType = Literal["MultiTenant", "SingleTenant", "UserAssignedMSI"]
US_GOV_CHANNEL_SERVICE = "https://botframework.azure.us"
_APP_TYPES: dict[str, AppType] = {
    "multitenant": "MultiTenant",
    "singletenant": "SingleTenant",
    "userassignedmsi": "UserAssignedMSI",
}
_ENDPOINTS = {
    "openid_metadata_url": "TO_BOT_FROM_CHANNEL_OPENID_METADATA_URL",
    "token_issuer": "TO_BOT_FROM_CHANNEL_TOKEN_ISSUER",
    "login_url": "TO_CHANNEL_FROM_BOT_LOGIN_URL",
    "oauth_scope": "TO_CHANNEL_FROM_BOT_OAUTH_SCOPE",
    "oauth_url": "OAUTH_URL",
    "emulator_openid_metadata_url": "TO_BOT_FROM_EMULATOR_OPENID_METADATA_URL",
}


class SettingsError(ValueError):
    """The configuration is incomplete or contradictory; the message says what to set.

    >>> TeamsSettings.from_env({"MicrosoftAppId": "a"})
    Traceback (most recent call last):
    bots.teams.settings.SettingsError: MicrosoftAppType=MultiTenant needs MicrosoftAppPassword ...
    """


def _split(value: str | None) -> list[str]:
    return [item.strip() for item in (value or "").split(",") if item.strip()]


def parse_rate_limit(value: str | None) -> tuple[int, float]:
    """``(messages, seconds)``; ``(0, 3600.0)`` when the quota is off.

    >>> parse_rate_limit("30/minute"), parse_rate_limit("500/86400"), parse_rate_limit("off")
    ((30, 60.0), (500, 86400.0), (0, 3600.0))
    """
    from agent_core.state.quotas import parse_rate_limit as parse_text

    return parse_text(value) or (0, 3600.0)


def _flag(value: str | None, default: bool) -> bool:
    if value is None or not value.strip():
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


class TeamsSettings(BaseModel):
    """Everything the Teams bot is configured with; see the module docstring.

    >>> TeamsSettings().port
    3978
    """

    app_type: AppType = "MultiTenant"
    app_id: str | None = None
    app_password: SecretStr | None = None
    app_tenant_id: str | None = None
    channel_service: str | None = None
    openid_metadata_url: str | None = None
    token_issuer: str | None = None
    login_url: str | None = None
    oauth_scope: str | None = None
    oauth_url: str | None = None
    emulator_openid_metadata_url: str | None = None
    validate_authority: bool = True
    admin_users: list[str] = Field(default_factory=list)
    admin_emails: list[str] = Field(default_factory=list)
    admin_groups: list[str] = Field(default_factory=list)
    default_groups: list[str] = Field(default_factory=list)
    allowed_tenants: list[str] = Field(default_factory=list)
    group_map: dict[str, Any] = Field(default_factory=dict)
    graph: bool = False
    graph_url: str = "https://graph.microsoft.com/v1.0"
    stream_interval: float = Field(default=1.0, ge=0)
    targeted_messages: bool = False
    feedback: bool = True
    dedupe_ttl: float = Field(default=3600.0, gt=0)
    stop_button_after: float | None = Field(default=3.0, ge=0)
    concurrency: int = Field(default=32, ge=1)
    rate_limit: int = Field(default=120, ge=0)
    """Messages one user may send per ``rate_window`` seconds (0: no limit)."""
    rate_window: float = Field(default=3600.0, gt=0)
    host: str = "0.0.0.0"
    port: int = Field(default=3978, ge=0, le=65535)

    @property
    def auth_enabled(self) -> bool:
        return bool(self.app_id)

    @property
    def parameterized(self) -> bool:
        """Whether endpoints are given explicitly (botbuilder's parameterized auth)."""
        return any(getattr(self, field) for field in _ENDPOINTS)

    @model_validator(mode="after")
    def _complete(self) -> TeamsSettings:
        problems = self._identity_problems() + self._endpoint_problems()
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def _identity_problems(self) -> list[str]:
        problems: list[str] = []
        if self.app_password and not self.app_id:
            problems.append("MicrosoftAppPassword is set but MicrosoftAppId is not")
        if self.app_type == "SingleTenant":
            for value, name in [
                (self.app_id, "MicrosoftAppId"),
                (self.app_password, "MicrosoftAppPassword"),
                (self.app_tenant_id, "MicrosoftAppTenantId"),
            ]:
                if not value:
                    problems.append(f"MicrosoftAppType=SingleTenant needs {name}")
        elif self.app_type == "UserAssignedMSI":
            for value, name in [
                (self.app_id, "MicrosoftAppId"),
                (self.app_tenant_id, "MicrosoftAppTenantId"),
            ]:
                if not value:
                    problems.append(f"MicrosoftAppType=UserAssignedMSI needs {name}")
        elif self.app_id and not self.app_password:
            problems.append(
                "MicrosoftAppType=MultiTenant needs MicrosoftAppPassword (or use UserAssignedMSI)"
            )
        if self.graph and self.app_type == "UserAssignedMSI":
            problems.append("TEAMS_GRAPH=1 needs a client secret (MultiTenant/SingleTenant)")
        return problems

    def _endpoint_problems(self) -> list[str]:
        problems: list[str] = []
        if self.channel_service not in (None, US_GOV_CHANNEL_SERVICE):
            problems.append(
                f"CHANNEL_SERVICE must be unset or {US_GOV_CHANNEL_SERVICE}; "
                "for another cloud set the TO_* endpoints instead"
            )
        if not self.parameterized:
            return problems
        needed = ["openid_metadata_url", "token_issuer", "oauth_scope"]
        if self.auth_enabled and self.app_type != "UserAssignedMSI":
            needed.append("login_url")
        for field in needed:
            if not getattr(self, field):
                problems.append(
                    f"{_ENDPOINTS[field]} must be set when any Bot Framework endpoint is configured"
                )
        return problems

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> TeamsSettings:
        """Read the environment; raises ``SettingsError`` naming every missing value."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {
            field: env.get(name) or None for field, name in _ENDPOINTS.items()
        }
        raw_type = (env.get("MicrosoftAppType") or "MultiTenant").strip()
        values.update(
            app_type=_APP_TYPES.get(raw_type.lower(), raw_type),
            app_id=env.get("MicrosoftAppId") or None,
            app_password=env.get("MicrosoftAppPassword") or None,
            app_tenant_id=env.get("MicrosoftAppTenantId") or None,
            channel_service=env.get("CHANNEL_SERVICE") or None,
            validate_authority=_flag(env.get("VALIDATE_AUTHORITY"), True),
            admin_users=_split(env.get("TEAMS_ADMIN_USERS")),
            admin_emails=_split(env.get("TEAMS_ADMIN_EMAILS")),
            admin_groups=_split(env.get("TEAMS_ADMIN_GROUPS")),
            default_groups=_split(env.get("TEAMS_DEFAULT_GROUPS")),
            allowed_tenants=_split(env.get("TEAMS_ALLOWED_TENANTS")),
            graph=_flag(env.get("TEAMS_GRAPH"), False),
            targeted_messages=_flag(env.get("TEAMS_TARGETED_MESSAGES"), False),
            feedback=_flag(env.get("TEAMS_FEEDBACK"), True),
            host=env.get("HOST") or "0.0.0.0",
        )
        stop_after = (env.get("TEAMS_STOP_BUTTON_AFTER") or "").strip().lower()
        if stop_after:
            values["stop_button_after"] = None if stop_after in ("off", "none") else stop_after
        for field, name in [
            ("stream_interval", "TEAMS_STREAM_INTERVAL"),
            ("dedupe_ttl", "TEAMS_DEDUPE_TTL"),
            ("concurrency", "TEAMS_CONCURRENCY"),
            ("port", "PORT"),
            ("graph_url", "GRAPH_URL"),
        ]:
            if env.get(name):
                values[field] = env[name]
        if env.get("THREADLINE_RATE_LIMIT"):
            try:
                values["rate_limit"], values["rate_window"] = parse_rate_limit(
                    env["THREADLINE_RATE_LIMIT"])
            except ValueError:
                raise SettingsError(
                    "THREADLINE_RATE_LIMIT must be like 120/hour, 30/minute, 500/86400 or off"
                ) from None
        try:
            if env.get("TEAMS_GROUP_MAP"):
                values["group_map"] = json.loads(env["TEAMS_GROUP_MAP"])
            return cls(**{**values, **overrides})
        except (ValidationError, ValueError) as error:
            raise SettingsError(_explain(error)) from None

    def group_mapping(self) -> GroupMapping:
        """The ``GroupMapping``: ``TEAMS_GROUP_MAP`` plus the admin and default lists."""
        mapping = GroupMapping.model_validate(self.group_map)
        for key, extra in [
            ("users", self.admin_users),
            ("emails", self.admin_emails),
            ("aad_groups", self.admin_groups),
        ]:
            table: dict[str, list[str]] = getattr(mapping, key)
            for item in extra:
                table.setdefault(item.lower(), []).append("admin")
        mapping.default_groups = sorted({*mapping.default_groups, *self.default_groups})
        mapping.tenants = sorted({*mapping.tenants, *self.allowed_tenants})
        return mapping

    def reply_options(self) -> ReplyOptions:
        return ReplyOptions(
            pace=self.stream_interval,
            feedback_loop=self.feedback,
            targeted_messages=self.targeted_messages,
        )

    def botbuilder_configuration(self) -> SimpleNamespace:
        """The configuration object botbuilder's ``ConfigurationBotFrameworkAuthentication``
        reads (attributes it does not find fall back to its own defaults)."""
        config: dict[str, Any] = {
            "APP_TYPE": self.app_type,
            "APP_ID": self.app_id,
            "APP_PASSWORD": self.app_password.get_secret_value() if self.app_password else None,
            "APP_TENANTID": self.app_tenant_id,
            "VALIDATE_AUTHORITY": self.validate_authority,
        }
        if self.channel_service:
            config["CHANNEL_SERVICE"] = self.channel_service
        for field, name in _ENDPOINTS.items():
            if getattr(self, field):
                config[name] = getattr(self, field)
        return SimpleNamespace(**config)


def _explain(error: Exception) -> str:
    if isinstance(error, ValidationError):
        return "; ".join(
            str(e["msg"]).removeprefix("Value error, ")
            if not e["loc"]
            else f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
            for e in error.errors(include_url=False)
        )
    return f"TEAMS_GROUP_MAP is not valid JSON: {error}"
