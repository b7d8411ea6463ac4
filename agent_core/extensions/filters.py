"""Conversation filters: reshape history before every LLM call.

``TokenBudgetFilter`` is the agent's default history policy (``AgentConfig.history_tokens``):
it runs after the filters you give the agent, so a long thread never outgrows the budget.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_core.conversations import Message

CHARS_PER_TOKEN = 4
"""How history is measured without a tokenizer: about four characters a token (English)."""


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


def estimated_tokens(message: Message) -> int:
    """A message's size in tokens, estimated from its characters (text, tool calls)."""
    size = len(message.content)
    for call in message.tool_calls or ():
        size += len(call.name) + len(repr(call.arguments))
    return math.ceil(size / CHARS_PER_TOKEN)


class TokenBudgetFilter(ConversationFilter):
    """Keeps the history within ``max_tokens`` (estimated: ``estimated_tokens``), leaving
    out the oldest whole turns first.

    A turn starts at a user message, so a tool call is never separated from its result, and
    the latest turn (the question being answered) is always kept whole. What is left out
    grows in steps of ``step`` tokens (a quarter of the budget by default) rather than
    message by message: the history the model sees then keeps the same beginning for many
    turns in a row, which is what lets its prompt cache serve it.

    >>> import asyncio
    >>> from agent_core.conversations import Message
    >>> thread = [Message(role=r, content="x" * 400) for r in ["user", "assistant"] * 50]
    >>> kept = asyncio.run(TokenBudgetFilter(2_000).filter_messages(thread))
    >>> len(kept), sum(estimated_tokens(m) for m in kept) <= 2_000, kept[0].role
    (20, True, 'user')
    """

    def __init__(self, max_tokens: int, *, step: int | None = None) -> None:
        if max_tokens <= 0:
            raise ValueError("max_tokens must be positive")
        self.max_tokens = max_tokens
        self.step = max(1, step if step is not None else max_tokens // 4)

    async def filter_messages(self, messages: list[Message]) -> list[Message]:
        return messages[self.first_kept(messages) :]

    def first_kept(self, messages: list[Message]) -> int:
        """The index of the first message to keep (0: the whole history fits)."""
        characters = 0
        for message in messages:  # the common case, on every LLM call: it all fits
            characters += len(message.content)
            if message.tool_calls:
                characters += sum(len(c.name) + len(repr(c.arguments)) for c in message.tool_calls)
        if characters + (CHARS_PER_TOKEN - 1) * len(messages) <= self.max_tokens * CHARS_PER_TOKEN:
            return 0  # even with every message's tokens rounded up
        sizes = [estimated_tokens(m) for m in messages]
        excess = sum(sizes) - self.max_tokens
        if excess <= 0:
            return 0
        drop = math.ceil(excess / self.step) * self.step  # leave out whole steps
        dropped, latest_turn = 0, 0
        for index, (message, size) in enumerate(zip(messages, sizes, strict=True)):
            if message.role == "user":
                if dropped >= drop:
                    return index
                latest_turn = index
            dropped += size
        return latest_turn  # the latest turn alone is over the budget: keep it whole
