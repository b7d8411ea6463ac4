"""adapters.teams.stream through the real HTTP connector client against the fake connector:
streaming, pacing, fallbacks, splitting, retries and admin-only detail routing."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Iterable

import pytest

from adapters.teams.activities import ConversationRef
from adapters.teams.limits import TEXT_LIMIT
from adapters.teams.payloads import Activity
from adapters.teams.stream import ReplyOptions, TeamsReplyStream
from adapters.teams.testing import ConnectorCall, FakeBotConnector
from agent_core.components import (
    CardComponent,
    DataFrameComponent,
    RichTextComponent,
    SimpleTextComponent,
    StatusBarUpdateComponent,
    StatusCardComponent,
    UiComponent,
)
from bots.teams.connector import ConnectorPool
from tests.adapters.teams.payloads import message
from tests.adapters.teams.schemas import assert_valid_card, cards_in

FAST = ReplyOptions(pace=0.02, typing_interval=0.05)


@pytest.fixture
async def connector() -> AsyncIterator[FakeBotConnector]:
    async with FakeBotConnector() as fake:
        yield fake


class Sleeps:
    """Records retry waits instead of sleeping them."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
async def pool() -> AsyncIterator[ConnectorPool]:
    async with ConnectorPool(retry_sleep=Sleeps()) as connectors:
        yield connectors


def ref_for(fake: FakeBotConnector, kind: str = "personal") -> ConversationRef:
    return ConversationRef.from_activity(
        Activity.model_validate(message("q", kind=kind, service_url=fake.url))
    )


def streamed(text: str, *, step: int = 6) -> list[UiComponent]:
    """A text answer as the agent streams it: create, updates, final version."""
    first = RichTextComponent(content=text[:step], markdown=True, streaming=True)
    versions = [first]
    for end in range(2 * step, len(text) + step, step):
        versions.append(
            first.update(
                content=text[:end], delta=text[end - step : end], streaming=end < len(text)
            )
        )
    versions[-1] = first.update(content=text, streaming=False)
    return [UiComponent(rich_component=v) for v in versions]


def working() -> UiComponent:
    return UiComponent(
        rich_component=StatusBarUpdateComponent(status="working", message="Working on it...")
    )


async def play(
    reply: TeamsReplyStream, components: Iterable[UiComponent], gap: float = 0.0
) -> str | None:
    async with reply:
        for component in components:
            await reply.handle(component)
            if gap:
                await asyncio.sleep(gap)
        await reply.finish()
        return reply.answer_id


def stream_calls(fake: FakeBotConnector) -> list[ConnectorCall]:
    return [c for c in fake.calls if c.operation == "reply_to_activity"]


async def test_personal_answer_streams_informative_chunks_then_final(
    connector: FakeBotConnector, pool: ConnectorPool
) -> None:
    ref = ref_for(connector)
    reply = TeamsReplyStream(pool.get(connector.url), ref, options=FAST)
    answer = "Sales rose 12% in the EU, driven by the new pricing."
    answer_id = await play(reply, [working(), *streamed(answer)], gap=0.01)
    calls = stream_calls(connector)
    assert all(c.activity_id == ref.activity_id for c in calls)
    informative, *chunks, final = calls
    assert informative.activity_type == "typing"
    assert informative.stream_info == {
        "type": "streaminfo",
        "streamType": "informative",
        "streamSequence": 1,
    }
    assert informative.text == "Working on it..."
    stream_id = answer_id
    assert chunks, "the answer streamed"
    sequences = [c.stream_info["streamSequence"] for c in chunks]  # type: ignore[index]
    assert sequences == sorted(set(sequences)) and sequences[0] == 2
    assert all(c.stream_info["streamId"] == stream_id for c in chunks)  # type: ignore[index]
    assert all(answer.startswith(c.text or "") for c in chunks)
    gaps = [b.at - a.at for a, b in itertools.pairwise(calls)]
    assert min(gaps) >= 0.02 * 0.9
    assert final.activity_type == "message"
    assert final.text == answer
    assert final.body["entities"][0] == {
        "type": "streaminfo",
        "streamId": stream_id,
        "streamType": "final",
    }
    assert final.body["entities"][1]["additionalType"] == ["AIGeneratedContent"]
    assert final.body["channelData"]["feedbackLoop"] == {"type": "default"}
    assert final.body["channelData"]["streamType"] == "final"


