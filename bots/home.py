"""A home of one's own: what one person's home shows, the same for every channel (Slack's
Home tab, ``bots.slack.home``; Teams' ``/home`` card, ``bots.teams.home``).

    who                 the person, resolved from the signed request like any asker
    Your schedules      one card each, with Run now, Pause / Resume and Remove
    To decide           pending approvals of the workspace this person may decide, with
                        Approve / Deny (``ApprovalBook.pending_for``)
    Your connections    the MCP servers signed in with their own account, with Disconnect
    Your usage          each budget that covers them, and how much of it is used
    Try asking          the suggested questions of the profile serving them (its starter UI)

Every button sends a command exactly as the person would type it in chat (``/schedule pause
<id>``, ``/schedule run <id>``, ``/disconnect <server>``, a question), and ``run`` answers it
through the same code as chat: the schedule commands (``BotSchedules.command``) or the agent
itself, as whoever clicked. So a forged click (another person's schedule id) is refused like
the same command typed by that person. Approve and Deny (``/approve <id>``, ``/deny <id>``)
go through the same decision as the approval message's own buttons (``Approvals.click``):
who may decide is checked again at the click, for the clicker; only the conversation check
is left out, since a home is no conversation. Components only: each channel renders them
with its own renderer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from adapters.approval import ApprovalClick, footer, request_line
from adapters.notices import UNAVAILABLE
from agent_core.agent import Agent
from agent_core.approvals.record import ApprovalRecord
from agent_core.channel import ChannelMetadata, Platform
from agent_core.components import CardComponent, SimpleTextComponent, UiComponent
from agent_core.errors import AgentError, StateUnavailableError
from agent_core.mcp.commands import McpCommands
from agent_core.schedules.commands import parse_command
from agent_core.schedules.model import Place, Schedule
from agent_core.schedules.wording import when
from agent_core.usage.recorder import BudgetHook
from agent_core.users import RequestContext, User
from agent_core.workflow import WorkflowHandler
from bots.agents import ServedAgent
from bots.approvals import Approvals
from bots.schedules.service import BotSchedules

MAX_SCHEDULES = 20
MAX_APPROVALS = 10
_DECISION = re.compile(r"/(approve|deny)\s+([0-9a-fA-F]{8,64})", re.IGNORECASE)
HOME_COMMANDS = ("/connections", "/disconnect")
"""Agent commands a home button may send (besides the schedule commands)."""


def home_card(title: str, text: str, actions: list[tuple[str, str]] | None = None) -> UiComponent:
    """A card of the home (shown to its person only), with ``(label, command)`` buttons.

    >>> home_card("Hi", "text", [("Pause", "/schedule pause 5e1f0c2a")]).rich_component.actions
    [{'label': 'Pause', 'action': '/schedule pause 5e1f0c2a'}]
    """
    return UiComponent(
        rich_component=CardComponent(
            title=title,
            content=text,
            markdown=True,
            actions=[{"label": label, "action": command} for label, command in actions or []],
        ),
        simple_component=SimpleTextComponent(text=f"{title}\n{text}"),
        audience="requester",
    )


def schedule_card(schedule: Schedule, timezone: str) -> UiComponent:
    """One schedule with the commands that run or change it (Run now: an active one)."""
    actions: list[tuple[str, str]] = []
    if schedule.status == "active":
        state = f"next run {when(schedule.due_at, timezone)}"
        actions += [("Run now", f"/schedule run {schedule.id}")]
        actions += [("Pause", f"/schedule pause {schedule.id}")]
    else:
        state = f"paused: {schedule.paused_reason or 'by you'}"
        actions += [("Resume", f"/schedule resume {schedule.id}")]
    kind = "Alert" if schedule.is_alert else "Question"
    text = f"{kind}: {schedule.question[:200]}\n{schedule.describe()} · {state}"
    actions += [("Remove", f"/schedule remove {schedule.id}")]
    return home_card(f"Schedule {schedule.id}", text, actions)


def decision_of(text: str) -> ApprovalClick | None:
    """The home's Approve or Deny ``text`` is (``/approve <id>``, ``/deny <id>``), if any.

    >>> decision_of("/deny AB12CD34")
    ApprovalClick(approval_id='ab12cd34', decision='deny')
    """
    found = _DECISION.fullmatch(text.strip())
    if found is None:
        return None
    approve = found.group(1).lower() == "approve"
    return ApprovalClick(found.group(2).lower(), "approve" if approve else "deny")


def is_decision(text: str) -> bool:
    """Whether ``text`` is a home's Approve or Deny (``/approve <id>``, ``/deny <id>``).

    >>> is_decision("/approve ab12cd34"), is_decision("approve it")
    (True, False)
    """
    return decision_of(text) is not None


def approval_card(record: ApprovalRecord) -> UiComponent:
    """A pending approval the person may decide, with Approve and Deny.

    >>> card = approval_card(ApprovalRecord.example(id="ab12cd34"))
    >>> [a["action"] for a in card.rich_component.actions]
    ['/approve ab12cd34', '/deny ab12cd34']
    """
    view = record.component()
    text = f"{request_line(view)}\nThey asked: {record.question[:200]}\n{footer(view)}"
    actions = [("Approve", f"/approve {record.id}"), ("Deny", f"/deny {record.id}")]
    return home_card("Waiting for your approval", text, actions)


def _mcp_commands(handler: WorkflowHandler | None) -> McpCommands | None:
    """The agent's sign-in commands, wherever they sit in its chain of handlers."""
    seen = 0
    while handler is not None and seen < 10:
        if isinstance(handler, McpCommands):
            return handler
        handler = getattr(handler, "inner", None)
        seen += 1
    return None


