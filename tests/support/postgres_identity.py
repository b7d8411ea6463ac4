"""A warehouse in a real PostgreSQL whose own roles, grants and row-level-security policies
decide who sees which rows ("data follows the asker", issue 24).

``threadline_bot`` is the login Threadline uses; it may become ``sales_reader``,
``finance_reader``, ``writer_role`` and two roles with awkward names, but not
``outsider_role``; ``ghost_role`` does not exist. ``deals`` rows are visible to a
``sales_reader`` session only when ``owner_email`` is the asker's
``current_setting('threadline.email')``; ``finance.salaries`` is granted to
``finance_reader`` alone; ``customers.card`` to nobody but its owner. ``accounts`` rows are
the fake Slack's and Teams' people's (by their workspace email), for the bots' tests.
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.support.postgres_server import PostgresServer

BOT, BOT_PASSWORD = "threadline_bot", "bot-pw-Lq8"
QUOTED_ROLE = "weird'; DROP TABLE deals; --"
UNICODE_ROLE = "rôle-ünï 📊"
DATABASE = "warehouse"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


SETUP = [
    "CREATE TABLE deals (id int PRIMARY KEY, owner_email text NOT NULL, amount numeric)",
    "INSERT INTO deals VALUES (1, 'ana@example.com', 100), (2, 'ana@example.com', 50), "
    "(3, 'ben@example.com', 7)",
    "ALTER TABLE deals ENABLE ROW LEVEL SECURITY",
    "CREATE POLICY own_deals ON deals FOR SELECT TO sales_reader "
    "USING (owner_email = current_setting('threadline.email', true))",
    "CREATE POLICY all_deals ON deals FOR SELECT TO finance_reader USING (true)",
    "CREATE TABLE accounts (owner_email text NOT NULL, account text NOT NULL)",
    "INSERT INTO accounts VALUES ('ana@acme.io', 'acct-ana-slack'), "
    "('bo@acme.io', 'acct-bo-slack'), ('aad-ana@contoso.com', 'acct-ana-teams'), "
    "('aad-bo@contoso.com', 'acct-bo-teams')",
    "ALTER TABLE accounts ENABLE ROW LEVEL SECURITY",
    "CREATE POLICY own_accounts ON accounts FOR SELECT TO sales_reader "
    "USING (owner_email = current_setting('threadline.email', true))",
    "CREATE POLICY all_accounts ON accounts FOR SELECT TO finance_reader USING (true)",
    "GRANT SELECT ON accounts TO sales_reader, finance_reader",
    "CREATE TABLE orders (id int PRIMARY KEY, placed_on date, total numeric)",
    "INSERT INTO orders SELECT g, date '2024-01-01' + g, g FROM generate_series(1, 30) g",
    "CREATE TABLE customers (id int PRIMARY KEY, name text, card text)",
    "COMMENT ON TABLE customers IS 'Who buys'",
    "INSERT INTO customers VALUES (1, 'Acme', '4111-1111')",
    "CREATE SCHEMA finance",
    "CREATE TABLE finance.salaries (name text, pay numeric)",
    "COMMENT ON TABLE finance.salaries IS 'Pay of every employee'",
    "INSERT INTO finance.salaries VALUES ('Ana', 98765)",
    "GRANT SELECT ON deals, orders TO sales_reader, finance_reader",
    "GRANT SELECT (id, name) ON customers TO sales_reader",
    "GRANT SELECT ON customers TO finance_reader",
    "GRANT USAGE ON SCHEMA finance TO finance_reader",
    "GRANT SELECT ON finance.salaries TO finance_reader",
    "GRANT SELECT, INSERT ON orders TO writer_role",
    f"GRANT SELECT ON orders TO {_ident(QUOTED_ROLE)}, {_ident(UNICODE_ROLE)}",
    "REVOKE CREATE ON SCHEMA public FROM PUBLIC",
]


@dataclass(frozen=True)
class Warehouse:
    server: PostgresServer

    @property
    def url(self) -> str:
        return self.server.url(BOT, BOT_PASSWORD, DATABASE)

    def query(self, sql: str) -> list[tuple[object, ...]]:
        return self.server.query(sql, DATABASE)


def create_warehouse(server: PostgresServer) -> Warehouse:
    """The roles (once per server) and the warehouse database."""
    roles = {row[0] for row in server.query("SELECT rolname FROM pg_roles")}
    if BOT not in roles:
        reader_roles = ["sales_reader", "finance_reader", "writer_role", QUOTED_ROLE, UNICODE_ROLE]
        server.execute(
            f"CREATE ROLE {BOT} LOGIN PASSWORD '{BOT_PASSWORD}' NOINHERIT",
            *(f"CREATE ROLE {_ident(role)} NOLOGIN" for role in reader_roles),
            "CREATE ROLE outsider_role NOLOGIN",
            *(f"GRANT {_ident(role)} TO {BOT}" for role in reader_roles),
        )
    if not server.query(f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE}'"):
        server.execute(f"CREATE DATABASE {DATABASE}")
        server.execute(*SETUP, database=DATABASE)
    return Warehouse(server)
