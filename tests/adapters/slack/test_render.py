"""Every component type -> Block Kit, and every Slack limit (pure, no I/O)."""

from __future__ import annotations

import base64
import csv
import io
from typing import Any

import pytest
from slack_sdk.errors import SlackObjectFormationError

from adapters.slack.controls import (
    FEEDBACK_ACTION,
    STOP_ACTION,
    feedback_block,
    stop_message,
)
from adapters.slack.limits import (
    MAX_BLOCKS,
    MAX_MARKDOWN_TOTAL,
    MAX_SECTION_TEXT,
    MAX_TEXT_FALLBACK,
    DataVisualizationBlock,
    SlackMessage,
    pack_messages,
    validate_block,
)
from adapters.slack.render import render
from agent_core.components import (
    ArtifactComponent,
    BadgeComponent,
    ButtonComponent,
    ButtonGroupComponent,
    ButtonSpec,
    CardComponent,
    ChartComponent,
    ChartSeries,
    ChatInputUpdateComponent,
    ComponentType,
    DataFrameComponent,
    IconTextComponent,
    LogViewerComponent,
    NotificationComponent,
    ProgressBarComponent,
    ProgressDisplayComponent,
    RichComponent,
    RichTextComponent,
    SimpleImageComponent,
    SimpleLinkComponent,
    SimpleTextComponent,
    StatusBarUpdateComponent,
    StatusCardComponent,
    StatusIndicatorComponent,
    Task,
    TaskListComponent,
    TaskTrackerUpdateComponent,
    UiComponent,
)

PNG = b"\x89PNG\r\n\x1a\nfake"
PNG_URI = "data:image/png;base64," + base64.b64encode(PNG).decode()


def ui(rich: RichComponent, simple: Any = None) -> UiComponent:
    return UiComponent(rich_component=rich, simple_component=simple)


def assert_within_limits(messages: list[SlackMessage]) -> None:
    for message in messages:
        assert len(message.blocks) <= MAX_BLOCKS
        assert len(message.text) <= MAX_TEXT_FALLBACK
        assert sum(len(b["text"]) for b in message.blocks if b["type"] == "markdown") <= (
            MAX_MARKDOWN_TOTAL
        )
        assert sum(b["type"] == "table" for b in message.blocks) <= 1
        assert sum(b["type"] == "data_visualization" for b in message.blocks) <= 2
        for block in message.blocks:
            assert validate_block(block) == block


def types(message: SlackMessage) -> list[str]:
    return [b["type"] for b in message.blocks]


# --- text -----------------------------------------------------------------------------------


def test_markdown_answer_is_one_markdown_block() -> None:
    [message] = render(ui(RichTextComponent(content="**Hi** there", markdown=True)))
    assert message.blocks == [{"type": "markdown", "text": "**Hi** there"}]
    assert message.text == "**Hi** there"


def test_long_markdown_splits_into_messages_within_12000_chars() -> None:
    paragraph = "word " * 199 + "end.\n\n"
    messages = render(ui(RichTextComponent(content=paragraph * 40, markdown=True)))
    assert len(messages) >= 4
    assert_within_limits(messages)
    rejoined = "".join(b["text"] for m in messages for b in m.blocks)
    assert rejoined == paragraph * 40


def test_plain_text_is_escaped_and_split_at_3000_chars_per_section() -> None:
    messages = render(ui(RichTextComponent(content="a<b " * 2000)))
    assert_within_limits(messages)
    sections = [b for m in messages for b in m.blocks]
    assert all(b["type"] == "section" for b in sections)
    assert all(len(b["text"]["text"]) <= MAX_SECTION_TEXT for b in sections)
    assert "&lt;" in sections[0]["text"]["text"]


def test_huge_plain_text_spreads_over_messages_of_at_most_50_blocks() -> None:
    messages = render(ui(RichTextComponent(content="x" * 2900 + "\n" + "y " * 100_000)))
    assert len(messages) >= 2
    assert_within_limits(messages)
    assert len(messages[0].blocks) == MAX_BLOCKS


