"""Files between the user and the bot: files people share with a question (``shared_files``,
``download``), and the full rows of a cut table, as CSV, through Teams' file consent flow.

Teams attaches a file sent in a personal chat as a ``file.download.info`` attachment whose
``downloadUrl`` is pre-authenticated (no token is sent with it); it is fetched through
``adapters.fetch`` (https only, no redirect to another scheme, never a private or metadata
address, unless the ``FetchPolicy`` allows it for local fakes), at most ``max_bytes``. In group
chats and channels files are SharePoint links the bot cannot read without Graph.

Bots can send files only in personal chats, and only after the user agrees: the bot sends a
file consent card; when the user accepts, Teams invokes ``fileConsent/invoke`` with an upload
URL in the user's OneDrive; the bot uploads there and posts a file info card. ``FileOffers``
keeps the offered content (in a ``KeyValueStore``) between the offer and the answer, bound to the
conversation it was offered in; the upload URL passes the same ``FetchPolicy``.
``show_upload`` posts the outcome: the file info card, or a note that the upload failed
(the upload itself, to OneDrive, is the host's job).

>>> import asyncio
>>> offers = FileOffers()
>>> card = asyncio.run(offers.offer("rows.csv", b"a,b\\n1,2\\n", conversation="teams:t:a:1"))
>>> card["contentType"], card["content"]["sizeInBytes"]
('application/vnd.microsoft.teams.card.file.consent', 8)
"""

from __future__ import annotations

import base64
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

from adapters.fetch import Fetcher, FetchPolicy, FetchRefused
from adapters.files import FileRefused, SharedFile, too_big
from adapters.teams import activities
from adapters.teams.activities import ConversationRef
from adapters.teams.connector import ConnectorError, TeamsConnector
from adapters.teams.context import Wire, asker_id, thread_key
from agent_core.state import KeyValueStore, MemoryKeyValueStore

FILE_CONSENT = "application/vnd.microsoft.teams.card.file.consent"
FILE_INFO = "application/vnd.microsoft.teams.card.file.info"
FILE_DOWNLOAD = "application/vnd.microsoft.teams.file.download.info"
CONSENT_INVOKE = "fileConsent/invoke"
OFFER_SECONDS = 24 * 3600.0
CHUNK = 64 * 1024

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ConsentAnswer:
    """The user's answer to a file consent card.

    >>> ConsentAnswer(accepted=False, offer_id="o1").upload_url is None
    True
    """

    accepted: bool
    offer_id: str
    upload_url: str | None = None
    upload_info: Mapping[str, Any] | None = None


def consent_answer_of(activity: Wire) -> ConsentAnswer | None:
    """The answer a ``fileConsent/invoke`` carries, or None for anything else."""
    if activity.get("type") != "invoke" or activity.get("name") != CONSENT_INVOKE:
        return None
    value = activity.get("value")
    if not isinstance(value, Mapping) or value.get("type") != "fileUpload":
        return None
    context = value.get("context")
    offer_id = context.get("offer") if isinstance(context, Mapping) else None
    if not isinstance(offer_id, str) or value.get("action") not in ("accept", "decline"):
        return None
    info = value.get("uploadInfo")
    info = info if isinstance(info, Mapping) else None
    url = info.get("uploadUrl") if info else None
    return ConsentAnswer(
        accepted=value.get("action") == "accept",
        offer_id=offer_id,
        upload_url=url if isinstance(url, str) else None,
        upload_info=info,
    )


def file_info_card(info: Mapping[str, Any]) -> dict[str, Any]:
    """The card that shows an uploaded file in the chat."""
    return {
        "contentType": FILE_INFO,
        "contentUrl": info.get("contentUrl"),
        "name": info.get("name"),
        "content": {"uniqueId": info.get("uniqueId"), "fileType": info.get("fileType")},
    }


async def show_upload(
    connector: TeamsConnector, ref: ConversationRef, name: str, info: Mapping[str, Any] | None
) -> None:
    """Show the uploaded file ``name`` in the chat (``info``: the consent's upload info), or
    say its upload failed (``info`` None). Never raises."""
    if info is not None:
        message = activities.message(ref, attachments=[file_info_card(info)])
    else:
        message = activities.message(ref, f"I could not upload {name}. Please try again.")
    try:
        await connector.reply(ref.conversation_id, ref.activity_id or "", message)
    except ConnectorError as error:
        logger.warning("could not show the uploaded file: %s", error)


def upload_headers(size: int) -> dict[str, str]:
    """Headers for the single-request upload to the consent's OneDrive upload URL."""
    return {"Content-Length": str(size), "Content-Range": f"bytes 0-{size - 1}/{size}"}


