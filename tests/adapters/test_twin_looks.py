"""What both channels show the same way: numbers (in the asker's locale), the detail admins
read (a tool's arguments), and a chart's title said once."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.number_format import format_number, number_locale, separators
from adapters.slack.render import render as slack_render
from adapters.teams.render import render as teams_render
from agent_core.components import CardComponent, DataFrameComponent, UiComponent

REVENUE = DataFrameComponent.from_records(
    [{"customer": "Tidal Retail GmbH", "revenue": 968424.3, "orders": 1204}], title="Top"
)
ARGUMENTS = CardComponent(
    title="run_sql arguments",
    markdown=True,
    content="```json\n"
    + json.dumps({"sql": "SELECT name,\n  SUM(total)\nFROM orders", "max_rows": 10}, indent=2)
    + "\n```",
)


def slack_cells(df: DataFrameComponent) -> list[str]:
    [message] = slack_render(UiComponent(rich_component=df))
    table = next(b for b in message.blocks if b["type"] == "table")
    return [cell["text"] for cell in table["rows"][1]]


def teams_cells(df: DataFrameComponent) -> list[str]:
    rendering = teams_render(UiComponent(rich_component=df))
    assert rendering is not None and rendering.card is not None
    table = next(e for e in rendering.card["body"] if e["type"] == "Table")
    return [cell["items"][0]["inlines"][0]["text"] for cell in table["rows"][1]["cells"]]


def test_table_numbers_read_the_same_in_both_channels() -> None:
    """Slack showed 968424.3 where Teams showed 968,424.30."""
    assert (
        slack_cells(REVENUE) == teams_cells(REVENUE) == ["Tidal Retail GmbH", "968,424.30", "1,204"]
    )


@pytest.mark.parametrize(
    ("locale", "revenue", "orders"),
    [
        ("en-US", "968,424.30", "1,204"),
        ("de-DE", "968.424,30", "1.204"),
        ("fr-FR", "968\u202f424,30", "1\u202f204"),
        ("de-CH", "968\u2019424.30", "1\u2019204"),
    ],
)
def test_numbers_follow_the_askers_locale(locale: str, revenue: str, orders: str) -> None:
    with number_locale(locale):
        assert slack_cells(REVENUE)[1:] == teams_cells(REVENUE)[1:] == [revenue, orders]


@settings(max_examples=200, deadline=None)
@given(
    value=st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False)),
    locale=st.sampled_from(["en-US", "de-DE", "fr-FR", "sv-SE", "ja-JP", "xx", ""]),
)
def test_any_number_reads_back_to_the_same_value(value: int | float, locale: str) -> None:
    group, decimal = separators(locale)
    text = format_number(value, locale)
    plain = text.replace(group, "").replace(decimal, ".")
    if isinstance(value, int):
        assert int(plain) == value
    elif abs(value) >= 1e15:
        assert float(plain) == pytest.approx(value, rel=1e-5)
    elif abs(value) >= 1000:
        assert float(plain) == pytest.approx(value, abs=0.0051)
    else:
        assert float(plain) == pytest.approx(value, rel=1e-3, abs=1e-300)


def test_admin_detail_is_readable_in_both_channels() -> None:
    """A tool's arguments showed as JSON with escaped \\n in the SQL and a literal "json"."""
    [message] = slack_render(UiComponent(rich_component=ARGUMENTS))
    slack_text = json.dumps(message.blocks)
    assert "SELECT name,\\n  SUM(total)\\nFROM orders" in slack_text  # real line breaks
    assert "\\\\n" not in slack_text and "```json" not in slack_text and "```sql" not in slack_text
    assert "*max_rows*: `10`" in slack_text
    rendering = teams_render(UiComponent(rich_component=ARGUMENTS))
    assert rendering is not None and rendering.card is not None
    teams_text = json.dumps(rendering.card)
    assert "SELECT name,\\n  SUM(total)\\nFROM orders" in teams_text
    assert "\\\\n" not in teams_text and '"json' not in teams_text
