"""``Check``: one line of ``threadline doctor``: what was checked, whether it holds, the fix.

A warning is a check that holds but should not be left so (a database user that may write):
it is said loudly, and does not fail the command.

>>> print(Check.passed("Redis reachable"), Check.failed("Slack token", "set SLACK_BOT_TOKEN"),
...       Check.warned("database", "the user can write"), sep="\\n")
✓ Redis reachable
✗ Slack token: set SLACK_BOT_TOKEN
! database: WARNING: the user can write
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Status = Literal["ok", "warn", "fail", "skip"]
MARKS = {"ok": "✓", "warn": "!", "fail": "✗", "skip": "·"}


@dataclass(frozen=True)
class Check:
    status: Status
    what: str
    detail: str = ""

    @classmethod
    def passed(cls, what: str, detail: str = "") -> Check:
        return cls("ok", what, detail)

    @classmethod
    def warned(cls, what: str, warning: str) -> Check:
        return cls("warn", what, f"WARNING: {warning}")

    @classmethod
    def failed(cls, what: str, fix: str) -> Check:
        return cls("fail", what, fix)

    @classmethod
    def skipped(cls, what: str, why: str) -> Check:
        return cls("skip", what, why)

    def __str__(self) -> str:
        return f"{MARKS[self.status]} {self.what}" + (f": {self.detail}" if self.detail else "")
