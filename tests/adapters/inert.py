"""What "inert" means for text that reached a platform: the checks the escaping tests share.

Slack reads ``<...>`` as a mention, a broadcast or a disguised link in every mrkdwn and
markdown field (and a raw ``&`` could complete an entity into one), so an escaped field holds
no ``<`` and no ``&`` that is not ``&amp;``, ``&lt;`` or ``&gt;``. Markdown (Slack's
``markdown`` blocks and streamed ``markdown_text``, Teams' message text and Adaptive Card
TextBlocks; not Slack's mrkdwn, whose only links are ``<url|label>``) makes a link of
``[label](url)``, ``![alt](src)`` and ``[label]`` with a ``[label]: url`` definition: an
inert markdown field holds no ``](`` and no ``]:``.

Teams' message text also renders some HTML, so an escaped message text holds no ``<`` and no
raw ``&``. Plain-text fields are shown verbatim by the platforms and never parsed (Slack
``plain_text`` objects, ``rich_text`` elements, task and plan titles, alt texts; Adaptive
Card ``TextRun``), so they are not checked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from hypothesis import strategies as st

from agent_core.components import (
    ApprovalCallView,
    ApprovalComponent,
    ArtifactComponent,
    BadgeComponent,
    CardComponent,
    DataFrameComponent,
    IconTextComponent,
    LogEntry,
    LogViewerComponent,
    NotificationComponent,
    ProgressDisplayComponent,
    RichTextComponent,
    Source,
    SourcesComponent,
    StatusCardComponent,
    StatusIndicatorComponent,
    Task,
    TaskListComponent,
    UiComponent,
)

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

hostile = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=4)), min_size=1, max_size=12
).map("".join)


def components(text: str) -> list[UiComponent]:
    """One of each component a turn may show, every field carrying ``text``."""
    table = DataFrameComponent.from_records([{"name": text, "n": 1}], title=text, description=text)
    approval = ApprovalComponent(
        approval_id="a1",
        calls=[ApprovalCallView(tool=text or "t", arguments={"note": text})],
        asker=text,
        approvers=text,
        expires_at=0,
    )
    return [
        UiComponent.of(approval, text),
        UiComponent.of(approval.update(state="denied", decided_by=text, decided_at=0), text),
        UiComponent.of(CardComponent(title=text, content=text, subtitle=text, icon=text), text),
        UiComponent.of(CardComponent(title="t", content=text, markdown=True, status="info"), "c"),
        UiComponent.of(NotificationComponent(title=text, message=text, level="warning"), text),
        UiComponent.of(
            StatusCardComponent(
                title=text, status="failed", description=text, icon=text, metadata={text: text}
            ),
            text,
        ),
        UiComponent.of(ProgressDisplayComponent(label=text, value=0.5, description=text), text),
        UiComponent.of(StatusIndicatorComponent(status="info", message=text), text),
        UiComponent.of(BadgeComponent(text=text, icon=text), text),
        UiComponent.of(IconTextComponent(icon=text, text=text), text),
        UiComponent.of(LogViewerComponent(title=text, entries=[LogEntry(message=text)]), text),
        UiComponent.of(TaskListComponent(title=text, tasks=[Task(title=text)]), text),
        UiComponent.of(
            ArtifactComponent(
                artifact_id="a1", artifact_type="html", content="x", title=text, description=text
            ),
            text,
        ),
        UiComponent(rich_component=table),
        UiComponent(rich_component=RichTextComponent(content=text)),
        UiComponent(rich_component=RichTextComponent(content=text, code_language=text[:20])),
        UiComponent(
            rich_component=RichTextComponent(content=text, markdown=True), audience="requester"
        ),
        UiComponent.of(
            SourcesComponent(sources=[Source(tool="run_sql", query=text, tables=[text])]), text
        ),
    ]


def streamed(text: str, cuts: list[int]) -> list[UiComponent]:
    """The answer as the agent streams it: deltas cut at ``cuts``, then the final version."""
    answer = RichTextComponent(content="", markdown=True, streaming=True)
    versions, start = [], 0
    for cut in sorted({min(c, len(text)) for c in cuts} | {len(text)}):
        delta = text[start:cut]
        start = cut
        if delta:
            answer = answer.model_copy(update={"content": answer.content + delta, "delta": delta})
            versions.append(UiComponent(rich_component=answer))
    final = answer.model_copy(update={"streaming": False, "delta": None})
    return [*versions, UiComponent(rich_component=final)]


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


TEAMS_HTML = re.compile(r"<|&(?!amp;|lt;|gt;|quot;|#)")


def teams_fields(activity: Any) -> Iterator[tuple[str, str]]:
    """Every (kind, text) of one activity sent to Teams that Teams parses as Markdown: the
    message text (``message``), TextBlocks and Facts of its cards (``card``), citations'
    cards included. TextRuns are never parsed, so they are not listed."""
    if not isinstance(activity, dict):
        return
    if isinstance(activity.get("text"), str):
        yield "message", activity["text"]
    yield from _in_card(activity.get("attachments") or [])
    for entity in activity.get("entities") or []:
        for claim in entity.get("citation") or []:
            card = (claim.get("appearance") or {}).get("text")
            if isinstance(card, str):
                yield from _in_card(json.loads(card))


def _in_card(value: Any) -> Iterator[tuple[str, str]]:
    if isinstance(value, list):
        for item in value:
            yield from _in_card(item)
    elif isinstance(value, dict):
        if value.get("type") == "TextBlock":
            yield "card", value.get("text", "")
        if value.get("type") == "FactSet":
            for fact in value.get("facts") or []:
                yield "card", fact.get("title", "")
                yield "card", fact.get("value", "")
        for key, item in value.items():
            if key != "facts":
                yield from _in_card(item)


def teams_problems(activity: Any) -> list[str]:
    """Markup from data in one activity: every field Teams would turn into a link (or, in a
    message's text, into HTML)."""
    problems = []
    for kind, text in teams_fields(activity):
        if MARKDOWN_LINK.search(text):
            problems.append(f"{kind} holds a markdown link: {text!r}")
        if kind == "message" and TEAMS_HTML.search(text):
            problems.append(f"{kind} holds HTML: {text!r}")
    return problems