async def test_final_message_carries_the_turns_cards(
    connector: FakeBotConnector, pool: ConnectorPool
) -> None:
    table = DataFrameComponent.from_records([{"region": "EU", "sales": 10}], title="Sales")
    components = [working(), UiComponent(rich_component=table), *streamed("Here it is.")]
    await play(
        TeamsReplyStream(pool.get(connector.url), ref_for(connector), options=FAST), components
    )
    final = stream_calls(connector)[-1]
    (card,) = cards_in(final.body)
    assert_valid_card(card)
    assert final.text == "Here it is."


async def test_first_informative_refused_falls_back_to_updating_in_place(
    connector: FakeBotConnector, pool: ConnectorPool
) -> None:
    connector.fail("stream_informative", 403, code="ContentStreamNotAllowed")
    reply = TeamsReplyStream(pool.get(connector.url), ref_for(connector), options=FAST)
    answer_id = await play(reply, [working(), *streamed("one two three four five")], gap=0.01)
    operations = connector.operations()
    assert operations[0] == "reply_to_activity" and connector.calls[0].status == 403
    posted = connector.calls[1]
    assert posted.operation == "reply_to_activity" and posted.activity_type == "message"
    assert posted.stream_info is None
    updates = [c for c in connector.calls if c.operation == "update_activity"]
    assert updates and all(c.activity_id == answer_id for c in updates)
    assert updates[-1].text == "one two three four five"
    assert updates[-1].body["channelData"] == {"feedbackLoop": {"type": "default"}}


async def test_stream_over_the_time_limit_continues_in_place(
    connector: FakeBotConnector, pool: ConnectorPool
) -> None:
    now = [0.0]
    options = ReplyOptions(pace=0.0, max_stream_seconds=120.0)
    reply = TeamsReplyStream(
        pool.get(connector.url), ref_for(connector), options=options, clock=lambda: now[0]
    )
    async with reply:
        await reply.handle(working())
        chunks = streamed("alpha beta gamma delta epsilon")
        await reply.handle(chunks[0])
        await connector.wait_for(
            lambda c: c.stream_info is not None and c.stream_info.get("streamType") == "streaming"
        )
        now[0] = 121.0
        for component in chunks[1:]:
            await reply.handle(component)
        await connector.wait_for(
            lambda c: c.stream_info is not None and c.stream_info.get("streamType") == "final"
        )
        await reply.finish()
        answer_id = reply.answer_id
    closing = next(
        c for c in connector.calls if c.stream_info and c.stream_info["streamType"] == "final"
    )
    assert closing.activity_type == "message"
    final_update = connector.calls[-1]
    assert final_update.operation == "update_activity" and final_update.activity_id == answer_id
    assert final_update.text == "alpha beta gamma delta epsilon"


async def test_stop_pressed_during_streaming_cancels_and_sends_nothing_more(
    connector: FakeBotConnector, pool: ConnectorPool
) -> None:
    connector.fail(
        "stream",
        403,
        code="ContentStreamNotAllowed",
        message="Message streaming has been stopped by the user",
    )
    stops: list[str] = []
    reply = TeamsReplyStream(
        pool.get(connector.url), ref_for(connector), options=FAST, on_stop=stops.append
    )
    await play(reply, [working(), *streamed("one two three four five six")], gap=0.01)
    assert stops == ["stopped by user"]
    assert [c.status for c in connector.calls] == [201, 403]


