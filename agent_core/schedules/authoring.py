"""``AlertAuthor``: the model writes an alert's query and condition once, when it is made.

The model is given the schema the owner may read and one tool, ``alert_rule``; what it
returns is run once, read-only and as the owner, before the owner sees it: a query that
fails or a column that is not there is sent back to the model once, then refused. The
owner confirms the rule (SQL, condition, today's value); from then on each run executes
the query without the model (``agent_core.schedules.runs``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from agent_core.errors import AgentError, LlmError
from agent_core.extensions.hooks import LifecycleHook
from agent_core.extensions.middleware import LlmMiddleware
from agent_core.llm.base import LlmMessage, LlmRequest, LlmService
from agent_core.schedules.alerts import AlertCheck, AlertRule, AlertValueError
from agent_core.tool_contract import ToolSchema
from agent_core.tools.sql import SqlError, SqlResult
from agent_core.users import User

TOOL = ToolSchema(
    name="alert_rule",
    description=(
        "Define the alert: one read-only SQL query whose first row holds the value to watch, "
        "and the condition on it that means the alert fires."
    ),
    parameters={
        "type": "object",
        "properties": {
            "sql": {"type": "string", "description": "One SELECT statement."},
            "column": {
                "type": "string",
                "description": "The result column compared (default: the first column).",
            },
            "operator": {
                "type": "string",
                "enum": ["<", "<=", ">", ">=", "=", "!=", "rows", "no rows"],
                "description": "rows / no rows: fires when the query returns rows / none.",
            },
            "threshold": {"type": "number", "description": "The number compared with."},
        },
        "required": ["sql", "operator"],
    },
)

SYSTEM_PROMPT = """You turn an alert condition into a database check.
Write ONE read-only SQL query ({dialect}) whose first row's column holds the value the
condition is about (use an alias), and call the alert_rule tool with the query, that column,
the operator and the threshold. Use only the tables below. Relative dates ("yesterday",
"today") must be computed in SQL, so the query stays right on every run.

{schema}"""

Query = Callable[[User, str], Awaitable[SqlResult]]
"""Runs a query read-only with the owner's data access (raises ``SqlError``)."""


class AlertAuthoringError(AgentError):
    """The model could not write a working check for the condition; nothing is saved.

    >>> str(AlertAuthoringError("orders < 100", "no such table")).startswith("I could not")
    True
    """

    def __init__(self, condition: str, why: str) -> None:
        super().__init__(
            f"I could not turn “{condition}” into a check on your data ({why}). "
            "Try naming the table or the number, e.g. "
            "`/schedule every hour when orders today are below 100`."
        )


@dataclass(frozen=True)
class AuthoredAlert:
    """A rule that ran once, and what it found (shown for confirmation).

    >>> rule = AlertRule(sql="SELECT 1 AS n", operator=">", threshold=0)
    >>> AuthoredAlert(rule, AlertCheck(holds=True, value=1.0)).check.holds
    True
    """

    rule: AlertRule
    check: AlertCheck


class AlertAuthor:
    """Asks ``llm`` for the rule of a condition and tries it with ``query`` (see the module
    docstring); ``schema`` is the owner's readable schema as text.

    >>> from agent_core.llm.scripted import ScriptedLlmService
    >>> author = AlertAuthor(ScriptedLlmService([]), query=None, schema=None)
    >>> author.attempts
    2
    """

    def __init__(
        self,
        llm: LlmService,
        *,
        query: Query | None,
        schema: Callable[[User], Awaitable[str]] | None,
        dialect: str = "SQL",
        attempts: int = 2,
        hooks: Sequence[LifecycleHook] = (),
        middlewares: Sequence[LlmMiddleware] = (),
    ) -> None:
        self.llm = llm
        self.hooks = list(hooks)
        """The agent's ``before_message`` hooks: quotas and budgets refuse as for a question."""
        self.middlewares = list(middlewares)
        """The agent's LLM middlewares: the call is recorded (usage, budgets) as any other."""
        self.query = query
        self.schema = schema
        self.dialect = dialect
        self.attempts = attempts

    async def write(self, owner: User, condition: str) -> AuthoredAlert:
        """The rule for ``condition``, tried once as ``owner``; ``AlertAuthoringError``."""
        if self.query is None:
            raise AlertAuthoringError(condition, "there is no database to watch")
        for hook in self.hooks:  # a quota or a budget refuses with its own sentence
            await hook.before_message(owner, f"Alert me when {condition}")
        schema = await self.schema(owner) if self.schema is not None else ""
        messages = [LlmMessage(role="user", content=f"Alert me when {condition}")]
        problem = "the model wrote no check"
        for _ in range(self.attempts):
            arguments = await self._ask(owner, messages, schema, condition)
            try:
                return await self._try(owner, condition, arguments)
            except (SqlError, AlertValueError, PydanticValidationError) as error:
                problem = _short(error)
            messages += [
                LlmMessage(role="assistant", content=f"alert_rule {arguments}"),
                LlmMessage(role="user", content=f"That check failed: {problem}. Fix it."),
            ]
        raise AlertAuthoringError(condition, problem)

    async def _ask(
        self, owner: User, messages: list[LlmMessage], schema: str, condition: str
    ) -> dict[str, Any]:
        request = LlmRequest(
            messages=messages,
            tools=[TOOL],
            user=owner,
            temperature=0.0,
            system_prompt=SYSTEM_PROMPT.format(dialect=self.dialect, schema=schema),
            metadata={"purpose": "alert_rule"},
        )
        for middleware in self.middlewares:
            request = await middleware.before_llm_request(request)
        try:
            response = await self.llm.send_request(request)
        except LlmError as error:
            raise AlertAuthoringError(condition, "the model is not available now") from error
        for middleware in self.middlewares:
            response = await middleware.after_llm_response(request, response)
        for call in response.tool_calls or []:
            if call.name == TOOL.name:
                return dict(call.arguments)
        return {}

    async def _try(self, owner: User, condition: str, arguments: dict[str, Any]) -> AuthoredAlert:
        rule = AlertRule.model_validate({**arguments, "condition": condition})
        assert self.query is not None
        result = await self.query(owner, rule.sql)
        return AuthoredAlert(rule, rule.check(result))


def _short(error: Exception) -> str:
    if isinstance(error, PydanticValidationError):
        return "; ".join(str(e["msg"]) for e in error.errors())[:300]
    return str(error)[:300]
