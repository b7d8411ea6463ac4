"""Where an answer's data came from: ``Source`` (one query and its tables) and
``SourcesComponent`` (every source of one answer), rendered as citations.

A source names its tables for everyone; its ``query`` (the SQL) is tool arguments, so who
sees it follows the ``tool_arguments`` UI feature: ``queries_public`` says the feature is
open to everyone (renderers may then show the SQL to all), ``asker_sees_queries`` that the
asker may see it. A renderer never shows a query to a room otherwise.

>>> s = Source(tool="run_sql", query="SELECT * FROM orders JOIN customers USING (id)",
...            tables=["orders", "customers"], rows=12)
>>> sources = SourcesComponent(sources=[s])
>>> (sources.tables(), sources.summary())
(['orders', 'customers'], 'Sources: orders, customers · 1 query · 12 rows')
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_core.components.base import ComponentType, RichComponent


class Source(BaseModel):
    """One query an answer used: what ran (``query``), over which ``tables``, how many rows.

    ``rows_exact`` is False when ``rows`` is a lower bound (counting stopped early).

    >>> Source(tool="run_sql", query="SELECT 1", rows=1).rows_text()
    '1 row'
    """

    model_config = ConfigDict(defer_build=True)

    kind: Literal["sql"] = "sql"
    tool: str
    query: str
    tables: list[str] = Field(default_factory=list)
    rows: int | None = None
    rows_exact: bool = True

    def rows_text(self) -> str:
        """``1 row``, ``1,234 rows``, ``more than 5,000 rows`` (empty when unknown)."""
        if self.rows is None:
            return ""
        count = f"{self.rows:,}" if self.rows_exact else f"more than {self.rows:,}"
        return f"{count} row{'' if self.rows == 1 and self.rows_exact else 's'}"

    def label(self) -> str:
        """A short title: the tables it read (``orders, customers``) or ``Query``."""
        return ", ".join(self.tables) if self.tables else "Query"


class SourcesComponent(RichComponent):
    """Every source one answer used, in the order they ran (see the module docstring).

    >>> SourcesComponent(sources=[]).summary()
    ''
    """

    type: ComponentType = ComponentType.SOURCES
    sources: list[Source] = Field(default_factory=list)
    queries_public: bool = False
    """The SQL may be shown to everyone (the ``tool_arguments`` feature is open to all)."""
    asker_sees_queries: bool = False
    """The asker may see the SQL (the ``tool_arguments`` feature is open to them)."""

    def tables(self) -> list[str]:
        """Every table, once, in first-seen order."""
        seen: dict[str, None] = {}
        for source in self.sources:
            seen.update(dict.fromkeys(source.tables))
        return list(seen)

    def summary(self) -> str:
        """One line for everyone: tables, number of queries, rows of a single query."""
        if not self.sources:
            return ""
        tables = self.tables()
        count = len(self.sources)
        parts = [f"Sources: {', '.join(tables)}" if tables else "Sources"]
        parts.append(f"{count} quer{'y' if count == 1 else 'ies'}")
        if count == 1 and (rows := self.sources[0].rows_text()):
            parts.append(rows)
        return " · ".join(parts)
