"""``threadline doctor``'s Slack checks: the bot token (``auth.test``) and its scopes against
what ``threadline slack-manifest`` asks for (``BOT_SCOPES``)."""

from __future__ import annotations

from adapters.slack.errors import SlackCallFailed, SlackWebClient
from bots.checks import Check
from bots.places import PlacePolicy
from bots.slack.settings import BOT_SCOPES, SlackSettings


async def checks(settings: SlackSettings) -> list[Check]:
    """The token answers ``auth.test`` and carries every scope the app needs."""
    if settings.bot_token is None:
        return [Check.skipped("Slack bot token", "multi-workspace app: tokens come from installs")]
    client = SlackWebClient(
        token=settings.bot_token.get_secret_value(),
        base_url=settings.api_url or SlackWebClient.BASE_URL,
    )
    try:
        response = await client.auth_test()
    except SlackCallFailed as failed:
        if failed.failure.code == "unreachable":
            return [Check.failed("Slack API reachable", failed.failure.detail)]
        return [
            Check.failed(
                "Slack bot token",
                f"auth.test says {failed.failure}: check "
                "SLACK_BOT_TOKEN (Slack app settings > OAuth & Permissions > Bot User OAuth Token)",
            )
        ]
    found = [
        Check.passed("Slack bot token", f"{response.get('user')} in {response.get('team')}"),
        edge_check(settings, response.get("team_id"), response.get("enterprise_id")),
    ]
    granted = response.headers.get("x-oauth-scopes") or response.headers.get("X-OAuth-Scopes")
    if granted is None:
        return [*found, Check.skipped("Slack scopes", "Slack did not list the token's scopes")]
    missing = sorted(set(BOT_SCOPES) - {s.strip() for s in str(granted).split(",")})
    if missing:
        fix = f"add {', '.join(missing)} (manifest.yml lists them), then reinstall the app"
        return [*found, Check.failed("Slack scopes", fix)]
    return [*found, Check.passed("Slack scopes", f"all {len(BOT_SCOPES)} the app needs")]


def edge_check(settings: SlackSettings, team: object, enterprise: object) -> Check:
    """Whose people are members, and what places shared with other organisations get."""
    home = f"workspace {team}" + (f" (Grid organisation {enterprise})" if enterprise else "")
    policy = PlacePolicy(settings.shared_places, frozenset(settings.shared_places_allowed))
    granted = ", ".join(settings.external_groups) or "nothing"
    return Check.passed(
        "Organisation's edge",
        f"members: people of {home}; others get {granted}; {policy.describe()}",
    )
