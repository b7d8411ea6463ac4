"""``McpToolSource``: the configured servers' tools, offered to each turn and run for its asker.

For each turn (``offer``), every server the asker may use (its ``allowed_groups``) is asked
for its tools, all at once, each within its ``connect_timeout``:

- a server that is down offers nothing and says why in a note for admins; the others and
  the agent's own tools still come;
- a tool whose input schema fails the checks is left out with a note, and so are the tools
  past ``MAX_OFFER_CHARS`` of descriptions and schemas (one server cannot fill the model's
  context, or the bill, with its listing);
- the configuration's allow list and ``exclude`` filter what is offered, ``tool_groups``
  narrow who may use a tool, ``approval`` (else the server's hints) says whether it asks;
- a server each person signs in to (``auth = "user"``) lists what the asker's own account
  may use; an asker who has not connected it is offered ``connect_<server>`` instead.

A call (``call``) runs on the asker's session (their own, for ``auth = "user"``); an asker
who must sign in (again) is shown, alone, a "Connect <server>" button, at most once a turn,
and the model is told their question will be answered once they have.
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from agent_core.components import SignInComponent, UiComponent
from agent_core.mcp.approval import approval_for
from agent_core.mcp.config import McpServerConfig
from agent_core.mcp.errors import McpError, McpUnavailable, SignInRequired
from agent_core.mcp.masking import McpMasker
from agent_core.mcp.naming import tool_name
from agent_core.mcp.results import to_tool_result
from agent_core.mcp.schemas import schema_problem
from agent_core.mcp.tool import McpTool
from agent_core.tool_contract import ToolResult
from agent_core.tools.registry import failure
from agent_core.tools.sources import Offer, Offered

if TYPE_CHECKING:
    from mcp.types import Tool as ServerTool

    from agent_core.context import ToolContext
    from agent_core.mcp.auth.signin import WaitingQuestion
    from agent_core.mcp.connect import ConnectTool
    from agent_core.mcp.connection import McpConnection
    from agent_core.users import User

MAX_OFFER_CHARS = 200_000
"""The most characters of tool descriptions and input schemas one server gives one turn."""


class McpSessions(Protocol):
    """What a source needs of the process's MCP side (``McpHub`` is one)."""

    catalog: dict[str, frozenset[str]]
    """Each server's tool names as last listed (for naming around collisions)."""

    def session(self, server: McpServerConfig, user: User, workspace: str) -> McpConnection: ...

    async def connected(self, server: McpServerConfig, user: User) -> bool: ...

    async def secrets(self, server: McpServerConfig, user: User) -> list[str]: ...

    async def waiting(self, state: str, question: WaitingQuestion) -> None: ...


def workspace_of(user: User) -> str:
    """The workspace (Slack team, Teams tenant) the resolver found ``user`` in."""
    return str(user.metadata.get("workspace_id") or "")


