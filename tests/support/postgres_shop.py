"""A small shop in a real PostgreSQL database, with a user that can write (``owner``) and one
that may only read (``reader``), comments, foreign keys, reserved words and non-ASCII names."""

from __future__ import annotations

from dataclasses import dataclass

from tests.support.postgres_server import PostgresServer

OWNER, OWNER_PASSWORD = "owner", "owner-pw-Zq7"
READER, READER_PASSWORD = "reader", "reader-pw-Xk4"

SCHEMA = [
    "CREATE TABLE customers (id integer PRIMARY KEY, name text NOT NULL, country text)",
    "COMMENT ON TABLE customers IS 'People and companies who buy from the shop'",
    "COMMENT ON COLUMN customers.country IS 'ISO country code'",
    "CREATE TABLE orders (id integer PRIMARY KEY, customer_id integer REFERENCES customers(id), "
    "placed_on date NOT NULL, total numeric(10, 2) NOT NULL, status text NOT NULL)",
    "COMMENT ON TABLE orders IS 'One row per purchase'",
    'CREATE TABLE "order" ("select" integer, "from" text)',
    'CREATE TABLE "café" ("größe" text, "Prix" numeric)',
    "INSERT INTO customers VALUES (1, 'Acme', 'DE'), (2, 'Globex', 'FR'), (3, 'Initech', 'US')",
    "INSERT INTO orders SELECT g, 1 + g % 3, date '2024-01-01' + g, 10 + g, "
    "CASE WHEN g % 10 = 0 THEN 'cancelled' ELSE 'paid' END FROM generate_series(1, 60) g",
    """INSERT INTO "order" VALUES (1, 'here')""",
    """INSERT INTO "café" VALUES ('groß', 3.5)""",
]


@dataclass(frozen=True)
class Shop:
    server: PostgresServer
    database: str = "shop"

    @property
    def owner_url(self) -> str:
        return self.server.url(OWNER, OWNER_PASSWORD, self.database)

    @property
    def reader_url(self) -> str:
        return self.server.url(READER, READER_PASSWORD, self.database)

    def count(self, table: str = "orders") -> int:
        return int(self.server.query(f'SELECT count(*) FROM "{table}"', self.database)[0][0])


def create_shop(server: PostgresServer, database: str = "shop") -> Shop:
    """The roles (once per server) and a database of their own."""
    roles = {row[0] for row in server.query("SELECT rolname FROM pg_roles")}
    if OWNER not in roles:
        server.execute(
            f"CREATE ROLE {OWNER} LOGIN PASSWORD '{OWNER_PASSWORD}'",
            f"CREATE ROLE {READER} LOGIN PASSWORD '{READER_PASSWORD}'",
        )
    server.execute(f"CREATE DATABASE {database} OWNER {OWNER}")
    server.execute(f"SET ROLE {OWNER}", *SCHEMA, database=database)
    server.execute(
        f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {READER}",
        "REVOKE CREATE ON SCHEMA public FROM PUBLIC",
        database=database,
    )
    return Shop(server, database)
