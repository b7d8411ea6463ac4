"""Training material from a folder the user names: documentation and question -> SQL examples.

``*.md`` and ``*.txt`` files become notes (one per paragraph group of up to ~1,500
characters); ``*.sql`` files hold examples, each a ``--`` comment with the question followed
by the SQL that answers it, ending with ``;``::

    -- Which customers spent the most last year?
    SELECT c.name, SUM(o.total) FROM customers c JOIN orders o ON o.customer_id = c.id
    WHERE o.placed_at >= date_trunc('year', now()) - interval '1 year' GROUP BY 1
    ORDER BY 2 DESC LIMIT 10;

>>> parse_examples("-- How many orders?\\nSELECT count(*) FROM orders;", "x.sql")
[Example(question='How many orders?', sql='SELECT count(*) FROM orders', source='x.sql')]
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

NOTE_CHARS = 1500


class Note(BaseModel):
    """A piece of documentation (business rules, what a table means)."""

    text: str
    source: str


class Example(BaseModel):
    """A question and the SQL that answers it, written by the people who know the data."""

    question: str
    sql: str
    source: str


class Training(BaseModel):
    notes: list[Note] = []
    examples: list[Example] = []


def split_notes(text: str, source: str) -> list[Note]:
    """Paragraphs grouped into notes of at most ``NOTE_CHARS`` characters."""
    notes: list[Note] = []
    current: list[str] = []
    for paragraph in (p.strip() for p in text.split("\n\n")):
        if not paragraph:
            continue
        if current and sum(map(len, current)) + len(paragraph) > NOTE_CHARS:
            notes.append(Note(text="\n\n".join(current), source=source))
            current = []
        current.append(paragraph[: NOTE_CHARS * 2])
    if current:
        notes.append(Note(text="\n\n".join(current), source=source))
    return notes


def parse_examples(text: str, source: str) -> list[Example]:
    """``-- question`` lines then SQL up to a ``;`` (or the next question, or the end)."""
    examples: list[Example] = []
    question: list[str] = []
    sql: list[str] = []

    def close() -> None:
        body = "\n".join(sql).strip().rstrip(";").strip()
        if question and body:
            examples.append(Example(question=" ".join(question), sql=body, source=source))
        question.clear()
        sql.clear()

    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("--") and not sql:
            question.append(stripped.lstrip("-").strip())
        elif stripped.startswith("--") and sql:
            close()
            question.append(stripped.lstrip("-").strip())
        elif stripped:
            sql.append(line)
            if stripped.endswith(";"):
                close()
    close()
    return examples


def load_training(folder: Path) -> Training:
    """Every note and example under ``folder`` (recursively, in name order)."""
    training = Training()
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        source = str(path.relative_to(folder))
        text = path.read_text(encoding="utf-8", errors="replace")
        if path.suffix in (".md", ".txt"):
            training.notes.extend(split_notes(text, source))
        elif path.suffix == ".sql":
            training.examples.extend(parse_examples(text, source))
    return training