class FileOffers:
    """Offered files waiting for the user's consent; see the module docstring.

    ``policy`` is where an upload URL may point (https only by default; the shipped fakes'
    plain-http loopback URLs with ``FetchPolicy.local_fakes()``).

    >>> FileOffers().upload_url(ConsentAnswer(True, "o1", upload_url="http://evil/x")) is None
    True
    """

    def __init__(
        self, store: KeyValueStore | None = None, *, policy: FetchPolicy | None = None
    ) -> None:
        self._store = store if store is not None else MemoryKeyValueStore(max_entries=1_000)
        self.policy = policy if policy is not None else FetchPolicy()

    async def offer(
        self, name: str, content: bytes, *, conversation: str, description: str | None = None
    ) -> dict[str, Any]:
        """Keep ``content`` and return the consent card attachment that offers it."""
        offer_id = os.urandom(12).hex()
        await self._store.set(
            f"teams:file:{offer_id}",
            {
                "name": name,
                "conversation": conversation,
                "content": base64.b64encode(content).decode("ascii"),
            },
            ttl=OFFER_SECONDS,
        )
        return {
            "contentType": FILE_CONSENT,
            "name": name,
            "content": {
                "description": description or f"{name}, as CSV",
                "sizeInBytes": len(content),
                "acceptContext": {"offer": offer_id},
                "declineContext": {"offer": offer_id},
            },
        }

    async def take(self, activity: Wire, answer: ConsentAnswer) -> tuple[str, bytes] | None:
        """The offered file (name, content) if ``answer`` accepts an offer made in this
        conversation; the offer is used up either way."""
        entry = await self._store.get(f"teams:file:{answer.offer_id}")
        if not isinstance(entry, Mapping) or entry.get("conversation") != thread_key(activity):
            return None
        await self._store.delete(f"teams:file:{answer.offer_id}")
        return str(entry["name"]), base64.b64decode(entry["content"])

    def upload_url(self, answer: ConsentAnswer) -> str | None:
        """Where to upload: a URL the policy allows (https: OneDrive), else None (the
        address itself is checked when the upload connects)."""
        url = answer.upload_url or ""
        return url if url and self.policy.refuses_url(url) is None else None


def shared_files(activity: Wire) -> list[SharedFile]:
    """The files a personal-chat message carries (``file.download.info`` attachments), each
    owned by the message's sender.

    >>> activity = {"from": {"id": "29:1", "aadObjectId": "aad-1"}, "attachments": [
    ...     {"contentType": FILE_DOWNLOAD, "name": "sales.csv",
    ...      "content": {"downloadUrl": "https://contoso.sharepoint.com/x", "uniqueId": "u1"}},
    ...     {"contentType": "text/html", "content": "<p>hi</p>"}]}
    >>> [(f.name, f.owner) for f in shared_files(activity)]
    [('sales.csv', 'aad-1')]
    """
    attachments = activity.get("attachments")
    if not isinstance(attachments, list):
        return []
    files = []
    for item in attachments:
        if not isinstance(item, Mapping) or item.get("contentType") != FILE_DOWNLOAD:
            continue
        content = item.get("content")
        content = content if isinstance(content, Mapping) else {}
        url, unique = content.get("downloadUrl"), content.get("uniqueId")
        files.append(
            SharedFile(
                name=str(item.get("name") or "file"),
                url=url if isinstance(url, str) else "",
                owner=asker_id(activity),
                file_id=unique if isinstance(unique, str) else None,
            )
        )
    return files


async def download(fetcher: Fetcher, file: SharedFile, *, max_bytes: int) -> bytes:
    """The file's bytes (at most ``max_bytes``), through ``fetcher`` (its policy decides
    where a download may go); raises ``FileRefused`` saying why not."""
    if not file.url or fetcher.policy.refuses_url(file.url) is not None:
        raise FileRefused(f"Teams did not give me a download link for {file.name}")
    try:
        async with fetcher.open(file.url) as response:
            if response.status != 200:
                raise FileRefused(f"I could not download {file.name} ({response.status})")
            if (response.content_length or 0) > max_bytes:
                raise FileRefused(too_big(file.name, max_bytes))
            content = bytearray()
            async for chunk in response.content.iter_chunked(CHUNK):
                content += chunk
                if len(content) > max_bytes:
                    raise FileRefused(too_big(file.name, max_bytes))
            return bytes(content)
    except FetchRefused as refused:
        logger.warning("teams: refused to download a shared file: %s", refused)
        raise FileRefused(f"I did not download {file.name}: its link is not allowed") from None
    except (aiohttp.ClientError, TimeoutError) as error:
        logger.warning("teams: downloading a shared file failed: %s", type(error).__name__)
        raise FileRefused(f"I could not download {file.name}; please try again") from None
