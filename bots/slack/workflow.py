"""The Workflow Builder step "Ask Threadline" in the Slack bot (``adapters.slack.workflow``
reads the event and the answer).

    function_executed (signed) -> the step's turn, recorded before the ack under the
                                  execution's dedupe key: Slack's redelivery, on any
                                  process, records nothing more
    the turn, on any worker    -> the agent answers as ``run_as`` (their identity, groups,
                                  data roles, budget), in ``channel``'s profile
                               -> functions.completeSuccess {answer, table}, and the
                                  answer posted in ``post_in`` when the workflow names one
                               or functions.completeError: a sentence saying why (a
                                  refusal, the model down, an approval it cannot wait for)

A step cannot click: an approval the turn asks for is cancelled at once ("a workflow step
cannot wait for approval"), so nothing waits for a decision nobody was shown, and the step
fails saying so. The outcome is recorded on the turn once sent, so a run of the turn again
after a crash does not complete the step twice (Slack would refuse it anyway:
``execution_not_in_running_state``).

Completion uses the workspace's bot token (Slack: "bot tokens, no scope required"), not the
event's short-lived ``bot_access_token``, which is therefore never recorded.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any, Self

from pydantic import BaseModel
from slack_sdk.web.async_client import AsyncWebClient

from adapters.notices import UNAVAILABLE
from adapters.slack.errors import SlackCallFailed, web_client
from adapters.slack.escape import escape
from adapters.slack.payloads import MalformedPayload
from adapters.slack.render import render
from adapters.slack.workflow import StepAnswer, WorkflowStep, read_step
from agent_core.channel import ChannelMetadata
from agent_core.components import UiComponent
from agent_core.errors import AgentError, StateUnavailableError
from agent_core.state.turns import Turn
from agent_core.users import RequestContext
from bots.agents import ServedAgent
from bots.approvals import cancel_unclickable
from bots.slack.clients import WorkspaceClients
from bots.turn_kinds import StepRun
from bots.turns import Answering

log = logging.getLogger(__name__)

BAD_INPUTS = (
    "Ask Threadline needs a question, and must run as a person: set its “Run as” input to "
    "“Person who used this workflow”."
)


class StepTurn(BaseModel):
    """What the step's listener records: the run, enough to answer on any process.

    >>> step = WorkflowStep(execution_id="Fx1", team_id="T1", user_id="U1", question="q")
    >>> turn = StepTurn(workflow_step=step)
    >>> turn.turn_key, turn.owner, turn.run().kind
    ('slack:T1:workflow:Fx1', 'T1:U1', 'workflow_step')
    """

    workflow_step: WorkflowStep
    enterprise_install: bool = False

    @property
    def turn_key(self) -> str:
        step = self.workflow_step
        return f"slack:{step.team_id}:workflow:{step.execution_id}"

    @property
    def owner(self) -> str:
        return f"{self.workflow_step.team_id}:{self.workflow_step.user_id}"

    def run(self) -> StepRun[StepTurn]:
        """The turn kind the queue records (``bots.turn_kinds``)."""
        return StepRun(step=self)


def dedupe_key(execution_id: str) -> str:
    """The turn queue's dedupe key of one step run (its ``function_execution_id``)."""
    return f"slack:function:{execution_id}"


class StepSlot:
    """Where a step's outcome goes: Slack's function execution (a ``Slot`` of the turn host;
    nothing is posted in a thread, so there is nothing to take back on a re-run)."""

    unrecorded = False

    def __init__(self, client: AsyncWebClient, turn: Turn, step: WorkflowStep) -> None:
        self.client = web_client(client)
        self.turn = turn
        self.step = step

    @property
    def current(self) -> None:
        return None

    async def record_again(self) -> bool:
        return True

    @property
    def ended(self) -> bool:
        """True once the step's outcome was sent (by this run or an earlier one)."""
        return bool(self.turn.progress.get("step_ended"))

    async def settle(self, text: str) -> None:
        """The turn ended early (stopped, interrupted): the step fails saying so."""
        await self.fail(text)

    async def fail(self, reason: str) -> None:
        await self._end("functions.completeError", error=reason)

    async def complete(self, outputs: dict[str, str]) -> None:
        await self._end("functions.completeSuccess", outputs=outputs)

    async def _end(self, method: str, **arguments: Any) -> None:
        if self.ended:
            return
        try:
            await self.client.api_call(
                method, json={"function_execution_id": self.step.execution_id, **arguments}
            )
        except SlackCallFailed as error:  # ended already, or Slack gave up on it
            log.warning("slack: step %s not ended (%s)", self.step.execution_id, error.failure)
        self.turn.progress["step_ended"] = True
        try:
            await self.turn.record(step_ended=True)
        except StateUnavailableError as error:  # a re-run would only be refused by Slack
            log.warning("slack: step %s: its end not recorded (%s)", self.step.execution_id, error)

    async def post_answer(self, components: list[UiComponent]) -> None:
        """The answer, posted where the workflow says (``post_in``), under who asked."""
        channel = self.step.post_in
        if channel is None:
            return
        said = f"<@{self.step.user_id}> asked in a workflow: {escape(self.step.question)}"
        try:
            await self.client.chat_postMessage(channel=channel, text=said)
            for component in components:
                for message in render(component):
                    if message.blocks:
                        await self.client.chat_postMessage(
                            channel=channel, text=message.text, blocks=message.blocks
                        )
        except SlackCallFailed as error:  # the outputs stand; the post is extra
            log.warning("slack: step %s: answer not posted (%s)", self.step.execution_id, error)


