"""The Bot Connector calls a reply needs, as a protocol any host implements, and retries.

``TeamsConnector`` is the outbound side of one conversation's ``serviceUrl``; the botbuilder
host implements it (``bots.teams.connector``), a successor SDK host could too. Failures
arrive as ``ConnectorError`` with the status, Teams' error code and ``Retry-After``;
``RetryingConnector`` retries the transient ones (429, 412, 502, 503, 504, and network errors,
which hosts report as status 0) and never the rest. ``send_text`` posts a plain message to a
conversation outside any turn (a proactive message)::

    >>> ConnectorError(429, "TooManyRequests", retry_after=2.0).retryable
    True
    >>> ConnectorError(403, "ConversationBlockedByUser").blocked
    True
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, TypeVar

from adapters.teams import activities
from adapters.teams.activities import ConversationRef
from agent_core.errors import PlatformCallFailed

logger = logging.getLogger(__name__)

RETRYABLE_STATUSES = frozenset({0, 412, 429, 502, 503, 504})
T = TypeVar("T")


class ConnectorError(PlatformCallFailed):
    """A Bot Connector call failed (after the host translated its client's exception).

    >>> ConnectorError(412, "ContentStreamSequenceOrderPreConditionFailed").retryable
    True
    """

    def __init__(
        self, status: int, code: str = "", message: str = "", *, retry_after: float | None = None
    ) -> None:
        super().__init__(f"{status} {code}: {message}".strip())
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return self.status in RETRYABLE_STATUSES

    @property
    def blocked(self) -> bool:
        """The user blocked the bot: nothing more can be sent to them."""
        return self.status == 403 and self.code == "ConversationBlockedByUser"


class TeamsConnector(Protocol):
    """Outbound Bot Connector operations for one service URL; activities are wire JSON.

    ``bots.teams.connector.BotConnectorClient`` implements it over aiohttp::

        message_id = await connector.reply(conversation_id, activity_id, {"type": "typing"})
    """

    async def send(self, conversation_id: str, activity: Mapping[str, Any]) -> str:
        """POST a new activity to the conversation; the new activity's id."""
        ...

    async def reply(
        self, conversation_id: str, reply_to_id: str, activity: Mapping[str, Any]
    ) -> str:
        """POST an activity in reply to ``reply_to_id``; the new activity's id."""
        ...

    async def update(
        self, conversation_id: str, activity_id: str, activity: Mapping[str, Any]
    ) -> None: ...

    async def delete(self, conversation_id: str, activity_id: str) -> None: ...

    async def send_targeted(self, conversation_id: str, activity: Mapping[str, Any]) -> str:
        """Send an activity only its ``recipient`` sees (Teams targeted messages)."""
        ...

    async def create_conversation(self, parameters: Mapping[str, Any]) -> str:
        """Create (or find) a conversation, e.g. a 1:1 chat; its id."""
        ...

    async def get_member(self, conversation_id: str, member_id: str) -> dict[str, Any]:
        """The roster entry (``TeamsChannelAccount`` JSON) of one member."""
        ...

    async def get_paged_members(
        self, conversation_id: str, *, page_size: int, continuation_token: str | None = None
    ) -> dict[str, Any]:
        """One page of the conversation's roster (``GET .../pagedmembers``):
        ``{"members": [TeamsChannelAccount JSON...], "continuationToken": ...}``, the token
        absent on the last page."""
        ...


class RetryingConnector:
    """Wraps a ``TeamsConnector``: transient failures are retried after ``Retry-After``.

    Without ``Retry-After`` the wait doubles from ``base_delay``; waits are capped at
    ``max_delay``. ``sleep`` is injectable so tests do not wait for real.

    >>> import asyncio
    >>> class Flaky:
    ...     calls = 0
    ...     async def send(self, conversation_id, activity):
    ...         Flaky.calls += 1
    ...         if Flaky.calls == 1:
    ...             raise ConnectorError(429, retry_after=0)
    ...         return "id-2"
    >>> asyncio.run(RetryingConnector(Flaky()).send("c", {}))
    'id-2'
    """

    def __init__(
        self,
        inner: Any,
        *,
        attempts: int = 4,
        base_delay: float = 0.5,
        max_delay: float = 30.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._inner = inner
        self._attempts = attempts
        self._base_delay = base_delay
        self._max_delay = max_delay
        self._sleep = sleep

    async def _call(self, name: str, call: Callable[[], Awaitable[T]]) -> T:
        delay = self._base_delay
        for attempt in range(1, self._attempts + 1):
            try:
                return await call()
            except ConnectorError as error:
                if not error.retryable or attempt == self._attempts:
                    raise
                wait = error.retry_after if error.retry_after is not None else delay
                wait = min(max(wait, 0.0), self._max_delay)
                logger.info("teams %s got %s; retry %d in %.1fs", name, error.status, attempt, wait)
                await self._sleep(wait)
                delay = min(delay * 2, self._max_delay)
        raise AssertionError("unreachable")  # pragma: no cover

    async def send(self, conversation_id: str, activity: Mapping[str, Any]) -> str:
        result: str = await self._call("send", lambda: self._inner.send(conversation_id, activity))
        return result

    async def reply(
        self, conversation_id: str, reply_to_id: str, activity: Mapping[str, Any]
    ) -> str:
        result: str = await self._call(
            "reply", lambda: self._inner.reply(conversation_id, reply_to_id, activity)
        )
        return result

    async def update(
        self, conversation_id: str, activity_id: str, activity: Mapping[str, Any]
    ) -> None:
        await self._call(
            "update", lambda: self._inner.update(conversation_id, activity_id, activity)
        )

    async def delete(self, conversation_id: str, activity_id: str) -> None:
        await self._call("delete", lambda: self._inner.delete(conversation_id, activity_id))

    async def send_targeted(self, conversation_id: str, activity: Mapping[str, Any]) -> str:
        result: str = await self._call(
            "send_targeted", lambda: self._inner.send_targeted(conversation_id, activity)
        )
        return result

    async def create_conversation(self, parameters: Mapping[str, Any]) -> str:
        result: str = await self._call(
            "create_conversation", lambda: self._inner.create_conversation(parameters)
        )
        return result

    async def get_member(self, conversation_id: str, member_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self._call(
            "get_member", lambda: self._inner.get_member(conversation_id, member_id)
        )
        return result

    async def get_paged_members(
        self, conversation_id: str, *, page_size: int, continuation_token: str | None = None
    ) -> dict[str, Any]:
        result: dict[str, Any] = await self._call(
            "get_paged_members",
            lambda: self._inner.get_paged_members(
                conversation_id, page_size=page_size, continuation_token=continuation_token
            ),
        )
        return result


async def send_text(connector: TeamsConnector, ref: ConversationRef, text: str) -> str:
    """Post ``text`` (Teams markdown) to ``ref``'s conversation as a new message, not a reply
    (a proactive message); the new message's id. ``ConnectorError`` when it fails."""
    return await connector.send(ref.conversation_id, activities.message(ref, text))
