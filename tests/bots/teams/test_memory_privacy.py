"""Memory privacy end to end in Teams (issue 18): two members and an admin, the real host,
the real agent on the fake Messages API.

Ana asks in her personal chat, the admin in a channel thread; each turn runs SQL and saves a
note carrying the asker's markers. Then Bo asks the same thing in a new thread of the channel
and the model searches memory. Regression for the leak issue 18 names: agent memory offered
one person's questions, SQL and notes to everyone else.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from adapters.teams.testing import ConnectorCall
from agent_core import Agent, InMemoryAgentMemory, UserResolver
from agent_core.llm.testing import FakeAnthropic, Reply
from bots.teams.settings import TeamsSettings
from tests.bots.teams.harness import ADMIN, MEMBER, TeamsHarness, teams_bot
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

DM, ADMINS = Marks("DM"), Marks("ADM")
BO = "aad-bo"
NAMES = {MEMBER: "Ana Lima", ADMIN: "Alex Admin", BO: "Bo"}
_threads = itertools.count(1_700_000_100_000)


@dataclass
class Turn:
    """What one turn sent: to the model (request bodies) and to Teams (connector calls)."""

    asked: dict[str, Any]
    llm: str
    calls: list[ConnectorCall]

    @property
    def screens(self) -> str:
        return wire(call.body for call in self.calls)


class Tenant:
    """Ana, Bo and the admin in one tenant; each method is one turn."""

    def __init__(self, bot: TeamsHarness, llm: FakeAnthropic) -> None:
        self.bot = bot
        self.llm = llm

    async def _turn(self, script: list[Reply], activity: dict[str, Any]) -> Turn:
        calls, requests = len(self.bot.fake.calls), len(self.llm.requests)
        self.llm.queue(*script)
        assert (await self.bot.post(activity)).status == 201
        await self.bot.host.turns.idle()
        assert self.llm.pending == 0, "the model was asked fewer times than scripted"
        return Turn(activity, llm_text(self.llm.requests[requests:]), self.bot.fake.calls[calls:])

    async def personal(self, text: str, script: list[Reply], *, user: str = MEMBER) -> Turn:
        return await self._turn(script, self.bot.message(text, user=user, user_name=NAMES[user]))

    async def in_channel(self, text: str, script: list[Reply], *, user: str) -> Turn:
        """A question that starts a new thread of the channel."""
        thread = f"19:general@thread.tacv2;messageid={next(_threads)}"
        activity = self.bot.message(
            text, kind="channel", conversation=thread, user=user, user_name=NAMES[user]
        )
        return await self._turn(script, activity)

    async def memories(self, *, user: str) -> Turn:
        return await self.in_channel("/memories", [], user=user)

    async def thumbs_up(self, answered: Turn, *, user: str) -> None:
        """Click 👍 on the answer ``answered`` posted, as Teams sends it: a feedback invoke
        whose ``replyToId`` is that answer's message id."""
        conversation = answered.asked["conversation"]
        value = {"actionName": "feedback", "actionValue": {"reaction": "like"}}
        invoke = self.bot.invoke(
            "message/submitAction",
            value,
            kind=conversation["conversationType"],
            conversation=conversation["id"],
            user=user,
            user_name=NAMES[user],
        )
        invoke["replyToId"] = answer_id(answered.calls)
        assert (await self.bot.post(invoke)).status == 200


def answer_id(calls: list[ConnectorCall]) -> str:
    """The id of the message among ``calls`` that carries the feedback buttons: a closed
    stream (personal chat) or the progress card the answer replaced (channel)."""
    [answer] = [
        c
        for c in calls
        if isinstance(c.body, dict) and (c.body.get("channelData") or {}).get("feedbackLoop")
    ]
    if answer.stream_info is not None:
        return str(answer.stream_info["streamId"])
    assert answer.operation == "update_activity" and answer.activity_id
    return answer.activity_id


@dataclass
class Asked:
    """The tenant after Ana's and the admin's turns."""

    tenant: Tenant
    ana: Turn
    admin: Turn


