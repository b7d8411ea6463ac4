"""Components: lifecycle with stable ids, tables, serialisation of the envelope."""

from __future__ import annotations

import datetime as dt

import pytest

from agent_core import (
    DataFrameComponent,
    NotificationComponent,
    RichTextComponent,
    SimpleTextComponent,
    StatusCardComponent,
    UiComponent,
)


def test_lifecycle_keeps_the_id() -> None:
    card = StatusCardComponent(title="run_sql", status="running")
    done = card.set_status("completed", "12 rows")
    gone = done.remove()
    assert card.id == done.id == gone.id
    assert [c.lifecycle.value for c in (card, done, gone)] == ["create", "update", "remove"]
    assert not gone.visible
    with pytest.raises(TypeError, match="no field"):
        card.update(colour="red")


def test_from_records_types_and_truncation() -> None:
    rows = [{"day": dt.date(2026, 1, 1), "n": 3, "ok": True}, {"day": None, "n": 2.5, "x": "y"}]
    frame = DataFrameComponent.from_records(rows, title="T", total_rows=10)
    assert frame.columns == ["day", "n", "ok", "x"]
    assert frame.column_types == {"day": "date", "n": "number", "ok": "boolean", "x": "string"}
    assert frame.rows[1]["ok"] is None and frame.row_count == 10 and frame.is_truncated


def test_envelope_serialises_subclass_fields() -> None:
    """Regression: the envelope dumped components as their base class, losing fields."""
    wrapped = UiComponent(
        rich_component=NotificationComponent(message="hi", level="warning"),
        simple_component=SimpleTextComponent(text="hi"),
    )
    dumped = wrapped.model_dump()
    assert dumped["rich_component"]["level"] == "warning"
    assert dumped["simple_component"]["text"] == "hi"


def test_text_versions() -> None:
    text = RichTextComponent(content="a", delta="a", streaming=True)
    later = text.update(content="ab", delta="b")
    assert later.id == text.id and later.content == "ab" and later.streaming
