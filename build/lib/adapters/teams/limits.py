"""Teams' message size limit, measured the way Teams measures it, and packing an answer into
messages that fit.

Teams rejects a bot message over 40 KB with ``413 MessageSizeTooBig``; the size is the whole
payload encoded as UTF-16, not counting base64-encoded images. Renderers keep each card
bounded; ``text_parts`` and ``pack`` spread what is left over several messages, and
``answer_messages`` assembles them, so no call is ever rejected for size.

>>> payload_size({"text": "hé"}) == len('{"text":"hé"}'.encode("utf-16-le"))
True
>>> [len(p) for p in text_parts("a" * 10 + "\\n\\n" + "b" * 10, limit=16)]
[10, 10]
>>> from adapters.teams.activities import ConversationRef
>>> ref = ConversationRef("https://s/", "a:1", "1", {"id": "28:b"}, {"id": "29:u"}, "t",
...                       "personal")
>>> [m["text"] for m in answer_messages(ref, "Hello.", [])]
['Hello.']
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from adapters.teams import activities
from adapters.teams.activities import Activity, Citation, ConversationRef
from adapters.teams.controls import FEEDBACK_LOOP
from adapters.text import split_text

MESSAGE_LIMIT = 40_000
"""Bytes of UTF-16 per message (Teams: 40 KB), with a little room for what the host adds."""
TEXT_LIMIT = 16_000
"""Characters of answer text per message: 32 KB of UTF-16, leaving room for entities."""

_BASE64_IMAGE = re.compile(r"data:image/[a-zA-Z+.-]+;base64,[A-Za-z0-9+/=]+")


def payload_size(payload: Any) -> int:
    """UTF-16 bytes of ``payload`` as JSON, excluding base64 image data (Teams' own rule)."""
    encoded = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    if "base64," in encoded:
        encoded = _BASE64_IMAGE.sub("", encoded)
    return len(encoded.encode("utf-16-le"))


def text_parts(text: str, *, limit: int = TEXT_LIMIT) -> list[str]:
    """``adapters.text.split_text`` for message text: text that fits is one part as it is;
    longer text is cut into parts without the blank lines and spaces at each cut."""
    parts = split_text(text, limit)
    if len(parts) < 2:
        return parts
    middle = [part.lstrip("\n").rstrip() for part in parts[1:-1]]
    trimmed = [parts[0].rstrip(), *middle, parts[-1].lstrip("\n")]
    return [part for part in trimmed if part.strip()]


def pack(
    attachments: Sequence[dict[str, Any]],
    *,
    first_overhead: int,
    limit: int = MESSAGE_LIMIT,
    overhead: int = 2_000,
) -> list[list[dict[str, Any]]]:
    """Group attachments into messages under ``limit``, in order.

    ``groups[0]`` rides in the first message, whose other content (text, entities) weighs
    ``first_overhead`` bytes; it may be empty. Each later group is a message of its own.
    """
    groups: list[list[dict[str, Any]]] = [[]]
    used = first_overhead
    for item in attachments:
        size = payload_size(item)
        if used + size > limit and (groups[-1] or len(groups) == 1):
            groups.append([])
            used = overhead
        groups[-1].append(item)
        used += size
    return groups


def answer_messages(
    ref: ConversationRef,
    text: str,
    attachments: Sequence[dict[str, Any]],
    *,
    citations: Sequence[Citation] = (),
    ai_label: bool = True,
    feedback_loop: bool = True,
    limit: int = MESSAGE_LIMIT,
) -> list[Activity]:
    """The messages that carry an answer, each under ``limit``.

    The first message holds the first part of the text, the AI label with citations and the
    feedback buttons; longer text continues in further messages, and the cards follow the
    text, packed into as few messages as fit.
    """
    parts = text_parts(text) if text else []
    entities = [activities.ai_entity(citations)] if ai_label else []
    channel_data = FEEDBACK_LOOP if feedback_loop else None
    head = activities.message(
        ref, parts[0] if parts else None, entities=entities, channel_data=channel_data
    )
    tail = [activities.message(ref, part, entities=entities) for part in parts[1:]]
    last = tail[-1] if tail else head
    groups = pack(attachments, first_overhead=payload_size(last), limit=limit)
    if groups[0]:
        last["attachments"] = groups[0]
        last["attachmentLayout"] = "list"
    extra = [activities.message(ref, attachments=group) for group in groups[1:]]
    messages = [head, *tail, *extra]
    if not head.get("text") and not head.get("attachments") and len(messages) > 1:
        messages.remove(head)
    if not messages[0].get("text") and not messages[0].get("attachments"):
        messages[0] = activities.message(ref, "I have nothing to add.")
    return messages