@asynccontextmanager
async def after_ana_and_the_admin_asked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> AsyncIterator[Asked]:
    database = shop_database(tmp_path)
    async with claude_on_fake() as (llm, service):

        def agent(resolver: UserResolver, settings: TeamsSettings) -> Agent:
            return build_memory_agent(service, resolver, InMemoryAgentMemory(), database)

        # the Stop card at once: a channel answer then fills a message whose id the fake
        # connector's record shows (the update's path), as feedback on it needs
        async with teams_bot(monkeypatch, agent_factory=agent, stop_button_after=0) as bot:
            tenant = Tenant(bot, llm)
            ana = await tenant.personal(DM.question, answer_with_memories(DM))
            admin = await tenant.in_channel(
                ADMINS.question, answer_with_memories(ADMINS, search=True), user=ADMIN
            )
            yield Asked(tenant, ana, admin)


async def test_the_turns_saved_what_the_leak_tests_look_for(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The markers are really in memory and really reach their owner: otherwise "absent
    elsewhere" would prove nothing."""
    async with after_ana_and_the_admin_asked(monkeypatch, tmp_path) as asked:
        ana = await asked.tenant.personal(QUESTION, answer_after_search())
        assert found(DM.all, ana.llm) == list(DM.all)
        mine = await asked.tenant.memories(user=MEMBER)
        assert found(DM.all, mine.screens) == [DM.q, DM.note]
        shown = [c for c in mine.calls if found(DM.all, wire([c.body]))]
        assert shown and {c.body["recipient"]["id"] for c in shown} == {f"29:{MEMBER}"}


async def test_a_colleague_is_never_offered_anothers_dm_or_unrated_memories(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Regression (issue 18): Bo's similar question got Ana's personal-chat question, SQL
    and note, and the admin's, in his model context and on his screen."""
    async with after_ana_and_the_admin_asked(monkeypatch, tmp_path) as asked:
        bo = await asked.tenant.in_channel(QUESTION, answer_after_search(), user=BO)
        listing = await asked.tenant.memories(user=BO)
        for turn in (bo, listing):
            assert found((*DM.all, *ADMINS.all), turn.llm + turn.screens) == []
        assert "No similar past tool uses found." in bo.llm  # the model did search memory
        assert "No memories saved yet." in listing.screens


async def test_an_admin_lists_their_own_memories_and_is_never_offered_a_members_dm(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An admin may see everyone's SQL, but not what a member asked in a personal chat."""
    async with after_ana_and_the_admin_asked(monkeypatch, tmp_path) as asked:
        assert found(DM.all, asked.admin.llm + asked.admin.screens) == []
        listing = await asked.tenant.memories(user=ADMIN)
        assert found(ADMINS.all, listing.screens) == [ADMINS.q, ADMINS.note]
        assert found(DM.all, listing.screens) == []


async def test_thumbs_up_shares_a_channel_answers_note_but_not_its_sql_nor_a_dm(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A personal-chat answer rated good stays Ana's; the admin's rated channel answer offers
    its note to Bo, never its SQL (Bo may not see tool arguments)."""
    async with after_ana_and_the_admin_asked(monkeypatch, tmp_path) as asked:
        tenant = asked.tenant
        await tenant.thumbs_up(asked.ana, user=MEMBER)
        await tenant.thumbs_up(asked.admin, user=ADMIN)
        admin = await tenant.in_channel(ADMINS.question, answer_after_search(), user=ADMIN)
        assert found(DM.all, admin.llm + admin.screens) == []
        bo = await tenant.in_channel(QUESTION, answer_after_search(), user=BO)
        listing = await tenant.memories(user=BO)
        for turn in (bo, listing):
            assert found((*DM.all, ADMINS.sql), turn.llm + turn.screens) == []
        assert found(ADMINS.all, bo.llm) == [ADMINS.note]
        assert ADMINS.note in listing.screens


async def test_a_dm_stays_out_of_its_owners_answers_in_a_channel(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Ana's own personal-chat memories are offered to her only in her personal chat: what
    the model knows in a channel thread, it may say there."""
    async with after_ana_and_the_admin_asked(monkeypatch, tmp_path) as asked:
        ana = await asked.tenant.in_channel(QUESTION, answer_after_search(), user=MEMBER)
        assert found(DM.all, ana.llm + ana.screens) == []
