"""What the demo shop's top-customers question answers, read from the shop a test's console
or agent built.

The shop covers the two years before the current month (``bots.demo.data.month_window``),
so its figures change on the first of every month: tests compute them from the data instead
of naming one month's numbers (they broke on 1 December once)."""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path

from bots.demo.data import DATABASE_NAME
from bots.demo.model import DEMO_QUESTIONS


def top_customer(data_dir: Path) -> tuple[str, str]:
    """The top customer's name and revenue as both channels print it (``968,424.30``)."""
    [question] = [q for q in DEMO_QUESTIONS if q.key == "top_customers"]
    db = sqlite3.connect(f"{(data_dir / DATABASE_NAME).resolve().as_uri()}?mode=ro", uri=True)
    try:
        name, _, revenue, _ = db.execute(question.sql).fetchone()
    finally:
        db.close()
    return str(name), f"{revenue:,.2f}"


def shop_month(data_dir: Path) -> dt.date:
    """The month the shop was built in (its window ends there): the date of the process
    that built it."""
    db = sqlite3.connect(f"{(data_dir / DATABASE_NAME).resolve().as_uri()}?mode=ro", uri=True)
    try:
        [(end,)] = db.execute("SELECT value FROM demo_meta WHERE key = 'end_month'").fetchall()
    finally:
        db.close()
    return dt.date.fromisoformat(end)
