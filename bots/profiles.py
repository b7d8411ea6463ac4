"""Per-channel profiles: which agent answers where, from which data, for whom.

A profile (``[[profiles]]`` in ``threadline.toml``) names its agent or the parts of the
built-in one (tools, instructions), who may ask (groups) and extra admins, and is chosen by
Slack channel id, Teams team or channel id, or direct messages; everything else goes to the
default (the top-level configuration)::

    [[profiles]]
    name = "finance"
    slack_channels = ["C0FINANCE"]
    teams_channels = ["19:finance@thread.tacv2"]
    allowed_groups = ["finance", "admin"]
    admins = ["U0CFO"]
    instructions = "Answer for the finance team; amounts in EUR."

A question whose profile denies the asker gets one clear refusal and nothing runs. A
profile's conversations and memories are its own: the agent sees ``profile`` in the request
metadata (memory scope) and conversation ids carry the profile's name. A profile may answer
from a database of its own (``database = {...}``) and keep its answers private
(``answers = "private"``: every component goes to the asker alone, the way admin-only detail
does: Slack an ephemeral message in the thread, Teams a targeted message or a 1:1 chat; its
memories are private too).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field

from agent_core.approvals.policy import ToolApproval
from agent_core.channel import ChannelMetadata
from agent_core.database.settings import DatabaseConfig
from agent_core.mcp.config import McpServerConfig
from agent_core.settings import ConfigProblem
from agent_core.state.turn_writes import TurnWrites, turn_view
from agent_core.turn.resuming import Resume
from agent_core.users import RequestContext, User, UserResolver

if TYPE_CHECKING:
    from agent_core.agent import Agent
    from agent_core.approvals.book import ApprovalBook
    from agent_core.components import UiComponent
    from agent_core.feedback import Feedback
    from agent_core.llm.base import LlmService
    from agent_core.prompts import SystemPromptBuilder
    from agent_core.runtime import Runtime
    from agent_core.turn.deciding import ApprovalAnswer


class Profile(BaseModel):
    """One ``[[profiles]]`` table; see the module docstring."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,40}$")
    slack_channels: list[str] = Field(default_factory=list)
    teams_channels: list[str] = Field(default_factory=list)
    """Teams team ids, channel ids or conversation ids (a chat)."""
    direct_messages: bool = False
    """Answer direct messages with this profile (one profile at most)."""
    app: str | None = None
    """``MODULE:ATTR`` of this profile's agent; unset: the default agent's kind."""
    tools: list[str] | None = None
    """Only these tools of the agent (unset: all of them)."""
    instructions: str | None = None
    """Added to the agent's system prompt."""
    allowed_groups: list[str] = Field(default_factory=list)
    """Who may ask here (empty: everyone the workspace resolves)."""
    admins: list[str] = Field(default_factory=list)
    """Platform user ids (Slack ``U...``, Teams Entra object ids) made admins here."""
    mcp: list[McpServerConfig] = Field(default_factory=list)
    """``[[profiles.mcp]]``: MCP servers only this profile's agent uses (besides the
    top-level ``[[mcp]]`` ones)."""
    approvals: dict[str, ToolApproval] = Field(default_factory=dict)
    """``[profiles.approvals.<tool>]``: this profile's approval of a tool, over the
    configuration's ``[tools.<tool>]`` (``agent_core.approvals``)."""
    database: DatabaseConfig | None = None
    """This profile's own database (the keys of ``[database]``: url, roles, urls,
    training_dir...); unset: the ``[database]`` one."""
    answers: Literal["public", "private"] = "public"
    """``private``: answers go to the asker alone (Slack: ephemeral in the thread; Teams:
    a 1:1 chat), for data nobody should read over a colleague's shoulder."""
    shared_places: Literal["private", "refuse", "allow"] | None = None
    """What this profile's places get when shared with another organisation (unset: the
    channel's ``shared_places``; ``bots.places``)."""

    def claims(self, metadata: Mapping[str, Any]) -> bool:
        """Whether a request with this channel metadata belongs to this profile."""
        if metadata.get("is_dm"):
            return self.direct_messages
        match metadata.get("platform"):
            case "slack":
                return metadata.get("channel_id") in self.slack_channels
            case "teams":
                places = {
                    metadata.get(key)
                    for key in ("teams_team_id", "teams_channel_id", "channel_id", "thread_id")
                }
                return not places.isdisjoint(self.teams_channels)
        return False


