"""``/usage``: what the LLM cost today and this week, and who spent it (admins only).

``UsageCommand`` wraps the agent's workflow handler: it answers ``/usage`` itself and passes
every other message on, so it adds the command to any agent. What it shows reaches the
asking admin alone (other people's use is admin-only detail); anyone else is told the
command is for admins.

>>> import asyncio
>>> from agent_core.conversations import Conversation
>>> from agent_core.users import User
>>> from agent_core.usage.ledger import MemoryUsageLedger
>>> command = UsageCommand(MemoryUsageLedger())
>>> ana = User(id="u1", group_memberships=["user"])
>>> result = asyncio.run(command.try_handle(None, ana, Conversation(id="c1", user=ana), "/usage"))
>>> result.components[0].rich_component.title
'Access Denied'
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from agent_core.clock import utcnow
from agent_core.components import (
    CardComponent,
    RichTextComponent,
    SimpleTextComponent,
    UiComponent,
)
from agent_core.components.text import StatusLevel
from agent_core.conversations import Conversation
from agent_core.usage.ledger import UsageLedger
from agent_core.usage.report import report_text
from agent_core.users import User
from agent_core.workflow import WorkflowHandler, WorkflowResult

COMMAND = "/usage"


def _card(title: str, text: str, status: StatusLevel) -> UiComponent:
    return UiComponent(
        rich_component=CardComponent(title=title, content=text, status=status, markdown=True),
        simple_component=SimpleTextComponent(text=f"{title}\n{text}"),
        audience="requester",
    )


_HELP = UiComponent(
    rich_component=RichTextComponent(
        content=f"- `{COMMAND}` - what the LLM cost today and this week, and who spent it",
        markdown=True,
        generated=False,
    ),
    simple_component=SimpleTextComponent(text=f"{COMMAND}: what the LLM cost, and who spent it"),
    audience="requester",
)
"""The line an admin's ``/help`` gains."""


class UsageCommand(WorkflowHandler):
    """``/usage`` over ``ledger``, then ``inner`` (the agent's own handler) for the rest."""

    def __init__(
        self,
        ledger: UsageLedger,
        inner: WorkflowHandler | None = None,
        *,
        clock: Callable[[], dt.datetime] = utcnow,
    ) -> None:
        self.ledger = ledger
        self.inner = inner or WorkflowHandler()
        self._clock = clock

    async def try_handle(
        self, agent: Any, user: User, conversation: Conversation, message: str
    ) -> WorkflowResult:
        command = message.strip().split(" ", 1)[0].lower()
        if command != COMMAND:
            result = await self.inner.try_handle(agent, user, conversation, message)
            if command in ("/help", "/h") and result.should_skip_llm and user.is_admin:
                result.components.append(_HELP)
            return result
        if not user.is_admin:
            text = f"`{COMMAND}` is only available to administrators."
            return WorkflowResult(True, [_card("Access Denied", text, "error")])
        today = self._clock().astimezone(dt.UTC).date()
        day = await self.ledger.summary(today, today)
        week = await self.ledger.summary(today - dt.timedelta(days=6), today)
        return WorkflowResult(True, [_card("Usage", report_text(day, week), "info")])

    async def get_starter_ui(
        self, agent: Any, user: User, conversation: Conversation
    ) -> list[UiComponent] | None:
        return await self.inner.get_starter_ui(agent, user, conversation)
