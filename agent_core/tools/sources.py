"""``ToolSource``: tools that come and go while the agent runs (an MCP server's).

A registry's own tools are registered once (``register_local_tool``). A source's are offered
for each turn, to the person asking: a server that is down offers nothing (and says why, for
admins), a server that changed its tools offers the new ones, a server each person signs in
to offers a person what their own account lists. The registry asks its sources while it
builds a turn's tools (``ToolRegistry.offer``), and from then on treats what they offered
like its own tools: the permission check, hooks, audit and approval all apply.

>>> import asyncio
>>> class Nothing:
...     async def offer(self, user, taken):
...         return Offer(notes=["the ledger server is down"])
>>> asyncio.run(Nothing().offer(None, frozenset())).notes
['the ledger server is down']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from agent_core.tool_contract import Tool, ToolSchema
    from agent_core.users import User


@dataclass(frozen=True, slots=True)
class Offered:
    """One tool a source offers, and the groups that may use it (empty: everyone).

    >>> Offered(tool=None, access_groups=("support",)).access_groups  # type: ignore[arg-type]
    ('support',)
    """

    tool: Tool[Any]
    access_groups: tuple[str, ...] = ()


@dataclass(slots=True)
class Offer:
    """What a source offers one person's turn: tools, and notes for admins about what it
    left out and why.

    >>> Offer().tools, Offer(notes=["down"]).notes
    ([], ['down'])
    """

    tools: list[Offered] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(slots=True)
class TurnTools:
    """The tools of one turn as the registry hands them over: the schemas the asker may use
    and the sources' notes for admins.

    >>> TurnTools().schemas
    []
    """

    schemas: list[ToolSchema] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class ToolSource(Protocol):
    """Offers tools for one turn; ``taken`` are the names already used by the registry's own
    tools (a source names its tools around them)."""

    async def offer(self, user: User, taken: frozenset[str]) -> Offer: ...