def check_profiles(profiles: Sequence[Profile], file: Path | None) -> list[ConfigProblem]:
    """What makes a set of profiles ambiguous: a name, a channel or DMs claimed twice."""
    where = f"{file.name if file else 'threadline.toml'} [[profiles]]"
    owners: dict[str, str] = {}
    problems = []
    for profile in profiles:
        claims = [f"the name {profile.name!r}"]
        claims += [f"Slack channel {channel}" for channel in profile.slack_channels]
        claims += [f"Teams channel {channel}" for channel in profile.teams_channels]
        claims += ["direct messages"] if profile.direct_messages else []
        for claim in claims:
            if claim in owners:
                problems.append(
                    ConfigProblem(
                        where,
                        f"{claim} is claimed by profiles {owners[claim]!r} and {profile.name!r}",
                        "give each to one profile",
                    )
                )
            owners.setdefault(claim, profile.name)
    return problems


class ProfileAdmins(UserResolver):
    """The workspace's resolver, plus ``admin`` for a profile's own admins."""

    def __init__(self, base: UserResolver, admins: Sequence[str]) -> None:
        self.base = base
        self.admins = frozenset(admins)

    def for_turn(self, writes: TurnWrites | None) -> Self:
        return turn_view(self, writes, "base")

    async def resolve_user(self, request_context: RequestContext) -> User:
        user = await self.base.resolve_user(request_context)
        platform_id = str(request_context.metadata.get("user_id") or "")
        if platform_id in self.admins and not user.is_admin:
            user = user.model_copy(update={"group_memberships": [*user.group_memberships, "admin"]})
        return user


def profile_agent(
    profile: Profile,
    runtime: Runtime,
    build: Callable[[str | None, Runtime], Agent],
    *,
    default_app: str | None,
) -> Agent:
    """The agent of one profile: its app (or the default's kind) on the channel's runtime
    with the profile's admins, then narrowed to its tools, instructions and askers."""
    from dataclasses import replace

    resolver: UserResolver = runtime.user_resolver
    if profile.admins:
        resolver = ProfileAdmins(resolver, profile.admins)
    agent = build(
        profile.app or default_app, replace(runtime, user_resolver=resolver, profile=profile.name)
    )
    if profile.tools is not None:
        agent.tool_registry = agent.tool_registry.only(profile.tools)
    if profile.instructions:
        agent.system_prompt_builder = _with_instructions(agent, profile.instructions)
    if profile.allowed_groups:
        agent.config = agent.config.model_copy(update={"allowed_groups": profile.allowed_groups})
    if profile.approvals:
        policy = agent.config.approvals.merged(profile.approvals)
        agent.config = agent.config.model_copy(update={"approvals": policy})
    return agent


def _with_instructions(agent: Agent, instructions: str) -> SystemPromptBuilder:
    from agent_core.prompts import ExtendedSystemPromptBuilder

    return ExtendedSystemPromptBuilder(agent.system_prompt_builder, instructions)


