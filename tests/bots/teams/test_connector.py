"""bots.teams.connector (the aiohttp Bot Connector client) and adapters.teams.connector
retries, against the fake connector."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from adapters.teams.connector import ConnectorError, RetryingConnector
from adapters.teams.testing import FakeBotConnector
from bots.teams.connector import BotConnectorClient, ConnectorPool, CredentialsTokenSource


@pytest.fixture
async def fake() -> AsyncIterator[FakeBotConnector]:
    async with FakeBotConnector() as connector:
        yield connector


class ThreadCheckingCredentials:
    """botbuilder-shaped credentials that record which thread fetched the token."""

    microsoft_app_id = "app-1"

    def __init__(self) -> None:
        self.threads: list[int] = []

    def get_access_token(self, force_refresh: bool = False) -> str:
        self.threads.append(threading.get_ident())
        return f"token-{len(self.threads)}"


async def test_ids_are_escaped_and_bodies_sent_as_built(fake: FakeBotConnector) -> None:
    async with ConnectorPool() as pool:
        connector = pool.get(fake.url)
        conversation = "19:abc@thread.tacv2;messageid=42"
        new_id = await connector.reply(
            conversation,
            "42",
            {"type": "message", "text": "hi", "entities": [{"type": "x", "y": 1}]},
        )
        await connector.update(conversation, new_id, {"type": "message", "text": "edited"})
        await connector.delete(conversation, new_id)
    reply, update, delete = fake.calls
    assert reply.conversation_id == conversation and reply.activity_id == "42"
    assert reply.body["entities"] == [{"type": "x", "y": 1}]  # no model layer dropping fields
    assert update.body == {"type": "message", "text": "edited", "id": new_id}
    assert (delete.operation, delete.activity_id) == ("delete_activity", new_id)
    assert "Authorization" not in reply.headers  # anonymous: auth is off


async def test_errors_carry_status_code_and_retry_after(fake: FakeBotConnector) -> None:
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    fake.fail("send_to_conversation", 429, code="TooManyRequests", retry_after=2.5)
    fake.fail("send_to_conversation", 503)
    async with ConnectorPool() as pool:
        client = BotConnectorClient(pool.session, fake.url)
        with pytest.raises(ConnectorError) as first:
            await client.send("c1", {"type": "message"})
        with pytest.raises(ConnectorError) as second:
            await client.send("c1", {"type": "message"})
        with pytest.raises(ConnectorError) as missing:
            await client.get_member("c1", "29:nobody")
    assert (first.value.status, first.value.code, first.value.retry_after) == (
        429,
        "TooManyRequests",
        2.5,
    )
    assert second.value.retry_after is None and second.value.retryable
    assert (missing.value.status, missing.value.code) == (404, "MemberNotFoundInConversation")
    from bots.teams.connector import _retry_after

    assert 25 < (_retry_after(later) or 0) <= 30
    assert _retry_after("soon") is None


async def test_unreachable_service_is_a_retryable_network_error() -> None:
    async with ConnectorPool(timeout=2) as pool:
        client = BotConnectorClient(pool.session, "http://127.0.0.1:9/")
        with pytest.raises(ConnectorError) as error:
            await client.send("c1", {"type": "message"})
    assert error.value.status == 0 and error.value.retryable


async def test_retries_stop_at_non_retryable_errors_and_attempt_limit(
    fake: FakeBotConnector,
) -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    fake.fail("send_to_conversation", 502, times=10)
    fake.fail("update_activity", 403, code="ConversationBlockedByUser")
    async with ConnectorPool() as pool:
        connector = RetryingConnector(
            BotConnectorClient(pool.session, fake.url), attempts=3, base_delay=0.5, sleep=sleep
        )
        with pytest.raises(ConnectorError):
            await connector.send("c1", {"type": "message"})
        with pytest.raises(ConnectorError) as blocked:
            await connector.update("c1", "a1", {"type": "message"})
    assert waits == [0.5, 1.0]
    assert blocked.value.blocked
    assert fake.operations() == ["send_to_conversation"] * 3 + ["update_activity"]


async def test_tokens_are_fetched_off_the_event_loop_and_reused(fake: FakeBotConnector) -> None:
    credentials = ThreadCheckingCredentials()
    async with ConnectorPool() as pool:
        connector = pool.get(fake.url, credentials)
        await asyncio.gather(*(connector.send("c1", {"type": "typing"}) for _ in range(5)))
    assert credentials.threads and threading.get_ident() not in credentials.threads
    assert len(credentials.threads) == 1
    assert {c.headers["Authorization"] for c in fake.calls} == {"Bearer token-1"}


async def test_anonymous_credentials_send_no_token() -> None:
    class Anonymous:
        microsoft_app_id = ""

    assert await CredentialsTokenSource(Anonymous()).token() is None
