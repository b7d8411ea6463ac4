"""Teams' escaping: text from a model or from data, made inert at the last step.

Teams renders Markdown in a message's text (``textFormat: markdown``, with some HTML) and
card Markdown in every Adaptive Card TextBlock and Fact (bold, italic, lists, links). Neither
may turn a value into a link: ``[Reset your password](https://...)`` from a database must
show as text, its URL visible. So:

* ``escape_card`` (TextBlocks, Facts): markdown link syntax broken (``adapters.escape``);
  cards support no HTML, so ``<`` and ``&`` stay as they are;
* ``escape_message`` (a message's text, streamed or posted): the same, and ``&`` and ``<``
  as entities, so no HTML tag (``<a href=...>``) and no ``<at>`` forms.

Text that should not be Markdown at all goes into a TextRun (``elements.plain_block``),
which Teams never parses. Links exist only where the adapter makes them (citations, the
file consent flow); none comes out of these functions.

>>> escape_message('<a href="https://evil.example">Reset</a> [Reset](https://evil.example)')
'&lt;a href="https://evil.example">Reset&lt;/a> [Reset] (https://evil.example)'
"""

from __future__ import annotations

from adapters.escape import break_links


def escape_card(text: str) -> str:
    """``text`` for a TextBlock or a Fact: card Markdown without links.

    >>> escape_card("**bold** [x](https://evil.example)")
    '**bold** [x] (https://evil.example)'
    """
    return break_links(text)


def escape_message(text: str) -> str:
    """``text`` for a message's (Markdown) text: no link, no HTML tag.

    >>> escape_message("a < b & c [1]")
    'a &lt; b &amp; c [1]'
    """
    return break_links(text.replace("&", "&amp;").replace("<", "&lt;"))
