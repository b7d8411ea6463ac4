"""Markdown for Slack: standard markdown -> ``mrkdwn``, and truncation.

LLM answers go to Slack as standard markdown (``markdown`` blocks, ``markdown_text``), which
Slack renders itself. ``mrkdwn`` (section and context text, the ``text`` fallback) is a
different dialect: ``*bold*``, ``_italic_``, ``~strike~``, ``<url|label>``, no headings.
``to_mrkdwn`` converts the common constructs and escapes the rest (``adapters.slack.escape``),
code included (Slack decodes the entities there too); a markdown link becomes its label with
the URL shown after it, never a disguised link; a fence's language tag is dropped (mrkdwn
would show it as the code's first line).

>>> to_mrkdwn("## Result\\n**12** rows, see [docs](https://x.io) & ~~old~~")
'*Result*\\n*12* rows, see docs (https://x.io) &amp; ~old~'
"""

from __future__ import annotations

import re

from adapters.slack.escape import escape

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
