"""Building blocks of the Slack bot that do not depend on it: Web API clients with 429
handling, the OAuth installation store, and the workspace-aware user resolver.

>>> build_client(SlackSettings(bot_token="xoxb-1", signing_secret="s"), "xoxb-1").base_url
'https://slack.com/api/'
"""

from __future__ import annotations

from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore
from slack_sdk.oauth.installation_store.file import FileInstallationStore
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.identity import ClientProvider, SlackUserResolver
from agent_core.errors import AgentError
from bots.slack_settings import SlackSettings


def build_client(settings: SlackSettings, token: str | None = None) -> AsyncWebClient:
    """A Web API client that honours 429 Retry-After (slack_sdk's async retry handler)."""
    return AsyncWebClient(
        token=token,
        base_url=settings.api_url or AsyncWebClient.BASE_URL,
        retry_handlers=[AsyncRateLimitErrorRetryHandler(max_retry_count=3)],
    )


def installation_store_for(settings: SlackSettings) -> AsyncInstallationStore | None:
    """The file installation store of a multi-workspace (OAuth) app; ``None`` otherwise."""
    if not settings.oauth_enabled:
        return None
    return FileInstallationStore(base_dir=str(settings.installation_dir / "installations"))


def build_user_resolver(
    settings: SlackSettings,
    client: AsyncWebClient,
    installation_store: AsyncInstallationStore | None = None,
) -> SlackUserResolver:
    """A ``SlackUserResolver`` with the bot's token(s) and the configured admins."""
    if installation_store is None:
        provider: AsyncWebClient | ClientProvider = client
    else:
        store = installation_store

        async def provider(team_id: str, enterprise_id: str | None) -> AsyncWebClient:
            bot = await store.async_find_bot(enterprise_id=enterprise_id, team_id=team_id)
            if bot is None or not bot.bot_token:
                raise AgentError("This workspace has not installed the app.")
            return build_client(settings, bot.bot_token)

    return SlackUserResolver(
        provider,
        admin_users=settings.admin_users,
        admin_groups=settings.admin_groups,
        workspace_admins_are_admins=settings.workspace_admins_are_admins,
        ttl=settings.identity_ttl,
    )
