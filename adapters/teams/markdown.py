"""Markdown (as LLMs write it) -> what Teams renders.

Teams renders two markdown dialects, both subsets:

* **message text** (``textFormat: markdown``): bold, italic, strikethrough, headers 1-3, lists,
  code blocks, block quotes, links; no tables. ``message_markdown`` clamps headers and lifts
  tables out, to be shown as Adaptive Card ``Table`` elements.
* **card TextBlocks**: bold, italic, lists and links only. ``card_elements`` turns each block
  into the element that renders it: headers -> bold TextBlocks, fenced code -> a monospace
  RichTextBlock (never parsed as markdown), tables -> ``Table``, quotes -> an emphasis
  Container, images -> ``Image``.

>>> [e["type"] for e in card_elements("# Title\\n\\n| a | b |\\n|---|---|\\n| 1 | 2 |")]
['TextBlock', 'Table']
>>> message_markdown("#### Deep\\ntext").text
'### Deep\\ntext'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from adapters.teams import elements

Align = Literal["Left", "Center", "Right"]

_FENCE = re.compile(r"^\s{0,3}(```|~~~)\s*([\w+#.-]*)\s*$")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_RULE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$")
_IMAGE_LINE = re.compile(r"^\s*!\[([^\]]*)\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)\s*$")
_QUOTE = re.compile(r"^\s{0,3}>\s?(.*)$")
_DOUBLE_UNDERSCORE_BOLD = re.compile(r"(?<![\w_])__(?=\S)(.+?)(?<=\S)__(?![\w_])")
_STRIKE = re.compile(r"~~(.+?)~~")


@dataclass(slots=True)
class TableBlock:
    """A pipe table: header cells, body rows (padded to the header), column alignment.

    >>> TableBlock(["a"], [["1"]], ["Right"]).align
    ['Right']
    """

    header: list[str]
    rows: list[list[str]]
    align: list[Align]


@dataclass(slots=True)
class Block:
    """One markdown block: ``kind`` says which; ``text`` its content.

    >>> parse_blocks("## Hi")[0].level
    2
    """

    kind: Literal["paragraph", "heading", "code", "table", "quote", "rule", "image"]
    text: str = ""
    level: int = 0
    language: str = ""
    url: str = ""
    table: TableBlock | None = None


@dataclass(slots=True)
class MessageMarkdown:
    """Message text Teams renders, plus the tables lifted out of it (as card elements).

    >>> len(message_markdown("| a |\\n|---|\\n| 1 |").tables)
    1
    """

    text: str
    tables: list[elements.Element] = field(default_factory=list)


def _split_row(line: str) -> list[str]:
    stripped = line.strip()
    if stripped.startswith("|"):
        stripped = stripped[1:]
    if stripped.endswith("|") and not stripped.endswith("\\|"):
        stripped = stripped[:-1]
    cells = re.split(r"(?<!\\)\|", stripped)
    return [cell.strip().replace("\\|", "|") for cell in cells]


def _alignment(cell: str) -> Align:
    cell = cell.strip()
    if cell.startswith(":") and cell.endswith(":"):
        return "Center"
    return "Right" if cell.endswith(":") else "Left"


def _is_table_start(lines: list[str], index: int) -> bool:
    return (
        index + 1 < len(lines)
        and "|" in lines[index]
        and "-" in lines[index + 1]
        and _TABLE_SEPARATOR.match(lines[index + 1]) is not None
    )


def _read_table(lines: list[str], index: int) -> tuple[Block, int]:
    header = _split_row(lines[index])
    align = [_alignment(c) for c in _split_row(lines[index + 1])]
    width = len(header)
    rows: list[list[str]] = []
    index += 2
    while index < len(lines) and "|" in lines[index] and lines[index].strip():
        cells = _split_row(lines[index])
        rows.append((cells + [""] * width)[:width])
        index += 1
    align = (align + ["Left"] * width)[:width]
    return Block("table", table=TableBlock(header, rows, align)), index


def _read_fence(lines: list[str], index: int, fence: str, language: str) -> tuple[Block, int]:
    body: list[str] = []
    index += 1
    while index < len(lines) and not lines[index].strip().startswith(fence):
        body.append(lines[index])
        index += 1
    return Block("code", text="\n".join(body), language=language), index + 1


def _starts_block(lines: list[str], index: int) -> bool:
    line = lines[index]
    return bool(
        not line.strip()
        or _FENCE.match(line)
        or _HEADING.match(line)
        or _RULE.match(line)
        or _QUOTE.match(line)
        or _IMAGE_LINE.match(line)
        or _is_table_start(lines, index)
    )


def _read_single(lines: list[str], index: int) -> tuple[Block | None, int]:
    """The one-line block kinds (and quotes, which run while lines start with ``>``)."""
    line = lines[index]
    if heading := _HEADING.match(line):
        return Block("heading", text=heading.group(2), level=len(heading.group(1))), index + 1
    if _RULE.match(line):
        return Block("rule"), index + 1
    if picture := _IMAGE_LINE.match(line):
        return Block("image", text=picture.group(1), url=picture.group(2)), index + 1
    if _QUOTE.match(line):
        quoted: list[str] = []
        while index < len(lines) and (quote := _QUOTE.match(lines[index])):
            quoted.append(quote.group(1))
            index += 1
        return Block("quote", text="\n".join(quoted)), index
    return None, index


def parse_blocks(markdown: str) -> list[Block]:
    """Split markdown into blocks; lists stay inside paragraphs (both dialects render them)."""
    lines = markdown.replace("\r\n", "\n").split("\n")
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if not line.strip():
            index += 1
            continue
        if fence := _FENCE.match(line):
            block, index = _read_fence(lines, index, fence.group(1), fence.group(2))
        elif _is_table_start(lines, index):
            block, index = _read_table(lines, index)
        else:
            single, index = _read_single(lines, index)
            if single is None:
                paragraph = [line]
                index += 1
                while index < len(lines) and not _starts_block(lines, index):
                    paragraph.append(lines[index])
                    index += 1
                single = Block("paragraph", text="\n".join(paragraph))
            block = single
        blocks.append(block)
    return blocks


def card_inline(text: str) -> str:
    """Inline markdown the card subset lacks, rewritten: ``__bold__`` -> ``**bold**``,
    ``~~struck~~`` -> plain text."""
    return _STRIKE.sub(r"\1", _DOUBLE_UNDERSCORE_BOLD.sub(r"**\1**", text))


def table_element(block: TableBlock) -> elements.Element:
    return elements.table(
        [card_inline(h) for h in block.header],
        [[card_inline(c) for c in row] for row in block.rows],
        align=block.align,
        markdown=True,
    )


_HEADING_SIZES: dict[int, Literal["Large", "Medium", "Default"]] = {1: "Large", 2: "Medium"}


def _card_element(block: Block, separator: bool) -> elements.Element | None:
    element: elements.Element | None
    match block.kind:
        case "heading":
            size = _HEADING_SIZES.get(block.level, "Default")
            element = elements.text_block(card_inline(block.text), weight="Bolder", size=size)
        case "code":
            element = elements.container([elements.monospace_block(block.text)], style="emphasis")
        case "table":
            element = table_element(block.table) if block.table else None
        case "quote":
            element = elements.container(
                [elements.text_block(card_inline(block.text))], style="emphasis"
            )
        case "image":
            element = elements.image(block.url, block.text or "image")
        case "rule":
            element = None
        case _:
            element = elements.text_block(card_inline(block.text))
    if element is not None and separator:
        element["separator"] = True
    return element


def card_elements(markdown: str) -> list[elements.Element]:
    """Card body elements that render ``markdown`` as closely as Teams cards allow."""
    body: list[elements.Element] = []
    separator = False
    for block in parse_blocks(markdown):
        element = _card_element(block, separator)
        separator = block.kind == "rule"
        if element is not None:
            body.append(element)
    return body


def message_markdown(markdown: str, *, table_note: str = "_(table below)_") -> MessageMarkdown:
    """Markdown for a message's ``text``: headers clamped to level 3, tables lifted out.

    Each lifted table leaves ``table_note`` in the text so the prose still reads in order.
    """
    if "|" not in markdown and "####" not in markdown:
        return MessageMarkdown(markdown)
    lines = markdown.replace("\r\n", "\n").split("\n")
    out: list[str] = []
    tables: list[elements.Element] = []
    index = 0
    in_fence: str | None = None
    while index < len(lines):
        line = lines[index]
        fence = _FENCE.match(line)
        if fence and (in_fence is None or line.strip().startswith(in_fence)):
            in_fence = fence.group(1) if in_fence is None else None
        elif in_fence is None and _is_table_start(lines, index):
            block, index = _read_table(lines, index)
            if block.table is not None:
                tables.append(table_element(block.table))
            out.append(table_note)
            continue
        elif in_fence is None and (heading := _HEADING.match(line)):
            level = min(len(heading.group(1)), 3)
            line = f"{'#' * level} {heading.group(2)}"
        out.append(line)
        index += 1
    return MessageMarkdown("\n".join(out), tables)
