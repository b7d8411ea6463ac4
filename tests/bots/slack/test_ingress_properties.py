"""Issue 17: ``POST /slack/events`` answers < 500 whatever the bytes, and calls no Web API
method for a request that is not signed and well-formed.

The real bot (bolt, the ingress, the listeners, the turn worker) on the fake Web API, fed
raw bytes over a socket (no client-side checks). Categories: arbitrary bytes unsigned and
signed, arbitrary JSON signed, real payloads mutated (events, commands, clicks) signed,
hostile headers (unknown charsets, non-ASCII timestamps and signatures), deep nesting.
Regression examples of the issue are pinned with ``@example``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from adapters.slack.payloads import read_delivery
from bots.slack.ingress import parse_body
from tests.adapters.slack.test_payload_properties import CLICK, COMMAND, SAMPLES
from tests.bots.slack.harness import SECRET, SlackHarness, running_bot
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
        b"application/x-www-form-urlencoded",
        b"text/plain",
        b"",
        b"application/json; charset=klingon",
        b"application/x-www-form-urlencoded; charset=utf-7",
        b"application/json; charset=latin-1",
        b"multipart/form-data; boundary=x",
    ]
)
HEADER_TEXT = st.text(
    st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\r\n"), max_size=24
).map(lambda text: text.encode("utf-8"))


class Endpoint:
    """The bot behind a socket: ``send`` returns the status; ``quiet`` whether no Web API
    call was made since the last ``send``."""

    def __init__(self, loop: LoopThread, harness: SlackHarness) -> None:
        self.loop = loop
        self.harness = harness
        self.port = harness.http.port
        self._seen = 0
        self.statuses: list[int] = []

    def send(self, body: bytes, headers: list[tuple[bytes, bytes]]) -> int:
        self._seen = len(self.harness.fake.calls)
        status = post(self.port, "/slack/events", body, headers)
        self.loop.run(self.harness.bot.idle(timeout=20))
        self.statuses.append(status)
        return status

    @property
    def quiet(self) -> bool:
        return len(self.harness.fake.calls) == self._seen


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    tmp = tmp_path_factory.mktemp("slack-ingress")
    with served(lambda: running_bot(tmp, [], then=lambda request: "ok")) as (loop, harness):
        yield Endpoint(loop, harness)


def signed(body: bytes, content_type: bytes, *, at: int | None = None) -> list[tuple[bytes, bytes]]:
    ts = str(int(time.time()) if at is None else at).encode()
    mac = hmac.new(SECRET.encode(), b"v0:" + ts + b":" + body, hashlib.sha256).hexdigest()
    return [
        (b"X-Slack-Request-Timestamp", ts),
        (b"X-Slack-Signature", b"v0=" + mac.encode()),
        (b"Content-Type", content_type),
    ]


def well_formed(body: bytes, content_type: bytes) -> bool:
    """What the boundary serves: UTF-8, JSON or a form, and of a Slack shape."""
    try:
        read_delivery(parse_body(body, content_type.split(b";")[0].decode() or None))
    except Exception:
        return False
    return True


def check(
    endpoint: Endpoint,
    body: bytes,
    headers: list[tuple[bytes, bytes]],
    *,
    verified: bool,
    content_type: bytes,
) -> int:
    status = endpoint.send(body, headers)
    assert status < 500
    if not verified:
        assert status in (400, 401, 413) and endpoint.quiet
    elif not well_formed(body, content_type):
        assert status == 200 and endpoint.quiet
    return status


@BOUNDED
@given(
    body=st.binary(max_size=300), content_type=CONTENT_TYPES, ts=HEADER_TEXT, signature=HEADER_TEXT
)
@example(
    body=b"{}",
    content_type=b"application/json",
    ts="\u0661\u0667\u0660\u0660".encode(),
    signature=b"v0=abc",
)
@example(body=b"[]", content_type=b"application/json", ts=b"1", signature="v0=é".encode())
def test_unsigned_bytes(
    endpoint: Endpoint, body: bytes, content_type: bytes, ts: bytes, signature: bytes
) -> None:
    headers = [
        (b"X-Slack-Request-Timestamp", ts),
        (b"X-Slack-Signature", signature),
        (b"Content-Type", content_type),
    ]
    check(endpoint, body, headers, verified=False, content_type=content_type)


@BOUNDED
@given(body=st.binary(max_size=300), content_type=CONTENT_TYPES)
@example(body=b"\xff\xfe{", content_type=b"application/json; charset=klingon")
def test_signed_bytes(endpoint: Endpoint, body: bytes, content_type: bytes) -> None:
    check(endpoint, body, signed(body, content_type), verified=True, content_type=content_type)


@BOUNDED
@given(value=JSON)
@example(value=[1, 2])
@example(value="event_callback")
@example(value={"type": "event_callback", "event": None})
@example(value={"type": "event_callback", "event": [1]})
def test_signed_json(endpoint: Endpoint, value: Any) -> None:
    body = json.dumps(value).encode()
    check(
        endpoint,
        body,
        signed(body, b"application/json"),
        verified=True,
        content_type=b"application/json",
    )


FORM = b"application/x-www-form-urlencoded"
MENTION = SAMPLES[0]


def encoded(payload: dict[str, Any], sample: dict[str, Any]) -> tuple[bytes, bytes]:
    """The body Slack would send for a payload mutated from ``sample``, and its type."""
    if sample is COMMAND:
        return urllib.parse.urlencode({k: str(v) for k, v in payload.items()}).encode(), FORM
    if sample is CLICK:
        return urllib.parse.urlencode({"payload": json.dumps(payload)}).encode(), FORM
    return json.dumps(payload).encode(), b"application/json"


@BOUNDED
@given(
    case=st.sampled_from(SAMPLES).flatmap(
        lambda sample: st.tuples(mutated(sample), st.just(sample))
    )
)
@example(case=({**MENTION, "event": {**MENTION["event"], "text": 42}}, MENTION))
@example(
    case=({**MENTION, "event": {k: v for k, v in MENTION["event"].items() if k != "user"}}, MENTION)
)
@example(  # bolt's own reader raises TypeError on it: dropped as malformed, not a 500
    case=(
        {**MENTION, "user": False, "event": {**MENTION["event"], "type": "app_home_opened"}},
        MENTION,
    )
)
@example(case=({**CLICK, "user": None}, CLICK))
@example(case=({**CLICK, "actions": None}, CLICK))
@example(case=({"type": "view_submission", "view": "a string", "user": {"id": "U1"}}, CLICK))
@example(case=({k: v for k, v in COMMAND.items() if k != "user_id"}, COMMAND))
def test_signed_mutated_payloads(
    endpoint: Endpoint, case: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    body, content_type = encoded(*case)
    check(endpoint, body, signed(body, content_type), verified=True, content_type=content_type)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(depth=st.sampled_from([10, 100, 1_000, 10_000, 100_000]), sign=st.booleans())
def test_deep_nesting(endpoint: Endpoint, depth: int, sign: bool) -> None:
    body = nested(depth).encode()
    json_type = [(b"Content-Type", b"application/json")]
    headers = signed(body, b"application/json") if sign else json_type
    check(endpoint, body, headers, verified=sign, content_type=b"application/json")


def test_a_stale_or_altered_signature_is_refused_without_a_call(endpoint: Endpoint) -> None:
    body = json.dumps(SAMPLES[0]).encode()
    stale = signed(body, b"application/json", at=int(time.time()) - 3600)
    check(endpoint, body, stale, verified=False, content_type=b"application/json")
    altered = signed(body + b" ", b"application/json")
    check(endpoint, body, altered, verified=False, content_type=b"application/json")
