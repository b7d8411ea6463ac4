"""One approval mechanism for ``Agent`` and ``GraphAgent`` (issue 25): a tool call that
needs approval pauses the turn durably, the right person's click decides it exactly once,
and the turn resumes on any process. Every test runs against both agents."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from agent_core import (
    Agent,
    AgentConfig,
    InMemoryAgentMemory,
    InMemoryAuditLogger,
    MemoryConversationStore,
    Message,
    RequestContext,
    ScriptedLlmService,
    ScriptedResponse,
    Tool,
    ToolContext,
    ToolRegistry,
    ToolResult,
    UiComponent,
    User,
    UserResolver,
)
from agent_core.approvals import ApprovalBook, ApprovalPolicy, ToolApproval
from agent_core.audit import AuditEventType
from agent_core.state import MemoryKeyValueStore
from agent_core.turn.approving import APPROVAL_KEY, RAN_BEFORE
from agent_core.turn.resuming import Resume
from tests.support.tools import EchoTool

ANA = User(id="u-ana", username="Ana", group_memberships=["user"])
BOB = User(id="u-bob", username="Bob", group_memberships=["user"])
ADA = User(id="u-ada", username="Ada", group_memberships=["admin", "user"])
DAN = User(id="u-dan", username="Dan", group_memberships=["user", "data-leads"])
PEOPLE = {user.id: user for user in (ANA, BOB, ADA, DAN)}
CONVERSATION = "thread-1"


class ByMetadata(UserResolver):
    """The user the channel named in ``metadata["user_id"]`` (default: Ana)."""

    async def resolve_user(self, request_context: RequestContext) -> User:
        return PEOPLE[request_context.metadata.get("user_id", ANA.id)]


def as_user(user: User) -> RequestContext:
    return RequestContext(metadata={"user_id": user.id})


class RefundArgs(BaseModel):
    order: int
    note: str = ""


class Refund(Tool[RefundArgs]):
    """A tool that changes things: it waits for approval."""

    name = "refund"
    description = "Refund an order"
    approval = "always"

    def __init__(self) -> None:
        self.executions: list[int] = []
        self.release: asyncio.Event | None = None
        self.started = asyncio.Event()

    def get_args_schema(self) -> type[RefundArgs]:
        return RefundArgs

    async def execute(self, context: ToolContext, args: RefundArgs) -> ToolResult:
        self.executions.append(args.order)
        self.started.set()
        if self.release is not None:
            await self.release.wait()
        return ToolResult(success=True, result_for_llm=f"refunded {args.order}")


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["agent", "graph"])
def kind(request: pytest.FixtureRequest) -> str:
    if request.param == "graph":
        pytest.importorskip("langgraph")
    return str(request.param)


class World:
    """What two processes share: the conversation store, the book's store, the clock."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.conversations = MemoryConversationStore()
        self.store = MemoryKeyValueStore()
        self.clock = Clock()
        self.audit = InMemoryAuditLogger()

    def agent(
        self,
        *script: Any,
        tools: list[Tool[Any]],
        policy: ApprovalPolicy | None = None,
        groups: dict[str, list[str]] | None = None,
    ) -> Agent:
        registry = ToolRegistry()
        for tool in tools:
            registry.register_local_tool(tool, (groups or {}).get(tool.name, []))
        options: dict[str, Any] = {
            "llm_service": ScriptedLlmService(list(script)),
            "tool_registry": registry,
            "user_resolver": ByMetadata(),
            "agent_memory": InMemoryAgentMemory(),
            "conversation_store": self.conversations,
            "approval_book": ApprovalBook(self.store, clock=self.clock),
            "config": AgentConfig(approvals=policy or ApprovalPolicy()),
            "audit_logger": self.audit,
        }
        if self.kind == "graph":
            from agent_core.graph import GraphAgent

            return GraphAgent(**options)
        return Agent(**options)


@pytest.fixture
def world(kind: str) -> World:
    return World(kind)


