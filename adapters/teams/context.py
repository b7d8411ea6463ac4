"""Teams activity -> ``RequestContext``: pure functions over the Bot Framework wire format.

The functions read an activity as its JSON wire form (camelCase keys, as Teams posts it to
``/api/messages``), so any host can call them: the botbuilder host passes the request body it
already parsed, a Microsoft 365 Agents SDK host could pass ``activity.model_dump(by_alias=True)``.
``wire_activity`` converts SDK objects when a dict is not at hand.

Identity fields come only from the signed delivery (the activity the channel posted, whose
``serviceUrl`` the JWT vouches for), never from the message text. ``request_context`` reads
the activity through the pydantic models of ``adapters.teams.payloads``: the model checked at
ingress as it is (``tenant_of``, ``conversation_type_of`` read it), or a wire form checked
first, which raises ``MalformedPayload`` (a ``ValueError``) when it has the wrong shape; the
small readers of the wire form (``tenant_id``, ``thread_key``...) never raise, whatever they
are given::

    >>> activity = {"type": "message", "text": "<at>Threadline</at> hi", "serviceUrl": "https://s/",
    ...     "from": {"id": "29:1", "aadObjectId": "aad-1", "name": "Ana"},
    ...     "recipient": {"id": "28:bot"},
    ...     "conversation": {"id": "a:1", "conversationType": "personal", "tenantId": "t1"},
    ...     "entities": [{"type": "mention", "text": "<at>Threadline</at>",
    ...                   "mentioned": {"id": "28:bot", "name": "Threadline"}}]}
    >>> thread_key(activity)
    'teams:t1:a:1'
    >>> conversation_id(request_context(activity))
    'teams:t1:a:1'
    >>> message_text(activity)
    'hi'
    >>> request_context(activity).metadata["is_dm"]
    True
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from typing import Any, Literal

from adapters.teams.payloads import Activity, MalformedPayload, read_activity
from agent_core.channel import ChannelMetadata
from agent_core.users import RequestContext

__all__ = ["MalformedPayload"]  # with the readers and converters below

ConversationType = Literal["personal", "groupChat", "channel"]
Wire = Mapping[str, Any]

_AT_TAG = re.compile(r"<at(?:\s[^>]*)?>(.*?)</at>", re.IGNORECASE | re.DOTALL)
_SPACES = re.compile(r"[ \t\u00a0]+")


def wire_activity(activity: object) -> Wire:
    """The JSON wire form of an activity: a mapping as is, or an SDK model serialized.

    Accepts botbuilder's msrest models (``serialize()``) and pydantic models such as the
    Microsoft 365 Agents SDK's (``model_dump(by_alias=True)``).
    """
    if isinstance(activity, Mapping):
        return activity
    model_dump = getattr(activity, "model_dump", None)
    if callable(model_dump):
        dumped = model_dump(by_alias=True, exclude_none=True, mode="json")
        if isinstance(dumped, Mapping):
            return dumped
    serialize = getattr(activity, "serialize", None)
    if callable(serialize):
        serialized = serialize()
        if isinstance(serialized, dict):
            entities = getattr(activity, "entities", None)
            if entities:
                # msrest drops the fields an Entity model does not declare (mention text...).
                serialized["entities"] = [_entity_wire(entity) for entity in entities]
            return serialized
    raise TypeError(f"not an activity: {type(activity).__name__}")


def _entity_wire(entity: object) -> dict[str, Any]:
    extra = getattr(entity, "additional_properties", None)
    wire = dict(extra) if isinstance(extra, Mapping) else {}
    wire["type"] = getattr(entity, "type", None)
    return wire


def _section(activity: Wire, key: str) -> Wire:
    value = activity.get(key)
    return value if isinstance(value, Mapping) else {}


def _text_of(value: object) -> str:
    return value if isinstance(value, str) else ""


def tenant_id(activity: Wire) -> str:
    """The Microsoft Entra tenant: ``conversation.tenantId``, else ``channelData.tenant.id``."""
    conversation = _section(activity, "conversation")
    return _tenant(conversation.get("tenantId"), _section(activity, "channelData"))


def tenant_of(activity: Activity) -> str:
    """``tenant_id`` of a checked activity."""
    return _tenant(activity.conversation.tenantId, activity.channelData or {})


def _tenant(conversation_tenant: object, channel_data: Wire) -> str:
    return _text_of(conversation_tenant) or _text_of(_section(channel_data, "tenant").get("id"))


def conversation_type(activity: Wire) -> ConversationType:
    """``personal`` (1:1 with the bot), ``groupChat`` or ``channel``."""
    conversation = _section(activity, "conversation")
    return _kind(conversation.get("conversationType"), conversation.get("isGroup"))


def conversation_type_of(activity: Activity) -> ConversationType:
    """``conversation_type`` of a checked activity."""
    return _kind(activity.conversation.conversationType, activity.conversation.isGroup)


def _kind(declared: object, is_group: object) -> ConversationType:
    match declared:
        case "channel":
            return "channel"
        case "groupChat":
            return "groupChat"
        case "personal":
            return "personal"
    # Older payloads omit conversationType; isGroup tells a group from a 1:1 chat.
    return "groupChat" if is_group else "personal"


def teams_conversation_id(activity: Wire) -> str:
    """Teams' own conversation id; in a channel it names the reply chain
    (``...;messageid=...``)."""
    return _text_of(_section(activity, "conversation").get("id"))


def thread_key(activity: Wire) -> str:
    """The conversation id the agent stores history under: ``teams:{tenant}:{conversation}``."""
    return f"teams:{tenant_id(activity)}:{teams_conversation_id(activity)}"


def conversation_id(context: RequestContext) -> str:
    """The thread key of a context built by this module (the agent's conversation id).

    >>> conversation_id(RequestContext(metadata={"workspace_id": "t1", "thread_id": "a:1"}))
    'teams:t1:a:1'
    """
    meta = context.metadata
    return f"teams:{meta['workspace_id']}:{meta['thread_id']}"


def user_aad_object_id(activity: Wire) -> str:
    """The sender's Entra object id (stable across tenants' apps); empty when absent."""
    return _text_of(_section(activity, "from").get("aadObjectId"))


def asker_id(activity: Wire) -> str:
    """Who sent the activity: the Entra object id, else the Bot Framework id (``29:...``)."""
    return user_aad_object_id(activity) or _text_of(_section(activity, "from").get("id"))


def turn_key(activity: Wire) -> str:
    """The key turns are ordered by: one conversation *and* one asker (two people in a
    group chat are answered side by side; one person's questions strictly in order).

    >>> turn_key({"from": {"aadObjectId": "aad-1"},
    ...           "conversation": {"id": "19:g@thread.v2", "tenantId": "t1"}})
    'teams:t1:19:g@thread.v2|aad-1'
    """
    return f"{thread_key(activity)}|{asker_id(activity)}"


def delivery_key(activity: Wire) -> str | None:
    """The dedupe key of one delivery (``activity.id`` in its conversation); None without an
    id (nothing to recognise a redelivery by).

    >>> delivery_key({"id": "1700000000001", "conversation": {"id": "a:1"}})
    'teams:delivery:a:1:1700000000001'
    """
    activity_id = _text_of(activity.get("id"))
    if not activity_id:
        return None
    return f"teams:delivery:{teams_conversation_id(activity)}:{activity_id}"


def _mention_entities(activity: Wire) -> list[Wire]:
    entities = activity.get("entities")
    if not isinstance(entities, list):
        return []
    return [e for e in entities if isinstance(e, Mapping) and e.get("type") == "mention"]


def strip_mentions(text: str, activity: Wire) -> str:
    """Remove the bot's ``<at>`` mentions and unwrap everyone else's to their plain names.

    The bot is ``activity.recipient``; its mention is addressing, not content. Other people's
    mentions stay as their names so the question still reads naturally.
    """
    bot_id = _text_of(_section(activity, "recipient").get("id"))
    for entity in _mention_entities(activity):
        mentioned = entity.get("mentioned")
        mention_text = _text_of(entity.get("text"))
        if isinstance(mentioned, Mapping) and mention_text and mentioned.get("id") == bot_id:
            text = text.replace(mention_text, " ")
    text = _AT_TAG.sub(lambda match: match.group(1), text)
    text = html.unescape(text)
    return "\n".join(_SPACES.sub(" ", line).strip() for line in text.strip().splitlines()).strip()


def message_text(activity: Wire) -> str:
    """What the user asked: the text without the bot's mention, or a card action's message.

    A card button rendered by ``adapters.teams.render`` sends ``{"threadline_action": text}`` as
    the activity's ``value``; that text is the message.
    """
    value = activity.get("value")
    if isinstance(value, Mapping):
        action = value.get("threadline_action")
        if isinstance(action, str) and action.strip():
            return action.strip()
    return strip_mentions(_text_of(activity.get("text")), activity)


def request_context(activity: Activity | Wire) -> RequestContext:
    """The ``RequestContext`` for an activity (the model checked at ingress, read as is, or
    its wire form, checked here): ``agent_core.channel.ChannelMetadata`` keys.

    Teams-specific extras carry a ``teams_`` prefix: the conversation type, the sender's
    Bot Framework id (``29:...``, needed to message them 1:1), the Entra object id, team and
    channel ids, and the service URL replies go to.
    """
    read = activity if isinstance(activity, Activity) else read_activity(activity)
    if not isinstance(read, Activity):
        raise MalformedPayload(f"{read.type}: not a message, invoke or conversation update")
    sender = read.sender
    kind = conversation_type_of(read)
    aad_id = sender.aadObjectId or ""
    conversation = read.conversation.id
    metadata = ChannelMetadata(
        platform="teams",
        workspace_id=tenant_of(read),
        user_id=aad_id or sender.id,
        channel_id=conversation,
        thread_id=conversation,
        is_dm=kind == "personal",
    )
    if sender.name:
        metadata["user_name"] = sender.name
    return RequestContext(metadata=metadata | _teams_extras(read, kind))


def _teams_extras(read: Activity, kind: ConversationType) -> ChannelMetadata:
    extras: ChannelMetadata = {
        "teams_conversation_type": kind,
        "teams_user_id": read.sender.id,
        "teams_aad_object_id": read.sender.aadObjectId or "",
        "teams_service_url": read.serviceUrl,
    }
    if read.sender.tenantId:  # the sender's own tenant (checked by the identity resolver)
        extras["teams_from_tenant"] = read.sender.tenantId
    channel_data = read.channelData or {}
    team_id = _text_of(_section(channel_data, "team").get("id"))
    if team_id:
        extras["teams_team_id"] = team_id
    channel = _text_of(_section(channel_data, "channel").get("id"))
    if channel:
        extras["teams_channel_id"] = channel
    return extras
