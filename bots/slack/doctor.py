"""``threadline doctor``'s Slack checks: the bot token (``auth.test``) and its scopes against
what ``threadline slack-manifest`` asks for (``BOT_SCOPES``)."""

from __future__ import annotations

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.errors import SLACK_FAILURES, slack_failure
from bots.checks import Check
from bots.slack.settings import BOT_SCOPES, SlackSettings

UNREACHABLE: tuple[type[BaseException], ...] = (*SLACK_FAILURES, OSError)


async def checks(settings: SlackSettings) -> list[Check]:
    """The token answers ``auth.test`` and carries every scope the app needs."""
    if settings.bot_token is None:
        return [Check.skipped("Slack bot token", "multi-workspace app: tokens come from installs")]
    client = AsyncWebClient(
        token=settings.bot_token.get_secret_value(),
        base_url=settings.api_url or AsyncWebClient.BASE_URL,
    )
    try:
        response = await client.auth_test()
    except SlackApiError as error:
        return [
            Check.failed(
                "Slack bot token",
                f"auth.test says {slack_failure(error)}: check "
                "SLACK_BOT_TOKEN (Slack app settings > OAuth & Permissions > Bot User OAuth Token)",
            )
        ]
    except UNREACHABLE as error:
        return [Check.failed("Slack API reachable", f"{type(error).__name__}: {error}")]
    found = [Check.passed("Slack bot token", f"{response.get('user')} in {response.get('team')}")]
    granted = response.headers.get("x-oauth-scopes") or response.headers.get("X-OAuth-Scopes")
    if granted is None:
        return [*found, Check.skipped("Slack scopes", "Slack did not list the token's scopes")]
    missing = sorted(set(BOT_SCOPES) - {s.strip() for s in str(granted).split(",")})
    if missing:
        fix = f"add {', '.join(missing)} (manifest.yml lists them), then reinstall the app"
        return [*found, Check.failed("Slack scopes", fix)]
    return [*found, Check.passed("Slack scopes", f"all {len(BOT_SCOPES)} the app needs")]