async def ask(agent: Agent, text: str, user: User = ANA) -> list[UiComponent]:
    return [c async for c in agent.send_message(as_user(user), text, conversation_id=CONVERSATION)]


async def resume(agent: Agent, approval_id: str) -> list[UiComponent]:
    return [c async for c in agent.send_message(RequestContext(), Resume(approval_id))]


def of_type(components: list[UiComponent], kind: str) -> list[Any]:
    return [c.rich_component for c in components if c.rich_component.type.value == kind]


def approval_of(components: list[UiComponent]) -> Any:
    (view,) = of_type(components, "approval")
    return view


async def stored(agent: Agent, user: User = ANA) -> list[Message]:
    conversation = await agent.conversation_store.get_conversation(CONVERSATION, user)
    return conversation.messages if conversation else []


def assert_valid(messages: list[Message]) -> None:
    """Every assistant tool call is answered by a tool message, and nothing else is."""
    open_calls: set[str] = set()
    for message in messages:
        if message.role == "tool":
            assert message.tool_call_id in open_calls, f"orphan result {message.tool_call_id}"
            open_calls.discard(message.tool_call_id)
        else:
            assert not open_calls, f"unanswered tool calls {open_calls} before {message.role}"
            open_calls = {c.id for c in message.tool_calls or []}
    assert not open_calls, f"unanswered tool calls {open_calls}"


def refund(order: int = 42, **extra: Any) -> ScriptedResponse:
    return ScriptedResponse.tool("refund", {"order": order, **extra}, text="I'll refund it.")


async def decide(agent: Agent, approval_id: str, user: User, *, approve: bool = True) -> Any:
    return await agent.decide_approval(
        as_user(user), approval_id, approve=approve, conversation_id=CONVERSATION
    )


# --- pausing ------------------------------------------------------------------------------


async def test_the_turn_pauses_durably_before_anything_runs(world: World) -> None:
    tool = Refund()
    agent = world.agent(refund(), "Refunded.", tools=[tool])
    out = await ask(agent, "refund order 42")
    view = approval_of(out)
    assert view.pending and view.asker == "Ana" and view.approvers == "Ana"
    assert [(c.tool, c.arguments) for c in view.calls] == [("refund", {"order": 42, "note": ""})]
    assert of_type(out, "status_bar_update")[-1].message == "Waiting for approval"
    assert tool.executions == []
    messages = await stored(agent)  # committed: any process can resume it
    assert [m.role for m in messages] == ["user", "assistant"]
    assert messages[-1].metadata[APPROVAL_KEY] == view.approval_id
    record = await agent.approval_book.get(view.approval_id)
    assert record is not None and record.pending
    assert record.expires_at == world.clock.now + 15 * 60
    [requested] = world.audit.of_type(AuditEventType.APPROVAL_REQUESTED)
    assert requested.user_id == ANA.id and requested.details["tools"] == ["refund"]


async def test_approve_by_the_asker_runs_the_tool_once_and_finishes(world: World) -> None:
    tool = Refund()
    agent = world.agent(refund(), "Refunded order 42.", tools=[tool])
    view = approval_of(await ask(agent, "refund order 42"))
    answer = await decide(agent, view.approval_id, ANA)
    assert answer.resume and answer.record.state == "approved"
    assert answer.view().rich_component.outcome() == "Approved by Ana"
    out = await resume(agent, view.approval_id)
    assert tool.executions == [42]
    assert of_type(out, "text")[-1].content == "Refunded order 42."
    messages = await stored(agent)
    assert_valid(messages)
    assert [m.content for m in messages] == [
        "refund order 42",
        "I'll refund it.",
        "refunded 42",
        "Refunded order 42.",
    ]
    [decided] = world.audit.of_type(AuditEventType.APPROVAL_DECIDED)
    assert decided.user_id == ANA.id and decided.details["state"] == "approved"
    assert decided.details["decided_at"] == world.clock.now


