"""The Workflow Builder step "Ask Threadline": the ``function_executed`` event read, and an
answer turned into the step's outputs.

Slack runs the step when a workflow reaches it and sends ``function_executed`` (signed like
every event) with the step's ``inputs``::

    question  (string, required)          what to ask
    run_as    (slack#/types/user_context)  who asks: Slack fills it from the workflow's
                                           trigger ("Person who used this workflow"); a
                                           workflow's author cannot type someone else in
    channel   (slack#/types/channel_id)    optional: the channel whose profile answers
    post_in   (slack#/types/channel_id)    optional: where the answer is posted as well

The step ends with ``functions.completeSuccess`` (outputs ``answer`` and ``table``, both
text) or ``functions.completeError`` with a sentence the workflow's user reads.
``StepAnswer`` collects what the turn yielded (the last version of each public component)
and says which of the two it is: an error card (a budget, the model down), a refusal with no
answer ("you may not ask here"), a tool call refused because the person may not use the tool
(the turn's ``ToolRefusedComponent``) or an approval the step cannot wait for fails it.

>>> step = read_step("T1", None, {"type": "function_executed", "function_execution_id": "Fx1",
...     "function": {"callback_id": "ask_threadline"},
...     "inputs": {"question": "revenue?", "run_as": {"id": "U1", "secret": "s"}}})
>>> step.execution_id, step.user_id, step.context()["user_id"], step.context()["is_dm"]
('Fx1', 'U1', 'U1', True)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from adapters.slack.context import PLATFORM, thread_key
from adapters.slack.payloads import Id, MalformedPayload, Shape, parse_shape
from agent_core.channel import ChannelMetadata
from agent_core.components import (
    ApprovalComponent,
    DataFrameComponent,
    NotificationComponent,
    RichTextComponent,
    StatusCardComponent,
    ToolRefusedComponent,
    UiComponent,
)

ASK_STEP = "ask_threadline"
"""The step's ``callback_id`` (the manifest's ``functions`` key)."""
STEP_THREAD = "workflow:"
"""The thread id of a step's conversation starts with this, then the execution id: every
run of a workflow is a conversation of its own."""
MAX_OUTPUT = 20_000
"""Characters of one output kept (the answer and the table are text a next step reads)."""
NEEDS_APPROVAL = (
    "Threadline needs someone to approve {tools} before it can run, and a workflow step "
    "cannot wait for a click. Ask in a thread or a DM instead, where the approval can be given."
)
NO_ANSWER = "Threadline did not answer this question."
MAY_NOT_USE = (
    "Threadline needs a tool you may not use to answer this, so the step stopped without an "
    "answer. Ask an admin for access, or run the workflow as someone who has it."
)


class UserContext(Shape):
    """``slack#/types/user_context``: a person Slack vouches for (``secret`` is Slack's)."""

    id: Id
    secret: str | None = None


class StepInputs(Shape):
    question: str = Field(min_length=1)
    run_as: UserContext
    channel: str | None = None
    post_in: str | None = None


class StepFunction(Shape):
    callback_id: str


class FunctionExecuted(Shape):
    type: str
    function_execution_id: Id
    function: StepFunction
    inputs: StepInputs
    workflow_execution_id: str | None = None


class WorkflowStep(BaseModel):
    """One run of the step: who asks what, where, and where the answer is posted too. It
    is recorded with the turn (``bots.slack.workflow``), so it holds no token."""

    model_config = ConfigDict(frozen=True)

    execution_id: str
    team_id: str
    enterprise_id: str | None = None
    user_id: str
    question: str
    channel: str | None = None
    post_in: str | None = None

    def context(self) -> ChannelMetadata:
        """The turn's metadata: the person from ``run_as``, in ``channel`` (its profile)
        or, without one, as in a DM with the bot; a thread of the run's own."""
        meta: ChannelMetadata = {
            "platform": PLATFORM,
            "workspace_id": self.team_id,
            "user_id": self.user_id,
            "channel_id": self.channel or "",
            "thread_id": STEP_THREAD + self.execution_id,
            "is_dm": self.channel is None,
            "slack_event_type": "function_executed",
        }
        if self.enterprise_id:
            meta["slack_enterprise_id"] = self.enterprise_id
        return meta

    @property
    def conversation_id(self) -> str:
        return thread_key(self.team_id, self.channel or "", STEP_THREAD + self.execution_id)


