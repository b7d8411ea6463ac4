"""How a turn learns and enforces the asker's data identity (``agent_core.database.access``).

``IdentityResolver`` wraps the agent's user resolver: every resolved ``User`` carries its
data identity's key in ``metadata["data_identity"]`` (absent for the database's own user),
so memories and verified examples, partitioned by ``memory_scope``, are offered only to
people with the same identity, whichever path resolved the user (a turn, feedback, a
command). Groups are resolved afresh on every request, so a person whose groups changed
asks their next question as their new identity.

``DataAccessGate`` refuses the turn of a person with no data access (``unmapped =
"refuse"``) before anything runs: one sentence, no LLM call, no query. Commands (``/help``,
an admin's ``/status``) still answer: they read no data (a refused person's memories are a
partition of their own, ``data:none``).

>>> import asyncio
>>> from agent_core.database.settings import DatabaseConfig
>>> from agent_core.users import RequestContext, StaticUserResolver, User
>>> import os, sqlite3, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "t.db"); sqlite3.connect(path).close()
>>> from agent_core.database.access import DataAccess
>>> access = DataAccess(DatabaseConfig(url=f"sqlite:///{path}",
...                                    urls={"finance": f"sqlite:///{path}"}))
>>> ana = User(id="ana", group_memberships=["finance"])
>>> resolver = IdentityResolver(StaticUserResolver(ana), access)
>>> asyncio.run(resolver.resolve_user(RequestContext())).metadata["data_identity"]
'default/finance/-'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

from agent_core.database.identity import NoDataAccess
from agent_core.extensions.hooks import LifecycleHook
from agent_core.state.turn_writes import TurnWrites, turn_view
from agent_core.users import RequestContext, User, UserResolver

if TYPE_CHECKING:
    from agent_core.database.access import DataAccess

DATA_IDENTITY = "data_identity"
"""The ``User.metadata`` key of the data identity's key (``memory_scope`` reads it)."""
NO_ACCESS = "none"


class IdentityResolver(UserResolver):
    """The agent's resolver, and each user marked with their data identity's key."""

    def __init__(self, base: UserResolver, access: DataAccess) -> None:
        self.base = base
        self.access = access

    def for_turn(self, writes: TurnWrites | None) -> Self:
        return turn_view(self, writes, "base")

    async def resolve_user(self, request_context: RequestContext) -> User:
        user = await self.base.resolve_user(request_context)
        try:
            identity = self.access.identity(user)
        except NoDataAccess:
            key: str | None = NO_ACCESS
        else:
            key = None if identity.is_default else identity.key
        metadata = {k: v for k, v in user.metadata.items() if k != DATA_IDENTITY}
        if key is not None:
            metadata[DATA_IDENTITY] = key
        return user.model_copy(update={"metadata": metadata})


class DataAccessGate(LifecycleHook):
    """Refuses the turn of someone with no data access here (``NoDataAccess``'s sentence)."""

    def __init__(self, access: DataAccess) -> None:
        self.access = access

    async def before_message(self, user: User, message: str) -> str | None:
        if not message.lstrip().startswith("/"):
            self.access.identity(user)  # raises NoDataAccess for a refused person
        return None
