"""Fixtures for the built-in tools: a real SQLite file and tool contexts."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_core.context import ToolContext
from agent_core.memory.in_memory import InMemoryAgentMemory
from agent_core.users import User

ContextFactory = Callable[..., ToolContext]


@pytest.fixture
def shop_db(tmp_path: Path) -> Path:
    """``sales(month, region, revenue, share_pct)``: 24 months x 3 regions, and a blob."""
    path = tmp_path / "shop.db"
    db = sqlite3.connect(path)
    with db:
        db.execute("CREATE TABLE sales (month TEXT, region TEXT, revenue REAL, share_pct REAL)")
        db.executemany(
            "INSERT INTO sales VALUES (?, ?, ?, ?)",
            [
                (f"{2023 + m // 12}-{m % 12 + 1:02d}", region, 1000.0 + 10 * m + n, share)
                for m in range(24)
                for n, (region, share) in enumerate(
                    [("North", 50.0), ("South", 30.0), ("West", 20.0)]
                )
            ],
        )
        db.execute("CREATE TABLE files (name TEXT, body BLOB)")
        db.execute("INSERT INTO files VALUES ('a.bin', x'00010203')")
    db.close()
    return path


@pytest.fixture
def memory() -> InMemoryAgentMemory:
    return InMemoryAgentMemory()


@pytest.fixture
def make_context(memory: InMemoryAgentMemory) -> ContextFactory:
    def make(
        question: str = "", *, features: tuple[str, ...] = (), groups: tuple[str, ...] = ("user",)
    ) -> ToolContext:
        return ToolContext(
            user=User(id="u1", metadata={"workspace_id": "T1"}, group_memberships=list(groups)),
            conversation_id="c1",
            request_id="r1",
            agent_memory=memory,
            question=question,
            metadata={"ui_features_available": list(features)},
        )

    return make
