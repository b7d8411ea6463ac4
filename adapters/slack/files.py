"""Files shared with a Slack message: which they are (``shared_files``, from the signed
event) and their bytes (``download``: ``url_private`` with the bot token, which needs the
``files:read`` scope).

The bot token goes only to Slack's own file hosts (``files.slack.com``, a ``*.slack.com`` or
``*.slack-gov.com`` host) or the host the client's Web API lives on (a fake in tests): a
``url_private`` pointing anywhere else is refused, never fetched. A download stops at
``max_bytes`` however large the file claims to be; without a usable token Slack answers
``url_private`` with its sign-in page (HTML, status 200), which is refused as such.

>>> from adapters.slack.payloads import read_event
>>> event = read_event({"type": "message", "channel": "C1", "ts": "1.0", "user": "U1",
...     "files": [{"id": "F1", "name": "sales.csv", "size": 12, "user": "U1",
...                "url_private": "https://files.slack.com/files-pri/T1-F1/sales.csv"}]})
>>> [(f.name, f.owner, f.size) for f in shared_files(event)]
[('sales.csv', 'U1', 12)]
"""

from __future__ import annotations

import logging

import aiohttp
from slack_sdk.web.async_client import AsyncWebClient
from yarl import URL

from adapters.files import FileRefused, SharedFile, too_big
from adapters.slack.payloads import MessageEvent

logger = logging.getLogger(__name__)

SLACK_FILE_DOMAINS = (".slack.com", ".slack-gov.com")
CHUNK = 64 * 1024


def shared_files(event: MessageEvent) -> list[SharedFile]:
    """The files of a message or mention event, as Slack described them; a file Slack did
    not give a ``url_private`` (Slack Connect, deleted) keeps an empty ``url``."""
    files = []
    for item in event.files:
        if item.mode == "tombstone":
            continue
        files.append(
            SharedFile(
                name=item.name or item.title or item.id,
                url=item.url_private or "",
                owner=item.user or "",
                size=item.size,
                file_id=item.id,
            )
        )
    return files


def allowed_host(url: str, client: AsyncWebClient) -> bool:
    """Whether the bot token may be sent to ``url`` (Slack's file hosts, or the client's own
    Web API host).

    >>> client = AsyncWebClient(token="xoxb-1")
    >>> allowed_host("https://files.slack.com/files-pri/T1-F1/a.csv", client)
    True
    >>> allowed_host("https://evil.example/files.slack.com/a.csv", client)
    False
    >>> allowed_host("http://files.slack.com/a.csv", client)
    False
    """
    target, api = URL(url), URL(client.base_url)
    if target.host is None:
        return False
    if target.host == api.host and target.port == api.port and target.scheme == api.scheme:
        return True
    return target.scheme == "https" and target.host.endswith(SLACK_FILE_DOMAINS)


async def download(client: AsyncWebClient, file: SharedFile, *, max_bytes: int) -> bytes:
    """The file's bytes (at most ``max_bytes``); raises ``FileRefused`` saying why not."""
    if file.size is not None and file.size > max_bytes:
        raise FileRefused(too_big(file.name, max_bytes))
    if not file.url:
        raise FileRefused(f"Slack did not give me access to {file.name}")
    if not allowed_host(file.url, client):
        logger.warning("slack: refused to download a file from an unexpected host")
        raise FileRefused(f"{file.name} is not stored on Slack, so I did not download it")
    headers = {"Authorization": f"Bearer {client.token}"}
    session = client.session
    own = session is None
    session = session or aiohttp.ClientSession()
    try:
        async with session.get(file.url, headers=headers) as response:
            return await _read(response, file.name, max_bytes)
    except (aiohttp.ClientError, TimeoutError) as error:
        logger.warning("slack: downloading a shared file failed: %s", type(error).__name__)
        raise FileRefused(f"I could not download {file.name}; please try again") from None
    finally:
        if own:
            await session.close()


async def _read(response: aiohttp.ClientResponse, name: str, max_bytes: int) -> bytes:
    if response.status != 200 or response.content_type == "text/html":
        logger.warning(
            "slack: file download answered %d %s (files:read scope missing?)",
            response.status,
            response.content_type,
        )
        raise FileRefused(
            f"Slack did not let me download {name} (the app may need the files:read scope)"
        )
    content = bytearray()
    async for chunk in response.content.iter_chunked(CHUNK):
        content += chunk
        if len(content) > max_bytes:
            raise FileRefused(too_big(name, max_bytes))
    return bytes(content)
