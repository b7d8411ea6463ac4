"""What the schedule tests of the bots share: a workspace directory tests can change."""

from __future__ import annotations

from agent_core import RequestContext, User, UserResolver
from agent_core.errors import AgentError


class Directory(UserResolver):
    """The workspace as it is today: who exists, in which groups (tests change it)."""

    def __init__(self) -> None:
        self.groups: dict[str, list[str]] = {"U1": ["user", "analysts"]}

    async def resolve_user(self, request_context: RequestContext) -> User:
        user_id = str(request_context.metadata.get("user_id"))
        if user_id not in self.groups:
            raise AgentError("This request did not come from a verified Slack user.")
        return User(id=f"slack:T1:{user_id}", group_memberships=self.groups[user_id])
