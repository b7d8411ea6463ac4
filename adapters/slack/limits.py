"""Slack's message limits, and the one place blocks are validated and packed into messages.

Every block the renderer produces goes through ``validate_block`` (slack_sdk's models, whose
``to_dict`` raises ``SlackObjectFormationError`` on over-long fields), so a limit we missed
fails in tests instead of as ``invalid_blocks`` in production. ``pack_messages`` then splits
a list of blocks into as many messages as Slack's per-message limits require.

>>> from slack_sdk.models.blocks import DividerBlock
>>> blocks = [DividerBlock().to_dict() for _ in range(120)]
>>> [len(m.blocks) for m in pack_messages(blocks, text="lines")]
[50, 50, 20]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import Block

from adapters.slack.charts import DataVisualizationBlock
from adapters.slack.markdown import truncate

MAX_BLOCKS = 50
MAX_SECTION_TEXT = 3000
MAX_MARKDOWN_TOTAL = 12000
MAX_HEADER_TEXT = 150
MAX_CONTEXT_ELEMENTS = 10
MAX_CONTEXT_TEXT = 2000
MAX_ACTIONS = 25
MAX_BUTTON_TEXT = 75
MAX_BUTTON_VALUE = 2000
MAX_TEXT_FALLBACK = 4000
MAX_TABLE_ROWS = 100
MAX_TABLE_COLUMNS = 20
MAX_TABLES_PER_MESSAGE = 1
MAX_CHARTS_PER_MESSAGE = 2


@dataclass(frozen=True)
class FileUpload:
    """A file to upload into the thread with ``files_upload_v2`` (CSV of a big table, a PNG).

    >>> FileUpload(filename="rows.csv", content=b"a,b\\n", title="rows").filename
    'rows.csv'
    """

    filename: str
    content: bytes
    title: str
    alt_text: str | None = None


@dataclass
class SlackMessage:
    """One message to post: ``blocks``, the ``text`` fallback and files to attach after it.

    A message with files and no blocks is posted as the upload itself (``text`` becomes the
    upload's comment).

    >>> SlackMessage(text="hi").blocks
    []
    """

    text: str
    blocks: list[dict[str, Any]] = field(default_factory=list)
    files: list[FileUpload] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.text = truncate(self.text, MAX_TEXT_FALLBACK)


def validate_block(block: dict[str, Any]) -> dict[str, Any]:
    """Round-trip ``block`` through slack_sdk's model; raises on any broken limit or field.

    >>> validate_block({"type": "header", "text": {"type": "plain_text", "text": "x" * 151}})
    Traceback (most recent call last):
    ...
    slack_sdk.errors.SlackObjectFormationError: text attribute cannot exceed 150 characters
    """
    if block.get("type") == DataVisualizationBlock.type:
        fields = {k: v for k, v in block.items() if k != "type"}
        return DataVisualizationBlock(**fields).to_dict()
    parsed = Block.parse(block)
    if parsed is None:
        raise SlackObjectFormationError(f"unknown block type {block.get('type')!r}")
    return parsed.to_dict()


def _markdown_size(block: dict[str, Any]) -> int:
    return len(block["text"]) if block.get("type") == "markdown" else 0


class _Budget:
    """What the message being packed has used so far."""

    def __init__(self) -> None:
        self.blocks = 0
        self.markdown = 0
        self.tables = 0
        self.charts = 0

    def fits(self, block: dict[str, Any]) -> bool:
        kind = block.get("type")
        return (
            self.blocks + 1 <= MAX_BLOCKS
            and self.markdown + _markdown_size(block) <= MAX_MARKDOWN_TOTAL
            and (kind != "table" or self.tables < MAX_TABLES_PER_MESSAGE)
            and (kind != "data_visualization" or self.charts < MAX_CHARTS_PER_MESSAGE)
        )

    def add(self, block: dict[str, Any]) -> None:
        self.blocks += 1
        self.markdown += _markdown_size(block)
        self.tables += block.get("type") == "table"
        self.charts += block.get("type") == "data_visualization"


def pack_messages(
    blocks: Sequence[dict[str, Any]],
    *,
    text: str,
    files: Iterable[FileUpload] = (),
) -> list[SlackMessage]:
    """Validate ``blocks`` and split them into messages within every per-message limit.

    Files ride on the last message; no blocks and no files means no message. A markdown block
    over 12,000 chars is a caller bug (split the text first) and raises.
    """
    messages: list[list[dict[str, Any]]] = [[]]
    budget = _Budget()
    for block in blocks:
        checked = validate_block(block)
        if not budget.fits(checked):
            messages.append([])
            budget = _Budget()
            if not budget.fits(checked):
                raise SlackObjectFormationError("block exceeds a per-message limit on its own")
        messages[-1].append(checked)
        budget.add(checked)
    packed = [SlackMessage(text=text, blocks=group) for group in messages if group]
    uploads = list(files)
    if not packed and uploads:
        packed = [SlackMessage(text=text)]
    if packed:
        packed[-1].files.extend(uploads)
    return packed
