"""``SlackPort``: what only Slack does for the channel runtime (``bots.runtime``): a decided
approval shown in place of its message (``chat.update`` with the installation's token),
the turn that resumes one (``bots.slack.turns.resumed_turn``), and the organisation at home
(the installations' workspaces) for ``/status``."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from adapters.slack.approval import update_approval
from adapters.slack.errors import SlackCallFailed
from agent_core.approvals.record import ApprovalRecord
from bots.approvals import ResumedTurn
from bots.slack.clients import WorkspaceClients
from bots.slack.turns import resumed_turn

log = logging.getLogger(__name__)


class SlackPort:
    """See the module docstring."""

    platform = "slack"

    def __init__(self, clients: WorkspaceClients) -> None:
        self.clients = clients

    def home_line(self) -> str:
        return self.clients.known_home()

    async def show_approval(self, record: ApprovalRecord) -> None:
        """A decision made here, shown in place of the approval message (where noted)."""
        where = record.message or {}
        if where.get("platform") != "slack":
            return
        enterprise = record.request.get("slack_enterprise_id")
        install = bool(record.request.get("slack_enterprise_install"))
        client = await self.clients.client_for(
            str(where["team"]), enterprise, enterprise_install=install
        )
        try:
            await update_approval(client, where, record.component())
        except SlackCallFailed as error:  # deleted, or the bot left: the decision stands
            log.info("slack: approval %s not updated (%s)", record.id, error.failure)

    async def resumed(self, record: ApprovalRecord, hints: Mapping[str, Any]) -> ResumedTurn | None:
        return await resumed_turn(record, hints)
