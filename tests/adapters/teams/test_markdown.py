"""adapters.teams.markdown: LLM markdown -> Teams message markdown and card elements."""

from __future__ import annotations

from adapters.teams import elements
from adapters.teams.limits import pack, payload_size, text_parts
from adapters.teams.markdown import card_elements, message_markdown, parse_blocks
from tests.adapters.teams.schemas import assert_valid_card

ANSWER = """# Quarterly report

Sales **rose** 12% and __margins__ held. ~~Old number~~ fixed.

## Breakdown

| Region | Sales | Share |
|:-------|------:|:-----:|
| EU | 1,200 | 40% |
| US \\| CA | 1,800 | 60% |

```sql
SELECT * FROM sales WHERE a_b = 1 -- *not* markdown
```

> Note: preliminary

---

![trend](https://example.com/t.png)

- one
- two
"""


def test_blocks_are_recognised() -> None:
    kinds = [b.kind for b in parse_blocks(ANSWER)]
    assert kinds == [
        "heading",
        "paragraph",
        "heading",
        "table",
        "code",
        "quote",
        "rule",
        "image",
        "paragraph",
    ]


def test_card_elements_render_each_block_and_validate() -> None:
    body = card_elements(ANSWER)
    assert_valid_card(elements.card(body))
    heading, paragraph, subheading, table, code, quote, image, bullets = body
    assert heading == elements.text_block("Quarterly report", weight="Bolder", size="Large")
    assert paragraph["text"] == "Sales **rose** 12% and **margins** held. Old number fixed."
    assert subheading["size"] == "Medium"
    assert [c.get("horizontalCellContentAlignment") for c in table["columns"]] == [
        None,
        "Right",
        "Center",
    ]
    assert table["rows"][2]["cells"][0]["items"][0]["text"] == "US | CA"
    assert code["items"][0]["inlines"][0]["text"].endswith("-- *not* markdown")
    assert code["items"][0]["inlines"][0]["fontType"] == "Monospace"
    assert quote["style"] == "emphasis"
    assert image["url"] == "https://example.com/t.png" and image["separator"] is True
    assert bullets["text"] == "- one\n- two"


def test_ragged_table_rows_are_padded_and_cut_to_the_header() -> None:
    (table,) = card_elements("| a | b |\n|---|---|\n| 1 |\n| 1 | 2 | 3 |")
    assert [len(r["cells"]) for r in table["rows"]] == [2, 2, 2]


def test_unclosed_fence_runs_to_the_end() -> None:
    (code,) = card_elements("```\nline 1\nline 2")
    assert code["items"][0]["inlines"][0]["text"] == "line 1\nline 2"


def test_message_markdown_lifts_tables_and_clamps_headers() -> None:
    result = message_markdown(ANSWER)
    assert "| EU |" not in result.text
    assert "_(table below)_" in result.text
    assert len(result.tables) == 1 and result.tables[0]["type"] == "Table"
    assert result.text.startswith("# Quarterly report")
    assert message_markdown("##### deep").text == "### deep"


def test_message_markdown_leaves_tables_inside_code_alone() -> None:
    text = "```\n| a | b |\n|---|---|\n```"
    assert message_markdown(text).text == text
    assert message_markdown("plain answer").text == "plain answer"


def test_text_parts_stay_under_the_limit_and_code_fences_balanced() -> None:
    text = "intro\n\n```\n" + "\n".join(f"row {i}" for i in range(400)) + "\n```\n\nend"
    parts = text_parts(text, limit=1000)
    assert all(len(p) <= 1000 for p in parts)
    assert all(p.count("```") % 2 == 0 for p in parts)
    assert parts[0].startswith("intro") and parts[-1].endswith("end")


def test_text_parts_of_unbroken_text() -> None:
    """The one splitter (``adapters.text.split_text``) refuses limits under 16 and gives no
    part for no text; unbroken text is still cut under the limit with nothing lost."""
    parts = text_parts("x" * 40, limit=16)
    assert all(len(p) <= 16 for p in parts) and "".join(parts) == "x" * 40
    assert text_parts("") == []


def test_pack_spreads_attachments_over_messages() -> None:
    big = elements.attachment(elements.card([elements.text_block("x" * 9000)]))
    size = payload_size(big)
    groups = pack([big, big, big], first_overhead=40_000 - size - 10)
    assert [len(g) for g in groups] == [1, 2]
    groups = pack([big], first_overhead=39_000)
    assert [len(g) for g in groups] == [0, 1]
