"""Issue 17: ``POST /api/messages`` answers < 500 whatever the bytes, and makes no connector
call for a request that is not authenticated and well-formed.

The real bot (botbuilder's ``CloudAdapter`` with real JWT validation, the ingress, the
handlers, the turn worker) on the fake Bot Connector, fed raw bytes over a socket.
Categories: arbitrary bytes unauthenticated, arbitrary JSON authenticated, real activities
mutated and authenticated (messages, invokes, conversation updates), hostile content types
(unknown charsets), deep nesting. Regression examples of the issue are pinned.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from adapters.teams.payloads import Activity, MalformedPayload, read_activity
from agent_core import Agent, ScriptedLlmService, ToolRegistry, UserResolver
from bots.teams.settings import TeamsSettings
from tests.adapters.teams.payloads import message
from tests.adapters.teams.test_payload_properties import SAMPLES
from tests.bots.teams.harness import TeamsHarness, teams_bot
from tests.support.hostile import JSON, mutated, nested
from tests.support.wire import LoopThread, post, served

BOUNDED = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
CONTENT_TYPES = st.sampled_from(
    [
        b"application/json",
        b"application/json; charset=klingon",
        b"application/json; charset=utf-7",
        b"text/plain",
        b"",
        b"application/x-www-form-urlencoded",
        b"APPLICATION/JSON",
    ]
)


class Endpoint:
    """The bot behind a socket; ``quiet`` says no connector call was made by the last send."""

    def __init__(self, loop: LoopThread, harness: TeamsHarness) -> None:
        self.loop = loop
        self.harness = harness
        self.port = harness.http.port
        self._seen = 0

    def sign(self) -> bytes:
        return self.harness.fake.sign(service_url=self.harness.fake.url).encode()

    def send(self, body: bytes, headers: list[tuple[bytes, bytes]]) -> int:
        self._seen = len(self.harness.fake.calls)
        status = post(self.port, "/api/messages", body, headers)
        self.loop.run(self.harness.host.turns.idle(), timeout=30)
        return status

    @property
    def quiet(self) -> bool:
        return len(self.harness.fake.calls) == self._seen


@pytest.fixture(scope="module")
def endpoint() -> Iterator[Endpoint]:
    def agent(resolver: UserResolver, settings: TeamsSettings) -> Agent:
        llm = ScriptedLlmService(then=lambda request: "ok")
        return Agent(llm_service=llm, tool_registry=ToolRegistry(), user_resolver=resolver)

    with (
        pytest.MonkeyPatch.context() as monkeypatch,
        served(lambda: teams_bot(monkeypatch, agent_factory=agent)) as (loop, harness),
    ):
        endpoint = Endpoint(loop, harness)
        endpoint.send(b"{}", [(b"Content-Type", b"application/json")])  # keys fetched first
        yield endpoint


def served_activity(value: Any) -> bool:
    try:
        return isinstance(read_activity(value), Activity)
    except MalformedPayload:
        return False


def check(
    endpoint: Endpoint,
    body: bytes,
    headers: list[tuple[bytes, bytes]],
    *,
    authenticated: bool,
    value: Any = None,
) -> int:
    status = endpoint.send(body, headers)
    assert status < 500
    if not authenticated:
        assert status in (400, 401, 415) and endpoint.quiet
    elif not served_activity(value):
        assert endpoint.quiet
    return status


def with_service_url(activity: Any, endpoint: Endpoint) -> Any:
    """Real activities name the fake as their service (so their token matches)."""
    if isinstance(activity, dict) and activity.get("serviceUrl") == SAMPLES[0]["serviceUrl"]:
        return {**activity, "serviceUrl": endpoint.harness.fake.url}
    return activity


@BOUNDED
@given(
    body=st.binary(max_size=300),
    content_type=CONTENT_TYPES,
    authorization=st.sampled_from([b"", b"Bearer x", b"Bearer a.b.c", "Bearer é".encode()]),
)
@example(
    body=json.dumps(message("hi")).encode(), content_type=b"application/json", authorization=b""
)
def test_unauthenticated_bytes(
    endpoint: Endpoint, body: bytes, content_type: bytes, authorization: bytes
) -> None:
    headers = [(b"Content-Type", content_type), (b"Authorization", authorization)]
    check(endpoint, body, headers, authenticated=False)


@BOUNDED
@given(value=JSON)
@example(value=[1])
@example(value={"type": 5})
@example(value={"type": "message"})
def test_authenticated_json(endpoint: Endpoint, value: Any) -> None:
    body = json.dumps(value).encode()
    headers = [(b"Content-Type", b"application/json"), (b"Authorization", endpoint.sign())]
    status = endpoint.send(body, headers)
    assert status < 500
    if not served_activity(value):
        assert endpoint.quiet


@BOUNDED
@given(activity=st.sampled_from(SAMPLES).flatmap(mutated), content_type=CONTENT_TYPES)
@example(
    activity={k: v for k, v in SAMPLES[0].items() if k != "serviceUrl"},
    content_type=b"application/json",
)
@example(
    activity={k: v for k, v in SAMPLES[0].items() if k != "from"},
    content_type=b"application/json; charset=klingon",
)
@example(
    activity={k: v for k, v in SAMPLES[0].items() if k != "conversation"},
    content_type=b"application/json",
)
def test_authenticated_mutated_activities(
    endpoint: Endpoint, activity: dict[str, Any], content_type: bytes
) -> None:
    activity = with_service_url(activity, endpoint)
    body = json.dumps(activity).encode()
    headers = [(b"Content-Type", content_type), (b"Authorization", endpoint.sign())]
    status = endpoint.send(body, headers)
    assert status < 500
    if not served_activity(activity) or not content_type.lower().startswith(b"application/json"):
        assert endpoint.quiet


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(depth=st.sampled_from([10, 100, 1_000, 10_000, 100_000]), sign=st.booleans())
def test_deep_nesting(endpoint: Endpoint, depth: int, sign: bool) -> None:
    body = nested(depth).encode()
    headers = [(b"Content-Type", b"application/json")]
    if sign:
        headers.append((b"Authorization", endpoint.sign()))
    status = endpoint.send(body, headers)
    assert status < 500 and endpoint.quiet
