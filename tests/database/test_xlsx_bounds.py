"""XLSX workbooks are measured before openpyxl reads them (issue 22 item 6): an XLSX's
shared strings inflated 294 times from a 0.59 MB file, and a 6M-cell workbook was parsed for
72 s before the cell limit refused it."""

from __future__ import annotations

import io
import random
import zipfile
from pathlib import Path

import pytest
from openpyxl import Workbook

from agent_core.database.file_formats import FileLoadError
from agent_core.database.file_tables import FileLimits, FileTables

SCOPE = "slack|T1|C1|1.0|U1"
SHEET = "xl/worksheets/sheet1.xml"
HEAD = b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'


def with_sheet(sheet_xml: bytes, *, level: int = 6) -> bytes:
    """A real workbook (made by openpyxl) whose first sheet is replaced by ``sheet_xml``."""
    book = Workbook()
    book.active.append(["placeholder"])
    made = io.BytesIO()
    book.save(made)
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(made.getvalue())) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=level) as target,
    ):
        for entry in source.infolist():
            data = sheet_xml if entry.filename == SHEET else source.read(entry)
            target.writestr(entry.filename, data)
    return out.getvalue()


def sheet(rows: list[bytes], dimension: bytes = b"") -> bytes:
    return HEAD + dimension + b"<sheetData>" + b"".join(rows) + b"</sheetData></worksheet>"


def numbers_row(number: int, values: list[int]) -> bytes:
    cells = b"".join(
        b'<c r="%s%d"><v>%d</v></c>' % (column.encode(), number, value)
        for column, value in zip("ABCDEFGHIJ", values, strict=False)
    )
    return b'<row r="%d">%s</row>' % (number, cells)


async def test_a_part_that_inflates_like_a_zip_bomb_is_refused_unread(tmp_path: Path) -> None:
    rows = [numbers_row(1, [1] * 10)] * 200_000  # 60 MB of one repeated row: ~1 MB zipped
    book = with_sheet(sheet(rows), level=9)
    with pytest.raises(FileLoadError, match="compressed suspiciously well"):
        await FileTables(tmp_path).add(SCOPE, "bomb.xlsx", book)


async def test_a_workbook_unpacking_past_the_bound_is_refused(tmp_path: Path) -> None:
    noise = random.Random(7)
    rows = [numbers_row(r, [noise.randrange(10**9) for _ in range(10)]) for r in range(1, 8000)]
    files = FileTables(tmp_path, limits=FileLimits(max_unzipped_bytes=1024 * 1024))
    with pytest.raises(FileLoadError, match=r"big\.xlsx would unpack to more than 1 MB"):
        await files.add(SCOPE, "big.xlsx", with_sheet(sheet(rows)))


async def test_cells_are_counted_in_the_xml_before_parsing(tmp_path: Path) -> None:
    noise = random.Random(8)
    rows = [numbers_row(r, [noise.randrange(1000) for _ in range(10)]) for r in range(1, 30_001)]
    files = FileTables(tmp_path, limits=FileLimits(max_cells=250_000))
    with pytest.raises(FileLoadError, match=r"many\.xlsx has more than 250,000 cells"):
        await files.add(SCOPE, "many.xlsx", with_sheet(sheet(rows)))


async def test_namespaced_cells_are_counted_too(tmp_path: Path) -> None:
    rows = b"".join(
        b'<x:row r="%d"><x:c r="A%d"><x:v>1</x:v></x:c></x:row>' % (r, r) for r in range(1, 201)
    )
    xml = (
        b'<x:worksheet xmlns:x="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
        b"<x:sheetData>" + rows + b"</x:sheetData></x:worksheet>"
    )
    files = FileTables(tmp_path, limits=FileLimits(max_cells=100))
    with pytest.raises(FileLoadError, match="more than 100 cells"):
        await files.add(SCOPE, "prefixed.xlsx", with_sheet(xml))


async def test_a_sheet_whose_dimension_lies_is_not_padded_to_it(tmp_path: Path) -> None:
    """A two-cell sheet claiming A1:XFD1048576 made openpyxl pad 17 billion empty cells."""
    rows = [
        b'<row r="1"><c r="A1" t="inlineStr"><is><t>n</t></is></c></row>',
        b'<row r="2"><c r="A2"><v>5</v></c></row>',
    ]
    book = with_sheet(sheet(rows, b'<dimension ref="A1:XFD1048576"/>'))
    [table] = await FileTables(tmp_path).add(SCOPE, "liar.xlsx", book)
    assert (table.rows, table.columns) == (1, [("n", "BIGINT")])


async def test_cells_openpyxl_would_make_count_not_just_those_written(tmp_path: Path) -> None:
    """One cell far right on each row: openpyxl makes every cell to its left."""
    rows = [b'<row r="%d"><c r="XFD%d"><v>1</v></c></row>' % (r, r) for r in range(1, 2001)]
    with pytest.raises(FileLoadError, match="more than 5,000,000 cells"):
        await FileTables(tmp_path).add(SCOPE, "far.xlsx", with_sheet(sheet(rows)))
