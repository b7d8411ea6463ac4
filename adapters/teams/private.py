"""Admin-only detail (``audience == "requester"``) delivered only to the person who asked.

In a personal chat the detail is shown inline (only the asker is there). In a group chat or
channel it goes privately: a targeted message in the same conversation where the tenant
supports them (``targeted=True``), else a 1:1 chat with the asker, else it is withheld and the
public answer says so. Nobody else ever receives it. A sign-in card always goes to the 1:1
chat (``personal=True``): where Teams people sign in, and where the link stays theirs.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal

from adapters.teams import activities
from adapters.teams.activities import ConversationRef
from adapters.teams.connector import ConnectorError, TeamsConnector

logger = logging.getLogger(__name__)

Route = Literal["inline", "targeted", "personal", "withheld"]
WITHHELD_NOTE = (
    "🔒 Some details are only shown to you privately, and could not be delivered here. "
    "Ask me in a 1:1 chat to see them."
)
SENT_PRIVATELY = "🔒 I answered you privately, in our 1:1 chat."
"""The public reply of a turn whose whole answer went to the asker's 1:1 chat."""
_PLACES = {"groupChat": "group chat", "channel": "channel"}


class PrivateDelivery:
    """Sends admin-only cards to the asker of one turn; see the module docstring.

    >>> ref = ConversationRef("https://s/", "a:1", "1", {"id": "28:b"}, {"id": "29:u"},
    ...                       "t", "personal")
    >>> PrivateDelivery(connector=None, ref=ref).inline  # type: ignore[arg-type]
    True
    """

    def __init__(
        self, connector: TeamsConnector, ref: ConversationRef, *, targeted: bool = False
    ) -> None:
        self._connector = connector
        self._ref = ref
        self._targeted = targeted

    @property
    def inline(self) -> bool:
        """Whether the detail may simply be part of the answer (a personal chat)."""
        return self._ref.is_personal

    def _message(self, attachments: Sequence[dict[str, Any]]) -> activities.Activity:
        place = _PLACES.get(self._ref.conversation_type, "conversation")
        text = f"Only you can see this: details of your question in the {place}."
        return activities.message(self._ref, text, attachments=attachments)

    async def deliver(
        self, attachments: Sequence[dict[str, Any]], *, personal: bool = False
    ) -> Route:
        """Deliver ``attachments`` privately; which route worked, or ``withheld``.
        ``personal``: only the 1:1 chat will do (a sign-in card)."""
        if not attachments:
            return "inline"
        if self.inline:
            return "inline"
        if self._targeted and not personal and await self._send_targeted(attachments):
            return "targeted"
        if await self._send_personal(attachments):
            return "personal"
        return "withheld"

    async def _send_targeted(self, attachments: Sequence[dict[str, Any]]) -> bool:
        try:
            await self._connector.send_targeted(
                self._ref.conversation_id, self._message(attachments)
            )
        except ConnectorError as error:
            logger.info("targeted message refused (%s); trying a 1:1 chat", error)
            return False
        return True

    async def _send_personal(self, attachments: Sequence[dict[str, Any]]) -> bool:
        user_id = self._ref.user.get("id")
        if not user_id:
            return False
        parameters = {
            "isGroup": False,
            "bot": self._ref.bot,
            "members": [{"id": user_id}],
            "tenantId": self._ref.tenant_id,
            "channelData": {"tenant": {"id": self._ref.tenant_id}},
        }
        try:
            conversation_id = await self._connector.create_conversation(parameters)
            message = self._message(attachments)
            message["conversation"] = {"id": conversation_id}
            message.pop("replyToId", None)
            await self._connector.send(conversation_id, message)
        except ConnectorError as error:
            logger.info("1:1 chat with the asker not possible (%s); withholding", error)
            return False
        return True
