"""Conversation filters: reshape history before every LLM call."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_core.conversations import Message


class ConversationFilter:
    """Receives the stored messages, returns what the LLM should see; runs before every LLM
    call of the turn, in list order. The stored conversation is never changed by a filter.

    Drop whole tool exchanges together: an assistant message with ``tool_calls`` must keep
    its tool result messages, or the provider rejects the request.
    """

    async def filter_messages(self, messages: list[Message]) -> list[Message]:
        return messages


class RecentMessagesFilter(ConversationFilter):
    """Keeps the last ``max_messages`` messages, never starting inside a tool exchange.

    >>> import asyncio
    >>> from agent_core.conversations import Message
    >>> msgs = [Message(role="user", content=str(i)) for i in range(5)]
    >>> [m.content for m in asyncio.run(RecentMessagesFilter(2).filter_messages(msgs))]
    ['3', '4']
    """

    def __init__(self, max_messages: int = 40) -> None:
        self.max_messages = max_messages

    async def filter_messages(self, messages: list[Message]) -> list[Message]:
        start = max(0, len(messages) - self.max_messages)
        while start < len(messages) and messages[start].role != "user":
            start += 1
        return messages[start:]
