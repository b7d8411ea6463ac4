"""An MCP tool's answer (``CallToolResult``) as a Threadline ``ToolResult``.

- text is text; an error result (``isError``) is a failed result the model reads and can
  correct itself from;
- an image is shown as an image (PNG, JPEG, GIF, WebP, at most ``MAX_IMAGE_BYTES``), and the
  model is told one was shown;
- structured content that is tabular (a list of records, alone or as the one list in an
  object) is shown as a table; the model reads it as JSON;
- resource links are links (clickable for people where they are http(s));
- other content (audio, binary resources) is named, not shown.

Everything is masked (``McpMasker``) before anyone sees it, and what the model reads is cut
at the server's ``max_result_chars``, saying so.

>>> from mcp.types import CallToolResult, TextContent
>>> result = to_tool_result(
...     CallToolResult(content=[TextContent(type="text", text="x" * 50)]), max_chars=20
... )
>>> print(result.result_for_llm)
xxxxxxxxxxxxxxxxxxxx
[cut: the result was 50 characters; only the first 20 are shown]
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from agent_core.components import (
    CardComponent,
    DataFrameComponent,
    ImageComponent,
    SimpleImageComponent,
    SimpleTextComponent,
    UiComponent,
)
from agent_core.components.images import IMAGE_TYPES, image_data_uri
from agent_core.mcp.masking import McpMasker
from agent_core.tool_contract import ToolResult

if TYPE_CHECKING:
    from mcp.types import CallToolResult

MAX_IMAGE_BYTES = 5_000_000
"""The largest image shown; larger ones are named instead."""
MAX_TABLE_ROWS = 100
MAX_CELL_CHARS = 500
LINK_SCHEMES = ("https://", "http://")
"""Links people may click; any other scheme is shown as text."""
MAX_LABEL_CHARS = 200
_MARKUP = re.compile(r"[\[\]()<>*_~`|\\#!]|\s+")
"""What could make a server's label a different link, a mention or markup (Slack's ``<!...>``,
Markdown's ``[...](...)``, emphasis, headings): each becomes a space."""
_URL_SAFE = ":/?#@$&'*+,;=%-._~"
"""Characters a link's address keeps as they are (``(``, ``)``, ``<``, ``>``, ``|``, spaces and
the rest are percent-encoded, so the address cannot end the link early)."""


def label(text: str) -> str:
    """A server's name for something, as plain words: no markup, mention or link survives.

    >>> label("<!channel> [x](javascript:alert(1)) *Q3*")
    'channel x javascript:alert 1 Q3'
    """
    return " ".join(_MARKUP.sub(" ", text).split())[:MAX_LABEL_CHARS] or "link"


def link_target(uri: str) -> str:
    """``uri`` with whatever could end a Markdown or Slack link percent-encoded.

    >>> link_target("https://r.example/a) [b](https://evil.example")
    'https://r.example/a%29%20%5Bb%5D%28https://evil.example'
    """
    return quote(uri, safe=_URL_SAFE)


def _size(count: int) -> str:
    return f"{count / 1000:,.0f} KB" if count >= 1000 else f"{count} bytes"


@dataclass
class _Reading:
    """What the content blocks of one result add up to."""

    masker: McpMasker
    texts: list[str] = field(default_factory=list)
    images: list[UiComponent] = field(default_factory=list)
    links: list[str] = field(default_factory=list)

    def text(self, text: str) -> None:
        self.texts.append(self.masker.mask(text))

    def image(self, data: str, mime_type: str) -> None:
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            self.texts.append("[an image that could not be read]")
            return
        url = image_data_uri(mime_type, raw) if len(raw) <= MAX_IMAGE_BYTES else None
        if url is None:
            why = "too large" if mime_type in IMAGE_TYPES else "of a type not shown"
            self.texts.append(f"[an image ({mime_type}, {_size(len(raw))}): {why}]")
            return
        alt = f"image from the tool ({mime_type})"
        rich = ImageComponent(url=url, alt_text=alt)
        self.images.append(
            UiComponent(
                rich_component=rich, simple_component=SimpleImageComponent(url=url, alt_text=alt)
            )
        )
        self.texts.append(f"[an image ({mime_type}, {_size(len(raw))}), shown to the person]")

    def link(self, uri: str, name: str, description: str | None) -> None:
        uri, name = self.masker.mask(uri), self.masker.mask(name)
        about = f" ({self.masker.mask(description)})" if description else ""
        if uri.startswith(LINK_SCHEMES):
            self.texts.append(f"[{name}]({uri}){about}")
            words = f" ({label(self.masker.mask(description))})" if description else ""
            self.links.append(f"- [{label(name)}]({link_target(uri)}){words}")
        else:
            self.texts.append(f"{name}: {uri}{about}")

    def read(self, block: Any) -> None:
        match getattr(block, "type", None):
            case "text":
                self.text(block.text)
            case "image":
                self.image(block.data, block.mime_type)
            case "resource_link":
                self.link(str(block.uri), block.title or block.name, block.description)
            case "resource":
                self.resource(block.resource)
            case kind:
                self.texts.append(f"[{kind or 'unknown'} content, not shown]")

    def resource(self, resource: Any) -> None:
        uri = self.masker.mask(str(resource.uri))
        text = getattr(resource, "text", None)
        if isinstance(text, str):
            self.texts.append(f"{uri}:\n{self.masker.mask(text)}")
        else:
            kind = resource.mime_type or "binary"
            self.texts.append(f"[{uri}: {kind} content, not shown]")


