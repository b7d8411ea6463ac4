"""Through the real Teams bot: a database value shaped like a link, read from a table and
repeated by the model, shows as text (issue 22, item 8)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from adapters.fetch import FetchPolicy
from agent_core.database.file_tables import FileTables
from agent_core.llm.scripted import ScriptedResponse
from bots.files import SharedFiles
from tests.adapters.inert import teams_problems
from tests.adapters.teams.schemas import assert_valid_card, cards_in
from tests.bots.teams.harness import teams_bot

RESET = "[Reset your password](https://evil.example/reset)"
ACCOUNTS = f'name,note\nana,"{RESET}"\n'.encode()


async def test_a_link_shaped_value_from_the_data_is_never_a_link(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Regression: Teams table cells rendered Markdown, so a database value ``[Reset your
    password](https://...)`` became a live, disguised link in the card; the model repeating
    it made one in the message text too."""
    files = SharedFiles(FileTables(tmp_path / "files"), policy=FetchPolicy.local_fakes())
    script = [
        ScriptedResponse.tool("query_files", {"sql": "SELECT * FROM accounts"}),
        f"Ana's note says: {RESET}",
    ]
    async with teams_bot(monkeypatch, script, shared_files=files) as bot:
        activity: dict[str, Any] = bot.message("what do the notes say?")
        activity["attachments"] = [bot.fake.share_file("accounts.csv", ACCOUNTS)]
        await bot.post(activity)
        final = await bot.final()
        sent = [c.body for c in bot.fake.calls if isinstance(c.body, dict)]
        assert [p for body in sent for p in teams_problems(body)] == []
        assert "[Reset your password] (https://evil.example/reset)" in (final.text or "")
        (card,) = cards_in(final.body)
        assert_valid_card(card)
        table = next(e for e in card["body"] if e["type"] == "Table")
        runs = [cell["items"][0]["inlines"][0]["text"] for cell in table["rows"][1]["cells"]]
        assert runs == ["ana", RESET]  # shown as it is, in a TextRun Teams never parses
