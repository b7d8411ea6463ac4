"""``SqliteAuditStore``: the audit trail in ``state.db``.

A record is one ``BEGIN IMMEDIATE`` transaction (read the head, insert the record, move the
head, keep the person's directory entry), so every process writing to the data directory
extends the same single chain.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from os import PathLike

from agent_core.audit_chain import GENESIS, AuditRecord, seal
from agent_core.state.audit import AuditStore, Identity, Pending
from agent_core.state.sqlite import SqliteDatabase

_SCHEMA = """
CREATE TABLE IF NOT EXISTS audit_trail (
    seq INTEGER PRIMARY KEY, at REAL NOT NULL, kind TEXT NOT NULL, person TEXT,
    workspace TEXT, profile TEXT, conversation TEXT, details TEXT,
    details_hash TEXT NOT NULL, prev TEXT NOT NULL, hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_trail_at ON audit_trail (at);
CREATE INDEX IF NOT EXISTS audit_trail_person ON audit_trail (person);
CREATE TABLE IF NOT EXISTS audit_head (
    one INTEGER PRIMARY KEY CHECK (one = 1), seq INTEGER NOT NULL, hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS audit_people (pseudonym TEXT PRIMARY KEY, identity TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS audit_key (one INTEGER PRIMARY KEY CHECK (one = 1), key BLOB);
"""

_COLUMNS = (
    "seq, at, kind, person, workspace, profile, conversation, details, details_hash, prev, hash"
)
_INSERT = f"INSERT INTO audit_trail ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"


def _record(row: tuple[object, ...]) -> AuditRecord:
    fields = dict(zip(_COLUMNS.split(", "), row, strict=True))
    details = fields["details"]
    fields["details"] = None if details is None else json.loads(str(details))
    return AuditRecord.model_validate(fields)


class SqliteAuditStore(AuditStore):
    """See the module docstring.

    >>> import asyncio, tempfile, os
    >>> from agent_core.audit_chain import AuditEntry
    >>> store = SqliteAuditStore(os.path.join(tempfile.mkdtemp(), "state.db"))
    >>> asyncio.run(store.append(AuditEntry(at=1.0, kind="question"))).seq
    1
    """

    def __init__(self, database: SqliteDatabase | str | PathLike[str]) -> None:
        super().__init__()
        self._owns_database = not isinstance(database, SqliteDatabase)
        self._db = database if isinstance(database, SqliteDatabase) else SqliteDatabase(database)
        self._db.ensure_schema(_SCHEMA)

    async def _append_many(self, batch: Sequence[Pending]) -> list[AuditRecord]:
        rows = [
            (entry, identity, json.dumps(entry.details, sort_keys=True))
            for entry, identity in batch
        ]

        def write(connection: sqlite3.Connection) -> list[AuditRecord]:
            head = connection.execute("SELECT seq, hash FROM audit_head").fetchone()
            seq, prev = (head[0], head[1]) if head else (0, GENESIS)
            records = []
            for entry, identity, details in rows:
                record = seal(prev, seq + 1, entry)
                seq, prev = record.seq, record.hash
                connection.execute(
                    _INSERT,
                    (
                        *(record.seq, record.at, record.kind, record.person, record.workspace),
                        *(record.profile, record.conversation, details, record.details_hash),
                        *(record.prev, record.hash),
                    ),
                )
                if identity is not None and entry.person is not None:
                    connection.execute(
                        "INSERT OR REPLACE INTO audit_people VALUES (?, ?)",
                        (entry.person, json.dumps(identity, sort_keys=True)),
                    )
                records.append(record)
            connection.execute("INSERT OR REPLACE INTO audit_head VALUES (1, ?, ?)", (seq, prev))
            return records

        return await self._db.transaction(write)

    async def records(
        self, *, since: float | None = None, until: float | None = None
    ) -> list[AuditRecord]:
        await self.flush()
        low = float("-inf") if since is None else since
        high = float("inf") if until is None else until

        def read(connection: sqlite3.Connection) -> list[AuditRecord]:
            rows = connection.execute(
                f"SELECT {_COLUMNS} FROM audit_trail WHERE at >= ? AND at < ? ORDER BY seq",
                (low, high),
            ).fetchall()
            return [_record(tuple(row)) for row in rows]

        return await self._db.run(read)

    async def head(self) -> str | None:
        await self.flush()

        def read(connection: sqlite3.Connection) -> str | None:
            row = connection.execute("SELECT hash FROM audit_head").fetchone()
            return None if row is None else str(row[0])

        return await self._db.run(read)

    async def people(self) -> dict[str, Identity]:
        await self.flush()

        def read(connection: sqlite3.Connection) -> dict[str, Identity]:
            rows = connection.execute("SELECT pseudonym, identity FROM audit_people").fetchall()
            return {str(name): json.loads(str(who)) for name, who in rows}

        return await self._db.run(read)

    async def erase(self, pseudonym: str, *, dry_run: bool = False) -> int:
        await self.flush()
        theirs = "person = ? AND details IS NOT NULL AND details != '{}'"

        def write(connection: sqlite3.Connection) -> int:
            (count,) = connection.execute(
                f"SELECT count(*) FROM audit_trail WHERE {theirs}", (pseudonym,)
            ).fetchone()
            if not dry_run:
                connection.execute(
                    f"UPDATE audit_trail SET details = NULL WHERE {theirs}", (pseudonym,)
                )
                connection.execute("DELETE FROM audit_people WHERE pseudonym = ?", (pseudonym,))
            return int(count)

        return await self._db.transaction(write)

    async def _stored_key(self, candidate: bytes) -> bytes:
        def keep(connection: sqlite3.Connection) -> bytes:
            connection.execute("INSERT OR IGNORE INTO audit_key VALUES (1, ?)", (candidate,))
            return bytes(connection.execute("SELECT key FROM audit_key").fetchone()[0])

        return await self._db.transaction(keep)

    async def close(self) -> None:
        await super().close()
        if self._owns_database:
            await self._db.close()