@pytest.mark.parametrize(
    ("approvers", "clicker", "allowed"),
    [
        (None, ANA, True),
        (None, BOB, False),
        (None, ADA, False),
        (["asker", "admin"], ADA, True),
        (["data-leads"], DAN, True),
        (["data-leads"], ANA, False),
    ],
)
async def test_only_configured_approvers_decide(
    world: World, approvers: list[str] | None, clicker: User, allowed: bool
) -> None:
    tool = Refund()
    policy = ApprovalPolicy(tools={"refund": ToolApproval(approvers=approvers)})
    agent = world.agent(refund(), "Done.", tools=[tool], policy=policy)
    view = approval_of(await ask(agent, "refund order 42"))
    answer = await decide(agent, view.approval_id, clicker)
    assert answer.decided is allowed
    if not allowed:
        assert answer.reason == "not_approver"
        assert answer.message.startswith("Only ") and answer.message.endswith("may approve this.")
        assert (await agent.approval_book.get(view.approval_id)).pending  # type: ignore[union-attr]
        assert await resume(agent, view.approval_id) == []
        assert tool.executions == []


async def test_deny_answers_the_model_not_run_and_the_turn_goes_on(world: World) -> None:
    tool = Refund()
    agent = world.agent(refund(), "OK, I did not refund it.", tools=[tool])
    view = approval_of(await ask(agent, "refund order 42"))
    await decide(agent, view.approval_id, ANA, approve=False)
    out = await resume(agent, view.approval_id)
    assert tool.executions == []
    assert of_type(out, "text")[-1].content == "OK, I did not refund it."
    llm = agent.llm_service
    assert isinstance(llm, ScriptedLlmService)
    assert llm.requests[-1].messages[-1].content == "Not run: Ana denied this tool call."
    assert_valid(await stored(agent))


async def test_an_expiry_is_a_denial_that_says_so_and_happens_once(world: World) -> None:
    tool = Refund()
    agent = world.agent(refund(), "It expired, so nothing was refunded.", tools=[tool])
    view = approval_of(await ask(agent, "refund order 42"))
    world.clock.now += 15 * 60 + 1
    swept = await agent.expire_approvals()
    assert [a.record.id for a in swept] == [view.approval_id]
    assert await agent.expire_approvals() == []  # exactly once, on any process
    late = await decide(agent, view.approval_id, ANA)
    assert not late.decided and late.reason == "already" and "Expired" in late.message
    await resume(agent, view.approval_id)
    assert tool.executions == []
    llm = agent.llm_service
    assert isinstance(llm, ScriptedLlmService)
    note = llm.requests[-1].messages[-1].content or ""
    assert note.startswith("Not run: the approval expired") and "15 minutes" in note


async def test_a_click_after_the_expiry_but_before_the_sweep_expires_it(world: World) -> None:
    tool = Refund()
    agent = world.agent(refund(), "Expired.", tools=[tool])
    view = approval_of(await ask(agent, "refund order 42"))
    world.clock.now += 16 * 60
    answer = await decide(agent, view.approval_id, ANA)
    assert answer.resume and answer.record.state == "expired"
    await resume(agent, view.approval_id)
    assert tool.executions == []


async def test_stop_while_waiting_cancels_and_ends_the_turn(world: World) -> None:
    tool = Refund()
    agent = world.agent(refund(), "never asked", tools=[tool])
    view = approval_of(await ask(agent, "refund order 42"))
    not_yours = await agent.cancel_approval(
        as_user(BOB), view.approval_id, conversation_id=CONVERSATION
    )
    assert not not_yours.decided and not_yours.reason == "not_asker"
    answer = await agent.cancel_approval(
        as_user(ANA), view.approval_id, conversation_id=CONVERSATION
    )
    assert answer.resume and answer.view().rich_component.outcome() == "Stopped by Ana"
    out = await resume(agent, view.approval_id)
    assert tool.executions == []
    assert of_type(out, "status_bar_update")[-1].message == "Stopped"
    llm = agent.llm_service
    assert isinstance(llm, ScriptedLlmService)
    assert len(llm.requests) == 1  # the model is not asked again after a Stop
    messages = await stored(agent)
    assert_valid(messages)
    assert messages[-1].content.startswith("(Stopped")
    late = await decide(agent, view.approval_id, ANA)
    assert late.reason == "already" and "Stopped" in late.message


