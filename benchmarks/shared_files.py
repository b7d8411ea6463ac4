"""Shared files as tables: how long a CSV and an XLSX take to become a person's table, and
what one ``query_files`` query costs over DuckDB reading the same file directly.

A CSV of ``--rows`` rows (5 columns, about 40 bytes a row) and an XLSX of ``--xlsx-rows``
rows are loaded ``--rounds`` times through ``FileTables.add`` (size check, format check,
DuckDB's reader, XLSX through openpyxl, table listing), then one aggregate query runs
``--queries`` times through ``ScopeRunner.run_sql`` (statement check, thread hop, read-only
locked open, bounded read, interrupt timer) and through raw DuckDB on an open in-memory
table (the least work possible). Medians; overhead = runner - raw.

    .venv/bin/python benchmarks/shared_files.py [--rows 200000 --xlsx-rows 20000]

Then the XLSX bounds (issue 22 item 6): a workbook of ``--bomb-cells`` cells (6 million by
default, about 25 bytes a cell, within the size limits) is refused by ``FileTables.add``
before openpyxl parses it; the anchor is what parsing it would take at the rate openpyxl
loaded the XLSX above in the same run (the refusal used to come after 72 s of parsing).

The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import statistics
import sys
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import duckdb
from openpyxl import Workbook

from agent_core.database.file_formats import FileLoadError
from agent_core.database.file_tables import FileLimits, FileTables
from benchmarks._stats import result_line

QUERY = "SELECT region, count(*), sum(amount) FROM {table} GROUP BY region ORDER BY region"
REGIONS = ("EU", "US", "APAC", "LATAM")


def csv_bytes(rows: int) -> bytes:
    lines = ["id,region,amount,day,note"]
    lines += [
        f"{i},{REGIONS[i % 4]},{i * 1.25:.2f},2025-01-{i % 28 + 1:02d},row {i}" for i in range(rows)
    ]
    return ("\n".join(lines) + "\n").encode()


def xlsx_bytes(rows: int) -> bytes:
    book = Workbook(write_only=True)
    sheet = book.create_sheet("data")
    sheet.append(["id", "region", "amount", "note"])
    for i in range(rows):
        sheet.append([i, REGIONS[i % 4], i * 1.25, f"row {i}"])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 2)


def bomb_bytes(cells: int) -> bytes:
    """An XLSX whose one sheet holds ``cells`` numeric cells (10 a row), written directly."""
    out = io.BytesIO()
    book = Workbook()
    book.active.append(["placeholder"])
    made = io.BytesIO()
    book.save(made)
    with (
        zipfile.ZipFile(io.BytesIO(made.getvalue())) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as target,
    ):
        for entry in source.infolist():
            if entry.filename != "xl/worksheets/sheet1.xml":
                target.writestr(entry.filename, source.read(entry))
        with target.open("xl/worksheets/sheet1.xml", "w") as sheet:
            sheet.write(
                b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/'
                b'2006/main"><sheetData>'
            )
            for start in range(0, cells, 100_000):
                rows = (
                    b"<row>"
                    + b"".join(b"<c><v>%d</v></c>" % (n * 7919 % 999_983 + k) for k in range(10))
                    + b"</row>"
                    for n in range(start // 10, min(cells, start + 100_000) // 10)
                )
                sheet.write(b"".join(rows))
            sheet.write(b"</sheetData></worksheet>")
    return out.getvalue()


async def bomb_ms(root: Path, content: bytes, max_cells: int) -> tuple[float, str]:
    """How long the refusal takes, and what it says."""
    files = FileTables(root, limits=FileLimits(max_bytes=1 << 30, max_cells=max_cells))
    started = time.perf_counter()
    try:
        await files.add("bench|bomb", "huge.xlsx", content)
    except FileLoadError as refused:
        return (time.perf_counter() - started) * 1000, str(refused)
    raise SystemExit("the workbook past the cell limit was loaded, not refused")


async def load_ms(root: Path, name: str, content: bytes, rounds: int) -> float:
    files = FileTables(root, limits=FileLimits(max_bytes=1 << 30))
    samples = []
    for round_ in range(rounds):
        started = time.perf_counter()
        await files.add(f"bench|{round_}", name, content)
        samples.append(time.perf_counter() - started)
    return median_ms(samples)


async def query_ms(root: Path, content: bytes, queries: int) -> tuple[float, float]:
    files = FileTables(root)
    await files.add("bench|query", "sales.csv", content)
    runner = files.runner("bench|query")
    await runner.run_sql(QUERY.format(table="sales"))  # warm
    samples = []
    for _ in range(queries):
        started = time.perf_counter()
        result = await runner.run_sql(QUERY.format(table="sales"))
        samples.append(time.perf_counter() - started)
    assert len(result.rows) == 4
    raw = []
    source = root / "raw.csv"
    source.write_bytes(content)
    with duckdb.connect() as connection:
        connection.execute("CREATE TABLE sales AS SELECT * FROM read_csv(?)", [str(source)])
        for _ in range(queries):
            started = time.perf_counter()
            connection.execute(QUERY.format(table="sales")).fetchall()
            raw.append(time.perf_counter() - started)
    return median_ms(samples), median_ms(raw)


async def main(args: argparse.Namespace) -> None:
    csv_data, xlsx_data = csv_bytes(args.rows), xlsx_bytes(args.xlsx_rows)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        csv_ms = await load_ms(root / "csv", "sales.csv", csv_data, args.rounds)
        xlsx_ms = await load_ms(root / "xlsx", "sales.xlsx", xlsx_data, args.rounds)
        runner_ms, raw_ms = await query_ms(root / "query", csv_data, args.queries)
        bomb = bomb_bytes(args.bomb_cells)
        refused_ms, refusal = await bomb_ms(root / "bomb", bomb, args.max_cells)
    parse_estimate_s = xlsx_ms / 1000 / (args.xlsx_rows * 4) * args.bomb_cells
    csv_mb = len(csv_data) / 1e6
    print(
        f"CSV  {args.rows:>9,} rows {csv_mb:6.1f} MB: load {csv_ms:8.1f} ms median "
        f"({csv_mb / (csv_ms / 1000):.0f} MB/s)"
    )
    print(
        f"XLSX {args.xlsx_rows:>9,} rows {len(xlsx_data) / 1e6:6.1f} MB: load "
        f"{xlsx_ms:8.1f} ms median"
    )
    print(
        f"query_files aggregate: {runner_ms:.2f} ms median; raw DuckDB {raw_ms:.2f} ms; "
        f"overhead {runner_ms - raw_ms:.2f} ms"
    )
    print(
        f"XLSX of {args.bomb_cells:,} cells ({len(bomb) / 1e6:.1f} MB): refused in "
        f"{refused_ms:.0f} ms ({refusal[:60]}...); parsing it at the rate above: about "
        f"{parse_estimate_s:.0f} s"
    )
    print(
        result_line(
            "shared_files",
            bomb_cells=args.bomb_cells,
            bomb_mb=round(len(bomb) / 1e6, 2),
            bomb_refused_ms=round(refused_ms, 1),
            bomb_parse_estimate_s=round(parse_estimate_s, 1),
            csv_rows=args.rows,
            csv_mb=round(csv_mb, 2),
            csv_load_ms=csv_ms,
            xlsx_rows=args.xlsx_rows,
            xlsx_load_ms=xlsx_ms,
            query_ms=runner_ms,
            raw_query_ms=raw_ms,
            query_overhead_ms=round(runner_ms - raw_ms, 2),
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--xlsx-rows", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--bomb-cells", type=int, default=6_000_000)
    parser.add_argument("--max-cells", type=int, default=FileLimits().max_cells)
    asyncio.run(main(parser.parse_args()))
