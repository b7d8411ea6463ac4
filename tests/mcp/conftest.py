"""Real MCP servers for the MCP tests: the README's tickets server (``examples``) and the
shipped misbehaving one, over stdio (child processes) and streamable HTTP on 127.0.0.1, and
the tickets server behind a local OAuth authorization server."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet

from agent_core import (
    Agent,
    RequestContext,
    ScriptedLlmService,
    StaticUserResolver,
    ToolRegistry,
    User,
)
from agent_core.components import UiComponent
from agent_core.mcp import McpHub, McpServerConfig, attach
from agent_core.mcp.backoff import Backoff
from agent_core.mcp.testing import LocalAuthorizationServer, Loopback
from agent_core.state import MemoryKeyValueStore
from agent_core.state.testing import free_port

ROOT = Path(__file__).resolve().parents[2]
TICKETS = str(ROOT / "examples" / "mcp_tickets.py")
CALLBACK = "http://127.0.0.1:9/oauth/mcp/callback"


def tickets(**settings: Any) -> McpServerConfig:
    """The README's tickets server over stdio."""
    return McpServerConfig(
        **{"name": "tickets", "command": sys.executable, "args": [TICKETS], **settings}
    )


def misbehaving(**settings: Any) -> McpServerConfig:
    """The shipped misbehaving server over stdio."""
    args = ["-m", "agent_core.mcp.testing.servers"]
    return McpServerConfig(
        **{"name": "bad", "command": sys.executable, "args": args, "call_timeout": 20, **settings}
    )


def quick_backoff() -> Backoff:
    return Backoff(first=0.05, most=0.2, jitter=0.0)


def children() -> set[int]:
    """This process's child processes (from /proc), to prove none is left behind."""
    found: set[int] = set()
    for task in os.listdir(f"/proc/{os.getpid()}/task"):
        with open(f"/proc/{os.getpid()}/task/{task}/children") as listed:
            found |= {int(pid) for pid in listed.read().split()}
    return found


def zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return False


@contextlib.asynccontextmanager
async def hubs() -> AsyncIterator[Callable[..., McpHub]]:
    """``make(servers, **options)``: hubs closed (and their servers stopped) on exit."""
    made: list[McpHub] = []

    def make(servers: list[McpServerConfig], **options: Any) -> McpHub:
        options.setdefault("backoff", quick_backoff)
        hub = McpHub(servers, **options)
        made.append(hub)
        return hub

    try:
        yield make
    finally:
        for hub in made:
            await hub.aclose()


@pytest.fixture
async def make_hub() -> AsyncIterator[Callable[..., McpHub]]:
    """``make_hub(servers, **options)``: hubs closed after the test."""
    async with hubs() as make:
        yield make


def agent_with(
    hub: McpHub,
    script: list[Any],
    user: User,
    *,
    names: list[str] | None = None,
    registry: ToolRegistry | None = None,
) -> tuple[Agent, ScriptedLlmService]:
    llm = ScriptedLlmService(script)
    agent = Agent(
        llm_service=llm,
        tool_registry=registry or ToolRegistry(),
        user_resolver=StaticUserResolver(user),
    )
    attach(agent, hub, names)
    return agent, llm


async def ask(
    agent: Agent, text: str, *, conversation_id: str = "c1", **metadata: Any
) -> list[UiComponent]:
    context = RequestContext(metadata={"platform": "console", **metadata})
    return [c async for c in agent.send_message(context, text, conversation_id=conversation_id)]


def answer(shown: list[UiComponent]) -> str:
    """The final text of a turn."""
    from agent_core.components import RichTextComponent

    texts = [c.rich_component for c in shown if isinstance(c.rich_component, RichTextComponent)]
    return texts[-1].content if texts else ""


def tool_messages(llm: ScriptedLlmService) -> list[str]:
    """What the model read back from tools, in order (the last request's history)."""
    return [m.content or "" for m in llm.requests[-1].messages if m.role == "tool"]


ANA = User(
    id="slack:T1:UANA",
    username="ana",
    group_memberships=["support"],
    metadata={"workspace_id": "T1"},
)
BO = User(
    id="slack:T1:UBO", username="bo", group_memberships=["support"], metadata={"workspace_id": "T1"}
)
ADMIN = User(
    id="slack:T1:UADM",
    username="ada",
    group_memberships=["support", "admin"],
    metadata={"workspace_id": "T1"},
)
OUTSIDER = User(
    id="slack:T1:UOUT",
    username="olga",
    group_memberships=["sales"],
    metadata={"workspace_id": "T1"},
)


@dataclass
class OAuthTickets:
    """The tickets server behind a local authorization server, on two loopback ports."""

    url: str
    authorization: LocalAuthorizationServer
    store: MemoryKeyValueStore
    key: str

    def server(self, **settings: Any) -> McpServerConfig:
        return McpServerConfig(**{"name": "tickets", "url": self.url, "auth": "user", **settings})

    def hub_options(self) -> dict[str, Any]:
        return {"store": self.store, "token_key": self.key, "callback_url": CALLBACK}


def _metadata_saying(authorization: LocalAuthorizationServer, changes: dict[str, Any]) -> Any:
    """A route answering the authorization server's metadata with ``changes`` made to it (a
    hostile or broken authorization server)."""
    from mcp.server.auth.routes import build_metadata
    from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from agent_core.mcp.testing.authorization import ISSUER_URL

    metadata = build_metadata(
        ISSUER_URL.validate_python(authorization.issuer),
        None,
        ClientRegistrationOptions(enabled=True, valid_scopes=authorization.scopes),
        RevocationOptions(enabled=True),
    ).model_dump(mode="json", exclude_none=True)

    async def said(_: Any) -> JSONResponse:
        return JSONResponse({**metadata, **changes})

    return Route("/.well-known/oauth-authorization-server", said)


@contextlib.contextmanager
def running_oauth_tickets(metadata: dict[str, Any] | None = None) -> Iterator[OAuthTickets]:
    """The tickets server and its authorization server, each on a loopback port (whose
    metadata says ``metadata`` instead, where given)."""
    from starlette.applications import Starlette

    from examples.mcp_tickets import oauth_server

    port, authorization_port = free_port(), free_port()
    server, authorization = oauth_server(port, authorization_port)
    assert isinstance(authorization, LocalAuthorizationServer)
    routes = authorization.routes()
    if metadata is not None:
        routes.insert(0, _metadata_saying(authorization, metadata))
    issuer = Loopback(Starlette(routes=routes), port=authorization_port)
    resource = Loopback(server.streamable_http_app(), port=port)
    with issuer, resource:
        yield OAuthTickets(
            f"{resource.url}/mcp",
            authorization,
            MemoryKeyValueStore(),
            Fernet.generate_key().decode(),
        )


@pytest.fixture
def oauth_tickets() -> Iterator[OAuthTickets]:
    with running_oauth_tickets() as servers:
        yield servers


@dataclass
class HttpProcess:
    """A server of ours as its own process on a loopback port (so it can die or restart)."""

    args: list[str]
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, *self.args, "--http", str(self.port)],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        import socket

        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError("the HTTP MCP server did not start") from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None


@pytest.fixture
def http_tickets() -> Iterator[HttpProcess]:
    server = HttpProcess([TICKETS], free_port())
    server.start()
    yield server
    server.stop()


@pytest.fixture
def http_misbehaving() -> Iterator[HttpProcess]:
    server = HttpProcess(["-m", "agent_core.mcp.testing.servers"], free_port())
    server.start()
    yield server
    server.stop()
