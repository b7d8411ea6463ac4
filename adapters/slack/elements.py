"""Small Block Kit builders the renderers share: sections, headers, context, buttons.

Each returns plain dicts built through slack_sdk's models (``to_dict`` validates), already cut
to Slack's per-field limits: long section text becomes several sections, long button labels
are truncated, button values that would not fit are refused rather than cut (a cut value
would send a different message when clicked).

>>> [b["type"] for b in sections("x" * 4000)]
['section', 'section']
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal

from slack_sdk.models.blocks import (
    ActionsBlock,
    ButtonElement,
    ContextBlock,
    HeaderBlock,
    MarkdownBlock,
    MarkdownTextObject,
    PlainTextObject,
    SectionBlock,
)

from adapters.slack.escape import escape
from adapters.slack.limits import (
    MAX_ACTIONS,
    MAX_BUTTON_TEXT,
    MAX_BUTTON_URL,
    MAX_BUTTON_VALUE,
    MAX_CONTEXT_ELEMENTS,
    MAX_CONTEXT_TEXT,
    MAX_HEADER_TEXT,
    MAX_MARKDOWN_TOTAL,
    MAX_SECTION_TEXT,
)
from adapters.slack.markdown import truncate
from adapters.text import split_text

log = logging.getLogger(__name__)

ACTION_BUTTON = "threadline_button"
"""``action_id`` prefix of buttons whose value is a message to send on the clicker's behalf."""

SIGN_IN_BUTTON = "threadline_sign_in"
"""``action_id`` of a sign-in button: it opens a page; the click Slack reports is only acked."""

ButtonStyle = Literal["primary", "danger"] | None

STATUS_EMOJI: dict[str, str] = {
    "success": ":white_check_mark:",
    "completed": ":white_check_mark:",
    "info": ":information_source:",
    "warning": ":warning:",
    "error": ":x:",
    "failed": ":x:",
    "running": ":hourglass_flowing_sand:",
    "loading": ":hourglass_flowing_sand:",
    "working": ":hourglass_flowing_sand:",
    "pending": ":white_circle:",
    "idle": ":white_circle:",
}


def status_emoji(status: str | None) -> str:
    """The emoji shown beside a status. ``status_emoji("error") == ":x:"``"""
    return STATUS_EMOJI.get(status or "", ":small_blue_diamond:")


def sections(mrkdwn: str) -> list[dict[str, Any]]:
    """``mrkdwn`` as section blocks of at most 3,000 characters each (none for empty text);
    whatever in it came from a model or data was escaped by the caller."""
    if not mrkdwn.strip():
        return []
    return [
        SectionBlock(text=MarkdownTextObject(text=piece)).to_dict()
        for piece in split_text(mrkdwn, MAX_SECTION_TEXT)
    ]


def markdown_blocks(markdown: str) -> list[dict[str, Any]]:
    """Standard markdown (from a model or data) as ``markdown`` blocks of at most 12,000
    characters each, escaped at this last step (``markdown.escape``)."""
    if not markdown.strip():
        return []
    safe = escape(markdown)
    return [MarkdownBlock(text=piece).to_dict() for piece in split_text(safe, MAX_MARKDOWN_TOTAL)]


def header(title: str) -> list[dict[str, Any]]:
    """A header block (none for an empty title); titles over 150 characters are truncated."""
    if not title.strip():
        return []
    return [HeaderBlock(text=PlainTextObject(text=truncate(title, MAX_HEADER_TEXT))).to_dict()]


def context(*texts: str | None) -> list[dict[str, Any]]:
    """One context block of the non-empty mrkdwn ``texts`` (at most 10, each at most 2,000
    chars); whatever in them came from a model or data was escaped by the caller."""
    elements = [
        MarkdownTextObject(text=truncate(t, MAX_CONTEXT_TEXT)) for t in texts if t and t.strip()
    ]
    if not elements:
        return []
    return [ContextBlock(elements=elements[:MAX_CONTEXT_ELEMENTS]).to_dict()]


def button(
    label: str, value: str, *, action_id: str, style: ButtonStyle = None
) -> ButtonElement | None:
    """A button, or ``None`` when ``value`` is too long to carry (logged)."""
    if len(value) > MAX_BUTTON_VALUE:
        log.warning(
            "slack: dropped button %r: its action is over %d chars", label, MAX_BUTTON_VALUE
        )
        return None
    return ButtonElement(
        text=PlainTextObject(text=truncate(label or "…", MAX_BUTTON_TEXT)),
        action_id=action_id,
        value=value,
        style=style,
    )


def link_button(label: str, url: str, *, action_id: str) -> dict[str, Any] | None:
    """An actions block with one primary button opening ``url``; ``None`` for a URL Slack
    would refuse (not http(s), or longer than a button's URL may be)."""
    if not url.startswith(("https://", "http://")) or len(url) > MAX_BUTTON_URL:
        log.warning("slack: dropped link button %r: its URL cannot be a button's", label)
        return None
    element = ButtonElement(
        text=PlainTextObject(text=truncate(label or "…", MAX_BUTTON_TEXT)),
        action_id=action_id,
        url=url,
        style="primary",
    )
    return ActionsBlock(elements=[element]).to_dict()


def variant_style(variant: str | None) -> ButtonStyle:
    if variant in ("primary", "success"):
        return "primary"
    if variant in ("error", "warning"):
        return "danger"
    return None


def action_buttons(specs: Sequence[tuple[str, str, str | None]]) -> list[dict[str, Any]]:
    """Actions blocks for ``(label, message, variant)`` buttons; 25 buttons per block.

    Each button's ``action_id`` is ``threadline_button:<n>`` (unique within the message) and
    its value the message sent when it is clicked.
    """
    elements = [
        b
        for n, (label, action, variant) in enumerate(specs)
        if (
            b := button(
                label, action, action_id=f"{ACTION_BUTTON}:{n}", style=variant_style(variant)
            )
        )
    ]
    return [
        ActionsBlock(elements=elements[i : i + MAX_ACTIONS]).to_dict()
        for i in range(0, len(elements), MAX_ACTIONS)
    ]


def dict_actions(actions: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Buttons from card/notification ``actions`` (``{"label": ..., "action": ...}``)."""
    specs = [
        (str(a.get("label") or a.get("action")), str(a["action"]), a.get("variant"))
        for a in actions
        if a.get("action")
    ]
    return action_buttons(specs)
