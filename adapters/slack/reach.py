"""Reaching a person and a place in Slack: ``person`` (``users.info``), ``place_gone`` (a
post Slack refused for good) and ``tell`` (a notice to a channel, a thread or a person).

- ``users.info`` answering ``deleted: true`` or ``user_not_found`` means the person is gone;
  any other failure (a 5xx, a missing scope) is ``unknown``, never a departure;
- a post refused with ``not_in_channel``, ``channel_not_found``, ``is_archived`` (and the
  app's token revoked or its workspace gone) will be refused again: the place is gone.
  Anything else (rate limits, outages) is worth trying at the next run.

Slack gives each person's ``tz`` (an IANA name such as ``Europe/Paris``) in ``users.info``.
"""

from __future__ import annotations

import logging

from slack_sdk.web.async_client import AsyncWebClient

from adapters.reach import Person
from adapters.slack.errors import SLACK_FAILURES, slack_failure, web_client
from adapters.slack.render import render
from agent_core.components import NotificationComponent, UiComponent

log = logging.getLogger(__name__)

PLACE_GONE = {
    "not_in_channel": "I am no longer in that channel",
    "channel_not_found": "the channel is gone",
    "is_archived": "the channel is archived",
    "restricted_action": "posting there is restricted",
    "account_inactive": "the app's token was deactivated",
    "token_revoked": "the app was uninstalled",
    "team_not_found": "the workspace is gone",
}
"""Post failures that mean the schedule's place cannot be posted to any more."""


def place_gone(error: BaseException) -> str | None:
    """Why a failed post means the place is gone for good; None when it may work later.

    >>> from slack_sdk.errors import SlackApiError
    >>> place_gone(SlackApiError("x", {"ok": False, "error": "not_in_channel"}))
    'I am no longer in that channel (not_in_channel)'
    >>> place_gone(SlackApiError("x", {"ok": False, "error": "ratelimited"})) is None
    True
    """
    if not isinstance(error, SLACK_FAILURES):
        return None
    code = slack_failure(error).code
    reason = PLACE_GONE.get(code)
    return None if reason is None else f"{reason} ({code})"


async def person(client: AsyncWebClient, user_id: str) -> Person:
    """``user_id`` as Slack describes them now (``users.info``, never cached)."""
    try:
        response = await web_client(client).users_info(user=user_id)
    except SLACK_FAILURES as error:
        if slack_failure(error).code == "user_not_found":
            return Person("gone", reason="is no longer in the workspace")
        return Person("unknown", reason=str(slack_failure(error)))
    user = response.get("user") or {}
    profile = user.get("profile") or {}
    name = profile.get("display_name") or profile.get("real_name") or user.get("name")
    timezone = user.get("tz") or None
    if user.get("deleted"):
        return Person("gone", timezone, name, "was deactivated")
    return Person("active", timezone, name)


async def tell(
    client: AsyncWebClient, channel: str, text: str, *, thread_ts: str | None = None
) -> bool:
    """A notice (``text``, plain: escaped here) to ``channel``: a channel, a thread of it, or
    a person (a user id: the app's DM with them). False when Slack refused it (logged)."""
    notice = UiComponent(rich_component=NotificationComponent(message=text, level="warning"))
    try:
        for message in render(notice):
            await web_client(client).chat_postMessage(
                channel=channel, thread_ts=thread_ts, text=message.text, blocks=message.blocks
            )
    except SLACK_FAILURES as error:
        log.warning("slack: could not tell %s (%s)", channel, slack_failure(error))
        return False
    return True
