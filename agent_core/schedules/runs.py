"""``ScheduleRunner``: one scheduled run, channel-free; the channel does what needs it.

A run is a synthetic turn on the schedule's thread (``agent_core.schedules.dispatcher``),
answered by the channel's turn host like any turn. ``prepare`` decides what the turn does::

    the schedule still active?            removed or paused since: nothing to do
    a crashed run retried once already?   tell the owner it failed; wait for the next one
    the owner, resolved again             left / deactivated / may no longer ask here:
                                          pause, tell the owner (or the admins) once
    alert: the query, as the owner        no model call; asks only on a transition to true
           database down                  one notice (not one per run) until it answers
    a question (or a fired alert's        -> ``Ask``: the turn host runs the agent as the
      explanation)                        owner (quotas, budgets and data access apply) and
                                          posts the answer where the schedule was made

The schedule is read once per run, by the channel's run (``bots.schedules.run``), and
handed to each step. When the channel refuses the post, ``not_posted`` pauses the schedule
(a place that is gone) and tells the owner once; when the turn ends, ``finished`` keeps the
outcome on the schedule and on the turn (a re-run after a crash repeats nothing that
finished).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from agent_core.clock import SYSTEM_CLOCK, Clock, instant
from agent_core.components import NotificationComponent, SimpleTextComponent, UiComponent
from agent_core.schedules.alerts import AlertCheck, AlertRule, AlertValueError, fires
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


def answered_outcome(schedule: Schedule) -> str:
    """The outcome kept for a run whose answer went out."""
    return "alert fired" if schedule.alert is not None else "posted"


@dataclass(frozen=True)
class Ask:
    """What a run asks the agent, as whom, and the line marking the answer as scheduled.

    >>> Ask(None, User(id="u1"), "revenue", "Scheduled by @ana · every day 9:00").prompt
    'revenue'
    """

    schedule: Schedule
    owner: User
    prompt: str
    marker: str

    def marker_component(self) -> UiComponent:
        """The marker as every channel shows it above a scheduled answer, with its Pause
        button (``/pause <id>``, honoured for the owner or an admin)."""
        return UiComponent(
            rich_component=NotificationComponent(
                message=self.marker,
                level="info",
                dismissible=False,
                actions=[{"label": "Pause", "action": f"/pause {self.schedule.id}"}],
            ),
            simple_component=SimpleTextComponent(text=f"{self.marker} · /pause {self.schedule.id}"),
        )


class RunChecks(Protocol):
    """What a channel does for ``prepare``: who the owner is now, the alert's query as the
    owner, and notices."""

    async def check_owner(self, schedule: Schedule) -> OwnerCheck:
        """Resolve the owner again (identity, groups, access) from the platform."""
        ...

    async def query(self, schedule: Schedule, owner: User, sql: str) -> SqlResult:
        """``sql`` read-only with ``owner``'s data access; raises ``SqlError``."""
        ...

    async def tell(self, schedule: Schedule, text: str, *, audience: Audience) -> None:
        """A notice about the schedule, to its owner or to the workspace's admins."""
        ...


