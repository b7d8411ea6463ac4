"""``SchemaIndex``: which tables a question needs, within a token budget.

Each table is a document of its names, column names and comments, plus the questions of
the training examples whose SQL reads it (so "how much did clients spend" finds the
``invoices`` table an example once answered it with). A question is ranked against them
with the memory's lexical relevance (``agent_core.memory.ranking``: stemmed, synonym-aware
TF-IDF, here over Unicode words); the best tables come first, each followed by the tables
its foreign keys point to (the joins it needs), until the budget is spent. A catalog small
enough (``whole_below`` tokens) is sent whole: retrieval only pays off on big ones.

>>> from agent_core.database.catalog import Catalog, ColumnInfo, TableInfo
>>> def table(name, *columns):
...     return TableInfo(name=name, ddl=f"CREATE TABLE {name} (...);",
...                      columns=[ColumnInfo(name=c, type="TEXT") for c in columns])
>>> catalog = Catalog(backend="sqlite", tables=[table("customers", "email"),
...                   table("shipments", "carrier"), table("invoices", "amount")])
>>> index = SchemaIndex(catalog, whole_below=0)
>>> [t.name for t in index.select("which clients have an email?", max_tokens=10).tables]
['customers']
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import sqlglot
from pydantic import BaseModel
from sqlglot import exp
from sqlglot.errors import SqlglotError

from agent_core.database.catalog import Catalog, TableInfo, estimate_tokens
from agent_core.database.training import Example, Note, Training
from agent_core.memory.ranking import Analyzer, RelevanceIndex

DEFAULT_MAX_TOKENS = 8000
WHOLE_CATALOG_BELOW = 2000
"""Catalogs up to this many tokens are sent whole."""
MAX_TABLES = 40
TRAINING_SHARE = 0.25
"""At most this part of the budget goes to notes and examples."""

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORDS = re.compile(r"[^\W_]+")


class SchemaAnalyzer(Analyzer):
    """The memory's analyzer over Unicode words, with ``snake_case`` and ``camelCase``
    names split into their words."""

    def terms(self, text: str) -> list[str]:
        spaced = _CAMEL.sub(" ", text)
        return super().terms(" ".join(_WORDS.findall(spaced.lower())))


class SchemaContext(BaseModel):
    """What one turn's prompt gets: tables, notes, examples, and how much of the catalog
    they are."""

    tables: list[TableInfo]
    notes: list[Note] = []
    examples: list[Example] = []
    total_tables: int
    whole: bool = False

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.render())

    def render(self) -> str:
        if self.whole:
            head = f"All {self.total_tables} tables of the database:"
        else:
            head = (
                f"The {len(self.tables)} of the database's {self.total_tables} tables most "
                "relevant to this question (to look for others, query the database's catalog, "
                "e.g. information_schema.tables):"
            )
        parts = [head, *(table.ddl for table in self.tables)]
        if self.examples:
            parts.append("Verified examples (question -> SQL) from the data team:")
            parts += [f"-- {e.question}\n{e.sql};" for e in self.examples]
        if self.notes:
            parts.append("Documentation:")
            parts += [note.text for note in self.notes]
        return "\n\n".join(parts)


def tables_in(sql: str, dialect: str | None = None) -> set[str]:
    """Lower-case names of the tables a query reads (empty when it does not parse)."""
    try:
        statement = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError:
        return set()
    return {table.name.lower() for table in statement.find_all(exp.Table) if table.name}


class SchemaIndex:
    """The catalog and training material, indexed for ``select``."""

    def __init__(
        self,
        catalog: Catalog,
        training: Training | None = None,
        *,
        whole_below: int = WHOLE_CATALOG_BELOW,
        analyzer: Analyzer | None = None,
    ) -> None:
        self.catalog = catalog
        self.training = training or Training()
        self.whole_below = whole_below
        analyzer = analyzer or SchemaAnalyzer()
        self.tables = {table.qualified_name: table for table in catalog.tables}
        self._by_name = {table.name.lower(): table.qualified_name for table in catalog.tables}
        self._tables = RelevanceIndex(analyzer)
        self._notes = RelevanceIndex(analyzer)
        self._examples = RelevanceIndex(analyzer)
        asked = self._questions_by_table()
        for key, table in self.tables.items():
            name_words = f"{table.name} {table.name}"  # the name counts double
            self._tables.add(key, " ".join([name_words, table.words(), *asked.get(key, [])]))
        for number, note in enumerate(self.training.notes):
            self._notes.add(number, note.text)
        for number, example in enumerate(self.training.examples):
            self._examples.add(number, example.question)

    def _questions_by_table(self) -> dict[str, list[str]]:
        asked: dict[str, list[str]] = {}
        for example in self.training.examples:
            for name in tables_in(example.sql):
                key = self._by_name.get(name)
                if key is not None:
                    asked.setdefault(key, []).append(example.question)
        return asked

    def select(
        self,
        question: str,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        also: Sequence[str] = (),
    ) -> SchemaContext:
        """The tables (and notes, examples) for ``question`` within ``max_tokens``;
        ``also``: tables to keep if there is room (those of the conversation's last turn)."""
        examples = self._pick_examples(question, int(max_tokens * TRAINING_SHARE))
        spent = sum(estimate_tokens(f"{e.question}\n{e.sql}") for e in examples)
        notes = self._pick_notes(question, int(max_tokens * TRAINING_SHARE) - spent)
        spent += sum(estimate_tokens(note.text) for note in notes)
        total = len(self.tables)
        if self.catalog.tokens <= min(self.whole_below, max_tokens - spent):
            return SchemaContext(
                tables=list(self.tables.values()),
                notes=notes,
                examples=examples,
                total_tables=total,
                whole=True,
            )
        tables = self._fill(self._candidates(question, also), max_tokens - spent)
        return SchemaContext(tables=tables, notes=notes, examples=examples, total_tables=total)

    def _candidates(self, question: str, also: Sequence[str]) -> Iterable[str]:
        """Table keys best first: each hit, then the tables it references."""
        hits = [str(key) for key, _ in self._tables.search(question, limit=MAX_TABLES)]
        for key in hits:
            yield key
            yield from self.tables[key].references
        yield from also

    def _fill(self, candidates: Iterable[str], budget: int) -> list[TableInfo]:
        chosen: dict[str, TableInfo] = {}
        spent = 0
        for key in candidates:
            table = self.tables.get(key)
            if table is None or key in chosen or spent + table.tokens > budget:
                continue
            chosen[key] = table
            spent += table.tokens
            if len(chosen) >= MAX_TABLES:
                break
        return list(chosen.values())

    def _pick_examples(self, question: str, budget: int) -> list[Example]:
        picked: list[Example] = []
        for key, _ in self._examples.search(question, limit=3, threshold=0.3):
            example = self.training.examples[int(str(key))]
            budget -= estimate_tokens(f"{example.question}\n{example.sql}")
            if budget < 0:
                break
            picked.append(example)
        return picked

    def _pick_notes(self, question: str, budget: int) -> list[Note]:
        picked: list[Note] = []
        for key, _ in self._notes.search(question, limit=3, threshold=0.2):
            note = self.training.notes[int(str(key))]
            budget -= estimate_tokens(note.text)
            if budget < 0:
                break
            picked.append(note)
        return picked
