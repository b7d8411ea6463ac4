"""Token rotation through two real Slack bot processes on one Redis (issue 38): the app is
installed by OAuth with an expiring bot token, and every process must renew it before Slack
refuses it, exactly once between them.

The processes read the machine's clock, so a token here lives a few seconds and the bots
renew it ``SLACK_TOKEN_REFRESH_MARGIN`` seconds before it expires; waiting for it to expire
is waiting for that instant (``until_expired``), never a guess.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from redis.asyncio import Redis
from slack_sdk.oauth.installation_store import Installation

from adapters.slack.installations import KeyValueInstallationStore
from adapters.slack.testing import FakeSlackApi, RotatingTokens
from agent_core.state import RedisKeyValueStore
from tests.e2e.slack_cluster import Cluster, answers, mention, slack_cluster, texts
from tests.e2e.test_slack_processes import approval_of, refund_runs

pytestmark = pytest.mark.redis

LIFETIME = 4
"""Seconds the first bot token lives (Slack: 12 hours)."""
MARGIN = 2.5
"""Seconds before expiry the bots renew it (Slack apps: usually 2 hours)."""
ROTATING = {"SLACK_TOKEN_REFRESH_MARGIN": str(MARGIN), "THREADLINE_TURNS_PER_PERSON": "64"}


async def install(
    redis: Redis,
    prefix: str,
    fake: FakeSlackApi,
    team: str,
    *,
    lifetime: int = LIFETIME,
    enterprise: str | None = None,
) -> RotatingTokens:
    """Install the app in ``team`` (what "Add to Slack" saves) with a rotating token; with
    ``enterprise``, org-wide in that Grid organisation (``team`` then unused)."""
    fake.token_lifetime = 43200  # tokens the bots renew to: good for the rest of the test
    tokens = fake.issue_tokens(enterprise or team, lifetime=lifetime)
    store = KeyValueInstallationStore(RedisKeyValueStore(redis, key_prefix=f"{prefix}records:"))
    await store.async_save(
        Installation(
            app_id="A1",
            enterprise_id=enterprise,
            is_enterprise_install=enterprise is not None,
            team_id=None if enterprise else team,
            bot_token=tokens.access_token,
            bot_refresh_token=tokens.refresh_token,
            bot_token_expires_at=int(time.time()) + tokens.expires_in,
            bot_id="B1",
            bot_user_id="UBOT",
            bot_scopes=["chat:write"],
            user_id="U1",
        )
    )
    return tokens


async def until_expired(fake: FakeSlackApi, tokens: RotatingTokens) -> None:
    """Until the fake refuses ``tokens.access_token`` as expired (its own clock)."""
    await asyncio.sleep(max(0.0, fake.expiring[tokens.access_token] - fake.clock()) + 0.05)


def expired_calls(fake: FakeSlackApi) -> list[str]:
    return [c.method for c in fake.calls if (c.response or {}).get("error") == "token_expired"]


async def ask(cluster: Cluster, n: int, *, team: str = "T1", enterprise: str | None = None) -> None:
    port = cluster.bots[n % len(cluster.bots)].port
    event = mention(f"question {n}", ts=f"{1000 + n}.000100", user=("U1", "U2", "UADMIN")[n % 3])
    status = await cluster.send.event(
        port, event, event_id=f"Ev{team}{n}", team=team, enterprise=enterprise
    )
    assert status == 200


async def across_an_expiry(
    cluster: Cluster, total: int, where: Callable[[int], dict[str, str]]
) -> None:
    """``total`` questions (question n from ``where(n)``: its team, its enterprise) in 6
    rounds over 1.5 token lifetimes: before the renewal is due, while it is, and after the
    first token died; then until every one is answered."""
    rounds = 6
    per_round = total // rounds
    for r in range(rounds):
        asked = range(r * per_round, (r + 1) * per_round)
        await asyncio.gather(*(ask(cluster, n, **where(n)) for n in asked))
        await asyncio.sleep(LIFETIME * 1.5 / rounds)  # spread the questions over time
    await cluster.wait_for(
        lambda f: all(answers(f, f"{1000 + n}.000100") for n in range(rounds * per_round)),
        f"{rounds * per_round} answers",
    )
    await cluster.drained()


def renewed_once(cluster: Cluster, first: RotatingTokens, asked: int) -> None:
    """One renewal, of ``first``; nobody saw an expired token; once ``first`` expired, only
    the new token (a turn begun before the renewal may finish with the old one while it
    is still good)."""
    fake = cluster.fake
    assert len(fake.refreshes()) == 1, cluster.output()
    assert expired_calls(fake) == []
    replies = [t for n in range(asked) for t in texts(fake, f"{1000 + n}.000100")]
    assert not any("renewing" in t or "reinstall" in t for t in replies)
    [renewal] = fake.refreshes()
    assert renewal.args["refresh_token"] == first.refresh_token
    assert renewal.response is not None
    died = fake.expiring[first.access_token]
    late = [c for c in fake.calls if c.at > died and c.method != "oauth.v2.access"]
    assert late and {c.token for c in late} == {renewal.response["access_token"]}


async def test_questions_across_an_expiry_on_two_processes_renew_the_token_once(
    redis: Redis, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    async with slack_cluster(redis_url, key_prefix, tmp_path, oauth=True, env=ROTATING) as cluster:
        first = await install(redis, key_prefix, cluster.fake, "T1")
        await across_an_expiry(cluster, 60, lambda n: {"team": "T1"})
        renewed_once(cluster, first, 60)


async def test_200_questions_from_3_workspaces_of_a_grid_org_renew_its_token_once(
    redis: Redis, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    """One org-wide installation serves every workspace of the organisation (none of the
    three has a record of its own: a workspace added after the install is served alike)."""
    async with slack_cluster(redis_url, key_prefix, tmp_path, oauth=True, env=ROTATING) as cluster:
        fake = cluster.fake
        teams = ("T1", "T2", "T3")
        for team in teams:
            fake.add_workspace("E1", team)
        for person in fake.users.values():  # people of the organisation (issue 35: members)
            person["enterprise_user"] = {"enterprise_id": "E1", "enterprise_name": "Acme Corp"}
        first = await install(redis, key_prefix, fake, "", enterprise="E1")
        await across_an_expiry(cluster, 204, lambda n: {"team": teams[n % 3], "enterprise": "E1"})
        renewed_once(cluster, first, 204)
        store = KeyValueInstallationStore(
            RedisKeyValueStore(redis, key_prefix=f"{key_prefix}records:")
        )
        assert sorted(await store.workspaces("E1")) == list(teams)


async def test_an_approval_resumed_after_expiry_posts_with_the_new_token(
    redis: Redis, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    """Asked on A with the first token; clicked on B once that token expired: B renews it
    (once), updates the approval and the resumed turn answers with the new token."""
    async with slack_cluster(redis_url, key_prefix, tmp_path, oauth=True, env=ROTATING) as cluster:
        fake = cluster.fake
        a, b = cluster.bots
        first = await install(redis, key_prefix, fake, "T1", lifetime=30)
        await cluster.send.event(a.port, mention("refund order 42", "500.000100"), event_id="Ev1")
        await cluster.wait_for(lambda f: approval_of(f, "500.000100") is not None, "the approval")
        await cluster.drained()
        found = approval_of(fake, "500.000100")
        assert found is not None
        message, approval_id = found
        fake.expiring[first.access_token] = fake.clock()  # Slack says it expired just now
        store = KeyValueInstallationStore(
            RedisKeyValueStore(redis, key_prefix=f"{key_prefix}records:")
        )
        bot = await store.async_find_bot(enterprise_id=None, team_id="T1")
        assert bot is not None
        bot.bot_token_expires_at = int(time.time())  # and so does the installation's record
        await store.async_save_bot(bot)

        status = await cluster.send.action(
            b.port, "threadline_approval:approve", approval_id, user="U1", message=message
        )
        assert status == 200
        await cluster.wait_for(
            lambda f: any("order 42 refunded" in t for t in texts(f, "500.000100")),
            "the resumed answer",
        )
        await cluster.drained()
        assert len(refund_runs(tmp_path)) == 1
        [renewal] = fake.refreshes()
        assert expired_calls(fake) == []
        new = renewal.response["access_token"]
        updates = [c for c in fake.calls_to("chat.update") if c.args["ts"] == message.ts]
        assert updates and {c.token for c in updates} == {new}
        resumed = [c for c in fake.calls if c.at > renewal.at and c.method.startswith("chat.")]
        assert resumed and {c.token for c in resumed} == {new}


async def test_a_refused_refresh_token_stops_that_installation_only_and_once(
    redis: Redis, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    async with slack_cluster(redis_url, key_prefix, tmp_path, oauth=True, env=ROTATING) as cluster:
        fake = cluster.fake
        revoked = await install(redis, key_prefix, fake, "T2", lifetime=2)  # due at once
        await install(redis, key_prefix, fake, "T1", lifetime=3600)
        fake.revoke(revoked.refresh_token)
        for n in range(6):
            await ask(cluster, n, team="T2")
        await ask(cluster, 100, team="T1")
        await cluster.wait_for(lambda f: bool(answers(f, "1100.000100")), "T1's answer")
        await cluster.drained()
        for n in range(6, 10):  # later questions: nothing tried again
            await ask(cluster, n, team="T2")
        await cluster.drained()
        refused = [c for c in fake.calls_to("oauth.v2.access")]
        assert [c.response["error"] for c in refused if c.response] == ["invalid_refresh_token"]
        assert all(not answers(fake, f"{1000 + n}.000100") for n in range(10))
        assert {c.token for c in fake.calls if c.method.startswith("chat.")} <= {
            t for t in fake.expiring if "-T1-" in t
        }
        said = [line for bot in cluster.bots for line in bot.lines if "stopped" in line]
        assert len(said) == 1 and "invalid_refresh_token" in said[0], cluster.output()
        assert revoked.refresh_token not in cluster.output()
        store = KeyValueInstallationStore(
            RedisKeyValueStore(redis, key_prefix=f"{key_prefix}records:")
        )
        assert list(await store.stopped()) == ["slack:install:none:T2"]
        assert await store.async_find_bot(enterprise_id=None, team_id="T2") is None
