"""Slack installations and OAuth states in the bot's state: memory, SQLite and a real Redis."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from slack_sdk.oauth.installation_store.models.installation import Installation

from adapters.slack.installations import KeyValueInstallationStore
from adapters.slack.oauth_state import KeyValueOAuthStateStore
from agent_core.errors import StateUnavailableError
from agent_core.state import KeyValueStore, MemoryKeyValueStore
from agent_core.state.testing import RedisServer
from agent_core.state_factory import StateSettings, build_state


def install(team: str, user: str, token: str) -> Installation:
    return Installation(
        app_id="A1",
        team_id=team,
        user_id=user,
        bot_token=token,
        bot_id="B1",
        bot_user_id="UB1",
        bot_scopes="chat:write,app_mentions:read",
        user_token=f"xoxp-{user}",
    )


@pytest.fixture(params=["memory", "sqlite", "redis"])
async def records(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[KeyValueStore]:
    if request.param == "memory":
        yield MemoryKeyValueStore()
        return
    if request.param == "sqlite":
        state = build_state(StateSettings(data_dir=tmp_path))
    else:
        url, prefix = request.getfixturevalue("redis_url"), request.getfixturevalue("key_prefix")
        state = build_state(StateSettings(redis_url=url, key_prefix=prefix))
    yield state.records
    await state.aclose()


async def test_save_find_and_newest_bot_token_wins(records: KeyValueStore) -> None:
    store = KeyValueInstallationStore(records)
    await store.async_save(install("T1", "U1", "xoxb-old"))
    await store.async_save(install("T1", "U2", "xoxb-new"))
    bot = await store.async_find_bot(enterprise_id=None, team_id="T1")
    assert bot is not None and bot.bot_token == "xoxb-new" and bot.bot_user_id == "UB1"
    mine = await store.async_find_installation(enterprise_id=None, team_id="T1", user_id="U1")
    assert mine is not None and mine.user_token == "xoxp-U1" and mine.bot_token == "xoxb-new"
    latest = await store.async_find_installation(enterprise_id=None, team_id="T1")
    assert latest is not None and latest.user_id == "U2"
    assert await store.async_find_bot(enterprise_id=None, team_id="T2") is None


async def test_uninstall_removes_everything(records: KeyValueStore) -> None:
    store = KeyValueInstallationStore(records)
    await store.async_save(install("T1", "U1", "xoxb-1"))
    await store.async_save(install("T1", "U2", "xoxb-1"))
    await store.async_delete_installation(enterprise_id=None, team_id="T1", user_id="U1")
    assert (
        await store.async_find_installation(enterprise_id=None, team_id="T1", user_id="U1") is None
    )
    assert await store.async_find_installation(enterprise_id=None, team_id="T1", user_id="U2")
    await store.async_delete_all(enterprise_id=None, team_id="T1")
    assert await store.async_find_bot(enterprise_id=None, team_id="T1") is None
    assert await store.async_find_installation(enterprise_id=None, team_id="T1") is None


async def test_an_org_wide_install_is_found_from_any_team(records: KeyValueStore) -> None:
    store = KeyValueInstallationStore(records)
    org = Installation(
        app_id="A1",
        enterprise_id="E1",
        team_id=None,
        user_id="U1",
        bot_token="xoxb-org",
        bot_id="B1",
        bot_user_id="UB1",
        is_enterprise_install=True,
    )
    await store.async_save(org)
    found = await store.async_find_bot(enterprise_id="E1", team_id="T9", is_enterprise_install=True)
    assert found is not None and found.bot_token == "xoxb-org"


async def test_another_process_sees_the_install_and_the_oauth_state(
    records: KeyValueStore,
) -> None:
    """The install page and the OAuth redirect may land on different processes."""
    one, two = KeyValueOAuthStateStore(records), KeyValueOAuthStateStore(records)
    state = await one.async_issue()
    assert await two.async_consume(state) is True
    assert await one.async_consume(state) is False  # a state is accepted once
    assert await two.async_consume("forged-state") is False
    await KeyValueInstallationStore(records).async_save(install("T1", "U1", "xoxb-1"))
    bot = await KeyValueInstallationStore(records).async_find_bot(enterprise_id=None, team_id="T1")
    assert bot is not None and bot.bot_token == "xoxb-1"


async def test_an_expired_oauth_state_is_refused() -> None:
    now = [0.0]
    store = KeyValueOAuthStateStore(
        MemoryKeyValueStore(clock=lambda: now[0]), expiration_seconds=600
    )
    state = await store.async_issue()
    now[0] = 601.0
    assert await store.async_consume(state) is False


async def test_known_workspaces_are_still_authorized_while_redis_is_down(
    private_redis: RedisServer,
) -> None:
    """Bolt looks the installation up on every event: an outage must not turn acks into
    errors for workspaces this process has seen; unknown ones still fail clearly."""
    state = build_state(StateSettings(redis_url=private_redis.url))
    store = KeyValueInstallationStore(state.records)
    try:
        await store.async_save(install("T1", "U1", "xoxb-1"))
        private_redis.stop()
        bot = await store.async_find_bot(enterprise_id=None, team_id="T1")
        assert bot is not None and bot.bot_token == "xoxb-1"
        found = await store.async_find_installation(enterprise_id=None, team_id="T1")
        assert found is not None and found.bot_token == "xoxb-1"
        with pytest.raises(StateUnavailableError):
            await store.async_find_bot(enterprise_id=None, team_id="T2")
        with pytest.raises(StateUnavailableError):
            await store.async_save(install("T2", "U1", "xoxb-2"))
    finally:
        private_redis.start()
        await state.aclose()
