"""What a server answers, as the model and people see it: text, images, tables, links,
errors; cut when too long; never a secret."""

from __future__ import annotations

import base64
import json
import re
from urllib.parse import unquote

from hypothesis import given
from hypothesis import strategies as st
from mcp.types import (
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from adapters.slack.render import render
from agent_core.components import DataFrameComponent, ImageComponent, SimpleImageComponent
from agent_core.mcp.masking import McpMasker
from agent_core.mcp.results import cut, to_tool_result
from agent_core.mcp.schemas import ArgumentCheck, schema_problem

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n-image-bytes").decode()


def _text(text: str) -> TextContent:
    return TextContent(type="text", text=text)


def test_text_is_text() -> None:
    result = to_tool_result(CallToolResult(content=[_text("3 tickets")]), max_chars=100)
    assert result.success and result.result_for_llm == "3 tickets"
    assert result.ui_component is None


def test_an_error_result_is_a_failed_result_the_model_reads() -> None:
    answer = CallToolResult(content=[_text("no such ticket")], is_error=True)
    result = to_tool_result(answer, max_chars=100, tool="get_ticket")
    assert not result.success
    assert result.result_for_llm == "get_ticket failed: no such ticket"


def test_an_image_is_shown_as_an_image_and_named_to_the_model() -> None:
    answer = CallToolResult(
        content=[ImageContent(type="image", data=PNG, mime_type="image/png"), _text("Q3")]
    )
    result = to_tool_result(answer, max_chars=1000)
    assert result.ui_component is not None
    assert isinstance(result.ui_component.rich_component, ImageComponent)
    assert isinstance(result.ui_component.simple_component, SimpleImageComponent)
    assert result.ui_component.simple_component.url.startswith("data:image/png;base64,")
    assert "[an image (image/png, 20 bytes), shown to the person]" in result.result_for_llm


def test_images_that_cannot_be_shown_are_named_not_shown() -> None:
    svg = base64.b64encode(b"<svg onload=alert(1)/>").decode()
    answer = CallToolResult(
        content=[
            ImageContent(type="image", data=svg, mime_type="image/svg+xml"),
            ImageContent(type="image", data="!!not base64!!", mime_type="image/png"),
        ]
    )
    result = to_tool_result(answer, max_chars=1000)
    assert result.ui_component is None
    assert "of a type not shown" in result.result_for_llm
    assert "could not be read" in result.result_for_llm


def test_tabular_structured_content_is_a_table() -> None:
    rows = [{"id": n, "title": f"t{n}", "tags": ["a"]} for n in range(150)]
    answer = CallToolResult(content=[_text("150 tickets")], structured_content={"tickets": rows})
    result = to_tool_result(answer, max_chars=1000, tool="search")
    table = result.ui_component.rich_component if result.ui_component else None
    assert isinstance(table, DataFrameComponent)
    assert (table.title, table.row_count, len(table.rows)) == ("tickets", 150, 100)
    assert table.rows[0]["tags"] == '["a"]'
    assert result.result_for_llm == "150 tickets"


def test_structured_content_alone_is_read_as_json() -> None:
    answer = CallToolResult(content=[], structured_content={"id": 7, "status": "open"})
    result = to_tool_result(answer, max_chars=1000)
    assert result.result_for_llm == '{"id": 7, "status": "open"}'
    assert result.ui_component is None  # one record is not a table


def test_resource_links_are_links_clickable_only_over_http() -> None:
    answer = CallToolResult(
        content=[
            ResourceLink(type="resource_link", uri="https://r.example/q3", name="Q3 report"),
            ResourceLink(type="resource_link", uri="file:///etc/passwd", name="local file"),
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(uri="memo://1", text="the memo"),
            ),
        ]
    )
    result = to_tool_result(answer, max_chars=1000)
    assert "[Q3 report](https://r.example/q3)" in result.result_for_llm
    assert "local file: file:///etc/passwd" in result.result_for_llm
    assert "memo://1:\nthe memo" in result.result_for_llm
    assert result.ui_component is not None
    card = result.ui_component.rich_component
    assert "https://r.example/q3" in card.content and "file://" not in card.content  # type: ignore[attr-defined]


def test_megabytes_are_cut_and_the_cut_is_said() -> None:
    answer = CallToolResult(content=[_text("x" * 5_000_000)])
    result = to_tool_result(answer, max_chars=20_000)
    assert len(result.result_for_llm) < 20_200
    assert result.result_for_llm.endswith(
        "[cut: the result was 5,000,000 characters; only the first 20,000 are shown]"
    )


