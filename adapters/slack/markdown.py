"""Markdown for Slack: the one escaping function, standard markdown -> ``mrkdwn``, truncation.

LLM answers go to Slack as standard markdown (``markdown`` blocks, ``markdown_text``), which
Slack renders itself. ``mrkdwn`` (section and context text, the ``text`` fallback) is a
different dialect: ``*bold*``, ``_italic_``, ``~strike~``, ``<url|label>``, no headings.

Everything derived from a model or from data passes ``escape`` at the last step, whatever
the field: ``&``, ``<`` and ``>`` become entities, so no ``<!channel>``, ``<@U0123>`` or
``<https://evil.example|click here>`` reaches Slack as markup, and markdown's link syntax is
broken (``](`` -> ``] (``, ``]:`` -> ``] :``), so no ``[Reset your password](https://...)``
becomes a disguised link in a markdown block. Links exist only where the adapter makes them
(``<url|label>`` around an escaped label). ``to_mrkdwn`` converts the common markdown
constructs (a link becomes its label with the URL shown after it) and escapes the rest,
code included (Slack decodes the entities there too; a fence's language tag is dropped:
mrkdwn would show it as the code's first line).

>>> to_mrkdwn("## Result\\n**12** rows, see [docs](https://x.io) & ~~old~~")
'*Result*\\n*12* rows, see docs (https://x.io) &amp; ~old~'
>>> escape("<!channel> <@U0123> <https://evil.example|click here> [x](https://evil.example)")
'&lt;!channel&gt; &lt;@U0123&gt; &lt;https://evil.example|click here&gt; [x] (https://evil.example)'
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"(```.*?(?:```|$))", re.DOTALL)
_LANGUAGE = re.compile(r"^```[\w+#.-]+[ \t]*\n")
_CODE_SPAN = re.compile(r"(`[^`\n]+`)")
_LINK = re.compile(r"\[([^\]\n]+)\]\((\S+?)\)")
_BOLD = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_ITALIC_STAR = re.compile(r"(?<![\*\w])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\*\w])")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_BULLET = re.compile(r"^(\s*)[-*+]\s+", re.MULTILINE)
_PLACEHOLDER = "\x00{}\x00"


_LINK_SYNTAX = re.compile(r"\](?=[(:])")


def escape(text: str, *, after: str = "") -> str:
    """``text`` made inert for Slack, in mrkdwn and in markdown alike: the three characters
    Slack reads as control sequences become entities, and markdown link syntax is broken.

    ``after`` is the raw text already sent before ``text`` in the same message (a streamed
    answer's earlier deltas): a ``]`` it ends with still breaks a ``(`` starting ``text``.

    >>> escape("a < b && c > d")
    'a &lt; b &amp;&amp; c &gt; d'
    >>> escape("(https://evil.example)", after="[click]")
    ' (https://evil.example)'
    """
    entities = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    if after.endswith("]") and entities[:1] in ("(", ":"):
        entities = " " + entities
    return _LINK_SYNTAX.sub("] ", entities)


_LINK_SCHEMES = ("https://", "http://", "mailto:")


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


def to_mrkdwn(markdown: str) -> str:
    """Convert standard markdown to Slack ``mrkdwn``, escaped (``escape``); code spans and
    fences are kept unformatted, a link becomes ``label (url)`` (never a disguised link)."""
    kept: list[str] = []

    def keep(match: re.Match[str]) -> str:
        code = _LANGUAGE.sub("```\n", match.group(0), count=1)  # mrkdwn shows it as text
        kept.append(escape(code))
        return _PLACEHOLDER.format(len(kept) - 1)

    markdown = markdown.replace("\x00", "").replace("\x01", "").replace("\x02", "")
    text = _CODE_SPAN.sub(keep, _FENCE.sub(keep, markdown))
    links: list[str] = []

    def link(match: re.Match[str]) -> str:
        label, url = match.group(1), match.group(2)
        links.append(escape(f"{label} ({url})"))
        return f"\x01{len(links) - 1}\x01"

    text = escape(_LINK.sub(link, text))
    text = _HEADING.sub(lambda m: f"\x02{m.group(1)}\x02", text)
    text = _BOLD.sub(lambda m: f"\x02{m.group(2)}\x02", text)
    text = _ITALIC_STAR.sub(lambda m: f"_{m.group(1)}_", text)
    text = _STRIKE.sub(lambda m: f"~{m.group(1)}~", text)
    text = _BULLET.sub(lambda m: f"{m.group(1)}• ", text)
    text = text.replace("\x02", "*")
    text = re.sub("\x01(\\d+)\x01", lambda m: links[int(m.group(1))], text)
    return re.sub("\x00(\\d+)\x00", lambda m: kept[int(m.group(1))], text)


def truncate(text: str, limit: int, *, ellipsis: str = "…") -> str:
    """Cut ``text`` to at most ``limit`` characters, marking the cut.

    >>> truncate("abcdef", 4)
    'abc…'
    """
    if len(text) <= limit:
        return text
    return text[: max(0, limit - len(ellipsis))] + ellipsis
