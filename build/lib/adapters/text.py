"""Splitting long markdown for channels whose messages have a length limit.

>>> split_text("first paragraph.\\n\\nsecond paragraph here", 30)
['first paragraph.\\n\\n', 'second paragraph here']
>>> pieces = split_text("```\\n" + "x\\n" * 20 + "```", 20)
>>> all(len(p) <= 20 and p.count("```") == 2 for p in pieces)
True
"""

from __future__ import annotations

FENCE = "```"


def _cut_point(text: str, limit: int) -> int:
    """Where to cut ``text`` at or before ``limit``: after a paragraph, else a line, else a
    sentence, else a space; at ``limit`` when none falls in the second half."""
    window = text[:limit]
    for separator in ("\n\n", "\n", ". ", " "):
        at = window.rfind(separator)
        if at > limit // 2:
            return at + len(separator)
    return limit


def split_text(text: str, limit: int) -> list[str]:
    """Split ``text`` into pieces of at most ``limit`` characters at paragraph, line,
    sentence or word breaks; the pieces joined give ``text`` back, except that a piece
    ending inside a code fence closes it and the next piece reopens it, so each piece
    renders on its own."""
    if limit < 16:
        raise ValueError("limit too small to split markdown safely")
    pieces: list[str] = []
    rest = text
    reopen = ""
    while rest:
        rest = reopen + rest
        if len(rest) <= limit:
            pieces.append(rest)
            break
        cut = _cut_point(rest, limit - len(FENCE) - 1)
        piece, rest = rest[:cut], rest[cut:]
        reopen = ""
        if piece.count(FENCE) % 2 == 1:
            piece = piece.rstrip("\n") + "\n" + FENCE
            reopen = FENCE + "\n"
        pieces.append(piece)
    return pieces
