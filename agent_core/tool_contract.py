"""The tool contract: ``Tool[TArgs]`` and what flows in and out of it.

It sits below the LLM services, the conversation model, approvals and the tools package, so
each of them can name a call or a schema without importing the tools themselves.

>>> from pydantic import BaseModel
>>> class EchoArgs(BaseModel):
...     text: str
>>> class Echo(Tool[EchoArgs]):
...     name = "echo"
...     description = "Repeat the text"
...     def get_args_schema(self):
...         return EchoArgs
...     async def execute(self, context, args):
...         return ToolResult(success=True, result_for_llm=args.text)
>>> Echo().get_schema().parameters["required"]
['text']
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from functools import cached_property
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from agent_core.components.base import UiComponent
from agent_core.components.sources import Source
from agent_core.components.ui_state import RefusalKind
from agent_core.context import ToolContext

TArgs = TypeVar("TArgs", bound=BaseModel)

ApprovalMode = Literal["never", "always", "ask_once"]
"""Whether a call of a tool waits for a person's approval: ``never``; ``always``; or
``ask_once``: the first call of an argument shape in a thread asks, later ones of the same
shape by the same person run (``agent_core.approvals``)."""


class ToolCall(BaseModel):
    """One tool call requested by the LLM; ``arguments`` are raw, not yet validated."""

    model_config = ConfigDict(defer_build=True)

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolSchema(BaseModel):
    """What the LLM is told about a tool: name, description, JSON Schema of its arguments."""

    model_config = ConfigDict(defer_build=True)

    name: str
    description: str
    parameters: dict[str, Any]
    access_groups: list[str] = Field(default_factory=list)


class ToolResult(BaseModel):
    """A tool's dual output: compact ``result_for_llm`` and a ``ui_component`` for people.

    Failures are results too (``success=False``, ``error``); ``exception`` keeps the original
    exception for the agent's ``ErrorRecoveryStrategy`` and is never serialised. ``sources``
    are what the answer should cite (a query and its tables): the turn shows them with the
    answer (``SourcesComponent``). ``refusal`` says the call was refused for the person asking
    (``"permission"``): the turn reports it as a ``ToolRefusedComponent``.
    """

    model_config = ConfigDict(defer_build=True, arbitrary_types_allowed=True)

    success: bool
    result_for_llm: str
    ui_component: UiComponent | None = None
    error: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    sources: list[Source] = Field(default_factory=list)
    refusal: RefusalKind | None = None
    exception: BaseException | None = Field(default=None, exclude=True, repr=False)


class ToolRejection(BaseModel):
    """Returned by ``ToolRegistry.transform_args`` to refuse a call with a reason for the LLM."""

    model_config = ConfigDict(defer_build=True)

    reason: str


class Tool(ABC, Generic[TArgs]):
    """Base of every tool. Set ``name``/``description`` (attributes or properties), return
    the pydantic args model from ``get_args_schema`` and implement ``execute``.

    ``approval`` (``"never"``, ``"always"``, ``"ask_once"``) makes a call wait for a person's
    click before it runs (``agent_core.approvals``); ``requires_approval = True`` still means
    ``"always"``; the configuration may override both per tool.
    ``parallel_safe = False`` makes the agent run the tool alone, never concurrently with
    other tool calls of the same LLM response. ``shown_as_step = False`` keeps a bookkeeping
    tool (the plan tool) out of the plan and the status line. ``access_groups`` are the
    default groups; the registry's ``register_local_tool(tool, access_groups)`` overrides
    them.
    """

    name: str
    description: str
    approval: ApprovalMode = "never"
    requires_approval: bool = False
    """Before ``approval`` existed: ``True`` is ``approval = "always"``."""
    parallel_safe: bool = True
    shown_as_step: bool = True

    @property
    def approval_mode(self) -> ApprovalMode:
        """The tool's own approval mode (``requires_approval = True`` reads as "always")."""
        if self.approval == "never" and self.requires_approval is True:
            return "always"
        return self.approval

    @property
    def access_groups(self) -> list[str]:
        return []

    @abstractmethod
    def get_args_schema(self) -> type[TArgs]: ...

    @abstractmethod
    async def execute(self, context: ToolContext, args: TArgs) -> ToolResult: ...

    @cached_property
    def _schema(self) -> ToolSchema:
        parameters = self.get_args_schema().model_json_schema()
        parameters.pop("title", None)
        return ToolSchema(
            name=self.name,
            description=self.description,
            parameters=parameters,
            access_groups=list(self.access_groups),
        )

    def get_schema(self) -> ToolSchema:
        """The tool's schema, computed once per tool (not per turn)."""
        return self._schema
