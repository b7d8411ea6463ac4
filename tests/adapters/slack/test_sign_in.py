"""The "Connect <server>" prompt in Slack: an ephemeral message in the thread (to the
asker alone) with a button opening the sign-in page; never in the channel's view."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.context import ReplyTarget
from adapters.slack.elements import SIGN_IN_BUTTON
from adapters.slack.limits import validate_block
from adapters.slack.render import SlackRenderer
from adapters.slack.stream import SlackReplyStream
from adapters.slack.testing import FakeSlackApi
from agent_core.components import RichTextComponent, SignInComponent, UiComponent

URL = "https://auth.example/authorize?client_id=c1&state=abc.def&code_challenge=x"
CHANNEL = ReplyTarget(channel="C1", thread_ts="1.0", team_id="T1", user_id="U1")
DM = ReplyTarget(channel="D1", thread_ts="1.0", team_id="T1", user_id="U1", is_dm=True)


def prompt(url: str = URL) -> UiComponent:
    rich = SignInComponent(service="tickets", url=url, message="Connect <tickets> *now*")
    return UiComponent.of(rich, f"{rich.label}: {url}", audience="requester")


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlackApi]:
    async with FakeSlackApi() as fake:
        yield fake


async def play(fake: FakeSlackApi, target: ReplyTarget) -> None:
    client = AsyncWebClient(token="xoxb-1", base_url=fake.base_url)
    async with SlackReplyStream(client, target) as stream:
        await stream.handle(prompt())
        await stream.handle(UiComponent(rich_component=RichTextComponent(content="Connect first.")))
        await stream.finish()


def test_the_prompt_is_a_button_opening_the_sign_in_page() -> None:
    [message] = SlackRenderer().render(prompt())
    section, actions = message.blocks
    assert "&lt;tickets&gt;" in section["text"]["text"]  # escaped: no mention, no link
    assert "<tickets>" not in section["text"]["text"]
    [button] = actions["elements"]
    assert (button["url"], button["action_id"], button["style"]) == (URL, SIGN_IN_BUTTON, "primary")
    assert button["text"]["text"] == "Connect tickets"
    for block in message.blocks:
        validate_block(block)


def test_a_url_no_button_can_carry_is_not_a_button() -> None:
    for url in ("javascript:alert(1)", "https://auth.example/?" + "x" * 3000):
        [message] = SlackRenderer().render(prompt(url))
        assert [b["type"] for b in message.blocks] == ["section"]


async def test_in_a_channel_only_the_asker_sees_the_prompt_in_the_thread(
    fake: FakeSlackApi,
) -> None:
    await play(fake, CHANNEL)
    [ephemeral] = fake.calls_to("chat.postEphemeral")
    assert (ephemeral.args["user"], ephemeral.args["channel"], ephemeral.args["thread_ts"]) == (
        "U1",
        "C1",
        "1.0",
    )
    assert URL in str(ephemeral.args["blocks"])
    assert URL not in str([c.args for c in fake.calls_to("chat.postMessage")])


async def test_in_the_dm_the_prompt_is_part_of_the_answer(fake: FakeSlackApi) -> None:
    await play(fake, DM)
    assert fake.calls_to("chat.postEphemeral") == []
    assert URL in str([c.args for c in fake.calls_to("chat.postMessage")])
