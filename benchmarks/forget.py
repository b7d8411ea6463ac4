"""How long ``threadline forget`` takes for a person with 10,000 records across the stores.

One person (and, beside them, as many records of another who must stay) in every store of
a real ``State``, on SQLite (a temporary data directory) and on Redis (a private
``redis-server``): conversations, tool memories, schedules (the per-person cap), approvals,
cache entries (MCP tokens, identity), usage calls and audit records, 10,000 in all.
Baseline in the same run: ``forget --dry-run`` (finding and counting everything, erasing
nothing). Then ``forget_person`` itself. Goal: <= 2 s on each back end; the other person's
records all stay and the audit chain still verifies.

    .venv/bin/python benchmarks/forget.py [--records 10000] [--no-redis]

The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import logging
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _stats import result_line

from agent_core.approvals.book import ApprovalBook
from agent_core.approvals.record import ApprovalRecord
from agent_core.audit_chain import AuditEntry
from agent_core.context import ToolContext
from agent_core.conversations import Conversation, Message
from agent_core.forget import forget_person
from agent_core.mcp.auth.vault import person_key
from agent_core.schedules.model import Place, Schedule
from agent_core.schedules.recurrence import Recurrence
from agent_core.schedules.store import ScheduleLimits
from agent_core.state_factory import State, StateSettings, build_state
from agent_core.usage.counts import TokenCounts
from agent_core.usage.ledger import UsageRecord
from agent_core.users import User

GOAL_S = 2.0
PERSON, OTHER = "slack:T1:U1", "slack:T1:U2"
SCHEDULES = 25  # the per-person cap


def shares(total: int) -> dict[str, int]:
    """How the records split across the stores (they add up to ``total``)."""
    parts = {"conversations": 0.2, "memory": 0.1, "approvals": 0.05, "cache": 0.05, "usage": 0.2}
    counts = {name: int(total * part) for name, part in parts.items()}
    counts["schedules"] = min(SCHEDULES, total // 100)
    counts["audit"] = total - sum(counts.values())
    return counts


async def seed(state: State, person: str, counts: dict[str, int]) -> None:
    user = User(id=person, metadata={"workspace_id": "T1"})
    for n in range(counts["conversations"]):
        conversation = Conversation(id=f"slack:T1:C1:{n}.1", user=user)
        conversation.add_message(Message(role="user", content=f"question {n}"))
        await state.conversations.update_conversation(conversation)
    context = ToolContext(user=user, conversation_id="slack:T1:C1:1.1", request_id="r")
    for n in range(counts["memory"]):
        await state.memory.save_tool_usage(f"q {n}", "run_sql", {"sql": f"select {n}"}, context)
    for n in range(counts["schedules"]):
        schedule = Schedule(
            id=f"{person[-1]}{n:07x}",
            workspace="slack:T1",
            owner=person,
            place=Place(thread_key="slack:T1:C1:1.0"),
            recurrence=Recurrence(frequency="weekdays", hour=9),
            question="revenue yesterday",
            created_at=0.0,
            next_due=32400.0,
        )
        await state.schedules.add(schedule, limits=ScheduleLimits(per_workspace=1000))
    book = ApprovalBook(state.records)
    for n in range(counts["approvals"]):
        await book.open(ApprovalRecord.example(id=f"a{person[-1]}{n}", asker_id=person))
    for n in range(counts["cache"]):
        await state.cache.set(f"mcp:token:server{n}:{person_key(person)}", "sealed")
    now = dt.datetime.now(dt.UTC)
    for n in range(counts["usage"]):
        tokens = TokenCounts(input=10, output=5)
        record = UsageRecord(now, f"t{n}", person, None, "slack:T1", "m", tokens, 100)
        await state.usage.record(record)
    pseudonym = (await state.audit.pseudonyms()).of(person)
    for n in range(counts["audit"]):
        details = {"tool_name": "run_sql", "parameters": {"sql": f"select {n}"}}
        entry = AuditEntry(
            at=time.time(), kind="tool_invocation", person=pseudonym, details=details
        )
        state.audit.submit(entry, identity={"id": person})
    await state.audit.flush()


async def measure(settings: StateSettings, total: int) -> dict[str, Any]:
    state = build_state(settings)
    counts = shares(total)
    try:
        started = time.perf_counter()
        await seed(state, PERSON, counts)
        await seed(state, OTHER, shares(total // 10))
        seeded = time.perf_counter() - started
        started = time.perf_counter()
        dry = await forget_person(state, [PERSON], given=PERSON, dry_run=True)
        dry_s = time.perf_counter() - started
        started = time.perf_counter()
        report = await forget_person(state, [PERSON], given=PERSON)
        forget_s = time.perf_counter() - started
        verdict = await state.audit.verify()
        other_left = len(await state.schedules.owned_by(OTHER))
    finally:
        await state.aclose()
    return {
        "seed_s": round(seeded, 2),
        "dry_run_s": round(dry_s, 3),
        "forget_s": round(forget_s, 3),
        "found": sum(dry.counts.values()),
        "erased": report.counts,
        "seconds_by_store": report.seconds,
        "chain_ok": verdict.ok,
        "other_schedules_kept": other_left,
        "met": forget_s <= GOAL_S and verdict.ok,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--no-redis", action="store_true", help="SQLite only")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="forget-") as folder:
        directory = Path(folder)
        sqlite = StateSettings(data_dir=directory / "data")
        results["sqlite"] = asyncio.run(measure(sqlite, args.records))
        if not args.no_redis:
            from agent_core.state.testing import RedisServer

            with RedisServer(directory / "redis") as redis:
                settings = StateSettings(redis_url=redis.url, key_prefix="bench:")
                results["redis"] = asyncio.run(measure(settings, args.records))
    for backend, figures in results.items():
        print(
            f"{backend:<7} {figures['found']} records found in {figures['dry_run_s']:.3f} s "
            f"(dry run), erased in {figures['forget_s']:.3f} s; chain "
            f"{'ok' if figures['chain_ok'] else 'BROKEN'}; erased {figures['erased']}"
        )
    met = {backend: figures["met"] for backend, figures in results.items()}
    print(
        f"goal: forget <= {GOAL_S} s: "
        + ", ".join(f"{b} {'met' if m else 'NOT met'}" for b, m in met.items())
    )
    print(result_line("forget", goal_s=GOAL_S, records=args.records, goals=met, **results))


if __name__ == "__main__":
    main()
