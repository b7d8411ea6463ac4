"""Side jobs of the Teams bot that talk to Microsoft 365 directly: uploading an offered file
to the user's OneDrive (file consent flow; ``adapters.teams.files`` shows the outcome in the
chat) and app-only Microsoft Graph tokens."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import aiohttp

from adapters.fetch import Fetcher, FetchPolicy, FetchRefused
from adapters.teams.activities import ConversationRef
from adapters.teams.connector import TeamsConnector
from adapters.teams.files import show_upload, upload_headers
from adapters.teams.identity import TokenProvider
from bots.teams.settings import TeamsSettings

logger = logging.getLogger(__name__)


async def upload_offered_file(
    policy: FetchPolicy,
    connector: TeamsConnector,
    ref: ConversationRef,
    url: str,
    offered: tuple[str, bytes],
    info: dict[str, Any],
) -> None:
    """PUT the file to the consent's upload URL (through ``adapters.fetch``: never to a
    private address, no redirect followed), then show it (or say it failed)."""
    name, content = offered
    uploaded: dict[str, Any] | None = info
    try:
        async with (
            Fetcher(policy) as fetcher,
            fetcher.open(
                url,
                method="PUT",
                data=content,
                headers=upload_headers(len(content)),
                max_redirects=0,
            ) as answer,
        ):
            answer.raise_for_status()
    except (FetchRefused, aiohttp.ClientError, TimeoutError) as error:
        logger.warning("uploading %s failed: %s", name, error)
        uploaded = None
    await show_upload(connector, ref, name, uploaded)


def graph_token_provider(settings: TeamsSettings) -> TokenProvider:
    """App-only Graph tokens per tenant, from msal on a worker thread (it blocks)."""
    from msal import ConfidentialClientApplication  # type: ignore[import-untyped]

    apps: dict[str, Any] = {}
    secret = settings.app_password.get_secret_value() if settings.app_password else None

    def acquire(tenant_id: str) -> str:
        app = apps.get(tenant_id)
        if app is None:
            app = apps[tenant_id] = ConfidentialClientApplication(
                settings.app_id,
                client_credential=secret,
                authority=f"https://login.microsoftonline.com/{tenant_id}",
            )
        result = app.acquire_token_for_client(scopes=["https://graph.microsoft.com/.default"])
        if "access_token" not in result:
            raise RuntimeError(f"Graph token refused: {result.get('error')}")
        return str(result["access_token"])

    async def provide(tenant_id: str) -> str:
        return await asyncio.to_thread(acquire, tenant_id)

    return provide