@given(st.text(max_size=300), st.integers(min_value=1, max_value=200))
def test_cut_never_exceeds_its_limit_by_more_than_its_note(text: str, limit: int) -> None:
    shown = cut(text, limit)
    assert shown == text if len(text) <= limit else shown.startswith(text[:limit])
    assert len(shown) <= limit + 100


def test_no_secret_reaches_the_model_or_a_person() -> None:
    masker = McpMasker(["sk-live-SECRET-token"])
    answer = CallToolResult(
        content=[
            _text("called with Bearer sk-live-SECRET-token from postgres://app:pw@db/x"),
            ResourceLink(
                type="resource_link",
                uri="https://r.example/?key=sk-live-SECRET-token",
                name="link",
            ),
        ],
        structured_content={"rows": [{"token": "sk-live-SECRET-token"}]},
    )
    result = to_tool_result(answer, max_chars=10_000, masker=masker)
    shown = result.model_dump_json()
    assert "sk-live-SECRET-token" not in shown and ":pw@" not in shown
    assert "Bearer ********" in result.result_for_llm


def test_a_schema_is_checked_before_the_model_is_given_it() -> None:
    assert schema_problem({"type": "object"}) is None
    assert "object" in (schema_problem({"type": "array"}) or "")
    assert "object" in (schema_problem(["not", "a", "schema"]) or "")
    assert "not valid JSON Schema" in (schema_problem({"type": "object", "properties": 5}) or "")
    assert "too large" in (schema_problem({"type": "object", "description": "x" * 70_000}) or "")
    deep: dict[str, object] = {"type": "object"}
    for _ in range(40):
        deep = {"type": "object", "properties": {"a": deep}}
    assert "nested" in (schema_problem(deep) or "")


def test_arguments_are_checked_against_the_schema_with_readable_problems() -> None:
    check = ArgumentCheck(
        {
            "type": "object",
            "properties": {"id": {"type": "integer"}, "status": {"enum": ["open", "closed"]}},
            "required": ["id"],
        }
    )
    assert check.problems({"id": 3, "status": "open"}) == []
    assert check.problems({"id": "3", "status": "gone"}) == [
        "id: '3' is not of type 'integer'",
        "status: 'gone' is not one of ['open', 'closed']",
    ]


LINK_LINE = re.compile(r"^- \[([^\[\]()<>*_`|]*)\]\((https?://[^\s()<>|\[\]]*)\)$")


@given(
    st.text(max_size=120),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=80),
)
def test_a_servers_link_is_one_link_to_its_own_address_whatever_it_is_named(
    name: str, path: str
) -> None:
    """Regression: a resource link named ``[x](javascript:...)`` (or ``<!channel>``) became
    a second link, or a mention, in the Links card people see."""
    uri = "https://r.example/" + path
    answer = CallToolResult(content=[ResourceLink(type="resource_link", uri=uri, name=name or "n")])
    card = to_tool_result(answer, max_chars=1000).ui_component
    if card is None:  # the SDK refused to call it a URL: nothing clickable at all
        return
    shown = LINK_LINE.match(card.rich_component.content)  # type: ignore[attr-defined]
    assert shown is not None, card.rich_component.content  # type: ignore[attr-defined]
    assert unquote(shown.group(2)).startswith("https://r.example/")


def test_hostile_names_reach_slack_as_plain_words_under_the_servers_link() -> None:
    answer = CallToolResult(
        content=[
            ResourceLink(
                type="resource_link",
                uri="https://r.example/a) [b](https://evil.example",
                name="<!channel> [Q3](javascript:alert(1)) <https://evil.example|report>",
            )
        ],
        structured_content={"<!here> *t*": [{"id": 1}, {"id": 2}]},
    )
    result = to_tool_result(answer, max_chars=1000)
    assert result.ui_component is not None
    assert result.ui_component.rich_component.title == "here t"  # type: ignore[attr-defined]
    links = to_tool_result(CallToolResult(content=answer.content), max_chars=1000).ui_component
    assert links is not None
    mrkdwn = json.dumps([m.blocks for m in render(links)])
    address = "https://r.example/a%29%20%5Bb%5D%28https://evil.example"
    assert address in mrkdwn
    assert all(target == address for target in re.findall(r"<([^|>]+)\|", mrkdwn))
    assert "<!channel>" not in mrkdwn and "<javascript" not in mrkdwn
