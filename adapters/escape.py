"""Markdown's link syntax, broken: the part of escaping both channels share.

Slack's ``markdown`` blocks, Teams' message text and Adaptive Card TextBlocks all make a link
of ``[label](url)`` (a disguised one: the label need not be the URL), of ``![alt](src)`` and
of ``[label]`` with a ``[label]: url`` definition. ``break_links`` puts a space after every
``]`` followed by ``(`` or ``:`` so none of them forms, whatever the text; the URL stays
visible. Each channel's ``escape`` module adds what its platform needs besides
(``adapters.slack.escape``, ``adapters.teams.escape``).

>>> break_links("[Reset your password](https://evil.example/reset)")
'[Reset your password] (https://evil.example/reset)'
"""

from __future__ import annotations

import re

_LINK_SYNTAX = re.compile(r"\](?=[(:])")


def break_links(text: str, *, after: str = "") -> str:
    """``text`` with markdown link syntax broken. ``after`` is the text already sent before
    it in the same message (a streamed answer's earlier part): a ``]`` it ends with still
    breaks a ``(`` that starts ``text``.

    >>> break_links("(https://evil.example)", after="[click]")
    ' (https://evil.example)'
    >>> break_links("[docs]: https://evil.example")
    '[docs] : https://evil.example'
    """
    if after.endswith("]") and text[:1] in ("(", ":"):
        text = " " + text
    return _LINK_SYNTAX.sub("] ", text)