async def test_group_chat_shows_typing_then_one_reply(
    connector: FakeBotConnector, pool: ConnectorPool
) -> None:
    ref = ref_for(connector, "groupChat")
    reply = TeamsReplyStream(pool.get(connector.url), ref, options=FAST)
    async with reply:
        await connector.wait_for(lambda c: c.activity_type == "typing", count=2)
        for component in [working(), *streamed("The answer is 42.")]:
            await reply.handle(component)
        await reply.finish()
    calls = stream_calls(connector)
    assert {c.activity_type for c in calls[:-1]} == {"typing"}
    assert all(c.stream_info is None for c in calls)
    assert calls[-1].text == "The answer is 42."
    assert calls[-1].body["conversation"] == {"id": ref.conversation_id}
    typing_after = len(stream_calls(connector))
    await asyncio.sleep(0.1)
    assert len(stream_calls(connector)) == typing_after, "typing stopped with the answer"


async def test_long_answer_is_split_over_messages(
    connector: FakeBotConnector, pool: ConnectorPool
) -> None:
    paragraphs = [f"Paragraph {i}: " + "lorem ipsum " * 120 for i in range(30)]
    answer = "\n\n".join(paragraphs)
    reply = TeamsReplyStream(pool.get(connector.url), ref_for(connector, "channel"), options=FAST)
    await play(reply, [UiComponent(rich_component=RichTextComponent(content=answer))])
    messages = [c for c in stream_calls(connector) if c.activity_type == "message"]
    assert len(messages) == 3
    assert " ".join(" ".join(m.text or "" for m in messages).split()) == " ".join(answer.split())
    assert all(len((m.text or "").encode("utf-16-le")) < 40_000 for m in messages)
    assert "feedbackLoop" in messages[0].body["channelData"]
    assert "channelData" not in messages[1].body


async def test_throttled_final_is_retried_after_retry_after(connector: FakeBotConnector) -> None:
    sleeps = Sleeps()
    connector.fail(
        "reply_to_activity", 429, retry_after=2, when=lambda c: c.activity_type == "message"
    )
    connector.fail("reply_to_activity", 502, when=lambda c: c.activity_type == "message")
    async with ConnectorPool(retry_sleep=sleeps) as pool:
        reply = TeamsReplyStream(
            pool.get(connector.url), ref_for(connector, "groupChat"), options=FAST
        )
        await play(reply, [UiComponent(rich_component=RichTextComponent(content="ok"))])
    messages = [c for c in connector.calls if c.activity_type == "message"]
    assert [m.status for m in messages] == [429, 502, 201]
    assert sleeps.waits == [2.0, 1.0]


async def test_blocked_user_stops_all_sending(
    connector: FakeBotConnector, pool: ConnectorPool
) -> None:
    connector.fail("reply_to_activity", 403, code="ConversationBlockedByUser", times=99)
    stops: list[str] = []
    reply = TeamsReplyStream(
        pool.get(connector.url), ref_for(connector, "groupChat"), options=FAST, on_stop=stops.append
    )
    await play(reply, [UiComponent(rich_component=RichTextComponent(content="hello"))])
    assert stops == ["blocked"]
    assert len(connector.calls) == 1


def tool_args() -> UiComponent:
    return UiComponent(
        rich_component=CardComponent(
            title="run_sql arguments", markdown=True, content='```json\n{"sql": "SELECT 1"}\n```'
        ),
        audience="requester",
        ui_feature="tool_arguments",
    )


async def test_admin_detail_inline_in_a_personal_chat(
    connector: FakeBotConnector, pool: ConnectorPool
) -> None:
    reply = TeamsReplyStream(pool.get(connector.url), ref_for(connector), options=FAST)
    await play(reply, [tool_args(), *streamed("Done.")])
    final = stream_calls(connector)[-1]
    assert "run_sql arguments" in str(cards_in(final.body))
    assert reply.private_route is None


