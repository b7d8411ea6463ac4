"""Schedules for tests: a weekday question, an alert, with the fields tests vary; a shop
whose orders today the alert tests move."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from agent_core.schedules.alerts import AlertRule
from agent_core.schedules.model import Place, Schedule
from agent_core.schedules.recurrence import Recurrence

WEEKDAYS_9 = Recurrence(frequency="weekdays", hour=9, timezone="Europe/Paris")


def schedule(
    *,
    owner: str = "slack:T1:U1",
    workspace: str = "slack:T1",
    next_due: float = 1_000_000.0,
    created_at: float = 0.0,
    recurrence: Recurrence = WEEKDAYS_9,
    alert: AlertRule | None = None,
    **changes: Any,
) -> Schedule:
    return Schedule(
        workspace=workspace,
        owner=owner,
        owner_name="ana",
        place=Place(thread_key="slack:T1:C1:1.0", stop_owner="T1:U1", context={"channel": "C1"}),
        recurrence=recurrence,
        question="revenue yesterday by region",
        alert=alert,
        created_at=created_at,
        next_due=next_due,
        **changes,
    )


ORDERS_BELOW_100 = AlertRule(
    sql="SELECT count(*) AS orders FROM orders",
    column="orders",
    operator="<",
    threshold=100,
    condition="orders drop below 100",
)


def shop(folder: Path) -> Path:
    """A SQLite shop with today's orders in ``counts.n`` (150 to start)."""
    path = folder / "shop.db"
    db = sqlite3.connect(path)
    db.executescript("CREATE TABLE counts (n INTEGER); INSERT INTO counts VALUES (150);")
    db.close()
    return path


def set_orders(path: Path, count: int) -> None:
    db = sqlite3.connect(path)
    db.execute("UPDATE counts SET n = ?", (count,))
    db.commit()
    db.close()


COUNT_RULE = ORDERS_BELOW_100.model_copy(
    update={"sql": "SELECT n AS orders FROM counts", "column": "orders"}
)
"""The alert on ``shop``; ``RULE`` is what the model writes for it (``alert_rule``'s input)."""
RULE = COUNT_RULE.model_dump(include={"sql", "column", "operator", "threshold"})
