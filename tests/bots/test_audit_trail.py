"""The audit trail through the real Slack bot and ``threadline audit`` (issue 39).

``threadline slack``'s own wiring (``agent_factory`` from a ``threadline.toml``, the real
Anthropic client on the fake Messages API) writes each question and answer to the trail of
the state store, SQLite or Redis; ``threadline audit export`` hands it over as JSON Lines or
CSV with who each pseudonym stands for; ``threadline audit verify`` passes, then names the
first bad record once one is edited directly in the store.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agent_core.llm.testing import FakeAnthropic, Reply
from agent_core.state_factory import build_state
from bots.cli import main
from bots.serving import Config, agent_factory
from tests.bots.slack.harness import running_bot
from tests.bots.test_forget import backend, configure, folder, mention

__all__ = ["backend", "folder"]  # the fixtures of tests/bots/test_forget.py

AUDIT = """
[audit]
include_question_text = true
jsonl = "{folder}/audit.jsonl"
"""


async def two_questions(folder: Path, config: Config) -> None:
    build = agent_factory(config, "slack")
    state = build_state(config.state)
    async with running_bot(
        folder, [], agent_factory=lambda resolver, st: build(st, resolver), state=state
    ) as h:
        for n, ts in enumerate(("100.000100", "200.000100")):
            await h.event(mention(f"question {n}", ts, "U1"))
            await h.idle()
        for agent in h.agent.served_agents():
            await agent.llm_service.aclose()
    await state.aclose()


async def command(*argv: str) -> int:
    """``threadline ...`` as a terminal runs it (its own event loop)."""
    return await asyncio.to_thread(main, list(argv))


async def exported(capsys: pytest.CaptureFixture[str], *options: str) -> str:
    capsys.readouterr()
    assert await command("audit", "export", *options) == 0
    return capsys.readouterr().out


async def test_export_and_verify_the_trail_the_bot_wrote(
    folder: Path, backend: str, capsys: pytest.CaptureFixture[str]
) -> None:
    async with FakeAnthropic() as llm:
        llm.queue(Reply.text("First answer."), Reply.text("Second answer."))
        config = configure(folder, llm, backend, AUDIT.format(folder=folder))
        await two_questions(folder, config)

    lines = [json.loads(line) for line in (await exported(capsys)).splitlines()]
    assert [(r["kind"], r["seq"]) for r in lines] == [
        ("question", 1),
        ("ai_response_generated", 2),
        ("question", 3),
        ("ai_response_generated", 4),
    ]
    question = lines[0]
    assert question["details"]["text"] == "question 0"
    assert question["person"].startswith("p:") and question["person_id"] == "slack:T1:U1"
    assert question["workspace"] == "slack:T1"
    forwarded = [json.loads(line) for line in (folder / "audit.jsonl").read_text().splitlines()]
    assert [r["hash"] for r in forwarded] == [r["hash"] for r in lines]

    assert await exported(capsys, "--workspace", "slack:T9") == ""
    table = list(csv.DictReader(io.StringIO(await exported(capsys, "--format", "csv"))))
    assert [row["kind"] for row in table][:2] == ["question", "ai_response_generated"]
    assert json.loads(table[0]["details"])["text"] == "question 0"
    far = await exported(capsys, "--since", "2001-01-01", "--until", "2001-01-02")
    assert far == ""

    assert await command("audit", "verify") == 0
    assert "intact: 4 records" in capsys.readouterr().out
    await edit_record_2(config)
    assert await command("audit", "verify") == 1
    assert "BROKEN at record 2" in capsys.readouterr().out


async def edit_record_2(config: Config) -> None:
    """Change record 2 in the store itself, as someone with access to it could."""
    settings = config.state
    if settings.backend == "sqlite":
        with sqlite3.connect(Path(settings.data_dir) / "state.db") as connection:
            connection.execute("UPDATE audit_trail SET at = at + 1 WHERE seq = 2")
        return
    from agent_core.state.redis_client import connect_redis

    redis: Any = connect_redis(settings.redis_url or "")
    stream = f"{settings.key_prefix}audit:trail"
    entries = await redis.xrange(stream)
    await redis.delete(stream)
    for _, fields in entries:
        sealed = json.loads(fields["r"])
        if sealed["seq"] == 2:
            sealed["at"] += 1
        await redis.xadd(stream, {"r": json.dumps(sealed)})
    await redis.aclose()
