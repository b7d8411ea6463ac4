"""Load the demo shop into PostgreSQL, for ``docker compose --profile demo-db`` (run by the
``demo-db-seed`` service with the Threadline image, whose ``postgres`` extra brings psycopg).

    DEMO_DB_ADMIN_URL=postgresql://postgres:PASSWORD@postgres:5432/postgres \
    DEMO_DB_READER_PASSWORD=... python deploy/demo_postgres.py

Builds this month's demo data (``bots.demo.data``, the same generator as the built-in
SQLite demo), then (re)creates the ``shop`` database's tables from it and a ``threadline_reader``
role that may only read them: the URL Threadline gets is that role's
(``postgresql://threadline_reader:...@postgres:5432/shop``). Running it again replaces the
data with the current month's. Exits 0 once loaded, printing the row count of each table.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import tempfile
from pathlib import Path

import psycopg
from psycopg import sql

from bots.demo.data import ensure_demo_database

DATABASE = "shop"
READER = "threadline_reader"

TABLES = {
    "customers": """
        id integer PRIMARY KEY,
        name text NOT NULL,
        country text NOT NULL,
        segment text NOT NULL,
        created_at date NOT NULL""",
    "products": """
        id integer PRIMARY KEY,
        name text NOT NULL,
        category text NOT NULL,
        unit_price numeric(10, 2) NOT NULL""",
    "orders": """
        id integer PRIMARY KEY,
        customer_id integer NOT NULL REFERENCES customers(id),
        order_date date NOT NULL,
        status text NOT NULL""",
    "order_items": """
        id integer PRIMARY KEY,
        order_id integer NOT NULL REFERENCES orders(id),
        product_id integer NOT NULL REFERENCES products(id),
        quantity integer NOT NULL,
        unit_price numeric(10, 2) NOT NULL""",
}
"""The demo tables in PostgreSQL's types, in the order their foreign keys need."""

COMMENTS = {
    "customers": "People and companies who buy from the shop",
    "customers.segment": "Enterprise, Mid-market or Small business",
    "products.unit_price": "List price in USD",
    "orders.status": "completed, shipped or cancelled",
    "order_items.unit_price": "Price paid per unit in USD, after discount",
}


def create_database_and_reader(admin_url: str, reader_password: str) -> str:
    """The ``shop`` database and the read-only role (created once); the database's URL."""
    with psycopg.connect(admin_url, autocommit=True) as admin:
        if not admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE]).fetchone():
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
        exists = admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [READER]).fetchone()
        verb = "ALTER" if exists else "CREATE"
        admin.execute(
            sql.SQL(verb + " ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(READER), sql.Literal(reader_password)
            )
        )
    return str(psycopg.conninfo.make_conninfo(admin_url, dbname=DATABASE))


def load(shop_url: str, demo: Path) -> dict[str, int]:
    """Replace the tables of ``shop_url`` with the rows of the SQLite demo database."""
    source = sqlite3.connect(f"file:{demo}?mode=ro", uri=True)
    counts: dict[str, int] = {}
    with psycopg.connect(shop_url) as shop:
        shop.execute(sql.SQL("REVOKE CREATE ON SCHEMA public FROM PUBLIC"))
        for table in reversed(list(TABLES)):
            shop.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))
        for table, columns in TABLES.items():
            name = sql.Identifier(table)
            shop.execute(sql.SQL("CREATE TABLE {} ({})").format(name, sql.SQL(columns)))
            rows = source.execute(f'SELECT * FROM "{table}" ORDER BY id').fetchall()
            with shop.cursor().copy(sql.SQL("COPY {} FROM STDIN").format(name)) as copy:
                for row in rows:
                    copy.write_row(row)
            counts[table] = len(rows)
        for target, text in COMMENTS.items():
            table, _, column = target.partition(".")
            kind = "COLUMN" if column else "TABLE"
            what = sql.Identifier(table, column) if column else sql.Identifier(table)
            shop.execute(
                sql.SQL("COMMENT ON " + kind + " {} IS {}").format(what, sql.Literal(text))
            )
        shop.execute(
            sql.SQL("GRANT USAGE ON SCHEMA public TO {0}; GRANT SELECT ON {1} TO {0}").format(
                sql.Identifier(READER), sql.SQL(", ").join(map(sql.Identifier, TABLES))
            )
        )
    source.close()
    return counts


def main() -> int:
    admin_url = os.environ.get("DEMO_DB_ADMIN_URL")
    reader_password = os.environ.get("DEMO_DB_READER_PASSWORD")
    if not admin_url or not reader_password:
        print("set DEMO_DB_ADMIN_URL and DEMO_DB_READER_PASSWORD", file=sys.stderr)
        return 2
    shop_url = create_database_and_reader(admin_url, reader_password)
    with tempfile.TemporaryDirectory() as directory:
        counts = load(shop_url, ensure_demo_database(Path(directory)))
    print("demo shop loaded:", ", ".join(f"{t} {n}" for t, n in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
