"""Attacks on and faults of Bedrock's wire, each kept as a test: the fake checks SigV4 as AWS
does (a replayed request with another body, a stale date, another region, no signature are
all refused), exception frames inside a stream mean what Bedrock means, and a frame whose
CRC does not hold is a server error, never a credentials one."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_core.errors import LlmAuthenticationError, LlmRateLimitError, LlmServerError
from agent_core.llm import eventstream
from agent_core.llm.anthropic import AnthropicLlmService
from agent_core.llm.platforms import bedrock_service
from agent_core.llm.testing import RawStream, Reply
from agent_core.llm.testing_bedrock import FakeBedrock
from tests.llm.support import ask


@pytest.fixture
async def fake() -> AsyncIterator[FakeBedrock]:
    async with FakeBedrock() as server:
        yield server


def service(fake: FakeBedrock, region: str | None = None) -> AnthropicLlmService:
    return bedrock_service(
        model="anthropic.claude-test-v1:0",
        aws_region=region or fake.region,
        aws_access_key=fake.key.access_key_id,
        aws_secret_key=fake.key.secret_access_key,
        base_url=fake.base_url,
        timeout=5.0,
    )


async def test_a_signed_request_replayed_with_another_body_is_refused(fake: FakeBedrock) -> None:
    fake.queue(Reply.text("Signed."))
    async with service(fake) as llm:
        assert (await llm.send_request(ask())).content == "Signed."
    signed = fake.requests[0]
    headers = {k: v for k, v in signed.headers.items() if k.lower() != "content-length"}
    async with httpx2.AsyncClient() as client:
        replay = await client.post(
            fake.base_url + signed.path,
            headers=headers,
            content=b'{"anthropic_version":"x","max_tokens":99999,"messages":[]}',
        )
    assert replay.status_code == 403
    assert replay.headers["x-amzn-ErrorType"].startswith("InvalidSignatureException")
    assert "signature we calculated does not match" in replay.json()["message"]
    assert len(fake.requests) == 1


async def test_a_stale_signature_and_another_region_are_refused(fake: FakeBedrock) -> None:
    fake.clock = lambda: dt.datetime.now(dt.UTC) + dt.timedelta(minutes=6)
    async with service(fake) as llm:
        with pytest.raises(LlmAuthenticationError, match="too skewed"):
            await llm.send_request(ask())
    fake.clock = lambda: dt.datetime.now(dt.UTC)
    async with service(fake, region="eu-west-1") as llm:
        with pytest.raises(LlmAuthenticationError, match="scoped to a valid region"):
            await llm.send_request(ask())
    async with httpx2.AsyncClient() as client:
        unsigned = await client.post(fake.base_url + "/model/m/invoke", content=b"{}")
    assert unsigned.status_code == 403
    assert fake.requests == []


async def test_a_throttling_frame_mid_stream_is_a_rate_limit(fake: FakeBedrock) -> None:
    fake.queue(Reply.text("Par", "tial", error_after=1, error_type="rate_limit_error"))
    async with service(fake) as llm:
        with pytest.raises(LlmRateLimitError, match="throttlingException"):
            [chunk async for chunk in llm.stream_request(ask(stream=True))]


async def test_a_frame_with_a_bad_crc_is_a_server_error(fake: FakeBedrock) -> None:
    frame = bytearray(fake.frame("message_start", {"type": "message_start"}))
    frame[-1] ^= 0xFF
    fake.queue(RawStream(bytes(frame)))
    async with service(fake) as llm:
        with pytest.raises(LlmServerError):
            [chunk async for chunk in llm.stream_request(ask(stream=True))]


names = st.text(
    alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=40
)


@given(
    headers=st.dictionaries(names, st.text(max_size=200), max_size=6),
    payload=st.binary(max_size=2000),
)
def test_frames_round_trip_and_any_flipped_bit_is_caught(
    headers: dict[str, str], payload: bytes
) -> None:
    frame = eventstream.encode(headers, payload)
    assert eventstream.decode(frame) == (headers, payload)
    for position in (0, len(frame) // 2, len(frame) - 1):
        broken = bytearray(frame)
        broken[position] ^= 0x01
        with pytest.raises(eventstream.FrameError):
            eventstream.decode(bytes(broken))
