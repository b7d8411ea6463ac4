"""PNG images carried inline as ``data:`` URIs (generated charts), both directions."""

from __future__ import annotations

import base64
import binascii

PNG_DATA_URI_PREFIX = "data:image/png;base64,"


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
