"""adapters.teams.render: every component type -> a valid Adaptive Card 1.5 or a deliberate
fallback, within Teams' message size."""

from __future__ import annotations

import base64
import io

import pytest

from adapters.teams import elements
from adapters.teams.limits import MESSAGE_LIMIT, payload_size
from adapters.teams.render import Rendering, render
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
    ToolStatusComponent,
    UiComponent,
)
from tests.adapters.teams.schemas import assert_valid_card


def rendered(rich: RichComponent, simple: object = None) -> Rendering | None:
    return render(UiComponent(rich_component=rich, simple_component=simple))  # type: ignore[arg-type]


def card_of(rich: RichComponent) -> dict:
    rendering = rendered(rich)
    assert rendering is not None and rendering.card is not None
    assert_valid_card(rendering.card)
    assert payload_size(elements.attachment(rendering.card)) < MESSAGE_LIMIT
    return rendering.card


def texts(card: dict) -> list[str]:
    found: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if node.get("type") in ("TextBlock", "TextRun"):
                found.append(node["text"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(card)
    return found


def png_data_uri(width: int, height: int, *, noisy: bool = False) -> str:
    from PIL import Image

    picture = Image.new("RGB", (width, height), "white")
    if noisy:
        picture = Image.effect_noise((width, height), 120).convert("RGB")
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def test_validator_rejects_an_invalid_card() -> None:
    with pytest.raises(AssertionError):
        assert_valid_card(elements.card([{"type": "TextBlock", "txt": "typo"}]))


def test_rich_text_is_message_text_not_a_card() -> None:
    rendering = rendered(RichTextComponent(content="**Sales** rose", markdown=True))
    assert rendering == Rendering(text="**Sales** rose")


def test_streaming_text_version_is_flagged() -> None:
    rendering = rendered(RichTextComponent(content="Sal", streaming=True))
    assert rendering is not None and rendering.streaming


def test_code_text_is_fenced() -> None:
    rendering = rendered(RichTextComponent(content="SELECT 1", code_language="sql"))
    assert rendering is not None and rendering.text == "```sql\nSELECT 1\n```"


def test_card_with_markdown_status_and_actions() -> None:
    card = card_of(
        CardComponent(
            title="Setup",
            subtitle="step 2",
            content="# Done\n\n- a\n- b",
            status="success",
            markdown=True,
            actions=[{"label": "Help", "action": "/help"}, {"bad": 1}],
        )
    )
    assert card["body"][0]["style"] == "good"
    assert texts(card)[:3] == ["✅ Setup", "step 2", "Done"]
    assert card["actions"] == [elements.execute_action("Help", "/help")]


def test_collapsible_card_toggles_its_details() -> None:
    card = card_of(
        CardComponent(
            title="Args",
            content="```json\n{}\n```",
            markdown=True,
            collapsible=True,
            collapsed=True,
        )
    )
    assert card["actions"][0]["type"] == "Action.ToggleVisibility"
    details = card["body"][1]
    assert details["isVisible"] is False


def test_notification_levels_map_to_container_styles() -> None:
    for level, style in [
        ("info", "accent"),
        ("warning", "warning"),
        ("error", "attention"),
        ("success", "good"),
    ]:
        card = card_of(NotificationComponent(message="x", title="T", level=level))
        assert card["body"][0]["style"] == style


def test_a_tool_calls_status_is_progress_until_it_fails_then_a_card() -> None:
    """Issue 37: one component a call says what its status card said."""
    call = ToolStatusComponent(tool="run_sql")
    assert rendered(call) == Rendering(progress="run_sql: Running...")
    done = call.finished(success=True, detail="completed in 3 ms")
    assert rendered(done) == Rendering(progress="run_sql: completed in 3 ms")
    card = card_of(call.finished(success=False, detail="failed in 3 ms"))
    assert card["body"][0]["style"] == "attention"
    assert card == card_of(
        StatusCardComponent(title="run_sql", status="failed", description="failed in 3 ms")
    )


def test_running_status_card_is_progress_failed_one_is_a_card() -> None:
    running = rendered(
        StatusCardComponent(title="run_sql", status="running", description="Running...")
    )
    assert running == Rendering(progress="run_sql: Running...")
    card = card_of(
        StatusCardComponent(
            title="Error", status="error", description="Boom", metadata={"code": 42}
        )
    )
    assert card["body"][0]["style"] == "attention"
    assert {"title": "code", "value": "42"} in card["body"][0]["items"][2]["facts"]


def test_dataframe_renders_a_table_with_numbers_right_aligned() -> None:
    df = DataFrameComponent.from_records(
        [{"region": "EU", "sales": 1234.5, "n": 3}, {"region": "US", "sales": None, "n": 4}],
        title="Sales",
        description="by region",
    )
    card = card_of(df)
    table = next(e for e in card["body"] if e["type"] == "Table")
    assert [c.get("horizontalCellContentAlignment") for c in table["columns"]] == [
        None,
        "Right",
        "Right",
    ]
    assert texts(table["rows"][1]) == ["EU", "1,234.50", "3"]
    assert texts(table["rows"][2]) == ["US", "", "4"]
    assert card["msteams"] == {"width": "Full"}
    assert rendered(df).csv is None  # type: ignore[union-attr]


def test_300_row_dataframe_is_cut_with_a_note_and_offered_as_csv() -> None:
    rows = [
        {"id": i, "name": f"customer {i}", "city": "Lisbon", "spend": i * 1.5} for i in range(300)
    ]
    rendering = rendered(DataFrameComponent.from_records(rows, title="Customers"))
    assert rendering is not None and rendering.card is not None
    assert_valid_card(rendering.card)
    table = next(e for e in rendering.card["body"] if e["type"] == "Table")
    shown = len(table["rows"]) - 1
    # as many as fit one message (cells are TextRuns, never parsed as Markdown: ~35 rows)
    assert 30 <= shown <= 50
    assert payload_size(rendering.card) <= 34_000
    assert texts(rendering.card)[-1] == f"Showing {shown} of 300 rows."
    assert rendering.csv is not None
    name, content = rendering.csv
    assert name == "Customers.csv"
    assert content.decode("utf-8-sig").splitlines()[0] == "id,name,city,spend"
    assert len(content.decode("utf-8-sig").splitlines()) == 301


def test_wide_heavy_dataframe_halves_rows_until_the_card_fits() -> None:
    rows = [{f"c{j}": "x" * 110 for j in range(12)} for _ in range(50)]
    df = DataFrameComponent.from_records(rows)
    card = card_of(df)
    table = next(e for e in card["body"] if e["type"] == "Table")
    assert len(table["columns"]) == 8
    assert len(table["rows"]) < 51
    assert "4 more columns not shown." in texts(card)[-1]


def test_truncated_source_dataframe_reports_the_full_size() -> None:
    df = DataFrameComponent.from_records([{"a": 1}], total_rows=5000)
    assert texts(card_of(df))[-1] == "Showing 1 of 5,000 rows."


def test_chart_is_teams_own_chart_with_the_image_as_fallback() -> None:
    """Teams showed only a PNG (and the title twice); its clients draw charts natively."""
    chart = ChartComponent(
        chart_type="line",
        x=["Jan", "Feb", "Mar"],
        title="Revenue",
        x_label="month",
        series=[ChartSeries(name="EU", values=[1, None, 3])],
        image_url="https://example.com/chart.png",
    )
    card = card_of(chart)
    assert card["version"] == "1.5"
    assert [e["type"] for e in card["body"]] == ["RichTextBlock", "Chart.Line"]
    assert texts(card) == ["Revenue"]  # the title once
    line = card["body"][1]
    assert line["data"] == [
        {"legend": "EU", "values": [{"x": "Jan", "y": 1.0}, {"x": "Mar", "y": 3.0}]}
    ]
    assert line["xAxisTitle"] == "month" and "title" not in line
    assert line["fallback"] == elements.image(
        "https://example.com/chart.png", "Revenue (line chart)"
    )


@pytest.mark.parametrize(
    ("kind", "series", "element"),
    [
        ("bar", [ChartSeries(name="s", values=[1, 2])], "Chart.VerticalBar"),
        (
            "bar",
            [ChartSeries(name="a", values=[1, 2]), ChartSeries(name="b", values=[3, 4])],
            "Chart.VerticalBar.Grouped",
        ),
        ("pie", [ChartSeries(name="share", values=[1, 2])], "Chart.Pie"),
    ],
)
def test_each_chart_kind_has_its_teams_element(
    kind: str, series: list[ChartSeries], element: str
) -> None:
    card = card_of(ChartComponent(chart_type=kind, x=["a", "b"], series=series))  # type: ignore[arg-type]
    chart = card["body"][1]
    assert chart["type"] == element
    assert chart["fallback"]["type"] == "FactSet"  # no image: the numbers, summarised


def test_chart_data_uri_is_kept_when_small() -> None:
    uri = png_data_uri(64, 48)
    card = card_of(
        ChartComponent(
            chart_type="bar", x=["a"], image_url=uri, series=[ChartSeries(name="s", values=[1])]
        )
    )
    assert card["body"][1]["fallback"]["url"] == uri


def test_oversized_chart_png_is_shrunk_to_fit() -> None:
    uri = png_data_uri(900, 600, noisy=True)
    assert len(uri) > 250_000
    card = card_of(
        ChartComponent(
            chart_type="scatter", x=["a"], image_url=uri, series=[ChartSeries(name="s", values=[1])]
        )
    )
    image = card["body"][1]
    assert image["type"] == "Image"
    assert image["url"].startswith("data:image/png;base64,") and len(image["url"]) <= 250_000


def test_unshrinkable_chart_keeps_the_summary_and_says_so() -> None:
    card = card_of(
        ChartComponent(
            chart_type="scatter",
            x=["a", "b"],
            image_url="data:image/png;base64," + "A" * 300_000,
            series=[ChartSeries(name="share", values=[1, 2])],
        )
    )
    assert [e["type"] for e in card["body"]] == ["RichTextBlock", "FactSet", "RichTextBlock"]
    assert "too large" in texts(card)[-1]


def test_chart_without_image() -> None:
    card = card_of(
        ChartComponent(
            chart_type="scatter", x=[1.0, 2.0], series=[ChartSeries(name="y", values=[None, None])]
        )
    )
    assert card["body"][1]["facts"] == [{"title": "y", "value": "no values"}]


def test_log_viewer_shows_the_last_lines_in_monospace() -> None:
    log = LogViewerComponent(title="Run")
    for i in range(60):
        log = log.add_entry(f"line {i}")
    card = card_of(log)
    assert texts(card)[1].splitlines()[0] == "[INFO] line 20"
    assert texts(card)[-1] == "Last 40 of 60 entries."


def test_task_list_marks_each_task() -> None:
    tasks = TaskListComponent(
        title="Plan",
        tasks=[Task(title="Query", status="completed"), Task(title="Chart", status="in_progress")],
    )
    card = card_of(tasks)
    assert texts(card) == ["Plan", "1 of 2 done", "✅ Query\n\n⏳ Chart"]


def test_buttons_become_execute_actions() -> None:
    card = card_of(ButtonComponent(label="Help", action="/help"))
    assert card["actions"] == [elements.execute_action("Help", "/help")]
    group = ButtonGroupComponent(
        buttons=[ButtonSpec(label=f"Q{i}", action=f"q{i}") for i in range(8)]
        + [ButtonSpec(label="off", action="x", disabled=True)]
    )
    card = card_of(group)
    assert [len(s["actions"]) for s in card["body"]] == [6, 2]
    assert rendered(ButtonComponent(label="x", action="y", disabled=True)) is None


def test_submit_action_is_a_valid_message_back() -> None:
    assert_valid_card(elements.card([], [elements.submit_action("Help", "/help")]))


def test_badge_and_icon_text() -> None:
    badge = card_of(BadgeComponent(text="beta"))
    assert texts(badge) == ["beta"] and badge["body"][0]["inlines"][0]["weight"] == "Bolder"
    assert texts(card_of(IconTextComponent(icon="📈", text="Up"))) == ["📈 Up"]


@pytest.mark.parametrize(
    ("rich", "line"),
    [
        (ProgressBarComponent(value=0.5, label="Loading"), "Loading 50%"),
        (
            ProgressDisplayComponent(label="Export", value=0.25, description="rows"),
            "Export 25% rows",
        ),
        (StatusIndicatorComponent(status="loading", message="Thinking"), "Thinking"),
        (
            StatusBarUpdateComponent(status="working", message="Working on it..."),
            "Working on it...",
        ),
        (TaskTrackerUpdateComponent.add_task(Task(title="run_sql")), "run_sql…"),
    ],
)
def test_progress_components_are_status_lines(rich: RichComponent, line: str) -> None:
    assert rendered(rich) == Rendering(progress=line)


@pytest.mark.parametrize(
    "rich",
    [
        ChatInputUpdateComponent(disabled=False, focus=True),
        StatusBarUpdateComponent(status="idle", message="Ready"),
        TaskTrackerUpdateComponent.update_task("t1", status="completed"),
    ],
)
def test_ui_state_components_are_dropped(rich: RichComponent) -> None:
    assert (
        render(UiComponent(rich_component=rich, simple_component=SimpleTextComponent(text="Ready")))
        is None
    )


def test_hidden_component_is_dropped() -> None:
    assert rendered(NotificationComponent(message="x").hide()) is None


def test_artifact_falls_back_to_its_simple_component() -> None:
    artifact = ArtifactComponent(content="<svg/>", artifact_type="svg", title="Diagram")
    assert rendered(artifact) is None
    card = rendered(artifact, SimpleTextComponent(text="A diagram of the pipeline"))
    assert card is not None and texts(card.card or {}) == ["A diagram of the pipeline"]
    image = rendered(artifact, SimpleImageComponent(url="https://x/y.png", alt_text="d"))
    assert image is not None and image.card is not None
    assert_valid_card(image.card)


def test_link_components_become_citations() -> None:
    source = rendered(
        CardComponent(title="Pricing policy", content="How we price"),
        SimpleLinkComponent(url="https://wiki/pricing", text="Pricing"),
    )
    assert source is not None and source.citation is not None
    assert (source.citation.title, source.citation.url, source.citation.abstract) == (
        "Pricing policy",
        "https://wiki/pricing",
        "How we price",
    )
    artifact = rendered(
        ArtifactComponent(content="x", artifact_type="html"), SimpleLinkComponent(url="https://a/b")
    )
    assert artifact is not None and artifact.citation is not None


def test_long_card_content_is_clipped_to_fit_a_message() -> None:
    card = card_of(NotificationComponent(message="word " * 20_000))
    assert texts(card)[-1].endswith("…(truncated)")