def test_code_is_fenced_markdown() -> None:
    [message] = render(ui(RichTextComponent(content="select 1", code_language="sql")))
    assert message.blocks == [{"type": "markdown", "text": "```sql\nselect 1\n```"}]


def test_empty_text_renders_no_message() -> None:
    assert render(ui(RichTextComponent(content="   ", markdown=True))) == []


def test_text_fallback_is_capped_at_4000_chars() -> None:
    messages = render(ui(RichTextComponent(content="z" * 9000, markdown=True)))
    assert all(len(m.text) <= MAX_TEXT_FALLBACK for m in messages)


# --- cards, notifications, status -------------------------------------------------------------


def test_card_has_header_context_body_and_buttons() -> None:
    card = CardComponent(
        title="T" * 200,
        subtitle="sub",
        content="**bold** <tag>",
        markdown=True,
        status="success",
        actions=[{"label": "Help", "action": "/help"}, {"label": "No action"}],
    )
    [message] = render(ui(card))
    assert_within_limits([message])
    assert types(message) == ["header", "context", "section", "actions"]
    assert len(message.blocks[0]["text"]["text"]) == 150
    assert message.blocks[2]["text"]["text"] == "*bold* &lt;tag&gt;"
    [button] = message.blocks[3]["elements"]
    assert (button["value"], button["action_id"]) == ("/help", "threadline_button:0")


def test_collapsed_card_hides_its_body() -> None:
    [message] = render(ui(CardComponent(title="Setup", content="secret", collapsed=True)))
    assert types(message) == ["header"]


def test_notification_is_an_alert_with_level_and_actions() -> None:
    note = NotificationComponent(
        message="Limit *reached*",
        title="Quota",
        level="warning",
        actions=[{"label": "Upgrade", "action": "how do I upgrade?", "variant": "primary"}],
    )
    [message] = render(ui(note))
    assert types(message) == ["alert", "actions"]
    assert message.blocks[0]["level"] == "warning"
    assert message.blocks[0]["text"]["text"] == "*Quota*\nLimit _reached_"
    assert message.blocks[1]["elements"][0]["style"] == "primary"
    assert message.text == "Quota: Limit *reached*"


def test_status_card_shows_status_description_and_metadata() -> None:
    card = StatusCardComponent(
        title="run_sql",
        status="failed",
        description="timeout",
        metadata={f"k{i}": i for i in range(15)},
    )
    [message] = render(ui(card))
    assert_within_limits([message])
    assert types(message) == ["section", "context"]
    assert message.blocks[0]["text"]["text"] == ":x: *run_sql* · failed\ntimeout"
    assert len(message.blocks[1]["elements"]) == 10


@pytest.mark.parametrize(
    ("rich", "expected"),
    [
        (ProgressBarComponent(value=0.5, label="Load"), "*Load*\n`▓▓▓▓▓░░░░░` 50%"),
        (ProgressDisplayComponent(label="Scan", value=1.0, description="done"), "`▓▓▓▓▓▓▓▓▓▓`"),
        (ProgressDisplayComponent(label="Wait", indeterminate=True), ":hourglass_flowing_sand:"),
    ],
)
def test_progress_renders_a_text_bar(rich: RichComponent, expected: str) -> None:
    [message] = render(ui(rich))
    assert types(message) == ["section"]
    assert expected in message.blocks[0]["text"]["text"]


@pytest.mark.parametrize(
    ("rich", "expected"),
    [
        (StatusIndicatorComponent(status="error", message="down"), ":x: down"),
        (BadgeComponent(text="beta", variant="info"), ":information_source: `beta`"),
        (IconTextComponent(icon=":star:", text="a & b"), ":star: a &amp; b"),
    ],
)
def test_one_line_components_are_context_blocks(rich: RichComponent, expected: str) -> None:
    [message] = render(ui(rich))
    assert message.blocks == [
        {"type": "context", "elements": [{"type": "mrkdwn", "text": expected}]}
    ]


