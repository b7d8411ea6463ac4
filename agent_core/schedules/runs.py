"""``ScheduleRunner``: one scheduled run, channel-free; a ``RunHost`` does what needs a channel.

A run is a synthetic turn on the schedule's thread (``agent_core.schedules.dispatcher``).
Its steps, each recorded on the turn so a re-run after a crash neither repeats nor loses
one::

    the schedule still active?            removed or paused since: nothing to do
    a crashed run retried once already?   tell the owner it failed; wait for the next one
    the owner, resolved again             left / deactivated / may no longer ask here:
                                          pause, tell the owner (or the admins) once
    alert: the query, as the owner        no model call; posts only on a transition to true
           database down                  one notice (not one per run) until it answers
    question (or a fired alert's          the agent answers as the owner (quotas, budgets
      explanation)                        and data access apply), posted where it was made
    the channel refuses the post          pause, tell the owner once

``host.answer`` runs the agent: it is the only place a scheduled run calls the model.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal, Protocol

from agent_core.schedules.alerts import AlertCheck, AlertRule, AlertValueError, fires
from agent_core.schedules.clock import Clock, SystemClock, instant
from agent_core.schedules.model import LastRun, Schedule
from agent_core.schedules.occurrence import Occurrence
from agent_core.schedules.store import ScheduleStore
from agent_core.schedules.wording import late_note, when
from agent_core.state.turns import Turn
from agent_core.tools.sql import SqlError, SqlResult
from agent_core.users import User

log = logging.getLogger("threadline.schedules")

Standing = Literal["active", "gone", "no_access"]
Audience = Literal["owner", "admins"]


@dataclass(frozen=True)
class OwnerCheck:
    """The owner as the platform sees them at run time.

    ``gone``: left the workspace or deactivated (the admins are told); ``no_access``: may no
    longer ask where the schedule posts (the owner is told).

    >>> OwnerCheck("gone", reason="is no longer in the workspace").user is None
    True
    """

    standing: Standing
    user: User | None = None
    reason: str = ""


class DeliveryError(Exception):
    """The channel would not take the scheduled post (channel gone, bot removed, 403).

    >>> str(DeliveryError("I was removed from the channel"))
    'I was removed from the channel'
    """


class RunHost(Protocol):
    """What a channel does for a run: who the owner is now, the agent's answer posted where
    the schedule was made, the alert's query as the owner, and notices."""

    async def check_owner(self, schedule: Schedule) -> OwnerCheck:
        """Resolve the owner again (identity, groups, access) from the platform."""
        ...

    async def answer(self, schedule: Schedule, owner: User, prompt: str, marker: str) -> None:
        """The agent's answer to ``prompt`` as ``owner``, posted at the schedule's place and
        marked with ``marker`` (and a pause control). Raises ``DeliveryError``."""
        ...

    async def query(self, schedule: Schedule, owner: User, sql: str) -> SqlResult:
        """``sql`` read-only with ``owner``'s data access; raises ``SqlError``."""
        ...

    async def tell(self, schedule: Schedule, text: str, *, audience: Audience) -> None:
        """A notice about the schedule, to its owner or to the workspace's admins."""
        ...


def explanation_prompt(rule: AlertRule, check: AlertCheck) -> str:
    """What the model is asked when an alert fires (the only model call of an alert).

    >>> from agent_core.schedules.alerts import AlertRule, AlertCheck
    >>> rule = AlertRule(sql="SELECT 1", operator="<", threshold=100, column="orders",
    ...                  condition="orders drop below 100")
    >>> explanation_prompt(rule, AlertCheck(holds=True, value=87)).splitlines()[0]
    'My alert "orders drop below 100" just fired: orders < 100 (the value is 87).'
    """
    value = "" if check.value is None else f" (the value is {check.value:g})"
    if check.value is None and check.rows:
        value = f" ({check.rows} rows)"
    return (
        f'My alert "{rule.condition or rule.describe()}" just fired: {rule.describe()}{value}.'
        f"\nIts query:\n```sql\n{rule.sql}\n```\n"
        "Explain briefly what changed, with the numbers behind it."
    )


