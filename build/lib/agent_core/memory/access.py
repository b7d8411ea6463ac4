"""Who may be offered which memory: the one place the offering rules live.

Every back end applies these rules on every read, whoever reads (the memory tools, the
context enhancer, ``/memories``), so no caller can forget them:

- a memory made in a DM or a private answer is offered to its owner alone, and only while
  the owner is somewhere private too (so a DM's content is never echoed into a channel);
- any other memory is offered to its owner, and to the rest of its scope only once its
  audience is ``scope``: marked good by its owner or an admin, shared by an admin, or saved
  under the operator's ``sharing="immediate"``;
- tool arguments (SQL) of someone else's memory are offered only to readers who may see
  tool arguments (the ``tool_arguments`` UI feature); result values never leave the owner;
- memories rated bad are never suggested as examples again (they stay listed);
- scopes (workspace / tenant / profile) never mix: see ``memory_scope``.

>>> from agent_core.context import ToolContext
>>> from agent_core.users import User
>>> ana = ToolContext(user=User(id="ana"), conversation_id="c", request_id="r1",
...                   metadata={"request": {"is_dm": True}})
>>> note = ownership_for(ana, sharing="immediate")
>>> (note.place, note.audience)
('dm', 'owner')
>>> bo = ToolContext(user=User(id="bo"), conversation_id="c", request_id="r2")
>>> (MemoryReader.of(ana).may_see(note), MemoryReader.of(bo).may_see(note))
(True, False)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from agent_core.memory.base import MemoryContext, MemoryOwnership, Place, TextMemory, ToolMemory

Sharing = Literal["on_feedback", "immediate"]
"""When a memory made in a shared conversation is offered to its scope: once it is marked
good (the default), or as soon as it is saved (an operator's explicit choice)."""

TOOL_ARGUMENTS = "tool_arguments"

M = TypeVar("M", ToolMemory, TextMemory)


def place_of(request: Mapping[str, Any]) -> Place:
    """Where a request came from, by the channel metadata (``agent_core.channel``).

    >>> place_of({"is_dm": True}), place_of({"is_private": True}), place_of({"channel_id": "C1"})
    ('dm', 'private', 'conversation')
    """
    if request.get("is_dm"):
        return "dm"
    if request.get("is_private"):
        return "private"
    return "conversation" if request.get("channel_id") or request.get("platform") else "unknown"


def request_metadata(context: MemoryContext) -> Mapping[str, Any]:
    """The channel metadata of the request behind ``context`` (empty outside a channel)."""
    request = context.metadata.get("request")
    return request if isinstance(request, Mapping) else {}


def ownership_for(context: MemoryContext, *, sharing: Sharing = "on_feedback") -> MemoryOwnership:
    """The owner and audience of a memory saved in ``context``'s turn."""
    place = place_of(request_metadata(context))
    shared = sharing == "immediate" and place not in ("dm", "private")
    return MemoryOwnership(
        owner_id=context.user.id,
        place=place,
        audience="scope" if shared else "owner",
        conversation_id=context.conversation_id,
        turn_id=context.request_id,
    )


@dataclass(frozen=True, slots=True)
class MemoryReader:
    """The person a read is for, and what they may be offered."""

    user_id: str
    is_admin: bool
    sees_arguments: bool
    somewhere_private: bool

    @classmethod
    def of(cls, context: MemoryContext) -> MemoryReader:
        features = context.metadata.get("ui_features_available") or ()
        return cls(
            user_id=context.user.id,
            is_admin=context.user.is_admin,
            sees_arguments=TOOL_ARGUMENTS in features,
            somewhere_private=place_of(request_metadata(context)) in ("dm", "private"),
        )

    def owns(self, memory: MemoryOwnership) -> bool:
        return memory.owner_id is not None and memory.owner_id == self.user_id

    def may_see(self, memory: MemoryOwnership) -> bool:
        """Whether ``memory`` may be offered to this reader at all."""
        if self.owns(memory):
            return not memory.is_private or self.somewhere_private
        return memory.audience == "scope" and not memory.is_private

    def may_suggest(self, memory: MemoryOwnership) -> bool:
        """Whether ``memory`` may serve as an example (seen, and not rated bad)."""
        return memory.verdict != "bad" and self.may_see(memory)

    def may_delete(self, memory: MemoryOwnership) -> bool:
        """An admin may delete any memory of the scope; a person their own."""
        return self.is_admin or self.owns(memory)

    def may_rate(self, memory: MemoryOwnership) -> bool:
        """An answer's owner or an admin decides whether its memories are good."""
        return self.is_admin or self.owns(memory)

    def offer(self, memory: M) -> M:
        """A copy of a visible memory holding only what this reader may be offered."""
        if self.owns(memory) or not isinstance(memory, ToolMemory):
            return memory.model_copy(deep=True)
        hidden = not self.sees_arguments
        return memory.model_copy(
            deep=True,
            update={
                "args": {} if hidden else memory.args,
                "arguments_hidden": hidden,
                "metadata": None,
            },
        )
