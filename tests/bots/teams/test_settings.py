"""bots.teams.settings: environment -> settings, with clear errors when incomplete."""

from __future__ import annotations

import pytest

from agent_core.settings import ConfigError
from bots.cli import main
from bots.teams.settings import TeamsSettings

APP = {"MicrosoftAppId": "app-1", "MicrosoftAppPassword": "secret-value"}


def test_multi_tenant_defaults() -> None:
    settings = TeamsSettings.from_env(APP)
    assert (settings.app_type, settings.auth_enabled, settings.parameterized) == (
        "MultiTenant",
        True,
        False,
    )
    config = settings.botbuilder_configuration()
    assert (config.APP_ID, config.APP_PASSWORD, config.APP_TYPE) == (
        "app-1",
        "secret-value",
        "MultiTenant",
    )
    assert not hasattr(config, "TO_BOT_FROM_CHANNEL_OPENID_METADATA_URL")
    assert "secret-value" not in repr(settings)


def test_no_app_id_means_auth_off() -> None:
    assert not TeamsSettings.from_env({}).auth_enabled


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"MicrosoftAppType": "SingleTenant", **APP},
            "MicrosoftAppType=SingleTenant needs MicrosoftAppTenantId",
        ),
        (
            {
                "MicrosoftAppType": "singletenant",
                "MicrosoftAppId": "a",
                "MicrosoftAppTenantId": "t",
            },
            "MicrosoftAppType=SingleTenant needs MicrosoftAppPassword",
        ),
        (
            {"MicrosoftAppType": "UserAssignedMSI", "MicrosoftAppId": "a"},
            "MicrosoftAppType=UserAssignedMSI needs MicrosoftAppTenantId",
        ),
        ({"MicrosoftAppId": "a"}, "MultiTenant needs MicrosoftAppPassword"),
        ({"MicrosoftAppPassword": "p"}, "MicrosoftAppPassword is set but MicrosoftAppId is not"),
        ({"MicrosoftAppType": "Federated", **APP}, "app_type"),
        ({"CHANNEL_SERVICE": "https://botframework.cn", **APP}, "CHANNEL_SERVICE must be unset"),
        (
            {"TO_BOT_FROM_CHANNEL_OPENID_METADATA_URL": "https://x/openid", **APP},
            "TO_BOT_FROM_CHANNEL_TOKEN_ISSUER must be set",
        ),
        ({"TEAMS_GROUP_MAP": "{nope", **APP}, "TEAMS_GROUP_MAP is not valid JSON"),
        ({"TEAMS_STREAM_INTERVAL": "-1", **APP}, "stream_interval"),
    ],
)
def test_incomplete_configuration_is_explained(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        TeamsSettings.from_env(env)


def test_sovereign_cloud_endpoints_go_to_botbuilder() -> None:
    env = {
        **APP,
        "MicrosoftAppType": "SingleTenant",
        "MicrosoftAppTenantId": "t",
        "TO_BOT_FROM_CHANNEL_OPENID_METADATA_URL": "https://login.example/openid",
        "TO_BOT_FROM_CHANNEL_TOKEN_ISSUER": "https://api.example",
        "TO_CHANNEL_FROM_BOT_LOGIN_URL": "https://login.example/t",
        "TO_CHANNEL_FROM_BOT_OAUTH_SCOPE": "https://api.example",
        "OAUTH_URL": "https://token.example",
        "VALIDATE_AUTHORITY": "false",
    }
    config = TeamsSettings.from_env(env).botbuilder_configuration()
    assert config.TO_BOT_FROM_CHANNEL_OPENID_METADATA_URL == "https://login.example/openid"
    assert config.TO_BOT_FROM_CHANNEL_TOKEN_ISSUER == "https://api.example"
    assert config.TO_CHANNEL_FROM_BOT_LOGIN_URL == "https://login.example/t"
    assert config.OAUTH_URL == "https://token.example"
    assert config.VALIDATE_AUTHORITY is False
    assert config.APP_TENANTID == "t"


def test_us_government_channel_service() -> None:
    env = {**APP, "CHANNEL_SERVICE": "https://botframework.azure.us"}
    assert TeamsSettings.from_env(env).botbuilder_configuration().CHANNEL_SERVICE == (
        "https://botframework.azure.us"
    )


def test_group_mapping_merges_lists_and_json() -> None:
    env = {
        **APP,
        "TEAMS_ADMIN_USERS": "OID-1",
        "TEAMS_ADMIN_EMAILS": "Boss@Contoso.com",
        "TEAMS_ADMIN_GROUPS": "g-admins",
        "TEAMS_DEFAULT_GROUPS": "user",
        "TEAMS_ALLOWED_TENANTS": "t1",
        "TEAMS_GROUP_MAP": '{"aad_groups": {"g-analysts": ["analyst"]}, "users": {"oid-1": ["x"]}}',
    }
    mapping = TeamsSettings.from_env(env).group_mapping()
    assert mapping.users == {"oid-1": ["x", "admin"]}
    assert mapping.emails == {"boss@contoso.com": ["admin"]}
    assert mapping.aad_groups == {"g-analysts": ["analyst"], "g-admins": ["admin"]}
    assert (mapping.default_groups, mapping.tenants) == (["user"], ["t1"])


def test_reply_options_follow_settings() -> None:
    env = {
        **APP,
        "TEAMS_STREAM_INTERVAL": "1.5",
        "TEAMS_FEEDBACK": "0",
        "TEAMS_TARGETED_MESSAGES": "yes",
    }
    options = TeamsSettings.from_env(env).reply_options()
    assert (options.pace, options.feedback_loop, options.targeted_messages) == (1.5, False, True)


def test_cli_refuses_to_start_with_incomplete_settings(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MicrosoftAppType", "SingleTenant")
    monkeypatch.setenv("MicrosoftAppId", "app-1")
    assert main(["teams"]) == 2
    error = capsys.readouterr().err
    assert "MicrosoftAppPassword" in error and "MicrosoftAppTenantId" in error
