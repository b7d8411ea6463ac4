"""The ``AgentMemory`` contract, reusable by every implementation.

Subclass ``AgentMemoryContract`` in a ``test_*.py`` module and override the ``memory``
fixture (sync or async) to return a fresh, empty memory::

    class TestRedisAgentMemory(AgentMemoryContract):
        @pytest.fixture
        async def memory(self, redis_url):
            memory = RedisAgentMemory(redis_url, namespace=uuid.uuid4().hex)
            yield memory
            await memory.close()

The tests hold for any ranking (lexical or embeddings): identical questions must score
near 1.0, unrelated ones must fall under the default 0.7 threshold.
"""

from __future__ import annotations

import datetime as dt
import itertools

import pytest

from agent_core.context import ToolContext
from agent_core.memory.base import AgentMemory
from agent_core.users import User

_requests = itertools.count()


def tool_context(
    workspace: str = "T1",
    user: str = "U1",
    *,
    where: str = "channel",
    admin: bool = False,
    turn: str | None = None,
) -> ToolContext:
    """A context in ``workspace`` (the memory scope): ``where`` is ``channel``, ``dm`` or
    ``private`` (an answer only the asker sees); admins see tool arguments."""
    request: dict[str, object] = {
        "platform": "slack",
        "workspace_id": workspace,
        "channel_id": "C1",
    }
    if where == "dm":
        request.update(channel_id="D1", is_dm=True)
    elif where == "private":
        request.update(is_private=True)
    groups = ["user", "admin"] if admin else ["user"]
    features = ["tool_arguments", "tool_names"] if admin else ["tool_names"]
    return ToolContext(
        user=User(
            id=f"slack:{workspace}:{user}",
            metadata={"workspace_id": workspace},
            group_memberships=groups,
        ),
        conversation_id=f"slack:{workspace}:{request['channel_id']}:1.0",
        request_id=turn or f"r{next(_requests)}",
        metadata={"ui_features_available": features, "request": request},
    )


def _parse(timestamp: str | None) -> dt.datetime:
    assert timestamp, "memories carry a timestamp"
    parsed = dt.datetime.fromisoformat(timestamp)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def _after(timestamp: str | None) -> str:
    """An ISO instant strictly after ``timestamp`` that the wall clock has already passed."""
    cutoff = _parse(timestamp) + dt.timedelta(milliseconds=1)
    while dt.datetime.now(dt.UTC) <= cutoff:  # spins at most a millisecond, never sleeps
        pass
    return cutoff.isoformat()


async def _loose_tools(memory: AgentMemory, query: str, ctx: ToolContext) -> list[object]:
    """Tool memories offered for anything near ``query`` (so an empty answer means hidden)."""
    return list(await memory.search_similar_usage(query, ctx, similarity_threshold=0.1))


async def _loose_texts(memory: AgentMemory, query: str, ctx: ToolContext) -> list[object]:
    return list(await memory.search_text_memories(query, ctx, similarity_threshold=0.1))


