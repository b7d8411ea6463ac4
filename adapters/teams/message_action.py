"""A message-extension action ("Ask Threadline about this", ``composeExtension/submitAction``
on a message) read: who asks, about which message, and the message activity whose turn
answers it (the Slack twin: ``adapters.slack.message_action``).

The asker is the invoke's sender (the Bot Framework token vouches for the activity); the
message (``value.messagePayload``), its author and the optional question the asker typed in
the command's form are data, quoted for the model (``adapters.quoting``). The answer is a
reply in the conversation the message is in (in a channel: in the message's thread).

>>> invoke = {"type": "invoke", "name": "composeExtension/submitAction", "id": "i1",
...     "from": {"id": "29:u", "aadObjectId": "aad-ana"},
...     "conversation": {"id": "19:c@thread.tacv2", "conversationType": "channel"},
...     "value": {"commandId": "askAboutMessage", "commandContext": "message",
...               "data": {"question": "why?"},
...               "messagePayload": {"id": "17", "body": {"contentType": "html",
...                   "content": "<p>Revenue <b>dropped</b></p>"},
...                   "from": {"user": {"id": "aad-bo", "displayName": "Bo"}}}}}
>>> action = read_message_action(invoke)
>>> action.text, action.author, action.question
('Revenue dropped', 'aad-bo', 'why?')
>>> asked = asked_activity(invoke, action)
>>> asked["type"], asked["conversation"]["id"], asked["from"]["aadObjectId"]
('message', '19:c@thread.tacv2;messageid=17', 'aad-ana')
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from adapters.quoting import about_message

SUBMIT_ACTION = "composeExtension/submitAction"
ASK_ABOUT_MESSAGE = "askAboutMessage"
"""The command's id in the app package (``bots.teams.package``)."""
_TAG = re.compile(r"<[^>]*>")
_BLOCK_END = re.compile(r"</(p|div|li|h\d)>|<br\s*/?>", re.IGNORECASE)

Wire = Mapping[str, Any]


@dataclass(frozen=True)
class MessageAction:
    """What the asker pointed at: the message's id, text, author (an Entra object id), the
    root of its thread, and the question the asker typed (None: the default one)."""

    message_id: str
    text: str
    author: str
    thread_root: str
    question: str | None = None


def plain_text(body: Mapping[str, Any]) -> str:
    """A message body as plain text (Teams sends HTML; tags dropped, entities read).

    >>> plain_text({"contentType": "html", "content": "<div>a &amp; b</div><div>c</div>"})
    'a & b\\nc'
    """
    content = str(body.get("content") or "")
    if str(body.get("contentType") or "").lower() == "html":
        content = _TAG.sub("", _BLOCK_END.sub("\n", content))
        content = html.unescape(content)
    return content.strip()


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def read_message_action(activity: Wire) -> MessageAction | None:
    """The action of an invoke of our command on a message, or None for any other invoke."""
    if activity.get("type") != "invoke" or activity.get("name") != SUBMIT_ACTION:
        return None
    value = activity.get("value")
    if not isinstance(value, Mapping) or value.get("commandId") != ASK_ABOUT_MESSAGE:
        return None
    payload = value.get("messagePayload")
    if not isinstance(payload, Mapping) or not isinstance(payload.get("id"), str):
        return None
    sender = _mapping(payload.get("from"))
    user, app = _mapping(sender.get("user")), _mapping(sender.get("application"))
    author = str(user.get("id") or (f"the app {app.get('displayName')}" if app else ""))
    question = _mapping(value.get("data")).get("question")
    body = _mapping(payload.get("body"))
    reply_to = payload.get("replyToId")
    return MessageAction(
        message_id=payload["id"],
        text=plain_text(body),
        author=author,
        thread_root=reply_to if isinstance(reply_to, str) and reply_to else payload["id"],
        question=question.strip() if isinstance(question, str) and question.strip() else None,
    )


def action_question(action: MessageAction) -> str:
    """What the model is asked: the message quoted as data (``adapters.quoting``)."""
    return about_message(action.text, author=action.author, question=action.question)


def asked_activity(activity: Wire, action: MessageAction) -> dict[str, Any]:
    """The message activity whose turn answers the action: the invoke's sender, recipient
    and conversation, as a ``message`` (its text is the quoted question), replying to the
    message's thread root (``id``; the invoke's own id stays its dedupe key). In a channel the
    conversation is the message's thread (``;messageid=<root>``), so the answer is a reply
    there; in a chat, the chat itself."""
    asked = {k: v for k, v in activity.items() if k not in ("name", "value", "text")}
    conversation = dict(activity.get("conversation") or {})
    conversation_id = str(conversation.get("id") or "")
    if conversation.get("conversationType") == "channel" and ";messageid=" not in conversation_id:
        conversation["id"] = f"{conversation_id};messageid={action.thread_root}"
    # the id replied to: the thread's root (a chat has no threads; the reply joins the chat)
    asked.update(
        type="message",
        id=action.thread_root,
        conversation=conversation,
        text=action_question(action),
    )
    return asked
