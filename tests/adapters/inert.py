"""What "inert" means for text that reached a platform: the checks the escaping tests share.

Slack reads ``<...>`` as a mention, a broadcast or a disguised link in every mrkdwn and
markdown field (and a raw ``&`` could complete an entity into one), so an escaped field holds
no ``<`` and no ``&`` that is not ``&amp;``, ``&lt;`` or ``&gt;``. Markdown (Slack's
``markdown`` blocks and streamed ``markdown_text``, Teams' message text and Adaptive Card
TextBlocks; not Slack's mrkdwn, whose only links are ``<url|label>``) makes a link of
``[label](url)``, ``![alt](src)`` and ``[label]`` with a ``[label]: url`` definition: an
inert markdown field holds no ``](`` and no ``]:``.

Plain-text fields are shown verbatim by the platforms and never parsed (Slack ``plain_text``
objects, ``rich_text`` elements, task and plan titles, alt texts; Adaptive Card ``TextRun``
and ``Fact`` titles are never sent data), so they are not checked.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

SLACK_MARKUP = re.compile(r"<|&(?!amp;|lt;|gt;)")
MARKDOWN_LINK = re.compile(r"\]\(|\]:")

FRAGMENTS = [
    "<!channel>",
    "<!here|here>",
    "<@U0123>",
    "<#C0123>",
    "<!subteam^S0123>",
    "<https://evil.example|click here>",
    "<mailto:a@evil.example>",
    "[Reset your password](https://evil.example/reset)",
    "![x](https://evil.example/p.png)",
    "[docs]: https://evil.example\n",
    "[a]",
    "(https://evil.example)",
    "]",
    "(",
    ":",
    "&lt;!channel&gt;",
    "&amp;",
    "&",
    "<",
    ">",
    "`",
    "```\n",
    "**",
    "_",
    "*",
    "~",
    "|",
    "\n",
    "# ",
    "- ",
    "> ",
]
"""Pieces of hostile text, for strategies that glue them together with arbitrary text."""


def slack_fields(args: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """Every (kind, text) of one Slack Web API call that Slack parses: ``mrkdwn`` (top-level
    ``text``, mrkdwn text objects) or ``markdown`` (markdown blocks, ``markdown_text``)."""
    if isinstance(args.get("text"), str):
        yield "mrkdwn", args["text"]
    if isinstance(args.get("markdown_text"), str):
        yield "markdown", args["markdown_text"]
    for chunk in args.get("chunks") or []:
        if chunk.get("type") == "markdown_text":
            yield "markdown", chunk.get("text", "")
    yield from _in_blocks(args.get("blocks") or [])


def _in_blocks(value: Any) -> Iterator[tuple[str, str]]:
    if isinstance(value, list):
        for item in value:
            yield from _in_blocks(item)
    elif isinstance(value, dict):
        kind = value.get("type")
        if kind == "markdown" and isinstance(value.get("text"), str):
            yield "markdown", value["text"]
        elif kind == "mrkdwn":
            yield "mrkdwn", value.get("text", "")
        elif kind not in ("plain_text", "rich_text"):
            for item in value.values():
                yield from _in_blocks(item)


def slack_problems(args: dict[str, Any]) -> list[str]:
    """Markup from data in one Slack call: every field that is not inert."""
    problems = []
    for kind, text in slack_fields(args):
        if SLACK_MARKUP.search(text):
            problems.append(f"{kind} holds Slack markup: {text!r}")
        if kind == "markdown" and MARKDOWN_LINK.search(text):  # mrkdwn has no such links
            problems.append(f"{kind} holds a markdown link: {text!r}")
    return problems
