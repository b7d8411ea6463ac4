"""Your database: the SQL runner for any SQLAlchemy URL, and schema awareness at any size.

``SqlAlchemyRunner`` runs the agent's queries read-only by construction; ``SchemaSource``
keeps an index of the database's tables (cached, refreshed) and ``SchemaContextEnhancer``
puts the tables relevant to each question into the LLM's context. Everything loads on first
use (PEP 562), so ``import agent_core`` does not pay for SQLAlchemy or sqlglot.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_core.database.checks import WriteAccess, check_write_access
    from agent_core.database.runner import SqlAlchemyRunner
    from agent_core.database.urls import DatabaseConfigError, mask_url

_EXPORTS = {
    "SqlAlchemyRunner": "runner",
    "DatabaseConfigError": "urls",
    "mask_url": "urls",
    "WriteAccess": "checks",
    "check_write_access": "checks",
}

__all__ = [
    "DatabaseConfigError",
    "SqlAlchemyRunner",
    "WriteAccess",
    "check_write_access",
    "mask_url",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agent_core.database' has no attribute {name!r}")
    return getattr(importlib.import_module(f"agent_core.database.{module}"), name)
