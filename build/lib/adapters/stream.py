"""``ReplyStream``: the one lifecycle of a turn's reply, in every channel.

A channel's ``stream`` module implements it (``adapters.slack.stream.SlackReplyStream``,
``adapters.teams.stream.TeamsReplyStream``); the bots drive both the same way::

    async with reply:                                   # typing / status, Stop timer start
        async for component in agent.send_message(context, text, conversation_id=key):
            await reply.handle(component)               # shown as soon as it exists
        await reply.finish()                            # the answer is complete
    # on the user's Stop:        await reply.settle(notices.STOPPED)
    # on a crashed run's retry:  the channel's ``slot`` says what was posted before

Leaving the ``async with`` block (``aclose``) stops every background send; ``finish`` and
``settle`` are idempotent and a stream that was settled ignores later components.
"""

from __future__ import annotations

from types import TracebackType
from typing import Protocol, Self

from agent_core.components import UiComponent


class ReplyStream(Protocol):
    """What every channel's reply stream offers; see the module docstring."""

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None: ...

    async def handle(self, component: UiComponent) -> None:
        """Show one component version (a newer version of one already shown updates it)."""

    async def finish(self) -> None:
        """The turn answered: complete what is open (final text, feedback buttons)."""

    async def settle(self, note: str) -> None:
        """The turn ended early (stopped, interrupted): close what is open with ``note``."""

    async def aclose(self) -> None:
        """Stop background sends (typing, Stop control); the turn is over."""
