"""Real Teams bot processes for whole-bot tests: ``python -m bots.cli teams --scripted``
subprocesses sharing one real Redis, authenticated by the local fake OpenID/JWKS issuer and
replying to the fake Bot Connector that runs in the test process (all on 127.0.0.1).

Each process gets its own port, so a test decides which process receives which delivery (as
a load balancer would); ``threadline teams --processes N`` on one port is tested on its own.
Readiness and health are polled with deadlines: they are real processes.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiohttp

from adapters.teams.testing import ConnectorCall, FakeBotConnector
from agent_core.state.testing import free_port
from tests.adapters.teams import payloads

ROOT = Path(__file__).resolve().parents[2]
MEMBERS = (("aad-ana", "Ana Lima"), ("aad-bo", "Bo Berg"))


def add_members(fake: FakeBotConnector) -> None:
    """The roster the bot looks its askers up in (``get_member``)."""
    for user, name in MEMBERS:
        fake.members[f"29:{user}"] = {
            "id": f"29:{user}",
            "name": name,
            "aadObjectId": user,
            "email": f"{user}@contoso.com",
            "userPrincipalName": f"{user}@contoso.com",
            "tenantId": payloads.TENANT,
            "userRole": "user",
        }


def bot_environment(
    fake: FakeBotConnector, redis_url: str, key_prefix: str, data_dir: Path, **extra: str
) -> dict[str, str]:
    """The environment of a bot process: the fake's endpoints, the shared Redis, fast
    takeover of a dead process's turns (``THREADLINE_CLAIM_AFTER``)."""
    keep = {
        k: v
        for k, v in os.environ.items()
        if k in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
    }
    return {
        **keep,
        "PYTHONPATH": str(ROOT),
        "PYTHONUNBUFFERED": "1",
        "MicrosoftAppType": "UserAssignedMSI",
        "MicrosoftAppId": fake.app_id,
        "MicrosoftAppTenantId": payloads.TENANT,
        "TO_BOT_FROM_CHANNEL_OPENID_METADATA_URL": fake.openid_metadata_url,
        "TO_BOT_FROM_CHANNEL_TOKEN_ISSUER": fake.issuer,
        "TO_CHANNEL_FROM_BOT_OAUTH_SCOPE": "https://api.botframework.com",
        "IDENTITY_ENDPOINT": fake.managed_identity_endpoint,
        "IDENTITY_HEADER": fake.identity_header,
        "REDIS_URL": redis_url,
        "THREADLINE_REDIS_PREFIX": key_prefix,
        "THREADLINE_DATA_DIR": str(data_dir),
        # 3 s: fast takeover for the tests, above the stalls of a machine running the suite
        # in parallel (at 1 s, leases were lost under load and turns answered twice)
        "THREADLINE_CLAIM_AFTER": "3.0",
        "THREADLINE_DEMO_STREAM_DELAY": "0.05",
        "TEAMS_STREAM_INTERVAL": "0.05",
        "TEAMS_DEFAULT_GROUPS": "user",
        "HOST": "127.0.0.1",
        **extra,
    }


class BotProcess:
    """One ``threadline teams`` process (or a ``--processes N`` supervisor) on a port."""

    def __init__(
        self,
        env: dict[str, str],
        log: Path,
        *,
        port: int | None = None,
        arguments: Sequence[str] = (),
    ) -> None:
        self.port = port or free_port()
        self.log = log
        command = [
            sys.executable,
            "-m",
            "bots.cli",
            "teams",
            "--scripted",
            "--port",
            str(self.port),
            *arguments,
        ]
        self._log_file = log.open("wb")
        self.process = subprocess.Popen(
            command, env=env, cwd=ROOT, stdout=self._log_file, stderr=subprocess.STDOUT
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def health(self, session: aiohttp.ClientSession) -> tuple[int, dict[str, Any]]:
        async with session.get(self.url + "/healthz", headers={"Connection": "close"}) as response:
            return response.status, await response.json()

    async def ready(self, session: aiohttp.ClientSession, *, timeout: float = 30.0) -> None:
        """Wait (bounded) until the process answers ``/healthz``."""
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"bot exited ({self.process.returncode}):\n{self.output()}")
            try:
                await self.health(session)
                return
            except aiohttp.ClientError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"bot not ready:\n{self.output()}") from None
                await asyncio.sleep(0.05)  # polling a starting process, with a deadline

    async def metric(self, session: aiohttp.ClientSession, name: str) -> float:
        """The sum of a metric's samples in this process's ``/metrics``."""
        async with session.get(self.url + "/metrics") as response:
            text = await response.text()
        pattern = re.compile(rf"^{re.escape(name)}(?:{{[^}}]*}})? (\S+)$", re.MULTILINE)
        return sum(float(value) for value in pattern.findall(text))

    async def post(
        self, session: aiohttp.ClientSession, fake: FakeBotConnector, activity: dict[str, Any]
    ) -> int:
        """POST a signed activity to ``/api/messages`` on a connection of its own."""
        headers = {
            "Authorization": fake.sign(service_url=activity["serviceUrl"]),
            "Connection": "close",
        }
        async with session.post(
            self.url + "/api/messages", json=activity, headers=headers
        ) as response:
            return response.status

    def kill(self) -> None:
        """``kill -9``: no shutdown, no cleanup, leases left to expire."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.terminate()
            try:  # past the bot's own 30 s drain: a loaded machine is slow, not a hang
                self.process.wait(timeout=45)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self._log_file.close()
        return self.process.returncode

    def output(self) -> str:
        if not self._log_file.closed:  # stop() closes it; its log is still there to read
            self._log_file.flush()
        return self.log.read_text(errors="replace")[-4000:]


def new_messages(fake: FakeBotConnector, activity_id: str) -> list[ConnectorCall]:
    """Calls that created a message replying to ``activity_id``: a stream's first update, or
    a plain message (the final of a stream and in-place updates are not new messages)."""
    created = []
    for call in fake.calls:
        if call.activity_id != activity_id or call.operation != "reply_to_activity":
            continue
        info = call.stream_info
        if (info is None and call.activity_type == "message") or (
            info is not None and "streamId" not in info
        ):
            created.append(call)
    return created


def final_answer(call: ConnectorCall, activity_id: str) -> bool:
    """The message that completes the answer to ``activity_id``."""
    if call.activity_id != activity_id or call.activity_type != "message":
        return False
    info = call.stream_info
    return call.status in (200, 201) and (info is None or info.get("streamType") == "final")
