"""``threadline doctor``'s Teams checks: the bot's credentials get a token for the Bot
Connector, the way every outbound reply gets one (botbuilder's connector factory)."""

from __future__ import annotations

from typing import Any

from agent_core.state.keyvalue import MemoryKeyValueStore
from bots.checks import Check
from bots.places import PlacePolicy
from bots.teams.connector import ConnectorPool, CredentialsTokenSource
from bots.teams.outbound import Outbound
from bots.teams.settings import TeamsSettings

SERVICE_URL = "https://smba.trafficmanager.net/teams/"


def edge_check(settings: TeamsSettings) -> Check:
    """Whose people are members, and what places shared with other organisations get."""
    policy = PlacePolicy(settings.shared_places, frozenset(settings.shared_places_allowed))
    granted = ", ".join(settings.external_groups) or "nothing"
    if not settings.home_tenants:
        return Check.warned(
            "Organisation's edge",
            "no MicrosoftAppTenantId or TEAMS_ALLOWED_TENANTS: everyone is external",
        )
    tenants = ", ".join(settings.home_tenants)
    return Check.passed(
        "Organisation's edge",
        f"members: people of tenant {tenants}; others get {granted}; {policy.describe()}",
    )


async def checks(settings: TeamsSettings) -> list[Check]:
    """The configured identity obtains a Bot Connector token; the organisation's edge."""
    return [edge_check(settings), *await _credentials(settings)]


async def _credentials(settings: TeamsSettings) -> list[Check]:
    """The configured identity obtains a Bot Connector token."""
    if not settings.auth_enabled:
        return [Check.skipped("Teams credentials", "no MicrosoftAppId: authentication is off")]
    outbound = Outbound(settings, ConnectorPool(), MemoryKeyValueStore())
    try:
        credentials = await outbound.credentials(SERVICE_URL)
        token = await CredentialsTokenSource(credentials).token()
    except Exception as error:  # msal, requests and botbuilder raise their own kinds
        return [Check.failed("Teams credentials", _fix(settings, error))]
    if not token:
        return [Check.failed("Teams credentials", "no token came back; check MicrosoftAppId")]
    return [Check.passed("Teams credentials", f"{settings.app_type} app {settings.app_id}")]


def _fix(settings: TeamsSettings, error: Any) -> str:
    secret = (
        "the managed identity"
        if settings.app_type == "UserAssignedMSI"
        else ("MicrosoftAppPassword")
    )
    return (
        f"no Bot Connector token ({type(error).__name__}: {str(error)[:200]}); check "
        f"MicrosoftAppId, {secret} and MicrosoftAppTenantId"
    )
