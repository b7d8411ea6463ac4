"""Memory privacy end to end in Slack (issue 18): two members and an admin, the real bot, the
real agent on the fake Messages API.

Ana (``U1``) asks in her DM and privately (``/ask private``), the admin (``UADMIN``) asks in
``#C1``; each turn runs SQL and saves a note carrying the asker's markers. Then Bo (``U2``)
asks the same thing in ``#C1`` and the model searches memory. Regression for the leak issue
18 names: agent memory offered one person's questions, SQL and notes to everyone else.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.slack.controls import FEEDBACK_ACTION, feedback_turn
from adapters.slack.testing import Call, Message
from agent_core import Agent, UserResolver
from agent_core.llm.testing import FakeAnthropic, Reply
from agent_core.state_factory import State
from tests.bots.slack.harness import SlackHarness, running_bot
from tests.support.memory_privacy import (
    QUESTION,
    Marks,
    answer_after_search,
    answer_with_memories,
    build_memory_agent,
    claude_on_fake,
    found,
    llm_text,
    shop_database,
    wire,
)

DM, PRIVATE, ADMIN = Marks("DM"), Marks("PRIV"), Marks("ADM")
ANA = (*DM.all, *PRIVATE.all)


@dataclass
class Turn:
    """What one turn sent: to the model (request bodies) and to Slack (Web API calls)."""

    llm: str
    calls: list[Call]

    @property
    def screens(self) -> str:
        return wire(call.args for call in self.calls)


class Workspace:
    """Ana, Bo and the admin in one Slack workspace; each method is one turn."""

    def __init__(self, h: SlackHarness, llm: FakeAnthropic) -> None:
        self.h = h
        self.llm = llm
        self._ts = 300

    async def _turn(self, script: list[Reply], send: Callable[[], Awaitable[Any]]) -> Turn:
        calls, requests = len(self.h.fake.calls), len(self.llm.requests)
        self.llm.queue(*script)
        await send()
        await self.h.idle()
        assert self.llm.pending == 0, "the model was asked fewer times than scripted"
        return Turn(llm_text(self.llm.requests[requests:]), self.h.fake.calls[calls:])

    def _ts_of_new_message(self) -> str:
        self._ts += 1
        return f"{self._ts}.000100"

    async def dm(self, text: str, script: list[Reply], *, user: str = "U1") -> Turn:
        event = {
            "type": "message",
            "channel_type": "im",
            "channel": "D1",
            "user": user,
            "text": text,
            "ts": self._ts_of_new_message(),
            "client_msg_id": f"m{self._ts}",
        }
        return await self._turn(script, lambda: self.h.event(event))

    async def privately(self, text: str, script: list[Reply], *, user: str = "U1") -> Turn:
        return await self._turn(script, lambda: self.h.command(f"private {text}", user=user))

    async def in_channel(self, text: str, script: list[Reply], *, user: str) -> Turn:
        ts = self._ts_of_new_message()
        event = {
            "type": "app_mention",
            "user": user,
            "text": f"<@UBOT> {text}",
            "ts": ts,
            "channel": "C1",
            "event_ts": ts,
        }
        return await self._turn(script, lambda: self.h.event(event))

    async def memories(self, *, user: str) -> Turn:
        return await self.in_channel("/memories", [], user=user)

    async def click_on_ephemeral(
        self, text: str, script: list[Reply], *, user: str, thread_ts: str
    ) -> Turn:
        """Click a button (value ``text``) on a message only ``user`` sees, in a thread."""
        return await self._turn(
            script,
            lambda: self.h.action(
                "threadline_button:0",
                text,
                user=user,
                channel="C1",
                message_ts=self._ts_of_new_message(),
                thread_ts=thread_ts,
                ephemeral=True,
            ),
        )

    async def thumbs_up(self, answered: Turn, *, user: str) -> None:
        """Click 👍 on the answer ``answered`` posted, as Slack sends it: the action carries
        the ``block_id`` the bot put on that answer."""
        block_id, answer = feedback_on(self.h, answered.calls)
        response = await self.h.action(
            FEEDBACK_ACTION,
            "positive",
            user=user,
            channel=answer.channel,
            message_ts=answer.ts,
            thread_ts=answer.thread_ts,
            ephemeral=answer.ephemeral_to is not None,
            block_id=block_id,
        )
        assert response.status == 200


def feedback_on(h: SlackHarness, calls: list[Call]) -> tuple[str, Message]:
    """The feedback ``block_id`` the bot posted with the answer among ``calls``
    (``chat.postMessage``, ``chat.stopStream`` or ``chat.postEphemeral``) and its message."""
    block_ids = {
        block["block_id"]
        for call in calls
        for block in call.args.get("blocks") or []
        if any(e.get("action_id") == FEEDBACK_ACTION for e in block.get("elements") or [])
    }
    assert len(block_ids) == 1, block_ids
    [block_id] = block_ids
    assert feedback_turn(block_id), "the feedback buttons do not name the turn they rate"
    answer = next(
        m for m in h.fake.messages if any(b.get("block_id") == block_id for b in m.blocks)
    )
    return block_id, answer


@dataclass
class Asked:
    """The workspace after Ana's and the admin's turns."""

    ws: Workspace
    ana_dm: Turn
    ana_private: Turn
    admin: Turn


@asynccontextmanager
async def after_ana_and_the_admin_asked(tmp_path: Path) -> AsyncIterator[Asked]:
    database = shop_database(tmp_path)
    async with claude_on_fake() as (llm, service):

        def agent(resolver: UserResolver, state: State) -> Agent:
            return build_memory_agent(
                service, resolver, state.memory, database, conversations=state.conversations
            )

        async with running_bot(tmp_path, [], agent_factory=agent) as h:
            ws = Workspace(h, llm)
            ana_dm = await ws.dm(DM.question, answer_with_memories(DM))
            ana_private = await ws.privately(PRIVATE.question, answer_with_memories(PRIVATE))
            admin = await ws.in_channel(
                ADMIN.question, answer_with_memories(ADMIN, search=True), user="UADMIN"
            )
            yield Asked(ws, ana_dm, ana_private, admin)


async def test_the_turns_saved_what_the_leak_tests_look_for(tmp_path: Path) -> None:
    """The markers are really in memory and really reach their owner: otherwise "absent
    elsewhere" would prove nothing."""
    async with after_ana_and_the_admin_asked(tmp_path) as asked:
        ana = await asked.ws.dm(QUESTION, answer_after_search())
        assert found(ANA, ana.llm) == list(ANA)  # her own SQL (search) and notes (prompt)
        mine = await asked.ws.memories(user="U1")
        assert found(ANA, mine.screens) == [DM.q, DM.note, PRIVATE.q, PRIVATE.note]
        shown = [c for c in mine.calls if found(ANA, wire([c.args]))]
        assert shown and all(c.method == "chat.postEphemeral" for c in shown)
        assert {c.args["user"] for c in shown} == {"U1"}


