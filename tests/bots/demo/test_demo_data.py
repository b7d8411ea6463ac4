"""The sample database: generated locally, deterministic, and moving with the calendar."""

from __future__ import annotations

import datetime as dt
import hashlib
import sqlite3
from pathlib import Path

import pytest

from bots.demo.data import DATABASE_NAME, ensure_demo_database, month_window

TODAY = dt.date(2026, 3, 17)


def _digest(path: Path) -> str:
    db = sqlite3.connect(path)
    try:
        dump = "\n".join(db.iterdump())
    finally:
        db.close()
    return hashlib.sha256(dump.encode()).hexdigest()


def _scalar(path: Path, sql: str) -> object:
    db = sqlite3.connect(path)
    try:
        return db.execute(sql).fetchone()[0]
    finally:
        db.close()


def test_a_few_thousand_rows_over_two_full_years(tmp_path: Path) -> None:
    path = ensure_demo_database(tmp_path, today=TODAY)
    assert path == tmp_path / DATABASE_NAME
    counts = {
        table: _scalar(path, f"SELECT COUNT(*) FROM {table}")
        for table in ("customers", "products", "orders", "order_items")
    }
    assert counts["customers"] == 240 and counts["products"] == 24
    assert 1500 <= int(str(counts["orders"])) <= 4000
    assert 3000 <= int(str(counts["order_items"])) <= 10000
    assert _scalar(path, "SELECT MIN(order_date) FROM orders") >= "2024-03-01"  # type: ignore[operator]
    assert _scalar(path, "SELECT MAX(order_date) FROM orders") < "2026-03-01"  # type: ignore[operator]
    months = _scalar(path, "SELECT COUNT(DISTINCT strftime('%Y-%m', order_date)) FROM orders")
    assert months == 24
    orphans = _scalar(
        path,
        "SELECT COUNT(*) FROM order_items oi LEFT JOIN orders o ON o.id = oi.order_id "
        "LEFT JOIN products p ON p.id = oi.product_id WHERE o.id IS NULL OR p.id IS NULL",
    )
    assert orphans == 0
    statuses = _scalar(path, "SELECT group_concat(DISTINCT status) FROM orders")
    assert set(str(statuses).split(",")) == {"completed", "shipped", "cancelled"}


def test_same_seed_and_month_give_the_same_data(tmp_path: Path) -> None:
    first = ensure_demo_database(tmp_path / "a", today=TODAY)
    second = ensure_demo_database(tmp_path / "b", today=TODAY.replace(day=2))
    other_seed = ensure_demo_database(tmp_path / "c", today=TODAY, seed=7)
    assert _digest(first) == _digest(second)
    assert _digest(first) != _digest(other_seed)


def test_an_up_to_date_database_is_reused(tmp_path: Path) -> None:
    path = ensure_demo_database(tmp_path, today=TODAY)
    db = sqlite3.connect(path)
    with db:
        db.execute("INSERT INTO products VALUES (999, 'Marker', 'Test', 1.0)")
    db.close()
    ensure_demo_database(tmp_path, today=TODAY.replace(day=28))
    assert _scalar(path, "SELECT COUNT(*) FROM products WHERE id = 999") == 1


def test_a_new_month_rebuilds_the_window(tmp_path: Path) -> None:
    path = ensure_demo_database(tmp_path, today=TODAY)
    ensure_demo_database(tmp_path, today=dt.date(2026, 4, 1))
    assert _scalar(path, "SELECT MAX(order_date) FROM orders") >= "2026-03-01"  # type: ignore[operator]
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize("content", [b"", b"not a database at all"])
def test_a_damaged_file_is_replaced(tmp_path: Path, content: bytes) -> None:
    (tmp_path / DATABASE_NAME).write_bytes(content)
    path = ensure_demo_database(tmp_path, today=TODAY)
    assert _scalar(path, "SELECT COUNT(*) FROM products") == 24


def test_month_window_crosses_years() -> None:
    assert month_window(dt.date(2026, 1, 31)) == (dt.date(2024, 1, 1), dt.date(2026, 1, 1))
