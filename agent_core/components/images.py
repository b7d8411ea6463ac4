"""Images carried inline as ``data:`` URIs (generated charts, an MCP tool's pictures), both
directions, and ``ImageComponent``, an image shown as itself."""

from __future__ import annotations

import base64
import binascii

from pydantic import Field

from agent_core.components.base import ComponentType, RichComponent

PNG_DATA_URI_PREFIX = "data:image/png;base64,"

IMAGE_TYPES = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}
"""The image types carried inline, and each one's file extension."""


def png_data_uri(png: bytes) -> str:
    """``data:image/png;base64,...`` for ``png``.

    >>> png_data_uri(b"\\x89PNG")
    'data:image/png;base64,iVBORw=='
    """
    return PNG_DATA_URI_PREFIX + base64.b64encode(png).decode("ascii")


def png_from_data_uri(url: str | None) -> bytes | None:
    """The PNG inside a ``data:image/png;base64,...`` URI; ``None`` for anything else
    (a hosted URL, another type, broken base64).

    >>> png_from_data_uri(png_data_uri(b"\\x89PNG"))
    b'\\x89PNG'
    >>> png_from_data_uri("https://example.com/chart.png") is None
    True
    """
    if not url or not url.startswith(PNG_DATA_URI_PREFIX):
        return None
    try:
        return base64.b64decode(url[len(PNG_DATA_URI_PREFIX) :], validate=True)
    except (binascii.Error, ValueError):
        return None


def image_data_uri(mime_type: str, data: bytes) -> str | None:
    """``data:<type>;base64,...`` for an image of one of ``IMAGE_TYPES`` (else ``None``).

    >>> image_data_uri("image/jpeg", b"\\xff\\xd8")
    'data:image/jpeg;base64,/9g='
    >>> image_data_uri("image/svg+xml", b"<svg/>") is None
    True
    """
    if mime_type not in IMAGE_TYPES:
        return None
    return f"data:{mime_type};base64," + base64.b64encode(data).decode("ascii")


def image_from_data_uri(url: str | None) -> tuple[str, bytes] | None:
    """The type and bytes of an image ``data:`` URI of one of ``IMAGE_TYPES``; ``None`` for
    anything else.

    >>> image_from_data_uri("data:image/jpeg;base64,/9g=")
    ('image/jpeg', b'\\xff\\xd8')
    """
    if not url or not url.startswith("data:"):
        return None
    head, _, payload = url[5:].partition(",")
    mime_type, _, encoding = head.partition(";")
    if mime_type not in IMAGE_TYPES or encoding != "base64":
        return None
    try:
        return mime_type, base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        return None


class ImageComponent(RichComponent):
    """An image to show as it is (a tool's picture); channels render its simple form, a
    ``SimpleImageComponent`` with the same URL.

    >>> ImageComponent(url="data:image/png;base64,iVBORw==", alt_text="chart").alt_text
    'chart'
    """

    type: ComponentType = ComponentType.IMAGE
    url: str
    alt_text: str = Field(default="image")
