"""``threadline schedules``: operators list every schedule of the shared state, and pause a
workspace's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_core.schedules.store import ScheduleLimits
from agent_core.state_factory import StateSettings, build_state
from bots.cli import main
from tests.schedules.builders import ORDERS_BELOW_100, schedule


async def test_lists_every_schedule_of_the_sqlite_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    state = build_state(StateSettings(data_dir=tmp_path))
    mine = schedule(created_at=1)
    alert = schedule(
        owner="teams:t1:a1", workspace="teams:t1", alert=ORDERS_BELOW_100, created_at=2
    )
    for made in (mine, alert):
        await state.schedules.add(made, limits=ScheduleLimits())
    await state.aclose()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("THREADLINE_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("REDIS_URL", raising=False)

    assert await _main(["schedules"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == [mine.id, alert.id]
    assert "every weekday 9:00 (Europe/Paris)" in lines[0] and "alert" in lines[1]

    assert await _main(["schedules", "--workspace", "teams:t1", "--json"]) == 0
    (found,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert found["id"] == alert.id and found["kind"] == "alert"

    assert await _main(["schedules", "--pause-all", "slack:T1"]) == 0
    state = build_state(StateSettings(data_dir=tmp_path))
    assert await state.schedules.paused_workspaces() == {"slack:T1"}
    await state.aclose()


async def test_reads_redis_when_configured(
    tmp_path: Path,
    redis_url: str,
    key_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    state = build_state(StateSettings(redis_url=redis_url, key_prefix=key_prefix))
    made = schedule()
    await state.schedules.add(made, limits=ScheduleLimits())
    await state.aclose()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("THREADLINE_REDIS_PREFIX", key_prefix)
    assert await _main(["schedules", "--owner", made.owner]) == 0
    assert capsys.readouterr().out.split()[0] == made.id


async def _main(argv: list[str]) -> int:
    """``main`` runs its own event loop: give it a thread of its own."""
    import asyncio

    return await asyncio.to_thread(main, argv)
