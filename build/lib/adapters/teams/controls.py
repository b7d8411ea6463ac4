"""The bot's own controls: the feedback loop under answers, the Stop card of a running
answer, and reading the clicks on them and on the buttons ``adapters.teams.render`` draws.

Building them: ``FEEDBACK_LOOP`` (channelData that shows Teams' thumbs up/down under an
answer) and ``stop_card(turn_id)`` (the "Working on it" card with a Stop button a group chat
sees while the answer is prepared).

Reading the clicks, invoke activities Teams expects answered within the HTTP request:

* ``adaptiveCard/action`` with verb ``threadline.action``: a button rendered by
  ``adapters.teams.render``; its ``threadline_action`` is a message from the clicker.
* ``adaptiveCard/action`` with verb ``threadline.stop``: the Stop button of a running answer;
  its ``threadline_stop`` is the turn to stop (honoured only for the person who asked).
* ``message/submitAction`` with ``actionName == "feedback"``: thumbs up/down (and optional
  text) on one of the bot's answers, identified by ``replyToId``.

>>> feedback_of({"type": "invoke", "name": "message/submitAction", "replyToId": "m1",
...     "conversation": {"id": "a:1", "tenantId": "t"},
...     "value": {"actionName": "feedback", "actionValue": {
...         "reaction": "dislike", "feedback": "{\\"feedbackText\\": \\"wrong year\\"}"}}})
Feedback(conversation_id='teams:t:a:1', message_id='m1', positive=False, comment='wrong year', ...)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from adapters.teams import elements
from adapters.teams.context import Wire, thread_key
from adapters.teams.elements import ACTION_VERB
from agent_core.feedback import Feedback

CARD_ACTION = "adaptiveCard/action"
SUBMIT_ACTION = "message/submitAction"
STOP_VERB = "threadline.stop"
"""The verb of the Stop button on a group chat's "Working on it" card; data carries the turn."""
WORKING = "Working on it…"

FEEDBACK_LOOP: dict[str, Any] = {"feedbackLoop": {"type": "default"}}
"""channelData that shows Teams' thumbs up/down under a message."""


def stop_action(turn_id: str) -> elements.Element:
    """The Stop button of a running answer (verb ``threadline.stop``, data
    ``{"threadline_stop": turn_id}``); the bot stops the turn only for the person who asked.

    >>> stop_action("1-0")["data"]
    {'threadline_stop': '1-0'}
    """
    return {
        "type": "Action.Execute",
        "title": "Stop",
        "verb": STOP_VERB,
        "data": {"threadline_stop": turn_id},
    }


def stop_card(turn_id: str | None = None) -> dict[str, Any]:
    """The placeholder a group chat sees while the answer is prepared (an attachment); with a
    Stop button when ``turn_id`` is given (only the asker's click is honoured).

    >>> stop_card("1-0")["content"]["actions"][0]["title"]
    'Stop'
    """
    actions = [stop_action(turn_id)] if turn_id else []
    body = [elements.text_block(WORKING, subtle=True)]
    return elements.attachment(elements.card(body, actions, fallback_text=WORKING))


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def feedback_of(activity: Wire) -> Feedback | None:
    """The ``Feedback`` a feedback invoke carries, or None if it is not a valid one."""
    if activity.get("type") != "invoke" or activity.get("name") != SUBMIT_ACTION:
        return None
    value = _mapping(activity.get("value"))
    if value.get("actionName") != "feedback":
        return None
    action = _mapping(value.get("actionValue"))
    reaction = action.get("reaction")
    message_id = activity.get("replyToId")
    if reaction not in ("like", "dislike") or not isinstance(message_id, str) or not message_id:
        return None
    comment: str | None = None
    raw = action.get("feedback")
    if isinstance(raw, str) and raw:
        try:
            text = _mapping(json.loads(raw)).get("feedbackText")
        except ValueError:
            text = raw
        comment = str(text).strip()[:2000] if text else None
    return Feedback(
        conversation_id=thread_key(activity),
        message_id=message_id,
        positive=reaction == "like",
        comment=comment,
    )


def button_message_of(activity: Wire) -> str | None:
    """The message a Threadline card button sends, or None for other invokes."""
    if activity.get("type") != "invoke" or activity.get("name") != CARD_ACTION:
        return None
    action = _mapping(_mapping(activity.get("value")).get("action"))
    if action.get("verb") != ACTION_VERB:
        return None
    message = _mapping(action.get("data")).get("threadline_action")
    return message.strip() if isinstance(message, str) and message.strip() else None


def stop_request_of(activity: Wire) -> str | None:
    """The turn id a Stop button click asks to stop, or None for other invokes.

    >>> stop_request_of({"type": "invoke", "name": "adaptiveCard/action", "value": {
    ...     "action": {"verb": "threadline.stop", "data": {"threadline_stop": "17-0"}}}})
    '17-0'
    """
    if activity.get("type") != "invoke" or activity.get("name") != CARD_ACTION:
        return None
    action = _mapping(_mapping(activity.get("value")).get("action"))
    if action.get("verb") != STOP_VERB:
        return None
    turn_id = _mapping(action.get("data")).get("threadline_stop")
    return turn_id if isinstance(turn_id, str) and 0 < len(turn_id) <= 200 else None


def card_action_response(text: str = "On it.") -> dict[str, Any]:
    """The invoke response body for ``adaptiveCard/action``: a short message to the clicker."""
    return {
        "statusCode": 200,
        "type": "application/vnd.microsoft.activity.message",
        "value": text,
    }