async def test_a_colleague_is_never_offered_anothers_dm_private_or_unrated_memories(
    tmp_path: Path,
) -> None:
    """Regression (issue 18): Bo's similar question got Ana's DM and private questions, SQL
    and notes, and the admin's, in his model context and on his screen."""
    async with after_ana_and_the_admin_asked(tmp_path) as asked:
        bo = await asked.ws.in_channel(QUESTION, answer_after_search(), user="U2")
        listing = await asked.ws.memories(user="U2")
        for turn in (bo, listing):
            assert found((*ANA, *ADMIN.all), turn.llm + turn.screens) == []
        assert "search_saved_correct_tool_uses" in bo.llm  # the model did search memory
        assert "No similar past tool uses found." in bo.llm
        assert "No memories saved yet." in listing.screens


async def test_an_admin_lists_their_own_memories_and_is_never_offered_a_members_dm(
    tmp_path: Path,
) -> None:
    """An admin may see everyone's SQL, but not what a member asked in private places."""
    async with after_ana_and_the_admin_asked(tmp_path) as asked:
        assert found(ANA, asked.admin.llm + asked.admin.screens) == []
        listing = await asked.ws.memories(user="UADMIN")
        assert found(ADMIN.all, listing.screens) == [ADMIN.q, ADMIN.note]
        assert found(ANA, listing.screens) == []


async def test_thumbs_up_shares_a_channel_answers_note_but_not_its_sql_nor_any_dm(
    tmp_path: Path,
) -> None:
    """A DM answer rated good stays Ana's; the admin's rated channel answer offers its note
    to Bo, never its SQL (Bo may not see tool arguments)."""
    async with after_ana_and_the_admin_asked(tmp_path) as asked:
        ws = asked.ws
        await ws.thumbs_up(asked.ana_dm, user="U1")
        await ws.thumbs_up(asked.ana_private, user="U1")
        await ws.thumbs_up(asked.admin, user="UADMIN")
        admin = await ws.in_channel(ADMIN.question, answer_after_search(), user="UADMIN")
        assert found(ANA, admin.llm + admin.screens) == []
        bo = await ws.in_channel(QUESTION, answer_after_search(), user="U2")
        listing = await ws.memories(user="U2")
        for turn in (bo, listing):
            assert found((*ANA, ADMIN.sql), turn.llm + turn.screens) == []
        assert found(ADMIN.all, bo.llm) == [ADMIN.note]
        assert ADMIN.note in listing.screens


async def test_a_dm_stays_out_of_its_owners_answers_in_a_channel(tmp_path: Path) -> None:
    """Ana's own DM and private memories are offered to her only somewhere private: what the
    model knows in a channel thread, it may say there."""
    async with after_ana_and_the_admin_asked(tmp_path) as asked:
        ana = await asked.ws.in_channel(QUESTION, answer_after_search(), user="U1")
        assert found(ANA, ana.llm + ana.screens) == []


async def test_a_click_on_an_ephemeral_in_a_thread_is_answered_as_in_the_thread(
    tmp_path: Path,
) -> None:
    """Regression: a button on a message only Ana saw, in a channel thread, started a turn
    marked private (``is_ephemeral``) but answered in the thread for all to see, so the model
    was given her DM and private notes and SQL there."""
    async with after_ana_and_the_admin_asked(tmp_path) as asked:
        ana = await asked.ws.click_on_ephemeral(
            QUESTION, answer_after_search(), user="U1", thread_ts="350.000100"
        )
        assert [c.args["thread_ts"] for c in ana.calls if c.method == "chat.postMessage"] == [
            "350.000100"
        ]
        assert found(ANA, ana.llm + ana.screens) == []
