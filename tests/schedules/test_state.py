"""``build_state`` gives every back end its schedule store, sharing the state's file or Redis."""

from __future__ import annotations

from pathlib import Path

from agent_core.schedules.store import ScheduleLimits
from agent_core.schedules.store_memory import MemoryScheduleStore
from agent_core.schedules.store_redis import RedisScheduleStore
from agent_core.schedules.store_sqlite import SqliteScheduleStore
from agent_core.state_factory import StateSettings, build_state
from tests.schedules.builders import schedule


async def test_each_backend_has_its_schedule_store(tmp_path: Path, redis_url: str) -> None:
    memory = build_state(StateSettings(ephemeral=True))
    sqlite = build_state(StateSettings(data_dir=tmp_path))
    redis = build_state(StateSettings(redis_url=redis_url, key_prefix="test:state-schedules:"))
    assert isinstance(memory.schedules, MemoryScheduleStore)
    assert isinstance(sqlite.schedules, SqliteScheduleStore)
    assert isinstance(redis.schedules, RedisScheduleStore)
    for state in (sqlite, redis):
        await state.aclose()


async def test_sqlite_schedules_live_in_state_db_and_survive_a_restart(tmp_path: Path) -> None:
    state = build_state(StateSettings(data_dir=tmp_path))
    made = schedule()
    await state.schedules.add(made, limits=ScheduleLimits())
    await state.aclose()
    assert (tmp_path / "state.db").exists()
    again = build_state(StateSettings(data_dir=tmp_path))
    assert await again.schedules.get(made.id) == made
    await again.aclose()