async def test_two_clicks_at_once_decide_once_and_the_tool_runs_once(world: World) -> None:
    tool = Refund()
    policy = ApprovalPolicy(tools={"refund": ToolApproval(approvers=["asker", "admin"])})
    agent = world.agent(refund(), "Refunded.", "Refunded again?", tools=[tool], policy=policy)
    view = approval_of(await ask(agent, "refund order 42"))
    answers = await asyncio.gather(
        decide(agent, view.approval_id, ANA), decide(agent, view.approval_id, ADA, approve=False)
    )
    assert sorted(a.decided for a in answers) == [False, True]
    loser = next(a for a in answers if not a.decided)
    assert loser.reason == "already"
    tool.release = asyncio.Event()
    first = asyncio.create_task(resume(agent, view.approval_id))
    if answers[0].decided:  # approved: a second resume (a re-run) must not run it again
        await asyncio.wait_for(tool.started.wait(), timeout=5)
        second = await resume(agent, view.approval_id)
        tool.release.set()
        await asyncio.wait_for(first, timeout=5)
        assert tool.executions == [42]
        llm = agent.llm_service
        assert isinstance(llm, ScriptedLlmService)
        notes = [m.content for r in llm.requests for m in r.messages if m.role == "tool"]
        assert RAN_BEFORE in notes and of_type(second, "text")
    else:
        tool.release.set()
        await asyncio.wait_for(first, timeout=5)
        assert tool.executions == []


@pytest.mark.parametrize(
    ("approval_id", "conversation", "reason"),
    [("nope", CONVERSATION, "unknown"), (None, "thread-2", "elsewhere")],
)
async def test_forged_or_misplaced_clicks_decide_nothing(
    world: World, approval_id: str | None, conversation: str, reason: str
) -> None:
    tool = Refund()
    agent = world.agent(refund(), "Done.", tools=[tool])
    view = approval_of(await ask(agent, "refund order 42"))
    answer = await agent.decide_approval(
        as_user(ANA),
        approval_id or view.approval_id,
        approve=True,
        conversation_id=conversation,
    )
    assert not answer.decided and answer.reason == reason
    assert (await agent.approval_book.get(view.approval_id)).pending  # type: ignore[union-attr]


async def test_a_replayed_click_is_told_it_was_decided(world: World) -> None:
    tool = Refund()
    agent = world.agent(refund(), "Done.", tools=[tool])
    view = approval_of(await ask(agent, "refund order 42"))
    await decide(agent, view.approval_id, ANA)
    await resume(agent, view.approval_id)
    again = await decide(agent, view.approval_id, ANA)
    assert not again.decided and again.message.startswith("Already decided: Approved by Ana")
    rerun = await resume(agent, view.approval_id)  # a resume replayed: nothing runs again
    assert "nothing ran" in of_type(rerun, "notification")[0].message
    assert tool.executions == [42]


async def test_invalid_arguments_are_never_shown_for_approval(world: World) -> None:
    tool = Refund()
    bad = ScriptedResponse.tool("refund", {"order": "not a number"})
    agent = world.agent(bad, "I need a number.", tools=[tool])
    out = await ask(agent, "refund order abc")
    assert of_type(out, "approval") == []
    llm = agent.llm_service
    assert isinstance(llm, ScriptedLlmService)
    assert "Invalid arguments for tool 'refund'" in (llm.requests[-1].messages[-1].content or "")


async def test_a_tool_the_asker_may_not_use_is_refused_not_offered(world: World) -> None:
    tool = Refund()
    agent = world.agent(refund(), "No.", tools=[tool], groups={"refund": ["admin"]})
    out = await ask(agent, "refund order 42")
    assert of_type(out, "approval") == []
    assert tool.executions == []


