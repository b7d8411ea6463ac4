"""``Occurrence``: one run of a schedule, as the dispatcher records it on the turn queue.

A scheduled run is a synthetic turn of its own kind (``kind: "scheduled"``, one of the
turn kinds in ``bots.turn_kinds``): the dispatcher enqueues it on the schedule's thread
(so it keeps that thread's order, and a crashed run is taken over like any turn) with the
dedupe key ``run_key`` (schedule id + occurrence), which makes each occurrence one turn
however many processes try.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict

from agent_core.schedules.carried import Carried


def run_key(schedule_id: str, due: float) -> str:
    """The claim of one occurrence (the turn queue's dedupe key).

    >>> run_key("5e1f0c2a", 1741593600.0)
    'schedule:5e1f0c2a:1741593600'
    """
    return f"schedule:{schedule_id}:{round(due)}"


class Occurrence(Carried):
    """What a scheduled turn runs: which schedule, for which time, and how it was dispatched.

    ``due`` is the occurrence claimed; ``at`` the one the run stands for (the latest one
    missed, after downtime) and ``missed`` how many earlier ones it replaces; ``fired`` is
    set when the console ran it ahead of time.

    >>> run = Occurrence(schedule_id="5e1f0c2a", due=60.0, at=60.0, dispatched_at=61.0)
    >>> Occurrence.from_payload(run.payload()) == run
    True
    """

    model_config = ConfigDict(frozen=True)

    kind: Literal["scheduled"] = "scheduled"

    schedule_id: str
    due: float
    at: float
    dispatched_at: float
    missed: int = 0
    fired: bool = False

    @property
    def key(self) -> str:
        return run_key(self.schedule_id, self.due)