def read_step(team_id: str, enterprise_id: str | None, event: Mapping[str, Any]) -> WorkflowStep:
    """The step run of a ``function_executed`` event of ``ASK_STEP``; ``MalformedPayload``
    when its inputs are not the step's (an empty question, no ``run_as``)."""
    executed: FunctionExecuted = parse_shape(FunctionExecuted, event, "function_executed")
    inputs = executed.inputs
    if not inputs.question.strip():
        raise MalformedPayload("function_executed: inputs.question: empty")
    return WorkflowStep(
        execution_id=executed.function_execution_id,
        team_id=team_id,
        enterprise_id=enterprise_id,
        user_id=inputs.run_as.id,
        question=inputs.question.strip(),
        channel=inputs.channel or None,
        post_in=inputs.post_in or None,
    )


def table_text(df: DataFrameComponent) -> str:
    """A table as text a next step can use: a header line, then one line a row, cells
    separated by `` | `` (with how many rows there were when not all are kept).

    >>> table_text(DataFrameComponent.from_records([{"region": "EU", "revenue": 10}]))
    'region | revenue\\nEU | 10'
    """
    lines = [" | ".join(df.columns)]
    for row in df.rows:
        lines.append(" | ".join("" if row.get(c) is None else str(row.get(c)) for c in df.columns))
    if df.row_count > len(df.rows):
        lines.append(f"({len(df.rows)} of {df.row_count} rows)")
    return "\n".join(lines)


class StepAnswer:
    """What a turn answered, as the step's outcome: ``add`` every component version, then
    ``outputs()`` or ``failure()``.

    >>> answer = StepAnswer()
    >>> answer.add(UiComponent.of(RichTextComponent(content="Up 4%")))
    >>> answer.failure(), answer.outputs()
    (None, {'answer': 'Up 4%', 'table': ''})
    >>> answer.add(UiComponent.of(ToolRefusedComponent(tool="run_sql", kind="permission")))
    >>> answer.failure() == MAY_NOT_USE
    True
    """

    def __init__(self) -> None:
        self.shown: dict[str, UiComponent] = {}
        """The last version of each public component, in the order they first came."""
        self.error: str | None = None
        self.warning: str | None = None
        """The last warning the turn gave (a refusal: "you may not ask here")."""
        self.approvals: list[ApprovalComponent] = []
        self.refused: list[ToolRefusedComponent] = []
        """The tool calls refused for the person (the model's answer around them is partial)."""

    def add(self, component: UiComponent) -> None:
        if component.audience != "everyone" or component.ui_feature is not None:
            return  # admin-only detail and private notes never become a workflow's output
        rich = component.rich_component
        if isinstance(rich, ToolRefusedComponent):
            self.refused.append(rich)
        elif isinstance(rich, StatusCardComponent) and rich.status == "error":
            self.error = rich.description or rich.title
        elif isinstance(rich, NotificationComponent) and rich.level in ("warning", "error"):
            self.warning = rich.message
        elif isinstance(rich, ApprovalComponent) and rich.state == "pending":
            self.approvals.append(rich)
        elif isinstance(rich, RichTextComponent | DataFrameComponent):
            self.shown[rich.id] = component

    def failure(self) -> str | None:
        """Why the step fails (a sentence), or None when it completes."""
        if self.approvals:
            tools = sorted({call.tool for a in self.approvals for call in a.calls})
            return NEEDS_APPROVAL.format(tools=" and ".join(tools) or "a tool")
        if any(refused.kind == "permission" for refused in self.refused):
            return MAY_NOT_USE
        if self.error is not None:
            return self.error
        if not self.shown:
            return self.warning or NO_ANSWER
        return None

    def components(self) -> list[UiComponent]:
        """The answer's text and tables, as shown (to post where the workflow says)."""
        return list(self.shown.values())

    def outputs(self) -> dict[str, str]:
        texts, tables = [], []
        for component in self.shown.values():
            rich = component.rich_component
            if isinstance(rich, RichTextComponent) and rich.content.strip():
                texts.append(rich.content.strip())
            elif isinstance(rich, DataFrameComponent):
                tables.append(table_text(rich))
        return {
            "answer": "\n\n".join(texts)[:MAX_OUTPUT],
            "table": "\n\n".join(tables)[:MAX_OUTPUT],
        }
