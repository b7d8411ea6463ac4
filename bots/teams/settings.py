"""Settings of the Teams bot: the ``[teams]`` table of ``threadline.toml`` (keys: the field
names below) or the environment (the names Bot Framework tooling uses).

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
    TEAMS_DEFAULT_GROUPS    groups every member of the organisation gets (e.g. ``user``):
                            needs MicrosoftAppTenantId or TEAMS_ALLOWED_TENANTS
    TEAMS_ALLOWED_TENANTS   comma-separated tenant ids whose people are members besides the
                            app's tenant; anyone else is ``external``
    TEAMS_GROUP_MAP         JSON of a full ``GroupMapping`` (users/emails/aad_groups/app_roles)
    TEAMS_GRAPH=1           look up Entra groups / app roles in Microsoft Graph (app-only)
    GRAPH_URL               Graph base URL (default https://graph.microsoft.com/v1.0)

Behaviour (and every channel's own settings, ``bots.channel_settings``: ``host``,
``rate_limit``, ``turn_concurrency``, ``turns_per_person``, ``stream_interval``,
``stop_button_after``, ``dedupe_ttl``; ``concurrency`` / ``TEAMS_CONCURRENCY``,
``TEAMS_STREAM_INTERVAL``, ``TEAMS_DEDUPE_TTL`` and ``TEAMS_STOP_BUTTON_AFTER`` are their
old names)::

    TEAMS_TARGETED_MESSAGES=1   send admin-only detail as targeted messages (preview)
    TEAMS_FEEDBACK=0        no thumbs up/down under answers
    PORT                    listener's port (default 3978)
    TEAMS_ALLOW_UNAUTHENTICATED_REMOTE=1   with authentication off (no MicrosoftAppId),
                            listen on HOST anyway; without it the bot listens on 127.0.0.1

>>> s = TeamsSettings.from_env({"MicrosoftAppId": "a", "MicrosoftAppPassword": "s3cr3t",
...                             "TEAMS_ADMIN_USERS": "o1, o2"})
>>> (s.app_type, s.auth_enabled, s.group_mapping().users, "s3cr3t" in repr(s))
('MultiTenant', True, {'o1': ['admin'], 'o2': ['admin']}, False)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any, ClassVar, Literal

from pydantic import Field, SecretStr, field_validator

from adapters.teams.identity import GroupMapping
from adapters.teams.stream import ReplyOptions
from agent_core.settings import CommaList, env
from bots.channel_settings import ChannelSettings

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


class TeamsSettings(ChannelSettings):
    """Everything the Teams bot is configured with; see the module docstring.

    >>> TeamsSettings().port
    3978
    """

    table = "teams"
    renamed: ClassVar[Mapping[str, str]] = {
        "concurrency": "turn_concurrency",
        "TEAMS_CONCURRENCY": "turn_concurrency",
        "TEAMS_STREAM_INTERVAL": "stream_interval",
        "TEAMS_DEDUPE_TTL": "dedupe_ttl",
        "TEAMS_STOP_BUTTON_AFTER": "stop_button_after",
    }

    app_type: AppType = Field("MultiTenant", validation_alias=env("app_type", "MicrosoftAppType"))
    app_id: str | None = Field(None, validation_alias=env("app_id", "MicrosoftAppId"))
    app_password: SecretStr | None = Field(
        None, validation_alias=env("app_password", "MicrosoftAppPassword")
    )
    app_tenant_id: str | None = Field(
        None, validation_alias=env("app_tenant_id", "MicrosoftAppTenantId")
    )
    channel_service: str | None = Field(
        None, validation_alias=env("channel_service", "CHANNEL_SERVICE")
    )
    openid_metadata_url: str | None = Field(
        None, validation_alias=env("openid_metadata_url", _ENDPOINTS["openid_metadata_url"])
    )
    token_issuer: str | None = Field(
        None, validation_alias=env("token_issuer", _ENDPOINTS["token_issuer"])
    )
    login_url: str | None = Field(None, validation_alias=env("login_url", _ENDPOINTS["login_url"]))
    oauth_scope: str | None = Field(
        None, validation_alias=env("oauth_scope", _ENDPOINTS["oauth_scope"])
    )
    oauth_url: str | None = Field(None, validation_alias=env("oauth_url", _ENDPOINTS["oauth_url"]))
    emulator_openid_metadata_url: str | None = Field(
        None,
        validation_alias=env(
            "emulator_openid_metadata_url", _ENDPOINTS["emulator_openid_metadata_url"]
        ),
    )
    validate_authority: bool = Field(
        True, validation_alias=env("validate_authority", "VALIDATE_AUTHORITY")
    )
    admin_users: CommaList = Field(
        default_factory=list, validation_alias=env("admin_users", "TEAMS_ADMIN_USERS")
    )
    admin_emails: CommaList = Field(
        default_factory=list, validation_alias=env("admin_emails", "TEAMS_ADMIN_EMAILS")
    )
    admin_groups: CommaList = Field(
        default_factory=list, validation_alias=env("admin_groups", "TEAMS_ADMIN_GROUPS")
    )
    default_groups: CommaList = Field(
        default_factory=list, validation_alias=env("default_groups", "TEAMS_DEFAULT_GROUPS")
    )
    roster_timeout: float = Field(
        10.0, gt=0, validation_alias=env("roster_timeout", "TEAMS_ROSTER_TIMEOUT")
    )
    """Seconds a roster lookup (who is asking, their tenant and role) may take; past it
    the person is external until the roster answers."""
    roster_pages: int = Field(10, ge=1, validation_alias=env("roster_pages", "TEAMS_ROSTER_PAGES"))
    """Pages (of 500 members) of a channel's or group chat's roster read, on its first
    turn, to learn whether another organisation is in it; a longer roster, like one that
    fails or takes longer than ``roster_timeout``, counts as shared (fail closed)."""
    allowed_tenants: CommaList = Field(
        default_factory=list, validation_alias=env("allowed_tenants", "TEAMS_ALLOWED_TENANTS")
    )
    group_map: dict[str, Any] = Field(
        default_factory=dict, validation_alias=env("group_map", "TEAMS_GROUP_MAP")
    )
    graph: bool = Field(False, validation_alias=env("graph", "TEAMS_GRAPH"))
    graph_url: str = Field(
        "https://graph.microsoft.com/v1.0", validation_alias=env("graph_url", "GRAPH_URL")
    )
    targeted_messages: bool = Field(
        False, validation_alias=env("targeted_messages", "TEAMS_TARGETED_MESSAGES")
    )
    feedback: bool = Field(True, validation_alias=env("feedback", "TEAMS_FEEDBACK"))
    sso_connection: str | None = Field(
        None, validation_alias=env("sso_connection", "TEAMS_SSO_CONNECTION")
    )
    """The Azure Bot's OAuth connection (its name) that Teams single sign-on exchanges
    people's Teams tokens at (``README``: "Teams single sign-on")."""
    sso_app_id: str | None = Field(None, validation_alias=env("sso_app_id", "TEAMS_SSO_APP_ID"))
    """The Entra app registration whose API the connection's tokens are for (its client id;
    the manifest's ``webApplicationInfo.id``)."""
    sso_resource: str | None = Field(
        None, validation_alias=env("sso_resource", "TEAMS_SSO_RESOURCE")
    )
    """Its Application ID URI (``api://<domain>/<client id>``; the manifest's
    ``webApplicationInfo.resource``)."""
    sso_servers: CommaList = Field(
        default_factory=list, validation_alias=env("sso_servers", "TEAMS_SSO_SERVERS")
    )
    """The ``[[mcp]]`` servers (``auth = "user"``, Entra-protected) whose people's tokens come
    from the connection, without leaving the chat."""
    port: int = Field(3978, ge=0, le=65535, validation_alias=env("port", "PORT"))
    allow_unauthenticated_remote: bool = Field(
        False,
        validation_alias=env("allow_unauthenticated_remote", "TEAMS_ALLOW_UNAUTHENTICATED_REMOTE"),
    )
    """With authentication off, listen on ``host`` anyway (else on 127.0.0.1 only): anyone
    who reaches the bot could then claim to be anyone."""

    @field_validator("app_type", mode="before")
    @classmethod
    def _app_type(cls, value: object) -> object:
        text = str(value or "MultiTenant").strip()
        return _APP_TYPES.get(text.lower(), text)

    @field_validator("group_map", mode="before")
    @classmethod
    def _group_map(cls, value: object) -> object:
        if isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError as error:
                raise ValueError(f"TEAMS_GROUP_MAP is not valid JSON: {error}") from None
        return value

    @property
    def auth_enabled(self) -> bool:
        return bool(self.app_id)

    @property
    def parameterized(self) -> bool:
        """Whether endpoints are given explicitly (botbuilder's parameterized auth)."""
        return any(getattr(self, field) for field in _ENDPOINTS)

    def problems(self) -> list[str]:
        """Settings the bot needs together (see ``Section.problems``)."""
        return (
            self._identity_problems()
            + self._endpoint_problems()
            + self._edge_problems()
            + self._sso_problems()
        )

    def _sso_problems(self) -> list[str]:
        """Single sign-on needs the connection, the Entra app, and a signed bot (the token
        service only answers the bot's own credentials)."""
        if not (self.sso_connection or self.sso_app_id or self.sso_servers):
            return []
        missing = [
            name
            for value, name in [
                (self.sso_connection, "TEAMS_SSO_CONNECTION"),
                (self.sso_app_id, "TEAMS_SSO_APP_ID"),
                (self.app_id, "MicrosoftAppId"),
            ]
            if not value
        ]
        if missing:
            return ["Teams single sign-on needs " + ", ".join(missing)]
        return []

    @property
    def sso_enabled(self) -> bool:
        return bool(self.sso_connection and self.sso_app_id and self.app_id)

    def _edge_problems(self) -> list[str]:
        """Default groups need to know whose they are: with no tenant known, an empty list
        of tenants once meant *any* tenant (issue 35)."""
        defaults = self.default_groups or GroupMapping.model_validate(self.group_map).default_groups
        if defaults and not self.home_tenants:
            return [
                "TEAMS_DEFAULT_GROUPS needs the organisation's tenant: set MicrosoftAppTenantId "
                "or TEAMS_ALLOWED_TENANTS (people of any other tenant are external)"
            ]
        return []

    @property
    def home_tenants(self) -> list[str]:
        """The tenants whose people are members: the app's and ``allowed_tenants``."""
        tenants = {*self.allowed_tenants, *GroupMapping.model_validate(self.group_map).tenants}
        if self.app_tenant_id:
            tenants.add(self.app_tenant_id)
        return sorted(tenants)

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
        mapping.tenants = self.home_tenants
        mapping.external_groups = list(self.external_groups)
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
