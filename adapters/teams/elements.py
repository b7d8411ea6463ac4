"""Adaptive Card 1.5 element builders: small functions that return the card's JSON.

Everything here is plain dicts in the schema's shape, so a card is built by composition and
checked against the official schema in tests::

    >>> card([text_block("Hello", weight="Bolder")])["body"][0]
    {'type': 'TextBlock', 'text': 'Hello', 'wrap': True, 'weight': 'Bolder'}

Text from a model or from data is made inert here, at the last step: Teams renders card
Markdown (bold, italic, lists, links) in every TextBlock and Fact, so ``text_block`` and
``fact_set`` break link syntax (``escape.escape_card``: ``[Reset your password](https://...)``
shows as text, never as a disguised link), and text that should not be Markdown at all (a
table cell, a title, a value) is a ``plain_block``: a RichTextBlock whose TextRuns Teams
never parses. No element here makes a link.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from adapters.teams.escape import escape_card

CARD_CONTENT_TYPE = "application/vnd.microsoft.card.adaptive"
CARD_VERSION = "1.5"
ACTION_VERB = "threadline.action"
"""The ``Action.Execute`` verb of every button Threadline renders; data carries the message."""

Element = dict[str, Any]
Weight = Literal["Lighter", "Default", "Bolder"]
Size = Literal["Small", "Default", "Medium", "Large", "ExtraLarge"]
ContainerStyle = Literal["default", "emphasis", "good", "attention", "warning", "accent"]
Color = Literal["Default", "Dark", "Light", "Accent", "Good", "Warning", "Attention"]


def text_block(
    text: str,
    *,
    weight: Weight | None = None,
    size: Size | None = None,
    color: Color | None = None,
    subtle: bool = False,
    separator: bool = False,
) -> Element:
    """A wrapping TextBlock; its text may use the card markdown subset (bold, italic, lists),
    never a link (``inert_markdown``)."""
    block = _styled(
        {"type": "TextBlock", "text": escape_card(text), "wrap": True},
        weight=weight,
        size=size,
        color=color,
        subtle=subtle,
    )
    if separator:
        block["separator"] = True
    return block


def plain_block(
    text: str,
    *,
    weight: Weight | None = None,
    size: Size | None = None,
    color: Color | None = None,
    subtle: bool = False,
) -> Element:
    """Text shown exactly as given, styled like a ``text_block``: a RichTextBlock with one
    TextRun, which Teams never parses as Markdown (data: table cells, titles, values).

    >>> plain_block("[x](https://evil.example)", weight="Bolder")["inlines"][0]
    {'type': 'TextRun', 'text': '[x](https://evil.example)', 'weight': 'Bolder'}
    """
    run = _styled(
        {"type": "TextRun", "text": text}, weight=weight, size=size, color=color, subtle=subtle
    )
    return {"type": "RichTextBlock", "inlines": [run]}


def _styled(
    element: Element,
    *,
    weight: Weight | None,
    size: Size | None,
    color: Color | None,
    subtle: bool,
) -> Element:
    """``element`` with the text style given (TextBlocks and TextRuns share the names)."""
    style = {"weight": weight, "size": size, "color": color, "isSubtle": subtle or None}
    return element | {name: value for name, value in style.items() if value}


def monospace_block(text: str) -> Element:
    """Literal text in a monospace font: a RichTextBlock, whose TextRuns are never parsed as
    markdown (TextBlocks would turn ``*`` and ``_`` in code into formatting)."""
    return {
        "type": "RichTextBlock",
        "inlines": [{"type": "TextRun", "text": text, "fontType": "Monospace"}],
    }


def container(items: Sequence[Element], *, style: ContainerStyle | None = None) -> Element:
    element: Element = {"type": "Container", "items": list(items)}
    if style:
        element["style"] = style
    return element


def fact_set(facts: Sequence[tuple[str, str]]) -> Element:
    """A FactSet; Teams renders Markdown in titles and values, so neither may make a link."""
    return {
        "type": "FactSet",
        "facts": [{"title": escape_card(t), "value": escape_card(v)} for t, v in facts],
    }


def image(url: str, alt_text: str) -> Element:
    return {"type": "Image", "url": url, "altText": alt_text, "size": "Stretch"}


def table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    align: Sequence[Literal["Left", "Center", "Right"]] | None = None,
    markdown: bool = False,
) -> Element:
    """A Table whose first row is ``header`` (bold); cells show their text as it is
    (``plain_block``), or as card Markdown without links for a table the model wrote in
    Markdown (``markdown=True``)."""
    block = text_block if markdown else plain_block

    def cell(text: str, bold: bool = False) -> Element:
        return {"type": "TableCell", "items": [block(text, weight="Bolder" if bold else None)]}

    columns: list[Element] = []
    for index in range(len(header)):
        column: Element = {"type": "TableColumnDefinition", "width": 1}
        if align and index < len(align) and align[index] != "Left":
            column["horizontalCellContentAlignment"] = align[index]
        columns.append(column)
    body_rows = [{"type": "TableRow", "cells": [cell(h, bold=True) for h in header]}]
    body_rows += [{"type": "TableRow", "cells": [cell(c) for c in row]} for row in rows]
    return {
        "type": "Table",
        "columns": columns,
        "rows": body_rows,
        "firstRowAsHeader": True,
        "gridStyle": "accent",
    }


def execute_action(title: str, message: str, *, style: str | None = None) -> Element:
    """A button that sends ``message`` to the agent as if the clicker had typed it.

    ``Action.Execute`` reaches the bot as an ``adaptiveCard/action`` invoke from the person who
    clicked (verb ``threadline.action``, data ``{"threadline_action": message}``).
    """
    action: Element = {
        "type": "Action.Execute",
        "title": title,
        "verb": ACTION_VERB,
        "data": {"threadline_action": message},
    }
    if style in ("positive", "destructive"):
        action["style"] = style
    return action


def open_url_action(title: str, url: str) -> Element:
    """A button opening ``url`` in the clicker's browser (a sign-in page); nothing reaches
    the bot when it is clicked."""
    return {"type": "Action.OpenUrl", "title": title, "url": url, "style": "positive"}


def submit_action(title: str, message: str) -> Element:
    """A ``messageBack`` button: Teams posts ``message`` for the clicker, showing ``title``.

    Used where ``Action.Execute`` is not rendered (older clients take it as fallback).
    """
    return {
        "type": "Action.Submit",
        "title": title,
        "data": {
            "threadline_action": message,
            "msteams": {"type": "messageBack", "text": message, "displayText": title},
        },
    }


def card(
    body: Sequence[Element],
    actions: Sequence[Element] = (),
    *,
    fallback_text: str | None = None,
    full_width: bool = False,
) -> Element:
    """An AdaptiveCard 1.5; ``full_width`` asks Teams to use the message's whole width."""
    result: Element = {
        "type": "AdaptiveCard",
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "version": CARD_VERSION,
        "body": list(body),
    }
    if actions:
        result["actions"] = list(actions)
    if fallback_text:
        result["fallbackText"] = fallback_text[:300]
    if full_width:
        result["msteams"] = {"width": "Full"}
    return result


def attachment(content: Element) -> Element:
    """The message attachment that carries an Adaptive Card."""
    return {"contentType": CARD_CONTENT_TYPE, "content": content}
