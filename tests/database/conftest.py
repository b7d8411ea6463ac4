"""Fixtures for the database runner: real SQLite files, a real PostgreSQL server, DuckDB."""

from __future__ import annotations

from tests.tools.conftest import shop_db

__all__ = ["shop_db"]
