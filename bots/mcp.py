"""MCP servers in the bots: the ``[[mcp]]`` configuration, one hub per process, and the
OAuth callback people's sign-ins come back to.

Every serving command does the same (``bots.serving.agent_factory`` the first two, each
bot the rest)::

    hub = build_hub(settings, profiles, state.cache)  # None without any [[mcp]] server
    attach_servers(served, hub, settings)             # the default agent's and each profile's
    add_callback(app, served, bot.ask_again)          # GET /oauth/mcp/callback
    ...
    await close_mcp(served)                           # with the bot: stdio servers stopped

The hub is found again from the agents it serves (``hub_of``: their registries' MCP
sources), so nothing else has to carry it.

The top-level ``[[mcp]]`` servers go to the default agent and every profile's; a profile's
own ``[[profiles.mcp]]`` servers to that profile's agent alone. The callback never answers a
5xx: a sign-in it cannot finish (forged, replayed, expired, declined) gets a page saying so
(400), a finished one a page saying the question is being answered, and ``on_signed_in``
(the channel's) asks the waiting question again for the person.

The console has no public URL: it sends sign-ins back to its own address on this machine
and, without ``mcp_token_key``, seals people's tokens with a key of its own process
(``local=True``), so a sign-in can be tried end to end on a laptop.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from agent_core.mcp.config import McpServerConfig
from agent_core.mcp.settings import CALLBACK_PATH, McpSettings, check_mcp
from agent_core.settings import ConfigProblem

if TYPE_CHECKING:
    from aiohttp import web

    from agent_core.agent import Agent
    from agent_core.audit import AuditLogger
    from agent_core.mcp.hub import McpHub, SignedIn
    from agent_core.state.keyvalue import KeyValueStore
    from bots.agents import ServedAgent
    from bots.checks import Check
    from bots.profiles import Profile, ProfileRouter

log = logging.getLogger(__name__)

SignedInHandler = Callable[["SignedIn"], Awaitable[None]]
"""What a channel does once someone connected: ask their waiting question again."""
SignedInPage = Callable[["SignedIn"], str]
"""The page (HTML) a finished sign-in shows, where a channel has its own (the console)."""

__all__ = [
    "CALLBACK_PATH",
    "add_callback",
    "attach_servers",
    "build_hub",
    "callback",
    "check",
    "close_mcp",
    "doctor_checks",
    "hub_of",
    "servers_of",
]


def servers_of(settings: McpSettings, profiles: list[Profile]) -> list[McpServerConfig]:
    """Every configured server: the top level's, then each profile's own."""
    return [*settings.mcp, *(server for profile in profiles for server in profile.mcp)]


def check(
    settings: McpSettings, profiles: list[Profile], *, local: bool = False
) -> list[ConfigProblem]:
    """What stops the configured servers from working, the missing extra included.
    ``local`` (the console, the chat): people's sign-ins come back to this machine and their
    tokens are sealed with a key of the process's own, so neither setting is required."""
    servers = servers_of(settings, profiles)
    if not servers:
        return []
    from bots.extras import missing

    absent = missing("mcp")
    problems = (
        [
            ConfigProblem(
                "[[mcp]]",
                f"MCP servers need the 'mcp' extra (missing: {', '.join(absent)})",
                "pip install 'threadline[mcp]'",
            )
        ]
        if absent
        else []
    )
    return problems + check_mcp(servers, settings, local=local)


def build_hub(
    settings: McpSettings,
    profiles: list[Profile],
    store: KeyValueStore,
    *,
    callback_url: str | None = None,
    local: bool = False,
) -> McpHub | None:
    """The process's hub of every configured server (``None`` when there is none).
    ``callback_url`` overrides the configured one; ``local`` lets the console seal tokens
    with a key of its own process when none is configured."""
    servers = servers_of(settings, profiles)
    if not servers:
        return None
    from agent_core.mcp.hub import McpHub

    key = settings.mcp_token_key.get_secret_value() if settings.mcp_token_key else None
    if key is None and local:
        from cryptography.fernet import Fernet

        key = Fernet.generate_key().decode()  # the console's: tokens last as long as it does
    return McpHub(
        servers,
        store=store,
        token_key=key,
        callback_url=callback_url or settings.mcp_callback_url,
    )


def attach_servers(
    served: Agent | ProfileRouter, hub: McpHub | None, settings: McpSettings
) -> None:
    """Give the default agent the top-level servers, each profile's agent those and its own."""
    if hub is None:
        return
    from agent_core.mcp.wiring import attach

    top = [server.name for server in settings.mcp]
    profiles = getattr(served, "profiles", None)
    if profiles is None:
        attach(served, hub, top)  # type: ignore[arg-type]
        return
    router: ProfileRouter = served  # type: ignore[assignment]
    attach(router.default, hub, top)
    for profile in router.profiles:
        attach(router.agents[profile.name], hub, [*top, *(s.name for s in profile.mcp)])


