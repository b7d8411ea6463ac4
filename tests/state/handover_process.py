"""A process that records its own turns and runs them, for crash tests: ``python -m
tests.state.handover_process REDIS_URL KEY_PREFIX CLAIM_AFTER THREAD``.

Its worker is attached before it records two turns of ``THREAD``, so the first is handed
over to it by the enqueue itself (no fetch); the handler records progress, prints
``STARTED <turn id>`` and hangs, so the test can ``kill -9`` it mid-turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys

from redis.exceptions import ResponseError

from agent_core.state.redis_client import connect_redis
from agent_core.state.turns import Turn
from agent_core.state.turns_redis import GROUP, RedisTurnQueue


async def hang_midway(turn: Turn) -> None:
    await turn.record(posted_by=os.getpid(), reply_ts="1700000000.000100")
    print(f"STARTED {turn.id}", flush=True)
    await asyncio.Event().wait()


async def main(url: str, prefix: str, claim_after: float, thread: str) -> None:
    client = connect_redis(url)
    queue = RedisTurnQueue(client, key_prefix=prefix, claim_after=claim_after)
    with contextlib.suppress(ResponseError):  # BUSYGROUP: a worker created it already
        await client.xgroup_create(queue.stream_key, GROUP, id="0", mkstream=True)
    worker = asyncio.create_task(queue.run(hang_midway, consumer=f"doomed-{os.getpid()}"))
    await asyncio.sleep(0)  # the worker attaches itself to the queue as it starts
    for n in range(2):
        await queue.enqueue(thread, {"n": n}, dedupe_key=f"Ev{n}", owner="T1:U1")
    await worker


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]))