class McpToolSource:
    """Offers and runs the tools of ``servers``; see the module docstring.

    >>> from agent_core.mcp.hub import McpHub
    >>> hub = McpHub([McpServerConfig(name="files", command="files-mcp")])
    >>> [server.name for server in McpToolSource(hub, list(hub.servers.values())).servers]
    ['files']
    """

    def __init__(self, sessions: McpSessions, servers: Sequence[McpServerConfig]) -> None:
        self.sessions = sessions
        """Where the sessions come from (the process's ``McpHub``)."""
        self._sessions = sessions
        self.servers = list(servers)
        self._built: dict[tuple[str, str], tuple[str, McpTool]] = {}
        """Each server tool's McpTool, by (server, exposed name), with the definition it was
        built from (rebuilt when the server changes it)."""
        self._connecting: dict[str, ConnectTool] = {}
        self._prompted: OrderedDict[tuple[str, str], None] = OrderedDict()
        """(turn, server) pairs that were shown a Connect button already (bounded)."""

    # -- offering -------------------------------------------------------------------------

    async def offer(self, user: User, taken: frozenset[str]) -> Offer:
        workspace = workspace_of(user)
        usable = [s for s in self.servers if user.is_member_of(s.allowed_groups)]
        found = await asyncio.gather(*(self._listed(s, user, workspace) for s in usable))
        offer = Offer()
        for server, listed in zip(usable, found, strict=True):
            if isinstance(listed, Offer):
                offer.tools.extend(listed.tools)
                offer.notes.extend(listed.notes)
            else:
                self._offer_tools(server, listed, taken, offer)
        return offer

    async def _listed(
        self, server: McpServerConfig, user: User, workspace: str
    ) -> list[ServerTool] | Offer:
        """The server's tools for ``user``, or what to offer instead (a note, a connect
        tool)."""
        if server.auth == "user" and not await self._sessions.connected(server, user):
            return Offer(tools=[self._connect_tool(server)])
        try:
            return await self._sessions.session(server, user, workspace).tools()
        except SignInRequired:
            return Offer(tools=[self._connect_tool(server)])
        except McpUnavailable as down:
            again = f" (trying again in {down.retry_in:.0f} s)" if down.retry_in else ""
            return Offer(notes=[f"{down}{again}"])
        except McpError as failed:
            return Offer(notes=[str(failed)])

    def _offer_tools(
        self,
        server: McpServerConfig,
        listed: list[ServerTool],
        taken: frozenset[str],
        offer: Offer,
    ) -> None:
        catalog = self._sessions.catalog
        catalog[server.name] = frozenset(t.name for t in listed)
        elsewhere = frozenset(
            name
            for other in self.servers
            if other.name != server.name
            for name in catalog.get(other.name, ())
        )
        named: set[str] = set()
        budget, over = MAX_OFFER_CHARS, 0
        for definition in listed:
            if not server.offers(definition.name):
                continue
            name = tool_name(definition.name, server.name, taken=taken, elsewhere=elsewhere)
            problem = schema_problem(definition.input_schema)
            if problem is None and name in named:
                problem = f"its name is the same as another of the server's as {name!r}"
            if problem is not None:
                offer.notes.append(f"{server.name}: tool {definition.name!r} left out: {problem}")
                continue
            tool = self._tool(server, name, definition)
            budget -= len(tool.description) + len(json.dumps(definition.input_schema))
            if budget < 0:
                over += 1
                continue
            named.add(name)
            offer.tools.append(Offered(tool, server.groups_for(definition.name)))
        if over:
            offer.notes.append(
                f"{server.name}: {over} tools left out: the server's tools are over "
                f"{MAX_OFFER_CHARS:,} characters of descriptions and schemas (use tools or "
                "exclude in its [[mcp]] table to choose)"
            )

    def _tool(self, server: McpServerConfig, name: str, definition: ServerTool) -> McpTool:
        """The McpTool of a listed definition (built once per definition)."""
        fingerprint = json.dumps(
            definition.model_dump(mode="json", exclude_none=True), sort_keys=True, default=str
        )
        key = (server.name, name)
        built = self._built.get(key)
        if built is not None and built[0] == fingerprint:
            return built[1]
        tool = McpTool(
            name=name,
            remote=definition.name,
            description=definition.description or definition.title or definition.name,
            server=server,
            parameters=definition.input_schema,
            approval=approval_for(definition.name, definition.annotations, server.approval),
            caller=self,
        )
        self._built[key] = (fingerprint, tool)
        return tool

    def _connect_tool(self, server: McpServerConfig) -> Offered:
        from agent_core.mcp.connect import ConnectTool

        tool = self._connecting.get(server.name)
        if tool is None:
            tool = self._connecting[server.name] = ConnectTool(server, self)
        return Offered(tool, tuple(server.allowed_groups))

    # -- running --------------------------------------------------------------------------

    async def call(
        self, tool: McpTool, context: ToolContext, arguments: dict[str, Any]
    ) -> ToolResult:
        server, user = tool.server, context.user
        session = self._sessions.session(server, user, workspace_of(user))
        try:
            result = await session.call(tool.remote, arguments)
        except SignInRequired as needed:
            return await self.ask_to_connect(server, context, needed)
        except McpError as failed:
            kind = type(failed).__name__
            return failure(f"{tool.name} could not run: {failed}", error_type=kind)
        masker = McpMasker(await self._sessions.secrets(server, user))
        return to_tool_result(
            result, max_chars=server.max_result_chars, masker=masker, tool=tool.name
        )

    async def connect(self, server: McpServerConfig, context: ToolContext) -> ToolResult:
        """Start ``context.user``'s sign-in to ``server`` (the ``connect_<server>`` tool)."""
        user = context.user
        session = self._sessions.session(server, user, workspace_of(user))
        try:
            await session.client()
        except SignInRequired as needed:
            return await self.ask_to_connect(server, context, needed)
        except McpError as failed:
            return failure(f"connecting {server.name} failed: {failed}", error_type="unavailable")
        return ToolResult(
            success=True,
            result_for_llm=f"{server.name} is connected already: its tools come with the next "
            "question (ask the person to ask again).",
        )

    async def ask_to_connect(
        self, server: McpServerConfig, context: ToolContext, needed: SignInRequired
    ) -> ToolResult:
        """The person alone is shown a Connect button (once a turn); the model is told their
        question waits for it."""
        from agent_core.mcp.auth.signin import WaitingQuestion

        if needed.state is not None:
            question = WaitingQuestion(
                conversation_id=context.conversation_id,
                question=context.question,
                request=dict(context.metadata.get("request") or {}),
            )
            await self._sessions.waiting(needed.state, question)
        if needed.url is None:  # no sign-in can come back here (the terminal chat)
            return failure(
                f"{server.name} signs each person in with their own account, which cannot "
                f"be done here: {needed.detail}.",
                error_type="sign_in_unavailable",
            )
        name = context.user.username or "The person"
        text = (
            f"{name} must connect their own {server.name} account first. A 'Connect "
            f"{server.name}' button was sent to them privately; their question will be "
            "answered automatically once they have connected. Tell them so in one sentence, "
            "and do not call this server's tools again in this answer."
        )
        turn = (context.request_id, server.name)
        shown = None
        if turn not in self._prompted and needed.url is not None:
            self._prompted[turn] = None
            while len(self._prompted) > 1000:
                self._prompted.popitem(last=False)
            prompt = SignInComponent(
                service=server.name,
                url=needed.url,
                exchange=needed.state if needed.single_sign_on else None,
                message=f"To answer your question I need your {server.name} account. "
                "Connect it (only you see this); I'll answer as soon as you have.",
            )
            shown = UiComponent.of(prompt, f"{prompt.label}: {needed.url}", audience="requester")
        return ToolResult(
            success=True,
            result_for_llm=text,
            ui_component=shown,
            metadata={"sign_in_required": server.name},
        )
