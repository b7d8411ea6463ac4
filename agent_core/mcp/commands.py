"""``McpCommands``: ``/connections`` and ``/disconnect <server>``, for each person's sign-ins.

Wraps the agent's own workflow handler (every other command and message goes to it)::

    /connections            which servers you have connected your own account to
    /disconnect tickets     forget your tokens for tickets (connect again any time)

Both answer the asker alone, and only ever about their own connections: a person cannot
list or remove anyone else's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agent_core.components import CardComponent, SimpleTextComponent, UiComponent
from agent_core.components.text import StatusLevel
from agent_core.workflow import NOT_HANDLED, WorkflowHandler, WorkflowResult

if TYPE_CHECKING:
    from agent_core.conversations import Conversation
    from agent_core.mcp.config import McpServerConfig
    from agent_core.mcp.hub import McpHub
    from agent_core.users import User

HELP = (
    "- `/connections` - the tools you have connected your own account to (only you see it)\n"
    "- `/disconnect <server>` - forget your account for one of them"
)


def _private(title: str, text: str, status: StatusLevel = "info") -> UiComponent:
    card = CardComponent(title=title, content=text, status=status, markdown=True)
    return UiComponent(
        rich_component=card,
        simple_component=SimpleTextComponent(text=f"{title}\n{text}"),
        audience="requester",
    )


class McpCommands(WorkflowHandler):
    """The agent's handler, plus the sign-in commands; see the module docstring.

    >>> McpCommands(WorkflowHandler(), hub=None, servers=[]).inner.__class__.__name__
    'WorkflowHandler'
    """

    def __init__(
        self, inner: WorkflowHandler, *, hub: McpHub | None, servers: Sequence[McpServerConfig]
    ) -> None:
        self.inner = inner
        self.hub = hub
        self.servers = [server for server in servers if server.auth == "user"]

    async def try_handle(
        self, agent: Any, user: User, conversation: Conversation, message: str
    ) -> WorkflowResult:
        command, _, argument = message.strip().partition(" ")
        match command.lower():
            case "/connections":
                return WorkflowResult(True, [await self._connections(user)])
            case "/disconnect":
                return WorkflowResult(True, [await self._disconnect(user, argument.strip())])
        result = await self.inner.try_handle(agent, user, conversation, message)
        if command.lower() in ("/help", "/h") and result is not NOT_HANDLED:
            result.components.append(_private("Your connected tools", HELP))
        return result

    async def get_starter_ui(
        self, agent: Any, user: User, conversation: Conversation
    ) -> list[UiComponent] | None:
        return await self.inner.get_starter_ui(agent, user, conversation)

    def _mine(self, user: User) -> list[McpServerConfig]:
        return [s for s in self.servers if user.is_member_of(s.allowed_groups)]

    async def _connections(self, user: User) -> UiComponent:
        servers = self._mine(user)
        if self.hub is None or not servers:
            return _private("Connections", "No tool here signs you in with your own account.")
        connected = set(await self.hub.connections_of(user.id, [s.name for s in servers]))
        lines = [
            f"- **{s.name}**: "
            + ("connected" if s.name in connected else "not connected (ask something it can do)")
            for s in servers
        ]
        return _private("Your connections", "\n".join(lines))

    async def _disconnect(self, user: User, name: str) -> UiComponent:
        names = [s.name for s in self._mine(user)]
        if self.hub is None or name not in names:
            known = ", ".join(f"`{n}`" for n in names) or "none"
            return _private(
                "Disconnect", f"Say `/disconnect <server>`, one of: {known}.", "warning"
            )
        if await self.hub.disconnect(user.id, name):
            text = f"Your {name} account is disconnected: its tokens are deleted."
            return _private("Disconnected", text, "success")
        return _private("Disconnect", f"You had not connected {name}.")