def _cell(value: Any, masker: McpMasker) -> Any:
    if isinstance(value, str):
        return masker.mask(value[:MAX_CELL_CHARS])
    if value is None or isinstance(value, bool | int | float):
        return value
    return masker.mask(json.dumps(value, default=str)[:MAX_CELL_CHARS])


def tabular(structured: Any) -> tuple[str | None, list[dict[str, Any]]] | None:
    """``(title, rows)`` when ``structured`` is a table: a list of records, alone or as the
    one list of records of an object (``{"result": [...]}``, ``{"tickets": [...], ...}``).

    >>> tabular({"total": 2, "tickets": [{"id": 1}, {"id": 2}]})
    ('tickets', [{'id': 1}, {'id': 2}])
    >>> tabular({"id": 1}) is None
    True
    """

    def records(value: Any) -> bool:
        return isinstance(value, list) and bool(value) and all(isinstance(r, dict) for r in value)

    if records(structured):
        return None, structured
    if isinstance(structured, dict):
        lists = [(key, value) for key, value in structured.items() if records(value)]
        if len(lists) == 1:
            key, rows = lists[0]
            return (None if key == "result" else key), rows
    return None


def _table(structured: Any, masker: McpMasker, tool: str) -> UiComponent | None:
    found = tabular(structured)
    if found is None:
        return None
    title, rows = found
    shown = [{k: _cell(v, masker) for k, v in row.items()} for row in rows[:MAX_TABLE_ROWS]]
    table = DataFrameComponent.from_records(
        shown, title=label(title) if title else tool, total_rows=len(rows)
    )
    return UiComponent(
        rich_component=table,
        simple_component=SimpleTextComponent(text=f"{table.title}: {len(rows)} rows"),
    )


def cut(text: str, max_chars: int) -> str:
    """``text`` within ``max_chars``, saying how much there was when it had to be cut."""
    if len(text) <= max_chars:
        return text
    return (
        f"{text[:max_chars]}\n[cut: the result was {len(text):,} characters; "
        f"only the first {max_chars:,} are shown]"
    )


def _shown(reading: _Reading, table: UiComponent | None) -> UiComponent | None:
    """What people see of the result besides the model's answer: the table, else the first
    image, else the links."""
    if table is not None:
        return table
    if reading.images:
        return reading.images[0]
    if reading.links:
        text = "\n".join(reading.links)
        card = CardComponent(title="Links", content=text, markdown=True)
        return UiComponent.of(card, text)
    return None


def to_tool_result(
    result: CallToolResult,
    *,
    max_chars: int,
    masker: McpMasker | None = None,
    tool: str = "the tool",
) -> ToolResult:
    """``result`` as a ``ToolResult``; see the module docstring."""
    masker = masker or McpMasker()
    reading = _Reading(masker)
    for block in result.content:
        reading.read(block)
    structured = result.structured_content
    if structured is not None and not reading.texts:
        reading.text(json.dumps(structured, default=str, ensure_ascii=False))
    text = cut("\n".join(reading.texts), max_chars)
    if result.is_error:
        message = text or "the tool reported an error without saying which"
        return ToolResult(
            success=False,
            result_for_llm=f"{tool} failed: {message}",
            error=message,
            metadata={"error_type": "tool_error"},
        )
    table = _table(structured, masker, tool) if structured is not None else None
    return ToolResult(
        success=True, result_for_llm=text or "(no content)", ui_component=_shown(reading, table)
    )