async def test_ask_once_remembers_the_person_the_tool_and_the_argument_shape(
    world: World,
) -> None:
    tool = Refund()
    policy = ApprovalPolicy(tools={"refund": ToolApproval(approval="ask_once")})
    script = [refund(1), "One.", refund(2), "Two.", refund(3, note="x"), "Three."]
    agent = world.agent(*script, tools=[tool], policy=policy)
    view = approval_of(await ask(agent, "refund 1"))
    await decide(agent, view.approval_id, ANA)
    await resume(agent, view.approval_id)
    second = await ask(agent, "refund 2")  # same shape: runs without asking
    assert of_type(second, "approval") == [] and tool.executions == [1, 2]
    third = await ask(agent, "refund 3", user=BOB)  # someone else: asked again
    assert of_type(third, "approval")


async def test_requires_approval_still_means_always_and_configuration_overrides(
    world: World,
) -> None:
    class Legacy(Refund):
        approval = "never"
        requires_approval = True

    legacy, echo = Legacy(), EchoTool()
    policy = ApprovalPolicy(tools={"echo": ToolApproval(approval="always")})
    agent = world.agent(refund(), "x", tools=[legacy], policy=policy)
    assert of_type(await ask(agent, "refund"), "approval")
    agent = world.agent(
        ScriptedResponse.tool("echo", {"text": "hi"}), "x", tools=[echo], policy=policy
    )
    assert of_type(await ask(agent, "echo"), "approval") and echo.executions == []
    never = ApprovalPolicy(tools={"refund": ToolApproval(approval="never")})
    tool = Refund()
    agent = world.agent(refund(), "Done.", tools=[tool], policy=never)
    await ask(agent, "refund")
    assert tool.executions == [42]


async def test_a_newer_message_supersedes_the_waiting_approval(world: World) -> None:
    tool = Refund()
    agent = world.agent(refund(), "Sunny.", "unused", tools=[tool])
    view = approval_of(await ask(agent, "refund order 42"))
    await ask(agent, "what's the weather?")
    messages = await stored(agent)
    assert_valid(messages)
    assert messages[-1].content == "Sunny."
    late = await decide(agent, view.approval_id, ANA)
    assert not late.decided and "a newer message came" in late.message
    assert tool.executions == []


async def test_another_person_in_the_thread_does_not_end_the_askers_approval(
    world: World,
) -> None:
    tool = Refund()
    agent = world.agent(refund(), "Hi Bob.", "Refunded.", tools=[tool])
    view = approval_of(await ask(agent, "refund order 42"))
    await ask(agent, "hello", user=BOB)  # Bob's own conversation of the thread
    answer = await decide(agent, view.approval_id, ANA)
    assert answer.resume
    await resume(agent, view.approval_id)
    assert tool.executions == [42]


async def test_another_process_resumes_the_turn(world: World) -> None:
    """The paused turn lives in the state store, not in the agent that paused it."""
    first = world.agent(refund(), tools=[Refund()])
    view = approval_of(await ask(first, "refund order 42"))
    tool = Refund()
    second = world.agent("Refunded order 42.", tools=[tool])
    assert (await decide(second, view.approval_id, ANA)).resume
    out = await resume(second, view.approval_id)
    assert tool.executions == [42]
    assert of_type(out, "text")[-1].content == "Refunded order 42."
    llm = second.llm_service
    assert isinstance(llm, ScriptedLlmService)
    assert [m.content for m in llm.requests[0].messages] == [
        "refund order 42",
        "I'll refund it.",
        "refunded 42",
    ]
    assert_valid(await stored(second))


