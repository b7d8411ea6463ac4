"""A turn worker in its own process, for crash tests: ``python -m tests.state.worker_process
REDIS_URL KEY_PREFIX CLAIM_AFTER``.

Its handler records progress, prints ``STARTED <turn id>`` and then hangs, so the test can
``kill -9`` it mid-turn.
"""

from __future__ import annotations

import asyncio
import os
import sys

from agent_core.state.redis_client import connect_redis
from agent_core.state.turns import Turn
from agent_core.state.turns_redis import RedisTurnQueue


async def hang_midway(turn: Turn) -> None:
    await turn.record(posted_by=os.getpid(), reply_ts="1700000000.000100")
    print(f"STARTED {turn.id}", flush=True)
    await asyncio.Event().wait()


async def main(url: str, prefix: str, claim_after: float) -> None:
    client = connect_redis(url)
    queue = RedisTurnQueue(client, key_prefix=prefix, claim_after=claim_after)
    await queue.run(hang_midway, consumer=f"doomed-{os.getpid()}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3])))