class ScheduleRunner:
    """Runs one occurrence of a schedule (see the module docstring).

    >>> from agent_core.schedules.store_memory import MemoryScheduleStore
    >>> ScheduleRunner(MemoryScheduleStore(), late_after=120).late_after
    120
    """

    def __init__(
        self,
        store: ScheduleStore,
        *,
        clock: Clock | None = None,
        late_after: float = 120.0,
        max_attempts: int = 2,
    ) -> None:
        self.store = store
        self.clock: Clock = clock or SystemClock()
        self.late_after = late_after
        self.max_attempts = max_attempts

    async def run(self, turn: Turn, occurrence: Occurrence, host: RunHost) -> str:
        """Run ``occurrence`` (the payload of ``turn``); its outcome, also kept as the
        schedule's ``last_run``."""
        if done := turn.progress.get("outcome"):
            return str(done)  # an earlier run finished; only its completion was lost
        schedule = await self.store.get(occurrence.schedule_id)
        if schedule is None:
            return "removed"
        if schedule.status != "active":
            return "paused"
        now = self.clock.now()
        outcome = await self._attempt(turn, schedule, occurrence, host)
        late = 0.0 if occurrence.fired else max(0.0, now - occurrence.at)
        await self.store.record_run(schedule.id, LastRun(at=now, outcome=outcome, late_by=late))
        await turn.record(outcome=outcome)
        return outcome

    async def _attempt(
        self, turn: Turn, schedule: Schedule, occurrence: Occurrence, host: RunHost
    ) -> str:
        if turn.attempt > self.max_attempts:
            return await self._gave_up(schedule, occurrence, host)
        owner = await host.check_owner(schedule)
        if owner.standing != "active" or owner.user is None:
            return await self._owner_lost(schedule, owner, host)
        marker = self.marker(schedule, occurrence)
        try:
            if schedule.alert is not None:
                return await self._check(turn, schedule, occurrence, owner.user, host, marker)
            await host.answer(schedule, owner.user, schedule.question, marker)
        except DeliveryError as error:
            return await self._undeliverable(schedule, str(error), host)
        return "posted"

    def marker(self, schedule: Schedule, occurrence: Occurrence) -> str:
        """``Scheduled by @ana · every weekday 9:00`` (and how late, after downtime)."""
        marker = schedule.marker()
        if schedule.alert is not None:
            marker = f"Alert: {schedule.alert.describe()} · {marker}"
        late = self.clock.now() - occurrence.at
        if not occurrence.fired and (late > self.late_after or occurrence.missed):
            marker += f" · {late_note(late, occurrence.missed)}"
        return marker

    # --- alerts -----------------------------------------------------------------------------

    async def _check(
        self,
        turn: Turn,
        schedule: Schedule,
        occurrence: Occurrence,
        owner: User,
        host: RunHost,
        marker: str,
    ) -> str:
        rule = schedule.alert
        assert rule is not None
        try:
            result = await host.query(schedule, owner, rule.sql)
            check = rule.check(result)
        except SqlError as error:
            return await self._query_failed(schedule, error, host)
        except AlertValueError as error:
            return await self._pause(
                schedule, f"its query's value cannot be compared ({error})", host, "owner"
            )
        await self.store.forget_notice(schedule.id, "database")
        previous = await self.store.swap_alert_state(
            schedule.id, check.holds, occurrence=occurrence.key
        )
        if not fires(previous, check):
            return "checked: true, already told" if check.holds else "checked: false"
        if not turn.progress.get("explained"):
            await host.answer(schedule, owner, explanation_prompt(rule, check), marker)
            await turn.record(explained=True)
        return "alert fired"

    async def _query_failed(self, schedule: Schedule, error: SqlError, host: RunHost) -> str:
        if error.reason in ("unavailable", "timeout"):
            if await self.store.note_once(schedule.id, "database"):
                await host.tell(
                    schedule,
                    f"Your alert `{schedule.id}` ({schedule.describe()}) could not check its "
                    f"data: {error}. I will keep checking at its times and tell you once it "
                    "fires; this is the only notice until the database answers again.",
                    audience="owner",
                )
            return "database unavailable"
        return await self._pause(schedule, f"its query failed ({error})", host, "owner")

    # --- trouble ----------------------------------------------------------------------------

    async def _gave_up(self, schedule: Schedule, occurrence: Occurrence, host: RunHost) -> str:
        log.error("schedule %s: the run for %s failed twice", schedule.id, occurrence.at)
        following = schedule.recurrence.next_after(instant(self.clock.now()))
        await host.tell(
            schedule,
            f"The run of your schedule `{schedule.id}` ({schedule.describe()}) failed twice, "
            f"so I skipped it. The next run is {when(following, schedule.recurrence.timezone)}.",
            audience="owner",
        )
        return "failed twice"

    async def _owner_lost(self, schedule: Schedule, owner: OwnerCheck, host: RunHost) -> str:
        who = f"@{schedule.owner_name}" if schedule.owner_name else "its owner"
        if owner.standing == "gone":
            reason = f"{who} {owner.reason or 'is no longer in the workspace'}"
            return await self._pause(schedule, reason, host, "admins")
        reason = owner.reason or "you may no longer ask where it posts"
        return await self._pause(schedule, reason, host, "owner")

    async def _undeliverable(self, schedule: Schedule, reason: str, host: RunHost) -> str:
        reason = f"I cannot post there any more ({reason})"
        return await self._pause(schedule, reason, host, "owner")

    async def _pause(
        self, schedule: Schedule, reason: str, host: RunHost, audience: Audience
    ) -> str:
        """Pause the schedule and say why, once (two runs racing tell one notice)."""
        await self.store.pause(schedule.id, reason)
        log.info("schedule %s paused: %s", schedule.id, reason)
        if await self.store.note_once(schedule.id, "paused"):
            whose = "Your schedule" if audience == "owner" else "The schedule"
            text = (
                f"{whose} `{schedule.id}` ({schedule.describe()}) is paused: {reason}. "
                f"`/resume {schedule.id}` starts it again, `/unschedule {schedule.id}` "
                "removes it."
            )
            await host.tell(schedule, text, audience=audience)
        return f"paused: {reason}"
