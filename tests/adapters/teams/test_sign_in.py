"""The "Connect <server>" prompt in Teams: a sign-in card (Action.OpenUrl) in the asker's
1:1 chat, even where targeted messages would work; inline in a personal chat."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from adapters.teams.activities import ConversationRef
from adapters.teams.payloads import Activity
from adapters.teams.render import TeamsRenderer
from adapters.teams.stream import ReplyOptions, TeamsReplyStream
from adapters.teams.testing import FakeBotConnector
from agent_core.components import RichTextComponent, SignInComponent, UiComponent
from bots.teams.connector import ConnectorPool
from tests.adapters.teams.payloads import message
from tests.adapters.teams.schemas import assert_valid_card, cards_in

URL = "https://auth.example/authorize?client_id=c1&state=abc.def&code_challenge=x"
OPTIONS = ReplyOptions(pace=0.02, typing_interval=5, targeted_messages=True)


def prompt(url: str = URL) -> UiComponent:
    rich = SignInComponent(service="tickets", url=url, message="Connect tickets to go on.")
    return UiComponent.of(rich, f"{rich.label}: {url}", audience="requester")


@pytest.fixture
async def connector() -> AsyncIterator[FakeBotConnector]:
    async with FakeBotConnector() as fake:
        yield fake


@pytest.fixture
async def pool() -> AsyncIterator[ConnectorPool]:
    async with ConnectorPool() as connectors:
        yield connectors


async def play(reply: TeamsReplyStream) -> None:
    async with reply:
        await reply.handle(prompt())
        await reply.handle(UiComponent(rich_component=RichTextComponent(content="Connect first.")))
        await reply.finish()


def test_the_prompt_is_a_sign_in_card_opening_the_page() -> None:
    rendering = TeamsRenderer().render(prompt())
    assert rendering is not None and rendering.card is not None
    assert_valid_card(rendering.card)
    [action] = rendering.card["actions"]
    assert (action["type"], action["url"], action["title"]) == (
        "Action.OpenUrl",
        URL,
        "Connect tickets",
    )


def test_a_url_a_browser_should_not_open_is_not_a_button() -> None:
    rendering = TeamsRenderer().render(prompt("javascript:alert(1)"))
    assert rendering is not None and rendering.card is not None
    assert "actions" not in rendering.card


async def test_in_a_group_chat_the_card_goes_to_the_1_1_chat_not_a_targeted_message(
    connector: FakeBotConnector, pool: ConnectorPool
) -> None:
    ref = ConversationRef.from_activity(
        Activity.model_validate(message("q", kind="groupChat", service_url=connector.url))
    )
    reply = TeamsReplyStream(pool.get(connector.url), ref, options=OPTIONS)
    await play(reply)
    assert reply.private_route == "personal"
    assert not [c for c in connector.calls if c.query.get("isTargetedActivity") == "true"]
    created = next(c for c in connector.calls if c.operation == "create_conversation")
    assert created.body["members"] == [{"id": ref.user["id"]}]
    personal = next(
        c for c in connector.calls if c.operation == "send_to_conversation" and c.status == 201
    )
    [card] = cards_in(personal.body)
    assert_valid_card(card)
    assert URL in str(card)
    public = [c for c in connector.calls if c.conversation_id == ref.conversation_id]
    assert URL not in str([c.body for c in public])


async def test_in_a_personal_chat_the_card_is_part_of_the_answer(
    connector: FakeBotConnector, pool: ConnectorPool
) -> None:
    ref = ConversationRef.from_activity(
        Activity.model_validate(message("q", kind="personal", service_url=connector.url))
    )
    reply = TeamsReplyStream(pool.get(connector.url), ref, options=OPTIONS)
    await play(reply)
    assert reply.private_route is None
    assert URL in str([c.body for c in connector.calls])
