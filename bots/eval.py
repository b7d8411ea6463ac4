"""``threadline eval FILE``: measure the agent's accuracy on your questions before rollout.

``FILE`` is JSON Lines, one question a line, with what a right answer returns: an
``expected_sql`` whose result set is compared, or ``expected`` values (a number, a list,
rows)::

    {"question": "How many customers do we have?", "expected_sql": "SELECT count(*) FROM customers"}
    {"question": "Which country buys the most?", "expected": "US"}

Each question runs through the configured agent (``THREADLINE_DATABASE_URL``, the model from
``ANTHROPIC_API_KEY`` / ``ANTHROPIC_MODEL``; the demo shop and the scripted model otherwise)
in a conversation of its own. The result of the last ``run_sql`` that succeeded is compared
with the expected one (``bots.eval_compare``: rows as a multiset, extra columns allowed).
Prints pass/fail per question with the SQL the agent ran, tokens and time, the execution
accuracy, and last a machine-readable JSON line. Without ``FILE``, the starter questions for
the demo shop (shipped with the package) run.

``--as ana@example.com,finance`` asks as that person (email) in those groups, so a data team
sees the rows each mapped role gets before rollout: the agent's queries *and* each
``expected_sql`` run as that data identity. ``--profile NAME`` asks the profile's agent (and
its own database).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, model_validator

from agent_core.agent import Agent
from agent_core.channel import ChannelMetadata
from agent_core.extensions.middleware import LlmMiddleware
from agent_core.llm.base import LlmRequest, LlmResponse
from agent_core.tools.sql import RunSqlTool, SqlError, SqlResult, SqlRunner
from agent_core.users import RequestContext, User
from bots.eval_compare import as_rows, matches

STARTER = Path(__file__).with_name("eval_demo_shop.jsonl")
EXPECTED_ROWS = 10_000


class EvalCase(BaseModel):
    question: str
    expected_sql: str | None = None
    expected: Any = None

    @model_validator(mode="after")
    def _one_expectation(self) -> EvalCase:
        if (self.expected_sql is None) == (self.expected is None):
            raise ValueError("give exactly one of expected_sql and expected")
        return self


class CaseResult(BaseModel):
    question: str
    passed: bool
    sql: str | None = None
    note: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0


def load_cases(path: Path) -> list[EvalCase]:
    """The cases of a JSON Lines file (blank lines and ``#`` comments skipped)."""
    cases = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip() and not line.lstrip().startswith("#"):
            try:
                cases.append(EvalCase.model_validate_json(line))
            except ValueError as error:
                raise SystemExit(f"{path}:{number}: {error}") from None
    return cases


class RecordingRunner(SqlRunner):
    """Passes queries on and remembers each (SQL, result or error) of the current question;
    ``for_user`` records the asker's own runner into the same list (``asked_as``)."""

    def __init__(
        self, inner: SqlRunner, calls: list[tuple[str, SqlResult | SqlError]] | None = None
    ) -> None:
        self.inner = inner
        self.dialect = inner.dialect
        self.parser_dialect = inner.parser_dialect
        self.calls: list[tuple[str, SqlResult | SqlError]] = [] if calls is None else calls
        self.asked_as: SqlRunner = inner
        """The runner of the last asker's queries (their data identity)."""

    def for_user(self, user: User) -> SqlRunner:
        self.asked_as = self.inner.for_user(user)
        return RecordingRunner(self.asked_as, self.calls)

    @property
    def identity_label(self) -> str | None:
        return self.inner.identity_label

    async def run_sql(self, sql: str, *, max_rows: int = 100, timeout: float = 10.0) -> SqlResult:
        try:
            result = await self.inner.run_sql(sql, max_rows=max_rows, timeout=timeout)
        except SqlError as error:
            self.calls.append((sql, error))
            raise
        self.calls.append((sql, result))
        return result

    async def describe(self) -> str:
        return await self.inner.describe()


class UsageMeter(LlmMiddleware):
    """Adds up the tokens of every LLM response."""

    def __init__(self) -> None:
        self.input_tokens = 0
        self.output_tokens = 0

    async def after_llm_response(self, request: LlmRequest, response: LlmResponse) -> LlmResponse:
        usage = response.usage or {}
        self.input_tokens += usage.get("input_tokens", 0)
        self.output_tokens += usage.get("output_tokens", 0)
        return response


def instrument(agent: Agent) -> tuple[RecordingRunner, UsageMeter]:
    tool = agent.tool_registry.peek("run_sql")
    if not isinstance(tool, RunSqlTool):
        raise SystemExit("threadline eval: the agent has no run_sql tool")
    recorder = RecordingRunner(tool.runner)
    tool.runner = recorder
    meter = UsageMeter()
    agent.llm_middlewares.append(meter)
    return recorder, meter


async def _expected_rows(case: EvalCase, runner: SqlRunner) -> list[list[Any]]:
    if case.expected_sql is not None:
        result = await runner.run_sql(case.expected_sql, max_rows=EXPECTED_ROWS, timeout=60)
        return result.rows
    return as_rows(case.expected)


async def run_case(
    agent: Agent,
    case: EvalCase,
    number: int,
    recorder: RecordingRunner,
    meter: UsageMeter,
    profile: str | None = None,
) -> CaseResult:
    recorder.calls.clear()
    tokens_before = (meter.input_tokens, meter.output_tokens)
    started = time.perf_counter()
    metadata = ChannelMetadata(platform="eval", user_id="eval")
    if profile:
        metadata["profile"] = profile
    context = RequestContext(metadata=metadata)
    async for _ in agent.send_message(context, case.question, conversation_id=f"eval-{number}"):
        pass
    seconds = time.perf_counter() - started
    usage = {
        "input_tokens": meter.input_tokens - tokens_before[0],
        "output_tokens": meter.output_tokens - tokens_before[1],
    }
    ran = [(sql, outcome) for sql, outcome in recorder.calls if isinstance(outcome, SqlResult)]
    if not ran:
        last = recorder.calls[-1] if recorder.calls else None
        note = f"no query succeeded ({last[1]})" if last else "the agent ran no query"
        return CaseResult(
            question=case.question,
            passed=False,
            sql=last[0] if last else None,
            note=note,
            seconds=seconds,
            **usage,
        )
    sql, result = ran[-1]
    assert isinstance(result, SqlResult)
    try:
        expected = await _expected_rows(case, recorder.asked_as)
    except SqlError as error:
        return CaseResult(
            question=case.question,
            passed=False,
            sql=sql,
            seconds=seconds,
            note=f"the expected SQL failed: {error}",
            **usage,
        )
    passed = result.total_is_exact and matches(expected, result.columns, result.rows)
    return CaseResult(
        question=case.question,
        passed=passed,
        sql=sql,
        note="" if passed else _difference(expected, result),
        seconds=seconds,
        **usage,
    )


def _difference(expected: list[list[Any]], result: SqlResult) -> str:
    if len(expected) != result.total_rows or not result.total_is_exact:
        return f"expected {len(expected)} row(s), got {result.total_text()}"
    shown = json.dumps(expected[:3], default=str), json.dumps(result.rows[:3], default=str)
    return f"expected {shown[0][:200]}, got {shown[1][:200]}"


def _print_case(number: int, total: int, result: CaseResult) -> None:
    mark = "PASS" if result.passed else "FAIL"
    print(
        f"{mark}  {number}/{total}  {result.question}  ({result.seconds:.1f} s, "
        f"{result.input_tokens:,} in / {result.output_tokens:,} out tokens)"
    )
    if result.sql:
        print("      SQL: " + " ".join(result.sql.split()))
    if result.note:
        print(f"      {result.note}")


def summary(results: list[CaseResult], *, model: str, database: str, file: Path) -> dict[str, Any]:
    passed = sum(result.passed for result in results)
    return {
        "file": str(file),
        "model": model,
        "database": database,
        "questions": len(results),
        "passed": passed,
        "execution_accuracy": round(passed / len(results), 4) if results else 0.0,
        "input_tokens": sum(r.input_tokens for r in results),
        "output_tokens": sum(r.output_tokens for r in results),
        "seconds": round(sum(r.seconds for r in results), 3),
        "failed": [r.question for r in results if not r.passed],
    }


def asker(value: str | None) -> User:
    """Who the questions come from: ``--as EMAIL``, ``--as GROUP`` or both, comma-separated
    (``ana@example.com,finance``), in the channels' default group ``user`` too; without
    ``--as``, the local user.

    >>> asker("ana@example.com,finance").email, asker("finance,sales").group_memberships
    ('ana@example.com', ['user', 'finance', 'sales'])
    """
    from agent_core.agent import LOCAL_USER

    if not value:
        return LOCAL_USER
    parts = [part.strip() for part in value.split(",") if part.strip()]
    email = next((part for part in parts if "@" in part), None)
    groups = [part for part in parts if "@" not in part]
    return User(
        id=f"eval:{email or ','.join(groups)}",
        email=email,
        group_memberships=list(dict.fromkeys(["user", *groups])),
    )


def build_agent(args: argparse.Namespace) -> Agent:
    """The agent the commands serve (the built-in one on the configured database, or
    ``--app``; ``--profile``'s), on in-memory state, asked by ``--as`` (the local user
    when not given)."""
    from agent_core.state_factory import StateSettings, build_state
    from agent_core.users import StaticUserResolver
    from bots.serving import ModelSettings, agent_factory, load_config

    state: dict[str, Any] = {"ephemeral": True}
    if args.data_dir is not None:
        state["data_dir"] = args.data_dir
    model = {"scripted": True} if args.scripted else {}
    config = load_config(args, overrides={StateSettings: state, ModelSettings: model})
    person = StaticUserResolver(asker(getattr(args, "as_", None)))
    served = agent_factory(config, "console")(build_state(config.state), person)
    profile = getattr(args, "profile", None)
    if not profile:
        return served.served_agents()[0]
    agents = getattr(served, "agents", {})
    if profile not in agents:
        raise SystemExit(f"threadline eval: no profile {profile!r} in the configuration")
    agent: Agent = agents[profile]
    return agent


async def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    file = args.file or STARTER
    cases = load_cases(file)
    agent = build_agent(args)
    recorder, meter = instrument(agent)
    database = getattr(recorder.inner, "masked_url", recorder.dialect)
    print(
        f"threadline eval: {len(cases)} question(s) from {file} · model "
        f"{agent.llm_service.model_name} · database {database}"
    )
    results = []
    try:
        for number, case in enumerate(cases, start=1):
            profile = getattr(args, "profile", None)
            result = await run_case(agent, case, number, recorder, meter, profile)
            _print_case(number, len(cases), result)
            results.append(result)
    finally:
        close = getattr(agent.llm_service, "aclose", None)
        if close is not None:
            await close()  # the HTTP client belongs to this event loop
    report = summary(results, model=agent.llm_service.model_name, database=str(database), file=file)
    print(
        f"\nExecution accuracy: {report['passed']}/{report['questions']} "
        f"({report['execution_accuracy']:.1%}) · {report['input_tokens']:,} in / "
        f"{report['output_tokens']:,} out tokens · {report['seconds']:.1f} s"
    )
    print(json.dumps(report))
    return report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from bots.serving import add_config_arguments

    add_config_arguments(parser)
    parser.add_argument(
        "file",
        nargs="?",
        type=Path,
        default=None,
        help="JSON Lines of questions and expected results "
        "(default: the demo shop's starter questions)",
    )
    parser.add_argument("--data-dir", type=Path, default=None, help="where the demo data lives")
    parser.add_argument(
        "--scripted",
        action="store_true",
        help="use the scripted demo model even when an API key is set",
    )
    parser.add_argument(
        "--as",
        dest="as_",
        metavar="EMAIL|GROUP",
        default=None,
        help="ask as this person and/or groups (comma-separated), so queries run as the data "
        "identity [database.roles] / [database.urls] gives them",
    )
    parser.add_argument(
        "--profile", default=None, help="ask the agent of this [[profiles]] entry (its database)"
    )
    parser.add_argument(
        "--min-accuracy",
        type=float,
        default=0.0,
        help="exit 1 when the execution accuracy is below this (0..1)",
    )


def run(args: argparse.Namespace) -> int:
    report = asyncio.run(evaluate(args))
    return 0 if report["execution_accuracy"] >= args.min_accuracy else 1


if __name__ == "__main__":  # pragma: no cover
    parser = argparse.ArgumentParser(prog="threadline eval")
    add_arguments(parser)
    sys.exit(run(parser.parse_args()))
