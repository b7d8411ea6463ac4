"""AWS event-stream framing: the binary messages Bedrock streams an answer in.

Each message is a prelude (total length, headers length, the prelude's CRC32), headers
(name, type 7 = string, value), the payload and the message's CRC32, all big-endian. The fake
Bedrock (``agent_core.llm.testing_bedrock``) writes them; the real SDK reads them with
botocore's ``EventStreamBuffer``. ``decode`` checks both CRCs, as botocore does.

>>> frame = encode({":message-type": "event", ":event-type": "chunk"}, b'{"bytes":""}')
>>> decode(frame)
({':message-type': 'event', ':event-type': 'chunk'}, b'{"bytes":""}')
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping

_STRING = 7


def encode(headers: Mapping[str, str], payload: bytes) -> bytes:
    """One event-stream message."""
    encoded = b"".join(_header(name, value) for name, value in headers.items())
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack(">II", total, len(encoded))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + encoded + payload
    return message + struct.pack(">I", zlib.crc32(message))


def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode(), value.encode()
    return (
        struct.pack(">B", len(raw_name))
        + raw_name
        + struct.pack(">BH", _STRING, len(raw_value))
        + raw_value
    )


class FrameError(ValueError):
    """A message whose lengths or CRCs do not hold."""


def decode(message: bytes) -> tuple[dict[str, str], bytes]:
    """The headers (string values only) and payload of one whole message."""
    if len(message) < 16:
        raise FrameError("shorter than a prelude and a CRC")
    total, headers_length, prelude_crc = struct.unpack(">III", message[:12])
    if zlib.crc32(message[:8]) != prelude_crc:
        raise FrameError("prelude CRC mismatch")
    if total != len(message):
        raise FrameError(f"length {len(message)} is not the declared {total}")
    if zlib.crc32(message[:-4]) != struct.unpack(">I", message[-4:])[0]:
        raise FrameError("message CRC mismatch")
    headers: dict[str, str] = {}
    raw, position = message[12 : 12 + headers_length], 0
    while position < len(raw):
        size = raw[position]
        name = raw[position + 1 : position + 1 + size].decode()
        kind, length = struct.unpack(">BH", raw[position + 1 + size : position + 4 + size])
        if kind != _STRING:
            raise FrameError(f"header {name!r} is not a string")
        start = position + 4 + size
        headers[name] = raw[start : start + length].decode()
        position = start + length
    return headers, message[12 + headers_length : -4]