def test_log_viewer_keeps_the_newest_lines_that_fit() -> None:
    logs = LogViewerComponent(title="Run", show_timestamps=False)
    for i in range(100):
        logs = logs.add_entry(f"line {i} " + "x" * 60)
    [message] = render(ui(logs))
    assert_within_limits([message])
    assert types(message) == ["section", "section", "context"]
    body = message.blocks[1]["text"]["text"]
    assert body.startswith("```\n") and "line 99" in body and "line 0 " not in body
    assert "earlier lines not shown" in message.blocks[2]["elements"][0]["text"]


def test_task_list_is_a_plan_of_task_cards() -> None:
    tasks = TaskListComponent(
        title="Plan",
        tasks=[
            Task(title="Query", status="completed"),
            Task(title="Chart", status="in_progress", description="drawing"),
            Task(title="Mail", status="error"),
        ],
    )
    [message] = render(ui(tasks))
    [plan] = message.blocks
    assert plan["type"] == "plan"
    assert [t["status"] for t in plan["tasks"]] == ["complete", "in_progress", "error"]
    assert plan["tasks"][1]["details"]["type"] == "rich_text"
    assert message.text == "Plan: 1/3 done"


# --- buttons --------------------------------------------------------------------------------


def test_button_and_group_become_actions_with_unique_action_ids() -> None:
    [one] = render(ui(ButtonComponent(label="Help", action="/help", variant="error")))
    assert one.blocks[0]["elements"][0]["style"] == "danger"
    group = ButtonGroupComponent(
        buttons=[ButtonSpec(label=f"B{i}", action=f"question {i}") for i in range(30)]
        + [ButtonSpec(label="off", action="x", disabled=True)]
    )
    [message] = render(ui(group))
    assert types(message) == ["actions", "actions"]
    ids = [e["action_id"] for b in message.blocks for e in b["elements"]]
    assert len(ids) == len(set(ids)) == 30


def test_button_whose_action_is_too_long_is_dropped_not_cut() -> None:
    assert render(ui(ButtonComponent(label="Long", action="q" * 2001))) == []
    [message] = render(ui(ButtonComponent(label="L" * 100, action="ok")))
    assert len(message.blocks[0]["elements"][0]["text"]["text"]) == 75


# --- data -----------------------------------------------------------------------------------


def test_small_dataframe_is_a_table_with_a_header_row() -> None:
    df = DataFrameComponent.from_records(
        [{"name": "a", "n": 1, "ok": True}, {"name": None, "n": 2.5, "ok": False}], title="Rows"
    )
    [message] = render(ui(df))
    assert types(message) == ["section", "table"]
    table = message.blocks[1]
    assert [[c["text"] for c in row] for row in table["rows"]] == [
        ["name", "n", "ok"],
        ["a", "1", "true"],
        ["—", "2.5", "false"],
    ]
    assert table["column_settings"][1] == {"align": "right"}
    assert message.files == []


def test_500_row_dataframe_shows_99_rows_and_attaches_all_rows_as_csv() -> None:
    df = DataFrameComponent.from_records([{"id": i, "v": f"r{i}"} for i in range(500)], title="Big")
    [message] = render(ui(df))
    assert_within_limits([message])
    table = next(b for b in message.blocks if b["type"] == "table")
    assert len(table["rows"]) == 100
    [upload] = message.files
    assert upload.filename == "big.csv"
    rows = list(csv.reader(io.StringIO(upload.content.decode())))
    assert len(rows) == 501 and rows[500] == ["499", "r499"]
    note = message.blocks[-1]["elements"][0]["text"]
    assert "Showing 99 of 500 rows" in note and "`big.csv`" in note


def test_wide_dataframe_shows_20_columns_and_attaches_csv() -> None:
    df = DataFrameComponent.from_records([{f"c{i}": i for i in range(25)}])
    [message] = render(ui(df))
    table = message.blocks[0]
    assert len(table["rows"][0]) == 20
    assert message.files and "20 of 25 columns" in message.blocks[-1]["elements"][0]["text"]


def test_truncated_dataframe_says_how_much_the_csv_holds() -> None:
    df = DataFrameComponent.from_records([{"n": i} for i in range(150)], total_rows=10_000)
    [message] = render(ui(df))
    note = message.blocks[-1]["elements"][0]["text"]
    assert "of 10,000 rows" in note and "the first 150 rows" in note


