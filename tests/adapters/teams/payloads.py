"""Realistic Teams activities (wire JSON) for tests, shaped like what Teams posts."""

from __future__ import annotations

import itertools
from typing import Any

TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"
BOT_ID = "28:app-0000"
BOT_NAME = "Threadline"
_ids = itertools.count(1)


def _mention(name: str, user_id: str) -> dict[str, Any]:
    return {
        "type": "mention",
        "text": f"<at>{name}</at>",
        "mentioned": {"id": user_id, "name": name},
    }


def message(
    text: str,
    *,
    kind: str = "personal",
    service_url: str = "https://smba.trafficmanager.net/amer/",
    user: str = "aad-ana",
    user_name: str = "Ana Lima",
    conversation: str | None = None,
    mention_bot: bool | None = None,
    activity_id: str | None = None,
    value: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A message activity; group chats and channels mention the bot unless told otherwise."""
    mention_bot = kind != "personal" if mention_bot is None else mention_bot
    conversation_id = (
        conversation
        or {
            "personal": f"a:1personal-{user}",
            "groupChat": "19:group-chat-1@thread.v2",
            "channel": "19:general@thread.tacv2;messageid=1700000000000",
        }[kind]
    )
    body: dict[str, Any] = {
        "type": "message",
        "id": activity_id or f"1700000000{next(_ids):03d}",
        "timestamp": "2025-01-01T10:00:00.000Z",
        "serviceUrl": service_url,
        "channelId": "msteams",
        "from": {"id": f"29:{user}", "name": user_name, "aadObjectId": user},
        "recipient": {"id": BOT_ID, "name": BOT_NAME},
        "conversation": {"id": conversation_id, "conversationType": kind, "tenantId": TENANT},
        "text": f"<at>{BOT_NAME}</at> {text}" if mention_bot else text,
        "textFormat": "plain",
        "locale": "en-US",
        "entities": [{"type": "clientInfo", "locale": "en-US", "country": "US"}],
        "channelData": {"tenant": {"id": TENANT}},
    }
    if kind == "channel":
        body["conversation"]["isGroup"] = True
        body["channelData"]["team"] = {"id": "19:team-1@thread.tacv2", "name": "Ops"}
        body["channelData"]["channel"] = {"id": "19:general@thread.tacv2", "name": "General"}
    if kind == "groupChat":
        body["conversation"]["isGroup"] = True
    if mention_bot:
        body["entities"].append(_mention(BOT_NAME, BOT_ID))
    if value is not None:
        body["value"] = value
    return body


def invoke(name: str, value: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """An invoke activity (card action, feedback) from the same sender shapes as ``message``."""
    body = message("", mention_bot=False, **kwargs)
    body.update(type="invoke", name=name, value=value)
    body.pop("text")
    return body
