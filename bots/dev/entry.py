"""Issue 40's entry points in the console: the person's home, a workflow step and a message
action, fired by the page as the persona selected.

    POST /api/home          {"persona", "timezone"} -> the home as Slack's Home tab view
                            and as Teams' /home card ({"slack": view, "teams": card})
    POST /api/home/click    {"persona", "command"} -> the button's command answered as the
                            bots answer it (``Home.run``), the home again with the reply on
                            top; a suggested question comes back as ``{"question"}``, for
                            the page to ask in the persona's thread; Approve or Deny of a
                            pending approval the home lists as ``{"approval": {"approval_id",
                            "decision", "thread_id"}}``, for the page to click in its thread
                            (``POST /api/approvals``: the console's one decision path, checked
                            for the persona then, both channels' messages updated)
    POST /api/workflow-step {"persona", "question"} -> what Slack would be told: the call
                            ``functions.completeSuccess`` with its outputs, or
                            ``functions.completeError`` with its sentence (``StepAnswer``,
                            as the Slack bot's step; approvals it asked for are cancelled)
    POST /api/message-action {"persona", "thread_id", "message", "author", "question"}
                            -> "Ask Threadline about this": the message quoted as data
                            (``adapters.quoting``), answered as a turn in the thread

Everything goes through the bots' own code (``bots.home``, ``adapters.slack.workflow``,
``adapters.quoting``) and the channels' own renderers; only the platforms are the console.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from adapters.quoting import about_message
from adapters.slack.home_view import home_view
from adapters.slack.workflow import StepAnswer
from adapters.teams.home_view import home_card
from agent_core.components import UiComponent
from agent_core.schedules.model import Place
from bots.agents import ServedAgent
from bots.approvals import cancel_unclickable
from bots.dev.identity import WORKSPACE_ID, Persona
from bots.home import Home, decision_of
from bots.schedules.service import BotSchedules

HOME_THREAD = "home"


class ConsoleEntry:
    """The console's home, workflow step and message action (see the module docstring).

    >>> from types import SimpleNamespace
    >>> entry = ConsoleEntry(SimpleNamespace(), SimpleNamespace())  # type: ignore[arg-type]
    >>> entry.question("Sales fell 4%", "Bo", None).splitlines()[1]
    '<<<MESSAGE'
    """

    def __init__(self, agent: ServedAgent, schedules: BotSchedules) -> None:
        self.agent = agent
        self.home = Home(agent, schedules)

    async def home_payloads(
        self, persona: Persona, timezone: str, said: Sequence[UiComponent] = ()
    ) -> dict[str, Any]:
        """The persona's home as each channel shows it."""
        context = persona.request_context(HOME_THREAD)
        shown = await self.home.components(context, timezone=timezone, said=said)
        view = home_view(shown, private_metadata=persona.channel_id)
        return {"slack": view, "teams": home_card(shown)}

    async def click(self, persona: Persona, command: str, timezone: str) -> dict[str, Any]:
        """A home button: its command answered as typed, then the home with the reply."""
        if (decision := decision_of(command)) is not None:
            record = await self.agent.approval_book.get(decision.approval_id)
            thread = str(record.request.get("thread_id") or "") if record is not None else ""
            return {
                "approval": {
                    "approval_id": decision.approval_id,
                    "decision": decision.decision,
                    "thread_id": thread,
                }
            }
        context = persona.request_context(HOME_THREAD)
        place = Place(
            thread_key=f"console:{WORKSPACE_ID}:{persona.channel_id}:commands:{persona.user_id}",
            context={**context.metadata, "thread_id": ""},
        )
        said = await self.home.run(
            context, command, place=place, workspace=f"console:{WORKSPACE_ID}", timezone=timezone
        )
        if said is None:
            return {"question": command}
        return await self.home_payloads(persona, timezone, said)

    async def workflow_step(self, persona: Persona, question: str) -> dict[str, Any]:
        """The step run as ``persona``: the call Slack would get, and its arguments."""
        context = persona.request_context(f"workflow-{os.urandom(4).hex()}")
        answer = StepAnswer()
        async for component in self.agent.send_message(context, question):
            answer.add(component)
        await cancel_unclickable(self.agent.approval_book, answer.approvals)
        if (reason := answer.failure()) is not None:
            return {"method": "functions.completeError", "error": reason}
        return {"method": "functions.completeSuccess", "outputs": answer.outputs()}

    @staticmethod
    def question(message: str, author: str, question: str | None) -> str:
        """What "Ask Threadline about this" asks about ``message`` (by ``author``)."""
        return about_message(message, author=author, question=question)