def test_empty_dataframe_says_no_rows() -> None:
    [message] = render(ui(DataFrameComponent.from_records([], title="Nothing")))
    assert types(message) == ["section", "section"]


def test_two_tables_never_share_a_message() -> None:
    table = render(ui(DataFrameComponent.from_records([{"a": 1}])))[0].blocks[0]
    messages = pack_messages([table, table], text="t")
    assert [types(m) for m in messages] == [["table"], ["table"]]


def bar_chart(**changes: Any) -> ChartComponent:
    fields: dict[str, Any] = {
        "chart_type": "bar",
        "title": "Sales",
        "x": ["Q1", "Q2"],
        "series": [ChartSeries(name="EU", values=[1, 2])],
        "image_url": PNG_URI,
    }
    return ChartComponent(**{**fields, **changes})


def test_chart_that_fits_is_a_native_data_visualization_block() -> None:
    [message] = render(ui(bar_chart(x_label="Quarter", y_label="EUR")))
    [block] = message.blocks
    assert block == {
        "type": "data_visualization",
        "title": "Sales",
        "chart": {
            "type": "bar",
            "series": [
                {"name": "EU", "data": [{"label": "Q1", "value": 1}, {"label": "Q2", "value": 2}]}
            ],
            "axis_config": {"categories": ["Q1", "Q2"], "x_label": "Quarter", "y_label": "EUR"},
        },
    }
    assert message.files == []


def test_pie_chart_is_native_with_segments() -> None:
    [message] = render(ui(bar_chart(chart_type="pie")))
    assert message.blocks[0]["chart"] == {
        "type": "pie",
        "segments": [{"label": "Q1", "value": 1}, {"label": "Q2", "value": 2}],
    }


@pytest.mark.parametrize(
    "changes",
    [
        {"chart_type": "scatter"},
        {"x": [f"d{i}" for i in range(30)], "series": [ChartSeries(name="n", values=[1] * 30)]},
        {"series": [ChartSeries(name="EU", values=[1, None])]},
        {"series": [ChartSeries(name=f"s{i}", values=[1, 2]) for i in range(7)]},
        {"x": ["a label longer than twenty: 1", "a label longer than twenty: 2"]},
        {"chart_type": "pie", "series": [ChartSeries(name="p", values=[1, -2])]},
        {"series": [ChartSeries(name="EU", values=[1])]},
    ],
)
def test_chart_outside_native_limits_is_uploaded_as_png(changes: dict[str, Any]) -> None:
    [message] = render(ui(bar_chart(**changes)))
    assert message.blocks == []
    [upload] = message.files
    assert (upload.filename, upload.content, upload.alt_text) == ("sales.png", PNG, "Sales")


def test_long_labels_are_cut_so_the_chart_stays_native() -> None:
    """The demo's top-customers chart went to a PNG for one name over 20 characters."""
    [message] = render(ui(bar_chart(x=["Evergreen Outfitters Ltd", "b"])))
    assert message.files == []
    chart = message.blocks[0]["chart"]
    assert chart["axis_config"]["categories"] == ["Evergreen Outfitter…", "b"]


def test_a_png_chart_carries_its_title_once() -> None:
    """The title showed three times: in the image, as the file's title and as a comment."""
    [message] = render(ui(bar_chart(chart_type="scatter")))
    assert message.text == "" and message.files[0].title == "Sales"


def test_chart_with_hosted_image_is_an_image_block() -> None:
    [message] = render(ui(bar_chart(chart_type="scatter", image_url="https://x.io/c.png")))
    assert types(message) == ["image"]


def test_chart_without_any_image_falls_back_to_its_data_as_a_table() -> None:
    [message] = render(ui(bar_chart(chart_type="scatter", image_url=None)))
    table = next(b for b in message.blocks if b["type"] == "table")
    assert [c["text"] for c in table["rows"][0]] == ["x", "EU"]