async def doctor_checks(
    settings: McpSettings, profiles: list[Profile], store: KeyValueStore
) -> list[Check]:
    """``threadline doctor``'s lines: each server reachable or not, how many tools, how
    people sign in (a server each person signs in to is checked only for its settings);
    none without any server."""
    from bots.checks import Check

    if not servers_of(settings, profiles):
        return []  # nothing configured, nothing to say
    if problems := check(settings, profiles):
        return [Check.failed(f"MCP {p.where}", f"{p.problem} ({p.fix})") for p in problems]
    hub = build_hub(settings, profiles, store)
    assert hub is not None
    try:
        rows = await hub.status()
    finally:
        await hub.aclose()
    found = []
    for row in rows:
        what = f"MCP {row.name} ({row.transport}, auth: {row.auth})"
        if row.state == "down":
            found.append(Check.failed(what, f"unreachable: {row.detail}"))
        elif row.state == "per person":
            found.append(Check.passed(what, row.detail))
        else:
            found.append(Check.passed(what, f"reachable, {row.tools} tools"))
    return found


def attach_configured(
    served: Agent | ProfileRouter,
    store: KeyValueStore,
    settings: McpSettings,
    profiles: list[Profile],
    *,
    callback_url: str | None = None,
    local: bool = False,
) -> McpHub | None:
    """The process's hub of the configured servers, attached to ``served``."""
    hub = build_hub(settings, profiles, store, callback_url=callback_url, local=local)
    attach_servers(served, hub, settings)
    return hub


def hub_of(served: ServedAgent) -> McpHub | None:
    """The hub ``served``'s agents use (their registries' MCP sources), if any (none for a
    bare agent without ``served_agents``, such as the channel benchmarks' echo agents)."""
    from agent_core.mcp.hub import McpHub
    from agent_core.mcp.source import McpToolSource

    listed = getattr(served, "served_agents", None)
    for agent in listed() if callable(listed) else []:
        for source in agent.tool_registry.sources:
            if isinstance(source, McpToolSource) and isinstance(source.sessions, McpHub):
                return source.sessions
    return None


async def close_mcp(served: ServedAgent) -> None:
    """End the sessions of ``served``'s hub (stdio servers stopped and reaped)."""
    hub = hub_of(served)
    if hub is not None:
        await hub.aclose()


def add_callback(
    app: web.Application,
    served: ServedAgent,
    on_signed_in: SignedInHandler,
    *,
    page: SignedInPage | None = None,
) -> None:
    """``GET /oauth/mcp/callback`` on ``app`` when ``served`` has servers people sign in to."""
    hub = hub_of(served)
    if hub is not None and hub.sign_ins is not None:
        audit = served.served_agents()[0].audit_logger  # the trail (bots.audit), if any
        handler = callback(hub, on_signed_in, page=page, audit=audit)
        app.router.add_get(CALLBACK_PATH, handler)


def _page(title: str, text: str, status: int) -> web.Response:
    from aiohttp import web

    body = (
        "<!doctype html><meta charset=utf-8><title>Threadline</title>"
        f"<h1>{html.escape(title)}</h1><p>{html.escape(text)}</p>"
    )
    return web.Response(text=body, status=status, content_type="text/html")


MAX_PARAMETER = 4096
"""Longer callback parameters are not read (no authorization server sends them)."""


def callback(
    hub: McpHub,
    on_signed_in: SignedInHandler,
    *,
    page: SignedInPage | None = None,
    audit: AuditLogger | None = None,
) -> Callable[[web.Request], Awaitable[web.Response]]:
    """The handler of ``GET /oauth/mcp/callback``; see the module docstring."""
    from agent_core.mcp.auth.signin import SignInRefused

    async def handle(request: web.Request) -> web.Response:
        query = request.rel_url.query
        state, code = query.get("state", ""), query.get("code")
        error, iss = query.get("error"), query.get("iss")
        if not state or any(len(v) > MAX_PARAMETER for v in query.values()):
            return _page("Sign-in not finished", "This link is not a sign-in the bot started.", 400)
        try:
            signed = await hub.finish_sign_in(state=state, code=code, iss=iss, error=error)
        except SignInRefused as refused:
            log.info("mcp: a sign-in callback was refused (%s)", refused.reason)
            return _page("Sign-in not finished", f"{str(refused).capitalize()}.", 400)
        if audit is not None:  # who connected which server, where (never the token)
            from agent_core.users import User

            person = User(id=signed.person)
            await audit.log_sign_in(person, server=signed.server, workspace=signed.workspace)
        try:
            await on_signed_in(signed)
        except Exception:  # the person is connected; only the re-asked question failed
            log.exception(
                "mcp: the question waiting for %s could not be asked again", signed.server
            )
        if page is not None:
            from aiohttp import web

            return web.Response(text=page(signed), content_type="text/html")
        text = "You can close this tab."
        if signed.waiting is not None:
            text = "You can close this tab: your question is being answered in the chat."
        return _page(f"Connected to {signed.server}", text, 200)

    return handle
