"""Erase a workspace's data when the app is removed from it (``erase_on_uninstall``).

Slack: ``app_uninstalled``, and ``tokens_revoked`` naming the bot's token, remove the
installation's tokens (bolt's revocation listeners, issue 38); with ``[slack]
erase_on_uninstall = true`` they then erase the workspace as ``agent_core.forget.
forget_workspace`` does: everyone the audit directory knows there (conversations, memories,
schedules, approvals, caches, MCP tokens, Slack thread transcripts; usage and the audit
trail keep pseudonyms), then the workspace's remaining schedules. An ``uninstall`` record
(the workspace, why, how many people) goes to the audit trail after the people's own
``erase`` records. Both events may arrive for one uninstall: the second finds nobody left.

Which workspace: the installation's own. An org-wide install (Enterprise Grid) is
``slack:E…`` (its people are ``slack:E…:U…``); a workspace install is ``slack:T…``. A
workspace of a Grid organisation installed on its own has the organisation's people
(``slack:E…:U…``, shared with the organisation's other workspaces): removing the app from
that one workspace erases what is keyed to ``slack:T…`` only, not the organisation's people.

Teams has no twin, plainly: Teams tells a bot when it is removed from one team, group chat
or person (``installationUpdate`` remove, ``conversationUpdate`` with the bot in
``membersRemoved``), never when a tenant's admin removes or blocks the app for the whole
tenant. The tenant's people still use the bot in their other teams and chats, so erasing
the tenant on one team's removal would erase people who did not leave. A tenant that leaves
erases its people with ``threadline forget`` (or ``agent_core.forget.forget_workspace``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from agent_core.audit_chain import AuditEntry
from agent_core.clock import SYSTEM_CLOCK, Clock

if TYPE_CHECKING:
    from agent_core.forget import Step
    from agent_core.state_factory import State

log = logging.getLogger(__name__)


def slack_workspace(
    enterprise_id: str | None, team_id: str | None, is_enterprise_install: bool | None
) -> str | None:
    """The workspace an installation's people are keyed to (None: not known).

    >>> slack_workspace("E1", None, True), slack_workspace(None, "T1", False)
    ('slack:E1', 'slack:T1')
    >>> slack_workspace("E1", "T1", False)
    'slack:T1'
    """
    key = enterprise_id if is_enterprise_install else team_id
    return f"slack:{key}" if key else None


async def erase_workspace(
    state: State,
    workspace: str,
    *,
    reason: str,
    clock: Clock | None = None,
    channels: Mapping[str, Step] | None = None,
) -> int:
    """Erase ``workspace``'s people and schedules and write an ``uninstall`` record;
    the number of people erased."""
    from agent_core.forget import forget_workspace

    reports = await forget_workspace(state, workspace, clock=clock, channels=channels)
    now = (clock or SYSTEM_CLOCK).now()
    record = AuditEntry(
        at=now,
        kind="uninstall",
        workspace=workspace,
        details={"reason": reason, "people_erased": len(reports)},
    )
    await state.audit.append(record)
    log.warning("%s: %s erased (%d people)", reason, workspace, len(reports))
    return len(reports)