class AgentMemoryContract:
    """Behaviour every ``AgentMemory`` must have. Override the ``memory`` fixture."""

    @pytest.fixture
    def memory(self) -> AgentMemory:
        raise NotImplementedError("override the memory fixture")

    # -- tool usage --------------------------------------------------------------------

    async def test_saved_usage_is_found_by_its_own_question(self, memory: AgentMemory) -> None:
        ctx = tool_context()
        await memory.save_tool_usage(
            "top 5 customers by revenue", "run_sql", {"sql": "SELECT 1"}, ctx
        )
        [hit] = await memory.search_similar_usage("top 5 customers by revenue", ctx)
        assert hit.rank == 1
        assert hit.similarity_score >= 0.9
        assert hit.memory.question == "top 5 customers by revenue"
        assert hit.memory.tool_name == "run_sql"
        assert hit.memory.args == {"sql": "SELECT 1"}
        assert hit.memory.success is True
        assert hit.memory.memory_id

    async def test_unrelated_questions_fall_under_the_default_threshold(
        self, memory: AgentMemory
    ) -> None:
        ctx = tool_context()
        await memory.save_tool_usage("monthly revenue trend", "run_sql", {"sql": "A"}, ctx)
        assert await memory.search_similar_usage("delete the staging bucket", ctx) == []

    async def test_results_are_ranked_best_first_with_scores_in_range(
        self, memory: AgentMemory
    ) -> None:
        ctx = tool_context()
        questions = [
            "how many orders were placed last month",
            "weather forecast for tomorrow",
            "how many orders were placed",
        ]
        for n, question in enumerate(questions):
            await memory.save_tool_usage(question, "run_sql", {"sql": str(n)}, ctx)
        hits = await memory.search_similar_usage(
            "how many orders were placed last month", ctx, similarity_threshold=0.0
        )
        assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
        assert hits[0].memory.args == {"sql": "0"}
        scores = [h.similarity_score for h in hits]
        assert scores == sorted(scores, reverse=True)
        assert all(0.0 <= s <= 1.0 for s in scores)

    async def test_limit_threshold_and_tool_filter(self, memory: AgentMemory) -> None:
        ctx = tool_context()
        for n in range(5):
            await memory.save_tool_usage("revenue by category", "run_sql", {"n": n}, ctx)
        await memory.save_tool_usage("revenue by category", "visualize_data", {"n": 9}, ctx)
        assert len(await memory.search_similar_usage("revenue by category", ctx, limit=2)) == 2
        charts = await memory.search_similar_usage(
            "revenue by category", ctx, tool_name_filter="visualize_data"
        )
        assert [h.memory.args for h in charts] == [{"n": 9}]
        assert (
            await memory.search_similar_usage(
                "revenue by category", ctx, tool_name_filter="no_such_tool"
            )
            == []
        )

    async def test_failed_usage_is_remembered_but_never_suggested(
        self, memory: AgentMemory
    ) -> None:
        ctx = tool_context()
        await memory.save_tool_usage(
            "orders by status", "run_sql", {"sql": "SELEC"}, ctx, success=False
        )
        assert await memory.search_similar_usage("orders by status", ctx) == []
        [recent] = await memory.get_recent_memories(ctx)
        assert recent.success is False

    async def test_metadata_round_trips(self, memory: AgentMemory) -> None:
        ctx = tool_context()
        await memory.save_tool_usage(
            "orders by status", "run_sql", {"sql": "S"}, ctx, metadata={"rows": 4}
        )
        [recent] = await memory.get_recent_memories(ctx)
        assert recent.metadata == {"rows": 4}

    async def test_recent_memories_are_newest_first_and_limited(self, memory: AgentMemory) -> None:
        ctx = tool_context()
        for n in range(4):
            await memory.save_tool_usage(f"question {n}", "run_sql", {"n": n}, ctx)
        recent = await memory.get_recent_memories(ctx, limit=3)
        assert [m.question for m in recent] == ["question 3", "question 2", "question 1"]
        stamps = [_parse(m.timestamp) for m in recent]
        assert stamps == sorted(stamps, reverse=True)
        assert len({m.memory_id for m in await memory.get_recent_memories(ctx)}) == 4

    async def test_delete_by_id(self, memory: AgentMemory) -> None:
        ctx = tool_context()
        await memory.save_tool_usage("orders by status", "run_sql", {"sql": "S"}, ctx)
        [saved] = await memory.get_recent_memories(ctx)
        assert saved.memory_id
        assert await memory.delete_by_id(ctx, saved.memory_id) is True
        assert await memory.delete_by_id(ctx, saved.memory_id) is False
        assert await memory.get_recent_memories(ctx) == []
        assert await memory.search_similar_usage("orders by status", ctx) == []

    async def test_clear_by_tool_name(self, memory: AgentMemory) -> None:
        ctx = tool_context()
        await memory.save_tool_usage("a question", "run_sql", {"n": 1}, ctx)
        await memory.save_tool_usage("b question", "visualize_data", {"n": 2}, ctx)
        await memory.save_tool_usage("c question", "run_sql", {"n": 3}, ctx)
        assert await memory.clear_memories(ctx, tool_name="run_sql") == 2
        assert [m.tool_name for m in await memory.get_recent_memories(ctx)] == ["visualize_data"]

    async def test_clear_before_date(self, memory: AgentMemory) -> None:
        ctx = tool_context()
        await memory.save_tool_usage("old question", "run_sql", {"n": 1}, ctx)
        [old] = await memory.get_recent_memories(ctx)
        cutoff = _after(old.timestamp)
        await memory.save_tool_usage("new question", "run_sql", {"n": 2}, ctx)
        assert await memory.clear_memories(ctx, before_date="2000-01-01") == 0
        assert await memory.clear_memories(ctx, before_date=cutoff) == 1
        assert [m.question for m in await memory.get_recent_memories(ctx)] == ["new question"]
        assert await memory.clear_memories(ctx) == 1
        assert await memory.get_recent_memories(ctx) == []

    async def test_clear_leaves_text_memories(self, memory: AgentMemory) -> None:
        ctx = tool_context()
        await memory.save_text_memory("fiscal year starts in April", ctx)
        await memory.save_tool_usage("a question", "run_sql", {"n": 1}, ctx)
        assert await memory.clear_memories(ctx) == 1
        assert len(await memory.get_recent_text_memories(ctx)) == 1

    # -- text memories -----------------------------------------------------------------

    async def test_text_memory_save_search_delete(self, memory: AgentMemory) -> None:
        ctx = tool_context()
        saved = await memory.save_text_memory("revenue excludes cancelled orders", ctx)
        assert saved.memory_id and saved.timestamp
        _parse(saved.timestamp)
        await memory.save_text_memory("the office closes at six", ctx)
        [hit] = await memory.search_text_memories("revenue excludes cancelled orders", ctx)
        assert hit.memory.memory_id == saved.memory_id
        assert hit.rank == 1 and 0.9 <= hit.similarity_score <= 1.0
        assert await memory.delete_text_memory(ctx, saved.memory_id) is True
        assert await memory.delete_text_memory(ctx, saved.memory_id) is False
        assert await memory.search_text_memories("revenue excludes cancelled orders", ctx) == []

    async def test_recent_text_memories_are_newest_first(self, memory: AgentMemory) -> None:
        ctx = tool_context()
        for n in range(3):
            await memory.save_text_memory(f"note {n}", ctx)
        recent = await memory.get_recent_text_memories(ctx, limit=2)
        assert [m.content for m in recent] == ["note 2", "note 1"]

    # -- scoping -----------------------------------------------------------------------

    async def test_workspaces_never_see_each_others_memories(self, memory: AgentMemory) -> None:
        """A memory saved in one workspace must not be found, listed or deleted from another."""
        ours, theirs = tool_context("T1"), tool_context("T2")
        await memory.save_tool_usage("orders by status", "run_sql", {"sql": "S"}, ours)
        note = await memory.save_text_memory("orders by status uses the status column", ours)
        [saved] = await memory.get_recent_memories(ours)
        assert saved.memory_id and note.memory_id

        assert await memory.search_similar_usage("orders by status", theirs) == []
        assert await memory.search_text_memories("orders by status", theirs) == []
        assert await memory.get_recent_memories(theirs) == []
        assert await memory.get_recent_text_memories(theirs) == []
        assert await memory.delete_by_id(theirs, saved.memory_id) is False
        assert await memory.delete_text_memory(theirs, note.memory_id) is False
        assert await memory.clear_memories(theirs) == 0

        assert len(await memory.get_recent_memories(ours)) == 1
        assert len(await memory.get_recent_text_memories(ours)) == 1

    # -- owners and audiences (agent_core.memory.access) ---------------------------------

    async def test_another_person_is_offered_nothing_until_it_is_marked_good(
        self, memory: AgentMemory
    ) -> None:
        """Regression: every saved query was offered to the whole workspace at once."""
        ana, bo = tool_context(user="UANA", turn="t-ana"), tool_context(user="UBO")
        await memory.save_tool_usage(
            "orders by status", "run_sql", {"sql": "S-ANA"}, ana, metadata={"rows": 7}
        )
        await memory.save_text_memory("orders by status uses the ANA-NOTE column", ana)

        assert await _loose_tools(memory, "orders by status", bo) == []
        assert await _loose_texts(memory, "orders by status", bo) == []
        assert await memory.get_recent_memories(bo) == []
        assert await memory.get_recent_text_memories(bo) == []
        [own] = await memory.search_similar_usage("orders by status", ana)
        assert (own.memory.owner_id, own.memory.args) == ("slack:T1:UANA", {"sql": "S-ANA"})

        assert await memory.rate_turn(ana, "t-ana", good=True) == 2
        [note] = await memory.search_text_memories("orders by status", bo, similarity_threshold=0.1)
        assert "ANA-NOTE" in note.memory.content
        # a non-admin is never offered someone else's SQL, nor its result values
        assert await _loose_tools(memory, "orders by status", bo) == []
        [listed] = await memory.get_recent_memories(bo)
        assert (listed.args, listed.arguments_hidden, listed.metadata) == ({}, True, None)
        admin = tool_context(user="UADMIN", admin=True)
        [hit] = await memory.search_similar_usage("orders by status", admin)
        assert hit.memory.args == {"sql": "S-ANA"} and hit.memory.metadata is None
        assert hit.memory.verdict == "good" and hit.memory.audience == "scope"

    async def test_direct_messages_and_private_answers_stay_with_their_owner(
        self, memory: AgentMemory
    ) -> None:
        for where in ("dm", "private"):
            ana = tool_context(user="UANA", where=where, turn=f"t-{where}")
            await memory.save_tool_usage(f"{where} secret revenue", "run_sql", {"sql": "X"}, ana)
            note = await memory.save_text_memory(f"{where} secret margin", ana)
            assert await memory.rate_turn(ana, f"t-{where}", good=True) == 2
            admin = tool_context(user="UADMIN", admin=True, where="dm")
            assert note.memory_id and not await memory.share(admin, note.memory_id)
            for other in (admin, tool_context(user="UBO", where="dm")):
                assert await _loose_texts(memory, f"{where} secret margin", other) == []
                assert await memory.get_recent_memories(other) == []
            # the owner is offered them only somewhere private, never in a channel
            assert await memory.search_text_memories(f"{where} secret margin", ana)
            in_channel = tool_context(user="UANA", where="channel")
            assert await _loose_texts(memory, f"{where} secret margin", in_channel) == []
            assert await memory.search_similar_usage(f"{where} secret revenue", in_channel) == []

    async def test_only_the_owner_or_an_admin_rates_and_a_bad_rating_is_never_suggested(
        self, memory: AgentMemory
    ) -> None:
        ana = tool_context(user="UANA", turn="t1")
        await memory.save_tool_usage("orders by status", "run_sql", {"sql": "S"}, ana)
        assert await memory.rate_turn(tool_context(user="UBO"), "t1", good=True) == 0
        assert (
            await memory.search_similar_usage(
                "orders by status", tool_context(user="UBO", admin=True)
            )
            == []
        )
        assert await memory.rate_turn(tool_context(user="UADMIN", admin=True), "t1", good=False)
        assert await memory.search_similar_usage("orders by status", ana) == []
        [listed] = await memory.get_recent_memories(ana)
        assert listed.verdict == "bad"

    async def test_an_admin_shares_and_deletes_anything_a_person_only_their_own(
        self, memory: AgentMemory
    ) -> None:
        ana, bo = tool_context(user="UANA"), tool_context(user="UBO")
        admin = tool_context(user="UADMIN", admin=True)
        note = await memory.save_text_memory("fiscal year starts in April", ana)
        await memory.save_tool_usage("orders by status", "run_sql", {"sql": "S"}, ana)
        [tool] = await memory.get_recent_memories(ana)
        assert note.memory_id and tool.memory_id
        assert not await memory.share(bo, note.memory_id)
        assert await memory.share(admin, note.memory_id)
        assert await memory.get_recent_text_memories(bo)
        assert not await memory.delete_text_memory(bo, note.memory_id)
        assert not await memory.delete_by_id(bo, tool.memory_id)
        assert await memory.clear_memories(bo) == 0
        assert await memory.delete_text_memory(admin, note.memory_id)
        assert await memory.delete_by_id(admin, tool.memory_id)
        await memory.save_tool_usage("orders by status", "run_sql", {"sql": "S"}, bo)
        assert await memory.clear_memories(bo) == 1

    async def test_the_same_use_by_two_people_is_two_memories(self, memory: AgentMemory) -> None:
        ana, bo = tool_context(user="UANA"), tool_context(user="UBO")
        for ctx in (ana, bo, ana):
            await memory.save_tool_usage("orders by status", "run_sql", {"sql": "S"}, ctx)
        assert len(await memory.get_recent_memories(ana)) == 1
        assert len(await memory.get_recent_memories(bo)) == 1

    async def test_returned_memories_are_copies(self, memory: AgentMemory) -> None:
        ctx = tool_context()
        await memory.save_tool_usage("orders by status", "run_sql", {"sql": "S"}, ctx)
        [recent] = await memory.get_recent_memories(ctx)
        recent.args["sql"] = "DROP TABLE orders"
        [again] = await memory.get_recent_memories(ctx)
        assert again.args == {"sql": "S"}