class StepReply:
    """The reply stream of a step's turn: collects the answer (``StepAnswer``), and at the
    end completes or fails the step."""

    def __init__(self, slot: StepSlot, agent: ServedAgent) -> None:
        self.slot = slot
        self.agent = agent
        self.answer = StepAnswer()
        self._done = False

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def handle(self, component: UiComponent) -> None:
        if not self._done:
            self.answer.add(component)

    async def finish(self) -> None:
        if self._done:
            return
        self._done = True
        await self._cancel_approvals()
        reason = self.answer.failure()
        if reason is not None:
            await self.slot.fail(reason)
            return
        await self.slot.complete(self.answer.outputs())
        await self.slot.post_answer(self.answer.components())

    async def settle(self, note: str) -> None:
        if not self._done:
            self._done = True
            await self.slot.fail(note)

    async def aclose(self) -> None:
        return None

    async def _cancel_approvals(self) -> None:
        await cancel_unclickable(self.agent.approval_book, self.answer.approvals)


Accept = Callable[..., Awaitable[str | None]]
"""Record a turn on the bot's turn host (``TurnHost.accept``)."""


class WorkflowSteps:
    """The step's listener and its turns' answers; see the module docstring."""

    def __init__(self, agent: ServedAgent, clients: WorkspaceClients) -> None:
        self.agent = agent
        self.clients = clients

    async def on_function(
        self, body: dict[str, Any], context: Mapping[str, Any], accept: Accept
    ) -> None:
        """``function_executed`` of the step, its turn recorded with ``accept`` (bolt acks
        when this returns)."""
        team = str(body.get("team_id") or context.get("team_id") or "")
        enterprise = body.get("enterprise_id") or context.get("enterprise_id")
        event = body.get("event") or {}
        install = bool(context.get("is_enterprise_install"))
        try:
            step = read_step(team, enterprise, event)
        except MalformedPayload as problem:
            log.warning("slack: a workflow step with bad inputs (%s)", str(problem)[:200])
            await self._fail_now(team, enterprise, install, event, BAD_INPUTS)
            return
        queued = StepTurn(workflow_step=step, enterprise_install=install)
        try:
            await accept(
                queued.turn_key,
                queued.run(),
                owner=queued.owner,
                dedupe_key=dedupe_key(step.execution_id),
            )
        except StateUnavailableError as error:
            log.warning("slack: workflow step %s not accepted (%s)", step.execution_id, error)
            await self._fail_now(team, enterprise, install, event, UNAVAILABLE)

    async def _fail_now(
        self,
        team: str,
        enterprise: str | None,
        install: bool,
        event: Mapping[str, Any],
        reason: str,
    ) -> None:
        execution = event.get("function_execution_id")
        if not isinstance(execution, str) or not execution:
            return
        try:
            client = await self.clients.client_for(team, enterprise, enterprise_install=install)
            await web_client(client).api_call(
                "functions.completeError",
                json={"function_execution_id": execution, "error": reason},
            )
        except (AgentError, SlackCallFailed) as error:
            log.warning("slack: workflow step %s not failed (%s)", execution, error)

    async def slot(self, turn: Turn, queued: StepTurn) -> StepSlot | None:
        step = queued.workflow_step
        try:
            client = await self.clients.client_for(
                step.team_id, step.enterprise_id, enterprise_install=queued.enterprise_install
            )
        except AgentError as error:
            log.info("slack: dropped step %s of %s (%s)", step.execution_id, step.team_id, error)
            return None
        return StepSlot(client, turn, step)

    def answer(self, queued: StepTurn, slot: StepSlot) -> Answering | None:
        """The step's question, asked as its person (None: its end was sent already)."""
        if slot.ended:
            return None
        step = queued.workflow_step
        metadata: ChannelMetadata = {**step.context(), "turn_id": slot.turn.id}
        if queued.enterprise_install:
            metadata["slack_enterprise_install"] = True
        return Answering(
            RequestContext(metadata=metadata),
            step.question,
            StepReply(slot, self.agent),
            conversation_id=step.conversation_id,
        )
