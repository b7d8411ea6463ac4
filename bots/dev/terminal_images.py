"""Pictures in a terminal: which image protocol the terminal speaks, and a PNG in it.

``protocol()`` reads the environment the terminal sets: kitty (``TERM=xterm-kitty``,
``KITTY_WINDOW_ID``, also Ghostty), the iTerm2 inline images protocol (iTerm2, WezTerm,
``TERM_PROGRAM``/``LC_TERMINAL``), sixel (``TERM`` naming it, e.g. ``foot``, ``mlterm``,
``xterm-sixel``), else none; ``THREADLINE_CHAT_IMAGES=kitty|iterm|sixel|none`` overrides it.
``inline(png, protocol)`` is the escape sequence that shows the PNG where the cursor is.

>>> protocol({"TERM": "xterm-kitty"}), protocol({"TERM_PROGRAM": "iTerm.app"})
('kitty', 'iterm')
>>> protocol({"TERM": "xterm-256color"}), protocol({"THREADLINE_CHAT_IMAGES": "sixel"})
('none', 'sixel')
>>> inline(b"PNG", "iterm").startswith("\\x1b]1337;File=")
True
"""

from __future__ import annotations

import base64
import io
import os
from collections.abc import Mapping
from typing import Literal

Protocol = Literal["kitty", "iterm", "sixel", "none"]
OVERRIDE = "THREADLINE_CHAT_IMAGES"
SIXEL_TERMS = ("sixel", "foot", "mlterm", "yaft", "contour")
KITTY_CHUNK = 4096
SIXEL_WIDTH = 800


def protocol(environ: Mapping[str, str] | None = None) -> Protocol:
    """The image protocol the terminal described by ``environ`` (default: this one) speaks."""
    env = os.environ if environ is None else environ
    chosen = env.get(OVERRIDE, "").lower()
    if chosen in ("kitty", "iterm", "sixel", "none"):
        return chosen  # type: ignore[return-value]
    term = env.get("TERM", "").lower()
    program = env.get("TERM_PROGRAM", "").lower()
    if term == "xterm-kitty" or "KITTY_WINDOW_ID" in env or program == "ghostty":
        return "kitty"
    if program in ("iterm.app", "wezterm") or env.get("LC_TERMINAL") == "iTerm2":
        return "iterm"
    if any(name in term for name in SIXEL_TERMS):
        return "sixel"
    return "none"


def _kitty(png: bytes) -> str:
    data = base64.b64encode(png).decode()
    chunks = [data[i : i + KITTY_CHUNK] for i in range(0, len(data), KITTY_CHUNK)] or [""]
    parts = []
    for index, chunk in enumerate(chunks):
        more = 1 if index < len(chunks) - 1 else 0
        head = "a=T,f=100," if index == 0 else ""
        parts.append(f"\x1b_G{head}m={more};{chunk}\x1b\\")
    return "".join(parts)


def _iterm(png: bytes) -> str:
    data = base64.b64encode(png).decode()
    return f"\x1b]1337;File=inline=1;size={len(png)};preserveAspectRatio=1:{data}\x07"


def _sixel(png: bytes) -> str:
    """DEC sixel: the picture in 256 colours, six pixel rows per band (needs Pillow)."""
    from PIL import Image

    picture = Image.open(io.BytesIO(png)).convert("RGB")
    if picture.width > SIXEL_WIDTH:
        ratio = SIXEL_WIDTH / picture.width
        picture = picture.resize((SIXEL_WIDTH, max(1, int(picture.height * ratio))))
    indexed = picture.quantize(colors=255)
    palette = indexed.getpalette() or []
    width, height = indexed.size
    pixels = indexed.load()
    assert pixels is not None
    out = [f'\x1bPq"1;1;{width};{height}']
    for n in range(len(palette) // 3):
        r, g, b = (round(c * 100 / 255) for c in palette[n * 3 : n * 3 + 3])
        out.append(f"#{n};2;{r};{g};{b}")
    for top in range(0, height, 6):
        rows = range(top, min(top + 6, height))
        used = sorted({int(pixels[x, y]) for y in rows for x in range(width)})  # type: ignore[arg-type]
        for color in used:
            bits = [
                sum(1 << (y - top) for y in rows if pixels[x, y] == color) for x in range(width)
            ]
            out.append(f"#{color}" + "".join(chr(63 + b) for b in bits) + "$")
        out.append("-")
    out.append("\x1b\\")
    return "".join(out)


def inline(png: bytes, kind: Protocol) -> str:
    """The escape sequence showing ``png`` inline (``""`` for ``none``)."""
    match kind:
        case "kitty":
            return _kitty(png)
        case "iterm":
            return _iterm(png)
        case "sixel":
            return _sixel(png)
    return ""