async def test_deny_skips_only_the_calls_that_needed_approval(world: World) -> None:
    tool, echo = Refund(), EchoTool()
    both = ScriptedResponse.tools(("echo", {"text": "hi"}), ("refund", {"order": 7}))
    agent = world.agent(both, "Echoed, did not refund.", tools=[echo, tool])
    view = approval_of(await ask(agent, "echo and refund"))
    assert [c.tool for c in view.calls] == ["refund"] and echo.executions == []
    await decide(agent, view.approval_id, ANA, approve=False)
    await resume(agent, view.approval_id)
    assert echo.executions == ["hi"] and tool.executions == []
    assert_valid(await stored(agent))


async def test_a_turn_can_wait_twice(world: World) -> None:
    tool = Refund()
    agent = world.agent(refund(1), refund(2), "Both refunded.", tools=[tool])
    first = approval_of(await ask(agent, "refund 1 then 2"))
    await decide(agent, first.approval_id, ANA)
    second = approval_of(await resume(agent, first.approval_id))
    assert second.approval_id != first.approval_id and tool.executions == [1]
    await decide(agent, second.approval_id, ANA)
    out = await resume(agent, second.approval_id)
    assert tool.executions == [1, 2]
    assert of_type(out, "text")[-1].content == "Both refunded."
    assert_valid(await stored(agent))


async def test_arguments_carrying_markup_are_kept_as_data(world: World) -> None:
    """The view holds the validated arguments as they are; the channels escape them
    (``tests/adapters/*/test_approval_render.py``)."""
    tool = Refund()
    attack = "<!channel> [Reset](https://evil.example)"
    agent = world.agent(refund(note=attack), "x", tools=[tool])
    view = approval_of(await ask(agent, "refund"))
    assert view.calls[0].arguments["note"] == attack


async def test_a_resumed_turn_that_fails_leaves_the_conversation_consistent(
    world: World,
) -> None:
    tool = Refund()
    agent = world.agent(refund(), RuntimeError("model down"), tools=[tool])
    view = approval_of(await ask(agent, "refund order 42"))
    await decide(agent, view.approval_id, ANA)
    out = await resume(agent, view.approval_id)
    assert of_type(out, "status_card")[-1].status == "error"
    messages = await stored(agent)
    assert_valid(messages)
    assert messages[0].content == "refund order 42"


class WhoRan(Refund):
    """Records who each run ran as (the user and groups the tool was given)."""

    def __init__(self) -> None:
        super().__init__()
        self.ran_as: list[tuple[str, list[str]]] = []

    async def execute(self, context: ToolContext, args: RefundArgs) -> ToolResult:
        self.ran_as.append((context.user.id, list(context.user.group_memberships)))
        return await super().execute(context, args)


async def test_an_admins_approval_runs_the_tool_as_the_asker_not_the_approver(
    world: World,
) -> None:
    """Approving lends no authority: the call runs with the asker's identity and groups."""
    tool = WhoRan()
    policy = ApprovalPolicy(tools={"refund": ToolApproval(approvers=["asker", "admin"])})
    agent = world.agent(refund(), "Done.", tools=[tool], policy=policy)
    view = approval_of(await ask(agent, "refund order 42"))
    assert (await decide(agent, view.approval_id, ADA)).decided
    await resume(agent, view.approval_id)
    assert tool.ran_as == [(ANA.id, ["user"])]


async def test_an_asker_who_lost_the_tool_before_the_click_runs_nothing(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The permission check is made again when the approved call runs: the asker left the
    group the tool is granted to while the approval waited."""
    cat = User(id="u-cat", username="Cat", group_memberships=["user"])
    monkeypatch.setitem(PEOPLE, cat.id, cat)
    tool = WhoRan()
    agent = world.agent(refund(), "Done.", tools=[tool], groups={"refund": ["user"]})
    view = approval_of(await ask(agent, "refund order 42", cat))
    monkeypatch.setitem(PEOPLE, cat.id, cat.model_copy(update={"group_memberships": []}))
    assert (await decide(agent, view.approval_id, cat)).decided
    await resume(agent, view.approval_id)
    assert tool.ran_as == []
    assert_valid(await stored(agent, cat))
