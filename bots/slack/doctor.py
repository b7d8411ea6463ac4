"""``threadline doctor``'s Slack checks: the bot token (``auth.test``) and its scopes against
what ``threadline slack-manifest`` asks for (``BOT_SCOPES``); for an app installed by OAuth,
the installations stopped because Slack refused their refresh token (token rotation)."""

from __future__ import annotations

import datetime as dt

from adapters.slack.errors import SlackCallFailed, SlackWebClient
from adapters.slack.installations import KeyValueInstallationStore
from agent_core.state import KeyValueStore
from bots.checks import Check
from bots.places import PlacePolicy
from bots.slack.settings import BOT_SCOPES, SlackSettings


async def checks(settings: SlackSettings, records: KeyValueStore | None = None) -> list[Check]:
    """The token answers ``auth.test`` and carries every scope the app needs; with OAuth,
    no installation is stopped (``records``: the state's, where installations live)."""
    if settings.bot_token is None:
        found = [Check.skipped("Slack bot token", "multi-workspace app: tokens come from installs")]
        if records is None:
            return found
        store = KeyValueInstallationStore(records)
        return [*found, await installed(store), await installations(store)]
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


async def installed(store: KeyValueInstallationStore) -> Check:
    """Where the app is installed: each workspace, each Grid organisation (org-wide) with
    the workspaces it has served, and whether its tokens rotate.

    >>> import asyncio
    >>> from agent_core.state import MemoryKeyValueStore
    >>> print(asyncio.run(installed(KeyValueInstallationStore(MemoryKeyValueStore()))))
    · Slack installations: none yet (Add to Slack: /slack/install)
    """
    bots = await store.installed()
    if not bots:
        return Check.skipped("Slack installations", "none yet (Add to Slack: /slack/install)")
    said = []
    for bot in bots:
        rotating = ", rotating tokens" if bot.bot_refresh_token else ""
        if bot.is_enterprise_install and bot.enterprise_id:
            workspaces = await store.workspaces(str(bot.enterprise_id))
            served = ", ".join(workspaces) if workspaces else "none yet"
            name = f" {bot.enterprise_name}" if bot.enterprise_name else ""
            said.append(
                f"org {bot.enterprise_id}{name} (org-wide{rotating}; workspaces served: {served})"
            )
        else:
            grid = f" of org {bot.enterprise_id}" if bot.enterprise_id else ""
            said.append(f"workspace {bot.team_id}{grid}{rotating}")
    return Check.passed("Slack installations", "; ".join(said))


async def installations(store: KeyValueInstallationStore) -> Check:
    """Installations stopped since their last install (their refresh token refused).

    >>> import asyncio
    >>> from agent_core.state import MemoryKeyValueStore
    >>> print(asyncio.run(installations(KeyValueInstallationStore(MemoryKeyValueStore()))))
    ✓ Slack stopped installations: none
    """
    stopped = await store.stopped()
    if not stopped:
        return Check.passed("Slack stopped installations", "none")
    said = []
    for entry in stopped.values():
        where = entry.get("team_id") or f"org {entry.get('enterprise_id')}"
        when = dt.datetime.fromtimestamp(float(entry["at"]), dt.UTC).strftime("%Y-%m-%d %H:%M")
        said.append(f"{where} since {when} UTC ({entry['reason']})")
    fix = "Slack refused the refresh token of " + "; ".join(said) + ": reinstall the app there"
    return Check.failed("Slack stopped installations", fix)


def edge_check(settings: SlackSettings, team: object, enterprise: object) -> Check:
    """Whose people are members, and what places shared with other organisations get."""
    home = f"workspace {team}" + (f" (Grid organisation {enterprise})" if enterprise else "")
    policy = PlacePolicy(settings.shared_places, frozenset(settings.shared_places_allowed))
    granted = ", ".join(settings.external_groups) or "nothing"
    return Check.passed(
        "Organisation's edge",
        f"members: people of {home}; others get {granted}; {policy.describe()}",
    )