def explanation_prompt(rule: AlertRule, check: AlertCheck) -> str:
    """What the model is asked when an alert fires (the only model call of an alert).

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
        touched: Callable[[Schedule], None] | None = None,
    ) -> None:
        self.store = store
        self.touched = touched
        """Told of each schedule a run finished for (its last run, maybe its pause)."""
        self.clock: Clock = clock or SYSTEM_CLOCK
        self.late_after = late_after
        self.max_attempts = max_attempts

    async def prepare(
        self, turn: Turn, occurrence: Occurrence, schedule: Schedule | None, host: RunChecks
    ) -> Ask | str:
        """What the turn does with ``schedule`` as the run read it (None: removed): an
        ``Ask`` for the agent, or the outcome of a run that posts no answer (see the module
        docstring)."""
        if done := turn.progress.get("outcome"):
            return str(done)  # an earlier run finished; only its completion was lost
        if schedule is None:
            return "removed"
        if schedule.status != "active":
            return "paused"
        if turn.attempt > self.max_attempts:
            return await self._gave_up(schedule, occurrence, host)
        owner = await host.check_owner(schedule)
        if owner.standing != "active" or owner.user is None:
            return await self._owner_lost(schedule, owner, host)
        marker = self.marker(schedule, occurrence)
        if schedule.alert is not None:
            return await self._check(schedule, occurrence, owner.user, host, marker)
        return Ask(schedule, owner.user, schedule.question, marker)

    async def finished(
        self, turn: Turn, occurrence: Occurrence, outcome: str, schedule: Schedule | None
    ) -> None:
        """Keep the run's outcome on the schedule (``/schedules``, the console) and on the
        turn (a re-run does not repeat it); ``touched`` is told of ``schedule`` (as the run
        read it; None: removed)."""
        now = self.clock.now()
        late = 0.0 if occurrence.fired else max(0.0, now - occurrence.at)
        if outcome != "removed":
            last = LastRun(at=now, outcome=outcome, late_by=late)
            await self.store.record_run(occurrence.schedule_id, last)
        await turn.record(outcome=outcome)
        if self.touched is not None and schedule is not None:
            self.touched(schedule)

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
        schedule: Schedule,
        occurrence: Occurrence,
        owner: User,
        host: RunChecks,
        marker: str,
    ) -> Ask | str:
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
        return Ask(schedule, owner, explanation_prompt(rule, check), marker)

    async def _query_failed(self, schedule: Schedule, error: SqlError, host: RunChecks) -> str:
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

    async def _gave_up(self, schedule: Schedule, occurrence: Occurrence, host: RunChecks) -> str:
        log.error("schedule %s: the run for %s failed twice", schedule.id, occurrence.at)
        following = schedule.recurrence.next_after(instant(self.clock.now()))
        await host.tell(
            schedule,
            f"The run of your schedule `{schedule.id}` ({schedule.describe()}) failed twice, "
            f"so I skipped it. The next run is {when(following, schedule.recurrence.timezone)}.",
            audience="owner",
        )
        return "failed twice"

    async def _owner_lost(self, schedule: Schedule, owner: OwnerCheck, host: RunChecks) -> str:
        who = f"@{schedule.owner_name}" if schedule.owner_name else "its owner"
        if owner.standing == "gone":
            reason = f"{who} {owner.reason or 'is no longer in the workspace'}"
            return await self._pause(schedule, reason, host, "admins")
        reason = owner.reason or "you may no longer ask where it posts"
        return await self._pause(schedule, reason, host, "owner")

    def on_answered(
        self, turn: Turn, occurrence: Occurrence, schedule: Schedule
    ) -> Callable[[str], Awaitable[None]]:
        """What a channel calls when the agent's answer to a run ended: keeps "posted" (or
        "alert fired") for a completed answer, else the turn's own outcome."""

        async def done(outcome: str) -> None:
            kept = answered_outcome(schedule) if outcome == "completed" else outcome
            await self.finished(turn, occurrence, kept, schedule)

        return done

    async def not_posted(
        self,
        turn: Turn,
        occurrence: Occurrence,
        schedule: Schedule,
        host: RunChecks,
        *,
        failure: str,
        gone: str | None,
    ) -> None:
        """The channel refused the run's marker: a place that is ``gone`` (channel gone,
        bot removed, 403) pauses the schedule and tells the owner once; the run ends "not
        posted (failure)" otherwise."""
        outcome = f"not posted ({failure})"
        if gone is not None:
            reason = f"I cannot post there any more ({gone})"
            outcome = await self._pause(schedule, reason, host, "owner")
        await self.finished(turn, occurrence, outcome, schedule)

    async def _pause(
        self, schedule: Schedule, reason: str, host: RunChecks, audience: Audience
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
