"""Slack's message limits, and the one place blocks are validated and packed into messages.

Every block the renderer produces goes through ``validate_block`` (slack_sdk's models, whose
``to_dict`` raises ``SlackObjectFormationError`` on over-long fields), so a limit we missed
fails in tests instead of as ``invalid_blocks`` in production. ``pack_messages`` then splits
a list of blocks into as many messages as Slack's per-message limits require.

slack_sdk 3.47 has no model for the native chart block yet, so ``DataVisualizationBlock`` is
one, in the same style, holding Slack's chart limits: title <= 50 chars; pie 1-6 positive
segments; bar/line/area 1-6 uniquely named series over 1-20 shared categories with one
finite value per category; labels <= 20 chars; axis titles <= 50 chars.

>>> from slack_sdk.models.blocks import DividerBlock
>>> blocks = [DividerBlock().to_dict() for _ in range(120)]
>>> [len(m.blocks) for m in pack_messages(blocks, text="lines")]
[50, 50, 20]
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.basic_objects import JsonValidator
from slack_sdk.models.blocks import Block

from adapters.slack.escape import escape
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
MAX_BUTTON_URL = 3000
MAX_TEXT_FALLBACK = 4000
MAX_TABLE_ROWS = 100
MAX_TABLE_COLUMNS = 20
MAX_TABLES_PER_MESSAGE = 1
MAX_CHARTS_PER_MESSAGE = 2
MAX_PLAN_TASKS = 40
"""Task cards in one plan: Slack documents no cap, so a plan stays well inside the 50
blocks of a message, as if each task card counted as one (``adapters.tasks`` folds the rest
into one "N more steps" task)."""
MAX_TASK_TITLE = 150
MAX_TASK_DETAIL = 500

TITLE_MAX = 50
LABEL_MAX = 20
AXIS_TITLE_MAX = 50
SERIES_MAX = 6
SEGMENTS_MAX = 6
CATEGORIES_MAX = 20


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _points_ok(points: Any, labels: Sequence[str] | None) -> bool:
    if not isinstance(points, list) or not points:
        return False
    seen = [p.get("label") for p in points if isinstance(p, dict)]
    if len(seen) != len(points) or any(not isinstance(s, str) or len(s) > LABEL_MAX for s in seen):
        return False
    if labels is not None and seen != list(labels):
        return False
    return all(_finite(p.get("value")) for p in points)


def _series_chart_ok(chart: dict[str, Any]) -> bool:
    axis = chart.get("axis_config") or {}
    categories = axis.get("categories")
    series = chart.get("series")
    if not isinstance(categories, list) or not 1 <= len(categories) <= CATEGORIES_MAX:
        return False
    if not isinstance(series, list) or not 1 <= len(series) <= SERIES_MAX:
        return False
    names = [s.get("name") for s in series]
    if len(set(names)) != len(names) or any(not n or len(n) > LABEL_MAX for n in names):
        return False
    titles_ok = all(len(axis.get(k) or "") <= AXIS_TITLE_MAX for k in ("x_label", "y_label"))
    return titles_ok and all(_points_ok(s.get("data"), categories) for s in series)


def chart_is_valid(chart: Any) -> bool:
    """True when ``chart`` is a ``pie``/``bar``/``line``/``area`` payload within Slack's limits."""
    if not isinstance(chart, dict):
        return False
    kind = chart.get("type")
    if kind == "pie":
        segments = chart.get("segments")
        return (
            isinstance(segments, list)
            and 1 <= len(segments) <= SEGMENTS_MAX
            and _points_ok(segments, None)
            and all(s["value"] > 0 for s in segments)
        )
    return kind in {"bar", "line", "area"} and _series_chart_ok(chart)


class DataVisualizationBlock(Block):
    """A native chart block; ``to_dict`` validates it like slack_sdk's own blocks.

    >>> DataVisualizationBlock(title="Share", chart={"type": "pie", "segments": [
    ...     {"label": "a", "value": 1}]}).to_dict()["type"]
    'data_visualization'
    """

    type = "data_visualization"
    attributes = {"block_id", "type", "title", "chart"}  # noqa: RUF012 (slack_sdk's shape)

    def __init__(self, *, title: str, chart: dict[str, Any], block_id: str | None = None) -> None:
        super().__init__(type=self.type, block_id=block_id)
        self.title = title
        self.chart = chart

    @JsonValidator(f"title attribute must be 1..{TITLE_MAX} characters")
    def _validate_title(self) -> bool:
        return 1 <= len(self.title) <= TITLE_MAX

    @JsonValidator("chart must be a pie/bar/line/area chart within Slack's limits")
    def _validate_chart(self) -> bool:
        return chart_is_valid(self.chart)


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

    ``text`` is mrkdwn as sent: escaped already (``pack_messages`` escapes the plain text it
    is given; whoever builds a ``SlackMessage`` directly escapes it). A message with files
    and no blocks is posted as the upload itself (``text`` becomes the upload's comment).

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

    ``text`` is the plain-text fallback (notifications, screen readers): it is escaped here,
    the last step before Slack reads it as mrkdwn. Files ride on the last message; no blocks
    and no files means no message. A markdown block over 12,000 chars is a caller bug (split
    the text first) and raises.
    """
    text = escape(text) if text.strip() else "…"  # Slack wants a fallback; never empty
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
