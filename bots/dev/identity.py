"""Who is asking in the console, and where: the identity switcher's model.

The console is a local development tool bound to 127.0.0.1: the person at the keyboard may
be anyone, so the identity comes from the page's switcher (``Persona``) instead of a signed
payload. ``ConsoleUserResolver`` turns it into a ``User`` with exactly the groups (and the
email) chosen, so permission checks, admin-only UI features and their private routing, and
the data identity (``[database.roles]`` / ``[database.urls]``: which rows each role gets)
behave as they would for that person in Slack or Teams, before rollout.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from agent_core.channel import ChannelMetadata
from agent_core.users import RequestContext, User, UserResolver

Place = Literal["dm", "channel", "shared"]
"""Where the persona asks: the bot's DM, a channel, or a channel shared with another
organisation (a Slack Connect channel, a Teams channel another tenant reads)."""
WORKSPACE_ID = "local"
CHANNEL_IDS: dict[str, str] = {"dm": "D0CONSOLE", "channel": "C0CONSOLE", "shared": "C0SHARED"}
_SAFE_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]{1,190}$")


class Persona(BaseModel):
    """A person the console speaks as, and the conversation they speak in.

    >>> p = Persona(user_id="U0ALEX", name="Alex", groups=["user", "admin"], place="channel")
    >>> p.request_context("t1").metadata["is_dm"]
    False
    """

    user_id: str = "U0ANA"
    name: str = "Ana"
    groups: list[str] = Field(default_factory=lambda: ["user"])
    place: Place = "dm"
    email: str | None = None
    """The person's email (``user:EMAIL`` data mappings and row policies read it)."""

    @field_validator("email")
    @classmethod
    def _an_email(cls, value: str | None) -> str | None:
        cleaned = (value or "").strip()
        if cleaned and not _EMAIL.match(cleaned):
            raise ValueError("email: name@domain")
        return cleaned or None

    @field_validator("user_id")
    @classmethod
    def _plain_id(cls, value: str) -> str:
        if not _SAFE_ID.match(value):
            raise ValueError("user_id: 1-64 letters, digits, '_', '.', '-'")
        return value

    @field_validator("groups")
    @classmethod
    def _clean_groups(cls, value: list[str]) -> list[str]:
        cleaned = [g.strip() for g in value if g.strip()]
        return list(dict.fromkeys(cleaned))[:20]

    @property
    def channel_id(self) -> str:
        return CHANNEL_IDS[self.place]

    @property
    def is_dm(self) -> bool:
        return self.place == "dm"

    def describe(self) -> str:
        """``Ana (user, dm)``: who asks, as an admin or not, and where."""
        role = "admin" if "admin" in self.groups else "user"
        return f"{self.name} ({role}, {self.place})"

    def conversation_id(self, thread_id: str) -> str:
        """The agent's conversation key: one per console thread, like a Slack thread key."""
        return conversation_key(self.channel_id, thread_id)

    def request_context(self, thread_id: str) -> RequestContext:
        """The metadata every channel fills (``agent_core.channel``), plus the chosen groups."""
        return RequestContext(
            remote_addr="127.0.0.1",
            metadata=ChannelMetadata(
                platform="console",
                workspace_id=WORKSPACE_ID,
                user_id=self.user_id,
                user_name=self.name,
                channel_id=self.channel_id,
                thread_id=thread_id,
                is_dm=self.is_dm,
                console_groups=list(self.groups),
                console_email=self.email,
            ),
        )


def conversation_key(channel_id: str, thread_id: str) -> str:
    """The agent's conversation key of a console thread in ``channel_id``.

    >>> conversation_key("D0CONSOLE", "1.0")
    'console:local:D0CONSOLE:1.0'
    """
    return f"console:{WORKSPACE_ID}:{channel_id}:{thread_id}"


class ConsoleUserResolver(UserResolver):
    """The user the console's identity switcher chose (local development only).

    >>> import asyncio
    >>> ctx = Persona(user_id="U9", groups=["analyst"]).request_context("t1")
    >>> asyncio.run(ConsoleUserResolver().resolve_user(ctx)).id
    'console:local:U9'
    """

    async def resolve_user(self, request_context: RequestContext) -> User:
        meta = request_context.metadata
        user_id = str(meta.get("user_id") or "U0ANA")
        groups = meta.get("console_groups")
        email = meta.get("console_email")
        return User(
            id=f"console:{WORKSPACE_ID}:{user_id}",
            username=meta.get("user_name"),
            email=email if isinstance(email, str) else None,
            metadata={"workspace_id": WORKSPACE_ID},
            group_memberships=list(groups) if isinstance(groups, list) else ["user"],
        )
