"""``ScriptLine``: one Lua script's calls over one held connection, grouped into round trips.

A call that the ack waits on (``RedisTurnQueue.enqueue``) cannot afford redis-py's
per-command machinery: checking a connection out of the pool and back, packing every
argument through its encoder, and a task per socket timeout (``asyncio.wait_for``) cost more
than the round trip and the script together (the profile is in ``benchmarks/README.md``). A
line keeps one connection of the client's pool for itself and sends each call as one
``EVALSHA`` it packs itself. redis-py still connects it (AUTH, TLS, RESP3, the database,
its health check) and reads and decodes its replies.

**Group commit.** Calls made while a round trip is in flight queue; the next round sends
them all in one write and reads their replies in order: many concurrent acks share one
round trip, and each caller still gets its own reply, only once Redis has run its call.
The caller whose call opens a round leads it; when it returns, the oldest queued caller
leads the next.

Failures are the client's: a round on a dropped connection is sent once more on a new one
(the pool's retry policy, as every command of ``connect_redis``'s client), a round slower
than the socket timeout drops the connection, and a script Redis lost (a restart without
persistence, ``SCRIPT FLUSH``) is loaded again and its calls sent once more. A leader
cancelled mid-round hands the calls it had not been answered to the next leader, which sends
them again, as the retry of a dropped connection does.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.asyncio.connection import AbstractConnection


def packed(words: Sequence[str | int]) -> bytes:
    """``words`` as one RESP command (an array of bulk strings).

    >>> packed(["GET", "k"])
    b'*2\\r\\n$3\\r\\nGET\\r\\n$1\\r\\nk\\r\\n'
    """
    parts = [b"*%d\r\n" % len(words)]
    for word in words:
        data = word.encode() if isinstance(word, str) else b"%d" % word
        parts.append(b"$%d\r\n%b\r\n" % (len(data), data))
    return b"".join(parts)


class _Call:
    """One caller's command, and how it ended: answered (a reply or a reply error), or told
    to lead the next round (``leads``). ``woken`` completes on either."""

    __slots__ = ("answered", "command", "error", "leads", "reply", "woken")

    def __init__(self, command: bytes, woken: asyncio.Future[None]) -> None:
        self.command = command
        self.woken = woken
        self.answered = self.leads = False
        self.reply: Any = None
        self.error: BaseException | None = None

    def answer(self, reply: Any = None, error: BaseException | None = None) -> None:
        self.answered, self.reply, self.error = True, reply, error
        if not self.woken.done():
            self.woken.set_result(None)

    def outcome(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.reply


class ScriptLine:
    """Calls of ``script`` on ``redis``'s server, through one connection of its pool.

    >>> from agent_core.state.redis_client import connect_redis
    >>> line = ScriptLine(connect_redis("redis://127.0.0.1:6379/0"), "return ARGV[1]")
    >>> line.sha
    '098e0f0d1448c0a81dafe820f66d460eb09263da'
    """

    def __init__(self, redis: Redis, script: str) -> None:
        self._redis = redis
        self._script = script
        self.sha = hashlib.sha1(script.encode()).hexdigest()
        self._connection: AbstractConnection | None = None
        self._timeout: float | None = None
        self._waiting: list[_Call] = []
        self._leading = False
        self.round_trips = 0
        """How many writes the line made (a round's calls go in one)."""

    async def __call__(self, keys: Sequence[str], arguments: Sequence[str | int]) -> Any:
        """The script's reply for ``keys`` and ``arguments`` (as ``Script.__call__``)."""
        command = packed(["EVALSHA", self.sha, len(keys), *keys, *arguments])
        call = _Call(command, asyncio.get_running_loop().create_future())
        self._waiting.append(call)
        if self._leading:
            try:
                await call.woken
            except asyncio.CancelledError:
                self._abandon(call)
                raise
        if not call.answered:
            await self._lead(call)
        return call.outcome()

    def _abandon(self, call: _Call) -> None:
        """A cancelled caller: its call is not sent if it was still queued, and the round
        it was to lead goes to the next caller."""
        if call in self._waiting:
            self._waiting.remove(call)
        if call.leads and not call.answered:
            self._pass_lead()

    def _pass_lead(self) -> None:
        while self._waiting:
            head = self._waiting[0]
            if not head.woken.cancelled():
                head.leads = True
                head.woken.set_result(None)
                return
            self._waiting.pop(0)  # cancelled, its task not yet resumed to leave
        self._leading = False

    async def _lead(self, mine: _Call) -> None:
        """Send every queued call in one round (again, for calls whose script Redis lost)."""
        from redis.exceptions import NoScriptError

        self._leading = True
        batch, self._waiting = self._waiting, []
        try:
            await self._with_retry(batch)
            if any(isinstance(call.error, NoScriptError) for call in batch):
                await self._redis.script_load(self._script)
                lost = [call for call in batch if isinstance(call.error, NoScriptError)]
                for call in lost:
                    call.answered, call.error = False, None
                await self._with_retry(lost)
        except Exception as error:
            for call in batch:
                if not call.answered:
                    call.answer(error=error)
        except BaseException:  # cancelled: the others' calls go to the next leader
            self._waiting[:0] = [c for c in batch if not c.answered and c is not mine]
            raise
        finally:
            self._pass_lead()

    async def _with_retry(self, batch: list[_Call]) -> None:
        connection = await self._held()
        await connection.retry.call_with_retry(
            lambda: self._round(connection, batch), lambda _: connection.disconnect()
        )

    async def _held(self) -> AbstractConnection:
        """The line's connection: checked out of the pool once and kept (the client's
        ``aclose`` closes it with the pool's), its reads timed by the line per round."""
        if self._connection is None:
            pool = self._redis.connection_pool
            connection = await pool.get_connection()  # type: ignore[no-untyped-call]
            self._timeout, connection.socket_timeout = connection.socket_timeout, None
            self._connection = connection
        return self._connection

    async def _round(self, connection: AbstractConnection, batch: list[_Call]) -> None:
        from redis.exceptions import ResponseError
        from redis.exceptions import TimeoutError as RedisTimeout

        calls = [call for call in batch if not call.answered]
        try:
            async with asyncio.timeout(self._timeout):
                self.round_trips += 1
                await connection.send_packed_command(b"".join(c.command for c in calls))
                for call in calls:
                    try:
                        call.answer(await connection.read_response())
                    except ResponseError as error:
                        call.answer(error=error)
        except TimeoutError as error:  # the connection was dropped as the round timed out
            raise RedisTimeout(f"Redis did not answer within {self._timeout} s") from error
