"""The Workflow Builder step "Ask Threadline", through the real Slack bot (issue 40): a signed
``function_executed`` in, ``functions.completeSuccess`` / ``completeError`` out."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from adapters.slack.testing import FakeSlackApi, function_executed
from adapters.slack.workflow import MAY_NOT_USE
from agent_core import AgentConfig, ScriptedLlmService, ToolRegistry
from agent_core.errors import LlmServerError
from agent_core.llm.scripted import ScriptedResponse
from agent_core.state_factory import State, StateSettings, build_state
from bots.profiles import Profile, ProfileRouter
from tests.agent_kind import agent_class
from tests.bots.approval_kit import Refund, approval_agent, refund_script
from tests.bots.slack.agents import RunSql
from tests.bots.slack.harness import running_bot

ANA = {"id": "U1", "secret": "s1"}  # in the analysts group
BO = {"id": "U2", "secret": "s2"}


def inputs(question: str = "revenue yesterday by region", **more: Any) -> dict[str, Any]:
    return {"question": question, "run_as": ANA, **more}


async def test_the_step_completes_with_the_answer_and_its_table_as_outputs(
    tmp_path: Path,
) -> None:
    script = [ScriptedResponse.tool("run_sql", {"sql": "select", "rows": 2}), "EU leads, *up 4%*."]
    async with running_bot(tmp_path, script) as h:
        response = await h.deliver(function_executed("Fx1", inputs(post_in="C9")))
        assert response.status == 200
        await h.idle()
        assert h.fake.steps["Fx1"] == {
            "outputs": {
                "answer": "EU leads, *up 4%*.",
                "table": "id | name\n0 | row 0\n1 | row 1",
            }
        }
        assert h.llm_questions()[0] == "revenue yesterday by region"
        posted = h.fake.visible("C9")
        assert posted[0].text == "<@U1> asked in a workflow: revenue yesterday by region"
        assert any(b.get("type") == "table" for m in posted for b in m.blocks)
        assert any("EU leads" in str(m.blocks) for m in posted)
        assert not h.fake.calls_to("functions.completeError")


async def test_the_step_runs_as_its_person_in_the_channels_profile(tmp_path: Path) -> None:
    """The channel's profile answers (finance: analysts only): Ana is answered, Bo is
    refused with the profile's sentence, and nothing is posted for him."""

    def factory(resolver: Any, state: State) -> Any:
        def agent(**config: Any) -> Any:
            registry = ToolRegistry()
            registry.register_local_tool(RunSql(), access_groups=["user"])
            return agent_class()(
                llm_service=ScriptedLlmService(["Finance says hi."]),
                tool_registry=registry,
                user_resolver=resolver,
                agent_memory=state.memory,
                conversation_store=state.conversations,
                config=AgentConfig(**config),
            )

        finance = agent(allowed_groups=["analysts"], refusal="Only analysts may ask finance.")
        return ProfileRouter(
            agent(), [Profile(name="finance", slack_channels=["C9"])], {"finance": finance}
        )

    async with running_bot(tmp_path, [], agent_factory=factory) as h:
        await h.deliver(function_executed("Fx-bo", {**inputs(channel="C9"), "run_as": BO}))
        await h.deliver(function_executed("Fx-ana", inputs(channel="C9", post_in="C9")))
        await h.idle()
        assert h.fake.steps["Fx-bo"] == {"error": "Only analysts may ask finance."}
        assert h.fake.steps["Fx-ana"] == {"outputs": {"answer": "Finance says hi.", "table": ""}}
        assert h.fake.visible("C9")[0].text.startswith("<@U1> asked")