async def test_admin_detail_as_targeted_message_in_a_group(
    connector: FakeBotConnector, pool: ConnectorPool
) -> None:
    ref = ref_for(connector, "groupChat")
    options = ReplyOptions(pace=0.02, typing_interval=5, targeted_messages=True)
    reply = TeamsReplyStream(pool.get(connector.url), ref, options=options)
    await play(reply, [tool_args(), *streamed("Done.")])
    targeted = next(c for c in connector.calls if c.query.get("isTargetedActivity") == "true")
    assert targeted.operation == "send_to_conversation"
    assert targeted.conversation_id == ref.conversation_id
    assert targeted.body["recipient"]["id"] == ref.user["id"]
    assert "run_sql arguments" in str(cards_in(targeted.body))
    public = stream_calls(connector)[-1]
    assert "run_sql" not in str(public.body)


async def test_admin_detail_falls_back_to_a_personal_chat_then_withheld(
    connector: FakeBotConnector, pool: ConnectorPool
) -> None:
    ref = ref_for(connector, "channel")
    connector.fail(
        "send_to_conversation",
        400,
        code="BadArgument",
        when=lambda c: c.query.get("isTargetedActivity") == "true",
    )
    options = ReplyOptions(pace=0.02, typing_interval=5, targeted_messages=True)
    reply = TeamsReplyStream(pool.get(connector.url), ref, options=options)
    await play(reply, [tool_args(), *streamed("Done.")])
    assert reply.private_route == "personal"
    created = next(c for c in connector.calls if c.operation == "create_conversation")
    assert created.body["members"] == [{"id": ref.user["id"]}]
    personal = next(
        c for c in connector.calls if c.operation == "send_to_conversation" and c.status == 201
    )
    assert personal.conversation_id.startswith("a:1personal-")
    assert "run_sql arguments" in str(personal.body)

    connector.calls.clear()
    connector.personal_conversations_allowed = False
    connector.fail(
        "send_to_conversation",
        400,
        code="BadArgument",
        when=lambda c: c.query.get("isTargetedActivity") == "true",
    )
    reply = TeamsReplyStream(pool.get(connector.url), ref, options=options)
    await play(reply, [tool_args(), *streamed("Done.")])
    assert reply.private_route == "withheld"
    public = stream_calls(connector)[-1]
    assert "run_sql" not in str(public.body)
    assert "only shown to you privately" in (public.text or "")


async def test_removed_and_ui_only_components_do_not_show(
    connector: FakeBotConnector, pool: ConnectorPool
) -> None:
    status = StatusCardComponent(title="run_sql", status="running")
    card = CardComponent(title="temp", content="x")
    reply = TeamsReplyStream(pool.get(connector.url), ref_for(connector, "groupChat"), options=FAST)
    await play(
        reply,
        [
            UiComponent(rich_component=status),
            UiComponent(rich_component=card),
            UiComponent(rich_component=card.remove()),
            UiComponent(rich_component=status.set_status("completed")),
            UiComponent(
                rich_component=RichTextComponent(content="ok"),
                simple_component=SimpleTextComponent(text="ok"),
            ),
        ],
    )
    final = stream_calls(connector)[-1]
    assert final.text == "ok" and "attachments" not in final.body


async def test_crossing_the_split_limit_never_shrinks_the_stream(
    connector: FakeBotConnector, pool: ConnectorPool
) -> None:
    """Regression: once the answer passed TEXT_LIMIT, the first part was cut back to a
    paragraph boundary and streamed shorter than before; Teams answers such a chunk 403,
    which the reply took for the user's Stop and abandoned the answer."""
    paragraph = "detail " * 300
    answer = "\n\n".join(f"Section {i}. {paragraph}" for i in range(12))
    assert len(answer) > TEXT_LIMIT
    reply = TeamsReplyStream(pool.get(connector.url), ref_for(connector), options=FAST)
    await play(reply, streamed(answer, step=1500), gap=0.03)

    calls = stream_calls(connector)
    assert all(c.status in (200, 201) for c in calls), [c.status for c in calls]
    chunks = [c.text or "" for c in calls if (c.stream_info or {}).get("streamType") == "streaming"]
    assert chunks and all(b.startswith(a) for a, b in itertools.pairwise(chunks))
    messages = [c for c in calls if c.activity_type == "message"]
    assert len(messages) == 2
    assert " ".join(" ".join(m.text or "" for m in messages).split()) == " ".join(answer.split())
