"""``/forget @person`` in chat: an admin asks, an admin approves, then the erase runs.

The erase is the ``forget_person`` tool, registered on every served agent
(``bots.serving``) for the ``admin`` group only, with ``approval = "always"`` and
``approvers = ["admin"]`` unless ``[tools.forget_person]`` says otherwise; not on a profile
that names its ``tools`` (nothing is added to those: its admins use another profile or
``threadline forget``). So it goes through the approvals every other changing tool goes
through, in both channels: the turn pauses on an approval card; only a click whose signed
payload resolves to an admin decides it (a forged, stale or misplaced click decides
nothing, a non-admin is told privately); the erase runs once, only when approved. Someone
who is not an admin is refused ``/forget`` before the model (``agent_core.workflow``),
is never offered the tool, and a call of it is refused by the registry's access check.

An admin types ``/forget @person`` (or asks in their own words); the model calls the tool
with what was given: a Slack mention (``<@U123>``), an id in the asker's workspace (a Slack
user id, a Teams object id), a full id (``slack:T1:U123``) or an email (looked up in the
audit directory, as ``threadline forget`` does). The erase is ``agent_core.forget``'s,
with Slack's thread transcripts; its ``erase`` record goes to the audit trail, and the
approval's own records (requested, decided) name who asked and who approved.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from agent_core.tool_contract import Tool, ToolResult

if TYPE_CHECKING:
    from agent_core.agent import Agent
    from agent_core.context import ToolContext
    from agent_core.state_factory import State
    from bots.profiles import ProfileRouter

NAME = "forget_person"
MENTION = re.compile(r"^<@([A-Z0-9]+)(?:\|[^>]*)?>$")


class ForgetArgs(BaseModel):
    person: str = Field(
        description="who to erase: a Slack mention (<@U123>), their user or object id, "
        "their full id (slack:T1:U123, teams:TENANT:OID) or their email"
    )


def person_id(given: str, asker: str) -> str:
    """What ``find_person`` is given: a mention or a bare id becomes a full id in the
    asker's workspace; a full id or an email stays.

    >>> person_id("<@U2|bo>", "slack:T1:UADMIN"), person_id("oid-7", "teams:ten:oid-1")
    ('slack:T1:U2', 'teams:ten:oid-7')
    >>> person_id("bo@acme.io", "slack:T1:U1"), person_id("slack:T2:U9", "slack:T1:U1")
    ('bo@acme.io', 'slack:T2:U9')
    """
    given = given.strip()
    if match := MENTION.match(given):
        given = match.group(1)
    if "@" in given or given.count(":") >= 2:
        return given
    return f"{asker.rsplit(':', 1)[0]}:{given.lstrip('@')}"


class ForgetPersonTool(Tool[ForgetArgs]):
    """Erase one person's data from every store, once an admin approved it."""

    name = NAME
    description = (
        "Erase one person's data (conversations, memories, schedules, approvals, tokens, "
        "caches) from every store, as an admin's `/forget @person` asks. It waits for an "
        "admin's approval."
    )
    approval = "always"

    def __init__(self, state: State) -> None:
        self.state = state

    def get_args_schema(self) -> type[ForgetArgs]:
        return ForgetArgs

    async def execute(self, context: ToolContext, args: ForgetArgs) -> ToolResult:
        from agent_core.forget import UnknownPerson, find_person, forget_person
        from bots.erasing import channel_steps

        given = person_id(args.person, context.user.id)
        try:
            ids = await find_person(self.state, given)
        except UnknownPerson as unknown:
            return ToolResult(success=False, result_for_llm=str(unknown), error=str(unknown))
        report = await forget_person(
            self.state, ids, given=given, channels=channel_steps(self.state)
        )
        counts = ", ".join(f"{store} {count}" for store, count in report.counts.items())
        return ToolResult(success=True, result_for_llm=f"erased; now {report.pseudonym} ({counts})")


def attach_forget(served: Agent | ProfileRouter, state: State) -> None:
    """``forget_person`` on every agent of ``served``, for admins, approved by an admin."""
    from agent_core.approvals.policy import ToolApproval
    from bots.usage import _profiled

    for _, agent in _profiled(served):
        registry = agent.tool_registry
        if registry.narrowed or registry.peek(NAME) is not None:
            continue  # a profile that named its tools gets nothing on top (as query_files)
        registry.register_local_tool(ForgetPersonTool(state), access_groups=["admin"])
        policy = agent.config.approvals
        if NAME not in policy.tools:
            own = ToolApproval(approval="always", approvers=["admin"])
            policy = policy.model_copy(update={"tools": {**policy.tools, NAME: own}})
            agent.config = agent.config.model_copy(update={"approvals": policy})
