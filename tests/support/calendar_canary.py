"""A test made to depend on the calendar, for the guard's own test
(``tests/test_calendar_guard.py`` runs it; the suite never collects it: its name does not
start with ``test_``). It names the day it was "written" on, as the demo tests once named
November's figures."""

from __future__ import annotations

import datetime as dt
import os


def test_names_the_day_it_was_written() -> None:
    assert dt.date.today().isoformat() == os.environ["CANARY_DAY"]