class ProfileRouter:
    """Serves each request with its profile's agent (``send_message``, ``record_feedback``,
    ``may_see``: what the bots use of an agent). The profile's name goes into the request
    metadata (the memory scope) and in front of the conversation id, so nothing crosses
    profiles; ``may_see`` asks the profile's agent (its admins, its features)."""

    def __init__(
        self, default: Agent, profiles: Sequence[Profile], agents: Mapping[str, Agent]
    ) -> None:
        self.default = default
        self.profiles = list(profiles)
        self.agents = dict(agents)

    def served_agents(self) -> list[Agent]:
        return [self.default, *self.agents.values()]

    @property
    def user_resolver(self) -> UserResolver:
        return self.default.user_resolver

    @property
    def llm_service(self) -> LlmService:
        return self.default.llm_service

    @property
    def approval_book(self) -> ApprovalBook:
        return self.default.approval_book

    def route(self, context: RequestContext) -> tuple[Agent, RequestContext, str | None]:
        for profile in self.profiles:
            if profile.claims(context.metadata):
                metadata: ChannelMetadata = {**context.metadata, "profile": profile.name}
                if profile.answers == "private":
                    metadata["is_private"] = True  # its memories stay their owner's
                routed = context.model_copy(update={"metadata": metadata})
                return self.agents[profile.name], routed, profile.name
        return self.default, context, None

    def answers_privately(self, profile: str | None) -> bool:
        """Whether ``profile`` keeps every answer to its asker (``answers = "private"``)."""
        return any(p.name == profile and p.answers == "private" for p in self.profiles)

    def send_message(
        self,
        request_context: RequestContext,
        message: str | Resume,
        *,
        conversation_id: str | None = None,
        writes: TurnWrites | None = None,
    ) -> AsyncIterator[UiComponent]:
        """Answer on the agent of ``request_context``'s place; a ``Resume``, on the agent of
        the place it was asked (its approval's request)."""
        if isinstance(message, Resume):
            return self._resumed(message, writes)
        agent, context, profile = self.route(request_context)
        if profile is not None and conversation_id is not None:
            conversation_id = f"profile:{profile}:{conversation_id}"
        answer = agent.send_message(
            context, message, conversation_id=conversation_id, writes=writes
        )
        return to_the_asker(answer) if self.answers_privately(profile) else answer

    async def may_see(self, request_context: RequestContext, feature: str) -> bool:
        agent, context, _ = self.route(request_context)
        return await agent.may_see(context, feature)

    async def record_feedback(self, request_context: RequestContext, feedback: Feedback) -> None:
        agent, context, profile = self.route(request_context)
        if profile is not None:
            feedback = feedback.model_copy(
                update={"conversation_id": f"profile:{profile}:{feedback.conversation_id}"}
            )
        await agent.record_feedback(context, feedback)

    # --- approval: the profile of the place the click came from decides it ------------------

    async def decide_approval(
        self,
        request_context: RequestContext,
        approval_id: str,
        *,
        approve: bool,
        conversation_id: str | None,
    ) -> ApprovalAnswer:
        agent, context, profile = self.route(request_context)
        if profile is not None and conversation_id is not None:
            conversation_id = f"profile:{profile}:{conversation_id}"
        return await agent.decide_approval(
            context, approval_id, approve=approve, conversation_id=conversation_id
        )

    async def cancel_approval(
        self, request_context: RequestContext, approval_id: str, *, conversation_id: str
    ) -> ApprovalAnswer:
        agent, context, profile = self.route(request_context)
        if profile is not None:
            conversation_id = f"profile:{profile}:{conversation_id}"
        return await agent.cancel_approval(context, approval_id, conversation_id=conversation_id)

    async def expire_approvals(self, platform: str | None = None) -> list[ApprovalAnswer]:
        """Every served agent's expired approvals (decided once, whichever agent finds one)."""
        answers: list[ApprovalAnswer] = []
        for agent in self.served_agents():
            answers += await agent.expire_approvals(platform)
        return answers

    async def _resumed(
        self, resume: Resume, writes: TurnWrites | None
    ) -> AsyncIterator[UiComponent]:
        """The turn that waited for an approval, on the agent of the place it was asked."""
        record = await self.approval_book.for_turn(writes).get(resume.approval_id)
        if record is None:
            return
        context = RequestContext(metadata=record.request)
        agent, _, profile = self.route(context)
        answer = agent.send_message(context, resume, writes=writes)
        if self.answers_privately(profile):  # the asked profile keeps answers to the asker
            answer = to_the_asker(answer)
        async for component in answer:
            yield component


async def to_the_asker(answer: AsyncIterator[UiComponent]) -> AsyncIterator[UiComponent]:
    """Every component of ``answer`` for its asker alone (a private profile's answers)."""
    async for component in answer:
        yield (
            component
            if component.is_private
            else component.model_copy(update={"audience": "requester"})
        )
