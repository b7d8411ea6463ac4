"""A query as a Teams citation (issue 13, item 3): any tables and any SQL give a citation
within Teams' limits whose content is a valid Adaptive Card; without leave, no SQL at all."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.teams.activities import (
    MAX_CITED_SQL,
    ai_entity,
    citation_markers,
    source_citation,
)
from agent_core.components import Source
from tests.adapters.teams.schemas import assert_valid_card


@settings(max_examples=40, deadline=None)
@given(
    sql=st.text(min_size=1, max_size=12_000),
    tables=st.lists(st.text(min_size=1, max_size=200), max_size=30),
    rows=st.none() | st.integers(0, 10**12),
)
def test_any_query_is_a_citation_within_teams_limits(
    sql: str, tables: list[str], rows: int | None
) -> None:
    source = Source(tool="run_sql", query=sql, tables=tables, rows=rows)
    [claim] = ai_entity([source_citation(source, show_query=True)])["citation"]
    appearance = claim["appearance"]
    assert len(appearance["abstract"]) <= 160 and len(appearance["name"]) <= 80
    card = json.loads(appearance["text"])
    assert_valid_card(card)
    shown = card["body"][-1]["inlines"][0]["text"]
    assert len(shown) <= MAX_CITED_SQL and sql.strip().startswith(shown.removesuffix("…"))

    [hidden] = ai_entity([source_citation(source, show_query=False)])["citation"]
    assert "text" not in hidden["appearance"]


def test_markers_name_only_the_citations_teams_shows() -> None:
    assert citation_markers(1, 1) == "Sources: [1]"
    assert citation_markers(19, 5) == "Sources: [19] [20]"
    assert citation_markers(21, 2) == ""