class Home:
    """See the module docstring.

    >>> from types import SimpleNamespace
    >>> Home(SimpleNamespace(), SimpleNamespace()).schedules  # type: ignore[arg-type]
    namespace()
    """

    def __init__(
        self, agent: ServedAgent, schedules: BotSchedules, approvals: Approvals | None = None
    ) -> None:
        self.agent = agent
        self.schedules = schedules
        self.approvals = approvals

    async def components(
        self, context: RequestContext, *, timezone: str = "UTC", said: Sequence[UiComponent] = ()
    ) -> list[UiComponent]:
        """The home of the person of ``context`` (``said``: a command's reply, shown first)."""
        agent, routed = self.schedules.access.agent_for(context)
        try:
            user = await agent.user_resolver.resolve_user(routed)
        except AgentError as refused:
            return [home_card("Threadline", str(refused))]
        shown = [*said, home_card("Your Threadline", _intro(user))]
        mine = await self.schedules.store.owned_by(user.id)
        if mine:
            shown += [schedule_card(s, timezone) for s in mine[:MAX_SCHEDULES]]
        else:
            text = "None yet. Try `/schedule every weekday 9:00 revenue yesterday`."
            shown.append(home_card("Your schedules", text))
        shown += await self._to_decide(agent, user, context)
        if (connections := await self._connections(agent.workflow_handler, user)) is not None:
            shown.append(connections)
        if usage := await _usage(agent, user):
            shown.append(home_card("Your usage", "\n".join(f"• {line}" for line in usage)))
        shown += await self._starter(context)
        return shown

    async def run(
        self, context: RequestContext, text: str, *, place: Place, workspace: str, timezone: str
    ) -> list[UiComponent] | None:
        """A home button's command, answered as typed in chat by the clicker; None when it
        is a question (the channel asks it as a turn of its own)."""
        if (decided := await self.decide(context, text)) is not None:
            return [decided]
        command = parse_command(text)
        if command is not None:
            reply = await self.schedules.command(
                command, context, place=place, workspace=workspace, timezone=timezone
            )
            return [reply]
        if text.split(" ", 1)[0].lower() in HOME_COMMANDS:
            return [c async for c in self.agent.send_message(context, text)]
        return None

    async def _to_decide(
        self, agent: Agent, user: User, context: RequestContext
    ) -> list[UiComponent]:
        """The pending approvals of this workspace the person may decide (listed from the
        book, also where decisions come another way: the console's)."""
        meta = context.metadata
        pending = await agent.approval_book.pending_for(
            user,
            platform=meta.get("platform"),
            workspace=str(meta.get("workspace_id") or ""),
            limit=MAX_APPROVALS,
        )
        return [approval_card(record) for record in pending]

    async def may_decide(self, context: RequestContext, record: ApprovalRecord) -> bool:
        """Whether the person of ``context`` (resolved now) may decide ``record``: whether
        their home lists it while it is pending (a click is checked again when it comes)."""
        agent, routed = self.schedules.access.agent_for(context)
        try:
            user = await agent.user_resolver.resolve_user(routed)
        except AgentError:
            return False
        return record.may_be_decided_by(user)

    async def decide(self, context: RequestContext, text: str) -> UiComponent | None:
        """Approve or Deny from the home (``/approve <id>``, ``/deny <id>``; None for any
        other text): the approval message's own decision, for the clicker of ``context``
        (checked now); the turn resumes in its thread, and its message there is updated."""
        click = decision_of(text)
        if click is None:
            return None
        if self.approvals is None:
            return home_card("Approvals", "Approvals are decided in their conversation here.")
        try:
            answer = await self.approvals.click(context, click, conversation_id=None)
        except StateUnavailableError:  # still pending: nothing is lost
            return home_card("Approval", UNAVAILABLE)
        return home_card("Approval", answer.message)

    async def _connections(self, handler: WorkflowHandler | None, user: User) -> UiComponent | None:
        commands = _mcp_commands(handler)
        if commands is None or commands.hub is None:
            return None
        servers = [s.name for s in commands.servers if user.is_member_of(s.allowed_groups)]
        if not servers:
            return None
        connected = set(await commands.hub.connections_of(user.id, servers))
        lines = [f"• *{n}*: {'connected' if n in connected else 'not connected'}" for n in servers]
        actions = [(f"Disconnect {n}", f"/disconnect {n}") for n in servers if n in connected]
        return home_card("Your connections", "\n".join(lines), actions)

    async def _starter(self, context: RequestContext) -> list[UiComponent]:
        """The profile's suggested questions (its starter UI), as buttons that ask them."""
        shown: list[UiComponent] = []
        async for component in self.agent.send_message(context, ""):
            if component.rich_component.type.value in ("button", "button_group", "text"):
                shown.append(component)
        return shown


async def _usage(agent: Agent, user: User) -> list[str]:
    """The person's use of the budgets that cover them here (the agent's budget hook)."""
    for hook in agent.lifecycle_hooks:
        if isinstance(hook, BudgetHook):
            return await hook.budgets.standing(user, hook.profile)
    return []


def _intro(user: User) -> str:
    name = user.username or "there"
    return (
        f"Hi {name}. Your schedules, your connected tools and questions to start with. "
        "Each button does what typing its command in a chat with me does."
    )


def home_context(
    platform: Platform,
    workspace: str,
    user: str,
    channel: str,
    extra: ChannelMetadata | None = None,
) -> RequestContext:
    """The context of a person at home (a DM with the bot: its profile answers), with the
    channel's ``extra`` keys.

    >>> home_context("slack", "T1", "U1", "D1").metadata["thread_id"]
    'home'
    """
    metadata: ChannelMetadata = {
        "platform": platform,
        "workspace_id": workspace,
        "user_id": user,
        "channel_id": channel,
        "thread_id": "home",
        "is_dm": True,
    }
    return RequestContext(metadata=metadata | (extra or {}))
