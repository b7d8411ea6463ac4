"""Data components: tables (``DataFrameComponent``) and charts (``ChartComponent``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_core.components.base import ComponentType, RichComponent

ColumnType = Literal["number", "string", "boolean", "date", "null"]


def _column_type(values: Sequence[Any]) -> ColumnType:
    present = [v for v in values if v is not None]
    if not present:
        return "null"
    if all(isinstance(v, bool) for v in present):
        return "boolean"
    if all(isinstance(v, int | float | Decimal) and not isinstance(v, bool) for v in present):
        return "number"
    if all(isinstance(v, dt.date) for v in present):
        return "date"
    return "string"


class DataFrameComponent(RichComponent):
    """A table of rows; ``row_count`` is the full result size, ``rows`` what is shown.

    >>> df = DataFrameComponent.from_records([{"a": 1, "b": "x"}, {"a": 2, "b": None}])
    >>> (df.columns, df.column_types, df.row_count)
    (['a', 'b'], {'a': 'number', 'b': 'string'}, 2)
    """

    type: ComponentType = ComponentType.DATAFRAME
    rows: list[dict[str, Any]] = Field(default_factory=list)
    columns: list[str] = Field(default_factory=list)
    column_types: dict[str, ColumnType] = Field(default_factory=dict)
    title: str | None = None
    description: str | None = None
    row_count: int = 0
    column_count: int = 0
    max_rows_displayed: int = 100
    searchable: bool = True
    sortable: bool = True
    filterable: bool = True
    exportable: bool = True
    striped: bool = True
    bordered: bool = True
    compact: bool = False
    paginated: bool = True
    page_size: int = 25

    @classmethod
    def from_records(
        cls,
        records: Sequence[Mapping[str, Any]],
        *,
        title: str | None = None,
        description: str | None = None,
        columns: Sequence[str] | None = None,
        total_rows: int | None = None,
        **options: Any,
    ) -> DataFrameComponent:
        """Build from dict rows; column order is first-seen unless ``columns`` is given.

        ``total_rows`` is the size of the full result when ``records`` is a capped prefix.
        """
        if columns is None:
            seen: dict[str, None] = {}
            for record in records:
                seen.update(dict.fromkeys(record))
            columns = list(seen)
        rows = [{c: record.get(c) for c in columns} for record in records]
        return cls(
            rows=rows,
            columns=list(columns),
            column_types={c: _column_type([r[c] for r in rows]) for c in columns},
            title=title,
            description=description,
            row_count=len(rows) if total_rows is None else total_rows,
            column_count=len(columns),
            **options,
        )

    @property
    def is_truncated(self) -> bool:
        return self.row_count > len(self.rows)


ChartType = Literal["bar", "line", "pie", "scatter"]


class ChartSeries(BaseModel):
    """One named series of values aligned with the chart's ``x`` values."""

    model_config = ConfigDict(defer_build=True)

    name: str
    values: list[float | None]


class ChartComponent(RichComponent):
    """A chart as data, so channels with native charts can draw it.

    ``image_url`` holds a rendering (a PNG data URI or a hosted URL) for channels without
    native charts.

    >>> ChartComponent(chart_type="bar", x=["a", "b"],
    ...                series=[ChartSeries(name="n", values=[1, 2])]).chart_type
    'bar'
    """

    type: ComponentType = ComponentType.CHART
    chart_type: ChartType
    x: list[str | float] = Field(default_factory=list)
    series: list[ChartSeries] = Field(default_factory=list)
    title: str | None = None
    x_label: str | None = None
    y_label: str | None = None
    image_url: str | None = None
    width: str | int | None = None
    height: str | int | None = None
    config: dict[str, Any] = Field(default_factory=dict)