async def test_a_tool_the_person_may_not_use_fails_the_step_and_never_runs(
    tmp_path: Path,
) -> None:
    """Admins only: run as Ana (not an admin), the call is refused before the tool runs, as
    in chat, and the step fails with a sentence saying so (issue 40: it used to complete with
    the model's partial answer as its output, which a next step would have used)."""
    script = [
        ScriptedResponse.tool("run_sql", {"sql": "select salaries", "rows": 5}),
        "I may not query that for you.",
    ]

    def factory(resolver: Any, state: State) -> Any:
        registry = ToolRegistry()
        registry.register_local_tool(RunSql(), access_groups=["admin"])
        return agent_class()(
            llm_service=ScriptedLlmService(script),
            tool_registry=registry,
            user_resolver=resolver,
            agent_memory=state.memory,
            conversation_store=state.conversations,
        )

    async with running_bot(tmp_path, [], agent_factory=factory) as h:
        await h.deliver(function_executed("Fx-tool", inputs("salaries by person")))
        await h.idle()
        assert h.fake.steps["Fx-tool"] == {"error": MAY_NOT_USE}
        assert "run_sql" not in MAY_NOT_USE  # a tool the person may not use stays unnamed
        assert not h.fake.calls_to("functions.completeSuccess")
        tool_results = [m.content for r in h.agent.llm_service.requests for m in r.messages]  # type: ignore[attr-defined]
        assert any("Permission denied" in (c or "") for c in tool_results)


async def test_a_tool_that_needs_approval_fails_the_step_and_runs_nothing(
    tmp_path: Path,
) -> None:
    refund = Refund()

    def factory(resolver: Any, state: State) -> Any:
        return approval_agent(refund_script(), resolver, state, refund=refund)

    async with running_bot(tmp_path, [], agent_factory=factory) as h:
        await h.deliver(function_executed("Fx2", inputs("refund order 42")))
        await h.idle()
        error = h.fake.steps["Fx2"]["error"]
        assert "approve refund" in error and "cannot wait for a click" in error
        assert refund.runs == []
        assert await h.bot.approvals.sweep() == 0  # cancelled: nothing left waiting
        assert not h.fake.calls_to("chat.postMessage")  # no approval message nobody reads


async def test_the_model_down_fails_the_step_with_a_sentence(tmp_path: Path) -> None:
    async with running_bot(tmp_path, [LlmServerError("overloaded")]) as h:
        await h.deliver(function_executed("Fx3", inputs()))
        await h.idle()
        assert h.fake.steps["Fx3"] == {
            "error": "The AI service could not answer right now. Please try again in a moment."
        }


async def test_a_step_without_a_person_or_question_fails_without_asking(tmp_path: Path) -> None:
    """``run_as`` must be Slack's user context: a step built without it is refused."""
    async with running_bot(tmp_path, ["never"]) as h:
        await h.deliver(function_executed("Fx4", {"question": "revenue?"}))
        await h.deliver(function_executed("Fx5", {"question": " ", "run_as": ANA}))
        await h.idle()
        assert "must run as a person" in h.fake.steps["Fx4"]["error"]
        assert "must run as a person" in h.fake.steps["Fx5"]["error"]
        assert h.llm_questions() == []


async def test_an_unsigned_step_is_refused(tmp_path: Path) -> None:
    async with running_bot(tmp_path, ["never"]) as h:
        import json

        raw = json.dumps(function_executed("Fx6", inputs())).encode()
        response = await h.post(raw, {}, "application/json")
        assert response.status == 401
        assert h.fake.steps == {}


async def test_the_same_step_delivered_twice_completes_once_across_two_processes(
    tmp_path: Path, redis_url: str, key_prefix: str
) -> None:
    settings = StateSettings(redis_url=redis_url, key_prefix=key_prefix, claim_after=1.0)
    async with FakeSlackApi() as fake, contextlib.AsyncExitStack() as stack:
        harnesses = []
        for _ in range(2):
            state = build_state(settings)
            stack.push_async_callback(state.aclose)
            harnesses.append(
                await stack.enter_async_context(
                    running_bot(tmp_path, ["Once."], state=state, fake=fake)
                )
            )
        delivery = function_executed("Fx7", inputs(post_in="C9"), event_id="Ev7")
        for h in harnesses:
            assert (await h.deliver(delivery)).status == 200
        for h in harnesses:
            await h.idle()
        assert fake.steps == {"Fx7": {"outputs": {"answer": "Once.", "table": ""}}}
        assert len(fake.calls_to("functions.completeSuccess")) == 1
        assert sum(len(h.llm_questions()) for h in harnesses) == 1
        assert [m.text for m in fake.visible("C9")].count("Once.") <= 1