def test_data_visualization_block_validates_its_limits() -> None:
    with pytest.raises(SlackObjectFormationError):
        DataVisualizationBlock(title="x" * 51, chart={"type": "pie", "segments": []}).to_dict()
    with pytest.raises(SlackObjectFormationError):
        validate_block({"type": "data_visualization", "title": "t", "chart": {"type": "radar"}})


def test_two_charts_per_message_at_most() -> None:
    [chart] = render(ui(bar_chart()))[0].blocks
    messages = pack_messages([chart] * 3, text="c")
    assert [len(m.blocks) for m in messages] == [2, 1]


# --- the rest -------------------------------------------------------------------------------


def test_artifact_is_described_and_uploaded_as_a_file() -> None:
    art = ArtifactComponent(content="<svg/>", artifact_type="svg", title="Logo", description="d")
    [message] = render(ui(art))
    assert types(message) == ["section", "context"]
    assert message.files[0].filename.endswith(".svg") and message.files[0].content == b"<svg/>"


@pytest.mark.parametrize(
    "rich",
    [
        StatusBarUpdateComponent(status="working", message="Thinking"),
        TaskTrackerUpdateComponent.clear_tasks(),
        ChatInputUpdateComponent(placeholder="Ask"),
        NotificationComponent(message="hidden", visible=False),
    ],
)
def test_status_ui_only_and_hidden_components_are_not_messages(rich: RichComponent) -> None:
    assert render(ui(rich, SimpleTextComponent(text="fallback"))) == []


class Unknown(RichComponent):
    type: ComponentType = ComponentType.TEXT


@pytest.mark.parametrize(
    ("simple", "expected_types", "files"),
    [
        (SimpleTextComponent(text="plain <b>"), ["section"], 0),
        (SimpleLinkComponent(url="https://x.io", text="docs"), ["section"], 0),
        (SimpleImageComponent(url="https://x.io/i.png"), ["image"], 0),
        (SimpleImageComponent(url=PNG_URI, alt_text="pic"), [], 1),
        (None, None, 0),
    ],
)
def test_unknown_rich_types_fall_back_to_the_simple_component(
    simple: Any, expected_types: list[str] | None, files: int
) -> None:
    messages = render(ui(Unknown(), simple))
    if expected_types is None:
        assert messages == []
        return
    [message] = messages
    assert types(message) == expected_types and len(message.files) == files


def test_simple_link_is_mrkdwn_link() -> None:
    [message] = render(ui(Unknown(), SimpleLinkComponent(url="https://x.io", text="a&b")))
    assert message.blocks[0]["text"]["text"] == "<https://x.io|a&amp;b>"


def test_feedback_block_is_context_actions_with_feedback_buttons() -> None:
    block = feedback_block()
    assert block["type"] == "context_actions"
    [buttons] = block["elements"]
    assert buttons["type"] == "feedback_buttons" and buttons["action_id"] == FEEDBACK_ACTION
    assert (buttons["positive_button"]["value"], buttons["negative_button"]["value"]) == (
        "positive",
        "negative",
    )
    assert validate_block(block) == block


def test_stop_message_carries_the_turn_id() -> None:
    message = stop_message("turn-1")
    button = message.blocks[-1]["elements"][0]
    assert (button["action_id"], button["value"], button["style"]) == (
        STOP_ACTION,
        "turn-1",
        "danger",
    )


@pytest.mark.parametrize(
    "block",
    [
        {"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}},
        {"type": "header", "text": {"type": "plain_text", "text": "x" * 151}},
        {"type": "markdown", "text": "x" * 12001},
        {"type": "no_such_block"},
    ],
)
def test_validate_block_rejects_over_long_fields_and_unknown_blocks(block: dict[str, Any]) -> None:
    with pytest.raises(SlackObjectFormationError):
        validate_block(block)


def test_markdown_budget_splits_messages_at_12000_cumulative_chars() -> None:
    block = {"type": "markdown", "text": "m" * 5000}
    messages = pack_messages([block] * 5, text="m")
    assert [len(m.blocks) for m in messages] == [2, 2, 1]
