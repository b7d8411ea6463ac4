"""Slack's one escaping function, and the one place a link is made.

Everything derived from a model or from data passes ``escape`` at the last step before Slack
reads it, whatever the field (mrkdwn text, ``markdown`` blocks, streamed ``markdown_text``,
the top-level ``text``): ``&``, ``<`` and ``>`` become entities, so no ``<!channel>``,
``<@U0123>`` or ``<https://evil.example|click here>`` reaches Slack as markup, and markdown's
link syntax is broken (``adapters.escape``), so no ``[Reset your password](https://...)``
becomes a disguised link in a markdown block. Links exist only where the adapter makes them
(``link``: ``<url|label>`` around an escaped label). Plain-text fields (``plain_text``
objects, rich text elements, task titles) are shown verbatim by Slack and not escaped.

>>> escape("<!channel> <@U0123> <https://evil.example|click here>")
'&lt;!channel&gt; &lt;@U0123&gt; &lt;https://evil.example|click here&gt;'
"""

from __future__ import annotations

from adapters.escape import break_links

_LINK_SCHEMES = ("https://", "http://", "mailto:")


def escape(text: str, *, after: str = "") -> str:
    """``text`` made inert for Slack, in mrkdwn and in markdown alike; ``after`` is the raw
    text already sent before it in the same message (``adapters.escape.break_links``).

    >>> escape("a < b && c > d [x](y)")
    'a &lt; b &amp;&amp; c &gt; d [x] (y)'
    """
    entities = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return break_links(entities, after=after)


def link(url: str, label: str | None = None) -> str:
    """A mrkdwn link the adapter makes on purpose: ``<url|label>`` with the label escaped and
    the URL unable to end the link early; a URL of another scheme is shown as text.

    >>> link("https://x.io/a|b>c", "<!here> docs")
    '<https://x.io/a%7Cb%3Ec|&lt;!here&gt; docs>'
    >>> link("javascript:alert(1)", "click")
    'click (javascript:alert(1))'
    """
    shown = escape(label or url)
    if not url.lower().startswith(_LINK_SCHEMES) or any(c.isspace() for c in url):
        return escape(f"{label} ({url})") if label else escape(url)
    safe = url.replace("&", "&amp;").replace("<", "%3C").replace(">", "%3E").replace("|", "%7C")
    return f"<{safe}|{shown}>"
