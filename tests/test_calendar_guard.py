"""The calendar guard catches a test that depends on the date: a canary that names the day
it was written passes on that day and fails under each of the guard's other dates."""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support.calendar import MOMENTS

ROOT = Path(__file__).resolve().parents[1]
CANARY = "tests/support/calendar_canary.py"


def run_canary(*options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "-o",
            "addopts=",
            "-rA",
            CANARY,
            *options,
        ],
        cwd=ROOT,
        env={**os.environ, "CANARY_DAY": dt.date.today().isoformat()},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_guard_fails_a_test_that_names_today() -> None:
    plain = run_canary()
    assert plain.returncode == 0, plain.stdout

    guarded = run_canary("--calendar")
    failed = set(re.findall(r"^FAILED \S+\[(\S+)\]", guarded.stdout, re.M))
    passed = set(re.findall(r"^PASSED \S+\[(\S+)\]", guarded.stdout, re.M))
    other_days = {m.name for m in MOMENTS if m.local.date() != dt.date.today()}
    assert guarded.returncode == 1
    assert failed == other_days and "today" in passed, guarded.stdout
