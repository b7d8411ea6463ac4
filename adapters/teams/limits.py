"""Teams' message size limit, measured the way Teams measures it, and splitting to fit.

Teams rejects a bot message over 40 KB with ``413 MessageSizeTooBig``; the size is the whole
payload encoded as UTF-16, not counting base64-encoded images. Renderers keep each card
bounded; ``split_text`` and ``pack`` spread what is left over several messages, so no call
is ever rejected for size.

>>> payload_size({"text": "hé"}) == len('{"text":"hé"}'.encode("utf-16-le"))
True
>>> [len(p) for p in split_text("a" * 10 + "\\n\\n" + "b" * 10, limit=12)]
[10, 10]
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

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


def _cut_point(text: str, limit: int) -> int:
    """Where to cut ``text`` at or before ``limit``: a paragraph, else a line, else a space."""
    window = text[:limit]
    for separator in ("\n\n", "\n", " "):
        cut = window.rfind(separator)
        if cut > limit // 2:
            return cut
    return limit


def split_text(text: str, *, limit: int = TEXT_LIMIT) -> list[str]:
    """Split long text at paragraph (else line, else word) boundaries into parts <= ``limit``.

    A code fence cut in two is closed at the end of one part and reopened in the next, so
    both parts still render as code.
    """
    parts: list[str] = []
    rest = text
    while len(rest) > limit:
        cut = _cut_point(rest, limit)
        part = rest[:cut].rstrip()
        if part.count("```") % 2:
            cut = _cut_point(rest, limit - 4)  # room to close the fence
            part = rest[:cut].rstrip()
        rest = rest[cut:].lstrip("\n")
        if part.count("```") % 2:
            part += "\n```"
            rest = "```\n" + rest
        parts.append(part)
    if rest.strip() or not parts:
        parts.append(rest)
    return parts


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
