"""``TeamsPort``: what only Teams does for the channel runtime (``bots.runtime``): a decided
approval shown to everyone in place of its card (the Bot Connector's update), the turn that
resumes one (``bots.teams.turns.resumed_turn``), and the organisation at home (the home
tenants) for ``/status``."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from adapters.teams.activities import ConversationRef
from adapters.teams.approval import update_approval
from adapters.teams.connector import ConnectorError
from agent_core.approvals.record import ApprovalRecord
from bots.approvals import ResumedTurn
from bots.teams.outbound import Outbound
from bots.teams.turns import resumed_turn

log = logging.getLogger(__name__)


class TeamsPort:
    """See the module docstring."""

    platform = "teams"

    def __init__(self, outbound: Outbound, home_tenants: list[str]) -> None:
        self.outbound = outbound
        self.home_tenants = home_tenants

    def home_line(self) -> str:
        return "tenant " + (", ".join(self.home_tenants) or "none configured: nobody")

    async def show_approval(self, record: ApprovalRecord) -> None:
        """A decision made here, shown to everyone in place of the approval card."""
        where = record.message or {}
        if where.get("platform") != "teams":
            return
        ref = ConversationRef.from_record(where["conversation"])
        connector = await self.outbound.connector(ref.service_url)
        try:
            await update_approval(connector, where, record.component())
        except ConnectorError as error:  # deleted, or the bot removed: the decision stands
            log.info("teams: approval %s not updated (%s)", record.id, error)

    async def resumed(self, record: ApprovalRecord, hints: Mapping[str, Any]) -> ResumedTurn | None:
        return await resumed_turn(self.outbound, record, hints)
